// Per-target SIMD code for block quantization: amax per block, element encode and decode, lane by lane the same
// f32 operations as the scalar rules in minifloat/scale.h (division by the block's divisor, round to nearest even,
// saturation to +-max), so every target is bit-identical to the reference. Partial vectors take the scalar rules.
//
// Included once per Highway target by quantize.cc through foreach_target.h; hence the toggle include guard.
#if defined(MINIFLOAT_SRC_CPU_QUANTIZE_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef MINIFLOAT_SRC_CPU_QUANTIZE_INL_H_
#undef MINIFLOAT_SRC_CPU_QUANTIZE_INL_H_
#else
#define MINIFLOAT_SRC_CPU_QUANTIZE_INL_H_
#endif

#include <algorithm>
#include <cfloat>
#include <bit>
#include <cmath>
#include <cstdint>

#include "hwy/cache_control.h"
#include "hwy/highway.h"
#include "quantize_kernels.h"

HWY_BEFORE_NAMESPACE();
namespace mf::cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::ScalableTag<float>;
using DU = hn::RebindToUnsigned<DF>;
using DI = hn::RebindToSigned<DF>;
using D8 = hn::Rebind<std::uint8_t, DF>;

// y (finite, already divided by the block's divisor) -> codes in u32 lanes: RNE, saturated to +-max, sign kept.
// One float addition rounds |y| to the element grid: C = 2^(E + 23 - m), with E = max(exponent of |y|, emin), has
// an ulp equal to the grid's quantum at |y| (normal or subnormal), so a + C rounds a to the grid, ties to even, and
// the bits of a + C above those of C count quanta. The code is that count plus (E - emin) << m: the leading bit
// carries into the exponent field by itself, also when rounding up to the next binade.
//
// The constants are made once (FloatGrid) and kept as vectors, so that the hot loops read them from registers or as
// memory operands instead of materializing them again for every block; the shift counts are arguments so that they
// fold into immediates where the caller knows the format.
//
// near (when asked): lanes whose |y| lies within 4 ulp of a rounding midpoint. A y computed as x * RN(1/d) is within
// 3 ulp of RN(x / d) (two roundings of 2^-24 each, relative), so outside those lanes both round to the same code.
struct FloatGrid {
  hn::Vec<DF> max, near_fraction;
  hn::Vec<DU> exponent_mask, min_exponent, round_offset, binade_offset, sign_bit;
  int m, em;
  FloatGrid(float max_value, int mantissa_bits, int emin, int exponent_and_mantissa_bits)
      : max(hn::Set(DF(), max_value)),
        near_fraction(hn::Set(DF(), pow2f(-24) - pow2f(mantissa_bits - 44))),
        exponent_mask(hn::Set(DU(), 0x7F800000u)),
        min_exponent(hn::Set(DU(), static_cast<std::uint32_t>(127 + emin) << 23)),
        round_offset(hn::Set(DU(), static_cast<std::uint32_t>(23 - mantissa_bits) << 23)),
        binade_offset(hn::Set(DU(), (static_cast<std::uint32_t>(23 - mantissa_bits) << 23) +
                                        (static_cast<std::uint32_t>(127 + emin) << mantissa_bits))),
        sign_bit(hn::Set(DU(), 1u << exponent_and_mantissa_bits)),
        m(mantissa_bits),
        em(exponent_and_mantissa_bits) {}
};

HWY_INLINE hn::Vec<DU> EncodeFloatLanes(hn::Vec<DF> y, const FloatGrid& g, int m, int em,
                                         hn::Mask<DF>* near = nullptr) {
  const DF df;
  const DU du;
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
  // vrangeps, imm 0b1010: the operand of smaller magnitude, sign cleared: min(|y|, max) in one operation.
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
  const auto code = hn::Sub(hn::Add(hn::BitCast(du, rounded), hn::ShiftRightSame(e, 23 - m)),
                            hn::Add(e, g.binade_offset));
  // The sign bit moves from bit 31 to bit em (exponent + mantissa bits).
  return hn::Or(code, hn::And(hn::ShiftRightSame(hn::BitCast(du, y), 31 - em), g.sign_bit));
}

// Functors rather than lambdas, so they carry the target's attributes. The hot formats have their fields as template
// constants.
template <int kExp, int kMan, int kBias>
struct FloatEncoder {
  static constexpr bool kFindsTies = true;  // operator()(y, near) exists
  FloatGrid grid;
  explicit FloatEncoder(float max) : grid(max, kMan, 1 - kBias, kExp + kMan) {}
  HWY_INLINE hn::Vec<DU> operator()(hn::Vec<DF> y) const { return EncodeFloatLanes(y, grid, kMan, kExp + kMan); }
  HWY_INLINE hn::Vec<DU> operator()(hn::Vec<DF> y, hn::Mask<DF>& near) const {
    return EncodeFloatLanes(y, grid, kMan, kExp + kMan, &near);
  }
};

// Symmetric integers: round(y) to nearest even, clamped to +-max, two's complement in `bits` bits.
HWY_INLINE hn::Vec<DU> EncodeIntLanes(hn::Vec<DF> y, const QuantizeElement& ec) {
  const DF df;
  const DU du;
  const auto m = hn::Set(df, ec.max);
  const auto q = hn::NearestInt(hn::Min(hn::Max(y, hn::Neg(m)), m));
  return hn::And(hn::BitCast(du, q), hn::Set(du, (1u << ec.bits) - 1));
}

