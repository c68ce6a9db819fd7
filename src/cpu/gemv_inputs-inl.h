// Each activation row as the GEMV's loops read it (GemvInputs; BlockSumsInputs: the group sums a batched loop made
// ahead for it), and the buffers behind them, kept per thread from call to call (GemvBuffers).
//
// Included once per Highway target through gemv-inl.h; hence the toggle include guard.
#if defined(MINIFLOAT_SRC_CPU_GEMV_INPUTS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef MINIFLOAT_SRC_CPU_GEMV_INPUTS_INL_H_
#undef MINIFLOAT_SRC_CPU_GEMV_INPUTS_INL_H_
#else
#define MINIFLOAT_SRC_CPU_GEMV_INPUTS_INL_H_
#endif

#include <array>
#include <cstdint>
#include <vector>

#include "hwy/aligned_allocator.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace mf::gemm {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Every group of a block summed at once (GemvInputsOf says where), for a batch of activation rows before GemvBlock
// reads them (BlockSumsOfRows): e4m3 on AVX3_DL by BlockSumsDotBf16 where `pairs` (DotBf16Pairs), else by
// BlockSumsTables from `a` (the activation row, halved where the factors go per group); on AVX2 by BlockSumsLanes
// (`a` scaled as `fields` says); e2m1 on 16-lane targets and AVX2 by BlockSumsE2m1. `sums` and `redo` are the row's
// own room for a block's group sums ([groups][16]) and NaN flags ([groups]; e2m1: the groups a scale keeps from the dot
// product); the rows' rooms follow each other.
struct BlockSumsInputs {
  const std::uint16_t* pairs;  // e4m3: DotBf16Pairs; e2m1: E2m1DotPairs
  const float* a;
  float* sums;          // [groups][16]
  std::uint8_t* redo;   // [groups]
  bool fields = false;  // AVX2: BlockSumsLanes<true>
};

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
  std::int64_t live;              // a multiple of 32 with a[k] == ±0 from there on (BlockSumsTables, BlockSumsDotBf16)
  const float* scaled = nullptr;  // GemvRowBuffers::scaled
  BlockSumsInputs block{};        // sums == nullptr: groups one by one (GroupSums)
  const float* strided = nullptr;      // e2m1 on 16-lane targets: StridedActivations
  const float* e2m1_tables = nullptr;  // e2m1 on 16-lane targets and AVX2: E2m1Tables
  // e2m1 by the dot product (block.pairs set, AVX3_DL): E2m1DotTables' bf16 words and scale kinds
  const std::uint16_t* e2m1_bf16 = nullptr;
  const std::uint8_t* e2m1_bf16_scale = nullptr;
  int e2m1_bf16_exact_first = 0, e2m1_bf16_exact_length = 0;
};
struct GemvBuffers {
  std::vector<GemvRowBuffers> rows;      // one per activation row
  std::vector<GemvInputs> inputs;        // GemvInputsOf, one per activation row
  std::vector<float> block_sums;         // BlockSumsInputs::sums, [groups][16], for one block at a time
  std::vector<std::uint8_t> block_redo;  // and [groups]
  // e2m1 (16-lane targets and AVX2): per scale code the 16 e2m1 values times its scale, and the scales they are of
  hwy::AlignedFreeUniquePtr<float[]> e2m1_tables;
  std::array<float, 256> e2m1_tables_of{};
  // e2m1 by the dot product (AVX3_DL): per scale code 32 bf16 words and its kind (E2m1DotTables), and the scales
  hwy::AlignedFreeUniquePtr<std::uint16_t[]> e2m1_bf16;
  std::array<std::uint8_t, 256> e2m1_bf16_scale{};
  std::array<float, 256> e2m1_bf16_of{};
  int e2m1_bf16_exact_first = 0, e2m1_bf16_exact_length = 0;  // the longest run of exact codes
};
HWY_INLINE GemvBuffers& ThreadGemvBuffers() {
  static thread_local GemvBuffers buffers;
  return buffers;
}

}  // namespace HWY_NAMESPACE
}  // namespace mf::gemm
HWY_AFTER_NAMESPACE();

#endif  // include guard
