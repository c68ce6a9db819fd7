// Per-target element codec: f32 lanes to codes and back for any Format, from its ElementCodec traits
// (element_codec.h), every lane the scalar codec's bits (include/minifloat/codec.h).
//   * EncodeNearest: round to nearest even in a few integer steps on the f32 bits (and one f32 add below the
//     smallest normal); its caller sends a vector with a lane NeedsScalar() (or, knowing the traits,
//     NeedsScalarNearest(): fewer lanes) to the scalar codec.
//   * EncodeStochasticNormal: EncodeStochastic for vectors of zeros and normals only (NeedsStochasticSubnormal).
//   * EncodeStochastic: stochastic rounding in the same few steps, with each lane's 32 random bits; its caller also
//     sends a vector with a lane NeedsExact() to EncodeExact.
//   * EncodeExact: the scalar codec's integer steps lane by lane (any rounding; stochastic with each lane's 32 random
//     bits): split the sign, find the target's quantum at the value's binade, round the 24-bit significand right by
//     the shift that quantum asks for, assemble exponent field + rounded significand, replace what overflows.
//   * Decode: bit placement, with the subnormals, Inf, NaN and a format without zero as their own lanes.
// EncodeNearest and EncodeStochastic also take their constants as vectors built once (EncodeConstants), for loops
// that would otherwise build them again per vector; EncodeStochasticNormal takes them so only.
// The f32 add in EncodeNearest rounds as the CPU's rounding mode says: callers use it in round-to-nearest only.
//
// Included once per Highway target (foreach_target.h); hence the toggle include guard.
#if defined(MINIFLOAT_SRC_CPU_ELEMENT_CODEC_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef MINIFLOAT_SRC_CPU_ELEMENT_CODEC_INL_H_
#undef MINIFLOAT_SRC_CPU_ELEMENT_CODEC_INL_H_
#else
#define MINIFLOAT_SRC_CPU_ELEMENT_CODEC_INL_H_
#endif

#include <bit>
#include <cstdint>
#include <cstring>

#include "element_codec.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace mf::cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// a >= b on unsigned lanes (this Highway has only > for them).
template <class V>
HWY_INLINE auto GeU(V a, V b) {
  return hn::Not(hn::Gt(b, a));
}

// a > b for lanes below 2^31 (magnitudes): the signed compare, which AVX2 has and its unsigned one emulates.
template <class V>
HWY_INLINE auto GtMagnitude(V a, V b) {
  const hn::DFromV<V> du;
  const hn::RebindToSigned<decltype(du)> di;
  return hn::RebindMask(du, hn::Gt(hn::BitCast(di, a), hn::BitCast(di, b)));
}

// Lanes the vector steps leave to the scalar codec: Inf, NaN and f32 subnormals (|x|bits in [1, 2^23) or from Inf's
// on).
template <class DU, class VU = hn::Vec<DU>>
HWY_INLINE hn::Mask<DU> NeedsScalar(DU du, VU mag) {
  return hn::Or(hn::Gt(mag, hn::Set(du, 0x7F7FFFFFu)), hn::Gt(hn::Set(du, 0x007FFFFFu), hn::Sub(mag, hn::Set(du, 1))));
}

// NeedsScalar for EncodeNearest with these traits: Inf and NaN lanes, and f32 subnormals unless the traits say
// they round to zero in the vector steps.
template <class DU, class VU = hn::Vec<DU>>
HWY_INLINE hn::Mask<DU> NeedsScalarNearest(DU du, const ElementCodec& k, VU mag) {
  return k.tiny_rounds_to_zero ? GtMagnitude(mag, hn::Set(du, 0x7F7FFFFFu)) : NeedsScalar(du, mag);
}

// A vector the compiler keeps in a register once made: it cannot see the constant inside, so it cannot build it again
// where it is used (GCC does that in a loop, a move and a broadcast per constant per iteration, whenever the loop
// holds a call, even one on a branch not taken).
template <class V>
HWY_INLINE V InRegister(V v) {
#if HWY_ARCH_X86 && HWY_TARGET != HWY_SCALAR && defined(__GNUC__)
  asm("" : "+v"(v.raw));
#endif
  return v;
}

// The vectors EncodeNearest, EncodeStochastic and EncodeStochasticNormal read, built once: a loop that builds them
// before it and passes them in reads them from registers.
template <class DU>
struct EncodeConstants {
  using VU = hn::Vec<DU>;
  VU abs_mask, normal_add, one, lsb, min_normal, magic, overflow_pos, max_code, sign_mask, negative_code, zero_pos,
      zero_neg, dropped_mask, rebias, subnormal_shift_base, max_shift, implicit_bit, mantissa_field, shift;
  VU low_bits[2];  // LowBitsMask's table on AVX-512: (1 << j) - 1 for j in [0, 32); unset elsewhere
  explicit EncodeConstants(const ElementCodec& k)
      : abs_mask(InRegister(hn::Set(DU(), 0x7FFFFFFFu))),
        normal_add(InRegister(hn::Set(DU(), k.normal_add))),
        one(InRegister(hn::Set(DU(), 1))),
        lsb(InRegister(hn::Set(DU(), 1u << k.shift))),
        min_normal(InRegister(hn::Set(DU(), k.min_normal_bits))),
        magic(InRegister(hn::Set(DU(), k.magic_bits))),
        overflow_pos(InRegister(hn::Set(DU(), k.overflow_pos))),
        max_code(InRegister(hn::Set(DU(), k.max_code))),
        sign_mask(InRegister(hn::Set(DU(), k.sign_mask))),
        negative_code(InRegister(hn::Set(DU(), k.negative_code))),
        zero_pos(InRegister(hn::Set(DU(), k.zero_pos))),
        zero_neg(InRegister(hn::Set(DU(), k.zero_neg))),
        dropped_mask(InRegister(hn::Set(DU(), (1u << k.shift) - 1))),
        rebias(InRegister(hn::Set(DU(), 0u - k.stochastic_add))),
        subnormal_shift_base(InRegister(hn::Set(DU(), k.shift + (k.min_normal_bits >> 23)))),
        max_shift(InRegister(hn::Set(DU(), 31))),
        implicit_bit(InRegister(hn::Set(DU(), 0x00800000u))),
        mantissa_field(InRegister(hn::Set(DU(), 0x007FFFFFu))),
        shift(InRegister(hn::Set(DU(), k.shift))) {
#if HWY_TARGET <= HWY_AVX3 && HWY_TARGET != HWY_SCALAR && HWY_ARCH_X86
    const DU du;
    for (int t = 0; t < 2; ++t) {
      const VU j = hn::Add(hn::Iota(du, 0), hn::Set(du, static_cast<std::uint32_t>(t * hn::Lanes(du))));
      low_bits[t] = InRegister(hn::Sub(hn::Shl(one, j), one));
    }
#endif
  }
};

