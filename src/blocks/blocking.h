// Internal: the geometry of a blocked tensor and the parts of quantization that do not depend on how codes are
// computed (validation, scale storage, code layout). Shared by the reference (src/ref) and the fast path (src/cpu).
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "minifloat/quantize.h"
#include "minifloat/scale.h"

namespace mf::detail {

struct Geometry {
  std::int64_t rows = 0, cols = 0;              // the 2-D view
  std::int64_t br = 1, bc = 1;                  // block rows and columns
  std::int64_t block_rows = 0, block_cols = 0;  // blocks along each dimension (ceil)
  std::int64_t count() const { return rows * cols; }
  std::int64_t blocks() const { return block_rows * block_cols; }
};

// Validates shape, scheme and options together; throws QuantizeError naming the problem.
Geometry blocking(std::span<const std::int64_t> shape, const Scheme& s, const QuantizeOptions& o);

// Fills in everything but codes, scales and tensor scale; q's buffers keep their capacity for reuse.
void init_result(QuantizedTensor& q, std::span<const std::int64_t> shape, const Scheme& s, const QuantizeOptions& o,
                 const Geometry& g);

// max |x| over finite values (0 if none).
float finite_amax(const float* x, std::int64_t n);

// The power-of-two scale with the least squared error over one block (rule mse). values: the block's elements.
BlockScale mse_scale(const Scheme& s, std::span<const float> values, float amax, float tensor_scale);
// Rule 4over6 over one finite block: the M=6 scale (ue4m3(amax / 6 / ts)) or the M=4 one (1.5 times that ideal,
// then ue4m3), whichever gives the smaller sum of squared errors; a tie keeps M=6 (fouroversix select_fouroversix).
BlockScale four_over_six_scale(const Scheme& s, std::span<const float> values, float amax, float tensor_scale);

// The error a NaN or Inf at flat index `i` raises under nonfinite = error.
[[noreturn]] void throw_nonfinite(const QuantizedTensor& q, std::int64_t i, float value, const std::string& tensor);

// Stores one-code-per-byte element codes in q's layout, then the block scale codes (row-major over blocks); the
// ggml layout interleaves the scales with the codes, so codes go first.
void store_codes(QuantizedTensor& q, std::span<const std::uint8_t> codes);
void store_scales(QuantizedTensor& q, std::span<const std::uint32_t> scale_codes);
// The inverse: one code per byte, and one divisor per block.
void load_codes(const QuantizedTensor& q, std::span<std::uint8_t> codes);
std::vector<float> load_divisors(const QuantizedTensor& q);
void load_divisors(const QuantizedTensor& q, std::vector<float>& out);  // into out, keeping its capacity
// out[c] = scale_divisor(s, c, tensor_scale) for every one-byte scale code c. ue8m0 without a tensor scale (MX and
// DeepSeek scales: every GEMM call reads a weight's and an activation's) is copied from a table built once.
void divisor_table(const Scheme& s, float tensor_scale, std::array<float, 256>& out);

// The divisors of one block row at a time (what load_divisors returns, without a tensor-sized array): one-byte scale
// codes through a table of their 256 divisors built once.
class RowDivisors {
 public:
  explicit RowDivisors(const QuantizedTensor& q);
  void operator()(std::int64_t block_row, float* out) const;  // out[0, block_cols)

 private:
  const QuantizedTensor& q_;
  Geometry g_;
  bool by_table_;
  std::array<float, 256> table_{};
};

Geometry geometry_of(const QuantizedTensor& q);

}  // namespace mf::detail
