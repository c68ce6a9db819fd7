// Internal: the fast path's entry points, called by the public API in src/blocks/quantize.cc.
#pragma once

#include <cstdint>
#include <span>

#include "minifloat/quantize.h"

namespace mf::cpu {

// Quantize x (already rotated when options.rotate is set). With fake_out, writes dequantized values there instead
// of codes (the returned tensor then holds no codes or scales).
QuantizedTensor quantize_fast(const float* x, std::span<const std::int64_t> shape, const Scheme& s,
                              const QuantizeOptions& o, float* fake_out);
// Dequantize without undoing the rotation.
void dequantize_fast(const QuantizedTensor& q, float* out, int threads);
float finite_amax(const float* x, std::int64_t n, int threads);
void widen(const std::uint16_t* in, InputType type, std::int64_t n, float* out, int threads);

}  // namespace mf::cpu
