// Per-target SIMD code for the GEMV: one activation row (M = 1, a decode step) or a few (GemvRowsBelow: up to 15, or 11
// on AVX2, where each decoded weight meets up to 4 rows at once; else 7, taken one by one over each block of weight
// rows): the weights go straight from their codes into the fma, with no panel in between, so each weight byte is
// read once from memory and touched by a handful of instructions per activation row.
// The arithmetic is that of gemm-inl.h's 1 x 16 register tile (and so of the definition): the same exact decoded
// weights, the same lane-strided partial sums, tree and group order.
//
// Included once per Highway target by gemm.cc, after gemm-inl.h; hence the toggle include guard.
#if defined(MINIFLOAT_SRC_CPU_GEMV_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef MINIFLOAT_SRC_CPU_GEMV_INL_H_
#undef MINIFLOAT_SRC_CPU_GEMV_INL_H_
#else
#define MINIFLOAT_SRC_CPU_GEMV_INL_H_
#endif

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "../ref/gemm_problem.h"
#include "column_queue.h"
#include "gemm_dispatch.h"
#include "hwy/aligned_allocator.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace mf::gemm {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// AVX3_DL or newer: AVX512-VBMI's byte permutes (Highway takes AVX3_DL only on a CPU with VBMI, VBMI2, VNNI,
// BITALG, VPOPCNTDQ, VAES and VPCLMULQDQ).
#undef MF_GEMV_VBMI
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3_DL
#define MF_GEMV_VBMI 1
#else
#define MF_GEMV_VBMI 0
#endif
#undef MF_GEMV_LANES_BLOCKS

// How LoadWeights decodes e4m3: through fp16 (F16C: AVX2 and newer) to value x 2^-8, never an f32 subnormal; on
// narrower targets the fields moved into f32 place, value x 2^-120 (an f32 subnormal for a subnormal code, which
// costs a microcode assist per fma on Intel's cores: docs/gemm.md). With per-group factors the activations carry the
// rest of 2^-1 (kE4m3ActScale), so that every product is a x value / 2 either way.
#undef MF_GEMV_E4M3_HALF
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2
#define MF_GEMV_E4M3_HALF 1
#else
#define MF_GEMV_E4M3_HALF 0
#endif
constexpr float kE4m3ActScale = MF_GEMV_E4M3_HALF ? 0x1p7f : 0x1p119f;

#if HWY_ARCH_X86
// Asks for the line `ahead` bytes past `row` into L2: a block's 16 row streams are slow (a group's bytes per row at
// a time) and short (one row), and the hardware prefetchers follow them late when the weights come from memory
// (docs/benchmark-history.md). An address past the weights is never read, and its prefetch does not fault (hence
// the integer arithmetic). Raw: hwy::Prefetch asks for L1 only.
HWY_INLINE void PrefetchAhead(const void* row, std::int64_t ahead) {
  const auto at = reinterpret_cast<std::uintptr_t>(row) + static_cast<std::uintptr_t>(ahead);
  _mm_prefetch(reinterpret_cast<const char*>(at), _MM_HINT_T1);
}
// The line `ahead` bytes past byte `at` of a weight row of `row_bytes`; once that lies past the row's end, the same
// distance into the row 16 rows on instead: the next block of 16 rows, which this thread reads next within its chunk
// of the queue (rows lie K apart, blocks 16 rows apart; past the chunk, or past the weights, the prefetch is wasted
// but harmless). A block's rows are short streams (one to four pages), and without it each started
// with 16 rows of misses that nothing had asked for, the lines the prefetch above had fetched past a row's end
// being the next row's, which the block was already reading (mxfp4 at 7168 x 2048 with the weights streamed 1.23x
// as fast, 4096 x 4096 1.04-1.09x; fp8 within 0-5%:
// docs/benchmark-history.md#block-scaled-gemv-and-gemm-2026-12-03-1000).
HWY_INLINE void PrefetchRowAhead(const void* row, std::int64_t at, std::int64_t ahead, std::int64_t row_bytes) {
  std::int64_t to = at + ahead;
  if (to >= row_bytes) to += (kLanes - 1) * row_bytes;
  PrefetchAhead(row, to);
}
// How far ahead: 512 bytes for the 8-lane loops (measured on Zen 4: docs/benchmark-history.md); 256 for the 16-lane
// e4m3 loops (table and AVX512-BF16) and the e2m1 loop: with the weights streamed on the Sapphire Rapids-class Xeon,
// 256 beat 128, 512, 1024 and 2048, by 12-21% over 512 for the dot product, 5-10% for the GFNI loop the table loop
// replaced, and 2-12% over no prefetch for e2m1
// (docs/benchmark-history.md#which-fp8-gemv-loop-and-how-far-ahead-to-prefetch-2026-12-02-1405-1425); the table loop
// with none ran 0.48-0.77x streamed (docs/benchmark-history.md#subnormal-weight-codes-2026-12-03-1315).
constexpr std::int64_t kPrefetchAhead8 = 512, kPrefetchAhead16 = 256;
#endif

// Floats per scale code in the e2m1 GEMV's tables (E2m1Tables): AVX2 decodes by codec::E2m1x8Table's eight, the
// 16-lane targets by the 16 e2m1 values times the scale.
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2 && !MF_GEMM_WIDE
constexpr std::size_t kE2m1TableSize = 8;
#else
constexpr std::size_t kE2m1TableSize = 16;
#endif

// Activation rows whose products one pass over a block's weights makes (BlockSumsOfRows), and the weight rows each
// pass of the e4m3 loops takes at a time for kBatch of them, so that their sums (rows x batch vectors), the decoded
// weights and the byte tables fit in the 32 vector registers.
constexpr std::size_t kGemvBatch = 4;
template <int kBatch>
constexpr int kGemvPassRows = kBatch <= 2 ? 8 : 4;
// AVX2's 16 registers: 4 weight rows (8 accumulators) for one activation row, 2 for two, 1 for three or four.
template <int kBatch>
constexpr int kGemvPassRows8 = kBatch == 1 ? 4 : kBatch == 2 ? 2 : 1;

// One weight row as the GEMV reads it: its codes (or bf16 bits) and its scales.
struct WeightRow {
  const std::uint8_t* codes;
  const std::uint16_t* bf16;
  const float* scales;  // e4m3: the row's factors (Problem::e4m3_factor)
  // e2m1: the row's ue8m0 codes (Problem::weight_scale_codes, read through weight_scale_table)
  const std::uint8_t* scale_codes;
  const float* weight_scale_table;            // e2m1: Problem::weight_scale_table
  const float* e2m1_tables = nullptr;  // e2m1 on AVX2: per scale code, the 16 e2m1 values times it (E2m1Tables)
  std::int64_t bytes = 0;              // the row's length in bytes (codes or bf16)
};

// scale_row: row / p.br (e4m3 with its scales inside; BlockRows keeps it without a division per row).
template <WeightKind K>
HWY_INLINE WeightRow RowOf(const Problem& p, std::int64_t row, std::int64_t scale_row) {
  if constexpr (K == WeightKind::bf16) {
    return {nullptr, p.w_bf16 + row * p.k, nullptr, nullptr, nullptr, nullptr, 2 * p.k};
  }
  if constexpr (K == WeightKind::e2m1) {
    return {p.codes + row * p.k / 2, nullptr, nullptr, p.weight_scale_codes + row * p.weight_scale_cols,
            p.weight_scale_table.data(), nullptr, p.k / 2};
  }
  const std::int64_t factors = p.weight_scales_inside ? scale_row * p.weight_scale_cols : 0;
  return {p.codes + row * p.k, nullptr, p.e4m3_factor.data() + factors, nullptr, nullptr, nullptr, p.k};
}

