// minifloat/quantize.h: block-scaled tensors. Quantize, dequantize, fake-quantize and requantize
// (docs/spec.md#block-scaling).
//
// A tensor of shape [..., cols] is viewed as rows x cols (rows = product of the leading dimensions) and split into
// blocks of the scheme's Br x Bc. Each block gets a scale S from the scheme's rule; each element is stored as
// round(x / S) in the element type, saturated to +-max. Dequantized value = element * S (* tensor scale).
//
// mf::quantize and friends run the fast path (Highway SIMD, OpenMP threads); mf::ref:: the scalar reference that
// defines the results. The two are bit-identical; tests/simd checks it on every compiled SIMD target.
#pragma once

#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "minifloat/scheme.h"

namespace mf {

enum class InputType : std::uint8_t { f32, bf16, f16 };

struct QuantizeOptions {
  Layout layout = Layout::packed;
  NonFinite nonfinite = NonFinite::nan;
  bool pad = false;  // allow partial edge blocks (scaled over their valid elements only)
  int rotate = 0;    // Hadamard group size applied before quantization and undone after dequantization
  int threads = 0;   // 0: all (OpenMP's default)
  // Two-level schemes (NVFP4): the tensor's amax when the caller knows it (calibrated, or the previous step's as in
  // Transformer Engine's delayed scaling), which saves a pass over the input; values above it saturate. 0: computed
  // from the input (after the rotation, if any).
  float tensor_amax = 0.0f;
  // Two-level schemes: the tensor scale itself when the caller holds it (a checkpoint's, or vLLM's k_scale / v_scale
  // for an NVFP4 KV cache): > 0 and finite; it replaces tensor_amax. 0: from tensor_amax or the input.
  float tensor_scale = 0.0f;
  std::string tensor_name = "x";  // names the tensor in error messages
};

// Bad input for quantization: a shape the scheme cannot block, a NaN with nonfinite = error, a bad option.
struct QuantizeError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

struct QuantizedTensor {
  std::vector<std::int64_t> shape;  // the original tensor's shape
  Scheme scheme;
  Layout layout = Layout::packed;
  int rotate = 0;                         // Hadamard group size applied before quantization (0: none)
  std::vector<std::uint8_t> codes;        // elements, laid out as `layout` says (ggml: blocks with their scales)
  std::vector<std::uint8_t> scales;       // [scale_shape]: one byte per ue8m0/ue4m3 code, 4 (little-endian) per f32
  std::vector<std::int64_t> scale_shape;  // [rows, ceil(cols/Bc)] or [ceil(rows/Br), ceil(cols/Bc)]; empty for ggml
  float tensor_scale = 1.0f;              // the second-level scale of two-level schemes (NVFP4)

  std::int64_t count() const;  // number of elements
  std::int64_t rows() const;
  std::int64_t cols() const;
  std::size_t nbytes() const;  // codes + scales (+ 4 for the tensor scale)
  std::uint32_t scale_code(std::int64_t block_row, std::int64_t block_col) const;  // ggml layout too
};

// Quantize x (count = product of shape, row-major) into `scheme`. Throws QuantizeError for bad input.
QuantizedTensor quantize(const float* x, std::span<const std::int64_t> shape, const Scheme& scheme,
                         const QuantizeOptions& options = {});
// The same into `out`, reusing its buffers: no allocation (or page faults) when a loop quantizes same-sized tensors.
void quantize(const float* x, std::span<const std::int64_t> shape, const Scheme& scheme, const QuantizeOptions& options,
              QuantizedTensor& out);
// From bf16 or f16 bits (exactly widened to f32 first).
QuantizedTensor quantize(const std::uint16_t* x, InputType type, std::span<const std::int64_t> shape,
                         const Scheme& scheme, const QuantizeOptions& options = {});
// out has q.count() elements.
void dequantize(const QuantizedTensor& q, float* out, int threads = 0);
void dequantize_bf16(const QuantizedTensor& q, std::uint16_t* out, int threads = 0);  // RNE
void quantize(const std::uint16_t* x, InputType type, std::span<const std::int64_t> shape, const Scheme& scheme,
              const QuantizeOptions& options, QuantizedTensor& out);
// Quantize and dequantize in one pass, with no intermediate tensor: out = dequantize(quantize(x)).
void fake_quantize(const float* x, float* out, std::span<const std::int64_t> shape, const Scheme& scheme,
                   const QuantizeOptions& options = {});
// Dequantize q and quantize the result into another scheme.
QuantizedTensor requantize(const QuantizedTensor& q, const Scheme& scheme, const QuantizeOptions& options = {});

// Throws QuantizeError unless q's codes and scales have the sizes its shape, scheme and layout call for (a tensor
// read from a file may not). dequantize() checks this first.
void validate(const QuantizedTensor& q);

// The divisor of one block given its scale code: decode(code) (* tensor scale); NaN for a NaN scale.
float scale_divisor(const Scheme& s, std::uint32_t code, float tensor_scale);

namespace ref {
// The scalar references: the definitions the fast path is tested against.
QuantizedTensor quantize(const float* x, std::span<const std::int64_t> shape, const Scheme& scheme,
                         const QuantizeOptions& options = {});
void dequantize(const QuantizedTensor& q, float* out);
}  // namespace ref

}  // namespace mf
