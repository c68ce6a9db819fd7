// minifloat.open's core (minifloat/checkpoint_reader.h): a checkpoint's logical tensors listed, and one read at a
// time with the GIL released, so that Python threads read in parallel. The Python layer (minifloat/_open.py) shapes
// the arrays into numpy or torch and names the dtypes.
#include <nanobind/stl/map.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/string_view.h>
#include <nanobind/stl/vector.h>

#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "bindings.h"
#include "minifloat/checkpoint_reader.h"

namespace mf::py {
namespace {

std::vector<std::size_t> shape_of(const io::LogicalTensor& t) { return {t.shape.begin(), t.shape.end()}; }

nb::dict info_dict(const io::LogicalTensor& t) {
  nb::dict d;
  d["name"] = t.name;
  d["file"] = t.file;
  d["dialect"] = t.dialect;
  d["form"] = t.form;
  d["scheme"] = t.scheme;
  d["stored"] = t.stored;
  d["shape"] = t.shape;
  d["dtype"] = t.stored_dtype;
  d["bytes"] = t.bytes;
  d["kept"] = t.kept;
  return d;
}

const io::LogicalTensor& tensor_arg(const io::CheckpointReader& r, const std::string& name) {
  const io::LogicalTensor* t = r.find(name);
  if (t == nullptr) throw nb::key_error(name.c_str());
  return *t;
}

}  // namespace

void bind_checkpoint_reader(nb::module_& m) {
  nb::class_<io::CheckpointReader>(m, "CheckpointReader")
      .def(
          "__init__",
          [](io::CheckpointReader* self, const std::string& path) {
            nb::gil_scoped_release release;
            new (self) io::CheckpointReader(path);
          },
          nb::arg("path"))
      .def_prop_ro("is_gguf", &io::CheckpointReader::is_gguf)
      .def("names",
           [](const io::CheckpointReader& r) {
             std::vector<std::string> names;
             for (const io::LogicalTensor& t : r.tensors()) names.push_back(t.name);
             return names;
           })
      .def("info",
           [](const io::CheckpointReader& r, const std::string& name) { return info_dict(tensor_arg(r, name)); })
      .def("metadata", &io::CheckpointReader::metadata)
      // float32: the f32 values; bfloat16 / float16: their uint16 bits, rounded once from those.
      .def(
          "values",
          [](const io::CheckpointReader& r, const std::string& name, const std::string& dtype, int threads) {
            const std::vector<std::size_t> shape = shape_of(tensor_arg(r, name));
            if (dtype == "float32") {
              std::vector<float> v;
              {
                nb::gil_scoped_release release;
                v = r.values(name, threads);
              }
              return nb::object(nb::cast(to_numpy(std::move(v), shape)));
            }
            if (dtype != "bfloat16" && dtype != "float16") {
              throw std::invalid_argument("dtype: float32, bfloat16 or float16 expected, not " + dtype);
            }
            std::vector<std::uint16_t> v;
            {
              nb::gil_scoped_release release;
              v = r.values16(name, dtype == "bfloat16" ? mf::bf16 : mf::f16, threads);
            }
            return nb::object(nb::cast(to_numpy(std::move(v), shape)));
          },
          nb::arg("name"), nb::arg("dtype"), nb::arg("threads"))
      // A kept tensor's bytes as stored (uint8, flat); the Python layer views them as its dtype and shape.
      .def(
          "stored",
          [](const io::CheckpointReader& r, const std::string& name) {
            const io::LogicalTensor& t = tensor_arg(r, name);
            std::vector<std::byte> b;
            {
              nb::gil_scoped_release release;
              b = r.stored(name);
            }
            std::vector<std::uint8_t> u(b.size());
            if (!b.empty()) std::memcpy(u.data(), b.data(), b.size());
            const std::vector<std::size_t> flat{u.size()};
            return nb::make_tuple(std::string(io::dtype_name(t.kept_dtype)), to_numpy(std::move(u), flat));
          },
          nb::arg("name"))
      .def(
          "quantized",
          [](const io::CheckpointReader& r, const std::string& name) {
            (void)tensor_arg(r, name);
            nb::gil_scoped_release release;
            return r.quantized(name);
          },
          nb::arg("name"));
}

}  // namespace mf::py
