// minifloat._core: the extension module. std::invalid_argument from the library (bad names, bad shapes) becomes
// ValueError through nanobind's standard translation; the Python layer names the argument before calling in.
#include "bindings.h"
#include "minifloat/version.h"

NB_MODULE(_core, m) {
  m.doc() = "minifloat's C++ core (private: use the minifloat package)";
  // The version of the core this module was built from (minifloat/version.h): the package's __version__.
  m.attr("__version__") = MF_VERSION_STRING;
  mf::py::bind_formats(m);
  mf::py::bind_codec(m);
  mf::py::bind_quantize(m);
  mf::py::bind_ops(m);
  mf::py::bind_kv_vllm(m);
  mf::py::bind_checkpoint(m);
  mf::py::bind_checkpoint_commands(m);
  mf::py::bind_checkpoint_reader(m);
}
