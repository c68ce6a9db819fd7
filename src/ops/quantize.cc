// The public block-quantization API: rotation, input widening and output narrowing around the fast path.
#include "minifloat/quantize.h"

#include <bit>
#include <vector>

#include "../blocks/blocking.h"
#include "../cpu/quantize_dispatch.h"
#include "../cpu/thread_count.h"
#include "minifloat/codec.h"
#include "minifloat/hadamard.h"
#include "minifloat/pack.h"

namespace mf {

void quantize(const float* x, std::span<const std::int64_t> shape, const Scheme& scheme, const QuantizeOptions& options,
              QuantizedTensor& out) {
  const detail::Geometry g = detail::blocking(shape, scheme, options);
  std::vector<float> rotated;
  if (options.rotate) {
    rotated.assign(x, x + g.count());
    rotate(rotated.data(), rotated.size(), options.rotate);
    x = rotated.data();
  }
  cpu::quantize_blocks(x, InputType::f32, shape, scheme, options, nullptr, out);
}

QuantizedTensor quantize(const float* x, std::span<const std::int64_t> shape, const Scheme& scheme,
                         const QuantizeOptions& options) {
  QuantizedTensor q;
  quantize(x, shape, scheme, options, q);
  return q;
}

void quantize(const std::uint16_t* x, InputType type, std::span<const std::int64_t> shape, const Scheme& scheme,
              const QuantizeOptions& options, QuantizedTensor& out) {
  if (type == InputType::f32) throw QuantizeError("f32 input takes the float* overload");
  const detail::Geometry g = detail::blocking(shape, scheme, options);
  if (!options.rotate) return cpu::quantize_blocks(x, type, shape, scheme, options, nullptr, out);
  std::vector<float> wide(static_cast<std::size_t>(g.count()));
  cpu::widen(x, type, g.count(), wide.data(), options.threads);
  quantize(wide.data(), shape, scheme, options, out);
}

QuantizedTensor quantize(const std::uint16_t* x, InputType type, std::span<const std::int64_t> shape,
                         const Scheme& scheme, const QuantizeOptions& options) {
  QuantizedTensor q;
  quantize(x, type, shape, scheme, options, q);
  return q;
}

void dequantize(const QuantizedTensor& q, float* out, int threads) {
  validate(q);
  cpu::dequantize_blocks(q, out, threads);
  if (q.rotate) rotate(out, static_cast<std::size_t>(q.count()), q.rotate);
}

void dequantize_bf16(const QuantizedTensor& q, std::uint16_t* out, int threads) {
  std::vector<float> wide(static_cast<std::size_t>(q.count()));
  dequantize(q, wide.data(), threads);
  const auto n = static_cast<std::int64_t>(wide.size());
#pragma omp parallel for num_threads(cpu::thread_count(threads)) schedule(static)
  for (std::int64_t i = 0; i < n; ++i) out[i] = static_cast<std::uint16_t>(encode(bf16, wide[i]));
}

void fake_quantize(const float* x, float* out, std::span<const std::int64_t> shape, const Scheme& scheme,
                   const QuantizeOptions& options) {
  const detail::Geometry g = detail::blocking(shape, scheme, options);
  const float* src = x;
  if (options.rotate) {  // rotate into out, quantize from there in place (rows are read before they are written)
    std::copy(x, x + g.count(), out);
    rotate(out, static_cast<std::size_t>(g.count()), options.rotate);
    src = out;
  }
  QuantizedTensor unused;
  cpu::quantize_blocks(src, InputType::f32, shape, scheme, options, out, unused);
  if (options.rotate) rotate(out, static_cast<std::size_t>(g.count()), options.rotate);
}

QuantizedTensor requantize(const QuantizedTensor& q, const Scheme& scheme, const QuantizeOptions& options) {
  std::vector<float> values(static_cast<std::size_t>(q.count()));
  dequantize(q, values.data(), options.threads);
  return quantize(values.data(), q.shape, scheme, options);
}

}  // namespace mf
