// Per-target SIMD code for the GEMV: one activation row (M = 1, a decode step) or a few (GemvRowsBelow: up to 15, or 11
// on AVX2, where each decoded weight meets up to 4 rows at once; else 7, taken one by one over each block of weight
// rows): the weights go straight from their codes into the fma, with no panel in between, so each weight byte is
// read once from memory and touched by a handful of instructions per activation row.
// The arithmetic is that of gemm-inl.h's 1 x 16 register tile (and so of the definition): the same exact decoded
// weights, the same lane-strided partial sums, tree and group order.
//
// This file runs the GEMV over a call's activation rows: which problems it takes (GemvFits, GemvRowsBelow), each
// row's inputs (GemvInputsOf), the batches (BlockSumsOfRows) and the blocks from the queue (GemvColumns). The loops
// are in files of their own, one per element family (gemv_e4m3-inl.h, gemv_e2m1-inl.h, gemv_bf16-inl.h), beside the
// block loop they share (gemv_blocks-inl.h) and what they read (gemv_rows-inl.h, gemv_inputs-inl.h); which loop runs
// on which target, and why, is the table in gemv_loops-inl.h.
//
// Included once per Highway target by gemm.cc, after gemm-inl.h; hence the toggle include guard.
#if defined(MINIFLOAT_SRC_CPU_GEMV_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef MINIFLOAT_SRC_CPU_GEMV_INL_H_
#undef MINIFLOAT_SRC_CPU_GEMV_INL_H_
#else
#define MINIFLOAT_SRC_CPU_GEMV_INL_H_
#endif

#include <algorithm>
#include <bit>
#include <cstdint>
#include <vector>

#include "../ref/gemm_problem.h"
#include "column_queue.h"
#include "gemm_dispatch.h"
#include "gemv_blocks-inl.h"
#include "gemv_bf16-inl.h"
#include "gemv_e2m1-inl.h"
#include "gemv_e2m1_dot-inl.h"
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
    case WeightKind::e4m3:
      return (!p.e4m3_factor.empty() && std::has_single_bit(static_cast<unsigned>(p.bc))) || E4m3ScaleCodes(p);
    case WeightKind::e2m1:  // mxfp4's 1x32 blocks, or nvfp4's 1x16 (a table per 16 weights)
      return (p.bc == 32 || p.bc == 16) && (MF_GEMV_E2M1_STRIDED || MF_GEMV_E2M1_TABLE8 || MF_GEMV_E2M1_LANES) &&
             p.weight_scale_codes != nullptr && p.group == kActBlock && p.k % kActBlock == 0;
    case WeightKind::bf16: return p.k % kLanes == 0;
    case WeightKind::f32: return false;
  }
  return false;
}

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
#if MF_GEMV_E2M1_STRIDED
  if (p.kind == WeightKind::e2m1) {
    in.strided = StridedActivations(p, a, rb.strided);
    const auto groups = static_cast<std::size_t>(p.k / kActBlock);
    b.block_sums.resize(groups * kLanes * static_cast<std::size_t>(p.m));
    in.block = {nullptr, in.strided, b.block_sums.data() + groups * kLanes * static_cast<std::size_t>(row), nullptr};
#if MF_GEMV_E2M1_DOT
    if (E2m1DotPairs(p, in.strided, rb.pairs)) {  // BlockSumsE2m1DotBf16, with its tables and redo flags
      E2m1DotTables(p, b);
      b.block_redo.resize(groups * static_cast<std::size_t>(p.m));
      in.block.pairs = rb.pairs.data();
      in.block.redo = b.block_redo.data() + groups * static_cast<std::size_t>(row);
      in.e2m1_bf16 = b.e2m1_bf16.get();
      in.e2m1_bf16_scale = b.e2m1_bf16_scale.data();
      in.e2m1_bf16_exact_first = b.e2m1_bf16_exact_first;
      in.e2m1_bf16_exact_length = b.e2m1_bf16_exact_length;
    }
#endif
  }
#endif
#if MF_GEMV_E2M1_STRIDED || MF_GEMV_E2M1_TABLE8
  if (p.kind == WeightKind::e2m1) in.e2m1_tables = E2m1Tables(p, b);