// Any element type, its fields read at run time.
struct GenericEncoder {
  static constexpr bool kFindsTies = false;
  const QuantizeElement* ec;
  FloatGrid grid;
  explicit GenericEncoder(const QuantizeElement& codec)
      : ec(&codec),
        grid(codec.max, codec.mantissa_bits, 1 - codec.bias, codec.exponent_bits + codec.mantissa_bits) {}
  HWY_INLINE hn::Vec<DU> operator()(hn::Vec<DF> y) const {
    return ec->is_int ? EncodeIntLanes(y, *ec) : EncodeFloatLanes(y, grid, grid.m, grid.em);
  }
};

// codes in u32 lanes -> element values, exactly as decode() / element_value().
HWY_INLINE hn::Vec<DF> DecodeLanes(hn::Vec<DU> c, const QuantizeElement& ec) {
  const DF df;
  const DU du;
  const DI di;
  if (ec.is_int) {
    const int shift = 32 - ec.bits;
    return hn::ConvertTo(df, hn::ShiftRightSame(hn::ShiftLeftSame(hn::BitCast(di, c), shift), shift));
  }
  const int m = ec.mantissa_bits, em = ec.exponent_bits + m;
  const auto mag = hn::And(c, hn::Set(du, (1u << em) - 1));
  const auto sign = hn::ShiftLeftSame(hn::ShiftRightSame(c, em), 31);
  const auto field = hn::ShiftRightSame(mag, m);
  const auto normal = hn::BitCast(df, hn::Add(hn::ShiftLeftSame(mag, 23 - m),
                                              hn::Set(du, static_cast<std::uint32_t>(127 - ec.bias) << 23)));
  const auto sub = hn::Mul(hn::ConvertTo(df, hn::BitCast(di, mag)), hn::Set(df, pow2f(1 - ec.bias - m)));
  auto v = hn::IfThenElse(hn::RebindMask(df, hn::Eq(field, hn::Zero(du))), sub, normal);
  const std::uint32_t all_ones = (1u << ec.exponent_bits) - 1;
  if (ec.specials == Specials::ieee) {
    const auto top = hn::RebindMask(df, hn::Eq(field, hn::Set(du, all_ones)));
    const auto is_inf = hn::RebindMask(df, hn::Eq(mag, hn::Set(du, all_ones << m)));
    const auto special = hn::IfThenElse(is_inf, hn::Set(df, INFINITY), hn::BitCast(df, hn::Set(du, 0x7FC00000u)));
    v = hn::IfThenElse(top, special, v);
  } else if (ec.specials == Specials::nan_only) {
    const auto is_nan = hn::RebindMask(df, hn::Eq(mag, hn::Set(du, (1u << em) - 1)));
    v = hn::IfThenElse(is_nan, hn::BitCast(df, hn::Set(du, 0x7FC00000u)), v);
  }
  return hn::BitCast(df, hn::Or(hn::BitCast(du, v), sign));
}

// 1 / d when d is a normal power of two whose reciprocal is normal too, else 0. x / 2^k and x * 2^-k are the same
// correctly rounded quotient, so multiplying by it is exact; found from the bits, with no division.
HWY_INLINE float exact_reciprocal(float d) {
  const std::uint32_t db = std::bit_cast<std::uint32_t>(d), field = db >> 23;
  if ((db & 0x7FFFFFu) != 0 || field < 1 || field > 253) return 0.0f;
  return std::bit_cast<float>((254u - field) << 23);
}

// How EncodeBlock divides a block's values by its divisor d (> 0 and finite; anything else takes the scalar rule):
// exact: times r = 1 / d, exact (d a power of two); otherwise, when r = RN(1 / d) > 0, times r with the lanes near a
// rounding midpoint redone by division (same codes as x / d, a few times cheaper than a division per vector);
// r = 0: x / d.
struct Divisor {
  float d, r;
  bool exact;
};
HWY_INLINE Divisor divisor_of(float d) {
  if (const float r = exact_reciprocal(d); r > 0) return {d, r, true};
  const float r = 1.0f / d;
  return {d, std::isnormal(r) ? r : 0.0f, false};
}

// Single-thread streaming from DRAM is bound by how many line fills are in flight, and a kernel doing some 15 vector
// operations per line lets its out-of-order window run only a few lines ahead: the kernels ran well below their
// in-cache speed from DRAM. One prefetch per line, 16 KiB ahead, into L2 (the L1 fill buffers stay free for the loads)
// lets the work overlap the memory traffic (mxfp8 from DRAM: 39% -> 47% of memcpy, BENCHMARKS.md). Issued in the
// loops that read x, one per vector, never as a burst: a burst of prefetches stalls on full fill buffers. The address
// is formed as an integer: it may lie past the end of x, where a prefetch is a no-op.
inline constexpr std::uintptr_t kPrefetchBytes = 16384;
HWY_INLINE void PrefetchAhead(const void* p) {
  __builtin_prefetch(reinterpret_cast<const void*>(reinterpret_cast<std::uintptr_t>(p) + kPrefetchBytes), 0, 1);
}

// Codes of a vector (u32 lanes) into the output at column c: one per byte, or (kNibbles) two per byte, column 2i in
// the low nibble of byte i (docs/spec.md#packing), packed here so no row of codes is written twice.
template <bool kNibbles>
HWY_INLINE void StoreCodes(hn::Vec<DU> codes, std::uint8_t* out, std::int64_t c) {
#if HWY_TARGET != HWY_SCALAR
  if constexpr (kNibbles) {
    const hn::Repartition<std::uint64_t, DU> d64;
    const hn::Rebind<std::uint8_t, decltype(d64)> d8;
    const auto pairs = hn::BitCast(d64, codes);  // code 2i in bits 0..3, code 2i + 1 in bits 32..35
    hn::StoreU(hn::TruncateTo(d8, hn::Or(pairs, hn::ShiftRight<28>(pairs))), d8, out + c / 2);
    return;
  }
#endif
  hn::StoreU(hn::U8FromU32(codes), D8(), out + c);
}

