// minifloat/describe.h: one number in one format, taken apart: what `minifloat show` and the page display.
#pragma once

#include <cstdint>
#include <string_view>

#include "minifloat/codec.h"
#include "minifloat/format.h"

namespace mf {

struct Description {
  const Format* format;
  double input;         // x
  double scale;         // S (1 when no scale)
  double scaled_input;  // x / S, what is encoded (computed in f64)
  std::uint32_t code;   // encode(x / S)
  Fields fields;
  ValueClass value_class;
  bool saturated;    // |x / S| is above max finite and the code is +-max finite (clipped, not rounded)
  float stored;      // decode(code)
  double value;      // stored * S, what the format gives back for x
  double abs_error;  // |value - x|
  double rel_error;  // abs_error / |x|; 0 when both are 0; +Inf when x is 0 and value is not
};

// Encode x / scale into `f` with `options` and report how it went. scale must be positive and finite.
Description describe(const Format& f, double x, double scale = 1.0, const EncodeOptions& options = {});

// "zero", "subnormal", "normal", "inf", "nan", or "saturated" when d.saturated.
std::string_view class_name(const Description& d);

}  // namespace mf
