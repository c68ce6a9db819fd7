// Internal: the pair forms of the checkpoint dialects beyond DeepSeek's and ModelOpt's NVFP4 (checkpoint_tensors.h
// lists them), found by name and dequantized by one scalar loop.
#pragma once

#include <optional>
#include <span>
#include <vector>

#include "minifloat/checkpoint_tensors.h"

namespace mf::io::detail {

// The scaled, packed, packed_global or blocks pair whose codes are `w`, or nullopt when `w` is not such a part.
// Throws IoError naming `w` when the names match but the dtypes or shapes fit no form.
std::optional<QuantizedPair> match_dialect_pair(const SafetensorsFile& file, const SafetensorsTensor& w);

// The pair's scales as f32, in the scale tensor's order; and its second-level scale (1 when it has none).
std::vector<float> pair_scale_values(const SafetensorsFile& file, const QuantizedPair& pair);
float pair_second_scale(const SafetensorsFile& file, const QuantizedPair& pair);

// The scheme whose codes and block scales the pair stores (element, block, scale format, second level), or nullopt
// for a scheme name minifloat has no Scheme for.
std::optional<Scheme> held_scheme(const QuantizedPair& pair);

// The values of a pair of any form but deepseek and nvfp4.
// With `unit_scales`, every block scale and second level taken as 1: the codes' own values (verify's check of a
// zero scale over a nonzero code).
std::vector<float> dequantize_dialect_pair(const SafetensorsFile& file, const QuantizedPair& pair,
                                           bool unit_scales = false);

// The readers of the integer forms' words, for their writers (int4_relayout.cc): the i-th integer of an I64, I32, I8
// or U8 tensor's bytes; the b-bit field at bit `at` of column `col` of a matrix of little-endian 32-bit words `width`
// wide and `height` high, its bits running down the column (a row of words: width 1); and the nibble of an AutoAWQ
// word that holds output j of its 8 (AWQ_REVERSE_ORDER).
std::int64_t integer_at(const SafetensorsTensor& t, std::span<const std::byte> bytes, std::size_t i);
std::uint32_t packed_field(const std::byte* words, std::uint64_t width, std::uint64_t col, std::uint64_t at, int b,
                           std::uint64_t height);
int awq_nibble(int j);

}  // namespace mf::io::detail
