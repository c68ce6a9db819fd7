// Internal: one Format's element codec traits, keyed on the Format and the encode options and computed once per
// cast (as gemma.cpp's CompressTraits are per type): the constants the per-target element encoders and decoders
// (element_codec-inl.h) broadcast, and the codes the scalar codec (codec.h) gives for the cases the vector steps
// replace by a constant. Anything that casts f32 lanes to codes or back (bulk casts, quantizers, GEMM kernels) builds
// one of these and calls the per-target functions, so every caller gets the scalar codec's bits.
#pragma once

#include <bit>
#include <cstdint>

#include "minifloat/codec.h"

namespace mf::cpu {

struct ElementCodec {
  const Format* format;  // for the scalar codec; the vector steps read only the copies below
  EncodeOptions options;
  std::uint32_t mantissa_bits, bias, code_mask, sign_mask, magnitude_mask, mantissa_mask;
  bool is_signed, has_zero;
  // A signed format without -0 (fnuz): the code of -0 is its NaN, so a zero magnitude never takes the sign and the
  // code sign_mask decodes to NaN.
  bool unsigned_zero;

  // Codes the scalar codec returns where the vector steps take a constant: overflow, zero (by sign), and a
  // negative value in an unsigned format.
  std::uint32_t overflow_pos, overflow_neg, zero_pos, zero_neg, negative_code;

  // Encode, round to nearest even on the f32 bits (element_codec-inl.h, EncodeNearest). Normal targets:
  // code = (|x|bits + normal_add + lsb) >> shift, lsb the bit that becomes the significand's last, normal_add the
  // rounding bias 2^(shift-1) - 1 less the exponent rebias (127 - bias) << 23. Without mantissa bits (ue8m0) the
  // significand is the implicit 1, odd: ties round up, lsb is folded into normal_add. Below the smallest normal, |x| +
  // 2^(emin - m + 23) in f32 arithmetic (round to nearest even) leaves round(|x| / 2^(emin - m)) in the low bits of
  // magic_bits.
  std::uint32_t shift;            // 23 - m
  std::uint32_t normal_add;       // wraps: added modulo 2^32
  std::uint32_t min_normal_bits;  // f32 bits of 2^emin; 0 where no lane takes the subnormal step (bias 127: the
                                  // only such lanes are f32 subnormals, which go to the scalar codec)
  std::uint32_t magic_bits;       // f32 bits of 2^(emin - m + 23)
  std::uint32_t max_code;         // max_finite_code: above it, the overflow code
  bool overflow_is_min;           // overflow_pos is max_code or max_code + 1: Min(code, overflow_pos) replaces overflow
  // Nearest-even rounds every f32 subnormal to zero (the format's half quantum is 2^-126 or more) through the
  // subnormal step, as it does with the CPU's denormals-are-zero on or off: only Inf and NaN lanes need the scalar
  // codec (NeedsScalarNearest).
  bool tiny_rounds_to_zero;
  // Stochastic rounding's subnormal step shifts a zero by shift + the f32 exponent field of 2^emin: 32 or more for
  // every format of all_formats that has the step, and x86's variable shifts then leave its code 0 by themselves
  // (EncodeStochastic skips the zero fixup there); a format built by a caller may have less.
  bool zero_shift_clears;
  // Stochastic (EncodeStochastic): normal targets (|x|bits + random bits below 2^shift - rebias) >> shift; below
  // the smallest normal the significand's own shift, while it stays below 32: |x| from stochastic_floor_bits on.
  std::uint32_t stochastic_add;
  std::uint32_t stochastic_floor_bits;
  std::uint32_t sign_shift;  // the f32 sign bit >> sign_shift is the code's sign bit (signed formats)
  bool unsigned_fixups;      // unsigned format or no zero: negatives and zeros take their constant codes

  // The block quantizers' saturating encoders (element_codec-inl.h): the largest finite value, and for
  // EncodeSaturatingByTable the addend of each binade, lane j for the f32 exponent field E = j (mod 16) among the
  // 16 fields from emin's: 2^(E + 23 - m) with (E - emin field) << m in its low bits. binade_table_fits: a signed
  // format with zero whose normal binades number 16 or fewer (e4m3, e3m2, e2m3, e2m1; not e5m2).
  float max_finite;
  bool binade_table_fits;
  std::uint32_t binade_addends[16];

