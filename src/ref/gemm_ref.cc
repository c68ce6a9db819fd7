// The scalar definitions of the GEMMs: the accumulation order of minifloat/gemm.h, written out loop by loop.
// The fast path (src/cpu/gemm.cc) is tested against these bit for bit.
#include <cmath>
#include <vector>

#include "gemm_problem.h"
#include "minifloat/gemm.h"

namespace mf {
namespace gemm {

// C[m, n] for every m and n of p, in the definition's order.
void reference(const Problem& p) {
  const std::int64_t groups = (p.k + p.group - 1) / p.group;
  std::vector<float> a(static_cast<std::size_t>(p.k)), c(static_cast<std::size_t>(p.n));
  std::vector<std::vector<float>> weights(static_cast<std::size_t>(p.n));
  for (std::int64_t j = 0; j < p.n; ++j) {
    weights[j].resize(static_cast<std::size_t>(p.k));
    for (std::int64_t i = 0; i < p.k; ++i) weights[j][i] = p.weight(j, i);
  }
  for (std::int64_t row = 0; row < p.m; ++row) {
    p.activation_values(row, 0, p.k, a.data());
    for (std::int64_t col = 0; col < p.n; ++col) {
      float sum = 0.0f;
      for (std::int64_t g = 0; g < groups; ++g) {
        float partial[kLanes] = {};
        for (std::int64_t i = g * p.group; i < std::min(p.k, (g + 1) * p.group); ++i) {
          partial[i % kLanes] = std::fma(a[i], weights[col][i], partial[i % kLanes]);
        }
        const float acc = tree_sum(partial);
        const float s = p.group_scale(row, col, g);
        const float scaled = s * acc;
        sum = sum + scaled;
      }
      c[col] = sum;
    }
    finish(p, row, 0, p.n, c.data());
  }
}

}  // namespace gemm

namespace ref {

void fp8_gemm(const QuantizedTensor& a, const QuantizedTensor& w, GemmOut out, const GemmOptions& o) {
  gemm::reference(gemm::fp8_problem("fp8_gemm", a, w, out, o));
}
void fp4_gemm(const QuantizedTensor& a, const QuantizedTensor& w, GemmOut out, const GemmOptions& o) {
  gemm::reference(gemm::fp4_problem(a, w, out, o));
}
void weight_only_gemm(const float* a, std::int64_t m, const QuantizedTensor& w, GemmOut out, const GemmOptions& o) {
  gemm::reference(gemm::weight_only_problem(nullptr, a, m, w, out, o));
}
void weight_only_gemm(const std::uint16_t* a_bf16, std::int64_t m, const QuantizedTensor& w, GemmOut out,
                      const GemmOptions& o) {
  gemm::reference(gemm::weight_only_problem(a_bf16, nullptr, m, w, out, o));
}
void bf16_gemm(const std::uint16_t* a, const std::uint16_t* w, std::int64_t m, std::int64_t n, std::int64_t k,
               GemmOut out, const GemmOptions& o) {
  gemm::reference(gemm::plain_problem(a, nullptr, w, nullptr, m, n, k, out, o));
}
void f32_gemm(const float* a, const float* w, std::int64_t m, std::int64_t n, std::int64_t k, GemmOut out,
              const GemmOptions& o) {
  gemm::reference(gemm::plain_problem(nullptr, a, nullptr, w, m, n, k, out, o));
}

}  // namespace ref
}  // namespace mf
