// act_quant: DeepSeek's per-token FP8 activation quantization, as a scheme of mf::quantize.
#include "../ref/gemm_problem.h"
#include "minifloat/gemm.h"

namespace mf {

void act_quant(const float* x, std::span<const std::int64_t> shape, ActScale scale, int threads, QuantizedTensor& out) {
  // fp8-1x128 with ue8m0 scales is rule rceil; with f32 scales, rule f32 (amax / 448). The deepseek profile clamps
  // amax to >= 1e-4 in both, as DeepSeek's act_quant kernels do. Parsed once: a decode step calls this per layer.
  static const Scheme ue8m0_scheme = with_profile(scheme_named("fp8-1x128"), Profile::deepseek);
  static const Scheme f32_scheme = with_profile(scheme_named("e4m3-1x128-f32"), Profile::deepseek);
  const std::int64_t k = shape.empty() ? 1 : shape.back();
  if (k % gemm::kActBlock != 0) {
    throw GemmError("act_quant: activation [..., " + std::to_string(k) + "]: K is not a multiple of 128");
  }
  QuantizeOptions o;
  o.threads = threads;
  quantize(x, shape, scale == ActScale::ue8m0 ? ue8m0_scheme : f32_scheme, o, out);
}

QuantizedTensor act_quant(const float* x, std::span<const std::int64_t> shape, ActScale scale, int threads) {
  QuantizedTensor q;
  act_quant(x, shape, scale, threads, q);
  return q;
}

}  // namespace mf
