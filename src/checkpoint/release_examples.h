// Internal: what the published releases in miniature share (release_examples.cc writes them; the integer-word
// families are made in release_examples_int.cc).
#pragma once

#include <cstdint>
#include <cstring>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "minifloat/checkpoint_commands.h"

namespace mf::io::detail {

// One tensor a miniature writes.
struct ReleaseTensor {
  std::string name;
  DType dtype;
  std::vector<std::uint64_t> shape;
  std::vector<std::byte> data;
};

// A miniature: config.json, the side files beside it (name, text), and `count` model tensors in file order, each
// written as the tensors `produce(i)` gives (a quantized weight's codes and scales together, in one shard).
struct ReleaseFiles {
  std::string config;
  std::vector<std::pair<std::string, std::string>> side_files;
  std::size_t count = 0;
  std::function<std::vector<ReleaseTensor>(std::size_t)> produce;
};

// The families stored as integer words (AutoAWQ, AutoGPTQ v1 and v2, compressed-tensors pack-quantized, Kimi
// K2-Thinking) and compressed-tensors' mixed FP8 / NVFP4; nullopt for the others.
std::optional<ReleaseFiles> word_release(ReleaseLike like);

// The DeepSeek-V3 miniature's config.json (its `quantization_config` FP8 blocks): Kimi K2's architecture too.
nlohmann::ordered_json v3_config();

// Tensor `t`'s values in the `--arch` example's bf16 model (seed: its index), as f32.
std::vector<float> release_values(const ShapedName& t, std::uint64_t seed);

template <class T>
std::vector<std::byte> bytes_of(const std::vector<T>& v) {
  std::vector<std::byte> b(v.size() * sizeof(T));
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

}  // namespace mf::io::detail