  // Decode by bit placement: |value|bits = (mag << shift) + decode_add, exact for normal codes; codes below
  // 2^m (subnormals, where decode_subnormals) are mag * 2^(emin - m) in f32; codes from special_from on are Inf or
  // NaN (payload kept for 16-bit formats); a format without zero gives code 0 its value.
  std::uint32_t decode_add;
  bool decode_subnormals;
  float subnormal_scale;
  std::uint32_t special_from;    // magnitude of the first Inf/NaN code; past magnitude_mask when there is none
  std::uint32_t inf_mag;         // magnitude of Inf; past magnitude_mask when there is none
  bool keep_payload;             // 16-bit formats widen NaN payloads (IEEE); narrower ones give the quiet NaN
  std::uint32_t zero_code_bits;  // f32 bits of code 0's value in a format without zero
  bool decode_is_shift;          // the code is the f32's top bits (bf16): value bits = code << shift
};

// The format's fields, and the codes the scalar codec gives where the vector steps take a constant.
constexpr void set_format_fields(ElementCodec& c, const Format& f, const EncodeOptions& o) {
  c.format = &f;
  c.options = o;
  c.mantissa_bits = static_cast<std::uint32_t>(f.mantissa_bits);
  c.bias = static_cast<std::uint32_t>(f.bias);
  c.code_mask = static_cast<std::uint32_t>(f.code_count() - 1);
  c.sign_mask = f.sign_mask();
  c.magnitude_mask = f.magnitude_mask();
  c.mantissa_mask = f.mantissa_mask();
  c.is_signed = f.is_signed();
  c.has_zero = f.has_zero;
  c.unsigned_zero = f.is_signed() && f.has_zero && !f.has_negative_zero();
  c.overflow_pos = detail::overflow_code(f, 0, o);
  c.overflow_neg = detail::overflow_code(f, f.sign_mask(), o);
  c.zero_pos = encode(f, 0.0f, o);
  c.zero_neg = encode(f, -0.0f, o);
  c.negative_code = encode(f, -1.0f, o);
}

// The encoders' constants (nearest even and stochastic); after set_format_fields.
constexpr void set_encode_traits(ElementCodec& c, const Format& f) {
  const int m = f.mantissa_bits;
  c.shift = static_cast<std::uint32_t>(23 - m);
  c.normal_add = ((std::uint32_t{1} << (22 - m)) - (m == 0 ? 0 : 1)) - (static_cast<std::uint32_t>(127 - f.bias) << 23);
  const int normal_field = f.emin() + 127;  // f32 exponent field of 2^emin
  c.min_normal_bits = f.has_zero && normal_field > 1 ? static_cast<std::uint32_t>(normal_field) << 23 : 0;
  c.magic_bits = static_cast<std::uint32_t>(f.emin() - m + 23 + 127) << 23;
  c.stochastic_add = 0u - (static_cast<std::uint32_t>(127 - f.bias) << 23);
  const int floor_field = normal_field - (31 - (23 - m));  // shift = 23 - m + normal_field - field < 32
  c.stochastic_floor_bits =
      c.min_normal_bits != 0 && floor_field > 0 ? static_cast<std::uint32_t>(floor_field) << 23 : 0;
  c.max_code = f.max_finite_code();
  c.overflow_is_min = c.overflow_pos == c.max_code || c.overflow_pos == c.max_code + 1;
  c.tiny_rounds_to_zero = c.min_normal_bits != 0 && f.emin() - m - 1 >= -126;
  c.zero_shift_clears = c.shift + (c.min_normal_bits >> 23) >= 32;
  c.sign_shift = static_cast<std::uint32_t>(31 - f.exponent_bits - m);
  c.unsigned_fixups = !f.is_signed() || !f.has_zero;
  c.max_finite = f.max_finite();
  const std::uint32_t min_field = static_cast<std::uint32_t>(normal_field);
  const std::uint32_t max_field = std::bit_cast<std::uint32_t>(f.max_finite()) >> 23;
  c.binade_table_fits = f.is_signed() && f.has_zero && f.bias < 127 && max_field - min_field < 16;
  for (std::uint32_t j = 0; j < 16; ++j) {
    const std::uint32_t field = min_field + ((j - min_field) & 15u);
    c.binade_addends[j] = ((field + c.shift) << 23) + ((field - min_field) << m);
  }
}

// The decoder's constants.
constexpr void set_decode_traits(ElementCodec& c, const Format& f) {
  const int m = f.mantissa_bits;
  c.decode_add = static_cast<std::uint32_t>(127 - f.bias) << 23;
  c.decode_subnormals = f.has_zero && f.bias != 127;  // bias 127: subnormals land on f32 subnormals by placement
  c.subnormal_scale = pow2f(f.emin() - m);
  const std::uint32_t none = f.magnitude_mask() + 1;
  c.special_from = f.specials == Specials::ieee       ? f.inf_code()
                   : f.specials == Specials::nan_only ? f.magnitude_mask()
                                                      : none;
  c.inf_mag = f.has_inf() ? f.inf_code() : none;
  c.keep_payload = f.bits() >= 16;
  c.zero_code_bits = std::bit_cast<std::uint32_t>(decode(f, 0));
  c.decode_is_shift = f.is_signed() && f.has_zero && f.exponent_bits == 8 && f.bias == 127 &&
                      f.specials == Specials::ieee && c.keep_payload;
}

constexpr ElementCodec element_codec(const Format& f, EncodeOptions o = {}) {
  o.random_bits = 0;
  ElementCodec c{};
  set_format_fields(c, f, o);
  set_encode_traits(c, f);
  set_decode_traits(c, f);
  return c;
}

}  // namespace mf::cpu