// Zeros and negatives of an unsigned format or one without zero (ue8m0, ue4m3): their constant codes.
template <class DU, class VU = hn::Vec<DU>>
HWY_INLINE VU UnsignedFixups(DU du, const EncodeConstants<DU>& c, VU bits, VU mag, VU code) {
  const hn::RebindToSigned<DU> di;
  const auto zero = hn::Eq(mag, hn::Zero(du));
#if HWY_ARCH_X86 && HWY_TARGET > HWY_AVX3 && HWY_TARGET <= HWY_SSE4
  // Blends on the f32 sign bit (blendvps), where a compare into a mask vector first would cost one more step each.
  const auto on_sign = [&](VU yes, VU no) {
    return hn::BitCast(du, hn::IfNegativeThenElse(hn::BitCast(di, bits), hn::BitCast(di, yes), hn::BitCast(di, no)));
  };
  code = on_sign(c.negative_code, code);  // -0 too: zeros follow
  return hn::IfThenElse(zero, on_sign(c.zero_neg, c.zero_pos), code);
#else
  const auto negative = hn::RebindMask(du, hn::Lt(hn::BitCast(di, bits), hn::Zero(di)));  // -0 too: zeros follow
  code = hn::IfThenElse(negative, c.negative_code, code);
  return hn::IfThenElse(zero, hn::IfThenElse(negative, c.zero_neg, c.zero_pos), code);
#endif
}

// Overflow as the traits say, then the f32 sign bit moved down onto the code's (an unsigned format's sign_mask is 0:
// its fixups follow). Every overflow code is the sign plus overflow_pos (max finite, Inf or the NaN of that sign).
// A format without -0 (unsigned_zero: fnuz) keeps a zero magnitude unsigned: its -0 code is the NaN.
template <class DU, class VU = hn::Vec<DU>>
HWY_INLINE VU OverflowAndSign(DU du, const ElementCodec& k, const EncodeConstants<DU>& c, VU bits, VU mag, VU code) {
  code = k.overflow_is_min ? hn::Min(code, c.overflow_pos)
                           : hn::IfThenElse(hn::Gt(code, c.max_code), c.overflow_pos, code);
  if (k.unsigned_zero) bits = hn::IfThenZeroElse(hn::Eq(code, hn::Zero(du)), bits);
#if HWY_ARCH_X86 && HWY_TARGET > HWY_AVX3 && HWY_TARGET <= HWY_SSE4
  // A blend on the f32 sign bit (blendvps): two steps where shift, and, or take three (AVX-512: one ternlog). An
  // unsigned format has no sign bit (sign_mask 0: the blend would change nothing; its fixups follow).
  if (k.is_signed) {
    const hn::RebindToSigned<DU> di;
    code = hn::BitCast(du, hn::IfNegativeThenElse(hn::BitCast(di, bits), hn::BitCast(di, hn::Or(code, c.sign_mask)),
                                                  hn::BitCast(di, code)));
  }
#else
  code = hn::OrAnd(code, hn::ShiftRightSame(bits, static_cast<int>(k.sign_shift)), c.sign_mask);
#endif
  return k.unsigned_fixups ? UnsignedFixups(du, c, bits, mag, code) : code;
}

// Round to nearest even, overflow as the traits say; lanes where NeedsScalar are garbage. `c`: EncodeConstants(k).
template <class DU, class VU = hn::Vec<DU>>
HWY_INLINE VU EncodeNearest(DU du, const ElementCodec& k, const EncodeConstants<DU>& c, VU bits) {
  const hn::RebindToFloat<DU> df;
  const VU mag = hn::And(bits, c.abs_mask);
  const int shift = static_cast<int>(k.shift);  // one count for every lane: the immediate or register form
  VU code = hn::Add(mag, c.normal_add);
  if (k.mantissa_bits != 0) {  // + the bit that becomes the significand's last (ties to even)
#if HWY_TARGET <= HWY_AVX3
    // A test into a mask and a masked add: one step fewer than shift, and, add.
    code = hn::IfThenElse(hn::TestBit(mag, c.lsb), hn::Add(code, c.one), code);
#else
    code = hn::Add(code, hn::And(hn::ShiftRightSame(mag, shift), c.one));
#endif
  }
  code = hn::ShiftRightSame(code, shift);
  if (k.min_normal_bits != 0) {
    const VU sub = hn::Sub(hn::BitCast(du, hn::Add(hn::BitCast(df, mag), hn::BitCast(df, c.magic))), c.magic);
    code = hn::IfThenElse(GtMagnitude(c.min_normal, mag), sub, code);
  }
  return OverflowAndSign(du, k, c, bits, mag, code);
}
template <class DU, class VU = hn::Vec<DU>>
HWY_INLINE VU EncodeNearest(DU du, const ElementCodec& k, VU bits) {
  return EncodeNearest(du, k, EncodeConstants<DU>(k), bits);
}

// Lanes EncodeStochastic leaves to EncodeExact: nonzero and so far below the smallest normal that the shift
// reaches 32.
template <class DU, class VU = hn::Vec<DU>>
HWY_INLINE hn::Mask<DU> NeedsExact(DU du, const ElementCodec& k, VU mag) {
  return hn::Gt(hn::Set(du, k.stochastic_floor_bits), hn::Sub(mag, hn::Set(du, 1)));
}

// (1 << s) - 1 for shift counts s in [1, 32) (a lane with s >= 32 gets some other value: x86's shifts give 0 for it
// whatever is added). AVX-512: one two-table lookup, off the shift port that the random bits' multiplies and shifts
// keep busy; elsewhere a shift and a subtraction.
template <class DU, class VU = hn::Vec<DU>>
HWY_INLINE VU LowBitsMask(const EncodeConstants<DU>& c, VU s) {
#if HWY_TARGET <= HWY_AVX3 && HWY_TARGET != HWY_SCALAR && HWY_ARCH_X86
  if constexpr (hn::MaxLanes(DU()) == 16) {
    return VU{_mm512_permutex2var_epi32(c.low_bits[0].raw, s.raw, c.low_bits[1].raw)};
  }
#endif
  return hn::Sub(hn::Shl(c.one, s), c.one);
}

