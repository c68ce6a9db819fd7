// minifloat/format.h: number formats as data.
//
// A Format is one line of data: field widths, bias, and how the format spends its top codes on Inf and NaN.
// Every limit (max finite, min normal, NaN codes, ...) is derived from that line, never typed per format.
// The formats of LLM inference are provided as constants: f32, bf16, f16, e4m3, e5m2, e3m2, e2m3, e2m1, ue8m0, ue4m3,
// and the rest of the 8-bit float family: e4m3fnuz, e5m2fnuz, e4m3b11fnuz, e3m4, e4m3ieee, ue5m3.
#pragma once

#include <array>
#include <bit>
#include <cstdint>
#include <span>
#include <string_view>

namespace mf {

// How a format uses the codes whose exponent field is all ones.
enum class Specials : std::uint8_t {
  ieee,      // exponent all ones: mantissa 0 is +-Inf, anything else NaN (f32, bf16, f16, e5m2)
  nan_only,  // no Inf; only the all-ones magnitude is NaN, the rest are finite ("fn": e4m3, ue4m3, ue8m0)
  finite,    // every code is a finite number (e3m2, e2m3, e2m1)
  // "fnuz" (LLVM's Float8E4M3FNUZ, ml_dtypes' float8_*fnuz): no Inf, no -0; the one NaN is the code of -0
  // (sign 1, the rest 0), and every other code, exponent all ones included, is finite. Encoding never gives -0: a
  // negative value that rounds to zero gives +0 (ml_dtypes does).
  fnuz,
};

// An exact power of two as f32; k in [-149, 127]. constexpr (std::ldexp is not).
constexpr float pow2f(int k) {
  if (k >= -126) return std::bit_cast<float>(static_cast<std::uint32_t>(k + 127) << 23);
  return std::bit_cast<float>(std::uint32_t{1} << (k + 149));  // f32 subnormal
}

struct Format {
  std::string_view name;  // minifloat's name: "e4m3"
  std::string_view also;  // what others call it: "FP8 E4M3FN, torch.float8_e4m3fn"
  int sign_bits;          // 1, or 0 for unsigned scale formats
  int exponent_bits;
  int mantissa_bits;
  int bias;
  Specials specials;
  // false: exponent field 0 is a normal binade (2^-bias * 1.m) and the format has no zero (ue8m0).
  bool has_zero = true;

  // ---- widths and masks ----
  constexpr int bits() const { return sign_bits + exponent_bits + mantissa_bits; }
  constexpr int storage_bytes() const { return bits() <= 8 ? 1 : bits() <= 16 ? 2 : 4; }
  constexpr std::uint64_t code_count() const { return std::uint64_t{1} << bits(); }
  constexpr std::uint32_t mantissa_mask() const { return (std::uint32_t{1} << mantissa_bits) - 1; }
  constexpr std::uint32_t exponent_field_max() const { return (std::uint32_t{1} << exponent_bits) - 1; }
  constexpr std::uint32_t magnitude_mask() const { return (std::uint32_t{1} << (exponent_bits + mantissa_bits)) - 1; }
  constexpr std::uint32_t sign_mask() const {
    return sign_bits ? std::uint32_t{1} << (exponent_bits + mantissa_bits) : 0;
  }
  constexpr bool is_signed() const { return sign_bits != 0; }

