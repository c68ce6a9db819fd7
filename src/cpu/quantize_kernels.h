// Internal: the row kernels of block quantization, dispatched per SIMD target (quantize-inl.h). Each one does, lane
// by lane, exactly what the scalar rules of minifloat/scale.h do, so results are bit-identical to src/ref.
#pragma once

#include <cstdint>

#include "element_codec.h"
#include "minifloat/scale.h"
#include "minifloat/scheme.h"

namespace mf::cpu {

// What the lanes of the block quantizer need to know about an element type (integer or float).
struct QuantizeElement {
  const Scheme* scheme;  // for the scalar tails (element_code / element_value)
  bool is_int;
  int bits;              // element width
  float max;             // largest magnitude
  ElementCodec codec;    // float elements: the element codec's traits (round to nearest even, saturate)
};
QuantizeElement quantize_element(const Scheme& s);

// Over one row of `cols` values cut into blocks of `bc` columns (the last may be partial): raises block_max_bits[b]
// to the largest |x| bit pattern of block b (>= 0x7F800000 means the block holds Inf or NaN).
void BlockMaxAbsBits(const float* x, std::int64_t cols, std::int64_t bc, std::uint32_t* block_max_bits);
// Codes of one row, one per byte; divisors[b] is block b's divisor (0: signed zeros; NaN: codes 0).
void EncodeRow(const float* x, std::int64_t cols, std::int64_t bc, const float* divisors, const QuantizeElement& ec,
               std::uint8_t* codes);
// One row of 1 x bc blocks in one pass: scale codes and divisors per block (block_scale), codes into `out`: one
// per byte, or with `nibbles` (4-bit elements, bc and cols even) two per byte, the even column in the low nibble.
void QuantizeRow(const float* x, std::int64_t cols, std::int64_t bc, float tensor_scale, const QuantizeElement& ec,
                 std::uint8_t* out, bool nibbles, std::uint32_t* scale_codes, float* divisors);
// Values of one row from its codes: element value * divisor. Codes one per byte, or with `nibbles` (4-bit
// elements, bc and cols even) two per byte, the even column in the low nibble.
// With `stream`, non-temporal stores where out and bc allow whole aligned vectors (else plain ones; the caller
// then calls FlushStreams).
void DecodeRow(const std::uint8_t* codes, bool nibbles, std::int64_t cols, std::int64_t bc, const float* divisors,
               const QuantizeElement& ec, float* out, bool stream);
// max |x| over the finite values of x[0, n).
float FiniteAmax(const float* x, std::int64_t n);
// out[0, n) = in[0, n), by non-temporal stores where aligned.
void StreamCopy(const float* in, std::int64_t n, float* out);
// A store fence: this thread's non-temporal stores become visible to other threads.
void FlushStreams();
// bf16 / f16 bits to f32 (exact).
void WidenBf16(const std::uint16_t* in, std::int64_t n, float* out);
void WidenF16(const std::uint16_t* in, std::int64_t n, float* out);

}  // namespace mf::cpu
