// Internal: the bulk cast kernels over one piece of an array, as the bulk casts (src/ops/bulk.cc) call them. Built
// with Highway (bulk.cc): the SIMD element codec (bulk-inl.h) on this CPU's best target. Built without it (the
// WebAssembly page, bulk_scalar.cc): the scalar codec in a loop. Either way element i's code is encode(f, x[i], ...)
// with stochastic_bits(run.seed, run.first_index + i).
#pragma once

#include <cstddef>
#include <cstdint>

#include "element_codec.h"

namespace mf::cpu {

// One call's stochastic stream and floating-point environment.
struct EncodeRun {
  std::uint64_t seed;  // element i rounds with stochastic_bits(seed, first_index + i)
  std::uint64_t first_index;
  bool float_rounding_is_nearest;  // the CPU rounds f32 arithmetic to nearest: EncodeNearest's f32 step is exact
  bool stream_out = false;         // write the codes with streaming (non-temporal) stores where the target can
};

// codes of x[0, n) with k's format and options: 8-bit codes (formats of 8 bits or fewer) or 16-bit (bf16, f16).
void encode_bytes(const ElementCodec& k, const EncodeRun& run, const float* x, std::size_t n, std::uint8_t* out);
void encode_words(const ElementCodec& k, const EncodeRun& run, const float* x, std::size_t n, std::uint16_t* out);
// f32 values of codes[0, n). stream: write out with streaming (non-temporal) stores where it can, for an output
// that will not fit in the caches anyway; the same values either way.
void decode_bytes(const ElementCodec& k, const std::uint8_t* codes, std::size_t n, float* out, bool stream);
void decode_words(const ElementCodec& k, const std::uint16_t* codes, std::size_t n, float* out, bool stream);

}  // namespace mf::cpu
