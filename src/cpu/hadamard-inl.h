// Per-target SIMD code for mf::rotate. It performs exactly the f32 operations of mf::ref::rotate (the stage order
// documented in minifloat/hadamard.h), only grouped differently, so its results are bit-identical.
//
// Layout of the work for one group of n values in vectors of L lanes (L <= 16 <= n):
//   * stages h < L pair lanes of one vector: a lane swizzle plus a sign flip (InVectorStages);
//   * the first pass loads up to eight consecutive vectors and also does stages h = L, 2L, 4L in registers;
//   * the remaining stages go three at a time (radix 8: vectors at p + k * h, k < 8), or two where that would
//     leave a lone stage; the pass that finishes the group also multiplies by rotate_scale(n).
// A group of 4096 f32 is 16 KiB, so every pass after the first runs in L1: three passes in all for n = 4096 on
// AVX2 and AVX-512.
//
// Included once per Highway target by hadamard.cc through foreach_target.h; hence the toggle include guard.
#if defined(MINIFLOAT_SRC_CPU_HADAMARD_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef MINIFLOAT_SRC_CPU_HADAMARD_INL_H_
#undef MINIFLOAT_SRC_CPU_HADAMARD_INL_H_
#else
#define MINIFLOAT_SRC_CPU_HADAMARD_INL_H_
#endif

#include <algorithm>
#include <bit>
#include <cstddef>

#include "hwy/highway.h"
#include "minifloat/hadamard.h"