// Stochastic rounding with 32 random bits per lane; lanes where NeedsScalar or NeedsExact are garbage.
// `c`: EncodeConstants(k).
// A normal lane's code is (|x|bits - rebias + its random bits below 2^shift) >> shift; one below the smallest normal
// takes the significand and shift + the binades below it instead (< 32 here; zero stays zero), in the same steps:
// the two differ only in what is shifted and by how much.
//
// kTiny (x86, AVX2 and up; formats with TinyStochasticLanes): lanes so far below the smallest normal that the count
// reaches 32 (NeedsExact's, f32 normals) too. All their dropped bits lie below the kept part, which is 0, so the
// code is the carry out of their top 32 bits (v >> (s - 32)) plus the random bits; the shift above gives those lanes
// 0, and x86's shifts give the others (count s - 32 wrapped, 32 or more) t = 0 and no carry.
template <bool kTiny = false, class DU, class VU = hn::Vec<DU>>
HWY_INLINE VU EncodeStochastic(DU du, const ElementCodec& k, const EncodeConstants<DU>& c, VU bits, VU random) {
  const VU mag = hn::And(bits, c.abs_mask);
  const int shift = static_cast<int>(k.shift);
  if (k.min_normal_bits == 0) {
    const VU code = hn::ShiftRightSame(hn::Sub(hn::Add(mag, hn::And(random, c.dropped_mask)), c.rebias), shift);
    return OverflowAndSign(du, k, c, bits, mag, code);
  }
#if HWY_TARGET <= HWY_AVX3
  // A compare into a mask register and two masked blends: cheap on AVX-512 (3-4% faster there than the Max below).
  const auto below = GtMagnitude(c.min_normal, mag);
  const VU v = hn::IfThenElse(below, hn::OrAnd(c.implicit_bit, mag, c.mantissa_field), hn::Sub(mag, c.rebias));
  VU s = hn::IfThenElse(below, hn::Sub(c.subnormal_shift_base, hn::ShiftRight<23>(mag)), c.shift);
#else
  // |x|bits - rebias is the target exponent field E times 2^23 plus |x|'s mantissa field: the significand (with
  // its implicit bit) at E = 1, more above, less below (signed; |x| is an f32 normal here). So one signed Max picks
  // what a lane shifts, and another its count (shift + the binades below the smallest normal, or shift), where a
  // compare and two blends took five operations more on AVX2 (blendv is two; 12% faster for e3m2,
  // docs/benchmark-history.md#bulk-casts-minifloatbulkh-2026-12-03-0515).
  const hn::RebindToSigned<DU> di;
  const VU v = hn::BitCast(du, hn::Max(hn::BitCast(di, hn::Sub(mag, c.rebias)),
                                       hn::BitCast(di, hn::OrAnd(c.implicit_bit, mag, c.mantissa_field))));
  VU s = hn::BitCast(
      du, hn::Max(hn::BitCast(di, hn::Sub(c.subnormal_shift_base, hn::ShiftRight<23>(mag))), hn::BitCast(di, c.shift)));
#endif
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2
  // x86's variable shifts give 0 for counts of 32 or more, which only a zero's count can reach here (the other
  // lanes' counts are below 32): no Min, and where the zero's count is 32 or more (zero_shift_clears: every format
  // of all_formats) no zero fixup either (docs/benchmark-history.md#bulk-casts-minifloatbulkh-2026-12-02-1820).
  const bool zero_fixup = !k.zero_shift_clears;
#else
  constexpr bool zero_fixup = true;
  s = hn::Min(s, c.max_shift);
#endif
  VU code = hn::Shr(hn::Add(v, hn::And(random, LowBitsMask(c, s))), s);
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2
  if constexpr (kTiny) {
    const VU t = hn::Shr(v, hn::Sub(s, hn::Set(du, 32u)));
    code = hn::Or(code, hn::IfThenElseZero(hn::Lt(hn::Add(t, random), random), c.one));
  }
#else
  static_assert(!kTiny, "kTiny relies on x86's shifts by 32 or more");
#endif
  if (zero_fixup) code = hn::IfThenZeroElse(hn::Eq(mag, hn::Zero(du)), code);
  return OverflowAndSign(du, k, c, bits, mag, code);
}

// Whether EncodeStochastic<true> covers k's lanes below stochastic_floor_bits: a subnormal step whose count for a
// zero (and so for every lane) minus 32 is at least 24, so that no significand (below 2^24) or zero's implicit bit
// shifted by it leaves anything (every format of all_formats with a subnormal step).
inline bool TinyStochasticLanes(const ElementCodec& k) {
  return k.min_normal_bits != 0 && k.shift + (k.min_normal_bits >> 23) >= 56;
}
template <class DU, class VU = hn::Vec<DU>>
HWY_INLINE VU EncodeStochastic(DU du, const ElementCodec& k, VU bits, VU random) {
  return EncodeStochastic(du, k, EncodeConstants<DU>(k), bits, random);
}

// EncodeStochastic for vectors whose lanes are all zero or normal in the target (no lane below 2^emin but zero, none
// an f32 subnormal, Inf or NaN; NeedsStochasticSubnormal tells): the subnormal step left out. The rebias is taken
// off after a Max with it, which leaves a zero's code 0 (its random bits are below 2^shift, the rebias above) and a
// normal's as it was (|x| is at least 2^emin, past the rebias). `c`: EncodeConstants(k).
template <class DU, class VU = hn::Vec<DU>>
HWY_INLINE VU EncodeStochasticNormal(DU du, const ElementCodec& k, const EncodeConstants<DU>& c, VU bits, VU random) {
  const VU mag = hn::And(bits, c.abs_mask);
  const VU sum = hn::Add(mag, hn::And(random, c.dropped_mask));
  const VU code = hn::ShiftRightSame(hn::Sub(hn::Max(sum, c.rebias), c.rebias), static_cast<int>(k.shift));
  return OverflowAndSign(du, k, c, bits, mag, code);
}

// Lanes EncodeStochasticNormal leaves out, given the least of the vector's |x|bits - 1 (wrapping: zero is the
// largest) and the largest |x|bits: below the smallest normal (f32's, at least) but not zero, or Inf / NaN.
template <class DU, class VU = hn::Vec<DU>>
HWY_INLINE hn::Mask<DU> NeedsStochasticSubnormal(DU du, const ElementCodec& k, VU least_minus_one, VU largest) {
  const std::uint32_t floor = k.min_normal_bits > 0x00800000u ? k.min_normal_bits : 0x00800000u;
  return hn::Or(hn::Gt(hn::Set(du, floor - 1), least_minus_one), hn::Gt(largest, hn::Set(du, 0x7F7FFFFFu)));
}

// |x|'s significand rounded right by `shift` (1 <= shift): nearest even or toward zero; shift >= 25 leaves 0 for
// both, since sig < 2^24 is then at most half a quantum.
template <class DU, class VU = hn::Vec<DU>>
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

// Stochastic: the top k = min(shift, 32) dropped bits plus k random bits, carry out rounds up (codec.h's
// round_shift). Where every shift is below 32 (lanes in `ignore` aside) that is (sig + the random bits below
// 2^shift) >> shift; otherwise every shift count is kept below 32, and shift >= 56 drops all 24 bits below the
// resolved 32: top = 0, no carry.
template <class DU, class VU = hn::Vec<DU>>
HWY_INLINE VU RoundStochastic(DU du, VU sig, VU shift, VU random, hn::Mask<DU> ignore) {
  const VU one = hn::Set(du, 1), k32 = hn::Set(du, 32);
  if (HWY_LIKELY(hn::AllTrue(du, hn::Or(hn::Gt(k32, shift), ignore)))) {
    const VU s = hn::Min(shift, hn::Set(du, 31));
    return hn::Shr(hn::Add(sig, hn::And(random, hn::Sub(hn::Shl(one, s), one))), s);
  }
  const auto wide = GeU(shift, k32);  // k = 32, top = sig >> (shift - 32)
  const VU kept = hn::IfThenZeroElse(GeU(shift, hn::Set(du, 24)), hn::Shr(sig, hn::Min(shift, hn::Set(du, 23))));
  const VU low = hn::Min(hn::Sub(hn::Max(shift, k32), k32), hn::Set(du, 31));
  const VU top_wide = hn::IfThenZeroElse(GeU(shift, hn::Set(du, 56)), hn::Shr(sig, low));
  const VU k = hn::Min(shift, k32);
  // 2^k - 1 with k <= 32, and the dropped bits below 2^k (all of sig once shift >= 24).
  const VU mask =
      hn::IfThenElse(wide, hn::Set(du, 0xFFFFFFFFu), hn::Sub(hn::Shl(one, hn::Min(k, hn::Set(du, 31))), one));
  const VU top = hn::IfThenElse(wide, top_wide, hn::And(sig, mask));
  const VU r = hn::And(random, mask);
  // carry = top + r >= 2^k  <=>  r != 0 and top >= 2^k - r (wrapping: 2^32 - r for k = 32).
  const VU limit = hn::Sub(hn::IfThenZeroElse(wide, hn::Add(mask, one)), r);
  const auto carry = hn::AndNot(hn::Eq(r, hn::Zero(du)), GeU(top, limit));
  return hn::Add(kept, hn::IfThenElseZero(carry, one));
}

