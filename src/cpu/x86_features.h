// Instruction set extensions that some kernels use beyond their Highway target, checked at run time.
#pragma once

namespace mf::gemm {

// Whether the e4m3 GEMV decodes with GFNI and AVX512-VBMI (gemv-inl.h, GroupProductsGfni): the CPU has both and no
// test has turned the decode off (to reach the plain AVX-512 one on such a CPU).
bool gemv_gfni();
void set_gemv_gfni_for_test(bool on);

}  // namespace mf::gemm
