// Internal: the pair forms of the checkpoint dialects beyond DeepSeek's and ModelOpt's NVFP4 (checkpoint_tensors.h
// lists them), found by name and dequantized by one scalar loop.
#pragma once

#include <optional>
#include <vector>

#include "minifloat/checkpoint_tensors.h"

namespace mf::io::detail {

// The scaled, packed, packed_global or blocks pair whose codes are `w`, or nullopt when `w` is not such a part.
// Throws IoError naming `w` when the names match but the dtypes or shapes fit no form.
std::optional<QuantizedPair> match_dialect_pair(const SafetensorsFile& file, const SafetensorsTensor& w);

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

}  // namespace mf::io::detail
