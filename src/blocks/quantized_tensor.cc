// QuantizedTensor's accessors and the scale divisor: plain data access, apart from the quantize paths so that a
// build with only the scalar reference (the WebAssembly page) links them too.
#include <cmath>

#include "minifloat/codec.h"
#include "minifloat/pack.h"
#include "minifloat/quantize.h"

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

}  // namespace mf