// Any rounding (random: each lane's 32 bits, stochastic only); lanes where NeedsScalar are garbage.
template <class DU, class VU = hn::Vec<DU>>
HWY_INLINE VU EncodeExact(DU du, const ElementCodec& k, VU bits, VU random) {
  const VU mag = hn::And(bits, hn::Set(du, 0x7FFFFFFFu));
  const VU field = hn::ShiftRight<23>(mag);
  const auto negative = hn::Ne(hn::ShiftRight<31>(bits), hn::Zero(du));
  const VU sig = hn::Or(hn::And(mag, hn::Set(du, 0x007FFFFFu)), hn::Set(du, 0x00800000u));
  // shift = 23 + q - e = 23 - m + max(0, 1 - bias - e), and the quantum's exponent field q + m + bias - 1 =
  // max(e + bias - 1, 0); with field = e + 127 they are 23 - m + max(edge, field) - field and
  // max(field + bias, 128) - 128, edge = 128 - bias.
  const VU edge = hn::Set(du, 128 - k.bias);
  const VU below = hn::Sub(hn::Max(edge, field), field);  // binades below the smallest normal
  const VU shift = hn::Add(hn::Set(du, k.shift), below);
  const auto zero = hn::Eq(mag, hn::Zero(du));
  const VU r = k.options.rounding == Rounding::stochastic
                   ? RoundStochastic(du, sig, shift, random, zero)
                   : RoundNearestOrTruncate(du, sig, shift, k.options.rounding == Rounding::nearest_even);
  // The quantum's exponent field, then + r, whose implicit bit (or a rounding carry) lifts it (codec.h, step 5).
  const VU k128 = hn::Set(du, 128);
  const VU exponent = hn::Sub(hn::Max(hn::Add(field, hn::Set(du, k.bias)), k128), k128);
  const VU code = hn::Add(hn::Shl(exponent, hn::Set(du, k.mantissa_bits)), r);
  // fnuz (unsigned_zero): a zero magnitude stays +0, its -0 code being the NaN.
  const auto signed_code = k.unsigned_zero ? hn::AndNot(hn::Eq(code, hn::Zero(du)), negative) : negative;
  VU c = hn::IfThenElse(hn::Gt(code, hn::Set(du, k.max_code)),
                        hn::IfThenElse(negative, hn::Set(du, k.overflow_neg), hn::Set(du, k.overflow_pos)),
                        hn::IfThenElse(signed_code, hn::Or(code, hn::Set(du, k.sign_mask)), code));
  c = hn::IfThenElse(zero, hn::IfThenElse(negative, hn::Set(du, k.zero_neg), hn::Set(du, k.zero_pos)), c);
  if (!k.is_signed) c = hn::IfThenElse(hn::AndNot(zero, negative), hn::Set(du, k.negative_code), c);
  return c;
}

// The f32 bits of each code's value (codes zero-extended, only their low f.bits() bits read).
template <class DU, class VU = hn::Vec<DU>>
HWY_INLINE VU Decode(DU du, const ElementCodec& k, VU code) {
  const hn::RebindToFloat<DU> df;
  code = hn::And(code, hn::Set(du, k.code_mask));
  if (k.decode_is_shift) return hn::ShiftLeftSame(code, static_cast<int>(k.shift));
  const VU sign = hn::Shl(hn::And(code, hn::Set(du, k.sign_mask)), hn::Set(du, k.sign_shift));
  const VU mag = hn::And(code, hn::Set(du, k.magnitude_mask));
  const VU shift = hn::Set(du, k.shift);
  VU value = hn::Add(hn::Shl(mag, shift), hn::Set(du, k.decode_add));
  if (k.decode_subnormals) {
    const VU sub = hn::BitCast(
        du, hn::Mul(hn::ConvertTo(df, hn::BitCast(hn::RebindToSigned<DU>(), mag)), hn::Set(df, k.subnormal_scale)));
    value = hn::IfThenElse(hn::Gt(hn::Set(du, k.mantissa_mask + 1), mag), sub, value);
  }
  if (k.special_from <= k.magnitude_mask) {
    const VU inf = hn::Set(du, 0x7F800000u);
    const VU special = k.keep_payload
                           ? hn::Or(inf, hn::Shl(hn::And(mag, hn::Set(du, k.mantissa_mask)), shift))
                           : hn::IfThenElse(hn::Eq(mag, hn::Set(du, k.inf_mag)), inf, hn::Set(du, 0x7FC00000u));
    value = hn::IfThenElse(GeU(mag, hn::Set(du, k.special_from)), special, value);
  }
  if (!k.has_zero) value = hn::IfThenElse(hn::Eq(mag, hn::Zero(du)), hn::Set(du, k.zero_code_bits), value);
  // fnuz: the code of -0 is the NaN (the sign below makes it the scalar codec's negative quiet NaN).
  if (k.unsigned_zero) value = hn::IfThenElse(hn::Eq(code, hn::Set(du, k.sign_mask)), hn::Set(du, 0x7FC00000u), value);
  return hn::Or(value, sign);
}

// ---- For the block quantizers (quantize-inl.h): a block's quotients to codes and codes to element values. ----
// Kept apart from the casts' functions above; the same traits, and the same bits as the scalar codec.

// Round to nearest even with saturation to +-max (Overflow::saturate) for finite f32 lanes, f32 subnormals included
// (no lane goes to the scalar codec), for a Format with zero: what element_code() gives a block's quotients. An
// unsigned format (ue4m3 scales) takes only y >= 0: its sign mask is 0, so the sign step adds nothing.
// One float addition rounds |y| to the element grid: C = 2^(E + 23 - m), with E = max(exponent of |y|, emin), has an
// ulp equal to the grid's quantum at |y| (normal or subnormal), so a + C rounds a to the grid, ties to even, and the
// bits of a + C above those of C count quanta. The code is that count plus (E - emin) << m: the leading bit carries
// into the exponent field by itself, also when rounding up to the next binade.
//
// The constants are made once per row and kept as vectors, so that the hot loops read them from registers or as
// memory operands instead of materializing them again for every block.
//
// near (when asked): lanes whose |y| lies within 4 ulp of a rounding midpoint. A y computed as x * RN(1/d) is within
// 3 ulp of RN(x / d) (two roundings of 2^-24 each, relative), so outside those lanes both round to the same code.
template <class DF>
struct SaturatingGrid {
  using DU = hn::RebindToUnsigned<DF>;
  hn::Vec<DF> max, near_fraction;
  hn::Vec<DU> exponent_mask, min_exponent, round_offset, binade_offset, sign_bit;
  // Shift counts as vectors (per-lane shifts): a count kept in memory beside the codes' byte stores would be
  // reloaded and moved into a register for every vector.
  hn::Vec<DU> exponent_shift, sign_shift;  // 23 - m; 31 - (exponent + mantissa bits)
  explicit SaturatingGrid(const ElementCodec& k)
      : max(hn::Set(DF(), k.max_finite)),
        near_fraction(hn::Set(DF(), pow2f(-24) - pow2f(static_cast<int>(k.mantissa_bits) - 44))),
        exponent_mask(hn::Set(DU(), 0x7F800000u)),
        min_exponent(hn::Set(DU(), (128u - k.bias) << 23)),  // 127 + emin, emin = 1 - bias
        round_offset(hn::Set(DU(), k.shift << 23)),
        binade_offset(hn::Set(DU(), (k.shift << 23) + ((128u - k.bias) << k.mantissa_bits))),
        sign_bit(hn::Set(DU(), k.sign_mask)),
        exponent_shift(hn::Set(DU(), k.shift)),
        sign_shift(hn::Set(DU(), k.sign_shift)) {}
};

