// The GEMV's block loop, shared by every weight kind: C[row, n0 .. n0 + 16) group by group (GemvBlock), each group's
// sums from the block sums a batched loop made ahead or from the group loop (GroupSums: GroupProducts, and for
// e4m3 its optimistic passes), which multiplies each weight row's decoded vectors (LoadWeights) into 16 rows of
// lane-strided accumulators (RowProducts) and reduces them in the definition's tree.
//
// Included once per Highway target through gemv-inl.h; hence the toggle include guard.
#if defined(MINIFLOAT_SRC_CPU_GEMV_BLOCKS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef MINIFLOAT_SRC_CPU_GEMV_BLOCKS_INL_H_
#undef MINIFLOAT_SRC_CPU_GEMV_BLOCKS_INL_H_
#else
#define MINIFLOAT_SRC_CPU_GEMV_BLOCKS_INL_H_
#endif

#include <algorithm>
#include <cstdint>

#include "../ref/gemm_problem.h"
#include "gemv_bf16-inl.h"
#include "gemv_e2m1-inl.h"
#include "gemv_e4m3-inl.h"
#include "gemv_inputs-inl.h"
#include "gemv_loops-inl.h"
#include "gemv_mxfp8-inl.h"
#include "gemv_rows-inl.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace mf::gemm {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// kL lanes of w[row, k..] exactly as Problem::weight gives them, in the weight kind's own decode (LoadBf16, LoadE4m3,
// LoadE2m1). kNanCheck = false (e4m3) leaves NaN codes as finite values: for callers that look for them another way.
template <WeightKind K, bool kPerGroup = false, bool kNanCheck = true>
HWY_INLINE VF LoadWeights(const WeightRow& r, std::int64_t k, int shift) {
  if constexpr (K == WeightKind::bf16) {
    return LoadBf16(r, k);
  } else if constexpr (K == WeightKind::e4m3) {
    return LoadE4m3<kPerGroup, kNanCheck>(r, k, shift);
  } else {
    static_assert(K == WeightKind::e2m1);
    return LoadE2m1(r, k, shift);
  }
}

// LoadWeights at k and k + kL (e4m3: LoadE4m3Pair, which converts the pair at once where it can).
template <WeightKind K, bool kPerGroup, bool kNanCheck>
HWY_INLINE void LoadWeightsPair(const WeightRow& r, std::int64_t k, int shift, VF& w0, VF& w1) {
  if constexpr (K == WeightKind::e4m3) {
    LoadE4m3Pair<kPerGroup, kNanCheck>(r, k, shift, w0, w1);
  } else {
    w0 = LoadWeights<K, kPerGroup, kNanCheck>(r, k, shift);
    w1 = LoadWeights<K, kPerGroup, kNanCheck>(r, k + static_cast<std::int64_t>(kL), shift);
  }
}