// Four vectors of codes for columns c .. c + 4N: the bytes four StoreCodes would write. On AVX-512, 64 codes take
// two dword-to-word packs, one word-to-byte pack and a lane permutation (packs work within 128-bit lanes), and nibble
// pairs one multiply-add of adjacent bytes (lo + 16 hi) and a truncation: 4 and 7 operations where four StoreCodes
// take 8 and 16.
template <bool kNibbles>
HWY_INLINE void StoreCodes4(hn::Vec<DU> v0, hn::Vec<DU> v1, hn::Vec<DU> v2, hn::Vec<DU> v3, std::uint8_t* out,
                            std::int64_t c) {
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
  // Lane L of the packed bytes holds v0[4L, 4L + 4), v1[4L, 4L + 4), v2[..], v3[..]: dword 4L + j is vector j's.
  const __m512i packed = _mm512_packus_epi16(_mm512_packus_epi32(v0.raw, v1.raw), _mm512_packus_epi32(v2.raw, v3.raw));
  const __m512i bytes =
      _mm512_permutexvar_epi32(_mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15), packed);
  if constexpr (kNibbles) {
    const __m512i pairs = _mm512_maddubs_epi16(bytes, _mm512_set1_epi16(0x1001));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + c / 2), _mm512_cvtepi16_epi8(pairs));
  } else {
    _mm512_storeu_si512(out + c, bytes);
  }
#else
  const auto N = static_cast<std::int64_t>(hn::Lanes(DU()));
  StoreCodes<kNibbles>(v0, out, c);
  StoreCodes<kNibbles>(v1, out, c + N);
  StoreCodes<kNibbles>(v2, out, c + 2 * N);
  StoreCodes<kNibbles>(v3, out, c + 3 * N);
#endif
}

// The whole vectors of x[c, c1) divided as `div` says (d > 0 and finite), their codes into out; returns where they
// end. Shared by EncodeBlock (one block, then its scalar tail) and EncodeGroup (a group of whole blocks).
template <bool kNibbles, class Encoder>
HWY_INLINE std::int64_t EncodeVectors(const float* x, std::int64_t c, std::int64_t c1, const Divisor& div,
                                      std::uint8_t* out, const Encoder& encode_lanes) {
  const DF df;
  const auto N = static_cast<std::int64_t>(hn::Lanes(df));
  const auto vd = hn::Set(df, div.d), vr = hn::Set(df, div.r);
  if (div.exact) {
    for (; c + N <= c1; c += N) {
      PrefetchAhead(x + c);
      StoreCodes<kNibbles>(encode_lanes(hn::Mul(hn::LoadU(df, x + c), vr)), out, c);
    }
    return c;
  }
  if constexpr (Encoder::kFindsTies) {
    if (div.r > 0) {
      for (; c + N <= c1; c += N) {
        PrefetchAhead(x + c);
        const auto v = hn::LoadU(df, x + c);
        hn::Mask<DF> near;
        auto codes = encode_lanes(hn::Mul(v, vr), near);
        if (HWY_UNLIKELY(!hn::AllFalse(df, near))) codes = encode_lanes(hn::Div(v, vd));
        StoreCodes<kNibbles>(codes, out, c);
      }
      return c;
    }
  }
  for (; c + N <= c1; c += N) {
    PrefetchAhead(x + c);
    StoreCodes<kNibbles>(encode_lanes(hn::Div(hn::LoadU(df, x + c), vd)), out, c);
  }
  return c;
}

// Codes of x[c0, c1), one block, into out (kNibbles: two per byte; c0 and c1 - c0 even).
template <bool kNibbles, class Encoder>
HWY_INLINE void EncodeBlock(const float* x, std::int64_t c0, std::int64_t c1, const Divisor& div,
                            const QuantizeElement& ec, std::uint8_t* out, const Encoder& encode_lanes) {
  std::int64_t c = c0;
#if HWY_TARGET == HWY_SCALAR
  constexpr bool kVectors = !kNibbles;  // one lane cannot fill a byte: the pairs below do it
#else
  constexpr bool kVectors = true;
#endif
  if (kVectors && div.d > 0) {  // not a zero (signed zeros) or NaN (non-finite) block: those take the scalar rule
    c = EncodeVectors<kNibbles>(x, c0, c1, div, out, encode_lanes);
  }
  const BlockScale bs{0, div.d};
  const auto code = [&](std::int64_t i) {
    return std::isnan(div.d) ? 0u : static_cast<std::uint32_t>(element_code(*ec.scheme, x[i], bs));
  };
  if constexpr (kNibbles) {
    for (; c < c1; c += 2) out[c / 2] = static_cast<std::uint8_t>(code(c) | code(c + 1) << 4);
  } else {
    for (; c < c1; ++c) out[c] = static_cast<std::uint8_t>(code(c));
  }
}

// The largest |x| bit pattern over x[c0, c1).
HWY_INLINE std::uint32_t MaxAbsBits(const float* x, std::int64_t c0, std::int64_t c1) {
  const DF df;
  const DU du;
  const auto N = static_cast<std::int64_t>(hn::Lanes(df));
  auto acc = hn::Zero(du);
  std::int64_t c = c0;
  for (; c + N <= c1; c += N) acc = hn::Max(acc, hn::BitCast(du, hn::Abs(hn::LoadU(df, x + c))));
  std::uint32_t m = c > c0 ? hn::GetLane(hn::MaxOfLanes(du, acc)) : 0;
  for (; c < c1; ++c) m = std::max(m, std::bit_cast<std::uint32_t>(x[c]) & 0x7FFFFFFFu);
  return m;
}

