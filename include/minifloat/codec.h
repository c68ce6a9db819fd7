// minifloat/codec.h: the scalar reference codec. Encode one f32 or f64 value into any Format, decode one code.
//
// Defaults are bit-exact with ml_dtypes (`np.float32(x).astype(dtype)`) for every f32 input:
//   * round to nearest, ties to even; subnormals kept; the sign of zero kept;
//   * overflow: formats with Inf give +-Inf; e4m3/ue4m3/ue5m3/ue8m0 and the fnuz formats give NaN (e4m3: 448 < |x|
//     <= 464 still rounds to 448);
//   * fnuz formats (e4m3fnuz, e5m2fnuz, e4m3b11fnuz) have no -0: -0 and negatives that round to zero give +0, and
//     every NaN and overflow gives their one NaN, 0x80;
//     formats without NaN (e3m2, e2m3, e2m1) saturate to +-max;
//   * NaN: the format's NaN with the input's sign; formats without NaN give the zero of the *opposite* sign
//     (ml_dtypes' choice; OCP MX leaves it open);
//   * unsigned scale formats (ue8m0, ue4m3, ue5m3): negative inputs give NaN; ue8m0 has no zero, so 0 gives NaN too;
//     below 2^-126, ue8m0 rounds on a subnormal-style grid: x <= 2^-127 -> 0x00, 2^-127 < x < 2^-126 -> 0x01.
// Encoding from f64 rounds once, directly from the f64 value (ml_dtypes rounds f64 -> f32 -> format, twice).
//
// Options:
//   * Overflow::saturate: finite overflow and +-Inf give +-max finite; NaN stays NaN where the format has one
//     (CUDA's `.satfinite`).
//   * Rounding::toward_zero: truncate the magnitude; finite values never overflow (IEEE round-toward-zero).
//   * Rounding::stochastic: round |x| up with probability equal to the dropped fraction, decided by the caller's
//     32 random bits: the top (at most 32) dropped bits plus random_bits, carry out means up. Reproducible.
//   * Rounding::away_from_zero: round the magnitude up (the next code away from zero unless |x| is exact); for
//     unsigned formats this is IEEE roundTowardPositive, PTX cvt.rp and ONNX Cast's round_mode "up" for E8M0.
//   * Rounding::nearest_away: to nearest, ties away from zero (IEEE roundTiesToAway); ONNX "nearest" for E8M0.
//     Both are defined for every format, on the magnitude, the sign applied after (as toward_zero). In formats
//     without zero (ue8m0) they round below 2^-126 on the grid of the values (code 0 is 2^-127, not 0), not on
//     ml_dtypes' subnormal-style grid, which nearest_even and toward_zero keep.
//   * Overflow::clamp: saturate at both ends of the range: above the largest finite value (+Inf too) gives +-max;
//     what lies below the smallest value an unsigned format holds (negatives, -Inf, and in ue8m0 zero and
//     |x| < 2^-127) gives code 0. ONNX Cast's saturate=1 for E8M0.
//   * Overflow::nan_outside_range: a value outside [lowest, max] before rounding gives NaN (for ue8m0 that is 0,
//     negatives, x < 2^-127, x > 2^127, +-Inf), values inside round as the rounding says. ONNX Cast's saturate=0
//     for E8M0. Formats without NaN (e2m1, e2m3, e3m2) clamp instead.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <limits>

#include "minifloat/format.h"