// Rows [first, first + count) of GroupProducts.
template <WeightKind K, bool kPerGroup, bool kNanCheck = true>
HWY_INLINE void RowProducts(const WeightRow (&rows)[kLanes], const float* HWY_RESTRICT a, std::int64_t k0,
                            std::int64_t end, int shift, int first, int count, VF (&acc)[kLanes][kV]) {
  const DF df;
#if MF_GEMV_ROWS4
  // AVX2 (kV == 2), four rows at a time (count is 8 or 16): the 16 rows' 32 accumulators do not fit in the 16
  // registers, and a loop over k outside all of them loaded and stored two for every 16 weights; four rows' 8 stay in
  // registers for the group (8 independent fma chains, which cover the fma latency where one row's 2 did not: row by
  // row was 5-20% slower), and the activations are loaded once per four rows, from L1 (fp8 5-8% faster, mxfp4 3-9%:
  // docs/benchmark-history.md#the-avx2-kernels-on-the-xeon-2026-12-02-1817). Each accumulator still takes its k in
  // increasing order. (e2m1 on AVX2: BlockSumsE2m1.)
  constexpr int kRows = 4;
  HWY_DASSERT(count % kRows == 0);
  for (int i0 = first; i0 < first + count; i0 += kRows) {
    VF s[kRows][2];
    for (int j = 0; j < kRows; ++j) s[j][0] = acc[i0 + j][0], s[j][1] = acc[i0 + j][1];
    for (std::int64_t k = k0; k < end; k += kLanes) {
      const VF a0 = hn::LoadU(df, a + k), a1 = hn::LoadU(df, a + k + 8);
#pragma GCC unroll 4
      for (int j = 0; j < kRows; ++j) {
        VF w0, w1;
        LoadWeightsPair<K, kPerGroup, kNanCheck>(rows[i0 + j], k, shift, w0, w1);
        s[j][0] = hn::MulAdd(a0, w0, s[j][0]);
        s[j][1] = hn::MulAdd(a1, w1, s[j][1]);
      }
    }
    for (int j = 0; j < kRows; ++j) acc[i0 + j][0] = s[j][0], acc[i0 + j][1] = s[j][1];
  }
#else
  {
    for (std::int64_t k = k0; k < end; k += kLanes) {
#pragma GCC unroll 16
      for (std::size_t v = 0; v < kV; ++v) {
        const std::int64_t at = k + static_cast<std::int64_t>(v * kL);
        const VF av = hn::LoadU(df, a + at);
#pragma GCC unroll 16
        for (int i = first; i < first + count; ++i) {
          acc[i][v] = hn::MulAdd(av, LoadWeights<K, kPerGroup, kNanCheck>(rows[i], at, shift), acc[i][v]);
        }
      }
    }
  }
#endif
}

// One group's products for the 16 rows: acc[i][v] += a x w over [k0, end), lane-strided.
// On 8-lane targets the e4m3 and bf16 rows go 8 at a time, each row's group asked into L2 512 bytes ahead: rows
// whose length is a multiple of 4 KiB (K = 4096 e4m3, 2048 bf16) start in the same L1 set, and 16 lines of one set
// do not fit an 8-way L1 (on AVX2 the fp8 GEMV ran at half speed at K = 4096 beside K = 2048:
// docs/benchmark-history.md#the-gemvs-on-the-avx2-kernels-after-the-l1-set-fix-2026-12-02-1050); the
// prefetch brings back what visiting the rows in two halves costs the hardware prefetchers with the weights in
// memory. On 16-lane targets, where this loop serves bf16 weights and the checked e4m3 loop, and for e2m1 on AVX2,
// the halves measured no faster or slower.
// kNanCheck = false (e4m3 on 8-lane targets, (end - k0) % 32 == 0): NaN codes decode as finite values, and the
// group's codes are looked through on the side (a running byte minimum of ~code & 0x7F, which is 0 only for a NaN
// code: one operation per 32 codes where the per-vector check takes three per 8); returns false if one was seen,
// and the caller redoes the group with the check, so the bits are the same either way.
template <WeightKind K, bool kPerGroup, bool kNanCheck = true>
HWY_INLINE bool GroupProducts(const WeightRow (&rows)[kLanes], const float* HWY_RESTRICT a, std::int64_t k0,
                              std::int64_t end, int shift, VF (&acc)[kLanes][kV]) {
  if constexpr (!MF_GEMV_ROWS_BY_8 || K == WeightKind::e2m1) {
#if MF_GEMV_PREFETCH_L2 && MF_GEMV_E2M1_LANES
    if constexpr (K == WeightKind::e2m1) {  // SSE4, SSSE3: each row's group of codes (64 bytes) ahead, as below
      for (int i = 0; i < kLanes; ++i) PrefetchRowAhead(rows[i].codes, k0 / 2, kPrefetchAhead8, rows[i].bytes);
    }
#endif
    RowProducts<K, kPerGroup>(rows, a, k0, end, shift, 0, kLanes, acc);
    return true;
  } else {
    const hn::CappedTag<std::uint8_t, 32> d8;  // up to 32 codes at a time
    const std::int64_t piece = static_cast<std::int64_t>(hn::Lanes(d8));
    auto seen = hn::Set(d8, std::uint8_t{0x7F});
    for (int half = 0; half < kLanes; half += 8) {
#if MF_GEMV_PREFETCH_L2
      for (int i = half; i < half + 8; ++i) {
        const void* row = K == WeightKind::bf16 ? static_cast<const void*>(rows[i].bf16) : rows[i].codes;
        const std::int64_t unit = K == WeightKind::bf16 ? 2 : 1;
        for (std::int64_t b = unit * k0; b < unit * end; b += 64) {
          PrefetchRowAhead(row, b, kPrefetchAhead8, rows[i].bytes);
        }
      }
#endif
      if constexpr (!kNanCheck) {
        for (int i = half; i < half + 8; ++i) {
          for (std::int64_t b = k0; b < end; b += piece) {
            seen = hn::Min(seen, hn::AndNot(hn::LoadU(d8, rows[i].codes + b), hn::Set(d8, std::uint8_t{0x7F})));
          }
        }
      }
      RowProducts<K, kPerGroup, kNanCheck>(rows, a, k0, end, shift, half, 8, acc);
    }
    return kNanCheck || hn::AllFalse(d8, hn::Eq(seen, hn::Zero(d8)));
  }
}