void BlockMaxAbsBits(const float* x, std::int64_t cols, std::int64_t bc, std::uint32_t* block_max_bits) {
  for (std::int64_t b = 0, c0 = 0; c0 < cols; ++b, c0 += bc) {
    block_max_bits[b] = std::max(block_max_bits[b], MaxAbsBits(x, c0, std::min(c0 + bc, cols)));
  }
}

// Calls fn(encoder) with the encoder for ec's element type: constants for the formats of MX, NVFP4 and DeepSeek.
template <class Fn>
HWY_INLINE void WithEncoder(const QuantizeElement& ec, const Fn& fn) {
  if (!ec.is_int) {
    const int key = ec.exponent_bits * 256 + ec.mantissa_bits * 16 + ec.bias;
    switch (key) {
      case 4 * 256 + 3 * 16 + 7: return fn(FloatEncoder<4, 3, 7>(ec.max));
      case 5 * 256 + 2 * 16 + 15: return fn(FloatEncoder<5, 2, 15>(ec.max));
      case 3 * 256 + 2 * 16 + 3: return fn(FloatEncoder<3, 2, 3>(ec.max));
      case 2 * 256 + 3 * 16 + 1: return fn(FloatEncoder<2, 3, 1>(ec.max));
      case 2 * 256 + 1 * 16 + 1: return fn(FloatEncoder<2, 1, 1>(ec.max));
    }
  }
  fn(GenericEncoder(ec));
}

struct EncodeRowFn {
  const float* x;
  std::int64_t cols, bc;
  const float* divisors;
  const QuantizeElement& ec;
  std::uint8_t* codes;
  template <class Encoder>
  HWY_INLINE void operator()(const Encoder& e) const {
    for (std::int64_t b = 0, c0 = 0; c0 < cols; ++b, c0 += bc) {
      EncodeBlock<false>(x, c0, std::min(c0 + bc, cols), divisor_of(divisors[b]), ec, codes, e);
    }
  }
};

#if HWY_TARGET != HWY_SCALAR
// ---- N consecutive 1 x bc blocks at once (N = lanes, bc a multiple of N): the N maxima and scales sit in one
// vector each, so no block pays for a horizontal reduction or a scalar dependency chain of its own.

inline constexpr std::size_t kGroup = hn::MaxLanes(DF());

// Lane i: the largest |x| bit pattern of block i (x + i * bc). Each block's lane-wise maximum, then a
// transpose-reduce: every level pairs adjacent lanes (ConcatEven/ConcatOdd) and halves the vector count, so after
// log2(N) levels lane i holds block i's maximum.
HWY_INLINE hn::Vec<DU> GroupMaxAbsBits(const float* x, std::int64_t bc) {
  const DF df;
  const DU du;
  constexpr std::int64_t N = kGroup;
  HWY_ALIGN std::uint32_t partial[kGroup * kGroup];
  for (std::size_t i = 0; i < kGroup; ++i) {
    const float* block = x + static_cast<std::int64_t>(i) * bc;
    auto acc = hn::BitCast(du, hn::Abs(hn::LoadU(df, block)));
    for (std::int64_t c = N; c < bc; c += N) acc = hn::Max(acc, hn::BitCast(du, hn::Abs(hn::LoadU(df, block + c))));
    hn::Store(acc, du, partial + i * kGroup);
  }
  for (std::size_t count = kGroup; count > 1; count /= 2) {
    for (std::size_t j = 0; j < count / 2; ++j) {
      const auto lo = hn::Load(du, partial + 2 * j * kGroup), hi = hn::Load(du, partial + (2 * j + 1) * kGroup);
      hn::Store(hn::Max(hn::ConcatEven(du, hi, lo), hn::ConcatOdd(du, hi, lo)), du, partial + j * kGroup);
    }
  }
  return hn::Load(du, partial);
}

// PowerOfTwoFast::exponent on N blocks: scale codes k + 127, divisors 2^k and reciprocals 2^-k. False (nothing
// stored) when a block needs block_scale(): an amax that is zero, subnormal or not finite, or a k that the reference
// clamps or whose reciprocal is not a normal float (|k| > 126).
HWY_INLINE bool GroupPowerOfTwo(hn::Vec<DU> m, const PowerOfTwoFast& p, std::uint32_t* scale_codes, float* divisors,
                                float* reciprocals) {
  const DU du;
  const DI di;
  const auto normal = hn::And(hn::Lt(hn::Set(du, 0x007FFFFFu), m), hn::Lt(m, hn::Set(du, 0x7F800000u)));
  if (!hn::AllTrue(du, normal)) return false;
  const auto round_up = hn::Lt(hn::Set(du, p.max_mantissa), hn::And(m, hn::Set(du, 0x7FFFFFu)));
  // A true mask lane is all ones, i.e. -1: subtracting it adds 1.
  const auto k = hn::Sub(hn::Sub(hn::BitCast(di, hn::ShiftRight<23>(m)), hn::Set(di, 127 + p.emax)),
                         hn::BitCast(di, hn::VecFromMask(du, round_up)));
  const auto in_range = hn::And(hn::Lt(hn::Set(di, -127), k), hn::Lt(k, hn::Set(di, 127)));
  if (!hn::AllTrue(di, in_range)) return false;
  const auto biased = hn::BitCast(du, hn::Add(k, hn::Set(di, 127)));
  hn::StoreU(biased, du, scale_codes);
  hn::StoreU(hn::ShiftLeft<23>(biased), du, reinterpret_cast<std::uint32_t*>(divisors));
  hn::StoreU(hn::ShiftLeft<23>(hn::Sub(hn::Set(du, 254u), biased)), du, reinterpret_cast<std::uint32_t*>(reciprocals));
  return true;
}

