// Internal: the pair forms of the checkpoint dialects beyond DeepSeek's and ModelOpt's NVFP4 (checkpoint_tensors.h
// lists them), found by name and dequantized by one scalar loop.
#pragma once

#include <optional>
#include <vector>

#include "minifloat/checkpoint_tensors.h"

namespace mf::io::detail {

// The scaled, packed, packed_global or blocks pair whose codes are `w`, or nullopt when `w` is not such a part.
// Throws IoError naming `w` when the names match but the dtypes or shapes fit no form.
// `packed_bits`: find_pairs' (checkpoint_tensors.h), for a file read headers-only.
std::optional<QuantizedPair> match_dialect_pair(const SafetensorsFile& file, const SafetensorsTensor& w,
                                                int packed_bits = 0);

// A tensor of scales (F32, BF16, F16, F8_E4M3, E8M0 as F8_E8M0 or U8) as f32, exactly, in its order.
std::vector<float> scale_tensor_values(const SafetensorsFile& file, const SafetensorsTensor& t);

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

// An integer pair's numbers (form integer: compressed-tensors pack-quantized or int-quantized, AutoAWQ GEMM,
// AutoGPTQ), in the logical [R, C] orientation whatever the packing: value = (code - zero) x scale of (row, group of
// the column). Codes and zeros are as stored: unsigned b-bit fields in the packed forms (compressed-tensors' packed
// q + 2^(b-1), whose missing zero point is 2^(b-1); GPTQ v1's zero read back from zero - 1, v2's as stored), signed in
// the I8 form.
struct IntegerNumbers {
  std::uint64_t rows = 0, cols = 0, groups = 0, group = 0;  // group: columns per group
  int bits = 0;
  std::vector<std::int16_t> codes;  // [R, C]
  std::vector<std::int32_t> zeros;  // [R, groups]
  bool zero_stored = false;         // the pair has a zero point tensor (AWQ and GPTQ always)
  DType scale_dtype = DType::F32;
  std::vector<float> scales;                // [R, groups], each its stored value exactly
  std::vector<std::uint64_t> group_of_col;  // [C]: the group index, or c / group
  bool act_order = false;                   // some column's group is not c / group
};
IntegerNumbers integer_numbers(const SafetensorsFile& file, const QuantizedPair& pair);

}  // namespace mf::io::detail
