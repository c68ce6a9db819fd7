// MoE experts stacked and groups of rows sliced for convert --format gguf (gguf_stack.h).
#include "gguf_stack.h"

#include "../../io/file.h"

namespace mf::io::detail {

namespace {

constexpr const char* kOrder[] = {"ffn_down_exps", "ffn_gate_exps", "ffn_up_exps"};  // the converter's order

// "blk.N." and "ffn_X_exps" of blk.N.ffn_X_exps.weight.
std::pair<std::string, std::string> split_name(const std::string& name) {
  const std::size_t dot = name.find('.', 4);
  const std::size_t end = name.rfind('.');
  return {name.substr(0, dot + 1), name.substr(dot + 1, end - dot - 1)};
}

}  // namespace

std::vector<StackedTensor> ExpertStacker::add(const std::string& name, std::uint32_t expert, StackSource source,
                                              const std::string& hf, const std::filesystem::path& file) {
  const auto [blk, kind] = split_name(name);
  Layer& layer = layers_[blk];
  std::vector<StackSource>& slots = layer.by_name[kind];
  if (slots.empty()) slots.resize(n_expert_);
  if (slots[expert].tensor) {
    throw IoError(IoErrc::gguf_unsupported, file, hf, cat("a second copy of expert ", expert, " of ", name));
  }
  for (const StackSource& other : slots) {
    if (!other.tensor) continue;
    const bool pairs =
        (other.pair != nullptr) == (source.pair != nullptr) &&
        (!other.pair || (other.pair->form == source.pair->form && other.pair->scheme_name == source.pair->scheme_name));
    if (!pairs || other.shape() != source.shape() || other.tensor->shape != source.tensor->shape ||
        other.tensor->dtype != source.tensor->dtype) {
      throw IoError(IoErrc::gguf_unsupported, file, hf,
                    cat("its shape, dtype or quantization differs from ", other.tensor->name, "'s: the experts of ",
                        name, " stack into one 3-D tensor"));
    }
  }
  slots[expert] = source;
  if (++layer.count < 3 * std::size_t{n_expert_}) return {};
  std::vector<StackedTensor> out;
  for (const char* k : kOrder) {
    StackedTensor s{cat(blk, k, ".weight"), "", std::move(layer.by_name[k])};
    const std::string& first = s.experts[0].tensor->name;
    s.reported = cat(first, " .. (", n_expert_, " experts) -> ", s.name);
    out.push_back(std::move(s));
  }
  layers_.erase(blk);
  return out;
}

void ExpertStacker::check_complete(const std::filesystem::path& where) const {
  for (const auto& [blk, layer] : layers_) {
    for (const char* k : kOrder) {
      const auto it = layer.by_name.find(k);
      for (std::uint32_t e = 0; e < n_expert_; ++e) {
        if (it == layer.by_name.end() || !it->second[e].tensor) {
          throw IoError(IoErrc::gguf_unsupported, where,
                        cat("expert ", e, "'s weight of ", blk, k,
                            ".weight is missing: llama.cpp stacks every expert of a layer into one tensor"));
        }
      }
    }
  }
}

void take_group_rows(std::vector<float>& x, std::uint64_t groups, std::uint64_t group_rows, std::uint64_t cols,
                     std::uint64_t first, std::uint64_t count, bool transpose) {
  std::vector<float> out(groups * count * cols);
  for (std::uint64_t g = 0; g < groups; ++g) {
    const float* from = x.data() + (g * group_rows + first) * cols;
    float* to = out.data() + g * count * cols;
    for (std::uint64_t r = 0; r < count; ++r) {
      for (std::uint64_t c = 0; c < cols; ++c) {
        to[transpose ? c * count + r : r * cols + c] = from[r * cols + c];
      }
    }
  }
  x.swap(out);
}

}  // namespace mf::io::detail
