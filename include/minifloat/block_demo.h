// minifloat/block_demo.h: one block of up to 32 values quantized with one shared scale, and what an outlier does to
// the small values (DeepInfer's demonstration, docs/spec.md#outlier). `minifloat block` prints it; the page's block
// panel shows it.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "minifloat/quantize.h"
#include "minifloat/scheme.h"

namespace mf {

inline constexpr std::size_t kBlockDemoMaxValues = 32;

struct BlockDemo {
  QuantizedTensor q;                // unpacked codes, partial edge blocks allowed
  std::vector<std::uint8_t> codes;  // one per value
  std::vector<float> stored;        // dequantized values
  int zeroed = 0;                   // nonzero inputs whose stored value is 0
  int nonzero = 0;                  // nonzero inputs
};

// Quantizes `values` as one tensor [n] with the scalar reference quantizer (one block is tiny; the reference is
// the definition the fast path matches bit for bit). Throws QuantizeError for bad input.
BlockDemo block_demo(std::span<const float> values, const Scheme& scheme);

// The values with an outlier appended, or put in place of the last value when there are already 32.
std::vector<float> with_outlier(std::span<const float> values, float outlier);

// {scheme, block: {...}, with_outlier?: {...}} where each part is {scales: [{code, value, text}], tensor_scale,
// values: [{input, code, code_hex, element, stored, stored_text, rel_error}], nonzero, zeroed}. Schema in
// docs/cli.md (`minifloat block --json`). outlier may be null.
std::string block_demo_json(std::span<const float> values, const Scheme& scheme, const float* outlier, int indent = 2);

}  // namespace mf
