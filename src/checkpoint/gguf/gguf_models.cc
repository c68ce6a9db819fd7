// The architectures convert --format gguf writes: what they share (config.json fields, layer names, the common
// metadata) and the dispatch to each (gguf_models.h).
#include <algorithm>
#include <limits>

#include "gguf_models.h"
#include "minifloat/dtype.h"
#include "../../io/file.h"

namespace mf::io::detail {

namespace fs = std::filesystem;
using Json = nlohmann::json;

void gguf_unsupported(const fs::path& file, std::string_view what) {
  throw IoError(IoErrc::gguf_unsupported, file, what);
}

std::uint32_t count_field(const Json& c, const char* key, const fs::path& file) {
  const auto it = c.find(key);
  if (it == c.end() || !it->is_number_unsigned() || it->get<std::uint64_t>() == 0 ||
      it->get<std::uint64_t>() > std::numeric_limits<std::uint32_t>::max()) {
    gguf_unsupported(file, cat("'", key, "' must be a positive integer below 2^32 (llama.cpp's metadata holds it)"));
  }
  return static_cast<std::uint32_t>(it->get<std::uint64_t>());
}

float float_field(const Json& c, const char* key, const fs::path& file) {
  const auto it = c.find(key);
  if (it == c.end() || !it->is_number() || !(it->get<double>() > 0)) {
    gguf_unsupported(file, cat("'", key, "' must be a positive number"));
  }
  return static_cast<float>(it->get<double>());  // llama.cpp keeps these as f32
}

bool layer_number(std::string_view digits, std::uint32_t n_layer) {
  return !digits.empty() && digits.size() <= 9 &&
         std::all_of(digits.begin(), digits.end(), [](char ch) { return ch >= '0' && ch <= '9'; }) &&
         (digits.size() == 1 || digits[0] != '0') && std::stoul(std::string(digits)) < n_layer;
}

std::optional<std::pair<std::string_view, std::string_view>> layer_part(std::string_view hf, std::uint32_t n_layer) {
  constexpr std::string_view prefix = "model.layers.";
  if (!hf.starts_with(prefix)) return std::nullopt;
  hf.remove_prefix(prefix.size());
  const std::size_t dot = hf.find('.');
  if (dot == std::string_view::npos || !layer_number(hf.substr(0, dot), n_layer)) return std::nullopt;
  return std::pair{hf.substr(0, dot), hf.substr(dot + 1)};
}

std::optional<std::vector<GgufName>> module_name(std::string_view n, std::string_view rest, ModuleNames modules) {
  const std::size_t last = rest.rfind('.');
  if (last == std::string_view::npos) return std::nullopt;
  const std::string_view module = rest.substr(0, last), kind = rest.substr(last + 1);
  if (kind != "weight" && kind != "bias") return std::nullopt;
  for (const auto& [from, to] : modules) {
    if (module == from) return std::vector<GgufName>{{cat("blk.", n, ".", to, ".", kind)}};
  }
  return std::nullopt;
}

namespace {

// head_dim as config.json gives it, or hidden_size / num_attention_heads; even (rotary pairs).
void read_head_dim(const Json& c, const fs::path& file, GgufModel& m) {
  m.explicit_head_dim = c.contains("head_dim") && !c["head_dim"].is_null();
  if (m.explicit_head_dim) {
    m.head_dim = count_field(c, "head_dim", file);
  } else if (m.n_embd % m.n_head != 0) {
    gguf_unsupported(file, cat("hidden_size ", m.n_embd, " is not a multiple of num_attention_heads ", m.n_head));
  } else {
    m.head_dim = m.n_embd / m.n_head;
  }
  if (m.head_dim % 2 != 0) gguf_unsupported(file, cat("head_dim ", m.head_dim, " is odd: rotary pairs need it even"));
}

bool names_architecture(const Json& c, std::string_view model_type, std::string_view architecture) {
  bool named = c.value("model_type", "") == model_type;
  if (const auto a = c.find("architectures"); a != c.end() && a->is_array()) {
    for (const Json& x : *a) named = named || (x.is_string() && x.get<std::string>() == architecture);
  }
  return named;
}

}  // namespace

void read_common(const Json& c, const fs::path& file, GgufModel& m) {
  m.n_layer = count_field(c, "num_hidden_layers", file);
  m.n_embd = count_field(c, "hidden_size", file);
  m.n_ff = count_field(c, "intermediate_size", file);
  m.n_head = count_field(c, "num_attention_heads", file);
  m.n_head_kv = c.contains("num_key_value_heads") && !c["num_key_value_heads"].is_null()
                    ? count_field(c, "num_key_value_heads", file)
                    : m.n_head;
  m.n_ctx = count_field(c, "max_position_embeddings", file);
  m.n_vocab = count_field(c, "vocab_size", file);
  m.rms_eps = float_field(c, "rms_norm_eps", file);
  if (c.contains("rope_theta")) {
    m.rope_theta = float_field(c, "rope_theta", file);
  } else if (c.contains("rope_parameters") && c["rope_parameters"].contains("rope_theta")) {
    m.rope_theta = float_field(c["rope_parameters"], "rope_theta", file);
  }
  read_head_dim(c, file, m);
}

GgufModel gguf_model(const Json& c, const fs::path& file) {
  if (names_architecture(c, "llama", "LlamaForCausalLM")) return llama_model(c, file);
  if (names_architecture(c, "gpt_oss", "GptOssForCausalLM")) return gpt_oss_model(c, file);
  if (names_architecture(c, "qwen2", "Qwen2ForCausalLM")) return qwen_model(c, file, GgufArch::qwen2);
  if (names_architecture(c, "qwen3", "Qwen3ForCausalLM")) return qwen_model(c, file, GgufArch::qwen3);
  if (names_architecture(c, "qwen3_moe", "Qwen3MoeForCausalLM")) return qwen_model(c, file, GgufArch::qwen3moe);
  if (names_architecture(c, "deepseek_v3", "DeepseekV3ForCausalLM")) return deepseek2_model(c, file);
  if (names_architecture(c, "deepseek_v4", "DeepseekV4ForCausalLM")) return deepseek4_model(c, file);
  std::string named = c.contains("model_type") ? c["model_type"].dump() : "none";
  if (const auto a = c.find("architectures"); a != c.end() && a->is_array() && !a->empty()) named = (*a)[0].dump();
  gguf_unsupported(file, cat("architecture ", named,
                             ": --format gguf writes Llama (architectures LlamaForCausalLM or model_type llama), "
                             "gpt-oss (GptOssForCausalLM), Qwen2 (Qwen2ForCausalLM), Qwen3 (Qwen3ForCausalLM), "
                             "Qwen3-MoE (Qwen3MoeForCausalLM) and DeepSeek V3 / R1 / Kimi K2 "
                             "(DeepseekV3ForCausalLM) and DeepSeek V4 as released (DeepseekV4ForCausalLM) "
                             "checkpoints; other models: "
                             "--format minifloat, compressed-tensors, modelopt or transformers-fp8"));
}

std::optional<std::vector<GgufName>> gguf_names(const GgufModel& m, std::string_view hf) {
  switch (m.arch) {
    case GgufArch::llama: return llama_names(hf, m.n_layer);
    case GgufArch::gpt_oss: return gpt_oss_names(hf, m.n_layer);
    case GgufArch::deepseek2: return deepseek2_names(m, hf);
    case GgufArch::deepseek4: return deepseek4_names(m, hf);
    default: return qwen_names(m, hf);
  }
}

std::string gguf_mapped(const GgufModel& m) {
  const std::string common =
      "model.embed_tokens, model.layers.N.self_attn.{q,k,v,o}_proj, input_layernorm, "
      "post_attention_layernorm, model.norm and lm_head";
  const std::string layers = cat(", for N below num_hidden_layers ", m.n_layer);
  switch (m.arch) {
    case GgufArch::llama: return cat("--format gguf maps a Llama's ", common, ", mlp.{gate,up,down}_proj", layers);
    case GgufArch::gpt_oss: break;
    case GgufArch::deepseek4:
      return cat(
          "--format gguf maps DeepSeek V4's release names: embed, norm, head, hc_head_{fn,base,scale}, "
          "layers.N.{attn_norm, ffn_norm, hc_attn_*, hc_ffn_*}, layers.N.attn.{attn_sink, wq_a, q_norm, wq_b, "
          "wkv, kv_norm, wo_a, wo_b, compressor.*, indexer.{wq_b, weights_proj, compressor.*}}, "
          "layers.N.ffn.{gate.weight, gate.bias, gate.bias_vl, gate.tid2eid, shared_experts.w{1,2,3}} and "
          "ffn.experts.E.w{1,2,3} for E below n_routed_experts ",
          m.n_expert, layers, " (mtp.* is dropped)");
    case GgufArch::qwen2:
      return cat("--format gguf maps a Qwen2's ", common, " (with q/k/v biases), mlp.{gate,up,down}_proj", layers);
    case GgufArch::qwen3:
      return cat("--format gguf maps a Qwen3's ", common, ", self_attn.{q,k}_norm, mlp.{gate,up,down}_proj", layers);
    case GgufArch::qwen3moe:
      return cat("--format gguf maps a Qwen3-MoE's ", common,
                 ", self_attn.{q,k}_norm, mlp.gate and mlp.experts.E.{gate,up,down}_proj for E below num_experts ",
                 m.n_expert, " (or transformers' fused mlp.experts.{gate_up,down}_proj)", layers);
    case GgufArch::deepseek2:
      return cat(
          "--format gguf maps a DeepSeek V3's model.embed_tokens, model.layers.N.self_attn.{q_proj, q_a_proj, "
          "q_a_layernorm, q_b_proj, kv_a_proj_with_mqa, kv_a_layernorm, kv_b_proj, o_proj}, input_layernorm, "
          "post_attention_layernorm, mlp.{gate,up,down}_proj, mlp.gate (and its e_score_correction_bias), "
          "mlp.shared_experts.{gate,up,down}_proj and mlp.experts.E.{gate,up,down}_proj for E below "
          "n_routed_experts ",
          m.n_expert, ", model.norm and lm_head", layers, " (layers past it, MTP, are dropped)");
  }
  return cat("--format gguf maps a gpt-oss's ", common,
             ", self_attn.sinks, mlp.router and the MXFP4 "
             "mlp.experts.{gate_up,down}_proj_blocks with their biases, for N below num_hidden_layers ",
             m.n_layer, "; experts not in MXFP4: minifloat convert --format gpt-oss --recipe mxfp4 first");
}

bool gguf_keeps_f32(const GgufModel& m, std::string_view name) {
  // convert_hf_to_gguf: every tensor not named *.weight, every *_norm.weight, and the MoE router (FFN_GATE_INP) stay
  // F32 (Llama has none of them 2-D).
  // DeepSeek V4's types follow its source dtypes instead (gguf_convert.cc).
  if (m.arch == GgufArch::llama || m.arch == GgufArch::deepseek4) return false;
  return !name.ends_with(".weight") || name.ends_with("_norm.weight") || name.find(".ffn_gate_inp.") != name.npos;
}

GgufKeys general_metadata(std::string_view arch, const std::string& model_name) {
  using V = GgufValue;
  return {{"general.architecture", V::of_string(std::string(arch))},
          {"general.type", V::of_string("model")},
          {"general.name", V::of_string(model_name)}};
}

std::vector<std::pair<std::string, GgufValue>> common_metadata(const GgufModel& m, std::string_view arch,
                                                               const std::string& model_name) {
  using V = GgufValue;
  const std::string a(arch);
  std::vector<std::pair<std::string, GgufValue>> out = general_metadata(arch, model_name);
  const std::vector<std::pair<std::string, GgufValue>> keys{
      {a + ".block_count", V::of_u32(m.n_layer)},
      {a + ".context_length", V::of_u32(m.n_ctx)},
      {a + ".embedding_length", V::of_u32(m.n_embd)},
      {a + ".feed_forward_length", V::of_u32(m.n_ff)},
      {a + ".attention.head_count", V::of_u32(m.n_head)},
      {a + ".attention.head_count_kv", V::of_u32(m.n_head_kv)},
      {a + ".rope.freq_base", V::of_f32(m.rope_theta)},
      {a + ".attention.layer_norm_rms_epsilon", V::of_f32(m.rms_eps)},
  };
  out.insert(out.end(), keys.begin(), keys.end());
  if (m.explicit_head_dim) {
    out.emplace_back(a + ".attention.key_length", V::of_u32(m.head_dim));
    out.emplace_back(a + ".attention.value_length", V::of_u32(m.head_dim));
  }
  return out;
}

std::vector<std::pair<std::string, GgufValue>> gguf_metadata(const GgufModel& m, std::uint32_t file_type,
                                                             const std::string& model_name) {
  if (m.arch == GgufArch::gpt_oss) return gpt_oss_metadata(m, file_type, model_name);
  using V = GgufValue;
  if (m.arch != GgufArch::llama) {
    GgufKeys out = general_metadata(gguf_arch_name(m.arch), model_name);
    out.insert(out.end(), m.params.begin(), m.params.end());
    set_key(out, std::string(kFileTypeKey), V::of_u32(file_type));
    out.emplace_back("general.quantization_version", V::of_u32(2));  // GGML_QNT_VERSION
    return out;
  }
  std::vector<std::pair<std::string, GgufValue>> out = common_metadata(m, "llama", model_name);
  out.emplace_back("general.file_type", V::of_u32(file_type));
  out.emplace_back("llama.vocab_size", V::of_u32(m.n_vocab));
  out.emplace_back("llama.rope.dimension_count", V::of_u32(m.head_dim));
  out.emplace_back("general.quantization_version", V::of_u32(2));  // GGML_QNT_VERSION
  return out;
}

}  // namespace mf::io::detail
