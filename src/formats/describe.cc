#include "minifloat/describe.h"

#include <cmath>

namespace mf {

Description describe(const Format& f, double x, double scale, const EncodeOptions& options) {
  Description d{};
  d.format = &f;
  d.input = x;
  d.scale = scale;
  d.scaled_input = x / scale;
  d.code = encode(f, d.scaled_input, options);
  d.fields = fields(f, d.code);
  d.value_class = classify(f, d.code);
  d.saturated = std::abs(d.scaled_input) > static_cast<double>(f.max_finite()) &&
                (d.code & f.magnitude_mask()) == f.max_finite_code();
  d.stored = decode(f, d.code);
  d.value = static_cast<double>(d.stored) * scale;
  d.abs_error = std::abs(d.value - x);
  if (std::isnan(x) || std::isnan(d.value)) {
    d.abs_error = d.rel_error = NAN;
    if (std::isnan(x) && std::isnan(d.value)) d.abs_error = d.rel_error = 0;  // NaN kept is no error
  } else if (std::isinf(x) || std::isinf(d.value)) {
    d.abs_error = d.rel_error = (x == d.value) ? 0.0 : INFINITY;
  } else {
    d.rel_error = x == 0 ? (d.value == 0 ? 0.0 : INFINITY) : d.abs_error / std::abs(x);
  }
  return d;
}

std::string_view class_name(const Description& d) { return d.saturated ? "saturated" : to_string(d.value_class); }

}  // namespace mf
