// Llama for convert --format gguf: config.json checked, and llama.cpp's names for its tensors (gguf_models.h).
#include "../../io/file.h"
#include "gguf_models.h"

namespace mf::io::detail {

namespace fs = std::filesystem;
using Json = nlohmann::json;

namespace {

// Rotary embeddings other than llama's default (llama3, yarn, linear scaling) need metadata and tensors this
// writer does not produce: refused rather than written wrong.
void check_rope(const Json& c, const fs::path& file) {
  for (const char* key : {"rope_scaling", "rope_parameters"}) {
    const auto it = c.find(key);
    if (it == c.end() || it->is_null()) continue;
    if (!it->is_object()) gguf_unsupported(file, cat("'", key, "' is not an object"));
    for (const char* type : {"rope_type", "type"}) {
      const auto t = it->find(type);
      if (t != it->end() && !(t->is_string() && t->get<std::string>() == "default")) {
        gguf_unsupported(file, cat("'", key, "' has ", type, " ", t->dump(),
                                   ": --format gguf writes llama's default rotary embedding only"));
      }
    }
  }
}

}  // namespace

GgufModel llama_model(const Json& c, const fs::path& file) {
  check_rope(c, file);
  GgufModel m;
  read_common(c, file, m);
  return m;
}

std::optional<std::vector<GgufName>> llama_names(std::string_view hf, std::uint32_t n_layer) {
  using Names = std::vector<GgufName>;
  if (hf.ends_with(".rotary_emb.inv_freq")) return Names{};
  if (hf == "model.embed_tokens.weight") return Names{{"token_embd.weight"}};
  if (hf == "model.norm.weight") return Names{{"output_norm.weight"}};
  if (hf == "lm_head.weight") return Names{{"output.weight"}};
  const auto layer = layer_part(hf, n_layer);
  if (!layer) return std::nullopt;
  static constexpr std::pair<std::string_view, std::string_view> kModules[] = {
      {"self_attn.q_proj", "attn_q"},      {"self_attn.k_proj", "attn_k"},   {"self_attn.v_proj", "attn_v"},
      {"self_attn.o_proj", "attn_output"}, {"mlp.gate_proj", "ffn_gate"},    {"mlp.up_proj", "ffn_up"},
      {"mlp.down_proj", "ffn_down"},       {"input_layernorm", "attn_norm"}, {"post_attention_layernorm", "ffn_norm"},
  };
  return module_name(layer->first, layer->second, kModules);
}

}  // namespace mf::io::detail