// kL lanes of w[row, k..] exactly as Problem::weight gives them. e4m3: through fp16 the value times 2^-8
// (codec::DecodeE4m3Half), or the code, sign-extended, shifted so that its fields sit where f32's do (bits 20-26,
// sign at 31): the value times 2^-120 (an f32 subnormal for subnormal codes, as exact); one product by 2^120 x
// scale times 2^-112 or 1 gives value * scale exactly (it is representable); NaN codes are put back after.
// kNanCheck = false leaves NaN codes as finite values: for callers that look for them another way.
template <WeightKind K, bool kPerGroup = false, bool kNanCheck = true>
HWY_INLINE VF LoadWeights(const WeightRow& r, std::int64_t k, int shift) {
  const DF df;
  if constexpr (K == WeightKind::bf16) {
    const hn::Rebind<std::uint16_t, DF> d16;
    return hn::BitCast(df, hn::ShiftLeft<16>(hn::PromoteTo(DU(), hn::LoadU(d16, r.bf16 + k))));
  } else if constexpr (K == WeightKind::e4m3) {
    const DI di;
    const hn::Rebind<std::int8_t, DF> d8;
#if MF_GEMV_E4M3_HALF
    // kPerGroup: value x 2^-8 as it is; the activations carry 2^7 and the group's sum the rest.
    const VF half = codec::DecodeE4m3Half(df, r.codes + k);
    const VF v = kPerGroup ? half : hn::Mul(half, hn::Set(df, r.scales[k >> shift] * 0x1p-112f));
    const auto c = hn::PromoteTo(di, hn::LoadU(d8, reinterpret_cast<const std::int8_t*>(r.codes + k)));
#else
    const auto c = hn::PromoteTo(di, hn::LoadU(d8, reinterpret_cast<const std::int8_t*>(r.codes + k)));
    const auto bits = codec::DecodeE4m3Placed(di, c);
    // kPerGroup: the bits as they are (value x 2^-120); the activations carry 2^119 and the group's sum the rest.
    // (Here only on SSE4 and narrower.)
    const VF v = kPerGroup ? hn::BitCast(df, bits) : hn::Mul(hn::BitCast(df, bits), hn::Set(df, r.scales[k >> shift]));
#endif
    if constexpr (!kNanCheck) return v;
    const auto nan = hn::RebindMask(df, codec::E4m3IsNan(di, c));
    return hn::IfThenElse(nan, hn::Set(df, std::numeric_limits<float>::quiet_NaN()), v);
  } else {
    // e2m1 on SSE4 and SSSE3 (16-lane targets and AVX2 decode in BlockSumsE2m1): value x scale.
    static_assert(K == WeightKind::e2m1);
#if !MF_GEMM_WIDE && HWY_TARGET != HWY_SCALAR
    const float scale = r.weight_scale_table[r.scale_codes[k >> shift]];
    return hn::Mul(codec::DecodeE2m1Lanes(df, r.codes + k / 2), hn::Set(df, scale));
#else
    (void)r, (void)k, (void)shift;
    return hn::Zero(df);
#endif
  }
}

// LoadWeights at k and k + kL, for the loops that look for NaN codes on the side: e4m3 through fp16 converts the
// 2 kL codes with one shift and mask.
template <WeightKind K, bool kPerGroup, bool kNanCheck>
HWY_INLINE void LoadWeightsPair(const WeightRow& r, std::int64_t k, int shift, VF& w0, VF& w1) {
#if MF_GEMV_E4M3_HALF
  if constexpr (K == WeightKind::e4m3 && !kNanCheck) {
    const DF df;
    codec::DecodeE4m3Halves(df, r.codes + k, w0, w1);
    if constexpr (!kPerGroup) {
      w0 = hn::Mul(w0, hn::Set(df, r.scales[k >> shift] * 0x1p-112f));
      w1 = hn::Mul(w1, hn::Set(df, r.scales[(k + static_cast<std::int64_t>(kL)) >> shift] * 0x1p-112f));
    }
    return;
  }
#endif
  w0 = LoadWeights<K, kPerGroup, kNanCheck>(r, k, shift);
  w1 = LoadWeights<K, kPerGroup, kNanCheck>(r, k + static_cast<std::int64_t>(kL), shift);
}

