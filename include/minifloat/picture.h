// minifloat/picture.h: the two pictures of DeepInfer's number-format page (docs/spec.md#pictures), as SVG text drawn
// from the codec.
//
// Panel 1 ("strips"): x encoded in each format, one strip per format with one cell per bit, colored
// sign | exponent | mantissa (mantissa amber); read top to bottom the strips get shorter and the mantissa shrinks
// first. Panel 2 ("error"): the relative error of storing x against the format's mantissa bits, with the worst
// case of a normal number, 2^-(m+1), drawn as a line. `minifloat plot` writes them to files and the page (web/)
// draws them through WebAssembly, so both come from this one source.
#pragma once

#include <span>
#include <string>

#include "minifloat/codec.h"
#include "minifloat/format.h"

namespace mf {

// The formats in the pictures, widest first: f32, bf16, f16, e4m3, e5m2, e3m2, e2m3, e2m1.
std::span<const Format* const> picture_formats();

std::string strips_svg(double x, const EncodeOptions& options = {});
std::string error_svg(double x, const EncodeOptions& options = {});

}  // namespace mf