template <class DF, class DU = hn::RebindToUnsigned<DF>>
HWY_INLINE hn::Vec<DU> EncodeSaturating(DF df, const SaturatingGrid<DF>& g, hn::Vec<DF> y,
                                        hn::Mask<DF>* near = nullptr) {
  const DU du;
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
  // Highway has no single operation for it: vrangeps, imm 0b1010, the operand of smaller magnitude with the sign
  // cleared, is min(|y|, max) in one instruction.
  const hn::Vec<DF> a{_mm512_range_ps(y.raw, g.max.raw, 0x0A)};
#else
  const auto a = hn::Min(hn::Abs(y), g.max);
#endif
  const auto e = hn::Max(hn::And(hn::BitCast(du, a), g.exponent_mask), g.min_exponent);
  const auto c = hn::Add(e, g.round_offset);
  const auto rounded = hn::Add(a, hn::BitCast(df, c));
  if (near) {
    // a - (rounded - C) is exact: the distance from a to its grid point, at most half a quantum (C * 2^-24). Near
    // a midpoint: that distance within 4 ulp of a (at most C * 2^(m - 44)) of half a quantum.
    const auto distance = hn::Abs(hn::Sub(a, hn::Sub(rounded, hn::BitCast(df, c))));
    *near = hn::Ge(distance, hn::Mul(hn::BitCast(df, c), g.near_fraction));
  }
  // quanta + binade = (rounded - c) + ((e - E0) >> (23 - m)) = rounded + (e >> (23 - m)) - (e + binade_offset), with
  // binade_offset = (c - e) + (E0 >> (23 - m)): e and E0 are multiples of 2^23, so the shift distributes.
  const auto code =
      hn::Sub(hn::Add(hn::BitCast(du, rounded), hn::Shr(e, g.exponent_shift)), hn::Add(e, g.binade_offset));
  // The sign bit moves from bit 31 to the code's.
  return hn::Or(code, hn::And(hn::Shr(hn::BitCast(du, y), g.sign_shift), g.sign_bit));
}

#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
// EncodeSaturating without the near mask in fewer operations, on AVX-512, for a signed Format with zero whose
// normal binades number 16 or fewer (e4m3, e3m2, e2m3, e2m1; not e5m2): the quantizers' codes of y = x * 2^-k.
// - C is looked up (one 16-lane permute) by E, the f32 exponent field of a = min(|y|, max) clamped at emin's,
//   rather than computed from a's bits.
// - Each table entry is C plus the binade's first code in its low bits: C' = C + j ulp(C), j = (E - emin) << m.
//   ulp(C) is the grid's quantum at a, j is even, and a + C' stays in C's binade, so RN(a + C') = C' + RNE(a /
//   quantum) quanta: the low bits of the sum are the code itself, with no subtraction after the addition.
// Range, shift, max, permute, add: five operations for the magnitude where EncodeSaturating takes nine.
template <class DF>
struct SaturatingTable {
  using DU = hn::RebindToUnsigned<DF>;
  hn::Vec<DF> max;
  hn::Vec<DU> min_field, addends, magnitude_mask, sign_shift;
  static bool Fits(const ElementCodec& k) { return k.binade_table_fits; }
  explicit SaturatingTable(const ElementCodec& k)
      : max(hn::Set(DF(), k.max_finite)),
        min_field(hn::Set(DU(), 128u - k.bias)),  // 127 + emin, emin = 1 - bias
        addends(hn::LoadU(DU(), k.binade_addends)),
        magnitude_mask(hn::Set(DU(), k.magnitude_mask)),
        sign_shift(hn::Set(DU(), k.sign_shift)) {}
};

// The code's magnitude in the low bits (sign_mask - 1) of the result; the bits above them are not the code's.
template <class DF, class DU = hn::RebindToUnsigned<DF>>
HWY_INLINE hn::Vec<DU> EncodeMagnitudeByTable(const SaturatingTable<DF>& t, hn::Vec<DF> y) {
  const __m512 a = _mm512_range_ps(y.raw, t.max.raw, 0x0A);  // min(|y|, max), as in EncodeSaturating
  const __m512i field = _mm512_max_epu32(_mm512_srli_epi32(_mm512_castps_si512(a), 23), t.min_field.raw);
  const __m512i addend = _mm512_permutexvar_epi32(field, t.addends.raw);  // lanes by field mod 16
  return hn::Vec<DU>{_mm512_castps_si512(_mm512_add_ps(a, _mm512_castsi512_ps(addend)))};
}

// EncodeSaturating(df, grid, y) for a Format that SaturatingTable fits: the magnitude's bits, and y's sign moved to
// the code's sign bit (one ternary logic operation selects between them).
template <class DF, class DU = hn::RebindToUnsigned<DF>>
HWY_INLINE hn::Vec<DU> EncodeSaturatingByTable(const SaturatingTable<DF>& t, hn::Vec<DF> y) {
  const DU du;
  return hn::IfVecThenElse(t.magnitude_mask, EncodeMagnitudeByTable(t, y), hn::Shr(hn::BitCast(du, y), t.sign_shift));
}
#endif  // HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3

// Decode by table lookup, for a Format whose magnitudes fit in one vector (e2m1's 8 on 8 lanes or more): the values
// Decode gives each magnitude, looked up, with the sign moved to bit 31. A third of Decode's operations.
template <class DF>
struct DecodeTable {
  using DU = hn::RebindToUnsigned<DF>;
  static bool Fits(DF df, const ElementCodec& k) { return k.magnitude_mask < hn::Lanes(df); }
  hn::Vec<DF> magnitudes;
  hn::Vec<DU> magnitude_mask, sign_mask, sign_shift;
  explicit DecodeTable(const ElementCodec& k)
      : magnitude_mask(hn::Set(DU(), k.magnitude_mask)),
        sign_mask(hn::Set(DU(), k.sign_mask)),
        sign_shift(hn::Set(DU(), k.sign_shift)) {
    const DU du;
    magnitudes = hn::BitCast(DF(), Decode(du, k, hn::And(hn::Iota(du, 0), magnitude_mask)));
  }
  HWY_INLINE hn::Vec<DF> operator()(hn::Vec<DU> code) const {
    const DF df;
    const hn::RebindToSigned<DF> di;
    const auto index = hn::IndicesFromVec(df, hn::BitCast(di, hn::And(code, magnitude_mask)));
    const auto sign = hn::Shl(hn::And(code, sign_mask), sign_shift);
    return hn::BitCast(df, hn::Or(hn::BitCast(DU(), hn::TableLookupLanes(magnitudes, index)), sign));
  }
};

// ==== The GEMM kernels' decodes of e4m3 and e2m1 ====
// The GEMM and GEMV loops (gemm-inl.h, gemv_e4m3-inl.h, gemv_e2m1-inl.h) read e4m3 and e2m1 weights in forms faster
// than Decode for those formats on their targets: a table lookup, fields shifted into place without the rebias, fp16's
// conversion. They live here, beside Decode, so that each format has one place per target; each gives Decode's value
// for every code (times a fixed power of two where said), tested against the scalar codec in
// tests/simd/element_codec_simd_test.cc.

