// Internal: the fast path's entry points, called by the public API in src/ops/quantize.cc.
#pragma once

#include <cstdint>
#include <span>

#include "minifloat/quantize.h"

namespace mf::cpu {

// Quantize x (already rotated when options.rotate is set) into q, reusing q's buffers. With fake_out, writes
// dequantized values there instead of codes (q then holds no codes or scales).
void quantize_blocks(const void* x, InputType type, std::span<const std::int64_t> shape, const Scheme& s,
                     const QuantizeOptions& o, float* fake_out, QuantizedTensor& q);
// Dequantize without undoing the rotation.
void dequantize_blocks(const QuantizedTensor& q, float* out, int threads);
// max |x| over the finite values of a whole tensor, over `threads` threads (0: all).
float tensor_amax(const float* x, std::int64_t n, int threads);
void widen(const std::uint16_t* in, InputType type, std::int64_t n, float* out, int threads);

}  // namespace mf::cpu
