// Per-target SIMD code for bulk casts: f32 -> any format's codes, lane by lane the integer steps of the scalar codec
// (include/minifloat/codec.h, detail::encode): split the sign, find the target's quantum at the value's binade, round
// the 24-bit significand right by the shift that quantum asks for (nearest even, toward zero, or stochastic with the
// element's 32 random bits), assemble exponent field + rounded significand, and replace what overflows. Lanes the
// steps do not cover (NaN, Inf, f32 subnormals) send their whole vector to the scalar codec; zeros, negatives in
// unsigned formats and overflow take codes the scalar codec computed once, so every target gives its bits.
//
// Included once per Highway target by bulk.cc through foreach_target.h; hence the toggle include guard.
#if defined(MINIFLOAT_SRC_CPU_BULK_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef MINIFLOAT_SRC_CPU_BULK_INL_H_
#undef MINIFLOAT_SRC_CPU_BULK_INL_H_
#else
#define MINIFLOAT_SRC_CPU_BULK_INL_H_
#endif

#include <cstdint>

#include "bulk_kernels.h"
#include "hwy/highway.h"
#include "minifloat/codec.h"

HWY_BEFORE_NAMESPACE();
namespace mf::cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DU = hn::ScalableTag<std::uint32_t>;
using VU = hn::Vec<DU>;

// a >= b on unsigned lanes (this Highway has only > for them).
HWY_INLINE hn::Mask<DU> GeU(VU a, VU b) { return hn::Not(hn::Gt(b, a)); }

// The scalar codec on one element: what the vector steps defer to.
HWY_INLINE std::uint32_t ScalarCode(const BulkPlan& p, float x, std::uint32_t random_bits) {
  EncodeOptions o = p.options;
  o.random_bits = random_bits;
  return encode(*p.format, x, o);
}

// |x| rounded right by `shift` (1 <= shift): nearest even or toward zero; shift >= 25 leaves 0 for both, since
// sig < 2^24 is then at most half a quantum.
HWY_INLINE VU RoundNearestOrTruncate(DU du, VU sig, VU shift, bool nearest) {
  const VU s = hn::Min(shift, hn::Set(du, 25));
  const VU one = hn::Set(du, 1);
  const VU kept = hn::Shr(sig, s);
  if (!nearest) return kept;
  const VU dropped = hn::And(sig, hn::Sub(hn::Shl(one, s), one));
  const VU half = hn::Shl(one, hn::Sub(s, one));
  const auto up = hn::Or(hn::Gt(dropped, half), hn::And(hn::Eq(dropped, half), hn::Eq(hn::And(kept, one), one)));
  return hn::Add(kept, hn::IfThenElseZero(up, one));
}

// Stochastic: the top k = min(shift, 32) dropped bits plus k random bits, carry out rounds up (codec.h's round_shift),
// with every shift count below 32. shift >= 56 drops all 24 bits below the resolved 32: top = 0, never a carry.
HWY_INLINE VU RoundStochastic(DU du, VU sig, VU shift, VU random) {
  const VU one = hn::Set(du, 1), k32 = hn::Set(du, 32);
  const auto wide = GeU(shift, k32);  // k = 32, top = sig >> (shift - 32)
  const VU kept = hn::IfThenZeroElse(GeU(shift, hn::Set(du, 24)), hn::Shr(sig, hn::Min(shift, hn::Set(du, 23))));
  const VU low = hn::Min(hn::Sub(hn::Max(shift, k32), k32), hn::Set(du, 31));
  const VU top_wide = hn::IfThenZeroElse(GeU(shift, hn::Set(du, 56)), hn::Shr(sig, low));
  const VU k = hn::Min(shift, k32);
  // 2^k - 1 with k <= 32, and the dropped bits below 2^k (all of sig once shift >= 24).
  const VU mask = hn::IfThenElse(wide, hn::Set(du, 0xFFFFFFFFu), hn::Sub(hn::Shl(one, hn::Min(k, hn::Set(du, 31))), one));
  const VU top = hn::IfThenElse(wide, top_wide, hn::And(sig, mask));
  const VU r = hn::And(random, mask);
  // carry = top + r >= 2^k  <=>  r != 0 and top >= 2^k - r (wrapping: 2^32 - r for k = 32).
  const VU limit = hn::Sub(hn::IfThenZeroElse(wide, hn::Add(mask, one)), r);
  const auto carry = hn::AndNot(hn::Eq(r, hn::Zero(du)), GeU(top, limit));
  return hn::Add(kept, hn::IfThenElseZero(carry, one));
}