// e4m3 codes (zero-extended, 8 bits) -> Decode's f32 values with e4m3's constants built in: normal codes by moving
// the fields into place and rebiasing the exponent (7 -> 127), subnormal ones as an integer times 2^-9, 0x7F/0xFF as
// the quiet NaN; no f32 subnormal on the way. Three operations fewer than Decode per vector (no code mask, no Inf
// case, shifts by constants), which the GEMM's panel decode, once per 16 weights and pass of rows, keeps.
template <class DF, class VU = hn::Vec<hn::RebindToUnsigned<DF>>>
HWY_INLINE hn::Vec<DF> DecodeE4m3(DF df, VU code) {
  const hn::RebindToUnsigned<DF> du;
  const hn::RebindToSigned<DF> di;
  const auto mag = hn::And(code, hn::Set(du, 0x7Fu));
  const auto normal = hn::BitCast(df, hn::Add(hn::ShiftLeft<20>(mag), hn::Set(du, 120u << 23)));
  const auto sub = hn::Mul(hn::ConvertTo(df, hn::BitCast(di, mag)), hn::Set(df, 1.0f / 512));
  auto v = hn::IfThenElse(hn::RebindMask(df, hn::Lt(mag, hn::Set(du, 8u))), sub, normal);
  v = hn::IfThenElse(hn::RebindMask(df, hn::Eq(mag, hn::Set(du, 0x7Fu))), hn::BitCast(df, hn::Set(du, 0x7FC00000u)), v);
  return hn::Or(v, hn::BitCast(df, hn::ShiftLeft<24>(hn::And(code, hn::Set(du, 0x80u)))));
}

// e4m3 codes sign-extended into int32 lanes -> the f32 bits of value x 2^-120: the fields shifted where f32's sit
// (bits 20-26, sign at 31), the exponent not rebiased (an f32 subnormal for a subnormal code, as exact). NaN codes
// (E4m3IsNan) come out as finite values: callers put the NaN back or look for the codes another way.
template <class DI, class VI = hn::Vec<DI>>
HWY_INLINE VI DecodeE4m3Placed(DI di, VI code) {
  return hn::And(hn::ShiftLeft<20>(code), hn::Set(di, static_cast<std::int32_t>(0x87F00000u)));
}
template <class DI, class VI = hn::Vec<DI>>
HWY_INLINE hn::Mask<DI> E4m3IsNan(DI di, VI code) {
  return hn::Eq(hn::And(code, hn::Set(di, 0x7F)), hn::Set(di, 0x7F));
}

#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2  // F16C's conversion
// e4m3 codes -> value x 2^-8 as f32, through fp16: the code sign-extended to 16 bits and shifted left by 7 puts its
// exponent and mantissa where fp16's lowest four exponent bits and top three mantissa bits sit, and its sign in bit
// 15 (bit 14, a copy of the sign, cleared): the fp16 of value x 2^-8, an fp16 subnormal for a subnormal code, as
// exact. The conversion to f32 (vcvtph2ps) makes every value a normal f32 (2^-17 up) without a microcode assist,
// where DecodeE4m3Placed's f32 subnormals cost one per fma that reads them on Intel's cores (docs/gemm.md). NaN codes
// come out finite, as there. One kL-lane vector from kL codes, or two from 2 kL (the shift and mask on one vector).
// The same fp16 placement as Halves (the bulk casts' decode, below) makes for e4m3, without its NaN step and its
// product by 2^8: the GEMV looks for NaN codes on the side and folds the 2^8 into its activations.
template <class DF>
HWY_INLINE hn::Vec<DF> DecodeE4m3Half(DF df, const std::uint8_t* codes) {
  const hn::Rebind<std::int16_t, DF> d16;
  const hn::Rebind<std::int8_t, DF> d8;
  const auto c = hn::PromoteTo(d16, hn::LoadU(d8, reinterpret_cast<const std::int8_t*>(codes)));
  const auto half = hn::And(hn::ShiftLeft<7>(c), hn::Set(d16, static_cast<std::int16_t>(0xBFFF)));
  return hn::PromoteTo(df, hn::BitCast(hn::Rebind<hwy::float16_t, DF>(), half));
}
template <class DF>
HWY_INLINE void DecodeE4m3Halves(DF df, const std::uint8_t* codes, hn::Vec<DF>& lo, hn::Vec<DF>& hi) {
  const hn::Repartition<std::int16_t, DF> d16;
  const hn::Rebind<std::int8_t, decltype(d16)> d8;
  const hn::Repartition<hwy::float16_t, DF> dh;
  const hn::Half<decltype(dh)> dhh;
  const auto c = hn::PromoteTo(d16, hn::LoadU(d8, reinterpret_cast<const std::int8_t*>(codes)));
  const auto half = hn::BitCast(dh, hn::And(hn::ShiftLeft<7>(c), hn::Set(d16, static_cast<std::int16_t>(0xBFFF))));
  lo = hn::PromoteTo(df, hn::LowerHalf(dhh, half));
  hi = hn::PromoteTo(df, hn::UpperHalf(dhh, half));
}
#endif

// e2m1's 16 values, by code.
alignas(64) inline constexpr float kE2m1Values[16] = {0,     0.5f,  1,  1.5f,  2,  3,  4,  6,
                                                      -0.0f, -0.5f, -1, -1.5f, -2, -3, -4, -6};
// Which nibble of its byte each lane of unpacked e2m1 codes takes, by shift (low first).
alignas(64) inline constexpr std::uint32_t kNibbleShift[16] = {0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4};

#if HWY_TARGET != HWY_SCALAR
// Twice the e2m1 magnitudes (integers) in every 16-byte block, for TableLookupBytes; byte 0 is 0, so the zero bytes
// above each lane's index look up 0.
alignas(64) inline constexpr std::uint8_t kE2m1TwiceMagnitudes[64] = {
    0, 1, 2, 3, 4, 6, 8, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4, 6, 8, 12, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 1, 2, 3, 4, 6, 8, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4, 6, 8, 12, 0, 0, 0, 0, 0, 0, 0, 0};

// Lanes(df) e2m1 values (at least 2 lanes) from Lanes(df) / 2 bytes, low nibble first, by byte table on any
// target: each byte doubled (b x 257 in a 16-bit lane), widened to one per lane, shifted by 0 or 4; the magnitude by
// a byte table (twice the value, an integer), converted and halved (exact), the sign put in bit 31. Exactly
// decode(e2m1, code), -0 included.
template <class DF>
HWY_INLINE hn::Vec<DF> DecodeE2m1Lanes(DF df, const std::uint8_t* bytes) {
  const hn::RebindToUnsigned<DF> du;
  const hn::RebindToSigned<DF> di;
  const hn::Half<hn::Rebind<std::uint16_t, DF>> d16;  // Lanes(df) / 2 lanes
  const hn::Rebind<std::uint8_t, decltype(d16)> d8half;
  const hn::Rebind<std::uint8_t, DF> d8;
  const auto doubled = hn::Mul(hn::PromoteTo(d16, hn::LoadU(d8half, bytes)), hn::Set(d16, std::uint16_t{257}));
  const auto code =
      hn::And(hn::Shr(hn::PromoteTo(du, hn::BitCast(d8, doubled)), hn::Load(du, kNibbleShift)), hn::Set(du, 0xFu));
  const auto twice = hn::TableLookupBytes(hn::Load(du, reinterpret_cast<const std::uint32_t*>(kE2m1TwiceMagnitudes)),
                                          hn::And(code, hn::Set(du, 7u)));
  const auto magnitude = hn::Mul(hn::ConvertTo(df, hn::BitCast(di, twice)), hn::Set(df, 0.5f));
  return hn::Or(magnitude, hn::BitCast(df, hn::ShiftLeft<28>(hn::And(code, hn::Set(du, 8u)))));
}
#endif  // HWY_TARGET != HWY_SCALAR

