// gpt-oss for convert --format gguf, as llama.cpp's convert_hf_to_gguf writes it (GptOssModel, arch "gpt-oss"):
// config.json checked, llama.cpp's names for its tensors, gate_up split into gate and up, and the gpt-oss.* metadata
// (gguf_models.h).
#include "../../io/file.h"
#include "gguf_models.h"

namespace mf::io::detail {

namespace fs = std::filesystem;
using Json = nlohmann::json;

namespace {

// gpt-oss's YaRN rotary scaling (rope_scaling, or transformers' newer rope_parameters): factor and original context.
// No scaling, or the default, writes none; another type is refused.
void read_rope(const Json& c, const fs::path& file, GgufModel& m) {
  for (const char* key : {"rope_scaling", "rope_parameters"}) {
    const auto it = c.find(key);
    if (it == c.end() || it->is_null()) continue;
    if (!it->is_object()) gguf_unsupported(file, cat("'", key, "' is not an object"));
    const std::string type = it->value("rope_type", it->value("type", std::string("default")));
    if (type == "default") continue;
    if (type != "yarn") {
      gguf_unsupported(file, cat("'", key, "' has rope_type \"", type,
                                 "\": --format gguf writes gpt-oss's yarn "
                                 "rotary scaling only"));
    }
    m.yarn_factor = float_field(*it, "factor", file);
    m.yarn_orig_ctx = count_field(*it, "original_max_position_embeddings", file);
  }
}

}  // namespace

GgufModel gpt_oss_model(const Json& c, const fs::path& file) {
  GgufModel m;
  m.arch = GgufArch::gpt_oss;
  read_common(c, file, m);
  read_rope(c, file, m);
  m.n_expert = count_field(c, c.contains("num_local_experts") ? "num_local_experts" : "num_experts", file);
  m.n_expert_used = count_field(c, "num_experts_per_tok", file);
  m.sliding_window = count_field(c, "sliding_window", file);
  return m;
}

std::optional<std::vector<GgufName>> gpt_oss_names(std::string_view hf, std::uint32_t n_layer) {
  using Names = std::vector<GgufName>;
  if (hf == "model.embed_tokens.weight") return Names{{"token_embd.weight"}};
  if (hf == "model.norm.weight") return Names{{"output_norm.weight"}};
  if (hf == "lm_head.weight") return Names{{"output.weight"}};
  const auto layer = layer_part(hf, n_layer);
  if (!layer) return std::nullopt;
  const auto [digits, rest] = *layer;
  const std::string blk = cat("blk.", digits, ".");
  // gate_up's rows interleave gate (even) and up (odd): llama.cpp de-interleaves them into two tensors.
  if (rest == "mlp.experts.gate_up_proj" || rest == "mlp.experts.gate_up_proj_bias") {
    const std::string_view kind = rest.ends_with("_bias") ? "bias" : "weight";
    return Names{{cat(blk, "ffn_gate_exps.", kind), 2, 0}, {cat(blk, "ffn_up_exps.", kind), 2, 1}};
  }
  if (rest == "mlp.experts.down_proj") return Names{{blk + "ffn_down_exps.weight"}};
  if (rest == "mlp.experts.down_proj_bias") return Names{{blk + "ffn_down_exps.bias"}};
  if (rest == "self_attn.sinks") return Names{{blk + "attn_sinks.weight"}};
  static constexpr std::pair<std::string_view, std::string_view> kModules[] = {
      {"self_attn.q_proj", "attn_q"},
      {"self_attn.k_proj", "attn_k"},
      {"self_attn.v_proj", "attn_v"},
      {"self_attn.o_proj", "attn_output"},
      {"mlp.router", "ffn_gate_inp"},
      {"input_layernorm", "attn_norm"},
      {"post_attention_layernorm", "post_attention_norm"},
  };
  return module_name(digits, rest, kModules);
}

std::vector<std::pair<std::string, GgufValue>> gpt_oss_metadata(const GgufModel& m, std::uint32_t file_type,
                                                                const std::string& model_name) {
  using V = GgufValue;
  std::vector<std::pair<std::string, GgufValue>> out = common_metadata(m, "gpt-oss", model_name);
  out.emplace_back("gpt-oss.expert_count", V::of_u32(m.n_expert));
  out.emplace_back("gpt-oss.expert_used_count", V::of_u32(m.n_expert_used));
  out.emplace_back("general.file_type", V::of_u32(file_type));
  if (m.yarn_factor != 0) {
    out.emplace_back("gpt-oss.rope.scaling.type", V::of_string("yarn"));
    out.emplace_back("gpt-oss.rope.scaling.factor", V::of_f32(m.yarn_factor));
    out.emplace_back("gpt-oss.rope.scaling.original_context_length", V::of_u32(m.yarn_orig_ctx));
  }
  out.emplace_back("gpt-oss.attention.sliding_window", V::of_u32(m.sliding_window));
  out.emplace_back("gpt-oss.expert_feed_forward_length", V::of_u32(m.n_ff));
  out.emplace_back("gpt-oss.vocab_size", V::of_u32(m.n_vocab));
  out.emplace_back("general.quantization_version", V::of_u32(2));  // GGML_QNT_VERSION
  return out;
}

}  // namespace mf::io::detail