  // ---- special codes ----
  constexpr bool has_inf() const { return specials == Specials::ieee; }
  constexpr bool has_nan() const { return specials != Specials::finite; }
  // Whether the code of -0 is -0 (false for fnuz, where it is the NaN, and for unsigned formats).
  constexpr bool has_negative_zero() const { return is_signed() && has_zero && specials != Specials::fnuz; }
  // The magnitude of the largest finite code.
  constexpr std::uint32_t max_finite_code() const {
    switch (specials) {
      case Specials::ieee: return ((exponent_field_max() - 1) << mantissa_bits) | mantissa_mask();
      case Specials::nan_only: return magnitude_mask() - 1;
      case Specials::finite:
      case Specials::fnuz: return magnitude_mask();
    }
    return 0;
  }
  // The code an encoder returns for NaN (quiet NaN for IEEE formats); only where has_nan().
  constexpr std::uint32_t nan_code(bool negative = false) const {
    const std::uint32_t s = negative ? sign_mask() : 0;
    if (specials == Specials::ieee) {
      return s | (exponent_field_max() << mantissa_bits) | (std::uint32_t{1} << (mantissa_bits - 1));
    }
    if (specials == Specials::fnuz) return sign_mask();  // one NaN, whatever the sign asked for
    return s | magnitude_mask();
  }
  // +-Inf; only where has_inf().
  constexpr std::uint32_t inf_code(bool negative = false) const {
    return (negative ? sign_mask() : 0) | (exponent_field_max() << mantissa_bits);
  }
  constexpr bool is_nan(std::uint32_t code) const {
    const std::uint32_t mag = code & magnitude_mask();
    switch (specials) {
      case Specials::ieee: return (mag >> mantissa_bits) == exponent_field_max() && (mag & mantissa_mask()) != 0;
      case Specials::nan_only: return mag == magnitude_mask();
      case Specials::finite: return false;
      case Specials::fnuz: return is_signed() && (code & (sign_mask() | magnitude_mask())) == sign_mask();
    }
    return false;
  }
  constexpr bool is_inf(std::uint32_t code) const { return has_inf() && (code & magnitude_mask()) == inf_code(); }

  // ---- derived limits (exact powers of two and products; all are f32 values) ----
  constexpr int emin() const { return has_zero ? 1 - bias : -bias; }  // exponent of the smallest normal binade
  constexpr int emax() const { return static_cast<int>(max_finite_code() >> mantissa_bits) - bias; }
  constexpr float max_finite() const {
    const std::uint32_t m = max_finite_code() & mantissa_mask();
    return static_cast<float>((std::uint32_t{1} << mantissa_bits) | m) * pow2f(emax() - mantissa_bits);
  }
  constexpr float min_normal() const { return pow2f(emin()); }
  constexpr bool has_subnormals() const { return has_zero && mantissa_bits > 0; }
  constexpr float min_subnormal() const { return has_subnormals() ? pow2f(emin() - mantissa_bits) : 0.0f; }