// e4m3_scale_fast on N blocks (NVFP4): codes ue4m3(RNE(amax / max / tensor_scale)) and divisors S * tensor_scale,
// the same operations lane by lane, and reciprocals RN(1 / divisor) (0 where not a normal float: see Divisor). False
// when a block needs block_scale() (amax zero or not finite) or gets a divisor that is zero or not finite.
HWY_INLINE bool GroupE4m3(hn::Vec<DU> m, float max_elem, float tensor_scale, std::uint32_t min_code,
                          std::uint32_t* scale_codes, float* divisors, float* reciprocals) {
  const DF df;
  const DU du;
  const auto finite = hn::And(hn::Lt(hn::Zero(du), m), hn::Lt(m, hn::Set(du, 0x7F800000u)));
  if (!hn::AllTrue(du, finite)) return false;
  const auto y = hn::Div(hn::Div(hn::BitCast(df, m), hn::Set(df, max_elem)), hn::Set(df, tensor_scale));
  // y >= 0: no sign; >= 448 saturates.
  const FloatGrid e4m3(448.0f, 3, -6, 7);
  const auto code = hn::Max(EncodeFloatLanes(y, e4m3, 3, 7), hn::Set(du, min_code));
  constexpr QuantizeElement kE4m3{nullptr, false, 8, 4, 3, 7, Specials::nan_only, 448.0f};
  const auto d = hn::Mul(DecodeLanes(code, kE4m3), hn::Set(df, tensor_scale));
  const auto usable = hn::And(hn::Lt(hn::Zero(df), d), hn::Lt(d, hn::Set(df, INFINITY)));
  if (!hn::AllTrue(df, usable)) return false;
  hn::StoreU(code, du, scale_codes);
  hn::StoreU(d, df, divisors);
  const auto r = hn::Div(hn::Set(df, 1.0f), d);
  const auto normal = hn::And(hn::Le(hn::Set(df, FLT_MIN), r), hn::Lt(r, hn::Set(df, INFINITY)));
  hn::StoreU(hn::IfThenElseZero(normal, r), df, reciprocals);
  return true;
}
#endif  // HWY_TARGET != HWY_SCALAR

// One row of 1 x bc blocks in one pass: each block's amax, its scale (the scalar rule), then its codes into `out`:
// one per byte, or two per byte when `nibbles` (4-bit elements, bc and cols even).
struct QuantizeRowFn {
  const float* x;
  std::int64_t cols, bc;
  float tensor_scale;
  const QuantizeElement& ec;
  std::uint8_t* out;
  bool nibbles;
  std::uint32_t* scale_codes;
  float* divisors;

  // MX and DeepSeek scales (ue8m0, floor or rceil, one level) have a power-of-two rule without the general codec;
  // NVFP4's (ue4m3 of amax / max / tensor scale) has its own. Anything else takes block_scale().
  bool power_of_two() const {
    const Scheme& s = *ec.scheme;
    return *s.scale_format == ue8m0 && !s.tensor_scale && (s.rule == ScaleRule::floor || s.rule == ScaleRule::rceil) &&
           s.profile != Profile::ggml;
  }
  bool nvfp4() const {
    const Scheme& s = *ec.scheme;
    return s.rule == ScaleRule::e4m3 && *s.scale_format == ue4m3 && s.profile != Profile::deepseek &&
           tensor_scale > 0 && std::isfinite(tensor_scale);
  }
  std::uint32_t floor_bits() const {
    return ec.scheme->profile == Profile::deepseek ? std::bit_cast<std::uint32_t>(kDeepSeekMinAmax) : 0;
  }

  template <class Encoder>
  HWY_INLINE void operator()(const Encoder& e) const {
    if (nibbles) return Run<true>(e);
    Run<false>(e);
  }

