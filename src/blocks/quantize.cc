// The public block-quantization API: rotation, input widening and output narrowing around the fast path.
#include "minifloat/quantize.h"

#include <omp.h>

#include <bit>
#include <vector>

#include "../cpu/quantize_fast.h"
#include "blocking.h"
#include "minifloat/codec.h"
#include "minifloat/hadamard.h"
#include "minifloat/pack.h"

namespace mf {

std::int64_t QuantizedTensor::count() const {
  std::int64_t n = 1;
  for (const std::int64_t d : shape) n *= d;
  return n;
}
std::int64_t QuantizedTensor::cols() const { return shape.empty() ? 1 : shape.back(); }
std::int64_t QuantizedTensor::rows() const { return cols() == 0 ? 0 : count() / cols(); }
std::size_t QuantizedTensor::nbytes() const { return codes.size() + scales.size() + (scheme.tensor_scale ? 4 : 0); }

std::uint32_t QuantizedTensor::scale_code(std::int64_t block_row, std::int64_t block_col) const {
  if (layout == Layout::ggml) {
    const std::int64_t blocks_per_row = cols() / kGgmlBlockValues;
    return codes[static_cast<std::size_t>((block_row * blocks_per_row + block_col) * 17)];
  }
  const std::size_t i = static_cast<std::size_t>(block_row * scale_shape.back() + block_col);
  if (!(*scheme.scale_format == f32)) return scales[i];
  std::uint32_t bits = 0;
  for (int b = 0; b < 4; ++b) bits |= static_cast<std::uint32_t>(scales[4 * i + b]) << (8 * b);
  return bits;
}

float scale_divisor(const Scheme& s, std::uint32_t code, float tensor_scale) {
  if (*s.scale_format == ue8m0 && !s.tensor_scale) return code == 0xFF ? NAN : pow2f(static_cast<int>(code) - 127);
  const float S = decode(*s.scale_format, code);
  return s.tensor_scale ? S * tensor_scale : S;
}

void quantize(const float* x, std::span<const std::int64_t> shape, const Scheme& scheme, const QuantizeOptions& options,
              QuantizedTensor& out) {
  const detail::Geometry g = detail::blocking(shape, scheme, options);
  std::vector<float> rotated;
  if (options.rotate) {
    rotated.assign(x, x + g.count());
    rotate(rotated.data(), rotated.size(), options.rotate);
    x = rotated.data();
  }
  cpu::quantize_fast(x, InputType::f32, shape, scheme, options, nullptr, out);
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
  if (!options.rotate) return cpu::quantize_fast(x, type, shape, scheme, options, nullptr, out);
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
  cpu::dequantize_fast(q, out, threads);
  if (q.rotate) rotate(out, static_cast<std::size_t>(q.count()), q.rotate);
}

void dequantize_bf16(const QuantizedTensor& q, std::uint16_t* out, int threads) {
  std::vector<float> wide(static_cast<std::size_t>(q.count()));
  dequantize(q, wide.data(), threads);
  const auto n = static_cast<std::int64_t>(wide.size());
#pragma omp parallel for num_threads(threads > 0 ? threads : omp_get_max_threads()) schedule(static)
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
  cpu::quantize_fast(src, InputType::f32, shape, scheme, options, out, unused);
  if (options.rotate) rotate(out, static_cast<std::size_t>(g.count()), options.rotate);
}

QuantizedTensor requantize(const QuantizedTensor& q, const Scheme& scheme, const QuantizeOptions& options) {
  std::vector<float> values(static_cast<std::size_t>(q.count()));
  dequantize(q, values.data(), options.threads);
  return quantize(values.data(), q.shape, scheme, options);
}

}  // namespace mf