// Codes of x[0, n) into out (u8 or u16), random bits per element from `random` (stochastic only).
template <class Out>
HWY_INLINE void EncodeSpan(const BulkPlan& p, const float* x, std::size_t n, const std::uint32_t* random, Out* out) {
  const DU du;
  const std::size_t N = hn::Lanes(du);
  const VU exp_mask = hn::Set(du, 0x7F800000u), abs_mask = hn::Set(du, 0x7FFFFFFFu);
  const VU man_mask = hn::Set(du, 0x007FFFFFu), implicit = hn::Set(du, 0x00800000u);
  // shift = 23 + q - e = 23 - m + max(0, 1 - bias - e), and the quantum's exponent field q + m + bias - 1 =
  // max(e + bias - 1, 0); with field = e + 127 they are 23 - m + max(edge, field) - field and
  // max(field + bias, 128) - 128, edge = 128 - bias.
  const VU edge = hn::Set(du, static_cast<std::uint32_t>(128 - p.format->bias));
  const VU bias = hn::Set(du, static_cast<std::uint32_t>(p.format->bias)), k128 = hn::Set(du, 128);
  const VU base_shift = hn::Set(du, static_cast<std::uint32_t>(23 - p.format->mantissa_bits));
  const VU m = hn::Set(du, static_cast<std::uint32_t>(p.format->mantissa_bits));
  const VU max_code = hn::Set(du, p.format->max_finite_code());
  const VU sign_bit = hn::Set(du, p.format->sign_mask());
  const VU ovf_pos = hn::Set(du, p.overflow_pos), ovf_neg = hn::Set(du, p.overflow_neg);
  const VU zero_pos = hn::Set(du, p.zero_pos), zero_neg = hn::Set(du, p.zero_neg);
  const VU negative_code = hn::Set(du, p.negative_code);
  const bool nearest = p.options.rounding == Rounding::nearest_even;
  const bool stochastic = p.options.rounding == Rounding::stochastic;
  const bool is_signed = p.format->is_signed();
  std::size_t i = 0;
  for (; i + N <= n; i += N) {
    const VU bits = hn::BitCast(du, hn::LoadU(hn::RebindToFloat<DU>(), x + i));
    const VU mag = hn::And(bits, abs_mask);
    const VU field = hn::ShiftRight<23>(mag);
    // NaN, Inf and f32 subnormals: the scalar codec, for the whole vector (rare in real tensors).
    const auto odd = hn::Or(hn::Eq(hn::And(mag, exp_mask), exp_mask),
                            hn::And(hn::Eq(field, hn::Zero(du)), hn::Ne(mag, hn::Zero(du))));
    if (HWY_UNLIKELY(!hn::AllFalse(du, odd))) {
      for (std::size_t j = i; j < i + N; ++j) {
        out[j] = static_cast<Out>(ScalarCode(p, x[j], random ? random[j] : 0));
      }
      continue;
    }
    const auto negative = hn::Ne(hn::ShiftRight<31>(bits), hn::Zero(du));
    const VU sig = hn::Or(hn::And(mag, man_mask), implicit);
    const VU below = hn::Sub(hn::Max(edge, field), field);  // binades below the smallest normal
    const VU shift = hn::Add(base_shift, below);
    const VU r = stochastic ? RoundStochastic(du, sig, shift, hn::LoadU(du, random + i))
                            : RoundNearestOrTruncate(du, sig, shift, nearest);
    // The quantum's exponent field, then + r, whose implicit bit (or a rounding carry) lifts it (codec.h, step 5).
    const VU exponent = hn::Sub(hn::Max(hn::Add(field, bias), k128), k128);
    const VU code = hn::Add(hn::Shl(exponent, m), r);
    VU c = hn::IfThenElse(hn::Gt(code, max_code), hn::IfThenElse(negative, ovf_neg, ovf_pos),
                          hn::IfThenElse(negative, hn::Or(code, sign_bit), code));
    c = hn::IfThenElse(hn::Eq(mag, hn::Zero(du)), hn::IfThenElse(negative, zero_neg, zero_pos), c);
    if (!is_signed) c = hn::IfThenElse(hn::AndNot(hn::Eq(mag, hn::Zero(du)), negative), negative_code, c);
    if constexpr (sizeof(Out) == 1) {
      const hn::Rebind<std::uint8_t, DU> d8;
      hn::StoreU(hn::DemoteTo(d8, hn::BitCast(hn::RebindToSigned<DU>(), c)), d8, out + i);
    } else {
      const hn::Rebind<std::uint16_t, DU> d16;
      hn::StoreU(hn::DemoteTo(d16, hn::BitCast(hn::RebindToSigned<DU>(), c)), d16, out + i);
    }
  }
  for (; i < n; ++i) out[i] = static_cast<Out>(ScalarCode(p, x[i], random ? random[i] : 0));
}

void EncodeBytes(const BulkPlan& p, const float* x, std::size_t n, const std::uint32_t* random, std::uint8_t* out) {
  EncodeSpan(p, x, n, random, out);
}
void EncodeWords(const BulkPlan& p, const float* x, std::size_t n, const std::uint32_t* random, std::uint16_t* out) {
  EncodeSpan(p, x, n, random, out);
}

}  // namespace HWY_NAMESPACE
}  // namespace mf::cpu
HWY_AFTER_NAMESPACE();

#endif  // MINIFLOAT_SRC_CPU_BULK_INL_H_