// Rows [first, first + count) of GroupProducts.
template <WeightKind K, bool kPerGroup, bool kNanCheck = true>
HWY_INLINE void RowProducts(const WeightRow (&rows)[kLanes], const float* HWY_RESTRICT a, std::int64_t k0,
                            std::int64_t end, int shift, int first, int count, VF (&acc)[kLanes][kV]) {
  const DF df;
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2 && !MF_GEMM_WIDE
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
  if constexpr (MF_GEMM_WIDE || K == WeightKind::e2m1) {
#if HWY_ARCH_X86 && !MF_GEMM_WIDE
    if constexpr (K == WeightKind::e2m1) {  // AVX2: each row's group of codes (64 bytes) ahead, as the loops below
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
#if HWY_ARCH_X86
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

#if MF_GEMM_WIDE
using D8 = hn::Repartition<std::uint8_t, DF>;  // a vector of weight codes

// The codes of a line from `line` to `stop` (up to 64) to load; bytes past them load as 0, which is not a NaN code.
HWY_INLINE hn::Mask<D8> LineCodes(std::int64_t line, std::int64_t stop) {
  return hn::FirstN(D8(), static_cast<std::size_t>(stop - line));
}
// Folds a line's codes (`in`: LineCodes) into `seen`, the running minimum of ~code & 0x7F: 0 once a NaN code (0x7F,
// 0xFF) was seen.
HWY_INLINE void SeeCodes(const std::uint8_t* line, hn::Mask<D8> in, hn::Vec<D8>& seen) {
  const D8 d8;
  seen = hn::Min(seen, hn::AndNot(hn::MaskedLoad(in, d8, line), hn::Set(d8, std::uint8_t{0x7F})));
}
HWY_INLINE bool SawNoNan(hn::Vec<D8> seen) { return hn::AllFalse(D8(), hn::Eq(seen, hn::Zero(D8()))); }

// GroupProducts<e4m3, kPerGroup> for 16-lane targets that decodes without the per-vector NaN check and looks for
// NaN codes (0x7F, 0xFF) on the side: two operations per 64 codes (a running byte minimum of ~code & 0x7F, which is
// 0 only for a NaN code), where the check takes three per 16. Returns false if the group holds a NaN code: its sums
// are then wrong and the caller redoes the group with the checked loop, so the bits are the same either way. NaN
// codes are rare in real weights (docs/benchmark-history.md measures the gain).
template <bool kPerGroup>
HWY_INLINE bool GroupProductsOptimistic(const WeightRow (&rows)[kLanes], const float* HWY_RESTRICT a,
                                        std::int64_t k0, std::int64_t end, int shift, VF (&acc)[kLanes][kV]) {
  const DF df;
  auto seen = hn::Set(D8(), std::uint8_t{0x7F});
  for (std::int64_t line = k0; line < end; line += 64) {
    const std::int64_t stop = std::min(end, line + 64);
    const auto in = LineCodes(line, stop);
#pragma GCC unroll 16
    for (int i = 0; i < kLanes; ++i) SeeCodes(rows[i].codes + line, in, seen);
    std::int64_t k = line;
    for (; k + 2 * kLanes <= stop; k += 2 * kLanes) {
      const VF a0 = hn::LoadU(df, a + k), a1 = hn::LoadU(df, a + k + kLanes);
#pragma GCC unroll 16
      for (int i = 0; i < kLanes; ++i) {
        VF w0, w1;
        LoadWeightsPair<WeightKind::e4m3, kPerGroup, false>(rows[i], k, shift, w0, w1);
        acc[i][0] = hn::MulAdd(a1, w1, hn::MulAdd(a0, w0, acc[i][0]));
      }
    }
    if (k < stop) {  // a group of 16 values, or one ending in 16
      const VF av = hn::LoadU(df, a + k);
#pragma GCC unroll 16
      for (int i = 0; i < kLanes; ++i) {
        acc[i][0] = hn::MulAdd(av, LoadWeights<WeightKind::e4m3, kPerGroup, false>(rows[i], k, shift), acc[i][0]);
      }
    }
  }
  return SawNoNan(seen);
}

#if MF_GEMV_VBMI
// The sums of every group of a 16-row block (GemvBlock) on AVX3_DL, for e4m3 weights whose groups are whole lines of 64
// codes: the codes decoded by table to their f32 values (codec::DecodeE4m3x64), which are never f32 subnormals, into
// one fma per weight in the definition's order. The GFNI decode this replaced gave value x 2^-120, an f32 subnormal for
// each subnormal code, and Intel's cores take a microcode assist for every fma that reads one: on the Sapphire
// Rapids-class Xeon a GEMV whose 128 x 128 blocks each held a 100-sigma outlier (0.42% subnormal codes) ran at a third
// of the Gaussian speed (docs/gemm.md). This loop's speed does not depend on the values, and NaN codes decode to NaN
// and reach their sums as in the definition, so no look on the side. kPerGroup: `a` is the activation row halved
// (exact) and each row's factor goes on the group sum as for the other loops (a/2 x value is a x 2^119 x value x
// 2^-120, so the sums are theirs bit for bit); otherwise `a` is the row as it is and each 32-value block's weights are
// multiplied by their power-of-two scale (the row's factor times 2^-120: value x scale, exact, the definition's weight;
// scale blocks at least 32 wide, GemvInputsOf). Lines wholly past `live` (zero activations) are only looked through for
// NaN codes: redo[g] = 1 where one was seen (the caller redoes the group with the checked loop). For kBatch activation
// rows at once (a[b]), each decoded vector meeting every one (kGemvPassRows weight rows at a time): sums[16 (b x groups
// + g) + bitrev4(i)] holds group g of weight row i for activation row b, and redo[b x groups + g] its flag (`live` is
// the batch's: batches skip different lines, so each row keeps its own). group % 64 == 0, k % group == 0.
template <bool kPerGroup, int kBatch>
HWY_NOINLINE void BlockSumsTables(const WeightRow (&rows)[kLanes], const float* const* HWY_RESTRICT a,
                                  std::int64_t k, std::int64_t group, std::int64_t live, int shift,
                                  float* HWY_RESTRICT sums, std::uint8_t* HWY_RESTRICT redo) {
  const DF df;
  const auto whole = LineCodes(0, 64);
  constexpr int kRows = kGemvPassRows<kBatch>;
  const std::int64_t groups = k / group;
  for (std::int64_t k0 = 0, g = 0; k0 < k; k0 += group, ++g) {
    auto seen = hn::Set(D8(), std::uint8_t{0x7F});
    VF acc[kBatch][kLanes][kV];
    for (int pass = 0; pass < kLanes; pass += kRows) {  // their pointers and sums stay in registers
      const std::uint8_t* codes[kRows];
      for (int i = 0; i < kRows; ++i) codes[i] = rows[pass + i].codes;
      VF sum[kBatch][kRows];
      for (auto& b : sum) {
        for (VF& v : b) v = hn::Zero(df);
      }
      for (std::int64_t line = k0; line < k0 + group; line += 64) {
        if (line >= live) {
          for (int i = 0; i < kRows; ++i) SeeCodes(codes[i] + line, whole, seen);
          continue;
        }
        VF av[4];  // one activation row's line, held in registers (kBatch = 1)
        if constexpr (kBatch == 1) {
          for (int j = 0; j < 4; ++j) av[j] = hn::LoadU(df, a[0] + line + 16 * j);
        }
#pragma GCC unroll 8
        for (int i = 0; i < kRows; ++i) {
          PrefetchRowAhead(codes[i], line, kPrefetchAhead16, rows[pass + i].bytes);
          VF w0, w1, w2, w3;
          codec::DecodeE4m3x64(codes[i] + line, w0, w1, w2, w3);
          if constexpr (!kPerGroup) {
            const float* factors = rows[pass + i].scales;
            const VF first = hn::Set(df, factors[line >> shift] * 0x1p-120f);
            const VF second = hn::Set(df, factors[(line + 32) >> shift] * 0x1p-120f);
            w0 = hn::Mul(w0, first), w1 = hn::Mul(w1, first), w2 = hn::Mul(w2, second), w3 = hn::Mul(w3, second);
          }
          if constexpr (kBatch == 1) {
            sum[0][i] = hn::MulAdd(av[1], w1, hn::MulAdd(av[0], w0, sum[0][i]));
            sum[0][i] = hn::MulAdd(av[3], w3, hn::MulAdd(av[2], w2, sum[0][i]));
          } else {
#pragma GCC unroll 4
            for (int b = 0; b < kBatch; ++b) {
              const float* ab = a[b] + line;
              sum[b][i] = hn::MulAdd(hn::LoadU(df, ab + 16), w1, hn::MulAdd(hn::LoadU(df, ab), w0, sum[b][i]));
              sum[b][i] = hn::MulAdd(hn::LoadU(df, ab + 48), w3, hn::MulAdd(hn::LoadU(df, ab + 32), w2, sum[b][i]));
            }
          }
        }
      }
      for (int b = 0; b < kBatch; ++b) {
        for (int i = 0; i < kRows; ++i) acc[b][pass + i][0] = sum[b][i];
      }
    }
    for (int b = 0; b < kBatch; ++b) hn::StoreU(ReduceTile(df, acc[b]), df, sums + kLanes * (b * groups + g));
    const std::uint8_t nan_skipped = !SawNoNan(seen);
    for (int b = 0; b < kBatch; ++b) redo[b * groups + g] = nan_skipped;
  }
}

// AVX512-BF16's dot product (vdpbf16ps) adds to f32 lane i the product of bf16 words 2i + 1, rounded, then that of
// words 2i, rounded: two fmas, as Intel's manual writes it, with denormal inputs and outputs read and written as zero.
// A CPU may round the two products' sum once instead; this checks, once, on 4096 lanes of random normal inputs
// whose sums round differently in the two ways, that this one rounds twice in that order (Zen 4 does), and the
// e4m3 GEMV uses the instruction only then (and only while tests and benchmarks allow it: gemm_dispatch.h).
HWY_NOINLINE __attribute__((target(HWY_TARGET_STR ",avx512bf16"))) bool DotBf16ProbeMatches() {
  std::uint32_t state = 12345;
  const auto next = [&state] { return state = state * 1664525u + 1013904223u; };
  const auto bf16 = [&] {  // sign, exponent in [2^-17, 2^12], 7 random mantissa bits
    const std::uint32_t r = next();
    return static_cast<std::uint16_t>((r >> 31) << 15 | (110 + (r >> 8) % 30) << 7 | (r & 0x7F));
  };
  const auto widen = [](std::uint16_t b) { return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16); };
  for (int round = 0; round < 256; ++round) {
    alignas(64) std::uint16_t x[32], y[32];
    alignas(64) float acc[16], out[16];
    for (int i = 0; i < 32; ++i) x[i] = bf16(), y[i] = bf16();
    for (float& v : acc) v = std::ldexp(static_cast<float>(next() >> 8), -static_cast<int>(next() % 40));
    _mm512_store_ps(out, _mm512_dpbf16_ps(_mm512_load_ps(acc), (__m512bh)_mm512_load_si512(x),
                                          (__m512bh)_mm512_load_si512(y)));
    for (int i = 0; i < 16; ++i) {
      const float twice = std::fma(widen(x[2 * i]), widen(y[2 * i]),
                                   std::fma(widen(x[2 * i + 1]), widen(y[2 * i + 1]), acc[i]));
      if (std::bit_cast<std::uint32_t>(out[i]) != std::bit_cast<std::uint32_t>(twice)) return false;
    }
  }
  return true;
}
HWY_INLINE bool CpuDotBf16RoundsTwice() {
  static const bool has = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512bf16") && DotBf16ProbeMatches();
  }();
  return has;
}

// The sums of every group of a 16-row block (GemvBlock), multiplied with AVX512-BF16's dot product where
// CpuDotBf16RoundsTwice(), for e4m3 weights with per-group factors: the codes become their exact values as bf16
// (DecodeE4m3x64Bf16Pairs), `pairs` holds the activations times 2^-1 as bf16 in the same pairs (DotBf16Pairs), and each
// dot product adds, to lane i, the products of k and then k + 16 (k = i mod 16), each rounded: the fmas of the
// definition in its order. Every input is a normal bf16 (|a| / 2 and |value| in [2^-10, 448]) and every product and sum
// a multiple of 2^-19 below 2^24, so the instruction's flush of denormals never acts, and each group's tree sum is
// GroupSums' (a x value / 2) bit for bit. 32 products per instruction where the fma makes 16, and 8 operations per 64
// weights where BlockSumsTables takes 14 (with its fmas); the tree runs in registers, group after group, with no call
// in between. NaN codes decode to NaN and reach the sums as in the definition; only lines wholly past `live` (zero
// activations) are skipped and looked through for NaN codes: redo[g] = 1 where one was seen (the caller redoes the
// group with the checked loop). For kBatch activation rows at once (pairs[b]) as BlockSumsTables: sums[16 (b x groups +
// g) + bitrev4(i)], redo[b x groups + g]. group % 64 == 0, k % group == 0.
template <int kBatch>
HWY_NOINLINE __attribute__((target(HWY_TARGET_STR ",avx512bf16"))) void BlockSumsDotBf16(
    const WeightRow (&rows)[kLanes], const std::uint16_t* const* HWY_RESTRICT pairs, std::int64_t k,
    std::int64_t group, std::int64_t live, float* HWY_RESTRICT sums, std::uint8_t* HWY_RESTRICT redo) {
  const DF df;
  const auto whole = LineCodes(0, 64);
  constexpr int kRows = kGemvPassRows<kBatch>;
  const std::int64_t groups = k / group;
  for (std::int64_t k0 = 0, g = 0; k0 < k; k0 += group, ++g) {
    auto seen = hn::Set(D8(), std::uint8_t{0x7F});
    VF acc[kBatch][kLanes][kV];
    for (int pass = 0; pass < kLanes; pass += kRows) {
      const std::uint8_t* codes[kRows];
      for (int i = 0; i < kRows; ++i) codes[i] = rows[pass + i].codes;
      __m512 dots[kBatch][kRows];
      for (auto& b : dots) {
        for (__m512& d : b) d = _mm512_setzero_ps();
      }
      for (std::int64_t line = k0; line < k0 + group; line += 64) {
        if (line >= live) {
          for (int i = 0; i < kRows; ++i) SeeCodes(codes[i] + line, whole, seen);
          continue;
        }
#pragma GCC unroll 8
        for (int i = 0; i < kRows; ++i) {
          PrefetchRowAhead(codes[i], line, kPrefetchAhead16, rows[pass + i].bytes);
          __m512i w0, w1;
          codec::DecodeE4m3x64Bf16Pairs(codes[i] + line, w0, w1);
#pragma GCC unroll 4
          for (int b = 0; b < kBatch; ++b) {
            const __m512bh a0 = (__m512bh)_mm512_loadu_si512(pairs[b] + line);
            const __m512bh a1 = (__m512bh)_mm512_loadu_si512(pairs[b] + line + 32);
            dots[b][i] = _mm512_dpbf16_ps(_mm512_dpbf16_ps(dots[b][i], (__m512bh)w0, a0), (__m512bh)w1, a1);
          }
        }
      }
      for (int b = 0; b < kBatch; ++b) {
        for (int i = 0; i < kRows; ++i) acc[b][pass + i][0] = VF{dots[b][i]};
      }
    }
    for (int b = 0; b < kBatch; ++b) hn::StoreU(ReduceTile(df, acc[b]), df, sums + kLanes * (b * groups + g));
    const std::uint8_t nan_skipped = !SawNoNan(seen);
    for (int b = 0; b < kBatch; ++b) redo[b * groups + g] = nan_skipped;
  }
}

// The activation row as BlockSumsDotBf16 reads it: for each 32 values from c, word c + 2i holds a[c + 16 + i] / 2
// and word c + 2i + 1 holds a[c + i] / 2, as bf16 (NaN: a quiet NaN). False where that path does not run: no such
// CPU, not allowed, other weights, groups not whole lines, or an activation that is no e4m3 value (never from
// act_quant).
HWY_INLINE bool DotBf16Pairs(const Problem& p, const float* a, std::vector<std::uint16_t>& pairs) {
  if (p.kind != WeightKind::e4m3 || !p.e4m3_per_group || p.group % 64 != 0 || p.k % p.group != 0 ||
      !gemv_e4m3_bf16_dot_chosen() || !CpuDotBf16RoundsTwice()) {
    return false;
  }
  pairs.resize(static_cast<std::size_t>(p.k));
  for (std::int64_t c = 0; c < p.k; c += 32) {
    for (std::int64_t i = 0; i < 32; ++i) {
      const float half = a[c + i] * 0.5f;
      const std::uint32_t bits = std::bit_cast<std::uint32_t>(half);
      if (!std::isnan(half) && ((bits & 0xFFFF) != 0 || (half != 0.0f && std::fabs(half) < 0x1p-10f))) {
        return false;
      }
      const auto word = static_cast<std::uint16_t>(std::isnan(half) ? 0x7FC0 : bits >> 16);
      pairs[static_cast<std::size_t>(c + (i < 16 ? 2 * i + 1 : 2 * (i - 16)))] = word;
    }
  }
  return true;
}
#endif  // MF_GEMV_VBMI
#endif  // MF_GEMM_WIDE

#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2 && !MF_GEMM_WIDE
#define MF_GEMV_LANES_BLOCKS 1
// AVX2: 16 e4m3 codes -> their two vectors of weights. kFields: the fields moved into f32 place, value x 2^-120
// (codec::DecodeE4m3Placed: an f32 subnormal for a subnormal code): per 8 codes a sign-extending load, a shift and an
// and, which Zen 3 runs in 1.4 cycles with the fma where the fp16 route (codec::DecodeE4m3Halves, value x 2^-8) takes
// 2 (docs/benchmark-history.md#the-avx2-fp8-gemv-block-by-block-and-its-two-decodes-2026-12-03-1555-1640). NaN codes
// come out finite either way.
template <bool kFields>
HWY_INLINE void DecodeE4m3Pair(const std::uint8_t* codes, VF& w0, VF& w1) {
  const DF df;
  if constexpr (kFields) {
    const DI di;
    const hn::Rebind<std::int8_t, DF> d8;
    const auto* c = reinterpret_cast<const std::int8_t*>(codes);
    w0 = hn::BitCast(df, codec::DecodeE4m3Placed(di, hn::PromoteTo(di, hn::LoadU(d8, c))));
    w1 = hn::BitCast(df, codec::DecodeE4m3Placed(di, hn::PromoteTo(di, hn::LoadU(d8, c + 8))));
  } else {
    codec::DecodeE4m3Halves(df, codes, w0, w1);
  }
}

// The sums of every group of a 16-row block (GemvBlock) on AVX2, for e4m3 weights with per-group factors whose groups
// are whole lines of 64 codes, for kBatch activation rows at once (a[b]): kGemvPassRows8 weight rows at a time (their
// 8 accumulators stay in registers), each decoded vector meeting every activation row, one fma per weight and row in
// the definition's order, and the tree (ReduceAvx2) once per group and row. Each row's line is asked into L2 and looked
// through for NaN codes in the pass that multiplies it (running unsigned and signed byte maxima, which reach 0xFF or
// 0x7F only where a NaN code was seen: two operations per 32 codes), where GroupProducts' separate loops over the
// group for both took a third of the time with the weights in L2 on Zen 3. `a` is the activation row times 2^119
// (kFields) or 2^7 (fp16), so that every product is a x value / 2 as in GroupSums, bit for bit. Lines wholly past
// `live` (zero activations) are only looked through. redo[g] = 1 where group g holds a NaN code (the caller redoes it
// with the checked loop). sums[16 (b x groups + g) + bitrev4(i)]: group g of weight row i for activation row b;
// redo[b x groups + g]. group % 64 == 0, k % group == 0.
template <bool kFields, int kBatch>
HWY_NOINLINE void BlockSumsLanes(const WeightRow (&rows)[kLanes], const float* const* HWY_RESTRICT a, std::int64_t k,
                                 std::int64_t group, std::int64_t live, float* HWY_RESTRICT sums,
                                 std::uint8_t* HWY_RESTRICT redo) {
  const DF df;
  const hn::Full256<std::uint8_t> du8;
  const hn::Full256<std::int8_t> di8;
  constexpr int kRows = kGemvPassRows8<kBatch>;
  const std::int64_t groups = k / group;
  for (std::int64_t k0 = 0, g = 0; k0 < k; k0 += group, ++g) {
    auto seen_u = hn::Zero(du8);
    auto seen_s = hn::Set(di8, std::int8_t{-128});
    VF acc[kBatch][kLanes][kV];
    for (int pass = 0; pass < kLanes; pass += kRows) {
      const std::uint8_t* codes[kRows];
      for (int j = 0; j < kRows; ++j) codes[j] = rows[pass + j].codes;
      VF s[kRows][kBatch][2];
      for (auto& r : s) {
        for (auto& v : r) v[0] = v[1] = hn::Zero(df);
      }
      for (std::int64_t line = k0; line < k0 + group; line += 64) {
#pragma GCC unroll 4
        for (int j = 0; j < kRows; ++j) {
          const std::uint8_t* at = codes[j] + line;
          if (line < live) PrefetchRowAhead(codes[j], line, kPrefetchAhead8, rows[pass + j].bytes);
          seen_u = hn::Max(seen_u, hn::Max(hn::LoadU(du8, at), hn::LoadU(du8, at + 32)));
          const auto* signed_at = reinterpret_cast<const std::int8_t*>(at);
          seen_s = hn::Max(seen_s, hn::Max(hn::LoadU(di8, signed_at), hn::LoadU(di8, signed_at + 32)));
        }
        if (line >= live) continue;
#pragma GCC unroll 4
        for (std::int64_t step = 0; step < 64; step += kLanes) {
          if constexpr (kBatch == 1) {  // the activations loaded once per step for the four rows
            const VF a0 = hn::LoadU(df, a[0] + line + step), a1 = hn::LoadU(df, a[0] + line + step + 8);
#pragma GCC unroll 4
            for (int j = 0; j < kRows; ++j) {
              VF w0, w1;
              DecodeE4m3Pair<kFields>(codes[j] + line + step, w0, w1);
              s[j][0][0] = hn::MulAdd(a0, w0, s[j][0][0]);
              s[j][0][1] = hn::MulAdd(a1, w1, s[j][0][1]);
            }
          } else {
#pragma GCC unroll 4
            for (int j = 0; j < kRows; ++j) {
              VF w0, w1;
              DecodeE4m3Pair<kFields>(codes[j] + line + step, w0, w1);
#pragma GCC unroll 4
              for (int b = 0; b < kBatch; ++b) {
                s[j][b][0] = hn::MulAdd(hn::LoadU(df, a[b] + line + step), w0, s[j][b][0]);
                s[j][b][1] = hn::MulAdd(hn::LoadU(df, a[b] + line + step + 8), w1, s[j][b][1]);
              }
            }
          }
        }
      }
      for (int j = 0; j < kRows; ++j) {
        for (int b = 0; b < kBatch; ++b) acc[b][pass + j][0] = s[j][b][0], acc[b][pass + j][1] = s[j][b][1];
      }
    }
    for (int b = 0; b < kBatch; ++b) ReduceAvx2(acc[b], sums + kLanes * (b * groups + g));
    const std::uint8_t nan_seen = !hn::AllFalse(du8, hn::Eq(seen_u, hn::Set(du8, std::uint8_t{0xFF}))) ||
                                  !hn::AllFalse(di8, hn::Eq(seen_s, hn::Set(di8, std::int8_t{0x7F})));
    for (int b = 0; b < kBatch; ++b) redo[b * groups + g] = nan_seen;
  }
}

// The sums of every group of a 16-row block of e2m1 weights on AVX2, for kBatch activation rows at once: 32 weights
// per row and step, which share one scale (fp4_problem takes 1x32 blocks only) and so one table (E2m1Tables; one
// look-up where two per 16 weights was 5-10% slower in L2 on the AVX2 target: codec::DecodeE2m1x8Table), each
// decoded vector meeting every row of the batch, and the tree (ReduceAvx2) once per group per row.
// sums[16 (b x groups + g) + bitrev4(i)]: group g of weight row i for activation row b.
template <int kBatch>
HWY_NOINLINE void BlockSumsE2m1(const WeightRow (&rows)[kLanes], const float* const* HWY_RESTRICT a, std::int64_t k,
                                int shift, const float* HWY_RESTRICT e2m1_tables, float* HWY_RESTRICT sums) {
  (void)e2m1_tables;  // in each row (BlockRows)
  const DF df;
  constexpr int kRows = kGemvPassRows8<kBatch>;
  const std::int64_t groups = k / kActBlock;
  for (std::int64_t k0 = 0, g = 0; k0 < k; k0 += kActBlock, ++g) {
    VF acc[kBatch][kLanes][kV];
    for (int pass = 0; pass < kLanes; pass += kRows) {
      VF s[kRows][kBatch][2];
      for (auto& r : s) {
        for (auto& v : r) v[0] = v[1] = hn::Zero(df);
      }
      for (std::int64_t kk = k0; kk < k0 + kActBlock; kk += 2 * kLanes) {
        VF av[4];  // one activation row's 32 values, loaded once for the four weight rows (kBatch = 1)
        if constexpr (kBatch == 1) {
          for (int q = 0; q < 4; ++q) av[q] = hn::LoadU(df, a[0] + kk + 8 * q);
        }
#pragma GCC unroll 4
        for (int j = 0; j < kRows; ++j) {
          const WeightRow& r = rows[pass + j];
          const float* table = r.e2m1_tables + kE2m1TableSize * r.scale_codes[kk >> shift];
          const std::uint8_t* codes = r.codes + kk / 2;
          if (kk == k0) PrefetchRowAhead(r.codes, kk / 2, kPrefetchAhead8, r.bytes);
#pragma GCC unroll 4
          for (int q = 0; q < 4; ++q) {
            const VF w = codec::DecodeE2m1x8Table(codes + 4 * q, table);
            if constexpr (kBatch == 1) {
              s[j][0][q % 2] = hn::MulAdd(av[q], w, s[j][0][q % 2]);
            } else {
#pragma GCC unroll 4
              for (int b = 0; b < kBatch; ++b) {
                s[j][b][q % 2] = hn::MulAdd(hn::LoadU(df, a[b] + kk + 8 * q), w, s[j][b][q % 2]);
              }
            }
          }
        }
      }
      for (int j = 0; j < kRows; ++j) {
        for (int b = 0; b < kBatch; ++b) acc[b][pass + j][0] = s[j][b][0], acc[b][pass + j][1] = s[j][b][1];
      }
    }
    for (int b = 0; b < kBatch; ++b) ReduceAvx2(acc[b], sums + kLanes * (b * groups + g));
  }
}
#else
#define MF_GEMV_LANES_BLOCKS 0
#endif
// Whether GemvColumns makes the group sums of e2m1 (and of e4m3 where E4m3Batched) for a batch of rows at once.
#undef MF_GEMV_BATCHED
#define MF_GEMV_BATCHED (MF_GEMM_WIDE || MF_GEMV_LANES_BLOCKS)

#if MF_GEMM_WIDE
// The sums of every group of a 16-row block of e2m1 weights on 16-lane targets, for kBatch activation rows at once
// (a[b]: row b in the strided lane order, StridedActivations): one 1x32 block per step, two 8-byte loads and the
// block's scaled table per weight row, decoded once for all kBatch rows (codec::DecodeE2m1x32Strided), so that
// accumulator lane 2q sums k = q mod 16 and lane 2q + 1 k = 8 + q mod 16, each in increasing k: the definition's
// sequences, summed by the tree in that order (ReduceTileStrided). A group is 128 weights (K is a multiple of the
// activation block) and goes weight row by row: each row's pointers are read once per group rather than once per 32
// weights (16 rows' pointers do not fit in the integer registers). One row's group sum lands in
// sums[16 (b x groups + g) + StridedTreeLane(i)].
template <int kBatch>
HWY_NOINLINE void BlockSumsE2m1(const WeightRow (&rows)[kLanes], const float* const* HWY_RESTRICT a, std::int64_t k,
                                int shift, const float* HWY_RESTRICT e2m1_tables, float* HWY_RESTRICT sums) {
  const DF df;
  const std::int64_t groups = k / kActBlock;
  for (std::int64_t k0 = 0, g = 0; k0 < k; k0 += kActBlock, ++g) {
    VF acc[kBatch][kLanes][kV];
    VF av[8];  // one activation row's group, held in registers (kBatch = 1)
    if constexpr (kBatch == 1) {
      for (int j = 0; j < 8; ++j) av[j] = hn::LoadU(df, a[0] + k0 + j * kLanes);
    }
#pragma GCC unroll 16
    for (int i = 0; i < kLanes; ++i) {
      const std::uint8_t* codes = rows[i].codes + k0 / 2;
      const std::uint8_t* scale_codes = rows[i].scale_codes;
      PrefetchRowAhead(rows[i].codes, k0 / 2, kPrefetchAhead16, rows[i].bytes);  // 4 groups on
      VF sum[kBatch];
      for (VF& v : sum) v = hn::Zero(df);
#pragma GCC unroll 4
      for (int step = 0; step < 4; ++step) {
        VF w0, w1;
        const float* table = e2m1_tables + kE2m1TableSize * scale_codes[(k0 + 32 * step) >> shift];
        codec::DecodeE2m1x32Strided(codes + 16 * step, table, w0, w1);
        if constexpr (kBatch == 1) {
          sum[0] = hn::MulAdd(av[2 * step + 1], w1, hn::MulAdd(av[2 * step], w0, sum[0]));
        } else {
#pragma GCC unroll 4
          for (int b = 0; b < kBatch; ++b) {
            const float* ab = a[b] + k0 + 32 * step;
            sum[b] = hn::MulAdd(hn::LoadU(df, ab + 16), w1, hn::MulAdd(hn::LoadU(df, ab), w0, sum[b]));
          }
        }
      }
      for (int b = 0; b < kBatch; ++b) acc[b][i][0] = sum[b];
    }
    for (int b = 0; b < kBatch; ++b) hn::StoreU(ReduceTileStrided(df, acc[b]), df, sums + kLanes * (b * groups + g));
  }
}
#endif

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
#if !MF_GEMM_WIDE && HWY_TARGET != HWY_SCALAR
  if constexpr (K == WeightKind::e4m3) {
    if ((end - k0) % 32 == 0) done = GroupProducts<K, kPerGroup, false>(rows, a, k0, end, shift, acc);
  }
#endif
#if MF_GEMM_WIDE
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

// e4m3 with per-group factors: each row's factor (2^120 x scale) times 2^-119 on its group sum in red.
HWY_INLINE void ApplyRowFactors(const WeightRow (&rows)[kLanes], std::int64_t column, float* HWY_RESTRICT red) {
  const DF df;
  if (rows[0].scales == rows[kLanes - 1].scales) {  // one scale block row (fp8-128x128): one factor, one multiply
    const float f = rows[0].scales[column] * 0x1p-119f;
    for (std::size_t i = 0; i < kLanes; i += kL) hn::Store(hn::Mul(hn::Load(df, red + i), hn::Set(df, f)), df, red + i);
  } else {
    for (int i = 0; i < kLanes; ++i) red[bitrev4(i)] *= rows[i].scales[column] * 0x1p-119f;
  }
}

// Every group of a block summed at once (GemvInputsOf says where), for a batch of activation rows before GemvBlock
// reads them (BlockSumsOfRows): e4m3 on AVX3_DL by BlockSumsDotBf16 where `pairs` (DotBf16Pairs), else by
// BlockSumsTables from `a` (the activation row, halved where the factors go per group); on AVX2 by BlockSumsLanes
// (`a` scaled as `fields` says); e2m1 on 16-lane targets and AVX2 by BlockSumsE2m1. `sums` and `redo` are the row's
// own room for a block's group sums ([groups][16]) and NaN flags ([groups]); the rows' rooms follow each other.
struct BlockSumsInputs {
  const std::uint16_t* pairs;
  const float* a;
  float* sums;         // [groups][16]
  std::uint8_t* redo;  // [groups]
  bool fields = false;  // AVX2: BlockSumsLanes<true>
};

// k >> ScaleShift is the scale column of k (GemvFits: a power-of-two block width); 62 keeps one factor for f32 scales.
template <WeightKind K>
HWY_INLINE int ScaleShift(const Problem& p) {
  return K == WeightKind::e4m3 && !p.weight_scales_inside ? 62 : std::countr_zero(static_cast<unsigned>(p.bc));
}

// The 16 weight rows of the block that starts at row n0 (rows past N repeat the last: their outputs are dropped).
// One division for the block, not one per row: 16 of them took a quarter of a small GEMV's time (K = 640).
template <WeightKind K>
HWY_INLINE void BlockRows(const Problem& p, std::int64_t n0, const float* e2m1_tables, WeightRow (&rows)[kLanes]) {
  std::int64_t scale_row = n0 / p.br, next = (scale_row + 1) * p.br;
  for (int i = 0; i < kLanes; ++i) {
    const std::int64_t row = std::min(n0 + i, p.n - 1);
    if (row >= next) ++scale_row, next += p.br;  // p.br >= 1: one step at most
    rows[i] = RowOf<K>(p, row, scale_row);
    rows[i].e2m1_tables = e2m1_tables;
  }
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
// e2m1: `a` is the activation row in the strided lane order (DecodeE2m1x32Strided) and e2m1_tables holds, per
// scale code, the 16 e2m1 values times its scale. Where the GEMV is batched (GemvBatched: e2m1 on 16-lane targets and
// AVX2, e4m3 where `block`) the group sums are in block->sums (BlockSumsOfRows made them for a batch of rows).
template <WeightKind K, bool kPerGroup = false>
void GemvBlock(const Problem& p, std::int64_t row, const float* HWY_RESTRICT a, std::int64_t n0,
               float* HWY_RESTRICT c, std::int64_t live, const float* HWY_RESTRICT e2m1_tables = nullptr,
               BlockSumsInputs* block = nullptr) {
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
  const float* weight_scales =
      p.weight_scales.empty() || p.weight_scales_inside ? nullptr
                                                        : p.weight_scales.data() + n0 / p.br * p.weight_scale_cols;
  const bool codes_outside = p.weight_scales.empty() && p.weight_scale_codes && !p.weight_scales_inside;  // none yet
  for (std::int64_t g = 0; g < groups; ++g) {
    const std::int64_t k0 = g * p.group, end = std::min(p.k, k0 + p.group);
#if MF_GEMV_BATCHED
    if constexpr (K == WeightKind::e2m1) {  // BlockSums, for every activation row of the batch at once
      std::copy(block->sums + kLanes * g, block->sums + kLanes * (g + 1), red);
    } else  // NOLINT(readability/braces)
#endif
    if (block != nullptr && !block->redo[g]) {
      std::copy(block->sums + kLanes * g, block->sums + kLanes * (g + 1), red);
    } else {
      GroupSums<K, kPerGroup>(rows, a, k0, end, shift, red);
    }
    if constexpr (kPerGroup) ApplyRowFactors(rows, k0 >> shift, red);
    // One factor for the whole row: act_scales[0, group] (or 1); or for the whole tile, when its 16 rows share a
    // weight scale block (f32 scales in 128x128 blocks).
    if (p.weight_scales.empty() || p.weight_scales_inside || one_block_row) {
      const float act = act_scales ? act_scales[g * p.group / kActBlock] : 1.0f;
      const float weight = weight_scales ? weight_scales[g * p.group / p.bc]
                           : codes_outside ? p.weight_group_scale(n0, g)
                                           : 1.0f;
      std::fill(s, s + kLanes, act * weight);
    } else {
      FillScales<1, kLanes>(p, row, n0, g, s);
    }
    ScaleAdd(c, s, red);
  }
}

// Which decode the e4m3 GEMV runs on this target and CPU (gemm_dispatch.h).
HWY_INLINE const char* GemvE4m3Decode() {
#if MF_GEMV_VBMI
  return "tables";
#endif
  return MF_GEMM_WIDE ? "avx512" : "lanes";
}

// e4m3 whose groups are whole 64-code lines (every 128x128, 1x128 and ue8m0 32x32 scheme): on AVX3_DL every group
// of a block is summed at once (BlockSumsInputs).
HWY_INLINE bool E4m3WholeLines(const Problem& p) {
  return p.kind == WeightKind::e4m3 && p.group % 64 == 0 && p.k % p.group == 0 && (p.e4m3_per_group || p.bc >= 32);
}

// The e4m3 weights whose block sums BlockSumsOfRows makes: in whole lines on AVX3_DL, and with per-group factors too
// on AVX2 (BlockSumsLanes).
HWY_INLINE bool E4m3Batched(const Problem& p) {
  return E4m3WholeLines(p) && ((MF_GEMM_WIDE && MF_GEMV_VBMI) || (MF_GEMV_LANES_BLOCKS && p.e4m3_per_group));
}

// Whether the GEMV decodes each weight once for a batch of activation rows (BlockSumsOfRows): e2m1 on 16-lane
// targets and AVX2, e4m3 where E4m3Batched.
HWY_INLINE bool GemvBatched(const Problem& p) {
  return MF_GEMV_BATCHED && (p.kind == WeightKind::e2m1 || E4m3Batched(p));
}

// The GEMV serves M below this (gemm.cc's UsesGemv): on 16-lane targets 16 where it is batched (at M = 8, 2 threads,
// mxfp4 ran at 1.4-2.2x the 4 x 4 tile's GFLOP/s, fp8 1.4-1.5x with the weights streamed and 0.86-0.99x cached:
// docs/benchmark-history.md#block-scaled-gemv-and-gemm-2026-12-06-0828), else 8; 12 on AVX2, where the column-lane
// tile ran M = 8 slower than the GEMV on Zen 3
// (docs/benchmark-history.md#m--8-and-16-the-gemv-or-the-column-lane-tile-2026-12-03-1650).
HWY_INLINE std::int64_t GemvRowsBelow(const Problem& p) { return kL == 8 ? 12 : GemvBatched(p) ? 16 : 8; }

// Whether GemvBlock<kind> runs on this target for p: e2m1 needs its scale codes and whole groups of 128 (as
// fp4_problem's activations always have), bf16 whole vectors along K.
HWY_INLINE bool GemvFits(const Problem& p) {
  switch (p.kind) {
    case WeightKind::e4m3: return !p.e4m3_factor.empty() && std::has_single_bit(static_cast<unsigned>(p.bc));
    case WeightKind::e2m1:
      return HWY_TARGET != HWY_SCALAR && p.weight_scale_codes != nullptr && p.group == kActBlock &&
             p.k % kActBlock == 0;
    case WeightKind::bf16: return p.k % kLanes == 0;
    case WeightKind::f32: return false;
  }
  return false;
}

// What a GEMV call makes from its activation rows, kept per thread from call to call (a decode step makes hundreds
// of calls; no allocation once they have grown to the largest K and M).
struct GemvRowBuffers {
  std::vector<float> scaled;         // a x kE4m3ActScale (exact: |a| <= 448), for the e4m3 GEMV's per-group factors
  std::vector<std::uint16_t> pairs;  // DotBf16Pairs (AVX3_DL and newer)
  std::vector<float> halves;         // a / 2 (exact), for BlockSumsTables' per-group factors (AVX3_DL)
  std::vector<float> fields;         // a x 2^119 (exact), for BlockSumsLanes<true> (AVX2)
  std::vector<float> strided;        // e2m1 on 16-lane targets: a in the strided lane order
};
// One activation row as each weight kind's GemvBlock reads it.
struct GemvInputs {
  std::int64_t row;
  const float* a;
  std::int64_t live;  // a multiple of 32 with a[k] == ±0 from there on (BlockSumsTables, BlockSumsDotBf16)
  const float* scaled = nullptr;  // GemvRowBuffers::scaled
  BlockSumsInputs block{};        // sums == nullptr: groups one by one (GroupSums)
  const float* strided = nullptr;  // e2m1 on 16-lane targets: StridedActivations
  const float* e2m1_tables = nullptr;  // e2m1 on 16-lane targets and AVX2: E2m1Tables
};
struct GemvBuffers {
  std::vector<GemvRowBuffers> rows;    // one per activation row
  std::vector<GemvInputs> inputs;      // GemvInputsOf, one per activation row
  std::vector<float> block_sums;         // BlockSumsInputs::sums, [groups][16], for one block at a time
  std::vector<std::uint8_t> block_redo;  // and [groups]
  // e2m1 (16-lane targets and AVX2): per scale code the 16 e2m1 values times its scale, and the scales they are of
  hwy::AlignedFreeUniquePtr<float[]> e2m1_tables;
  std::array<float, 256> e2m1_tables_of{};
};
HWY_INLINE GemvBuffers& ThreadGemvBuffers() {
  static thread_local GemvBuffers buffers;
  return buffers;
}

// Each scale code's table for the e2m1 GEMV's table decodes (16-lane targets and AVX2), in the thread's GemvBuffers,
// made again only when the scales differ: the 16 e2m1 values times its scale (256 x 16 values, 16 KiB: L1); on AVX2
// codec::E2m1x8Table's eight (8 KiB).
HWY_INLINE const float* E2m1Tables(const Problem& p, GemvBuffers& b) {
  if (!b.e2m1_tables || std::memcmp(b.e2m1_tables_of.data(), p.weight_scale_table.data(), sizeof(float) * 256) != 0) {
    if (!b.e2m1_tables) b.e2m1_tables = hwy::AllocateAligned<float>(256 * 16);
    for (std::size_t code = 0; code < 256; ++code) {
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2 && !MF_GEMM_WIDE
      codec::E2m1x8Table(p.weight_scale_table[code], b.e2m1_tables.get() + code * kE2m1TableSize);
#else
      for (std::size_t j = 0; j < kE2m1TableSize; ++j) {
        b.e2m1_tables[code * kE2m1TableSize + j] = codec::kE2m1Values[j] * p.weight_scale_table[code];
      }
#endif
    }
    b.e2m1_tables_of = p.weight_scale_table;
  }
  return b.e2m1_tables.get();
}

#if MF_GEMM_WIDE
// The e2m1 GEMV's activations on 16-lane targets, in the strided lane order (GroupSumsE2m1Strided).
HWY_INLINE const float* StridedActivations(const Problem& p, const float* a, std::vector<float>& strided) {
  strided.resize(static_cast<std::size_t>(p.k));
  for (std::int64_t k = 0; k < p.k; k += kLanes) {
    for (int q = 0; q < 8; ++q) {
      strided[static_cast<std::size_t>(k + 2 * q)] = a[k + q];
      strided[static_cast<std::size_t>(k + 2 * q + 1)] = a[k + 8 + q];
    }
  }
  return strided.data();
}
#endif

// Activation row `row` (a) made into what GemvBlock reads, in rb and the thread's shared buffers b.
HWY_INLINE GemvInputs GemvInputsOf(const Problem& p, std::int64_t row, const float* a, GemvRowBuffers& rb,
                                   GemvBuffers& b) {
  GemvInputs in;
  in.row = row;
  in.a = a;
  // A K zero-padded to whole activation blocks (a Linear whose in_features is not a multiple of 128) ends in zeros.
  in.live = p.k;
  while (in.live > 0 && a[in.live - 1] == 0.0f) --in.live;
  in.live = (in.live + 31) / 32 * 32;
  if (p.kind == WeightKind::e4m3 && p.e4m3_per_group) {
    rb.scaled.resize(static_cast<std::size_t>(p.k));
    for (std::int64_t k = 0; k < p.k; ++k) rb.scaled[static_cast<std::size_t>(k)] = a[k] * kE4m3ActScale;
    in.scaled = rb.scaled.data();
  }
#if MF_GEMM_WIDE
  if (p.kind == WeightKind::e2m1) {
    in.strided = StridedActivations(p, a, rb.strided);
    const auto groups = static_cast<std::size_t>(p.k / kActBlock);
    b.block_sums.resize(groups * kLanes * static_cast<std::size_t>(p.m));
    in.block = {nullptr, in.strided, b.block_sums.data() + groups * kLanes * static_cast<std::size_t>(row), nullptr};
  }
#endif
#if MF_GEMM_WIDE || (HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2)
  if (p.kind == WeightKind::e2m1) in.e2m1_tables = E2m1Tables(p, b);
#endif
#if MF_GEMM_WIDE && MF_GEMV_VBMI
  // e4m3 whose groups are whole 64-code lines (every 128x128, 1x128 and ue8m0 32x32 scheme): all groups of a block at
  // once, by the bf16 dot product where it is chosen, else by BlockSumsTables (whose unscaled weights take their
  // scale per 32 values). The sums and flags are scratch for one block at a time, a slice per row: the same size for
  // every row of a call, so a later row's resize never moves what an earlier row's inputs point to.
  if (E4m3WholeLines(p)) {
    const auto groups = static_cast<std::size_t>(p.k / p.group);
    const auto at = static_cast<std::size_t>(row) * groups;
    b.block_sums.resize(groups * kLanes * static_cast<std::size_t>(p.m));
    b.block_redo.resize(groups * static_cast<std::size_t>(p.m));
    in.block = {nullptr, a, b.block_sums.data() + at * kLanes, b.block_redo.data() + at};
    if (DotBf16Pairs(p, a, rb.pairs)) {
      in.block.pairs = rb.pairs.data();
    } else if (p.e4m3_per_group) {
      rb.halves.resize(static_cast<std::size_t>(p.k));
      for (std::int64_t k = 0; k < p.k; ++k) rb.halves[static_cast<std::size_t>(k)] = a[k] * 0.5f;
      in.block.a = rb.halves.data();
    }
  }
#elif MF_GEMV_LANES_BLOCKS
  if (p.kind == WeightKind::e2m1) {
    const auto groups = static_cast<std::size_t>(p.k / kActBlock);
    b.block_sums.resize(groups * kLanes * static_cast<std::size_t>(p.m));
    in.block = {nullptr, a, b.block_sums.data() + groups * kLanes * static_cast<std::size_t>(row), nullptr};
  }
  if (E4m3Batched(p)) {
    const auto groups = static_cast<std::size_t>(p.k / p.group);
    const auto at = static_cast<std::size_t>(row) * groups;
    b.block_sums.resize(groups * kLanes * static_cast<std::size_t>(p.m));
    b.block_redo.resize(groups * static_cast<std::size_t>(p.m));
    const bool fields = gemv_e4m3_f32_fields_chosen();
    in.block = {nullptr, rb.scaled.data(), b.block_sums.data() + at * kLanes, b.block_redo.data() + at, fields};
    if (fields) {
      rb.fields.resize(static_cast<std::size_t>(p.k));
      for (std::int64_t k = 0; k < p.k; ++k) rb.fields[static_cast<std::size_t>(k)] = a[k] * 0x1p119f;
      in.block.a = rb.fields.data();
    }
  }
#else
  (void)rb, (void)b;
#endif
  return in;
}

// C[in.row, col0 .. col0 + 16) into c in GemvBlock's lane order.
HWY_INLINE void GemvBlockOf(const Problem& p, GemvInputs& in, std::int64_t col0, float* HWY_RESTRICT c) {
  std::fill(c, c + kLanes, 0.0f);
  switch (p.kind) {
    case WeightKind::e4m3:
      if (p.e4m3_per_group) {
        return GemvBlock<WeightKind::e4m3, true>(p, in.row, in.scaled, col0, c, in.live, nullptr,
                                                 in.block.sums != nullptr ? &in.block : nullptr);
      }
      return GemvBlock<WeightKind::e4m3>(p, in.row, in.a, col0, c, in.live, nullptr,
                                         in.block.sums != nullptr ? &in.block : nullptr);
    case WeightKind::e2m1:
#if MF_GEMM_WIDE
      return GemvBlock<WeightKind::e2m1>(p, in.row, in.strided, col0, c, in.live, in.e2m1_tables, &in.block);
#elif MF_GEMV_BATCHED
      return GemvBlock<WeightKind::e2m1>(p, in.row, in.a, col0, c, in.live, in.e2m1_tables, &in.block);
#elif HWY_TARGET != HWY_SCALAR
      return GemvBlock<WeightKind::e2m1>(p, in.row, in.a, col0, c, in.live, in.e2m1_tables);
#else
      return;  // GemvFits: not on this target
#endif
    case WeightKind::bf16: return GemvBlock<WeightKind::bf16>(p, in.row, in.a, col0, c, in.live);
    case WeightKind::f32: return;  // GemvFits: never
  }
}

#if MF_GEMV_BATCHED
// The group sums of the block at n0 for inputs in[0 .. kBatch) (consecutive rows: their BlockSumsInputs::sums are
// consecutive slices), every weight decoded once for all of them: where GemvBatched.
template <int kBatch>
HWY_INLINE void BatchBlockSums(const Problem& p, const GemvInputs* in, std::int64_t n0) {
  std::int64_t live = 0;
  for (int b = 0; b < kBatch; ++b) live = std::max(live, in[b].live);
  WeightRow rows[kLanes];
  if (p.kind == WeightKind::e2m1) {
    BlockRows<WeightKind::e2m1>(p, n0, in[0].e2m1_tables, rows);
    const float* a[kBatch];
    for (int b = 0; b < kBatch; ++b) a[b] = in[b].block.a;  // 16-lane targets: in the strided lane order
    BlockSumsE2m1<kBatch>(rows, a, p.k, ScaleShift<WeightKind::e2m1>(p), in[0].e2m1_tables, in[0].block.sums);
    return;
  }
#if MF_GEMV_VBMI
  BlockRows<WeightKind::e4m3>(p, n0, nullptr, rows);
  if (in[0].block.pairs != nullptr) {
    const std::uint16_t* pairs[kBatch];
    for (int b = 0; b < kBatch; ++b) pairs[b] = in[b].block.pairs;
    BlockSumsDotBf16<kBatch>(rows, pairs, p.k, p.group, live, in[0].block.sums, in[0].block.redo);
    return;
  }
  const float* a[kBatch];
  for (int b = 0; b < kBatch; ++b) a[b] = in[b].block.a;
  (p.e4m3_per_group ? BlockSumsTables<true, kBatch> : BlockSumsTables<false, kBatch>)(
      rows, a, p.k, p.group, live, ScaleShift<WeightKind::e4m3>(p), in[0].block.sums, in[0].block.redo);
#elif MF_GEMV_LANES_BLOCKS
  BlockRows<WeightKind::e4m3>(p, n0, nullptr, rows);
  const float* a[kBatch];
  for (int b = 0; b < kBatch; ++b) a[b] = in[b].block.a;
  (in[0].block.fields ? BlockSumsLanes<true, kBatch> : BlockSumsLanes<false, kBatch>)(
      rows, a, p.k, p.group, live, in[0].block.sums, in[0].block.redo);
#endif
}

// BatchBlockSums for every activation row, kGemvBatch at a time (rows that take the bf16 dot product and rows that
// do not, if a call has both, in batches of their own).
HWY_INLINE void BlockSumsOfRows(const Problem& p, const std::vector<GemvInputs>& inputs, std::int64_t n0) {
  for (std::size_t b0 = 0; b0 < inputs.size();) {
    std::size_t n = 1;
    while (n < kGemvBatch && b0 + n < inputs.size() &&
           (inputs[b0 + n].block.pairs != nullptr) == (inputs[b0].block.pairs != nullptr)) {
      ++n;
    }
    switch (n) {
      case 1: BatchBlockSums<1>(p, &inputs[b0], n0); break;
      case 2: BatchBlockSums<2>(p, &inputs[b0], n0); break;
      case 3: BatchBlockSums<3>(p, &inputs[b0], n0); break;
      default: BatchBlockSums<4>(p, &inputs[b0], n0); break;
    }
    b0 += n;
  }
}
#endif

// Every activation row (a: [p.m][lda]) by blocks of 16 columns, taken from the queue in chunks until it is empty.
// Block by block, every row meets the block's weights before the next block: where the group sums are batched
// (BlockSumsOfRows, where GemvBatched) each weight is decoded once for up to kGemvBatch rows; otherwise
// each row decodes the block again from L1 or L2 (64 KiB of e4m3 at K = 4096). Which thread or row order computes
// a column does not change its bits.
HWY_INLINE void GemvColumns(const Problem& p, const float* a, std::size_t lda, ColumnQueue& queue) {
  const bool wide_e2m1 = MF_GEMM_WIDE && p.kind == WeightKind::e2m1;  // GemvBlock's lane order
  GemvBuffers& buffers = ThreadGemvBuffers();
  const auto rows = static_cast<std::size_t>(p.m);
  if (buffers.rows.size() < rows) buffers.rows.resize(rows);
  buffers.inputs.clear();
  for (std::size_t m = 0; m < rows; ++m) {
    buffers.inputs.push_back(GemvInputsOf(p, static_cast<std::int64_t>(m), a + m * lda, buffers.rows[m], buffers));
  }
#if MF_GEMV_BATCHED
  const bool batched = GemvBatched(p);
#endif
  alignas(64) float c[kLanes];
  float row[kLanes];
  std::int64_t begin, end;
  while (queue.next(begin, end)) {
    for (std::int64_t col0 = begin * kLanes; col0 < end * kLanes; col0 += kLanes) {
#if MF_GEMV_BATCHED
      if (batched) BlockSumsOfRows(p, buffers.inputs, col0);
#endif
      for (GemvInputs& in : buffers.inputs) {
        GemvBlockOf(p, in, col0, c);
        for (int i = 0; i < kLanes; ++i) row[i] = c[wide_e2m1 ? StridedTreeLane(i) : bitrev4(i)];
        finish(p, in.row, col0, std::min<std::int64_t>(kLanes, p.n - col0), row);
      }
    }
    queue.finished(begin, end);
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace mf::gemm
HWY_AFTER_NAMESPACE();

#endif  // include guard