namespace mf {

enum class Rounding : std::uint8_t { nearest_even, toward_zero, stochastic, away_from_zero, nearest_away };
// format_default: what the format does (see above), named "default" by the CLI, Python and the page; saturate: +-max;
// clamp and nan_outside_range: both ends of the range (see above).
enum class Overflow : std::uint8_t { format_default, saturate, clamp, nan_outside_range };

struct EncodeOptions {
  Rounding rounding = Rounding::nearest_even;
  Overflow overflow = Overflow::format_default;
  std::uint32_t random_bits = 0;  // used by Rounding::stochastic only
};

namespace detail {

// The IEEE layout of a source type: float or double.
template <class T>
struct Source;
template <>
struct Source<float> {
  using Bits = std::uint32_t;
  static constexpr int mantissa_bits = 23, bias = 127;
};
template <>
struct Source<double> {
  using Bits = std::uint64_t;
  static constexpr int mantissa_bits = 52, bias = 1023;
};

// Round the integer significand `sig` right by `shift` bits (shift >= 0, any size) as `o` says.
constexpr std::uint64_t round_shift(std::uint64_t sig, int shift, const EncodeOptions& o) {
  if (shift == 0) return sig;
  const std::uint64_t kept = shift >= 64 ? 0 : sig >> shift;
  const std::uint64_t dropped = shift >= 64 ? sig : sig & ((std::uint64_t{1} << shift) - 1);
  switch (o.rounding) {
    case Rounding::toward_zero: return kept;
    case Rounding::nearest_even: {
      if (shift > 64) return 0;  // sig < 2^64 <= half of the quantum
      const std::uint64_t half = std::uint64_t{1} << (shift - 1);
      return kept + ((dropped > half || (dropped == half && (kept & 1))) ? 1 : 0);
    }
    case Rounding::away_from_zero: return kept + (dropped != 0 ? 1 : 0);
    case Rounding::nearest_away: {
      if (shift > 64) return 0;  // sig < 2^64 <= half of the quantum
      return kept + (dropped >= (std::uint64_t{1} << (shift - 1)) ? 1 : 0);
    }
    case Rounding::stochastic: {
      // Resolve the dropped fraction to its top k <= 32 bits and add k random bits: carry out rounds up.
      const int k = std::min(shift, 32);
      const int low = shift - k;  // dropped bits below the resolved ones
      const std::uint64_t top = low >= 64 ? 0 : dropped >> low;
      const std::uint64_t r = o.random_bits & ((std::uint64_t{1} << k) - 1);
      return kept + ((top + r) >> k);
    }
  }
  return kept;
}

// The code of +-max finite, +-Inf or NaN when a value is too large for `f`.
constexpr std::uint32_t overflow_code(const Format& f, std::uint32_t sign, const EncodeOptions& o) {
  if (o.overflow != Overflow::format_default || o.rounding == Rounding::toward_zero || f.specials == Specials::finite) {
    return sign | f.max_finite_code();
  }
  return f.has_inf() ? sign | f.inf_code() : f.nan_code(sign != 0);
}

// Step 2 of encode: the code of NaN, Inf, zero, and a negative in an unsigned format (mag: |x|'s bits, inf_bits:
// Inf's); -1 for every other value.
template <class Bits>
constexpr std::int64_t special_code(const Format& f, bool negative, Bits mag, Bits inf_bits, const EncodeOptions& o) {
  const std::uint32_t sign = negative ? f.sign_mask() : 0;
  if (mag > inf_bits) return f.has_nan() ? f.nan_code(negative) : (negative ? 0 : f.sign_mask());
  if (!f.is_signed() && negative && (mag != 0 || !f.has_zero)) return f.nan_code();
  if (mag == inf_bits) {
    if (o.overflow == Overflow::saturate || f.specials == Specials::finite) return sign | f.max_finite_code();
    return f.has_inf() ? sign | f.inf_code() : f.nan_code(negative);
  }
  if (mag == 0) return f.has_zero ? (f.has_negative_zero() ? sign : 0) : f.nan_code();  // fnuz: -0 is +0
  return -1;
}

// Step 2a of encode, for Overflow::clamp and nan_outside_range only: the code of a value outside the format's range
// [lowest, max] (x: the input, mag: |x|'s bits); -1 for NaN, for values inside, and for the other overflow options.
// The range is checked before rounding, as ONNX Cast to E8M0 does.
template <class T, class Bits>
constexpr std::int64_t range_code(const Format& f, T x, Bits mag, Bits inf_bits, const EncodeOptions& o) {
  if ((o.overflow != Overflow::clamp && o.overflow != Overflow::nan_outside_range) || mag > inf_bits) return -1;
  const T max = static_cast<T>(f.max_finite());
  const T lowest = f.is_signed() ? -max : f.has_zero ? T{0} : static_cast<T>(f.min_normal());
  const bool above = x > max;
  if (!above && !(x < lowest)) return -1;  // (ue8m0: lowest = 2^-127, so +-0 lies below)
  if (o.overflow == Overflow::nan_outside_range && f.has_nan()) return f.nan_code(x < 0);
  if (above) return f.max_finite_code();
  return f.is_signed() ? f.sign_mask() | f.max_finite_code() : 0;  // the lowest code: -max, or 0 (0, or 2^-127)
}

// Step 3 of encode: a finite nonzero |x| (its bits `mag`) as sig * 2^(e - M), sig in [2^M, 2^(M+1)), M the
// source's mantissa bits; subnormal sources normalized.
struct Significand {
  std::uint64_t sig;
  int e;
};
template <class T, class Bits>
constexpr Significand significand(Bits mag) {
  using S = Source<T>;
  constexpr int width = static_cast<int>(sizeof(Bits) * 8);
  const int field = static_cast<int>(mag >> S::mantissa_bits);
  const std::uint64_t sig = mag & ((Bits{1} << S::mantissa_bits) - 1);
  if (field != 0) return {sig | (std::uint64_t{1} << S::mantissa_bits), field - S::bias};
  const int lead = (width - 1 - std::countl_zero(static_cast<Bits>(sig)));  // bit index of the leading one
  return {sig << (S::mantissa_bits - lead), 1 - S::bias - (S::mantissa_bits - lead)};
}

template <class T>
constexpr std::uint32_t encode(const Format& f, T x, const EncodeOptions& o) {
  using S = Source<T>;
  using Bits = typename S::Bits;
  constexpr int width = static_cast<int>(sizeof(Bits) * 8);
  constexpr Bits inf_bits = static_cast<Bits>((Bits{1} << (width - 1 - S::mantissa_bits)) - 1) << S::mantissa_bits;

  // 1. Split the sign off.
  const Bits bits = std::bit_cast<Bits>(x);
  const bool negative = (bits >> (width - 1)) != 0;
  const Bits mag = bits & (inf_bits | ((Bits{1} << S::mantissa_bits) - 1));
  const std::uint32_t sign = negative ? f.sign_mask() : 0;

  // 2. Outside the range (clamp, nan_outside_range); NaN, Inf, zero, and negatives in unsigned formats.
  if (const std::int64_t out = range_code(f, x, mag, inf_bits, o); out >= 0) return static_cast<std::uint32_t>(out);
  if (const std::int64_t special = special_code(f, negative, mag, inf_bits, o); special >= 0) {
    return static_cast<std::uint32_t>(special);
  }

  // 3. |x| = sig * 2^(e - M) with sig in [2^M, 2^(M+1)); normalize subnormal sources.
  const auto [sig, e] = significand<T>(mag);

  // 4. The target's quantum at this magnitude: 2^q, where the grid below the smallest normal is the subnormal one.
  //    Formats without zero (ue8m0) keep that grid for nearest-even and toward-zero rounding, as ml_dtypes does; the
  //    other roundings must not move the exact code 0 = 2^-bias, so they round on that code's own binade.
  if (!f.has_zero && o.rounding != Rounding::nearest_even && o.rounding != Rounding::toward_zero && e < 1 - f.bias) {
    const int q0 = -f.bias - f.mantissa_bits;
    const std::uint64_t r0 = round_shift(sig, S::mantissa_bits + q0 - e, o);
    const std::uint64_t implicit = std::uint64_t{1} << f.mantissa_bits;
    return r0 <= implicit ? 0u : static_cast<std::uint32_t>(r0 - implicit);
  }
  const int q = std::max(e, 1 - f.bias) - f.mantissa_bits;
  const std::uint64_t r = round_shift(sig, S::mantissa_bits + q - e, o);

  // 5. Assemble: exponent field (q + M + bias - 1) plus r, whose implicit bit (or a rounding carry) lifts it.
  const std::int64_t code =
      (static_cast<std::int64_t>(q + f.mantissa_bits + f.bias - 1) << f.mantissa_bits) + static_cast<std::int64_t>(r);
  if (code > static_cast<std::int64_t>(f.max_finite_code())) return overflow_code(f, sign, o);
  if (code == 0 && !f.has_negative_zero()) return 0;  // fnuz: a negative that rounds to zero is +0
  return sign | static_cast<std::uint32_t>(code);
}

}  // namespace detail

// Encode one value. The code is in the low f.bits() bits.
constexpr std::uint32_t encode(const Format& f, float x, const EncodeOptions& o = {}) {
  if (f == mf::f32) {  // exact: the identity, NaN payload included, unless Inf must saturate
    const std::uint32_t bits = std::bit_cast<std::uint32_t>(x);
    const bool inf = (bits & 0x7FFFFFFFu) == 0x7F800000u;
    if (!inf || o.overflow == Overflow::format_default) return bits;
    return (bits & 0x80000000u) | (o.overflow == Overflow::nan_outside_range ? 0x7FC00000u : f32.max_finite_code());
  }
  return detail::encode(f, x, o);
}
constexpr std::uint32_t encode(const Format& f, double x, const EncodeOptions& o = {}) {
  return detail::encode(f, x, o);
}

// Decode one code exactly (every value of every format is an f32). Only the low f.bits() bits are read.
// NaN: 16- and 32-bit formats keep the payload (IEEE widening, as numpy and ml_dtypes do); narrower formats give
// the canonical quiet NaN with the code's sign (as ml_dtypes does).
constexpr float decode(const Format& f, std::uint32_t code) {
  code &= static_cast<std::uint32_t>(f.code_count() - 1);
  if (f == mf::f32) return std::bit_cast<float>(code);
  const bool negative = (code & f.sign_mask()) != 0;
  const std::uint32_t sign32 = negative ? 0x80000000u : 0u;
  const std::uint32_t mag = code & f.magnitude_mask();
  const std::uint32_t field = mag >> f.mantissa_bits;
  const std::uint32_t mantissa = mag & f.mantissa_mask();
  if (f.is_nan(code)) {
    if (f.bits() >= 16) return std::bit_cast<float>(sign32 | 0x7F800000u | (mantissa << (23 - f.mantissa_bits)));
    return std::bit_cast<float>(sign32 | 0x7FC00000u);
  }
  if (f.is_inf(code)) return std::bit_cast<float>(sign32 | 0x7F800000u);
  // value = sig * 2^(exponent - M): subnormals (field 0, with a zero) have no implicit bit and exponent emin.
  const bool subnormal = field == 0 && f.has_zero;
  const std::uint32_t sig = subnormal ? mantissa : (mantissa | (std::uint32_t{1} << f.mantissa_bits));
  const int exponent = subnormal ? f.emin() : static_cast<int>(field) - f.bias;
  const float value = static_cast<float>(sig) * pow2f(exponent - f.mantissa_bits);
  return negative ? -value : value;
}

// The bit fields of a code and the exponent they stand for.
struct Fields {
  std::uint32_t sign;      // 0 or 1
  std::uint32_t exponent;  // the stored field
  std::uint32_t mantissa;  // the stored field
  int unbiased_exponent;   // field - bias; emin for subnormals and zero
};
constexpr Fields fields(const Format& f, std::uint32_t code) {
  const std::uint32_t mag = code & f.magnitude_mask();
  const std::uint32_t e = mag >> f.mantissa_bits;
  const int unbiased = (e == 0 && f.has_zero) ? f.emin() : static_cast<int>(e) - f.bias;
  return {(code & f.sign_mask()) ? 1u : 0u, e, mag & f.mantissa_mask(), unbiased};
}

enum class ValueClass : std::uint8_t { zero, subnormal, normal, inf, nan };
constexpr ValueClass classify(const Format& f, std::uint32_t code) {
  if (f.is_nan(code)) return ValueClass::nan;
  if (f.is_inf(code)) return ValueClass::inf;
  const std::uint32_t mag = code & f.magnitude_mask();
  if (!f.has_zero || (mag >> f.mantissa_bits) != 0) return ValueClass::normal;
  return mag == 0 ? ValueClass::zero : ValueClass::subnormal;
}
constexpr std::string_view to_string(ValueClass c) {
  constexpr std::string_view names[] = {"zero", "subnormal", "normal", "inf", "nan"};
  return names[static_cast<int>(c)];
}

}  // namespace mf