#endif
#if MF_GEMV_E4M3_TABLES
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
#elif MF_GEMV_E2M1_TABLE8 || MF_GEMV_E4M3_LANES_BLOCKS  // one capability: AVX2's
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
    if (E4m3ScaleCodes(p)) {  // mxfp8: the activations as they are, the codes' factors per 32 weights (fp16)
      in.block = {nullptr, a, b.block_sums.data() + at * kLanes, b.block_redo.data() + at, false};
      return in;
    }
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
#if MF_GEMV_E2M1_STRIDED
      return GemvBlock<WeightKind::e2m1>(p, in.row, in.a, col0, c, in.live, in.e2m1_tables, &in.block);
#elif MF_GEMV_E2M1_TABLE8
      return GemvBlock<WeightKind::e2m1>(p, in.row, in.a, col0, c, in.live, in.e2m1_tables, &in.block);
#elif MF_GEMV_E2M1_LANES
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
#if MF_GEMV_E2M1_DOT
    if (in[0].block.pairs != nullptr) {  // E2m1DotPairs
      const std::uint16_t* pairs[kBatch];
      for (int b = 0; b < kBatch; ++b) pairs[b] = in[b].block.pairs;
      const bool exact =
          E2m1ScalesExact(rows, p.weight_scale_cols, in[0].e2m1_bf16_exact_first, in[0].e2m1_bf16_exact_length);
      const bool block16 = p.bc == 16;
      const auto run =
          block16 ? (exact ? BlockSumsE2m1DotBf16<kBatch, true, false> : BlockSumsE2m1DotBf16<kBatch, true, true>)
                  : (exact ? BlockSumsE2m1DotBf16<kBatch, false, false> : BlockSumsE2m1DotBf16<kBatch, false, true>);
      run(rows, pairs, p.k, ScaleShift<WeightKind::e2m1>(p), in[0].e2m1_bf16, in[0].e2m1_bf16_scale, in[0].block.sums,
          in[0].block.redo);
      return;
    }
#endif
    const float* a[kBatch];
    for (int b = 0; b < kBatch; ++b) a[b] = in[b].block.a;  // 16-lane targets: in the strided lane order
    if (p.bc == 16) {                                       // nvfp4
      BlockSumsE2m1<kBatch, true>(rows, a, p.k, ScaleShift<WeightKind::e2m1>(p), in[0].e2m1_tables, in[0].block.sums);
    } else {
      BlockSumsE2m1<kBatch, false>(rows, a, p.k, ScaleShift<WeightKind::e2m1>(p), in[0].e2m1_tables, in[0].block.sums);
    }
    return;
  }
#if MF_GEMV_E4M3_TABLES
  BlockRows<WeightKind::e4m3>(p, n0, nullptr, rows);
  const bool codes = E4m3ScaleCodes(p);
  if (in[0].block.pairs != nullptr) {
    const std::uint16_t* pairs[kBatch];
    for (int b = 0; b < kBatch; ++b) pairs[b] = in[b].block.pairs;
    (codes ? BlockSumsDotBf16Codes<kBatch> : BlockSumsDotBf16<kBatch>)(rows, pairs, p.k, p.group, live,
                                                                       in[0].block.sums, in[0].block.redo);
    return;
  }
  const float* a[kBatch];
  for (int b = 0; b < kBatch; ++b) a[b] = in[b].block.a;
  (p.e4m3_per_group ? BlockSumsTables<true, kBatch>
   : codes          ? BlockSumsTables<false, kBatch, true>
                    : BlockSumsTables<false, kBatch>)(rows, a, p.k, p.group, live, ScaleShift<WeightKind::e4m3>(p),
                                             in[0].block.sums, in[0].block.redo);
#elif MF_GEMV_E4M3_LANES_BLOCKS
  BlockRows<WeightKind::e4m3>(p, n0, nullptr, rows);
  const float* a[kBatch];
  for (int b = 0; b < kBatch; ++b) a[b] = in[b].block.a;
  (E4m3ScaleCodes(p) ? BlockSumsLanes<false, kBatch, true>
   : in[0].block.fields
       ? BlockSumsLanes<true, kBatch>
       : BlockSumsLanes<false, kBatch>)(rows, a, p.k, p.group, live, in[0].block.sums, in[0].block.redo);
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
  const bool wide_e2m1 = MF_GEMV_E2M1_STRIDED && p.kind == WeightKind::e2m1;  // GemvBlock's lane order
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