#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2  // AVX2 and AVX-512: F16C, 256-bit integer operations
// Codes of at most 8 bits -> f32 through halves (F16C, which every AVX2 CPU has). In a 16-bit lane a code's
// magnitude bits shifted left by 10 - m fill a half's exponent and mantissa: the format's layout with its own bias
// where the half's is 15, so the half is the value times 2^(bias - 15), the format's subnormals landing on the half's
// own; widened (exact) and times 2^(15 - bias) (exact). The sign goes to the half's bit 15; NaN codes become the half
// 0x7E00 of their sign, which widens to the scalar codec's quiet NaN. Formats of up to 4 exponent bits without Inf
// (e4m3, e3m2, e2m3, e2m1: the half's exponent is never all ones) and those with the half's own exponent and specials
// (e5m2) qualify (DecodesViaHalf). 16 codes in 9 to 13 operations of 256 bits, where Decode takes about 14 per vector
// (AVX-512 too: its 512-bit Decode of these formats ran 1.4-1.9x slower in L2).
HWY_INLINE constexpr bool DecodesViaHalf(const ElementCodec& k) {
  const Format& f = *k.format;
  // Not fnuz: its NaN is the code of -0, which the placement makes the half -0.
  const bool specials = f.exponent_bits < 5 ? f.specials == Specials::nan_only || f.specials == Specials::finite
                                            : f.exponent_bits == 5 && f.bias == 15 && f.specials == Specials::ieee;
  return f.is_signed() && f.has_zero && f.bits() <= 8 && f.mantissa_bits <= 10 && f.bias <= 15 && specials;
}
HWY_INLINE __m256i Halves(const ElementCodec& k, __m256i w) {
  const int e = static_cast<int>(k.format->exponent_bits), sign_at = e + static_cast<int>(k.mantissa_bits);
  // The sign shifted to bit 15 (bits above the code's leave the lane), then the magnitude down to bit 10 - m by an
  // arithmetic shift, whose copies of the sign below bit 15 are cleared: three steps for any such format.
  __m256i half = _mm256_slli_epi16(w, 15 - sign_at);
  if (e < 5) {
    const int spill = 5 - e;
    half = _mm256_andnot_si256(_mm256_set1_epi16(static_cast<short>(((1 << spill) - 1) << (15 - spill))),
                               _mm256_srai_epi16(half, spill));
  }
  if (k.format->specials == Specials::nan_only) {
    // The largest magnitude, a finite half here, becomes 0x7E00 (of its sign) by one xor.
    const __m256i nan = _mm256_cmpeq_epi16(_mm256_and_si256(w, _mm256_set1_epi16(static_cast<short>(k.magnitude_mask))),
                                           _mm256_set1_epi16(static_cast<short>(k.magnitude_mask)));
    const auto largest = static_cast<short>((k.magnitude_mask << (10 - k.mantissa_bits)) ^ 0x7E00u);
    half = _mm256_xor_si256(half, _mm256_and_si256(nan, _mm256_set1_epi16(largest)));
  } else if (k.format->specials == Specials::ieee) {  // e5m2: Inf is the half's own; a NaN, any payload, 0x7E00
    const __m256i nan =
        _mm256_cmpgt_epi16(_mm256_and_si256(half, _mm256_set1_epi16(0x7FFF)), _mm256_set1_epi16(0x7C00));
    const __m256i quiet = _mm256_or_si256(_mm256_and_si256(half, _mm256_set1_epi16(static_cast<short>(0x8000))),
                                          _mm256_set1_epi16(0x7E00));
    half = _mm256_blendv_epi8(half, quiet, nan);
  }
  return half;
}

// Sixteen codes of a format that DecodesViaHalf -> their f32 values (Halves widened, times 2^(15 - bias)), into lo
// (codes 0-7) and hi (8-15).
HWY_INLINE void DecodeX16ViaHalf(const ElementCodec& k, const std::uint8_t* codes, __m256& lo, __m256& hi) {
  const __m256i half = Halves(k, _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(codes))));
  lo = _mm256_cvtph_ps(_mm256_castsi256_si128(half));
  hi = _mm256_cvtph_ps(_mm256_extracti128_si256(half, 1));
  if (k.bias != 15) {
    const __m256 scale = _mm256_set1_ps(pow2f(15 - static_cast<int>(k.bias)));
    lo = _mm256_mul_ps(lo, scale);
    hi = _mm256_mul_ps(hi, scale);
  }
}
#endif

#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2 && HWY_TARGET > HWY_AVX3  // AVX2: 8 f32 lanes, an 8-entry lane permute
// The table DecodeE2m1x8Table reads for one scale: the values of the eight magnitudes (codes 0-7) times the scale,
// each with its magnitude m folded into bits 30:28 by an xor (m << 28). The decode's xor with the whole code shifted
// up by 28 takes m out again and puts the sign (code bit 3) into bit 31: the negative code's value is the positive
// one's with the sign bit flipped, which is the product -v x scale exactly (for a NaN scale, a NaN either way).
HWY_INLINE void E2m1x8Table(float scale, float* HWY_RESTRICT table) {
  for (std::uint32_t m = 0; m < 8; ++m) {
    table[m] = std::bit_cast<float>(std::bit_cast<std::uint32_t>(kE2m1Values[m] * scale) ^ (m << 28));
  }
}

// Eight e2m1 codes (four bytes, low nibble first) -> their values times a scale, from its E2m1x8Table: one
// broadcast, shifted right by 4j in lane j, leaves code j in the lane's low bits; the permute reads only bits 2:0 of
// each index (the magnitude), and an xor with the code shifted up by 28 (its sign to bit 31, its magnitude onto the
// table's fold) finishes the value. Five operations, one of them a permute, where two permutes and a blend on the
// sign took six, and DecodeE2m1Lanes and a product by the scale twelve; the bits are the table's products.
// Raw intrinsics: Highway 1.0.3's TableLookupLanes asks for indices below 8 (a mask more).
HWY_INLINE hn::Vec<hn::Full256<float>> DecodeE2m1x8Table(const std::uint8_t* bytes, const float* table) {
  std::uint32_t word;
  std::memcpy(&word, bytes, 4);
  const __m256i codes =
      _mm256_srlv_epi32(_mm256_set1_epi32(static_cast<int>(word)), _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28));
  const __m256 folded = _mm256_permutevar8x32_ps(_mm256_loadu_ps(table), codes);
  return {_mm256_xor_ps(folded, _mm256_castsi256_ps(_mm256_slli_epi32(codes, 28)))};
}
#endif

#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3  // AVX-512 or newer: 16 f32 lanes and a 16-entry lane permute
using DF16 = hn::Full512<float>;

// Eight bytes of e2m1 codes -> sixteen lanes holding byte i / 2 -> the low nibble in even lanes, the high one in odd
// lanes (a variable shift) -> a 16-entry table lookup.
HWY_INLINE hn::Vec<DF16> DecodeE2m1x16(const std::uint8_t* bytes) {
  const DF16 df;
  const hn::RebindToUnsigned<DF16> du;
  const hn::Full128<std::uint8_t> d8;
  const auto half = hn::LoadU(hn::Full64<std::uint8_t>(), bytes);
  const auto pairs = hn::InterleaveLower(d8, hn::ZeroExtendVector(d8, half), hn::ZeroExtendVector(d8, half));
  const auto idx = hn::And(hn::Shr(hn::PromoteTo(du, pairs), hn::Load(du, kNibbleShift)), hn::Set(du, 0xFu));
  const auto indices = hn::IndicesFromVec(df, hn::BitCast(hn::RebindToSigned<DF16>(), idx));
  return hn::TableLookupLanes(hn::Load(df, kE2m1Values), indices);
}