  template <bool kNibbles, class Encoder>
  HWY_INLINE void Run(const Encoder& e) const {
    const bool pow2 = power_of_two(), e4m3 = nvfp4();
    const PowerOfTwoFast p(*ec.scheme);
    std::int64_t b = 0, c0 = 0;
#if HWY_TARGET != HWY_SCALAR
    if ((pow2 || e4m3) && bc % static_cast<std::int64_t>(kGroup) == 0) {
      const DU du;
      const auto floor = hn::Set(du, floor_bits());
      const std::int64_t span = static_cast<std::int64_t>(kGroup) * bc;
      HWY_ALIGN float reciprocals[kGroup];
      for (; c0 + span <= cols; b += kGroup, c0 += span) {
        auto m = GroupMaxAbsBits(x + c0, bc);
        m = hn::IfThenElse(hn::Lt(m, hn::Set(du, 0x7F800000u)), hn::Max(m, floor), m);
        const bool done = pow2 ? GroupPowerOfTwo(m, p, scale_codes + b, divisors + b, reciprocals)
                               : GroupE4m3(m, ec.max, tensor_scale, min_e4m3_scale(*ec.scheme), scale_codes + b,
                                           divisors + b, reciprocals);
        if (done && (pow2 || Encoder::kFindsTies)) {
          EncodeGroup<kNibbles>(c0, divisors + b, reciprocals, pow2, e);
          continue;
        }
        for (std::size_t i = 0; i < kGroup; ++i) {
          const std::int64_t bi = b + static_cast<std::int64_t>(i), ci = c0 + static_cast<std::int64_t>(i) * bc;
          if (!done) {
            Block<kNibbles>(bi, ci, pow2, e4m3, p, e);
          } else {
            EncodeBlock<kNibbles>(x, ci, ci + bc, Divisor{divisors[bi], reciprocals[i], pow2}, ec, out, e);
          }
        }
      }
    }
#endif
    for (; c0 < cols; ++b, c0 += bc) Block<kNibbles>(b, c0, pow2, e4m3, p, e);
  }

#if HWY_TARGET != HWY_SCALAR
  // The codes of a whole group (kGroup blocks from column c0, all scaled by the vector rules): EncodeBlock without
  // its per-block checks and scalar tail. reciprocals[i]: 2^-k (exact) or RN(1 / divisor), 0 where that is not a
  // normal float (division then). When a block is a power-of-two number of vectors, the group is one flat loop over
  // its vectors (each reads its block's reciprocal): GCC keeps the encoder's constants in registers across a flat
  // loop, where a loop per block made it materialize them again for every block.
  template <bool kNibbles, class Encoder>
  HWY_INLINE void EncodeGroup(std::int64_t c0, const float* group_divisors, const float* reciprocals, bool exact,
                              const Encoder& e) const {
    const DF df;
    constexpr auto N = static_cast<std::int64_t>(kGroup);
    const std::int64_t vectors_per_block = bc / N, n = N * bc;
    const bool flat = std::has_single_bit(static_cast<std::uint64_t>(vectors_per_block)) &&
                      (exact || hn::AllTrue(df, hn::Lt(hn::Zero(df), hn::LoadU(df, reciprocals))));
    if (flat) {
      const int shift = std::countr_zero(static_cast<std::uint64_t>(vectors_per_block));
      const float* xs = x + c0;
      // n is a multiple of 4N (16 blocks of a multiple of N): four vectors a step, stored together.
      if (exact) {
        const auto encode = [&](std::int64_t c) HWY_ATTR {
          PrefetchAhead(xs + c);
          return e(hn::Mul(hn::LoadU(df, xs + c), hn::Set(df, reciprocals[(c / N) >> shift])));
        };
        for (std::int64_t c = 0; c < n; c += 4 * N) {
          StoreCodes4<kNibbles>(encode(c), encode(c + N), encode(c + 2 * N), encode(c + 3 * N), out, c0 + c);
        }
        return;
      }
      if constexpr (Encoder::kFindsTies) {
        const auto encode = [&](std::int64_t c) HWY_ATTR {
          PrefetchAhead(xs + c);
          const std::int64_t i = (c / N) >> shift;
          const auto v = hn::LoadU(df, xs + c);
          hn::Mask<DF> near;
          auto codes = e(hn::Mul(v, hn::Set(df, reciprocals[i])), near);
          if (HWY_UNLIKELY(!hn::AllFalse(df, near))) codes = e(hn::Div(v, hn::Set(df, group_divisors[i])));
          return codes;
        };
        for (std::int64_t c = 0; c < n; c += 4 * N) {
          StoreCodes4<kNibbles>(encode(c), encode(c + N), encode(c + 2 * N), encode(c + 3 * N), out, c0 + c);
        }
        return;
      }
    }
    for (std::size_t i = 0; i < kGroup; ++i) {
      const std::int64_t ci = c0 + static_cast<std::int64_t>(i) * bc;
      EncodeVectors<kNibbles>(x, ci, ci + bc, Divisor{group_divisors[i], reciprocals[i], exact}, out, e);
    }
  }
#endif

  // Block b (columns c0 .. c0 + bc, cut at cols) on its own. Not inlined: the groups above are the hot path, and
  // one copy per encoder and sink keeps the compile (sanitizer builds above all) and the code size in bounds.
  template <bool kNibbles, class Encoder>
  HWY_NOINLINE void Block(std::int64_t b, std::int64_t c0, bool pow2, bool e4m3, const PowerOfTwoFast& p,
                        const Encoder& e) const {
    const std::int64_t c1 = std::min(c0 + bc, cols);
    std::uint32_t m = MaxAbsBits(x, c0, c1);
    if (m < 0x7F800000u) m = std::max(m, floor_bits());
    if (pow2 && m >= 0x00800000u && m < 0x7F800000u) {
      const int k = p.exponent(m);
      scale_codes[b] = static_cast<std::uint32_t>(k + 127);
      divisors[b] = pow2f(k);
      EncodeBlock<kNibbles>(x, c0, c1, Divisor{divisors[b], pow2f(-k), true}, ec, out, e);
      return;
    }
    const Scheme& s = *ec.scheme;
    const bool nonfinite = m >= 0x7F800000u;
    const BlockScale bs = (e4m3 && !nonfinite)
                              ? e4m3_scale_fast(std::bit_cast<float>(m), ec.max, tensor_scale, min_e4m3_scale(s))
                              : block_scale(s, nonfinite ? 0.0f : std::bit_cast<float>(m), nonfinite, tensor_scale);
    scale_codes[b] = bs.code;
    divisors[b] = bs.divisor;
    EncodeBlock<kNibbles>(x, c0, c1, divisor_of(bs.divisor), ec, out, e);
  }
};

void EncodeRow(const float* x, std::int64_t cols, std::int64_t bc, const float* divisors, const QuantizeElement& ec,
               std::uint8_t* codes) {
  WithEncoder(ec, EncodeRowFn{x, cols, bc, divisors, ec, codes});
}

void QuantizeRow(const float* x, std::int64_t cols, std::int64_t bc, float tensor_scale, const QuantizeElement& ec,
                 std::uint8_t* out, bool nibbles, std::uint32_t* scale_codes, float* divisors) {
  WithEncoder(ec, QuantizeRowFn{x, cols, bc, tensor_scale, ec, out, nibbles, scale_codes, divisors});
}