HWY_BEFORE_NAMESPACE();
namespace mf {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// At most 16 lanes: every n >= 16 is a whole number of vectors, and at most four stages are in-vector.
using DF = hn::CappedTag<float, 16>;
using VF = hn::Vec<DF>;

// The stage butterfly (a, b) -> (a + b, a - b), operands in the reference's order.
HWY_INLINE void Butterfly(VF& a, VF& b) {
  const VF sum = hn::Add(a, b);
  b = hn::Sub(a, b);
  a = sum;
}

#if HWY_TARGET == HWY_SCALAR
// One lane: no stage pairs two lanes of one vector.
HWY_INLINE VF InVectorStages(DF /*d*/, VF v) { return v; }
#else
// -0.0f in the lanes i with bit kLog2 set (the b = x[j + h] side of stage h = 2^kLog2), +0.0f elsewhere.
template <int kLog2>
HWY_INLINE VF UpperSign(DF d) {
  const hn::RebindToSigned<DF> di;
  return hn::BitCast(d, hn::ShiftLeft<31 - kLog2>(hn::And(hn::Iota(di, 0), hn::Set(di, 1 << kLog2))));
}

// Stage h = 2^kLog2 inside one vector, where `partner` holds v[i ^ h]. Lane i with bit h clear gets
// v[i + h] + v[i] (a + b commuted: the same value); lane i with bit h set gets v[i - h] + (-v[i]), which IEEE 754
// defines to be a - b exactly.
template <int kLog2>
HWY_INLINE VF InVectorStage(DF d, VF v, VF partner) {
  return hn::Add(partner, hn::Xor(v, UpperSign<kLog2>(d)));
}

// partner[i] = v[i ^ h], across 128-bit blocks.
template <int kLog2>
HWY_INLINE VF XorLanes(DF d, VF v) {
  const hn::RebindToSigned<DF> di;
  return hn::TableLookupLanes(v, hn::IndicesFromVec(d, hn::Xor(hn::Iota(di, 0), hn::Set(di, 1 << kLog2))));
}

// Stages h = 1, 2, 4, 8 while h < L (the lane count is a constant on fixed-width targets, so the ifs fold).
HWY_INLINE VF InVectorStages(DF d, VF v) {
  v = InVectorStage<0>(d, v, hn::Shuffle2301(v));
  v = InVectorStage<1>(d, v, hn::Shuffle1032(v));
  if (hn::Lanes(d) > 4) v = InVectorStage<2>(d, v, XorLanes<2>(d, v));
  if (hn::Lanes(d) > 8) v = InVectorStage<3>(d, v, XorLanes<3>(d, v));
  return v;
}
#endif

template <bool kInVector>
HWY_INLINE VF Load(DF d, const float* HWY_RESTRICT p) {
  const VF v = hn::LoadU(d, p);
  if constexpr (kInVector) return InVectorStages(d, v);
  return v;
}

template <bool kScale>
HWY_INLINE void Store(DF d, VF v, VF scale, float* HWY_RESTRICT p) {
  if constexpr (kScale) v = hn::Mul(v, scale);
  hn::StoreU(v, d, p);
}

// Stages h and 2h on the vectors at offsets 0, h, 2h, 3h.
HWY_INLINE void Radix4(VF& a, VF& b, VF& c, VF& e) {
  Butterfly(a, b);
  Butterfly(c, e);
  Butterfly(a, c);
  Butterfly(b, e);
}

// The vectors at p + k * h, k < kRadix (1, 2, 4 or 8): the in-vector stages if kInVector, then the stages
// h, 2h, 4h that fit, all in registers.
template <size_t kRadix, bool kInVector, bool kScale>
HWY_INLINE void Block(DF d, float* HWY_RESTRICT p, size_t h, VF scale) {
  if constexpr (kRadix == 1) {
    Store<kScale>(d, Load<kInVector>(d, p), scale, p);
  } else if constexpr (kRadix == 2) {
    VF a = Load<kInVector>(d, p), b = Load<kInVector>(d, p + h);
    Butterfly(a, b);
    Store<kScale>(d, a, scale, p);
    Store<kScale>(d, b, scale, p + h);
  } else if constexpr (kRadix == 4) {
    VF a = Load<kInVector>(d, p), b = Load<kInVector>(d, p + h);
    VF c = Load<kInVector>(d, p + 2 * h), e = Load<kInVector>(d, p + 3 * h);
    Radix4(a, b, c, e);
    Store<kScale>(d, a, scale, p);
    Store<kScale>(d, b, scale, p + h);
    Store<kScale>(d, c, scale, p + 2 * h);
    Store<kScale>(d, e, scale, p + 3 * h);
  } else {
    static_assert(kRadix == 8);
    VF v0 = Load<kInVector>(d, p), v1 = Load<kInVector>(d, p + h);
    VF v2 = Load<kInVector>(d, p + 2 * h), v3 = Load<kInVector>(d, p + 3 * h);
    VF v4 = Load<kInVector>(d, p + 4 * h), v5 = Load<kInVector>(d, p + 5 * h);
    VF v6 = Load<kInVector>(d, p + 6 * h), v7 = Load<kInVector>(d, p + 7 * h);
    Radix4(v0, v1, v2, v3);
    Radix4(v4, v5, v6, v7);
    Butterfly(v0, v4);  // stage 4h
    Butterfly(v1, v5);
    Butterfly(v2, v6);
    Butterfly(v3, v7);
    Store<kScale>(d, v0, scale, p);
    Store<kScale>(d, v1, scale, p + h);
    Store<kScale>(d, v2, scale, p + 2 * h);
    Store<kScale>(d, v3, scale, p + 3 * h);
    Store<kScale>(d, v4, scale, p + 4 * h);
    Store<kScale>(d, v5, scale, p + 5 * h);
    Store<kScale>(d, v6, scale, p + 6 * h);
    Store<kScale>(d, v7, scale, p + 7 * h);
  }
}

// One pass over a group of n values: a Block at every vector offset j with (j mod kRadix * h) < h.
template <size_t kRadix, bool kInVector, bool kScale>
HWY_INLINE void Pass(DF d, float* HWY_RESTRICT g, size_t n, size_t h, VF scale) {
  const size_t lanes = hn::Lanes(d);
  for (size_t base = 0; base < n; base += kRadix * h) {
    for (size_t j = base; j < base + h; j += lanes) Block<kRadix, kInVector, kScale>(d, g + j, h, scale);
  }
}

// A pass over memory doing log2(radix) stages, radix 2, 4 or 8, starting at stage h.
template <bool kScale>
HWY_INLINE void LaterPass(size_t radix, DF d, float* HWY_RESTRICT g, size_t n, size_t h, VF scale) {
  if (radix == 2) return Pass<2, false, kScale>(d, g, n, h, scale);
  if (radix == 4) return Pass<4, false, kScale>(d, g, n, h, scale);
  return Pass<8, false, kScale>(d, g, n, h, scale);
}

// Groups of n <= 8 * Lanes(d) values: the first pass alone does every stage, one block per group, so one pass
// covers all `count` values.
inline void RotateSmallGroups(DF d, float* HWY_RESTRICT x, size_t count, size_t n, VF scale) {
  const size_t lanes = hn::Lanes(d);
  if (n == lanes) return Pass<1, true, true>(d, x, count, lanes, scale);
  if (n == 2 * lanes) return Pass<2, true, true>(d, x, count, lanes, scale);
  if (n == 4 * lanes) return Pass<4, true, true>(d, x, count, lanes, scale);
  return Pass<8, true, true>(d, x, count, lanes, scale);
}

// One group of n >= 16 * Lanes(d) values.
inline void RotateLargeGroup(DF d, float* HWY_RESTRICT g, size_t n, VF scale) {
  const size_t lanes = hn::Lanes(d);
  Pass<8, true, false>(d, g, n, lanes, scale);
  // Stages h = 8 * lanes .. n / 2: three per pass, or two where three would leave a lone one (4 = 2 + 2,
  // 7 = 3 + 2 + 2).
  size_t left = static_cast<size_t>(std::countr_zero(n / lanes)) - 3;
  for (size_t h = 8 * lanes; left > 0;) {
    const size_t stages = left == 4 ? 2 : std::min<size_t>(left, 3);
    left -= stages;
    if (left == 0) {
      LaterPass<true>(size_t{1} << stages, d, g, n, h, scale);
    } else {
      LaterPass<false>(size_t{1} << stages, d, g, n, h, scale);
    }
    h <<= stages;
  }
}

// Rotates `groups` consecutive groups of n values at x. Precondition (checked by mf::rotate): n is a power of two,
// 16 <= n <= kMaxRotateSize.
inline void RotateGroups(float* HWY_RESTRICT x, size_t groups, size_t n) {
  const DF d;
  const VF scale = hn::Set(d, rotate_scale(static_cast<int>(n)));
  if (n <= 8 * hn::Lanes(d)) return RotateSmallGroups(d, x, groups * n, n, scale);
  for (size_t i = 0; i < groups; ++i) RotateLargeGroup(d, x + i * n, n, scale);
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace mf
HWY_AFTER_NAMESPACE();

#endif  // MINIFLOAT_SRC_CPU_HADAMARD_INL_H_
