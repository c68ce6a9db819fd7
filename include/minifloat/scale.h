// minifloat/scale.h: the scalar rules of block scaling, one block and one element at a time (docs/spec.md#scale-rules).
//
// These functions are the single definition of what a block's scale and an element's code are. The reference
// quantizer (src/ref) is a loop over them; the SIMD quantizer (src/cpu) calls block_scale() once per block and
// reproduces element_code() lane-wise, and is tested bit for bit against the reference.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>

#include "minifloat/codec.h"
#include "minifloat/scheme.h"

namespace mf {

// DeepSeek's act_quant clamps amax to 1e-4 before computing the scale (inference/kernel.py), so an all-zero
// block gets a small finite scale rather than 2^-127.
inline constexpr float kDeepSeekMinAmax = 1e-4f;

// The scale chosen for one block.
struct BlockScale {
  std::uint32_t code;  // in the scheme's scale format (for f32 scales: the f32 bits)
  float divisor;       // what each element is divided by: decode(code), times the tensor scale for two-level schemes;
                       // 0 means "every element is a signed zero", NaN means "non-finite block"
};

// floor(log2(a)) for a finite a > 0, exactly (f32 subnormals included).
constexpr int floor_log2(float a) {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(a) & 0x7FFFFFFFu;
  const int field = static_cast<int>(bits >> 23);
  if (field != 0) return field - 127;
  return (31 - std::countl_zero(bits)) - 149;
}

// The significand of a finite a > 0 as a 24-bit integer in [2^23, 2^24) (f32 subnormals normalized).
constexpr std::uint32_t normalized_significand(float a) {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(a) & 0x7FFFFFFFu;
  if (bits >> 23) return (bits & 0x7FFFFFu) | 0x800000u;
  return bits << (std::countl_zero(bits) - 8);
}

// ceil(log2(a / b)) for finite a, b > 0, exactly, in integers: with a = sa * 2^ea and b = sb * 2^eb (sa, sb in
// [1, 2)), a / b lies in (2^(ea-eb-1), 2^(ea-eb+1)), and above 2^(ea-eb) exactly when sa > sb.
constexpr int ceil_log2_ratio(float a, float b) {
  return floor_log2(a) - floor_log2(b) + (normalized_significand(a) > normalized_significand(b) ? 1 : 0);
}

// The powers of two a scale format can hold, as exponents [lo, hi].
constexpr int scale_exponent_min(const Format& s) {
  return s == f32 ? -149 : s.emin() - (s.has_subnormals() ? s.mantissa_bits : 0);
}
constexpr int scale_exponent_max(const Format& s) { return s == f32 ? 127 : s.emax(); }

// The exponent k of a power-of-two scale S = 2^k for rules floor, rceil and even (amax > 0 finite).
// Always inlined, as are the two below: they run once per block inside the SIMD row kernels.
[[gnu::always_inline]] inline int power_of_two_exponent(const Scheme& s, float amax) {
  const ElementType& el = s.element;
  switch (s.rule) {
    case ScaleRule::floor:
      if (s.profile == Profile::ggml) return static_cast<int>(std::floor(std::log2(amax))) - el.emax();
      return floor_log2(amax) - el.emax();
    case ScaleRule::even: {
      // Round amax to the element's mantissa width (RNE on the f32 bits), then floor.
      const int drop = 23 - (el.is_int() ? el.int_bits - 1 : el.format->mantissa_bits);
      std::uint32_t bits = std::bit_cast<std::uint32_t>(amax);
      bits += ((std::uint32_t{1} << (drop - 1)) - 1) + ((bits >> drop) & 1);
      return floor_log2(std::bit_cast<float>(bits & ~((std::uint32_t{1} << drop) - 1))) - el.emax();
    }
    default:  // rceil (and the starting point of mse)
      return ceil_log2_ratio(amax, el.max());
  }
}

// An exact power of two 2^k as an f32 (k in [-149, 127]).
inline float exp2_exact(int k) { return pow2f(k); }

// The rules floor and rceil with a ue8m0 scale, for a normal f32 amax (0x00800000 <= amax_bits < 0x7F800000), in a
// few integer operations: the same clamped k (S = 2^k) as block_scale(), for the SIMD kernels, which build this
// once per tensor. floor: floor_log2(amax) - emax; rceil: ceil_log2_ratio(amax, max), both on normal floats.
struct PowerOfTwoFast {
  int emax;                    // floor(log2(max_elem))
  std::uint32_t max_mantissa;  // rceil: the mantissa bits of max_elem; floor: above any mantissa (never adds 1)
  explicit PowerOfTwoFast(const Scheme& s)
      : emax(s.element.emax()),
        max_mantissa(s.rule == ScaleRule::rceil ? std::bit_cast<std::uint32_t>(s.element.max()) & 0x7FFFFFu
                                                : 0xFFFFFFFFu) {}
  int exponent(std::uint32_t amax_bits) const {
    const int k = static_cast<int>(amax_bits >> 23) - 127 - emax + ((amax_bits & 0x7FFFFFu) > max_mantissa ? 1 : 0);
    return std::clamp(k, -127, 127);
  }
};

// torchao clamps NVFP4 block scales to E4M3_EPS = 2^-6, the smallest normal e4m3 (code 0x08), before rounding
// (nvfp4_tensor.py), so its scales never use the subnormals and all-zero blocks get 0x08.
inline constexpr std::uint32_t kTorchaoMinE4m3Scale = 0x08;

// The smallest ue4m3 scale code a scheme's e4m3 rule may give (the torchao profile's clamp, else 0; torchao has no
// UE5M3 scales, so a ue5m3 scale is never clamped).
inline std::uint32_t min_e4m3_scale(const Scheme& s) {
  return s.profile == Profile::torchao && *s.scale_format == ue4m3 ? kTorchaoMinE4m3Scale : 0;
}

// NVFP4's block scale (rule e4m3) without the general codec: ue4m3(RNE(amax / max / tensor_scale)), saturated, at
// least min_code, and its divisor, for a finite amax and a finite tensor_scale > 0. The same result as
// block_scale(), for the kernels.
[[gnu::always_inline]] inline BlockScale e4m3_scale_fast(float amax, float max_elem, float tensor_scale,
                                                         std::uint32_t min_code = 0) {
  const float y = amax / max_elem / tensor_scale;  // the reference's two divisions, in its order
  std::uint32_t code;
  if (!(y < 448.0f)) {
    code = 0x7E;  // saturate (also +Inf from a tiny tensor scale)
  } else if (y < 0x1p-6f) {
    code = static_cast<std::uint32_t>(std::nearbyint(y * 0x1p9f));  // subnormal grid, quantum 2^-9 (exact scaling)
  } else {
    const std::uint32_t bits = std::bit_cast<std::uint32_t>(y);
    code = ((bits + 0x7FFFFu + ((bits >> 20) & 1u)) >> 20) - (120u << 3);  // RNE to 3 mantissa bits, rebias 127 -> 7
  }
  code = std::max(code, min_code);
  const float S = code < 8 ? static_cast<float>(code) * 0x1p-9f
                           : std::bit_cast<float>((((code >> 3) + 120u) << 23) | ((code & 7u) << 20));
  return {code, S * tensor_scale};
}

// A ue4m3 block scale for the ideal (unrounded) scale `ideal`: RNE, saturated, at least min_e4m3_scale(s).
inline BlockScale e4m3_block_scale(const Scheme& s, float ideal, float tensor_scale) {
  // with_rule() guarantees a ue4m3 scale here; naming the constant lets the compiler fold the codec.
  const std::uint32_t code =
      std::max(encode(ue4m3, ideal, {Rounding::nearest_even, Overflow::saturate, 0}), min_e4m3_scale(s));
  return {code, decode(ue4m3, code) * tensor_scale};
}

// NVFP4 with UE5M3 scales (rule e4m3 on a ue5m3 scale): the ideal scale rounded to nearest even into ue5m3 and
// saturated to 0xFE = 114688 (also +Inf from a tiny tensor scale), as TransformerEngine#3325 converts it
// (static_cast to __nv_fp8_ue5m3, RN satfinite); ideals up to 2^-18 (half the least subnormal) become 0x00,
// a zero divisor: the block's elements become signed zeros.
inline BlockScale ue5m3_block_scale(float ideal, float tensor_scale) {
  const std::uint32_t code = encode(ue5m3, ideal, {Rounding::nearest_even, Overflow::saturate, 0});
  return {code, decode(ue5m3, code) * tensor_scale};
}

// The scale of a power-of-two rule, clamped to what the scale format holds.
[[gnu::always_inline]] inline BlockScale power_of_two_scale(const Scheme& s, int k, float tensor_scale) {
  k = std::clamp(k, scale_exponent_min(*s.scale_format), scale_exponent_max(*s.scale_format));
  const float S = exp2_exact(k);
  // ue8m0 holds 2^k as k + 127 (the common case, per block, so not through the generic encoder).
  const std::uint32_t code =
      *s.scale_format == ue8m0 ? static_cast<std::uint32_t>(k + 127) : encode(*s.scale_format, S);
  return {code, s.tensor_scale ? S * tensor_scale : S};
}

// Transformer Engine's MX block scale (profile te, rule rceil, ue8m0 scales): float_to_e8m0(amax * max_norm_rcp)
// (transformer_engine/common/cast/mxfp8/quantize_mxfp8.cuh; float_to_e8m0 and exp2f_rcp in util/ptx.cuh; max_norm_rcp
// = float(1.0 / max_norm)): the f32 product of amax and RN(1 / max_elem), rounded up to
// a power of two with satfinite (away_from_zero, clamp; docs/encoding.md). That is rceil except for one amax per
// element type, the f32 just above max_elem * 2^-127 (e4m3: 0x04600001), whose product rounds down onto 2^-127:
// 0x00 where rceil gives 0x01. TE then multiplies the elements by exp2f_rcp(code), which is 1, not 2^127, for code
// 0x00: that block's divisor is 1 (its elements, at most max_elem * 2^-127, become signed zeros).
inline BlockScale te_mx_scale(const Scheme& s, float amax) {
  const float max_norm_rcp = static_cast<float>(1.0 / static_cast<double>(s.element.max()));
  const std::uint32_t code = encode(ue8m0, amax * max_norm_rcp, {Rounding::away_from_zero, Overflow::clamp, 0});
  return {code, code == 0 ? 1.0f : decode(ue8m0, code)};
}

// The block scale for rules other than mse and 4over6 (which need the block's values: see mse_scale and
// four_over_six_scale in src/blocks/blocking.h).
// amax = max |x| over the block's finite values; nonfinite: the block holds NaN or +-Inf.
inline BlockScale block_scale(const Scheme& s, float amax, bool nonfinite, float tensor_scale = 1.0f) {
  const Format& sf = *s.scale_format;
  if (nonfinite) return {sf.nan_code(), NAN};
  if (s.profile == Profile::deepseek) amax = std::max(amax, kDeepSeekMinAmax);
  switch (s.rule) {
    case ScaleRule::f32: {
      const float S = amax / s.element.max();
      return {std::bit_cast<std::uint32_t>(S), S};
    }
    case ScaleRule::e4m3:
    case ScaleRule::four_over_six: {  // its M=6 candidate; four_over_six_scale() chooses between M=6 and M=4
      // NVFP4: amax / 6 / tensor_scale in f32, saturated into ue4m3 (RNE); elements divide by S * tensor_scale.
      const float ideal = tensor_scale > 0 ? amax / s.element.max() / tensor_scale : 0.0f;
      if (sf == ue5m3) return ue5m3_block_scale(ideal, tensor_scale);
      return e4m3_block_scale(s, ideal, tensor_scale);
    }
    default:
      if (s.profile == Profile::te && s.rule == ScaleRule::rceil && sf == ue8m0) return te_mx_scale(s, amax);
      if (amax == 0) {
        // Zero block: the smallest scale (ue8m0 0x00 = 2^-127); elements become signed zeros either way.
        return power_of_two_scale(s, scale_exponent_min(sf), tensor_scale);
      }
      return power_of_two_scale(s, power_of_two_exponent(s, amax), tensor_scale);
  }
}

// 4/6 normalizes the tensor scale to a block scale of 256 rather than 448, so that a block's M=4 candidate
// (1.5 times its M=6 scale, at most 384) never saturates e4m3 (fouroversix E4M3_MAX_FOUROVERSIX, ModelOpt
// E4M3_MAX_46).
inline constexpr float kFourOverSixScaleMax = 256.0f;

// The per-tensor scale of two-level schemes: tensor_amax / (448 * 6) for NVFP4 (256 * 6 for 4/6), 1 when the
// tensor is all zeros.
inline float tensor_scale_for(const Scheme& s, float tensor_amax) {
  if (!s.tensor_scale) return 1.0f;
  const float scale_max = s.rule == ScaleRule::four_over_six ? kFourOverSixScaleMax : s.scale_format->max_finite();
  const float ts = tensor_amax / (scale_max * s.element.max());
  return ts > 0 && std::isfinite(ts) ? ts : 1.0f;
}

// ggml's element rule: the nearest of the 8 E2M1 magnitudes times d = S / 2 (ggml stores doubled values),
// ties to the smaller magnitude (first match of a strict < scan), and never -0 (llama.cpp best_index_mxfp4).
inline std::uint32_t ggml_e2m1_code(float x, float S) {
  constexpr float kDoubled[8] = {0, 1, 2, 3, 4, 6, 8, 12};
  const float d = S * 0.5f;
  const float a = std::fabs(x);
  std::uint32_t best = 0;
  float best_err = std::fabs(kDoubled[0] * d - a);
  for (std::uint32_t i = 1; i < 8; ++i) {
    const float err = std::fabs(kDoubled[i] * d - a);
    if (err < best_err) {
      best = i;
      best_err = err;
    }
  }
  return (x < 0 && best != 0) ? (best | 0x8u) : best;
}

// The code of one element x in a block whose scale is `bs` (bs.divisor finite). Saturates to +-max.
inline std::uint32_t element_code(const Scheme& s, float x, const BlockScale& bs) {
  const ElementType& el = s.element;
  if (s.profile == Profile::ggml && el.format == &e2m1) return ggml_e2m1_code(x, bs.divisor);
  if (el.is_int()) {
    if (bs.divisor == 0) return 0;
    const float m = el.max();
    const float q = std::clamp(std::nearbyint(x / bs.divisor), -m, m);
    return static_cast<std::uint32_t>(static_cast<std::int32_t>(q)) & ((std::uint32_t{1} << el.int_bits) - 1);
  }
  const Format& f = *el.format;
  if (bs.divisor == 0) return std::signbit(x) ? f.sign_mask() : 0;  // signed zero, as a plain cast of 0 gives
  return encode(f, x / bs.divisor, {Rounding::nearest_even, Overflow::saturate, 0});
}

// The value of one element code, before the block scale.
inline float element_value(const ElementType& el, std::uint32_t code) {
  if (!el.is_int()) return decode(*el.format, code);
  const int shift = 32 - el.int_bits;  // sign-extend the low int_bits bits
  return static_cast<float>(static_cast<std::int32_t>(code << shift) >> shift);
}

// An element's value times its block's divisor, as dequantize defines it. Where both are NaN the element's NaN is
// the result: the hardware returns either operand's NaN, and which one a compiler's `*` gives is not fixed.
inline float scaled_value(float value, float divisor) {
  return std::isnan(divisor) && std::isnan(value) ? value : value * divisor;
}

}  // namespace mf
