// DeepSeek V3 (and R1, Kimi K2: DeepseekV3ForCausalLM) for convert --format gguf, as llama.cpp's convert_hf_to_gguf
// writes it (DeepseekV2Model, arch deepseek2): config.json checked, llama.cpp's names for its tensors (MLA's
// low-rank projections with kv_b_proj split into k_b, transposed, and v_b; the router and its e_score_correction
// bias; shared experts; each expert's weights stacked per layer; the multi-token-prediction layers past
// num_hidden_layers dropped, as the converter drops them) and the deepseek2.* metadata (gguf_models.h).
#include "../../io/file.h"
#include "gguf_models.h"

namespace mf::io::detail {

namespace fs = std::filesystem;
using Json = nlohmann::json;

namespace {

// config.json's `key`, a non-negative integer (0 allowed), or `fallback` when it is absent or null.
std::uint32_t whole_or(const Json& c, const char* key, std::uint32_t fallback, const fs::path& file) {
  const Json* v = find_param(c, {key});
  if (!v) return fallback;
  if (!v->is_number_unsigned() || v->get<std::uint64_t>() > 0xFFFFFFFFu) {
    gguf_unsupported(file, cat("'", key, "' must be a non-negative integer below 2^32"));
  }
  return static_cast<std::uint32_t>(v->get<std::uint64_t>());
}

// What DeepseekV2Model.set_gguf_parameters adds after TextModel's keys.
void deepseek2_params(const Json& c, const fs::path& file, GgufModel& m) {
  using V = GgufValue;
  const std::string a = "deepseek2.";
  GgufKeys& out = m.params;
  const Json* experts = find_param(c, {"n_routed_experts"});
  // first_k_dense_replace; without it, every layer dense for a model without experts, none for one with
  const std::uint32_t leading = whole_or(c, "first_k_dense_replace", experts ? 0 : m.n_layer, file);
  if (leading > m.n_layer) gguf_unsupported(file, "'first_k_dense_replace' is larger than num_hidden_layers");
  set_key(out, a + "leading_dense_block_count", V::of_u32(leading));
  set_key(out, a + "vocab_size", V::of_u32(m.n_vocab));
  if (find_param(c, {"q_lora_rank"})) {
    set_key(out, a + "attention.q_lora_rank", V::of_u32(count_field(c, "q_lora_rank", file)));
  }
  const std::uint32_t kv_lora = whole_or(c, "kv_lora_rank", 512, file);
  const std::uint32_t rope = count_field(c, "qk_rope_head_dim", file);
  set_key(out, a + "attention.kv_lora_rank", V::of_u32(kv_lora));
  set_key(out, a + "attention.key_length", V::of_u32(kv_lora + rope));
  set_key(out, a + "attention.value_length", V::of_u32(kv_lora));
  set_key(out, a + "attention.key_length_mla", V::of_u32(m.qk_nope + rope));
  set_key(out, a + "attention.value_length_mla", V::of_u32(m.v_head));
  set_key(out, a + "expert_feed_forward_length",
          V::of_u32(count_field(c, c.contains("moe_intermediate_size") ? "moe_intermediate_size" : "intermediate_size",
                                file)));
  if (experts) set_key(out, a + "expert_count", V::of_u32(m.n_expert));
  set_key(out, a + "expert_shared_count", V::of_u32(whole_or(c, "n_shared_experts", 0, file)));
  if (const Json* scale = find_param(c, {"routed_scaling_factor"})) {
    if (!scale->is_number()) gguf_unsupported(file, "'routed_scaling_factor' must be a number");
    set_key(out, a + "expert_weights_scale", V::of_f32(static_cast<float>(scale->get<double>())));
  }
  if (const Json* norm = find_param(c, {"norm_topk_prob"}); norm && *norm == true) {
    set_key(out, a + "expert_weights_norm", V::of_bool(true));
  }
  set_key(out, a + "rope.dimension_count", V::of_u32(rope));
  const Json rp = rope_parameters(c, file);
  if (const Json* mscale = find_param(rp, {"mscale_all_dim"})) {
    if (!mscale->is_number()) gguf_unsupported(file, "'mscale_all_dim' must be a number");
    // the converter's legacy factor of 0.1 (llama.cpp's TAG_DEEPSEEK2_YARN_LOG_MUL_FIX)
    set_key(out, a + "rope.scaling.yarn_log_multiplier", V::of_f32(static_cast<float>(0.1 * mscale->get<double>())));
  }
}

}  // namespace

GgufModel deepseek2_model(const Json& config, const fs::path& file) {
  Json c = config;
  // transformers' DeepseekV3Config (which the converter loads through AutoConfig for model_type deepseek_v3) sets
  // head_dim to qk_rope_head_dim: the converter then writes key_length and value_length early, and overwrites them.
  if (c.value("model_type", "") == "deepseek_v3" && (!c.contains("head_dim") || c["head_dim"].is_null()) &&
      c.contains("qk_rope_head_dim")) {
    c["head_dim"] = c["qk_rope_head_dim"];
  }
  GgufModel m;
  m.arch = GgufArch::deepseek2;
  m.n_layer = count_field(c, "num_hidden_layers", file);
  m.n_vocab = count_field(c, "vocab_size", file);
  m.drop_lm_head = c.value("tie_word_embeddings", false) == true;
  const std::uint32_t n_head = count_field(c, "num_attention_heads", file);
  m.kv_b_heads = find_param(c, {"num_key_value_heads"}) ? count_field(c, "num_key_value_heads", file) : n_head;
  m.qk_nope = count_field(c, "qk_nope_head_dim", file);
  m.v_head = count_field(c, "v_head_dim", file);
  if (find_param(c, {"n_routed_experts"})) m.n_expert = count_field(c, "n_routed_experts", file);
  TextOverrides o;
  o.n_head_kv = 1;  // MLA is written as MQA: one key/value head
  o.rms_eps = find_param(c, {"rms_norm_eps"}) ? float_field(c, "rms_norm_eps", file) : 1e-6f;
  m.params = text_model_params(c, file, GgufArch::deepseek2, o);
  deepseek2_params(c, file, m);
  return m;
}

std::optional<std::vector<GgufName>> deepseek2_names(const GgufModel& m, std::string_view hf) {
  using Names = std::vector<GgufName>;
  if (hf.ends_with(".rotary_emb.inv_freq")) return Names{};
  if (hf == "model.embed_tokens.weight") return Names{{"token_embd.weight"}};
  if (hf == "model.norm.weight") return Names{{"output_norm.weight"}};
  if (hf == "lm_head.weight") return m.drop_lm_head ? Names{} : Names{{"output.weight"}};
  // The multi-token-prediction layers (model.layers.N for N from num_hidden_layers on): the converter skips them.
  if (hf.starts_with("model.layers.")) {
    const std::string_view rest = hf.substr(13);
    const std::string_view digits = rest.substr(0, rest.find('.'));
    if (layer_number(digits, 1000000000) && !layer_number(digits, m.n_layer) && rest.size() > digits.size()) {
      return Names{};
    }
  }
  const auto layer = layer_part(hf, m.n_layer);
  if (!layer) return std::nullopt;
  const auto [n, rest] = *layer;
  if (rest == "self_attn.kv_b_proj.weight") {
    // per head, the first qk_nope_head_dim rows are k_b (transposed: [kv_lora_rank, qk_nope]) and the next
    // v_head_dim rows v_b; llama.cpp's MLA absorbs them so.
    GgufName k{cat("blk.", n, ".attn_k_b.weight")}, v{cat("blk.", n, ".attn_v_b.weight")};
    k.groups = v.groups = m.kv_b_heads;
    k.group_rows = v.group_rows = m.qk_nope + m.v_head;
    k.count = m.qk_nope;
    k.transpose = true;
    v.first = m.qk_nope;
    v.count = m.v_head;
    return Names{k, v};
  }
  if (rest == "mlp.gate.e_score_correction_bias") return Names{{cat("blk.", n, ".exp_probs_b.bias")}};
  using Modules = std::pair<std::string_view, std::string_view>;
  static constexpr Modules kModules[] = {
      {"self_attn.q_proj", "attn_q"},
      {"self_attn.q_a_proj", "attn_q_a"},
      {"self_attn.q_a_layernorm", "attn_q_a_norm"},
      {"self_attn.q_b_proj", "attn_q_b"},
      {"self_attn.kv_a_proj_with_mqa", "attn_kv_a_mqa"},
      {"self_attn.kv_a_layernorm", "attn_kv_a_norm"},
      {"self_attn.o_proj", "attn_output"},
      {"input_layernorm", "attn_norm"},
      {"post_attention_layernorm", "ffn_norm"},
      {"mlp.gate_proj", "ffn_gate"},
      {"mlp.up_proj", "ffn_up"},
      {"mlp.down_proj", "ffn_down"},
      {"mlp.gate", "ffn_gate_inp"},
      {"mlp.shared_experts.gate_proj", "ffn_gate_shexp"},
      {"mlp.shared_experts.up_proj", "ffn_up_shexp"},
      {"mlp.shared_experts.down_proj", "ffn_down_shexp"},
  };
  if (auto x = module_name(n, rest, kModules)) return x;
  return expert_name(n, rest, m.n_expert);
}

}  // namespace mf::io::detail
