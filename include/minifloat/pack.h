// minifloat/pack.h: codes in memory (docs/spec.md#packing). Packing is lossless and independent of how codes were made.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace mf {

// Bytes that `count` codes of `bits` bits take when packed: 4-bit two per byte, 6-bit four per 3 bytes, 8-bit one.
std::size_t packed_size(std::size_t count, int bits);

// Packs one-code-per-byte `codes` (the flat row-major sequence) into `out` (packed_size bytes):
//   4 bits: code 2i in the low nibble of byte i, code 2i+1 in the high nibble (OCP, torch.float4_e2m1fn_x2);
//   6 bits: code i in bits [6i, 6i+6) of each little-endian 24-bit group of four codes;
//   8 bits: a copy.
// A final partial byte or group is padded with zero bits.
void pack_codes(std::span<const std::uint8_t> codes, int bits, std::span<std::uint8_t> out);
// The inverse: `count` codes out of packed bytes.
void unpack_codes(std::span<const std::uint8_t> packed, int bits, std::span<std::uint8_t> codes);

// ggml's MXFP4 block (llama.cpp block_mxfp4): 17 bytes per 32 values, the ue8m0 scale byte, then 16 bytes where
// byte j holds element j in the low nibble and element j+16 in the high nibble.
inline constexpr int kGgmlBlockValues = 32;
inline constexpr int kGgmlBlockBytes = 17;
// OCP layout (packed e2m1 codes, 16 bytes per block, and one ue8m0 scale per block) -> ggml blocks, and back.
void ocp_to_ggml_mxfp4(std::span<const std::uint8_t> packed_codes, std::span<const std::uint8_t> scales,
                       std::span<std::uint8_t> ggml_blocks);
void ggml_to_ocp_mxfp4(std::span<const std::uint8_t> ggml_blocks, std::span<std::uint8_t> packed_codes,
                       std::span<std::uint8_t> scales);

}  // namespace mf
