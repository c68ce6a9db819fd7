// minifloat._core: the extension module. std::invalid_argument from the library (bad names, bad shapes) becomes
// ValueError through nanobind's standard translation; the Python layer names the argument before calling in.
#include "bindings.h"

NB_MODULE(_core, m) {
  m.doc() = "minifloat's C++ core (private: use the minifloat package)";
  mf::py::bind_formats(m);
  mf::py::bind_codec(m);
  mf::py::bind_quantize(m);
  mf::py::bind_ops(m);
  mf::py::bind_checkpoint(m);
}
