// --format deepseek in DeepSeek's release form. Followed: checkpoints-in-the-wild.md section 1 (1.1 config, 1.2
// names / dtypes / shapes, 1.4 how vLLM's deepseek_v4.py maps `.scale` and reads expert_dtype), which reads DeepSeek's
// reference inference/model.py and convert.py through public copies (bobrenjc93/TorchInferno, supermy/ds4rs).
#include "deepseek_release.h"

#include <nlohmann/json.hpp>
#include <stdexcept>

#include "dialect_writer.h"
#include "../io/file.h"
#include "minifloat/format.h"
#include "minifloat/hf_config.h"

namespace mf::io::detail {
namespace {

using Json = nlohmann::ordered_json;

bool release_name(const std::string& n) {
  return n == "embed.weight" || n == "head.weight" || n.starts_with("layers.") || n.starts_with("mtp.");
}

bool fp4(const Scheme& s) { return s.element.format != nullptr && *s.element.format == e2m1; }

void check_release_weight(const SafetensorsFile& f, const std::string& name, std::uint64_t cols, const Scheme& s) {
  check_module_weight(WriteFormat::deepseek, f.path(), name);
  if (fp4(s) && name.find(".ffn.experts.") == std::string::npos) {
    throw IoError(IoErrc::invalid_name, f.path(), name,
                  cat("--format deepseek (release form): FP4 (", s.name,
                      ") is the layout of routed experts only (layers.N.ffn.experts.E.wK); DeepSeek's loader and "
                      "vLLM's read this tensor's .scale as an FP8 block scale; give it an FP8 target or bf16"));
  }
  if (fp4(s) && cols % 32 != 0) {  // the reference Linear's FP4 scale is [out, in // 32]: no partial block
    throw IoError(IoErrc::invalid_shape, f.path(), name,
                  cat("--format deepseek (release form): FP4 experts need whole blocks of 32 along a row (DeepSeek's "
                      "scale is [out, in // 32]); this one has ",
                      cols, " columns"));
  }
}

}  // namespace

bool deepseek_release_names(const Checkpoint& c) {
  for (const auto& [name, shard] : c.index.weight_map) {
    if (release_name(name)) return true;
  }
  return false;
}

bool deepseek_release_form(const Checkpoint& c, const Recipe& recipe) {
  const bool release = deepseek_release_names(c);
  const std::optional<QuantizationConfig>& q = recipe.hf_quantization;
  if (!release && q && q->block_rows == 32) {
    throw std::invalid_argument(
        cat("recipe ", recipe.name,
            " cannot be written as --format deepseek here: its 32x32 blocks are DeepSeek-V4.1's, whose release form "
            "keeps DeepSeek's bare names (layers.N.attn.wq_a.weight + .scale), and this checkpoint is in Hugging Face "
            "names (V3's spelling, W + W_scale_inv, has 128x128 blocks only); use recipe deepseek-v4 or fp8-block, "
            "or --format minifloat; nothing was written"));
  }
  return release;
}

std::string release_scale_name(const std::string& weight) {
  return weight.substr(0, weight.size() - 7) + ".scale";  // checked to end in ".weight" when planned
}

void mark_release_steps(const SafetensorsFile& f, std::vector<Step>& steps) {
  for (Step& s : steps) {
    if (!s.scheme) continue;
    if (s.move) {
      for (const MovedTensor& t : s.move->outputs) check_release_weight(f, t.name, t.shape.back(), *s.scheme);
    } else {
      const std::vector<std::uint64_t>& shape = s.pair ? s.pair->output_shape : s.in->shape;
      check_release_weight(f, s.pair ? s.pair->output : s.in->name, shape.back(), *s.scheme);
    }
    s.release = true;
  }
}

std::string deepseek_release_config(std::string_view text, const Recipe& recipe) {
  Json config = Json::parse(hf_config_unnested(text));
  const QuantizationConfig& q = *recipe.hf_quantization;  // check_deepseek: the recipe has one
  const Json block = Json::array({q.block_rows, q.block_cols});
  if (q.block_rows == 32) {  // V4.1: expert_dtype inside quantization_config, no fmt (the release's keys)
    const Json v41 = {{"quant_method", q.quant_method},
                      {"activation_scheme", q.activation_scheme},
                      {"weight_block_size", block},
                      {"scale_fmt", q.scale_fmt},
                      {"expert_dtype", q.expert_dtype}};
    config.erase("expert_dtype");
    if (config.contains("text_config") && config["text_config"].is_object()) {
      config.erase("quantization_config");
      config["text_config"].erase("expert_dtype");
      config["text_config"]["quantization_config"] = v41;
    } else {
      config["quantization_config"] = v41;
    }
    return config.dump(2) + "\n";
  }
  Json v4 = {{"quant_method", q.quant_method}, {"fmt", q.fmt}, {"activation_scheme", q.activation_scheme}};
  if (!q.scale_fmt.empty()) v4["scale_fmt"] = q.scale_fmt;
  v4["weight_block_size"] = block;
  config["quantization_config"] = v4;
  // V4: expert_dtype at the top level; F32 scales and FP8 experts are V4-Flash-Base's "fp8".
  config["expert_dtype"] = q.expert_dtype.empty() ? "fp8" : q.expert_dtype;
  return config.dump(2) + "\n";
}

}  // namespace mf::io::detail
