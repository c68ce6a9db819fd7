// Internal: which per-target GEMM path Highway's dispatch runs, for the tests and benchmarks that check a target
// reaches its own path (the public entry points are in include/minifloat/gemm.h).
#pragma once

namespace mf::gemm {

// The decode of the e4m3 GEMV (M = 1) on the target dispatch picks now: "gfni" (AVX3_DL and newer: GFNI and
// AVX512-VBMI, src/cpu/gemv-inl.h), "avx512" (AVX3: fields shifted into place) or "lanes" (narrower targets).
const char* gemv_e4m3_decode();

// Whether the e4m3 GEMV may multiply with AVX512-BF16's dot product where the CPU's rounds as two fmas (weights with
// per-group factors; gemv-inl.h): true unless a test or benchmark turned it off, to run the GFNI loop on such a CPU.
bool gemv_e4m3_bf16_dot_allowed();
void allow_gemv_e4m3_bf16_dot(bool allow);
// Whether it does on the target dispatch picks now (and is allowed).
bool gemv_e4m3_bf16_dot();

}  // namespace mf::gemm