  // A format is its data: two Formats with the same fields encode and decode alike, whatever their names.
  friend constexpr bool operator==(const Format& a, const Format& b) {
    return a.sign_bits == b.sign_bits && a.exponent_bits == b.exponent_bits && a.mantissa_bits == b.mantissa_bits &&
           a.bias == b.bias && a.specials == b.specials && a.has_zero == b.has_zero;
  }
};

// The formats. Bit literals for the specials are in the comments; the numbers themselves are derived above.
inline constexpr Format f32{"f32", "FP32, IEEE binary32", 1, 8, 23, 127, Specials::ieee};
inline constexpr Format bf16{"bf16", "BF16, bfloat16", 1, 8, 7, 127, Specials::ieee};
inline constexpr Format f16{"f16", "FP16, IEEE binary16", 1, 5, 10, 15, Specials::ieee};
// NaN is S.1111.111 only; 0x7E = 448 is the largest finite value.
inline constexpr Format e4m3{"e4m3", "FP8 E4M3FN, torch.float8_e4m3fn", 1, 4, 3, 7, Specials::nan_only};
inline constexpr Format e5m2{"e5m2", "FP8 E5M2, torch.float8_e5m2", 1, 5, 2, 15, Specials::ieee};
inline constexpr Format e3m2{"e3m2", "FP6 E3M2, float6_e3m2fn", 1, 3, 2, 3, Specials::finite};
inline constexpr Format e2m3{"e2m3", "FP6 E2M3, float6_e2m3fn", 1, 2, 3, 1, Specials::finite};
inline constexpr Format e2m1{"e2m1", "FP4 E2M1, torch.float4_e2m1fn_x2 (packed)", 1, 2, 1, 1, Specials::finite};
// Exponent only: 2^(code-127); 0xFF is NaN and there is no zero.
inline constexpr Format ue8m0{"ue8m0", "E8M0, float8_e8m0fnu", 0, 8, 0, 127, Specials::nan_only, false};
// E4M3 without its sign bit, used as a positive block scale (NVFP4); 0x7F is NaN.
inline constexpr Format ue4m3{"ue4m3", "E4M3 used as a positive scale (NVFP4)", 0, 4, 3, 7, Specials::nan_only};
// The fnuz formats (Graphcore/AMD, arXiv:2206.02915): NaN is 0x80 only, no Inf, no -0; 0x7F is the largest value.
inline constexpr Format e4m3fnuz{"e4m3fnuz", "FP8 E4M3FNUZ, torch.float8_e4m3fnuz", 1, 4, 3, 8, Specials::fnuz};
inline constexpr Format e5m2fnuz{"e5m2fnuz", "FP8 E5M2FNUZ, torch.float8_e5m2fnuz", 1, 5, 2, 16, Specials::fnuz};
inline constexpr Format e4m3b11fnuz{"e4m3b11fnuz", "FP8 E4M3B11FNUZ, float8_e4m3b11fnuz", 1, 4, 3, 11, Specials::fnuz};
// IEEE-style 8-bit formats: exponent all ones is Inf (mantissa 0) or NaN, as in f16.
inline constexpr Format e3m4{"e3m4", "FP8 E3M4, float8_e3m4", 1, 3, 4, 3, Specials::ieee};
inline constexpr Format e4m3ieee{"e4m3ieee", "FP8 E4M3 (IEEE-style), float8_e4m3", 1, 4, 3, 7, Specials::ieee};
// UE5M3: NVIDIA's unsigned block scale (PTX ISA 13.4's ue5m3, LLVM's Float8E5M3FNU): no Inf, 0xFF is NaN, 0xFE =
// 114688 the largest value, zero and subnormals at exponent field 0 (docs/formats.md lists the sources).
inline constexpr Format ue5m3{"ue5m3",           "UE5M3, float8_e5m3fnu (NVFP4 with UE5M3 scales)", 0, 5, 3, 15,
                              Specials::nan_only};

inline constexpr std::array<const Format*, 16> all_formats{&f32,         &bf16, &f16,      &e4m3,  &e5m2,     &e3m2,
                                                           &e2m3,        &e2m1, &ue8m0,    &ue4m3, &e4m3fnuz, &e5m2fnuz,
                                                           &e4m3b11fnuz, &e3m4, &e4m3ieee, &ue5m3};

// The ecosystem's spellings of the formats (ml_dtypes' and PyTorch's dtype names), accepted wherever a format is
// named.
struct FormatAlias {
  std::string_view name;
  const Format* format;
};
inline constexpr std::array<FormatAlias, 16> format_aliases{{{"float32", &f32},
                                                             {"bfloat16", &bf16},
                                                             {"float16", &f16},
                                                             {"float8_e4m3fn", &e4m3},
                                                             {"float8_e5m2", &e5m2},
                                                             {"float6_e3m2fn", &e3m2},
                                                             {"float6_e2m3fn", &e2m3},
                                                             {"float4_e2m1fn", &e2m1},
                                                             {"float4_e2m1fn_x2", &e2m1},
                                                             {"float8_e8m0fnu", &ue8m0},
                                                             {"float8_e4m3fnuz", &e4m3fnuz},
                                                             {"float8_e5m2fnuz", &e5m2fnuz},
                                                             {"float8_e4m3b11fnuz", &e4m3b11fnuz},
                                                             {"float8_e3m4", &e3m4},
                                                             {"float8_e4m3", &e4m3ieee},
                                                             {"float8_e5m3fnu", &ue5m3}}};

// The format named `name` (minifloat's name, e.g. "e4m3", or an ecosystem spelling, e.g. "float8_e4m3fn"), or
// nullptr.
constexpr const Format* find_format(std::string_view name) {
  for (const Format* f : all_formats) {
    if (f->name == name) return f;
  }
  for (const FormatAlias& a : format_aliases) {
    if (a.name == name) return a.format;
  }
  return nullptr;
}

}  // namespace mf
