// Block scaling: quantize, dequantize, fake_quantize, error_report and rotate. The QuantizedTensor is the library's
// own struct; its codes and scales are handed to Python as numpy views of its buffers (no copies).
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "bindings.h"
#include "minifloat/error_report.h"
#include "minifloat/hadamard.h"
#include "minifloat/quantize.h"

namespace mf::py {
namespace {

// The scheme with the caller's rule and profile, applied in the CLI's order (rule first).
Scheme make_scheme(const std::string& name, const std::string& rule, const std::string& profile) {
  Scheme s = for_arg("scheme", [&] { return scheme_named(name); });
  if (!rule.empty()) s = for_arg("rule", [&] { return with_rule(s, scale_rule_named(rule)); });
  if (!profile.empty()) s = for_arg("profile", [&] { return with_profile(s, profile_named(profile)); });
  return s;
}

struct Options {  // what Python passes for mf::QuantizeOptions
  std::string layout;
  int rotate;
  int threads;
  bool pad;
  std::string nonfinite;
  QuantizeOptions get() const {
    QuantizeOptions o;
    o.layout = for_arg("layout", [&] { return layout_named(layout); });
    o.rotate = rotate;
    o.threads = threads;
    o.pad = pad;
    if (nonfinite != "nan" && nonfinite != "error") {
      throw std::invalid_argument("nonfinite: 'nan' or 'error', not '" + nonfinite + "'");
    }
    o.nonfinite = nonfinite == "error" ? NonFinite::error : NonFinite::nan;
    o.tensor_name = "array";
    return o;
  }
};

std::vector<std::int64_t> shape_of(const Array& x) {
  std::vector<std::int64_t> shape(x.ndim());
  for (std::size_t i = 0; i < x.ndim(); ++i) shape[i] = static_cast<std::int64_t>(x.shape(i));
  return shape;
}

QuantizedTensor quantize_array(const Array& x, const std::string& input, const std::string& scheme,
                               const std::string& rule, const std::string& profile, const Options& opt) {
  const Scheme s = make_scheme(scheme, rule, profile);
  const QuantizeOptions o = opt.get();
  const std::vector<std::int64_t> shape = shape_of(x);
  nb::gil_scoped_release release;
  if (input == "f32") return quantize(data_as<float>(x, "array"), shape, s, o);
  const InputType t = input == "bf16" ? InputType::bf16 : InputType::f16;
  return quantize(data_as<std::uint16_t>(x, "array"), t, shape, s, o);
}

void fake_quantize_array(const Array& x, Array out, const std::string& scheme, const std::string& rule,
                         const std::string& profile, const Options& opt) {
  const Scheme s = make_scheme(scheme, rule, profile);
  const QuantizeOptions o = opt.get();
  const std::vector<std::int64_t> shape = shape_of(x);
  if (out.size() != x.size()) throw std::invalid_argument("out: size differs from the input's");
  nb::gil_scoped_release release;
  fake_quantize(data_as<float>(x, "array"), data_as<float>(out, "out"), shape, s, o);
}

template <class T>
nb::ndarray<nb::numpy, T, nb::ndim<1>> view(std::vector<T>& v, nb::handle owner) {
  return {v.data(), {v.size()}, owner};
}

nb::dict stats_dict(const ErrorStats& e) {
  nb::dict d;
  d["count"] = e.count;
  d["nonfinite"] = e.nonfinite;
  d["mse"] = e.mse;
  d["sqnr_db"] = e.sqnr_db;
  d["mean_rel_error"] = e.mean_rel_error;
  d["max_rel_error"] = e.max_rel_error;
  d["mean_abs_error_ratio"] = e.mean_abs_error_ratio;
  d["zeroed_fraction"] = e.zeroed_fraction;
  d["clipped_fraction"] = e.clipped_fraction;
  return d;
}

// Keys as in `minifloat error --json`.
nb::dict report_dict(const ErrorReport& r, const Scheme& s) {
  nb::dict d;
  d["scheme"] = r.scheme;
  d["rule"] = std::string(to_string(s.rule));
  d["profile"] = std::string(to_string(s.profile));
  d["bits_per_value"] = r.bits_per_value;
  d["stats"] = stats_dict(r.total);
  nb::list worst;
  for (const BlockReport& b : r.worst_blocks) {
    nb::dict w;
    w["block_row"] = b.block_row;
    w["block_col"] = b.block_col;
    w["mse"] = b.mse;
    w["max_abs_error"] = b.max_abs_error;
    w["amax"] = b.amax;
    w["scale_code"] = b.scale_code;
    worst.append(w);
  }
  d["worst_blocks"] = worst;
  return d;
}

// QuantizedTensor's read-only properties: its scheme, layout and scales, and views of its codes and scales.
void bind_quantized_tensor_properties(nb::class_<QuantizedTensor>& c) {
  c.def_prop_ro("shape", [](const QuantizedTensor& q) { return q.shape; })
      .def_prop_ro("scheme", [](const QuantizedTensor& q) { return q.scheme.name; })
      .def_prop_ro("scale_format", [](const QuantizedTensor& q) { return std::string(q.scheme.scale_format->name); })
      .def_prop_ro("element", [](const QuantizedTensor& q) { return q.scheme.element.name(); })
      .def_prop_ro("element_bits", [](const QuantizedTensor& q) { return q.scheme.element.bits(); })
      .def_prop_ro("rule", [](const QuantizedTensor& q) { return std::string(to_string(q.scheme.rule)); })
      .def_prop_ro("profile", [](const QuantizedTensor& q) { return std::string(to_string(q.scheme.profile)); })
      .def_prop_ro("has_tensor_scale", [](const QuantizedTensor& q) { return q.scheme.tensor_scale; })
      .def_prop_ro("layout", [](const QuantizedTensor& q) { return std::string(to_string(q.layout)); })
      .def_prop_ro("rotate", [](const QuantizedTensor& q) { return q.rotate; })
      .def_prop_ro("tensor_scale", [](const QuantizedTensor& q) { return q.tensor_scale; })
      .def_prop_ro("scale_shape", [](const QuantizedTensor& q) { return q.scale_shape; })
      .def_prop_ro("block",
                   [](const QuantizedTensor& q) { return nb::make_tuple(q.scheme.block_rows, q.scheme.block_cols); })
      .def_prop_ro("nbytes", &QuantizedTensor::nbytes)
      .def_prop_ro("codes", [](nb::handle self) { return view(nb::cast<QuantizedTensor&>(self).codes, self); })
      .def_prop_ro("scales", [](nb::handle self) { return view(nb::cast<QuantizedTensor&>(self).scales, self); });
}

// Pickling (copy.deepcopy, torch.save, multiprocessing): the parts, and on the way back the scheme resolved from its
// name, rule and profile and the parts checked against it (validate), so that a damaged or foreign state is a
// QuantizeError naming what does not fit, never a tensor whose codes and scales disagree with its scheme.
using Pickled = std::tuple<std::vector<std::int64_t>, std::string, std::string, std::string, std::string, int,
                           nb::bytes, nb::bytes, std::vector<std::int64_t>, float>;

Pickled pickled(const QuantizedTensor& q) {
  return {q.shape,
          q.scheme.name,
          std::string(to_string(q.scheme.rule)),
          std::string(to_string(q.scheme.profile)),
          std::string(to_string(q.layout)),
          q.rotate,
          nb::bytes(reinterpret_cast<const char*>(q.codes.data()), q.codes.size()),
          nb::bytes(reinterpret_cast<const char*>(q.scales.data()), q.scales.size()),
          q.scale_shape,
          q.tensor_scale};
}

QuantizedTensor unpickled(const Pickled& state) {
  const auto& [shape, scheme, rule, profile, layout, rotate, codes, scales, scale_shape, tensor_scale] = state;
  QuantizedTensor t;
  t.shape = shape;
  t.scheme = make_scheme(scheme, rule, profile);
  t.layout = for_arg("layout", [&] { return layout_named(layout); });
  t.rotate = rotate;
  const auto* c = static_cast<const std::uint8_t*>(codes.data());
  const auto* s = static_cast<const std::uint8_t*>(scales.data());
  t.codes.assign(c, c + codes.size());
  t.scales.assign(s, s + scales.size());
  t.scale_shape = scale_shape;
  t.tensor_scale = tensor_scale;
  validate(t);
  return t;
}

// QuantizedTensor's methods: scale_codes, dequantize (into f32 or bf16) and error_report.
void bind_quantized_tensor_methods(nb::class_<QuantizedTensor>& c) {
  // One scale code per block, [block rows, block cols], whatever the layout (ggml keeps them inside its blocks).
  c.def("scale_codes",
        [](const QuantizedTensor& q, Array out) {
          if (q.scale_shape.size() != 2 && q.layout != Layout::ggml) throw std::invalid_argument("no scales");
          const std::int64_t br = (q.rows() + q.scheme.block_rows - 1) / q.scheme.block_rows;
          const std::int64_t bc = (q.cols() + q.scheme.block_cols - 1) / q.scheme.block_cols;
          if (out.size() != static_cast<std::size_t>(br * bc)) throw std::invalid_argument("out: wrong size");
          std::uint32_t* p = data_as<std::uint32_t>(out, "out");
          for (std::int64_t r = 0; r < br; ++r)
            for (std::int64_t c = 0; c < bc; ++c) p[r * bc + c] = q.scale_code(r, c);
        })
      .def(
          "dequantize",
          [](const QuantizedTensor& q, Array out, int threads) {
            if (out.size() != static_cast<std::size_t>(q.count())) throw std::invalid_argument("out: wrong size");
            if (out.dtype() == nb::dtype<std::uint16_t>()) {
              std::uint16_t* p = static_cast<std::uint16_t*>(out.data());
              nb::gil_scoped_release release;
              return dequantize_bf16(q, p, threads);
            }
            float* p = data_as<float>(out, "out");
            nb::gil_scoped_release release;
            dequantize(q, p, threads);
          },
          nb::arg("out"), nb::arg("threads"))
      .def(
          "error_report",
          [](const QuantizedTensor& q, const Array& x, int worst) {
            if (x.size() != static_cast<std::size_t>(q.count())) throw std::invalid_argument("array: wrong size");
            const float* p = data_as<float>(x, "array");
            ErrorReport r;
            {
              nb::gil_scoped_release release;
              r = error_report(p, q, worst);
            }
            return report_dict(r, q.scheme);
          },
          nb::arg("array"), nb::arg("worst_blocks"));
  c.def("__getstate__", &pickled);
  c.def("__setstate__", [](QuantizedTensor& q, const Pickled& state) { new (&q) QuantizedTensor(unpickled(state)); });
}

}  // namespace

void bind_quantize(nb::module_& m) {
  nb::class_<Options>(m, "Options")
      .def(nb::init<std::string, int, int, bool, std::string>(), nb::arg("layout"), nb::arg("rotate"),
           nb::arg("threads"), nb::arg("pad"), nb::arg("nonfinite"));
  nb::class_<QuantizedTensor> c(m, "QuantizedTensor");
  bind_quantized_tensor_properties(c);
  bind_quantized_tensor_methods(c);

  m.def("quantize", &quantize_array, nb::arg("x"), nb::arg("input"), nb::arg("scheme"), nb::arg("rule"),
        nb::arg("profile"), nb::arg("options"));
  m.def("fake_quantize", &fake_quantize_array, nb::arg("x"), nb::arg("out"), nb::arg("scheme"), nb::arg("rule"),
        nb::arg("profile"), nb::arg("options"));
  m.def(
      "rotate",
      [](Array x, int n) {
        float* p = data_as<float>(x, "array");
        validate_rotate(x.size(), n);  // its message names count and n
        nb::gil_scoped_release release;
        rotate(p, x.size(), n);
      },
      nb::arg("x"), nb::arg("n"));
}

}  // namespace mf::py
