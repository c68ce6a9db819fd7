// minifloat/bulk.h: casts of whole arrays, f32 values to codes and back, at memory speed. Every element's code is
// the scalar codec's (codec.h) bit for bit, on every SIMD target: the same rounding (nearest_even, toward_zero,
// stochastic) and overflow options, the same NaN, zero and saturation rules. One SIMD element codec per format
// (src/cpu/element_codec-inl.h), Highway-dispatched to the CPU's best target at run time.
//
//   #include <cstdio>
//   #include <vector>
//   #include "minifloat/bulk.h"
//   int main() {
//     const std::vector<float> x{0.3f, -1.0f, 448.0f, 500.0f};
//     std::vector<std::uint8_t> codes(x.size());
//     mf::encode_bulk(mf::e4m3, x, codes);                     // = mf::encode(mf::e4m3, x[i]): 2a b8 7e 7f
//     std::vector<float> back(x.size());
//     mf::decode_bulk(mf::e4m3, codes, back);                  // = mf::decode(mf::e4m3, codes[i]): 0.3125 -1 448 nan
//     for (std::size_t i = 0; i < x.size(); ++i) std::printf("%g -> 0x%02x -> %g\n", x[i], codes[i], back[i]);
//   }
//
// Codes are one per element: std::uint8_t for formats of 8 bits or fewer, std::uint16_t for bf16 and f16 (FP6 and
// FP4 codes unpacked, one per byte; pack.h packs them). Stochastic rounding takes element i's random bits from
// stochastic_bits(seed, i) (random.h), as the CLI's and Python's --seed do, so a bulk cast with a seed gives the
// codes those give.
#pragma once

#include <cstdint>
#include <span>

#include "minifloat/codec.h"

namespace mf {

struct BulkOptions {
  Rounding rounding = Rounding::nearest_even;
  Overflow overflow = Overflow::standard;
  std::uint64_t seed = 0;  // stochastic rounding: element i rounds with stochastic_bits(seed, first_index + i)
  int threads = 1;         // 0: one per hardware thread; large arrays only (each thread takes 64 Ki elements or more)
  std::uint64_t first_index = 0;  // the index of x[0] in the whole array, when a caller casts it piece by piece
};

// codes[i] = encode(f, x[i], ...). f.bits() <= 8 for the uint8_t form, 16 (bf16, f16) for the uint16_t form.
// Throws std::invalid_argument when the spans' lengths differ or f does not fit the code type.
void encode_bulk(const Format& f, std::span<const float> x, std::span<std::uint8_t> codes, const BulkOptions& o = {});
void encode_bulk(const Format& f, std::span<const float> x, std::span<std::uint16_t> codes, const BulkOptions& o = {});

// x[i] = decode(f, codes[i]) (only each code's low f.bits() bits are read, as decode does). Throws
// std::invalid_argument as encode_bulk does.
void decode_bulk(const Format& f, std::span<const std::uint8_t> codes, std::span<float> x, int threads = 1);
void decode_bulk(const Format& f, std::span<const std::uint16_t> codes, std::span<float> x, int threads = 1);

}  // namespace mf