// One group's 16 sums into red (lane bitrev4(i) for row i). e4m3 goes optimistically first (16-lane targets:
// GroupProductsOptimistic; narrower ones: GroupProducts without the check) and again with the checked loop when the
// group holds a NaN code.
template <WeightKind K, bool kPerGroup>
HWY_INLINE void GroupSums(const WeightRow (&rows)[kLanes], const float* HWY_RESTRICT a, std::int64_t k0,
                          std::int64_t end, int shift, float* HWY_RESTRICT red) {
  const DF df;
  VF acc[kLanes][kV];
  for (auto& o : acc) {
    for (auto& v : o) v = hn::Zero(df);
  }
  bool done = false;
#if MF_GEMV_E4M3_UNCHECKED
  if constexpr (K == WeightKind::e4m3) {
    if ((end - k0) % 32 == 0) done = GroupProducts<K, kPerGroup, false>(rows, a, k0, end, shift, acc);
  }
#endif
#if MF_GEMV_E4M3_OPTIMISTIC
  if constexpr (K == WeightKind::e4m3) done = GroupProductsOptimistic<kPerGroup>(rows, a, k0, end, shift, acc);
#endif
  if (!done) {
    for (auto& o : acc) {  // again, after an optimistic pass that met a NaN code
      for (auto& v : o) v = hn::Zero(df);
    }
    GroupProducts<K, kPerGroup>(rows, a, k0, end, shift, acc);
  }
  Reduce(df, acc, red);
}

