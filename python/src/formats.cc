// formats() and schemes(): the library's tables as lists of dicts, so that Python never types a format by hand.
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <stdexcept>

#include "bindings.h"
#include "minifloat/scheme.h"

namespace mf::py {

const Format& format_arg(const std::string& name) {
  if (const Format* f = find_format(name)) return *f;
  std::string known;
  for (const Format* f : all_formats) {
    if (!known.empty()) known += ", ";
    known += f->name;
  }
  throw std::invalid_argument("unknown format '" + name + "' (known: " + known + ")");
}

namespace {

std::string_view specials_name(Specials s) {
  switch (s) {
    case Specials::ieee: return "ieee";
    case Specials::nan_only: return "nan_only";
    case Specials::finite: return "finite";
    case Specials::fnuz: return "fnuz";
  }
  return "";
}

nb::dict format_dict(const Format& f) {
  nb::dict d;
  d["name"] = std::string(f.name);
  d["also"] = std::string(f.also);
  d["bits"] = f.bits();
  d["sign_bits"] = f.sign_bits;
  d["exponent_bits"] = f.exponent_bits;
  d["mantissa_bits"] = f.mantissa_bits;
  d["bias"] = f.bias;
  d["specials"] = std::string(specials_name(f.specials));
  d["has_zero"] = f.has_zero;
  d["has_inf"] = f.has_inf();
  d["has_nan"] = f.has_nan();
  d["max_finite"] = f.max_finite();
  d["min_normal"] = f.min_normal();
  d["min_subnormal"] = f.min_subnormal();
  d["max_finite_code"] = f.max_finite_code();
  d["nan_code"] = f.has_nan() ? nb::cast(f.nan_code()) : nb::none();
  d["inf_code"] = f.has_inf() ? nb::cast(f.inf_code()) : nb::none();
  d["storage_bytes"] = f.storage_bytes();
  return d;
}

nb::dict scheme_dict(const Scheme& s) {
  nb::dict d;
  d["name"] = s.name;
  d["element"] = s.element.name();
  d["element_bits"] = s.element.bits();
  d["block"] = nb::make_tuple(s.block_rows, s.block_cols);
  d["scale_format"] = std::string(s.scale_format->name);
  d["rule"] = std::string(to_string(s.rule));
  d["profile"] = std::string(to_string(s.profile));
  d["tensor_scale"] = s.tensor_scale;
  d["bits_per_value"] = s.bits_per_value();
  return d;
}

}  // namespace

void bind_formats(nb::module_& m) {
  m.def(
      "formats",
      [] {
        nb::list out;
        for (const Format* f : all_formats) out.append(format_dict(*f));
        return out;
      },
      "The formats as the library defines them (docs/spec.md#formats), one dict each: name, also, bits, sign_bits,\n"
      "exponent_bits, mantissa_bits, bias, specials (ieee, nan_only, finite, fnuz), has_zero, has_inf, has_nan,\n"
      "max_finite, min_normal, min_subnormal, max_finite_code, nan_code, inf_code, storage_bytes.");
  m.def("scheme_names", &scheme_names);
  m.def("scheme", [](const std::string& name) { return scheme_dict(scheme_named(name)); });
}

}  // namespace mf::py
