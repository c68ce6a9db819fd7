// The GEMM's public entry points (gemm.h): each call's operands checked into one Problem (src/ref/gemm_problem.h),
// then computed by the kernels (src/cpu/gemm.cc).
#include <utility>

#include "../cpu/gemm_dispatch.h"
#include "../ref/gemm_problem.h"
#include "minifloat/gemm.h"

namespace mf {
namespace {

// The kernels, or the scalar definition for what no fast path takes (Problem::reference_only). Moved, not copied:
// a copy of its vectors would allocate in every call of a decode loop (tests/unit/linear_allocation_test.cc).
void run(gemm::Problem p) {
  if (p.reference_only) return gemm::reference(p);
  gemm::compute(std::move(p));
}

}  // namespace

void fp8_gemm(const QuantizedTensor& a, const QuantizedTensor& w, GemmOut out, const GemmOptions& o) {
  gemm::compute(gemm::fp8_problem("fp8_gemm", a, w, out, o));
}
void fp4_gemm(const QuantizedTensor& a, const QuantizedTensor& w, GemmOut out, const GemmOptions& o) {
  run(gemm::fp4_problem(a, w, out, o));
}
void weight_only_gemm(const float* a, std::int64_t m, const QuantizedTensor& w, GemmOut out, const GemmOptions& o) {
  run(gemm::weight_only_problem(nullptr, a, m, w, out, o));
}
void weight_only_gemm(const std::uint16_t* a_bf16, std::int64_t m, const QuantizedTensor& w, GemmOut out,
                      const GemmOptions& o) {
  run(gemm::weight_only_problem(a_bf16, nullptr, m, w, out, o));
}
void bf16_gemm(const std::uint16_t* a, const std::uint16_t* w, std::int64_t m, std::int64_t n, std::int64_t k,
               GemmOut out, const GemmOptions& o) {
  gemm::compute(gemm::plain_problem(a, nullptr, w, nullptr, m, n, k, out, o));
}
void f32_gemm(const float* a, const float* w, std::int64_t m, std::int64_t n, std::int64_t k, GemmOut out,
              const GemmOptions& o) {
  gemm::compute(gemm::plain_problem(nullptr, a, nullptr, w, m, n, k, out, o));
}

}  // namespace mf