// Decoders with the element's fields as constants (the common formats), or read at run time.
template <int kExp, int kMan, int kBias, Specials kSpecials>
struct FloatDecoder {
  static constexpr QuantizeElement kCodec{nullptr, false, 1 + kExp + kMan, kExp, kMan, kBias, kSpecials, 0.0f};
  HWY_INLINE hn::Vec<DF> operator()(hn::Vec<DU> c) const { return DecodeLanes(c, kCodec); }
};
template <int kBits>
struct IntDecoder {
  static constexpr QuantizeElement kCodec{nullptr, true, kBits, 0, 0, 0, Specials::finite, 0.0f};
  HWY_INLINE hn::Vec<DF> operator()(hn::Vec<DU> c) const { return DecodeLanes(c, kCodec); }
};
struct GenericDecoder {
  const QuantizeElement* ec;
  HWY_INLINE hn::Vec<DF> operator()(hn::Vec<DU> c) const { return DecodeLanes(c, *ec); }
};
#if HWY_TARGET != HWY_SCALAR
// E2M1 by table: its 8 magnitudes in one vector (8 or more lanes), the sign (bit 3) moved to bit 31. A third of the
// operations of DecodeLanes; the same values (the table is DecodeLanes' own output).
struct E2m1Decoder {
  hn::Vec<DF> magnitudes;
  E2m1Decoder() {
    const DF df;
    const DU du;
    constexpr QuantizeElement kE2m1{nullptr, false, 4, 2, 1, 1, Specials::finite, 6.0f};
    magnitudes = DecodeLanes(hn::And(hn::Iota(du, 0), hn::Set(du, 7u)), kE2m1);
  }
  HWY_INLINE hn::Vec<DF> operator()(hn::Vec<DU> c) const {
    const DF df;
    const DU du;
    const hn::RebindToSigned<DF> di;
    const auto mag = hn::TableLookupLanes(magnitudes, hn::IndicesFromVec(df, hn::BitCast(di, hn::And(c, hn::Set(du, 7u)))));
    return hn::BitCast(df, hn::Or(hn::BitCast(du, mag), hn::ShiftLeft<28>(hn::And(c, hn::Set(du, 8u)))));
  }
};
#endif

template <class Fn>
HWY_INLINE void WithDecoder(const QuantizeElement& ec, const Fn& fn) {
  if (ec.is_int) {
    if (ec.bits == 8) return fn(IntDecoder<8>{});
    if (ec.bits == 4) return fn(IntDecoder<4>{});
    return fn(GenericDecoder{&ec});
  }
  switch (ec.exponent_bits * 256 + ec.mantissa_bits * 16 + ec.bias) {
    case 4 * 256 + 3 * 16 + 7:
      if (ec.specials == Specials::nan_only) return fn(FloatDecoder<4, 3, 7, Specials::nan_only>{});
      break;
    case 5 * 256 + 2 * 16 + 15:
      if (ec.specials == Specials::ieee) return fn(FloatDecoder<5, 2, 15, Specials::ieee>{});
      break;
    case 3 * 256 + 2 * 16 + 3: return fn(FloatDecoder<3, 2, 3, Specials::finite>{});
    case 2 * 256 + 3 * 16 + 1: return fn(FloatDecoder<2, 3, 1, Specials::finite>{});
    case 2 * 256 + 1 * 16 + 1:
#if HWY_TARGET != HWY_SCALAR
      if constexpr (hn::MaxLanes(DF()) >= 8) return fn(E2m1Decoder());
#endif
      return fn(FloatDecoder<2, 1, 1, Specials::finite>{});
  }
  fn(GenericDecoder{&ec});
}

// Codes of one row, one per byte or (kNibbles: bc and cols even) two per byte as QuantizeRow packs them.
template <bool kNibbles>
HWY_INLINE hn::Vec<DU> LoadCodes(const std::uint8_t* codes, std::int64_t c) {
#if HWY_TARGET != HWY_SCALAR
  if constexpr (kNibbles) {
    // Lane j takes byte j / 2 (N / 2 bytes, widened and spread by one permutation), shifted right by 4 * (j % 2).
    const DU du;
    const hn::Half<DU> dh;
    const hn::Rebind<std::uint8_t, decltype(dh)> d8h;
    const auto bytes = hn::ZeroExtendVector(du, hn::PromoteTo(dh, hn::LoadU(d8h, codes + c / 2)));
    const auto lane = hn::Iota(du, 0);
    const auto spread = hn::TableLookupLanes(bytes, hn::IndicesFromVec(du, hn::ShiftRight<1>(lane)));
    return hn::And(hn::Shr(spread, hn::ShiftLeft<2>(hn::And(lane, hn::Set(du, 1u)))), hn::Set(du, 0xFu));
  }
#endif
  return hn::PromoteTo(DU(), hn::LoadU(D8(), codes + c));
}

