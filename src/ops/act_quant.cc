// act_quant: DeepSeek's per-token FP8 activation quantization, as a scheme of mf::quantize.
#include "../ref/gemm_problem.h"
#include "minifloat/gemm.h"

namespace mf {

QuantizedTensor act_quant(const float* x, std::span<const std::int64_t> shape, ActScale scale, int threads) {
  // fp8-1x128 with ue8m0 scales is rule rceil; with f32 scales, rule f32 (amax / 448). The deepseek profile clamps
  // amax to >= 1e-4 in both, as DeepSeek's act_quant kernels do.
  const Scheme s = with_profile(scheme_named(scale == ActScale::ue8m0 ? "fp8-1x128" : "e4m3-1x128-f32"),
                                Profile::deepseek);
  const std::int64_t k = shape.empty() ? 1 : shape.back();
  if (k % gemm::kActBlock != 0) {
    throw GemmError("act_quant: activation [..., " + std::to_string(k) + "]: K is not a multiple of 128");
  }
  QuantizeOptions o;
  o.threads = threads;
  return quantize(x, shape, s, o);
}

}  // namespace mf