// C[row, n0 .. n0 + 16) into c from `a`, that activation row (lane order of the 1 x 16 tile: column n0 + i in lane
// bitrev4(i); e2m1 on 16-lane targets: in lane StridedTreeLane(i)).
// kPerGroup (e4m3, Problem::e4m3_per_group): `a` is the activation row times kE4m3ActScale (block->a: halved) and
// each row's factor (2^120 x scale) is applied to its group sum, times 2^-119, instead of to every weight: one
// multiply less per 16 weights. Every product (a x 2^7 times value x 2^-8, a x 2^119 times value x 2^-120, or a/2
// times value: a x value / 2 each) is the definition's product a x value x scale times 2^-1 / scale, a
// power of two, and stays normal (|a|, |value| in [2^-9, 448], scale in [2^-100, 2^7]); so does every partial and
// tree sum (multiples of 2^-19, below 2^24), and scaling by a power of two commutes with each of their roundings: the
// group sum times 2 x scale is the definition's group sum, bit for bit.
// e2m1: `a` is the activation row as it is (read by the definition's loop for a group the dot product leaves:
// block->redo) and e2m1_tables holds, per scale code, the 16 e2m1 values times its scale. Where the GEMV is batched
// (GemvBatched: e2m1 on 16-lane targets and AVX2, e4m3 where `block`) the group sums are in block->sums
// (BlockSumsOfRows made them for a batch of rows).
template <WeightKind K, bool kPerGroup = false>
void GemvBlock(const Problem& p, std::int64_t row, const float* HWY_RESTRICT a, std::int64_t n0, float* HWY_RESTRICT c,
               std::int64_t live, const float* HWY_RESTRICT e2m1_tables = nullptr, BlockSumsInputs* block = nullptr) {
  (void)e2m1_tables, (void)live, (void)block;  // read only where e2m1 rows are decoded by table; by GroupSums
  const int shift = ScaleShift<K>(p);
  WeightRow rows[kLanes];
  BlockRows<K>(p, n0, e2m1_tables, rows);
  alignas(64) float red[kLanes], s[kLanes];
  const std::int64_t groups = (p.k + p.group - 1) / p.group;
  const bool one_block_row = n0 / p.br == std::min(n0 + kLanes - 1, p.n - 1) / p.br;
  // Problem::group_scale(0, n0, g) without its calls (each spilled the accumulators): the activation's scale times
  // the weight's when applied per group (e4m3 with f32 scales; e2m1 keeps its codes inside w).
  const float* act_scales = p.act_scales.empty() ? nullptr : p.act_scales.data() + row * (p.k / kActBlock);
  const float* weight_scales = p.weight_scales.empty() || p.weight_scales_inside
                                   ? nullptr
                                   : p.weight_scales.data() + n0 / p.br * p.weight_scale_cols;
  const bool codes_outside = p.weight_scales.empty() && p.weight_scale_codes && !p.weight_scales_inside;  // none yet
  for (std::int64_t g = 0; g < groups; ++g) {
    const std::int64_t k0 = g * p.group, end = std::min(p.k, k0 + p.group);
#if MF_GEMV_BATCHED
    if constexpr (K == WeightKind::e2m1) {  // BlockSums, for every activation row of the batch at once
      if (block->redo == nullptr || !block->redo[g]) {
        std::copy(block->sums + kLanes * g, block->sums + kLanes * (g + 1), red);
      } else {  // a scale the dot product could not apply (BlockSumsE2m1DotBf16)
        GroupSumsOfDefinition<MF_GEMV_E2M1_STRIDED != 0>(p, a, n0, k0, end, red);
      }
    } else  // NOLINT(readability/braces)
#endif
        if (block != nullptr && !block->redo[g]) {
      std::copy(block->sums + kLanes * g, block->sums + kLanes * (g + 1), red);
    } else if (MF_GEMV_E4M3_TABLES && K == WeightKind::e4m3 && rows[0].scale_codes != nullptr) {  // mxfp8's redo
      GroupSumsOfDefinition(p, a, n0, k0, end, red);
    } else {
      GroupSums<K, kPerGroup>(rows, a, k0, end, shift, red);
    }
    if constexpr (kPerGroup) ApplyRowFactors(rows, k0 >> shift, red);
    // One factor for the whole row: act_scales[0, group] (or 1); or for the whole tile, when its 16 rows share a
    // weight scale block (f32 scales in 128x128 blocks).
    if (p.weight_scales.empty() || p.weight_scales_inside || one_block_row) {
      const float act = act_scales ? act_scales[g * p.group / kActBlock] : 1.0f;
      const float weight = weight_scales   ? weight_scales[g * p.group / p.bc]
                           : codes_outside ? p.weight_group_scale(n0, g)
                                           : p.weight_tensor_scale;  // 1, or nvfp4's tensor scale
      std::fill(s, s + kLanes, act * weight);
    } else {
      FillScales<1, kLanes>(p, row, n0, g, s);
    }
    ScaleAdd(c, s, red);
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace mf::gemm
HWY_AFTER_NAMESPACE();

#endif  // include guard
