// minifloat/describe_json.h: one number in several formats as JSON text. It is what `minifloat show --json` prints
// and what the converter page (web/) displays, so the command and the page cannot disagree.
#pragma once

#include <span>
#include <string>

#include "minifloat/codec.h"
#include "minifloat/format.h"

namespace mf {

// x / scale encoded into each format with `options` (describe() per format), as a JSON object:
// {input, input_text, input_f32_bits, scale, scaled_input, overflow, rounding, formats: [{format, code, bits, sign,
//  exponent_field, exponent, mantissa_field, class, stored, stored_text, value, abs_error, rel_error, unscaled?}]}.
// NaN and Inf are the strings "nan", "inf", "-inf" (JSON has no such numbers). Schema in docs/cli.md.
// from_f32_bits: x was given as f32 bits, which are echoed back. scale must be positive and finite.
std::string describe_json(double x, bool from_f32_bits, std::span<const Format* const> formats, double scale,
                          const EncodeOptions& options, int indent = 2);

}  // namespace mf
