#include "minifloat/text.h"

#include <array>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <stdexcept>
#include <system_error>

#include "minifloat/codec.h"

namespace mf {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

bool has_hex_prefix(std::string_view s) { return s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'); }

template <class T>
std::string to_shortest(T x) {
  if (std::isnan(x)) return std::signbit(x) ? "-nan" : "nan";
  std::array<char, 64> buf{};
  const auto [end, ec] = std::to_chars(buf.data(), buf.data() + buf.size(), x);
  return ec == std::errc() ? std::string(buf.data(), end) : std::string("?");
}

}  // namespace

std::optional<double> parse_decimal(std::string_view text) {
  text = trim(text);
  bool negative = false;
  if (!text.empty() && (text.front() == '+' || text.front() == '-')) {
    negative = text.front() == '-';
    text.remove_prefix(1);
  }
  // from_chars takes no sign here and would read "0x10" as 0 followed by junk: both are rejected explicitly.
  if (text.empty() || text.front() == '+' || text.front() == '-' || has_hex_prefix(text)) return std::nullopt;
  double value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  // Out of range (1e999, 1e-400): from_chars leaves `value` alone; strtod rounds per IEEE (+-Inf, subnormal, 0).
  if (ec == std::errc::result_out_of_range) {
    value = std::strtod(std::string(text.substr(0, static_cast<std::size_t>(end - text.data()))).c_str(), nullptr);
  } else if (ec != std::errc()) {
    return std::nullopt;
  }
  if (end != text.data() + text.size()) return std::nullopt;
  return negative ? -value : value;
}

std::optional<std::uint32_t> parse_code(std::string_view text, int max_bits) {
  text = trim(text);
  int base = 10;
  if (has_hex_prefix(text)) {
    base = 16;
    text.remove_prefix(2);
  }
  if (text.empty()) return std::nullopt;
  std::uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value, base);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  if (max_bits < 64 && value >> max_bits != 0) return std::nullopt;
  return static_cast<std::uint32_t>(value);
}

std::optional<ParsedNumber> parse_number(std::string_view text) {
  const std::string_view t = trim(text);
  if (has_hex_prefix(t)) {
    const auto bits = parse_code(t, 32);
    if (!bits) return std::nullopt;
    return ParsedNumber{static_cast<double>(std::bit_cast<float>(*bits)), true};
  }
  const auto value = parse_decimal(t);
  if (!value) return std::nullopt;
  return ParsedNumber{*value, false};
}

std::string shortest(float x) { return to_shortest(x); }
std::string shortest(double x) { return to_shortest(x); }

std::string hex_code(const Format& f, std::uint32_t code) {
  static constexpr char digits[] = "0123456789abcdef";
  const int n = (f.bits() + 3) / 4;
  std::string s = "0x";
  for (int i = n - 1; i >= 0; --i) s += digits[(code >> (4 * i)) & 0xF];
  return s;
}

std::string binary(std::uint32_t value, int width) {
  std::string s;
  for (int i = width - 1; i >= 0; --i) s += ((value >> i) & 1) ? '1' : '0';
  return s;
}

namespace {

template <class T>
std::string joined(std::span<const T> values, std::string_view separator, std::string s = {}) {
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i) s += separator;
    s += std::to_string(values[i]);
  }
  return s;
}

}  // namespace

std::string join_numbers(std::span<const std::int64_t> values, std::string_view separator) {
  return joined(values, separator);
}

// Both widths print as they are: an unsigned dimension past int64 (a corrupt header's) is named, not wrapped.
std::string shape_text(std::span<const std::int64_t> shape) { return joined(shape, ", ", "[") += ']'; }
std::string shape_text(std::span<const std::uint64_t> shape) { return joined(shape, ", ", "[") += ']'; }

std::string bit_fields(const Format& f, std::uint32_t code, std::string_view separator) {
  const Fields fl = fields(f, code);
  std::string s;
  if (f.is_signed()) {
    s += binary(fl.sign, 1);
    s += separator;
  }
  s += binary(fl.exponent, f.exponent_bits);
  if (f.mantissa_bits > 0) {
    s += separator;
    s += binary(fl.mantissa, f.mantissa_bits);
  }
  return s;
}

Rounding rounding_named(std::string_view name) {
  if (name == "nearest_even") return Rounding::nearest_even;
  if (name == "toward_zero") return Rounding::toward_zero;
  if (name == "stochastic") return Rounding::stochastic;
  if (name == "away_from_zero") return Rounding::away_from_zero;
  if (name == "nearest_away") return Rounding::nearest_away;
  throw std::invalid_argument("unknown rounding '" + std::string(name) +
                              "' (known: nearest_even, toward_zero, stochastic, away_from_zero, nearest_away)");
}

Overflow overflow_named(std::string_view name) {
  if (name == "default") return Overflow::format_default;
  if (name == "saturate") return Overflow::saturate;
  if (name == "clamp") return Overflow::clamp;
  if (name == "nan_outside_range") return Overflow::nan_outside_range;
  throw std::invalid_argument("unknown overflow '" + std::string(name) +
                              "' (known: default, saturate, clamp, nan_outside_range)");
}

}  // namespace mf