struct DecodeRowFn {
  const std::uint8_t* codes;
  bool nibbles, stream;
  std::int64_t cols, bc;
  const float* divisors;
  const QuantizeElement& ec;
  float* out;
  template <class Decoder>
  HWY_INLINE void operator()(const Decoder& decode_lanes) const {
    if (stream) return nibbles ? Run<true, true>(decode_lanes) : Run<false, true>(decode_lanes);
    if (nibbles) return Run<true, false>(decode_lanes);
    Run<false, false>(decode_lanes);
  }
  template <bool kNibbles, bool kStream, class Decoder>
  HWY_INLINE void Run(const Decoder& decode_lanes) const {
    const DF df;
    const auto N = static_cast<std::int64_t>(hn::Lanes(df));
#if HWY_TARGET == HWY_SCALAR
    constexpr bool kVectors = !kNibbles;
#else
    constexpr bool kVectors = true;
#endif
    const auto code = [&](std::int64_t c) {
      return kNibbles ? (codes[c / 2] >> (4 * (c % 2))) & 0xF : codes[c];
    };
    for (std::int64_t b = 0, c0 = 0; c0 < cols; ++b, c0 += bc) {
      const std::int64_t c1 = std::min(c0 + bc, cols);
      const float d = divisors[b];
      const auto vd = hn::Set(df, d);
      std::int64_t c = c0;
      if (kVectors) {
        for (; c + N <= c1; c += N) {
          const auto v = hn::Mul(decode_lanes(LoadCodes<kNibbles>(codes, c)), vd);
          if constexpr (kStream) hn::Stream(v, df, out + c);
          else hn::StoreU(v, df, out + c);
        }
      }
      for (; c < c1; ++c) out[c] = element_value(ec.scheme->element, static_cast<std::uint32_t>(code(c))) * d;
    }
  }
};

void DecodeRow(const std::uint8_t* codes, bool nibbles, std::int64_t cols, std::int64_t bc, const float* divisors,
               const QuantizeElement& ec, float* out, bool stream) {
  // Non-temporal stores need every vector aligned: out, and each block's start (bc a multiple of the lanes).
  const auto N = static_cast<std::int64_t>(hn::Lanes(DF()));
  stream = stream && bc % N == 0 && reinterpret_cast<std::uintptr_t>(out) % (N * sizeof(float)) == 0;
  WithDecoder(ec, DecodeRowFn{codes, nibbles, stream, cols, bc, divisors, ec, out});
}

float FiniteAmax(const float* x, std::int64_t n) {
  const DF df;
  const DU du;
  const auto N = static_cast<std::int64_t>(hn::Lanes(df));
  // Two operations a vector (|x| bits, max); a NaN or Inf seen on the way sends the slice to the masked loop.
  auto acc = hn::Zero(du);
  std::int64_t i = 0;
  for (; i + N <= n; i += N) {
    PrefetchAhead(x + i);
    acc = hn::Max(acc, hn::BitCast(du, hn::Abs(hn::LoadU(df, x + i))));
  }
  std::uint32_t m = i > 0 ? hn::GetLane(hn::MaxOfLanes(du, acc)) : 0;
  if (m >= 0x7F800000u) {
    const auto inf = hn::Set(du, 0x7F800000u);
    acc = hn::Zero(du);
    for (std::int64_t j = 0; j < i; j += N) {
      const auto a = hn::BitCast(du, hn::Abs(hn::LoadU(df, x + j)));
      acc = hn::Max(acc, hn::IfThenElseZero(hn::Lt(a, inf), a));
    }
    m = hn::GetLane(hn::MaxOfLanes(du, acc));
  }
  for (; i < n; ++i) {
    const std::uint32_t a = std::bit_cast<std::uint32_t>(x[i]) & 0x7FFFFFFFu;
    if (a < 0x7F800000u) m = std::max(m, a);
  }
  return std::bit_cast<float>(m);
}

// out[0, n) = in[0, n) by non-temporal stores where out is vector-aligned (plain stores for the ends).
void StreamCopy(const float* in, std::int64_t n, float* out) {
  const DF df;
  const auto N = static_cast<std::int64_t>(hn::Lanes(df));
  std::int64_t i = 0;
  for (; i < n && reinterpret_cast<std::uintptr_t>(out + i) % (N * sizeof(float)) != 0; ++i) out[i] = in[i];
  for (; i + N <= n; i += N) hn::Stream(hn::LoadU(df, in + i), df, out + i);
  for (; i < n; ++i) out[i] = in[i];
}

// After this thread's non-temporal stores: makes them visible to other threads.
void FlushStreams() { hwy::FlushStream(); }

void WidenBf16(const std::uint16_t* in, std::int64_t n, float* out) {
  const DF df;
  const DU du;
  const hn::Rebind<std::uint16_t, DF> d16;
  const auto N = static_cast<std::int64_t>(hn::Lanes(df));
  std::int64_t i = 0;
  for (; i + N <= n; i += N) {
    PrefetchAhead(in + i);
    hn::StoreU(hn::BitCast(df, hn::ShiftLeft<16>(hn::PromoteTo(du, hn::LoadU(d16, in + i)))), df, out + i);
  }
  for (; i < n; ++i) out[i] = std::bit_cast<float>(static_cast<std::uint32_t>(in[i]) << 16);
}

void WidenF16(const std::uint16_t* in, std::int64_t n, float* out) {
  const DF df;
  const hn::Rebind<hwy::float16_t, DF> dh;
  const auto N = static_cast<std::int64_t>(hn::Lanes(df));
  std::int64_t i = 0;
  // F16C's exact conversion on AVX2 and up. Highway 1.0.3's emulation on older targets mishandles f16 subnormals
  // (QuantizeSimd.Bf16AndF16Inputs fails with it): the scalar codec there.
#if HWY_TARGET <= HWY_AVX2
  for (; i + N <= n; i += N) {
    PrefetchAhead(in + i);
    hn::StoreU(hn::PromoteTo(df, hn::LoadU(dh, reinterpret_cast<const hwy::float16_t*>(in + i))), df, out + i);
  }
#else
  (void)dh;
  (void)N;
#endif
  for (; i < n; ++i) out[i] = decode(f16, in[i]);
}

}  // namespace HWY_NAMESPACE
}  // namespace mf::cpu
HWY_AFTER_NAMESPACE();

#endif  // include guard
