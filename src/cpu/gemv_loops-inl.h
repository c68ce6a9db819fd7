// Which GEMV loop runs, per Highway target capability and element family: the one table. Each row is a macro that
// holds where its loop is compiled, by capability (a lower HWY_TARGET is a newer target, so newer targets keep the
// row), with the loop it names and a one-line why above it; the GEMV's files (gemv-inl.h and the gemv_*-inl.h it
// includes) test only these rows. For one family, the first row that the target has and the weights' shape fits is
// the loop that runs; where a row names two loops, gemm_dispatch.h's GemvChoice picks one (by the CPU's maker: the
// bits are the same, and the tests run both). docs/gemm.md gives the measurements behind each why.
//
// Included once per Highway target through gemv-inl.h; hence the toggle include guard. The rows expand where they
// are tested, so each target reads its own HWY_TARGET.
#if defined(MINIFLOAT_SRC_CPU_GEMV_LOOPS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef MINIFLOAT_SRC_CPU_GEMV_LOOPS_INL_H_
#undef MINIFLOAT_SRC_CPU_GEMV_LOOPS_INL_H_
#else
#define MINIFLOAT_SRC_CPU_GEMV_LOOPS_INL_H_
#endif

#include "hwy/highway.h"

// ---- e4m3 (gemv_e4m3-inl.h), newest capability first ----
// AVX3_DL and newer (AVX512-VBMI), groups of whole 64-code lines (E4m3WholeLines): BlockSumsDotBf16 where
// DotBf16Pairs, else BlockSumsTables; batched.
// Why: VBMI's byte tables decode to f32 values, never subnormal, and need no NaN look on the side.
#define MF_GEMV_E4M3_TABLES (HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3_DL)
// AVX3 and newer, the other groups (every group on AVX3): GroupProductsOptimistic through fp16, checked on a NaN.
// Why: 16 lanes, and the NaN codes looked for on the side: two operations per 64 codes, where the check takes 3 per 16.
#define MF_GEMV_E4M3_OPTIMISTIC (HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3)
// AVX2 without AVX-512, per-group factors in whole 64-code lines (E4m3Batched): BlockSumsLanes, fields in f32 place
// or through fp16; batched. Why: four rows' sums stay in the 16 registers, and the NaN look rides the multiplying pass.
#define MF_GEMV_E4M3_LANES_BLOCKS (HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2 && HWY_TARGET > HWY_AVX3)
// 8 lanes or fewer but HWY_SCALAR, the other groups of whole 32s: GroupProducts<kNanCheck = false>, checked on a NaN.
// Why: a byte minimum per 32 codes on the side, where the per-vector check takes three operations per 8.
#define MF_GEMV_E4M3_UNCHECKED (!(HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3) && HWY_TARGET != HWY_SCALAR)
// Otherwise (HWY_SCALAR, or groups not whole 32s on 8-lane targets): GroupProducts with the per-vector NaN check.
// The decode of every e4m3 loop but the tables' (LoadE4m3): AVX2 and newer through fp16 (value x 2^-8); narrower
// targets with the fields in f32 place (value x 2^-120). Why: F16C never hands the fma an f32 subnormal (an assist
// per fma on Intel's cores); BlockSumsLanes may still place the fields (GemvChoice: AMD's cores take no assist).
#define MF_GEMV_E4M3_FP16 (HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2)

// ---- e2m1 (gemv_e2m1-inl.h) ----
// AVX3 and newer: BlockSumsE2m1 in the strided lane order, from a 16-value table per scale code; batched.
// Why: one 16-entry lane permute reads value x scale for 16 weights, and the tree runs in that lane order.
#define MF_GEMV_E2M1_STRIDED (HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3)
// AVX3_DL and newer (AVX512-VBMI), activations that are e4m3 values (act_quant's), where the CPU's AVX512-BF16 dot
// product rounds as two fmas and gemv_e4m3_bf16_dot_chosen(): BlockSumsE2m1DotBf16 (gemv_e2m1_dot-inl.h), else the
// row above. Why: a two-source byte permute, a word table and one dot product per 32 weights, where the row above
// takes two broadcasts, two shifts, two permutes and two fmas (on one Zen 4 thread in L2: mxfp4 1.2x, nvfp4 1.07x).
#define MF_GEMV_E2M1_DOT (HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3_DL)
// AVX2 without AVX-512: BlockSumsE2m1 by codec::E2m1x8Table's eight values per scale code; batched.
// Why: one look-up per 8 weights of a shared scale (two per 16 were 5-10% slower in L2), four rows' sums in registers.
#define MF_GEMV_E2M1_TABLE8 (HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2 && HWY_TARGET > HWY_AVX3)
// 8 lanes or fewer but HWY_SCALAR (AVX2 takes the row above): GroupProducts on codec::DecodeE2m1Lanes x the scale.
// Why: the portable lane decode, for targets without a table loop of their own; one activation row at a time.
#define MF_GEMV_E2M1_LANES (!(HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3) && HWY_TARGET != HWY_SCALAR)
// HWY_SCALAR: no e2m1 GEMV (GemvFits), the register tiles instead.

// ---- bf16 (gemv_bf16-inl.h): GroupProducts on every target, widened by LoadBf16. Why: its decode is one shift. ----

// ---- the loops every family shares (gemv_blocks-inl.h, gemv_rows-inl.h, gemv-inl.h) ----
// 8 lanes or fewer: GroupProducts takes the bf16 and e4m3 rows 8 at a time (16 at once on AVX-512).
// Why: rows a multiple of 4 KiB long share an L1 set, and 16 lines of one overflow an 8-way L1 (half speed on AVX2).
#define MF_GEMV_ROWS_BY_8 (!(HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3))
// AVX2 without AVX-512: RowProducts takes four weight rows at a time through a group.
// Why: 16 rows' 32 accumulators overflow the 16 registers; four rows' 8 stay there (fp8 5-8%, mxfp4 3-9% faster).
#define MF_GEMV_ROWS4 (HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2 && HWY_TARGET > HWY_AVX3)
// x86: each row's next lines asked into L2 ahead of the loop (PrefetchRowAhead).
// Why: a block's 16 row streams are short and slow, the hardware prefetchers follow them late; hwy::Prefetch is L1.
#define MF_GEMV_PREFETCH_L2 HWY_ARCH_X86
// Where a batched row above is compiled: GemvColumns makes a block's group sums for up to kGemvBatch activation rows
// at once (BlockSumsOfRows). Why: each weight is decoded once for the batch, not once per row.
#define MF_GEMV_BATCHED \
  (MF_GEMV_E4M3_TABLES || MF_GEMV_E4M3_LANES_BLOCKS || MF_GEMV_E2M1_STRIDED || MF_GEMV_E2M1_TABLE8)

#endif  // include guard