// Sixteen bytes of e2m1 codes (32 weights) -> w0 (weights 0-15) and w1 (16-31) in the GEMV's strided lane order:
// lane 2q holds weight q and lane 2q + 1 weight 8 + q of its 16 (q < 8), the order in which one 8-byte broadcast,
// shifted right by 4q in qword q, leaves the nibbles in the low bits of each dword, so no shuffle builds the
// indices. `table` is the 16 e2m1 values times one scale (kE2m1Values x scale).
// Raw intrinsics: vpermps reads only bits 3:0 of each index, so the neighbouring nibbles left above them need no
// mask; Highway's TableLookupLanes asks for indices below 16.
HWY_INLINE void DecodeE2m1x32Strided(const std::uint8_t* bytes, const float* table, hn::Vec<DF16>& w0,
                                     hn::Vec<DF16>& w1) {
  const hn::Repartition<std::uint64_t, DF16> d64;
  std::uint64_t lo, hi;
  std::memcpy(&lo, bytes, 8);
  std::memcpy(&hi, bytes + 8, 8);
  alignas(64) static constexpr std::uint64_t kShifts[8] = {0, 4, 8, 12, 16, 20, 24, 28};
  const auto shifts = hn::Load(d64, kShifts);
  const auto t = hn::Load(DF16(), table).raw;
  w0 = hn::Vec<DF16>{_mm512_permutexvar_ps(hn::Shr(hn::Set(d64, lo), shifts).raw, t)};
  w1 = hn::Vec<DF16>{_mm512_permutexvar_ps(hn::Shr(hn::Set(d64, hi), shifts).raw, t)};
}
#endif  // HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3

#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3_DL  // AVX3_DL or newer: AVX512-VBMI's byte permutes
// DecodeE4m3x64Bf16Pairs' tables: byte 1 without the sign (`high`) and byte 0 (`low`) of the bf16 bits of each
// non-negative e4m3 code's value, from the scalar codec (every e4m3 value is a bf16: 4 significant bits, 2^-9 to
// 448; the NaN code gives the quiet NaN), and `order`, the byte permute that puts 64 codes where the two unpacks
// below make pairs of them.
struct E4m3Bf16Tables {
  alignas(64) std::uint8_t high[128] = {}, low[128] = {}, order[64] = {};
  constexpr E4m3Bf16Tables() {
    for (std::uint32_t c = 0; c < 128; ++c) {
      const std::uint32_t bits = std::bit_cast<std::uint32_t>(mf::decode(mf::e4m3, c));
      if ((bits & 0xFFFF) != 0) throw "an e4m3 value that is not a bf16";  // not a constant expression: no build
      high[c] = static_cast<std::uint8_t>(bits >> 24);
      low[c] = static_cast<std::uint8_t>(bits >> 16);
    }
    // Unpacking (low, high) bytes makes word 8b + j of the first result from byte 16b + j (j < 8) and of the second
    // from byte 16b + 8 + j, b the 128-bit block. Word 2i + 1 of the first result (i = 4b + j / 2) is to hold code i
    // and word 2i code 16 + i; of the second, codes 32 + i and 48 + i.
    for (int b = 0; b < 4; ++b) {
      for (int j = 0; j < 8; ++j) {
        const int i = 4 * b + j / 2;
        order[16 * b + j] = static_cast<std::uint8_t>(j % 2 ? i : 16 + i);
        order[16 * b + 8 + j] = static_cast<std::uint8_t>(j % 2 ? 32 + i : 48 + i);
      }
    }
  }
};
inline constexpr E4m3Bf16Tables kE4m3Bf16{};

// 64 e4m3 codes -> their values as bf16 (NaN codes a NaN), paired for AVX512-BF16's dot product (vdpbf16ps, which
// adds to f32 lane i the product of words 2i + 1, then that of words 2i): lane i of w0 holds codes i (word 2i + 1)
// and 16 + i (word 2i), of w1 codes 32 + i and 48 + i. So lane i of a dot product along K meets k = i mod 16 in
// increasing k, as a 16-lane fma loop does. Six operations per 64 codes: the byte permute, two 128-entry table
// lookups (the sign put back by one bitwise op) and two byte unpacks.
HWY_INLINE void DecodeE4m3x64Bf16Pairs(const std::uint8_t* codes, __m512i& w0, __m512i& w1) {
  const __m512i c = _mm512_permutexvar_epi8(_mm512_load_si512(kE4m3Bf16.order), _mm512_loadu_si512(codes));
  const __m512i high =
      _mm512_permutex2var_epi8(_mm512_load_si512(kE4m3Bf16.high), c, _mm512_load_si512(kE4m3Bf16.high + 64));
  const __m512i low =
      _mm512_permutex2var_epi8(_mm512_load_si512(kE4m3Bf16.low), c, _mm512_load_si512(kE4m3Bf16.low + 64));
  const __m512i signed_high = _mm512_ternarylogic_epi32(high, c, _mm512_set1_epi8(static_cast<char>(0x80)), 0xF8);
  w0 = _mm512_unpacklo_epi8(low, signed_high);
  w1 = _mm512_unpackhi_epi8(low, signed_high);
}

// 64 e4m3 codes -> their values as f32 (NaN codes a NaN), in code order: w0 codes 0-15, w1 16-31, w2 32-47, w3
// 48-63. DecodeE4m3x64Bf16Pairs' words widened: an f32 whose low half is zero is its high half read as bf16, so the
// high word of lane i of a pair (code i) is the value with the low word cleared, and the low word (code 16 + i)
// the value once shifted up. Ten operations per 64 codes where a GFNI decode of the shifted fields (value x 2^-120)
// took six, but no f32 subnormal comes out (every e4m3 value, 2^-9 to 448, is a normal f32) where that gave one for
// each subnormal code, and Intel's cores (a Sapphire Rapids-class Xeon here) take a microcode assist, about a
// hundred cycles, for every fma that reads one (docs/gemm.md); and NaN codes need no look on the side.
HWY_INLINE void DecodeE4m3x64(const std::uint8_t* codes, hn::Vec<DF16>& w0, hn::Vec<DF16>& w1, hn::Vec<DF16>& w2,
                              hn::Vec<DF16>& w3) {
  __m512i p0, p1;
  DecodeE4m3x64Bf16Pairs(codes, p0, p1);
  const __m512i high = _mm512_set1_epi32(static_cast<int>(0xFFFF0000u));
  w0 = hn::Vec<DF16>{_mm512_castsi512_ps(_mm512_and_si512(p0, high))};
  w1 = hn::Vec<DF16>{_mm512_castsi512_ps(_mm512_slli_epi32(p0, 16))};
  w2 = hn::Vec<DF16>{_mm512_castsi512_ps(_mm512_and_si512(p1, high))};
  w3 = hn::Vec<DF16>{_mm512_castsi512_ps(_mm512_slli_epi32(p1, 16))};
}
#endif  // HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3_DL

}  // namespace HWY_NAMESPACE
}  // namespace mf::cpu
HWY_AFTER_NAMESPACE();

#endif  // MINIFLOAT_SRC_CPU_ELEMENT_CODEC_INL_H_
