// Internal: the tensor moves convert --format gguf makes for MoE and MLA checkpoints, as llama.cpp's
// convert_hf_to_gguf makes them: each expert's 2-D weight gathered into one 3-D tensor per layer and projection, and
// a tensor's rows cut into equal groups of which a slice is taken (and transposed).
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "minifloat/checkpoint_tensors.h"
#include "minifloat/safetensors.h"

namespace mf::io::detail {

// One expert's weight: the shard it is in, and the tensor (a quantized pair's codes, `pair`, in `file`).
struct StackSource {
  std::size_t shard = 0;
  const SafetensorsTensor* tensor = nullptr;
  const QuantizedPair* pair = nullptr;
  const SafetensorsFile* file = nullptr;
  // The expert's [rows, cols]: the pair's dequantized shape, or the tensor's.
  const std::vector<std::uint64_t>& shape() const { return pair ? pair->output_shape : tensor->shape; }
};

// A 3-D tensor of every expert's weight ([n_expert, rows, cols]) and the name that reports it.
struct StackedTensor {
  std::string name, reported;
  std::vector<StackSource> experts;
};

// Gathers the per-expert weights of each layer, and hands a layer's stacked tensors over once all of them (every
// expert's gate, up and down) are in: in convert_hf_to_gguf's order, down, gate, up, where the last expert weight of
// the layer came.
class ExpertStacker {
 public:
  explicit ExpertStacker(std::uint32_t n_expert) : n_expert_(n_expert) {}
  // Expert `expert` of the stacked `name` (blk.N.ffn_{gate,up,down}_exps.weight) is `source`, named `hf` in `file`.
  // Throws IoError gguf_unsupported for a second copy of it, or a shape, dtype or scheme other than the first
  // expert's (all quantized pairs of one scheme, or none).
  std::vector<StackedTensor> add(const std::string& name, std::uint32_t expert, StackSource source,
                                 const std::string& hf, const std::filesystem::path& file);
  // Throws IoError gguf_unsupported naming an expert weight that never came (`where`: the checkpoint).
  void check_complete(const std::filesystem::path& where) const;

 private:
  struct Layer {
    std::map<std::string, std::vector<StackSource>> by_name;  // ffn_X_exps -> each expert's weight
    std::size_t count = 0;
  };
  std::uint32_t n_expert_;
  std::map<std::string, Layer> layers_;  // "blk.N." -> its experts so far
};

// x ([groups x group_rows, cols], row-major) as the rows [first, first + count) of each group of group_rows, and each
// such [count, cols] slice transposed to [cols, count] when `transpose`.
void take_group_rows(std::vector<float>& x, std::uint64_t groups, std::uint64_t group_rows, std::uint64_t cols,
                     std::uint64_t first, std::uint64_t count, bool transpose);

}  // namespace mf::io::detail
