// minifloat/text.h: numbers and codes as text, for the command line, the Python package and the page.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "minifloat/codec.h"
#include "minifloat/format.h"

namespace mf {

// A decimal number ("0.3", "-1e-3", "+2", "inf", "-nan"), read as the nearest f64. Surrounding blanks are allowed;
// anything else (hex, trailing text, an empty string) gives nullopt.
std::optional<double> parse_decimal(std::string_view text);

// An unsigned integer, "0x" hexadecimal or plain decimal, that fits in `max_bits` bits; otherwise nullopt.
std::optional<std::uint32_t> parse_code(std::string_view text, int max_bits = 32);

// A number given as a decimal or as f32 bits ("0x3e99999a"): the value as f64, and whether it came as bits.
struct ParsedNumber {
  double value;
  bool from_f32_bits;
};
std::optional<ParsedNumber> parse_number(std::string_view text);

// Shortest decimal that reads back to the same f32 / f64 ("0.3", "448", "-0", "inf", "nan").
std::string shortest(float x);
std::string shortest(double x);

// A code in lowercase hex with as many digits as the format needs: e2m1 "0x7", e4m3 "0x4d", bf16 "0x3e9a".
std::string hex_code(const Format& f, std::uint32_t code);

// A code's bits as sign | exponent | mantissa, e.g. e4m3 0x2a -> "0 | 0101 | 010" (no sign part when unsigned).
std::string bit_fields(const Format& f, std::uint32_t code, std::string_view separator = " | ");
std::string binary(std::uint32_t value, int width);

// Integers joined by a separator: a shape [256, 4096] as "256, 4096" or "256,4096".
std::string join_numbers(std::span<const std::int64_t> values, std::string_view separator = ", ");
// A shape as error messages and tables print it: "[256, 4096]" ("[]" for a scalar).
std::string shape_text(std::span<const std::int64_t> shape);
std::string shape_text(std::span<const std::uint64_t> shape);

// The codec options by the names the CLI and the Python package use: "nearest_even", "toward_zero", "stochastic";
// "default" (Overflow::format_default), "saturate". Anything else throws std::invalid_argument listing the known names.
Rounding rounding_named(std::string_view name);
Overflow overflow_named(std::string_view name);

}  // namespace mf
