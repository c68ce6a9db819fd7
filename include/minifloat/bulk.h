// minifloat/bulk.h: casts of whole arrays, f32 values to codes and back, at memory speed. Every element's code is
// the scalar codec's (codec.h) bit for bit, on every SIMD target: the same rounding and overflow options, the same NaN,
// zero and saturation rules (away_from_zero, nearest_away, clamp and nan_outside_range run the scalar codec). One SIMD
// element codec per format (src/cpu/element_codec-inl.h), Highway-dispatched to the CPU's best target at run time; a
// build without Highway (the WebAssembly page) runs the scalar codec element by element behind the same functions.
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
// FP4 codes unpacked, one per byte; encode_bulk_packed / decode_bulk_packed below take them packed). Values are f32,
// or f64, bf16 and f16 through the overloads below. Stochastic rounding takes element i's random bits from
// stochastic_bits(seed, i) (random.h), as the CLI's and Python's --seed do, so a bulk cast with a seed gives the
// codes those give.
#pragma once

#include <cstdint>
#include <span>

#include "minifloat/codec.h"

namespace mf {

struct BulkOptions {
  Rounding rounding = Rounding::nearest_even;
  Overflow overflow = Overflow::format_default;
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
//
// f32 casts whose input and output take 4 MiB or more together write their output with streaming (non-temporal)
// stores, which do not read each cache line before writing it: the same values, less memory traffic for arrays that
// would leave the caches anyway.
void decode_bulk(const Format& f, std::span<const std::uint8_t> codes, std::span<float> x, int threads = 1);
void decode_bulk(const Format& f, std::span<const std::uint16_t> codes, std::span<float> x, int threads = 1);

// ---- Other value types ----
// f64 values: codes[i] = encode(f, x[i], ...), rounded once from the f64 value (never through f32, which would
// round twice). Nearest-even and toward-zero take the SIMD path for the elements that are f32 values and the scalar
// codec for the others; stochastic rounding takes the scalar codec for every element (its codes depend on the
// source's width), as does any value that is not an f32 value: data that is truly f64 casts at scalar speed.
void encode_bulk(const Format& f, std::span<const double> x, std::span<std::uint8_t> codes, const BulkOptions& o = {});
void encode_bulk(const Format& f, std::span<const double> x, std::span<std::uint16_t> codes, const BulkOptions& o = {});
// bf16 or f16 values, given as their codes (`from` is mf::bf16 or mf::f16): every one is an f32 value, so they are
// widened exactly (the SIMD decode) and encoded as f32: codes[i] = encode(f, decode(from, x[i]), ...).
void encode_bulk(const Format& f, const Format& from, std::span<const std::uint16_t> x, std::span<std::uint8_t> codes,
                 const BulkOptions& o = {});
void encode_bulk(const Format& f, const Format& from, std::span<const std::uint16_t> x, std::span<std::uint16_t> codes,
                 const BulkOptions& o = {});
// Into f64: x[i] = decode(f, codes[i]), exact.
void decode_bulk(const Format& f, std::span<const std::uint8_t> codes, std::span<double> x, int threads = 1);
void decode_bulk(const Format& f, std::span<const std::uint16_t> codes, std::span<double> x, int threads = 1);
// Into bf16 or f16 codes (`to` is mf::bf16 or mf::f16): x[i] = encode(to, decode(f, codes[i])), the value rounded
// to nearest even (exact wherever it fits; +-Inf beyond the range, as ml_dtypes' astype).
void decode_bulk(const Format& f, std::span<const std::uint8_t> codes, const Format& to, std::span<std::uint16_t> x,
                 int threads = 1);
void decode_bulk(const Format& f, std::span<const std::uint16_t> codes, const Format& to, std::span<std::uint16_t> x,
                 int threads = 1);

// ---- Packed codes (FP4, FP6; 8-bit codes pack as a copy) ----
// The packing is pack.h's (pack_codes): FP4 two codes per byte, element 2i in the low nibble (OCP MX,
// torch.float4_e2m1fn_x2); FP6 four codes in each little-endian 3-byte group. Any length: a final partial byte or
// group is padded with zero bits. `packed` must hold exactly packed_size(x.size(), f.bits()) bytes, else
// std::invalid_argument naming it; so must f have 4-, 6- or 8-bit codes.
//
//   const std::vector<float> x{1.0f, -0.5f, 6.0f};
//   std::vector<std::uint8_t> packed(mf::packed_size(x.size(), 4));      // 2 bytes (pack.h)
//   mf::encode_bulk_packed(mf::e2m1, x, packed);                          // 92 07: codes 2, 9 | 7, padding 0
//   std::vector<float> back(x.size());
//   mf::decode_bulk_packed(mf::e2m1, packed, back);                       // 1 -0.5 6
void encode_bulk_packed(const Format& f, std::span<const float> x, std::span<std::uint8_t> packed,
                        const BulkOptions& o = {});
void decode_bulk_packed(const Format& f, std::span<const std::uint8_t> packed, std::span<float> x, int threads = 1);

}  // namespace mf
