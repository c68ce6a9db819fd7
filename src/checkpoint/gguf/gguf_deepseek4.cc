// DeepSeek V4 (DeepseekV4ForCausalLM, its release form: bare names, FP8 X.weight + X.scale, MXFP4 routed experts)
// for convert --format gguf, as llama.cpp's convert_hf_to_gguf writes it (DeepseekV4Model, arch deepseek4):
// config.json's release fields checked, llama.cpp's names for its tensors (hyper-connection mixers, compressors,
// indexer, hash routing table; the MTP module `mtp.*` dropped, as the converter drops it) and the deepseek4.*
// metadata (gguf_models.h). The tensor types are the converter's, whatever --recipe says (gguf_convert.cc).
#include "../../io/file.h"
#include "gguf_models.h"

namespace mf::io::detail {

namespace fs = std::filesystem;
using Json = nlohmann::json;

namespace {

using V = GgufValue;

// The fields llama.cpp's converter reads. It takes them from transformers' DeepseekV4Config merged with config.json,
// so a field config.json lacks gets transformers' default there; a release's config.json has every one of them, and
// this reads them from config.json only (absent: refused, never a guessed default).
constexpr const char* kRequired[] = {"num_hidden_layers",
                                     "hidden_size",
                                     "num_attention_heads",
                                     "num_key_value_heads",
                                     "head_dim",
                                     "max_position_embeddings",
                                     "rms_norm_eps",
                                     "rope_theta",
                                     "vocab_size",
                                     "n_routed_experts",
                                     "num_experts_per_tok",
                                     "scoring_func",
                                     "qk_rope_head_dim",
                                     "q_lora_rank",
                                     "sliding_window",
                                     "moe_intermediate_size",
                                     "n_shared_experts",
                                     "routed_scaling_factor",
                                     "norm_topk_prob",
                                     "swiglu_limit",
                                     "index_n_heads",
                                     "index_head_dim",
                                     "index_topk",
                                     "o_groups",
                                     "o_lora_rank",
                                     "compress_ratios",
                                     "compress_rope_theta",
                                     "hc_mult",
                                     "hc_sinkhorn_iters",
                                     "hc_eps",
                                     "num_hash_layers"};

void check_release_config(const Json& c, const fs::path& file) {
  for (const char* key : kRequired) {
    if (!find_param(c, {key})) {
      gguf_unsupported(file, cat("DeepSeek V4 without '", key,
                                 "': --format gguf reads V4's release config.json fields (llama.cpp's converter "
                                 "would take transformers' default for it)"));
    }
  }
  if (c.contains("rope_parameters")) {
    gguf_unsupported(file,
                     "DeepSeek V4 with transformers' 'rope_parameters': --format gguf reads the release's "
                     "rope_theta and rope_scaling");
  }
  if (c.value("expert_dtype", "fp4") != "fp4") {
    gguf_unsupported(file, cat("DeepSeek V4 with expert_dtype ", c["expert_dtype"].dump(),
                               " (V4-Flash-Base): llama.cpp's converter repacks the routed experts as MXFP4 "
                               "only, so neither writes it"));
  }
  if (const auto q = c.find("quantization_config");
      q != c.end() && q->is_object() && q->contains("weight_block_size")) {
    // The converter dequantizes FP8 with 128 x 128 scale tiles whatever the config says.
    if ((*q)["weight_block_size"] != Json::array({128, 128})) {
      gguf_unsupported(file, cat("DeepSeek V4 with weight_block_size ", (*q)["weight_block_size"].dump(),
                                 ": llama.cpp's converter reads V4's FP8 scales as 128 x 128 tiles only"));
    }
  }
}

float number(const Json& c, const char* key, const fs::path& file) {
  const Json& v = c[key];
  if (!v.is_number()) gguf_unsupported(file, cat("'", key, "' must be a number"));
  return static_cast<float>(v.get<double>());
}

// What DeepseekV4Model.set_gguf_parameters adds after TextModel's keys, in its order.
void deepseek4_params(const Json& c, const fs::path& file, GgufModel& m) {
  const std::string a = "deepseek4.";
  GgufKeys& out = m.params;
  const auto u32 = [&](const char* key) { return V::of_u32(count_field(c, key, file)); };
  set_key(out, a + "rope.dimension_count", u32("qk_rope_head_dim"));
  set_key(out, a + "attention.q_lora_rank", u32("q_lora_rank"));
  set_key(out, a + "attention.sliding_window", u32("sliding_window"));
  set_key(out, a + "expert_feed_forward_length", u32("moe_intermediate_size"));
  set_key(out, a + "expert_shared_count", u32("n_shared_experts"));
  set_key(out, a + "expert_weights_scale", V::of_f32(number(c, "routed_scaling_factor", file)));
  if (!c["norm_topk_prob"].is_boolean()) gguf_unsupported(file, "'norm_topk_prob' must be true or false");
  set_key(out, a + "expert_weights_norm", V::of_bool(c["norm_topk_prob"].get<bool>()));
  // one clamp per block, the same for routed and shared experts
  const std::vector<V> clamp(m.n_layer, V::of_f32(number(c, "swiglu_limit", file)));
  set_key(out, a + "swiglu_clamp_exp", V::of_array(GgufValueType::FLOAT32, clamp));
  set_key(out, a + "swiglu_clamp_shexp", V::of_array(GgufValueType::FLOAT32, clamp));
  set_key(out, a + "attention.indexer.head_count", u32("index_n_heads"));
  set_key(out, a + "attention.indexer.key_length", u32("index_head_dim"));
  set_key(out, a + "attention.indexer.top_k", u32("index_topk"));
  set_key(out, a + "attention.output_group_count", u32("o_groups"));
  set_key(out, a + "attention.output_lora_rank", u32("o_lora_rank"));
  const Json& ratios = c["compress_ratios"];
  if (!ratios.is_array() || ratios.size() < m.n_layer) {
    gguf_unsupported(file, cat("'compress_ratios' must list a ratio for each of the ", m.n_layer,
                               " layers (llama.cpp refuses a shorter list)"));
  }
  std::vector<V> r;
  for (const Json& x : ratios) {
    if (!x.is_number_unsigned() || x.get<std::uint64_t>() > 0x7FFFFFFF) {
      gguf_unsupported(file, cat("'compress_ratios' holds ", x.dump(), ", not a non-negative 32-bit integer"));
    }
    r.push_back(V::of_i32(static_cast<std::int32_t>(x.get<std::uint64_t>())));  // gguf-py: a list of ints is INT32
  }
  set_key(out, a + "attention.compress_ratios", V::of_array(GgufValueType::INT32, r));
  set_key(out, a + "attention.compress_rope_freq_base", V::of_f32(number(c, "compress_rope_theta", file)));
  const std::uint32_t hc = count_field(c, "hc_mult", file);
  set_key(out, a + "hyper_connection.count", V::of_u32(hc));
  set_key(out, a + "hyper_connection.sinkhorn_iterations", u32("hc_sinkhorn_iters"));
  set_key(out, a + "hyper_connection.epsilon", V::of_f32(number(c, "hc_eps", file)));
  set_key(out, a + "hash_layer_count", V::of_u32(m.n_hash_layers));
  set_key(out, a + "embedding_length_out", V::of_u32(m.n_embd * hc));
}

}  // namespace

GgufModel deepseek4_model(const Json& c, const fs::path& file) {
  check_release_config(c, file);
  GgufModel m;
  m.arch = GgufArch::deepseek4;
  m.n_layer = count_field(c, "num_hidden_layers", file);
  m.n_embd = count_field(c, "hidden_size", file);
  m.n_vocab = count_field(c, "vocab_size", file);
  m.n_expert = count_field(c, "n_routed_experts", file);
  const Json& hash = c["num_hash_layers"];
  if (!hash.is_number_unsigned() || hash.get<std::uint64_t>() > m.n_layer) {
    gguf_unsupported(file, "'num_hash_layers' must be an integer from 0 to num_hidden_layers");
  }
  m.n_hash_layers = static_cast<std::uint32_t>(hash.get<std::uint64_t>());
  m.params = text_model_params(c, file, GgufArch::deepseek4);
  deepseek4_params(c, file, m);
  return m;
}

std::optional<std::vector<GgufName>> deepseek4_names(const GgufModel& m, std::string_view hf) {
  using Names = std::vector<GgufName>;
  // The MTP module (conversion v0 skips it) and V4.1's vision aligner, as the converter filters them.
  if (hf.starts_with("mtp.") || hf.starts_with("aligner.") || hf.starts_with("image_")) return Names{};
  using Pair = std::pair<std::string_view, std::string_view>;
  static constexpr Pair kRoot[] = {
      {"embed.weight", "token_embd.weight"},     {"norm.weight", "output_norm.weight"},
      {"head.weight", "output.weight"},          {"hc_head_fn", "output_hc_fn.weight"},
      {"hc_head_base", "output_hc_base.weight"}, {"hc_head_scale", "output_hc_scale.weight"},
  };
  for (const auto& [from, to] : kRoot) {
    if (hf == from) return Names{{std::string(to)}};
  }
  constexpr std::string_view prefix = "layers.";
  if (!hf.starts_with(prefix)) return std::nullopt;
  const std::string_view tail = hf.substr(prefix.size());
  const std::size_t dot = tail.find('.');
  if (dot == std::string_view::npos || !layer_number(tail.substr(0, dot), m.n_layer)) return std::nullopt;
  const std::string_view n = tail.substr(0, dot), rest = tail.substr(dot + 1);
  const bool hash_layer = std::stoul(std::string(n)) < m.n_hash_layers;
  // Hash-routed layers route by tid2eid (text) and bias_vl (images): their gate.bias is unused and dropped; a
  // tid2eid past num_hash_layers is read by nothing and dropped too.
  if (rest == "ffn.gate.bias") return hash_layer ? Names{} : Names{{cat("blk.", n, ".exp_probs_b.bias")}};
  if (rest == "ffn.gate.bias_vl") return Names{{cat("blk.", n, ".exp_probs_b_vl.bias")}};
  if (rest == "ffn.gate.tid2eid") return hash_layer ? Names{{cat("blk.", n, ".ffn_gate_tid2eid.weight")}} : Names{};
  static constexpr Pair kLayer[] = {
      {"hc_attn_fn", "hc_attn_fn"},
      {"hc_attn_base", "hc_attn_base"},
      {"hc_attn_scale", "hc_attn_scale"},
      {"hc_ffn_fn", "hc_ffn_fn"},
      {"hc_ffn_base", "hc_ffn_base"},
      {"hc_ffn_scale", "hc_ffn_scale"},
      {"attn.attn_sink", "attn_sinks"},
      {"attn.wq_a.weight", "attn_q_a"},
      {"attn.wq_b.weight", "attn_q_b"},
      {"attn.q_norm.weight", "attn_q_a_norm"},
      {"attn.wkv.weight", "attn_kv"},
      {"attn.kv_norm.weight", "attn_kv_a_norm"},
      {"attn.wo_a.weight", "attn_output_a"},
      {"attn.wo_b.weight", "attn_output_b"},
      {"attn.compressor.ape", "attn_compressor_ape"},
      {"attn.compressor.wkv.weight", "attn_compressor_kv"},
      {"attn.compressor.wgate.weight", "attn_compressor_gate"},
      {"attn.compressor.norm.weight", "attn_compressor_norm"},
      {"attn.indexer.wq_b.weight", "indexer.attn_q_b"},
      {"attn.indexer.weights_proj.weight", "indexer.proj"},
      {"attn.indexer.compressor.ape", "indexer_compressor_ape"},
      {"attn.indexer.compressor.wkv.weight", "indexer_compressor_kv"},
      {"attn.indexer.compressor.wgate.weight", "indexer_compressor_gate"},
      {"attn.indexer.compressor.norm.weight", "indexer_compressor_norm"},
      {"attn_norm.weight", "attn_norm"},
      {"ffn_norm.weight", "ffn_norm"},
      {"ffn.gate.weight", "ffn_gate_inp"},
      {"ffn.shared_experts.w1.weight", "ffn_gate_shexp"},
      {"ffn.shared_experts.w2.weight", "ffn_down_shexp"},
      {"ffn.shared_experts.w3.weight", "ffn_up_shexp"},
  };
  for (const auto& [from, to] : kLayer) {
    if (rest == from) return Names{{cat("blk.", n, ".", to, ".weight")}};
  }
  // ffn.experts.E.w{1,2,3}.weight: expert E of the layer's gate, down and up stacks.
  constexpr std::string_view experts = "ffn.experts.";
  if (!rest.starts_with(experts)) return std::nullopt;
  const std::string_view e = rest.substr(experts.size());
  const std::size_t edot = e.find('.');
  if (edot == std::string_view::npos || !layer_number(e.substr(0, edot), m.n_expert)) return std::nullopt;
  static constexpr Pair kExperts[] = {
      {"w1.weight", "ffn_gate_exps"}, {"w2.weight", "ffn_down_exps"}, {"w3.weight", "ffn_up_exps"}};
  for (const auto& [from, to] : kExperts) {
    if (e.substr(edot + 1) != from) continue;
    GgufName out{cat("blk.", n, ".", to, ".weight")};
    out.expert = static_cast<std::uint32_t>(std::stoul(std::string(e.substr(0, edot))));
    return Names{out};
  }
  return std::nullopt;
}

}  // namespace mf::io::detail
