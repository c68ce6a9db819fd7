// Per-target block scales of the quantizer: each block's amax, and the power-of-two (MX, DeepSeek) and NVFP4 scale
// rules on N blocks at once, lane by lane the scalar rules of minifloat/scale.h; how a block's values are divided.
//
// Included once per Highway target through quantize-inl.h (foreach_target.h); hence the toggle include guard.
#if defined(MINIFLOAT_SRC_CPU_QUANTIZE_SCALES_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef MINIFLOAT_SRC_CPU_QUANTIZE_SCALES_INL_H_
#undef MINIFLOAT_SRC_CPU_QUANTIZE_SCALES_INL_H_
#else
#define MINIFLOAT_SRC_CPU_QUANTIZE_SCALES_INL_H_
#endif

#include <algorithm>
#include <bit>
#include <cfloat>
#include <cmath>
#include <cstdint>

#include "element_codec-inl.h"
#include "hwy/highway.h"
#include "quantize_input-inl.h"

HWY_BEFORE_NAMESPACE();
namespace mf::cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

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

// Over one row of `cols` values cut into blocks of `bc` columns (the last may be partial): raises block_max_bits[b]
// to the largest |x| bit pattern of block b (>= 0x7F800000 means the block holds Inf or NaN).
void BlockMaxAbsBits(const float* x, std::int64_t cols, std::int64_t bc, std::uint32_t* block_max_bits) {
  for (std::int64_t b = 0, c0 = 0; c0 < cols; ++b, c0 += bc) {
    block_max_bits[b] = std::max(block_max_bits[b], MaxAbsBits(x, c0, std::min(c0 + bc, cols)));
  }
}

#if HWY_TARGET != HWY_SCALAR
// ---- N consecutive 1 x bc blocks at once (N = lanes, bc a multiple of N): the N maxima and scales sit in one
// vector each, so no block pays for a horizontal reduction or a scalar dependency chain of its own.

inline constexpr std::size_t kGroup = hn::MaxLanes(DF());

// Lane i: the largest |x| bit pattern of block i (x + i * bc), for the `count` blocks there (1 to N); lanes from
// count on repeat block 0's, so that they pass the group's checks whenever block 0 does. Each block's lane-wise
// maximum, then a transpose-reduce: every level pairs adjacent lanes (ConcatEven/ConcatOdd) and halves the vector
// count, so after log2(N) levels lane i holds block i's maximum.
HWY_INLINE hn::Vec<DU> GroupMaxAbsBits(const float* x, std::int64_t bc, std::size_t count) {
  const DF df;
  const DU du;
  constexpr std::int64_t N = kGroup;
  HWY_ALIGN std::uint32_t partial[kGroup * kGroup];
  for (std::size_t i = 0; i < kGroup; ++i) {
    if (i >= count) {
      hn::Store(hn::Load(du, partial), du, partial + i * kGroup);
      continue;
    }
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

// NVFP4's scale formats' codecs, made once: ue4m3, and ue5m3 (NVFP4 with UE5M3 scales).
inline constexpr ElementCodec kUe4m3Codec = element_codec(ue4m3);
inline constexpr ElementCodec kUe5m3Codec = element_codec(ue5m3);

// e4m3_scale_fast on N blocks (NVFP4; with the ue5m3 codec, ue5m3_block_scale): codes ue4m3(RNE(amax / max /
// tensor_scale)) and divisors S * tensor_scale, the same operations lane by lane, and reciprocals RN(1 / divisor) (0
// where not a normal float: see Divisor). False when a block needs block_scale() (amax zero or not finite) or gets a
// divisor that is zero or not finite. `scale`: the scale codec's traits and its saturating grid (y >= 0, so the
// grid's sign step leaves the codes unsigned).
HWY_INLINE bool GroupE4m3(hn::Vec<DU> m, float max_elem, float tensor_scale, std::uint32_t min_code,
                          const ElementCodec& scale, const SaturatingGrid<DF>& scale_grid, std::uint32_t* scale_codes,
                          float* divisors, float* reciprocals) {
  const DF df;
  const DU du;
  const auto finite = hn::And(hn::Lt(hn::Zero(du), m), hn::Lt(m, hn::Set(du, 0x7F800000u)));
  if (!hn::AllTrue(du, finite)) return false;
  const auto y = hn::Div(hn::Div(hn::BitCast(df, m), hn::Set(df, max_elem)), hn::Set(df, tensor_scale));
  const auto code = hn::Max(EncodeSaturating(df, scale_grid, y), hn::Set(du, min_code));
  const auto d = hn::Mul(hn::BitCast(df, Decode(du, scale, code)), hn::Set(df, tensor_scale));
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

}  // namespace HWY_NAMESPACE
}  // namespace mf::cpu
HWY_AFTER_NAMESPACE();

#endif  // include guard
