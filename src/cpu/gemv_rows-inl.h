// The weight rows of a GEMV block as every loop reads them: where each row's codes and scales are (WeightRow,
// BlockRows, ScaleShift), how far ahead of the loops they are asked into L2 (PrefetchRowAhead), and how many rows
// one pass takes (kGemvBatch, kGemvPassRows).
//
// Included once per Highway target through gemv-inl.h; hence the toggle include guard.
#if defined(MINIFLOAT_SRC_CPU_GEMV_ROWS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef MINIFLOAT_SRC_CPU_GEMV_ROWS_INL_H_
#undef MINIFLOAT_SRC_CPU_GEMV_ROWS_INL_H_
#else
#define MINIFLOAT_SRC_CPU_GEMV_ROWS_INL_H_
#endif

#include <algorithm>
#include <bit>
#include <cstdint>

#include "../ref/gemm_problem.h"
#include "gemv_loops-inl.h"
#include "prefetch_distance.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace mf::gemm {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if MF_GEMV_PREFETCH_L2
// Asks for the line `ahead` bytes past `row` into L2: a block's 16 row streams are slow (a group's bytes per row at
// a time) and short (one row), and the hardware prefetchers follow them late when the weights come from memory
// (docs/benchmark-history.md#seventh-session-threads-from-a-queue-and-a-gfni-decode-for-the-fp8-gemv). An address past
// the weights is never read, and its prefetch does not fault (hence the integer arithmetic). Raw: hwy::Prefetch asks
// for L1 only.
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
// How far ahead: 512 bytes for the 8-lane loops (measured on Zen 4:
// docs/benchmark-history.md#seventh-session-threads-from-a-queue-and-a-gfni-decode-for-the-fp8-gemv); 256 for the
// 16-lane e4m3 loops (table and AVX512-BF16) and the e2m1 loop: with the weights streamed on the Sapphire Rapids-class
// Xeon, 256 beat 128, 512, 1024 and 2048, by 12-21% over 512 for the dot product, 5-10% for the GFNI loop the table
// loop replaced, and 2-12% over no prefetch for e2m1
// (docs/benchmark-history.md#which-fp8-gemv-loop-and-how-far-ahead-to-prefetch-2026-12-02-1405-1425); the table loop
// with none ran 0.48-0.77x streamed (docs/benchmark-history.md#subnormal-weight-codes-2026-12-03-1315).
constexpr std::int64_t kPrefetchAhead8 = 512, kPrefetchAhead16 = 256;
// The 16-lane e4m3 loops take kE4m3PrefetchAhead (prefetch_distance.h), which depends on the CPU's maker.
#endif

// Activation rows whose products one pass over a block's weights makes (BlockSumsOfRows), and the weight rows each
// pass of the e4m3 loops takes at a time for kBatch of them, so that their sums (rows x batch vectors), the decoded
// weights and the byte tables fit in the 32 vector registers.
constexpr std::size_t kGemvBatch = 4;
template <int kBatch>
constexpr int kGemvPassRows = kBatch <= 2 ? 8 : 4;
// AVX2's 16 registers: 4 weight rows (8 accumulators) for one activation row, 2 for two, 1 for three or four.
template <int kBatch>
constexpr int kGemvPassRows8 = kBatch == 1   ? 4
                               : kBatch == 2 ? 2
                                             : 1;

// mxfp8 (e4m3 in 1x32 blocks with ue8m0 scales) where AVX3_DL's GEMV reads the scale codes in place
// (gemv_mxfp8-inl.h): fp8_problem keeps them as codes, and only the other kernels make f32 factors from them.
// On AVX2 (MF_GEMV_E4M3_LANES_BLOCKS) too, where LoadE4m3 multiplies each 32-value block's fp16 decode by the code's
// scale times 2^8, made from the codes in place: for scales up to 2^119 (Problem::weight_scale_codes_below_2to120),
// where that factor is finite. Expanded instead, two f32 per 32 weights were written and read again in every call
// (mxfp8 ran at 0.42x fp8-128x128's weights per second on one thread in L2 on the AVX2 target).
HWY_INLINE bool E4m3ScaleCodes(const Problem& p) {
  return (MF_GEMV_E4M3_TABLES || (MF_GEMV_E4M3_LANES_BLOCKS && p.weight_scale_codes_below_2to120)) &&
         p.kind == WeightKind::e4m3 && p.weight_scale_codes != nullptr && p.weight_scales.empty() && p.br == 1 &&
         p.bc == 32 && p.group == kActBlock && p.k % kActBlock == 0;
}

// mxfp8's scale codes in its GEMV (gemv_mxfp8-inl.h): ue8m0 codes 27 .. 227, scales 2^-100 .. 2^100. Within them
// every weight value x 2^e (|value| in [2^-9, 448]) is a normal bf16 and f32, and so is a x 2^e for an e4m3 activation
// (|a| in [2^-9, 448]); every product is exact and normal (at least 2^-118), every partial and tree sum of a group a
// multiple of 2^-118 below 2^125: nothing for the dot product's flush of denormals to touch, nothing that overflows. A
// block with another scale code is exact only if its 32 weights are all ±0 (their products are ±0 whatever the scale,
// which then is not applied) and its scale is not NaN (0xFF: 0 x NaN is NaN); quantize gives a block of zeros, such as
// a zero-padded K's, code 0. Otherwise its group takes the definition's loop. In a line the loops skip (zero
// activations) only codes above 227 matter: there value x 2^e may overflow, and 0 x Inf or 0 x NaN is NaN.
constexpr std::uint8_t kLeastScaleCode = 27, kScaleCodeSpan = 200;
constexpr bool ScaleCodeOutOfRange(std::uint8_t code) {
  return static_cast<std::uint8_t>(code - kLeastScaleCode) > kScaleCodeSpan;
}
constexpr bool ScaleCodeHuge(std::uint8_t code) { return code > kLeastScaleCode + kScaleCodeSpan; }

// One weight row as the GEMV reads it: its codes (or bf16 bits) and its scales.
struct WeightRow {
  const std::uint8_t* codes;
  const std::uint16_t* bf16;
  const float* scales;  // e4m3: the row's factors (Problem::e4m3_factor); null for mxfp8's codes (E4m3ScaleCodes)
  // e2m1 and mxfp8: the row's ue8m0 codes (Problem::weight_scale_codes, read through weight_scale_table)
  const std::uint8_t* scale_codes;
  const float* weight_scale_table;     // e2m1, mxfp8: Problem::weight_scale_table
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
    return {p.codes + row * p.k / 2,     nullptr, nullptr, p.weight_scale_codes + row * p.weight_scale_cols,
            p.weight_scale_table.data(), nullptr, p.k / 2};
  }
  if (E4m3ScaleCodes(p)) {
    return {p.codes + row * p.k,         nullptr, nullptr, p.weight_scale_codes + row * p.weight_scale_cols,
            p.weight_scale_table.data(), nullptr, p.k};
  }
  const std::int64_t factors = p.weight_scales_inside ? scale_row * p.weight_scale_cols : 0;
  return {p.codes + row * p.k, nullptr, p.e4m3_factor.data() + factors, nullptr, nullptr, nullptr, p.k};
}

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

}  // namespace HWY_NAMESPACE
}  // namespace mf::gemm
HWY_AFTER_NAMESPACE();

#endif  // include guard
