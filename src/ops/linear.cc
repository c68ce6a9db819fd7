// linear(x, W): the GEMM that W's format calls for (docs/spec.md#gemm).
#include <bit>
#include <vector>

#include "../ref/gemm_problem.h"
#include "minifloat/gemm.h"

namespace mf {
namespace {

std::int64_t leading(std::span<const std::int64_t> shape) {
  std::int64_t rows = 1;
  for (std::size_t i = 0; i + 1 < shape.size(); ++i) rows *= shape[i];
  return rows;
}

void check_plain(const Weight& w, std::int64_t k) {
  const int set = (w.quantized != nullptr) + (w.bf16 != nullptr) + (w.f32 != nullptr);
  if (set != 1) throw GemmError("linear: set exactly one of the weight's quantized, bf16 or f32");
  if (!w.quantized && w.k != k) {
    throw GemmError("linear: activation [..., " + std::to_string(k) + "] and weight " + gemm::matrix_text(w.n, w.k) +
                    ": K differs");
  }
}

}  // namespace

void linear(const float* x, std::span<const std::int64_t> x_shape, const Weight& w, GemmOut out, const GemmOptions& o) {
  const std::int64_t k = x_shape.empty() ? 1 : x_shape.back(), m = leading(x_shape);
  check_plain(w, k);
  // The quantized or rounded activations live in this thread's buffers, so that a decode loop calling linear() per
  // layer and token allocates nothing once they have grown to its largest shape.
  if (w.quantized && w.weight_only) return weight_only_gemm(x, m, *w.quantized, out, o);
  if (w.quantized) {
    thread_local QuantizedTensor a;
    const QuantizedTensor& q = *w.quantized;
    const bool fp4 = q.scheme.element.format == &e2m1;
    const ActScale scale = !fp4 && *q.scheme.scale_format == f32 ? ActScale::f32 : ActScale::ue8m0;
    act_quant(x, x_shape, scale, o.threads, a);
    return fp4 ? fp4_gemm(a, q, out, o) : fp8_gemm(a, q, out, o);
  }
  if (w.f32) return f32_gemm(x, w.f32, m, w.n, k, out, o);
  thread_local std::vector<std::uint16_t> xb;
  xb.resize(static_cast<std::size_t>(m * k));
  for (std::size_t i = 0; i < xb.size(); ++i) xb[i] = gemm::bf16_rne(x[i]);
  bf16_gemm(xb.data(), w.bf16, m, w.n, k, out, o);
}

std::vector<float> linear(const float* x, std::span<const std::int64_t> x_shape, const Weight& w, int threads) {
  std::vector<float> y(static_cast<std::size_t>(leading(x_shape) * w.rows()));
  GemmOptions o;
  o.threads = threads;
  linear(x, x_shape, w, GemmOut{y.data(), nullptr}, o);
  return y;
}

}  // namespace mf
