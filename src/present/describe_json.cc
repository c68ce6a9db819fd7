// describe() results as JSON: the one writer behind `minifloat show --json` and the page's number panel.
#include "minifloat/describe_json.h"

#include <cmath>
#include <nlohmann/json.hpp>

#include "minifloat/describe.h"
#include "minifloat/text.h"

namespace mf {
namespace {

// JSON has no NaN or Inf: those become the strings "nan", "inf", "-inf".
nlohmann::json number_json(double x) {
  if (std::isfinite(x)) return x;
  return shortest(x);
}

std::string_view rounding_name(Rounding r) {
  switch (r) {
    case Rounding::nearest_even: return "nearest_even";
    case Rounding::toward_zero: return "toward_zero";
    case Rounding::stochastic: return "stochastic";
    case Rounding::away_from_zero: return "away_from_zero";
    case Rounding::nearest_away: return "nearest_away";
  }
  return "?";
}

std::string_view overflow_name(Overflow o) {
  switch (o) {
    case Overflow::format_default: return "default";
    case Overflow::saturate: return "saturate";
    case Overflow::clamp: return "clamp";
    case Overflow::nan_outside_range: return "nan_outside_range";
  }
  return "?";
}

bool has_exponent(const Description& d) {
  return d.value_class != ValueClass::nan && d.value_class != ValueClass::inf && d.value_class != ValueClass::zero;
}

nlohmann::json description_json(const Description& d) {
  const Format& f = *d.format;
  nlohmann::json j;
  j["format"] = f.name;
  j["code"] = hex_code(f, d.code);
  j["bits"] = bit_fields(f, d.code, "");
  j["sign"] = f.is_signed() ? nlohmann::json(d.fields.sign) : nlohmann::json(nullptr);
  j["exponent_field"] = binary(d.fields.exponent, f.exponent_bits);
  j["exponent"] = has_exponent(d) ? nlohmann::json(d.fields.unbiased_exponent) : nlohmann::json(nullptr);
  j["mantissa_field"] = binary(d.fields.mantissa, f.mantissa_bits);
  j["class"] = class_name(d);
  j["stored"] = number_json(static_cast<double>(d.stored));
  // The shortest decimal that reads back to the stored f32 (the page shows it; "stored" may print more digits).
  j["stored_text"] = shortest(d.stored);
  j["value"] = number_json(d.value);
  j["abs_error"] = number_json(d.abs_error);
  j["rel_error"] = number_json(d.rel_error);
  return j;
}

}  // namespace

std::string describe_json(double x, bool from_f32_bits, std::span<const Format* const> formats, double scale,
                          const EncodeOptions& options, int indent) {
  nlohmann::json j;
  j["input"] = number_json(x);
  j["input_text"] = shortest(x);
  j["input_f32_bits"] =
      from_f32_bits ? nlohmann::json(hex_code(f32, encode(f32, static_cast<float>(x)))) : nlohmann::json(nullptr);
  j["scale"] = scale;
  j["scaled_input"] = number_json(x / scale);
  j["overflow"] = overflow_name(options.overflow);
  j["rounding"] = rounding_name(options.rounding);
  j["formats"] = nlohmann::json::array();
  for (const Format* f : formats) {
    nlohmann::json row = description_json(describe(*f, x, scale, options));
    if (scale != 1) row["unscaled"] = description_json(describe(*f, x, 1.0, options));
    j["formats"].push_back(row);
  }
  return j.dump(indent);
}

}  // namespace mf
