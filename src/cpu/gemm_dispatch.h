// Internal: the GEMM kernels' entry (compute, for src/ops/gemm.cc), and which per-target GEMM path Highway's dispatch
// runs, for the tests and benchmarks that check a target reaches its own path (the public entry points are in
// include/minifloat/gemm.h).
#pragma once

#include "../ref/gemm_problem.h"

namespace mf::gemm {

// The problem computed by the fastest path this target has (the GEMV, the column-lane tile, the panel kernels, or
// the reference where only a real fma gives the definition's result), its columns spread over p.threads threads:
// the kernels behind fp8_gemm, fp4_gemm, bf16_gemm and f32_gemm (src/ops/gemm.cc).
void compute(Problem p);

// compute() opens an OpenMP region only above this many multiply-adds (M x N x K); smaller calls run on the calling
// thread. Measured at M = 1 on SmolLM2-135M's shapes (Zen 4, 2 threads, wall clock, workers spinning as OpenMP leaves
// them between calls): [576, 640] (369 Ki) took 10-11 us on two threads against 16 on one, [1536, 640] 23-25 against
// 42-53, while [192, 640] (123 Ki) gained nothing it kept from run to run (5.3-8.4 against 5.9-6.0 us). Under
// OMP_WAIT_POLICY=passive a region's start wakes sleeping threads, about 8 us: [576, 640] then took 24-26 us on two.
// (It was 2^20, which kept every SmolLM2 decode shape on one thread.)
inline constexpr double kParallelMacs = 1 << 18;

// The decode of the e4m3 GEMV (M = 1) on the target dispatch picks now: "tables" (AVX3_DL and newer: AVX512-VBMI's
// byte tables, to f32 values that are never subnormal, for groups of whole 64-code lines; others go through fp16 as
// on AVX3; src/cpu/gemv_e4m3-inl.h, and the table of which loop runs where in gemv_loops-inl.h), "avx512" (AVX3: 16
// lanes through fp16) or "lanes" (narrower targets: 8 lanes, on AVX2 through fp16 or, for per-group factors where
// gemv_e4m3_f32_fields_chosen(), with the fields in f32 place; in f32 place on SSE4 and below).
const char* gemv_e4m3_decode();

// Where two e4m3 GEMV loops give the same bits, which one runs: `faster` (the default) the one measured faster on
// the CPU's maker, `always` the second named below (where it can run), `never` the first. Tests and benchmarks pin
// each in turn.
enum class GemvChoice { faster, always, never };

// Where the CPU's AVX512-BF16 dot product rounds as two fmas (gemv_e4m3-inl.h), the e4m3 GEMV with per-group factors
// has two loops on AVX3_DL: the table decode's f32 fmas and the dot product. `faster` runs the dot product on AMD's
// CPUs (Zen 4: 1.1-2x the GFNI loop the fmas had then), the fmas on Intel's (a Sapphire Rapids-class Xeon, where the
// dot product issues at a quarter of the fma's rate: 40 GFLOP/s against 48-53 with the weights cached;
// docs/benchmark-history.md#what-holds-the-streamed-m--1-gemv-below-the-read-bandwidth-2026-12-02-2145-2215 and
// docs/benchmark-history.md#subnormal-weight-codes-2026-12-03-1315).
void choose_gemv_e4m3_bf16_dot(GemvChoice choice);
// Whether the choice lets the dot product run on this CPU (before its capability checks).
bool gemv_e4m3_bf16_dot_chosen();
// Whether the dot product can run on the target dispatch picks now (AVX3_DL or newer, a dot product that rounds as
// two fmas), whatever the choice.
bool gemv_e4m3_bf16_dot_available();
// Whether it runs there: available and chosen.
bool gemv_e4m3_bf16_dot();

// On AVX2 the e4m3 GEMV with per-group factors decodes the codes through fp16 or moves their fields into f32 place
// (value x 2^-120: an f32 subnormal for a subnormal code, one instruction less per 8 codes). `faster` places the
// fields on AMD's CPUs, which multiply f32 subnormals at full speed (Zen 3: 1.1-1.3x the same loop through fp16 on
// one thread with the weights in L2,
// docs/benchmark-history.md#the-avx2-fp8-gemv-block-by-block-and-its-two-decodes-2026-12-03-1555-1640), and goes
// through fp16 on Intel's, which take a microcode assist for every fma that reads one (docs/gemm.md).
void choose_gemv_e4m3_f32_fields(GemvChoice choice);
bool gemv_e4m3_f32_fields_chosen();
// Whether the target dispatch picks now has the two AVX2 loops (AVX2, not AVX-512).
bool gemv_e4m3_f32_fields_available();

}  // namespace mf::gemm
