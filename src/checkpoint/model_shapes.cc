// The parameter tensors a config implies (DeepSeek V3 in Hugging Face names, a tiny V4 in DeepSeek's), and the
// synthetic example checkpoint built from them.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>

#include "../io/file.h"
#include "example_values.h"
#include "minifloat/checkpoint_commands.h"
#include "minifloat/codec.h"

namespace mf::io {
namespace {

using detail::cat;
using U = std::uint64_t;

// A Hugging Face SwiGLU MLP of width `in` under the prefix p: gate_proj, up_proj, down_proj.
void swiglu(std::vector<ShapedName>& t, const std::string& p, U in, U hidden) {
  t.push_back({p + "gate_proj.weight", {in, hidden}});
  t.push_back({p + "up_proj.weight", {in, hidden}});
  t.push_back({p + "down_proj.weight", {hidden, in}});
}

std::vector<ShapedName> deepseek_v3(const HfConfig& c) {
  const U hidden = c.number("hidden_size"), vocab = c.number("vocab_size"), layers = c.number("num_hidden_layers");
  const U heads = c.number("num_attention_heads"), q_lora = c.number_or("q_lora_rank", 0);
  const U kv_lora = c.number("kv_lora_rank"), nope = c.number("qk_nope_head_dim"), rope = c.number("qk_rope_head_dim");
  const U v_dim = c.number("v_head_dim"), inter = c.number("intermediate_size");
  const U experts = c.number_or("n_routed_experts", 0), shared = c.number_or("n_shared_experts", 0);
  const U moe_inter = experts ? c.number("moe_intermediate_size") : 0, dense = c.number_or("first_k_dense_replace", 0);
  std::vector<ShapedName> t{{"model.embed_tokens.weight", {vocab, hidden}}};
  const auto mlp = [&](const std::string& p, U in) { swiglu(t, p, in, hidden); };
  for (U l = 0; l < layers; ++l) {
    const std::string p = cat("model.layers.", l, ".");
    t.push_back({p + "input_layernorm.weight", {hidden}});
    if (q_lora) {
      t.push_back({p + "self_attn.q_a_proj.weight", {q_lora, hidden}});
      t.push_back({p + "self_attn.q_a_layernorm.weight", {q_lora}});
      t.push_back({p + "self_attn.q_b_proj.weight", {heads * (nope + rope), q_lora}});
    } else {
      t.push_back({p + "self_attn.q_proj.weight", {heads * (nope + rope), hidden}});
    }
    t.push_back({p + "self_attn.kv_a_proj_with_mqa.weight", {kv_lora + rope, hidden}});
    t.push_back({p + "self_attn.kv_a_layernorm.weight", {kv_lora}});
    t.push_back({p + "self_attn.kv_b_proj.weight", {heads * (nope + v_dim), kv_lora}});
    t.push_back({p + "self_attn.o_proj.weight", {hidden, heads * v_dim}});
    t.push_back({p + "post_attention_layernorm.weight", {hidden}});
    if (l < dense || experts == 0) {
      mlp(p + "mlp.", inter);
      continue;
    }
    t.push_back({p + "mlp.gate.weight", {experts, hidden}});
    t.push_back({p + "mlp.gate.e_score_correction_bias", {experts}});
    for (U e = 0; e < experts; ++e) mlp(cat(p, "mlp.experts.", e, "."), moe_inter);
    if (shared) mlp(p + "mlp.shared_experts.", moe_inter * shared);
  }
  t.push_back({"model.norm.weight", {hidden}});
  if (!c.number_or("tie_word_embeddings", 0)) t.push_back({"lm_head.weight", {vocab, hidden}});
  return t;
}

// The attention type of each layer and whether its router hashes token ids: the config's layer_types /
// mlp_layer_types, else transformers' DeepseekV4Config defaults (two heavily compressed layers, then compressed
// sparse and heavily compressed alternating; the first num_hash_layers, default 3, hash-routed).
struct V4Layer {
  std::string attention;
  bool hash = false;
};
std::vector<V4Layer> v4_layers(const HfConfig& c) {
  const U n = c.number("num_hidden_layers"), hashed = c.number_or("num_hash_layers", 3);
  const auto list = [&](const char* key) -> const std::vector<std::string>* {
    const auto it = c.string_lists.find(key);
    if (it == c.string_lists.end()) return nullptr;
    if (it->second.size() != n) {
      throw HfConfigError(HfErrc::unsupported_value,
                          cat("HF ", key, " has ", it->second.size(), " entries for num_hidden_layers ", n));
    }
    return &it->second;
  };
  const std::vector<std::string>* attention = list("layer_types");
  const std::vector<std::string>* mlp = list("mlp_layer_types");
  std::vector<V4Layer> layers(n);
  for (U l = 0; l < n; ++l) {
    layers[l].attention = attention             ? (*attention)[l]
                          : l < 2 || l % 2 == 0 ? "heavily_compressed_attention"
                                                : "compressed_sparse_attention";
    layers[l].hash = mlp ? (*mlp)[l] == "hash_moe" : l < hashed;
  }
  return layers;
}

// DeepSeek-V4 in DeepSeek's own names (those of its released checkpoints, which transformers' deepseek_v4 model
// renames as it loads): MQA attention with a low-rank query, grouped low-rank output (wo_a, wo_b), per-head
// attn_sink, a KV compressor on compressed layers (with a lightning indexer and its own compressor on compressed
// sparse ones), hyper-connection mixers (hc_attn_*, hc_ffn_*, hc_head_*), and MoE layers whose router on hash
// layers is a token-id table (ffn.gate.tid2eid, I64) and otherwise has a bias.
struct V4Dims {
  U dim, vocab, hd, q_lora, heads, experts, shared, inter, hc, groups, o_lora, top_k, idx_heads, idx_dim;
  U mix;  // a hyper-connection's pre, post and combination weights
};

V4Dims v4_dims(const HfConfig& c) {
  V4Dims d{};
  d.dim = c.number("hidden_size"), d.vocab = c.number("vocab_size"), d.hd = c.number("head_dim");
  d.q_lora = c.number("q_lora_rank"), d.heads = c.number("num_attention_heads");
  d.experts = c.number("n_routed_experts"), d.shared = c.number_or("n_shared_experts", 1);
  d.inter = c.number("moe_intermediate_size"), d.hc = c.number_or("hc_mult", 4);
  d.groups = c.number("o_groups"), d.o_lora = c.number("o_lora_rank"), d.top_k = c.number("num_experts_per_tok");
  d.idx_heads = c.number_or("index_n_heads", 64), d.idx_dim = c.number_or("index_head_dim", 128);
  d.mix = (2 + d.hc) * d.hc;
  return d;
}

void v4_compressor(std::vector<ShapedName>& t, const std::string& p, U width, U rate, U norm, U dim) {
  t.push_back({p + "ape", {rate, width}});
  t.push_back({p + "wkv.weight", {width, dim}});
  t.push_back({p + "wgate.weight", {width, dim}});
  t.push_back({p + "norm.weight", {norm}});
}

void v4_mlp(std::vector<ShapedName>& t, const std::string& p, U in, U dim) {
  t.push_back({p + "w1.weight", {in, dim}});
  t.push_back({p + "w2.weight", {dim, in}});
  t.push_back({p + "w3.weight", {in, dim}});
}

// A layer's hyper-connection mixer `hc_NAME_*`.
void v4_mixer(std::vector<ShapedName>& t, const std::string& p, const V4Dims& d) {
  t.push_back({p + "_fn", {d.mix, d.hc * d.dim}});
  t.push_back({p + "_base", {d.mix}});
  t.push_back({p + "_scale", {3}});
}

void v4_attention(std::vector<ShapedName>& t, const std::string& p, const V4Layer& layer, const V4Dims& d) {
  constexpr U csa_rate = 4, hca_rate = 128;  // transformers' default compress_rates
  v4_mixer(t, p + "hc_attn", d);
  t.push_back({p + "attn_norm.weight", {d.dim}});
  t.push_back({p + "attn.attn_sink", {d.heads}});
  t.push_back({p + "attn.wq_a.weight", {d.q_lora, d.dim}});
  t.push_back({p + "attn.q_norm.weight", {d.q_lora}});
  t.push_back({p + "attn.wq_b.weight", {d.heads * d.hd, d.q_lora}});
  t.push_back({p + "attn.wkv.weight", {d.hd, d.dim}});
  t.push_back({p + "attn.kv_norm.weight", {d.hd}});
  t.push_back({p + "attn.wo_a.weight", {d.groups * d.o_lora, d.heads * d.hd / d.groups}});
  t.push_back({p + "attn.wo_b.weight", {d.dim, d.groups * d.o_lora}});
  if (layer.attention == "heavily_compressed_attention") {
    v4_compressor(t, p + "attn.compressor.", d.hd, hca_rate, d.hd, d.dim);
  } else if (layer.attention == "compressed_sparse_attention") {  // overlapping windows: twice the width
    v4_compressor(t, p + "attn.compressor.", 2 * d.hd, csa_rate, d.hd, d.dim);
    v4_compressor(t, p + "attn.indexer.compressor.", 2 * d.idx_dim, csa_rate, d.idx_dim, d.dim);
    t.push_back({p + "attn.indexer.wq_b.weight", {d.idx_heads * d.idx_dim, d.q_lora}});
    t.push_back({p + "attn.indexer.weights_proj.weight", {d.idx_heads, d.dim}});
  }
}

void v4_ffn(std::vector<ShapedName>& t, const std::string& p, const V4Layer& layer, const V4Dims& d) {
  v4_mixer(t, p + "hc_ffn", d);
  t.push_back({p + "ffn_norm.weight", {d.dim}});
  t.push_back({p + "ffn.gate.weight", {d.experts, d.dim}});
  if (layer.hash) {
    t.push_back({p + "ffn.gate.tid2eid", {d.vocab, d.top_k}, DType::I64});
  } else {
    t.push_back({p + "ffn.gate.bias", {d.experts}});
  }
  for (U e = 0; e < d.experts; ++e) v4_mlp(t, cat(p, "ffn.experts.", e, "."), d.inter, d.dim);
  if (d.shared) v4_mlp(t, p + "ffn.shared_experts.", d.inter * d.shared, d.dim);
}

std::vector<ShapedName> deepseek_v4(const HfConfig& c) {
  const V4Dims d = v4_dims(c);
  std::vector<ShapedName> t{{"embed.weight", {d.vocab, d.dim}}};
  const std::vector<V4Layer> layers = v4_layers(c);
  for (U l = 0; l < layers.size(); ++l) {
    const std::string p = cat("layers.", l, ".");
    v4_attention(t, p, layers[l], d);
    v4_ffn(t, p, layers[l], d);
  }
  t.push_back({"norm.weight", {d.dim}});
  t.push_back({"hc_head_fn", {d.hc, d.hc * d.dim}});
  t.push_back({"hc_head_base", {d.hc}});
  t.push_back({"hc_head_scale", {1}});
  t.push_back({"head.weight", {d.vocab, d.dim}});
  return t;
}

// The simplified V4-like layout of the default example (no o_lora_rank in its config): V4's module names at whatever
// size the config says (docs/spec.md#v4-recipe lists these modules), but shapes no model class takes.
std::vector<ShapedName> deepseek_v4_like(const HfConfig& c) {
  const U dim = c.number("hidden_size"), vocab = c.number("vocab_size"), layers = c.number("num_hidden_layers");
  const U q_lora = c.number("q_lora_rank"), heads = c.number("num_attention_heads"), hd = c.number("head_dim");
  const U experts = c.number("n_routed_experts"), shared = c.number("n_shared_experts");
  const U inter = c.number("moe_intermediate_size"), hc = c.number_or("hc_mult", 4);
  const U idx_heads = c.number_or("index_n_heads", 2), idx_dim = c.number_or("index_head_dim", 32);
  std::vector<ShapedName> t{{"embed.weight", {vocab, dim}}};
  const auto expert = [&](const std::string& p, U in) {
    t.push_back({p + "w1.weight", {in, dim}});
    t.push_back({p + "w2.weight", {dim, in}});
    t.push_back({p + "w3.weight", {in, dim}});
  };
  for (U l = 0; l < layers; ++l) {
    const std::string p = cat("layers.", l, ".");
    t.push_back({p + "hc_attn_fn", {hc * hc, hc * dim}});
    t.push_back({p + "attn_norm.weight", {dim}});
    t.push_back({p + "attn.wq_a.weight", {q_lora, dim}});
    t.push_back({p + "attn.q_norm.weight", {q_lora}});
    t.push_back({p + "attn.wq_b.weight", {heads * hd, q_lora}});
    t.push_back({p + "attn.wkv.weight", {hd, dim}});
    t.push_back({p + "attn.kv_norm.weight", {hd}});
    t.push_back({p + "attn.wo_a.weight", {heads * hd / 2, hd}});
    t.push_back({p + "attn.wo_b.weight", {dim, heads * hd / 2}});
    t.push_back({p + "attn.compressor.wkv.weight", {hd, dim}});
    t.push_back({p + "attn.compressor.wgate.weight", {hd, dim}});
    t.push_back({p + "attn.indexer.wq_b.weight", {idx_heads * idx_dim, q_lora}});
    t.push_back({p + "attn.indexer.weights_proj.weight", {idx_heads, dim}});
    t.push_back({p + "ffn_norm.weight", {dim}});
    t.push_back({p + "ffn.gate.weight", {experts, dim}});
    for (U e = 0; e < experts; ++e) expert(cat(p, "ffn.experts.", e, "."), inter);
    if (shared) expert(p + "ffn.shared_experts.", inter * shared);
  }
  t.push_back({"norm.weight", {dim}});
  t.push_back({"head.weight", {vocab, dim}});
  return t;
}

// Hugging Face's Llama family as saved by save_pretrained: GQA attention (Qwen3's adds per-head q_norm / k_norm), then
// per layer either a SwiGLU MLP (LlamaForCausalLM) or, with num_experts, a router (mlp.gate) over experts stored one
// by one as mlp.experts.E.gate_proj / up_proj / down_proj (Qwen3MoeForCausalLM, every layer sparse), which
// transformers fuses as it loads them.
std::vector<ShapedName> llama_family(const HfConfig& c, bool qk_norm) {
  const U hidden = c.number("hidden_size"), vocab = c.number("vocab_size"), layers = c.number("num_hidden_layers");
  const U heads = c.number("num_attention_heads"), kv_heads = c.number_or("num_key_value_heads", heads);
  const U hd = c.number_or("head_dim", hidden / heads), experts = c.number_or("num_experts", 0);
  const U inter = experts ? c.number("moe_intermediate_size") : c.number("intermediate_size");
  std::vector<ShapedName> t{{"model.embed_tokens.weight", {vocab, hidden}}};
  const auto mlp = [&](const std::string& p) { swiglu(t, p, inter, hidden); };
  for (U l = 0; l < layers; ++l) {
    const std::string p = cat("model.layers.", l, ".");
    t.push_back({p + "input_layernorm.weight", {hidden}});
    t.push_back({p + "self_attn.q_proj.weight", {heads * hd, hidden}});
    t.push_back({p + "self_attn.k_proj.weight", {kv_heads * hd, hidden}});
    t.push_back({p + "self_attn.v_proj.weight", {kv_heads * hd, hidden}});
    t.push_back({p + "self_attn.o_proj.weight", {hidden, heads * hd}});
    if (qk_norm) {
      t.push_back({p + "self_attn.q_norm.weight", {hd}});
      t.push_back({p + "self_attn.k_norm.weight", {hd}});
    }
    t.push_back({p + "post_attention_layernorm.weight", {hidden}});
    if (experts == 0) {
      mlp(p + "mlp.");
      continue;
    }
    t.push_back({p + "mlp.gate.weight", {experts, hidden}});
    for (U e = 0; e < experts; ++e) mlp(cat(p, "mlp.experts.", e, "."));
  }
  t.push_back({"model.norm.weight", {hidden}});
  if (!c.number_or("tie_word_embeddings", 0)) t.push_back({"lm_head.weight", {vocab, hidden}});
  return t;
}

// The default example's config (the simplified V4-like layout).
std::string v4_like_config(const ExampleSize& z) {
  return cat(
      "{\n  \"architectures\": [\"DeepseekV4ForCausalLM\"],\n  \"model_type\": \"deepseek_v4\",\n",
      "  \"torch_dtype\": \"bfloat16\",\n  \"vocab_size\": ", z.vocab, ",\n  \"hidden_size\": ", z.hidden,
      ",\n  \"num_hidden_layers\": ", z.layers, ",\n  \"num_attention_heads\": 2,\n  \"head_dim\": ", z.hidden,
      ",\n  \"q_lora_rank\": ", z.hidden / 2, ",\n  \"n_routed_experts\": ", z.experts,
      ",\n  \"n_shared_experts\": 1,\n  \"num_experts_per_tok\": 2,\n  \"moe_intermediate_size\": ", z.moe_intermediate,
      ",\n  \"hc_mult\": 2,\n  \"index_n_heads\": 2,\n  \"index_head_dim\": 32,\n", "  \"rms_norm_eps\": 1e-06\n}\n");
}

// The keys every example config has.
void common_keys(nlohmann::ordered_json& j, const char* architecture, const char* model_type, const ExampleSize& z) {
  j["architectures"] = {architecture};
  j["model_type"] = model_type;
  j["dtype"] = "bfloat16";
  j["vocab_size"] = z.vocab;
  j["hidden_size"] = z.hidden;
  j["num_hidden_layers"] = z.layers;
  j["num_attention_heads"] = std::max(1, z.hidden / 32);
  j["head_dim"] = 64;
  j["max_position_embeddings"] = 256;
  j["tie_word_embeddings"] = false;
  j["bos_token_id"] = 0;
  j["eos_token_id"] = 1;
}

std::string llama_or_qwen_moe_config(ExampleArch arch, const ExampleSize& z) {
  nlohmann::ordered_json j;
  const bool llama = arch == ExampleArch::llama;
  common_keys(j, llama ? "LlamaForCausalLM" : "Qwen3MoeForCausalLM", llama ? "llama" : "qwen3_moe", z);
  j["num_key_value_heads"] = std::max(1, std::max(1, z.hidden / 32) / 2);
  j["intermediate_size"] = z.intermediate;
  j["rms_norm_eps"] = 1e-5;
  if (!llama) {
    j["num_experts"] = z.experts;
    j["num_experts_per_tok"] = std::min(2, z.experts);
    j["moe_intermediate_size"] = z.moe_intermediate;
    j["decoder_sparse_step"] = 1;
    j["mlp_only_layers"] = nlohmann::ordered_json::array();
    j["norm_topk_prob"] = true;
  }
  return j.dump(2) + "\n";
}

// DeepSeek-V4: one shared KV head, every attention type (heavily compressed first, as V4 starts) and both routers
// (the first layer hash-routed).
std::string deepseek_v4_config(const ExampleSize& z) {
  nlohmann::ordered_json j;
  common_keys(j, "DeepseekV4ForCausalLM", "deepseek_v4", z);
  j["num_key_value_heads"] = 1;
  j["q_lora_rank"] = z.hidden / 2;
  j["o_groups"] = 2;
  j["o_lora_rank"] = z.hidden / 2;
  j["n_routed_experts"] = z.experts;
  j["n_shared_experts"] = 1;
  j["num_experts_per_tok"] = std::min(2, z.experts);
  j["moe_intermediate_size"] = z.moe_intermediate;
  j["hc_mult"] = 2;
  j["index_n_heads"] = 2;
  j["index_head_dim"] = 32;
  j["index_topk"] = 8;
  j["sliding_window"] = 16;
  nlohmann::ordered_json attention = nlohmann::ordered_json::array(), mlp = nlohmann::ordered_json::array();
  for (int l = 0; l < z.layers; ++l) {
    attention.push_back(l % 2 == 0 ? "heavily_compressed_attention" : "compressed_sparse_attention");
    mlp.push_back(l == 0 ? "hash_moe" : "moe");
  }
  j["layer_types"] = attention;
  j["mlp_layer_types"] = mlp;
  j["num_nextn_predict_layers"] = 0;
  j["rms_norm_eps"] = 1e-6;
  return j.dump(2) + "\n";
}

}  // namespace

namespace detail {

// A model class's config in miniature: heads of 64 (head_dim), half as many KV heads (Llama, Qwen), the rest of the
// fields as transformers' config class defaults them (what it writes back on save_pretrained is the same model).
std::string example_config(ExampleArch arch, const ExampleSize& z) {
  if (arch == ExampleArch::v4_like) return v4_like_config(z);
  if (arch == ExampleArch::llama || arch == ExampleArch::qwen_moe) return llama_or_qwen_moe_config(arch, z);
  return deepseek_v4_config(z);
}

// Deterministic normal values: a 64-bit LCG into Box-Muller, so every platform writes the same bytes.
struct Normal {
  std::uint64_t state;
  double next() {
    const auto uniform = [this] {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      return (static_cast<double>(state >> 11) + 0.5) * 0x1p-53;
    };
    const double u1 = uniform(), u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }
};

// A hash router's token -> experts table: token t picks experts t, t + 1, ... (mod the expert count).
std::vector<std::byte> i64_table(const ShapedName& t, U experts) {
  const U rows = t.shape[0], cols = t.shape[1];
  std::vector<std::byte> out(rows * cols * 8);
  for (U r = 0; r < rows; ++r) {
    for (U k = 0; k < cols; ++k) {
      const auto v = static_cast<std::int64_t>((r + k) % experts);
      std::memcpy(out.data() + 8 * (r * cols + k), &v, 8);
    }
  }
  return out;
}

// pinned_amax: every matrix's largest magnitude is 2688 x 2^-16 (its first element; the rest clamped to 0.04), so
// NVFP4's tensor scale amax / (448 x 6) is 2^-16 and compressed-tensors' weight_global_scale holds its reciprocal
// exactly (docs/checkpoints.md, "NVFP4's global scale"): every recipe writes every format from these examples.
std::vector<std::byte> bf16_values(const ShapedName& t, std::uint64_t seed, bool pinned_amax) {
  U n = 1;
  for (const U d : t.shape) n *= d;
  std::vector<std::byte> out(n * 2);
  Normal rng{seed * 0x9E3779B97F4A7C15ull + 1};
  const bool norm = t.shape.size() == 1;
  for (U i = 0; i < n; ++i) {
    double v = norm ? 1.0 + 0.05 * rng.next() : 0.02 * rng.next();
    if (pinned_amax && !norm) v = i == 0 ? 2688 * 0x1p-16 : std::clamp(v, -0.04, 0.04);
    const auto bits = static_cast<std::uint16_t>(encode(bf16, static_cast<float>(v)));
    std::memcpy(out.data() + 2 * i, &bits, 2);
  }
  return out;
}

}  // namespace detail

std::vector<ShapedName> model_tensors(const HfConfig& config) {
  if (config.model_type == "deepseek_v4") {
    return config.numbers.contains("o_lora_rank") ? deepseek_v4(config) : deepseek_v4_like(config);
  }
  if (config.model_type == "llama") return llama_family(config, false);
  if (config.model_type == "qwen3_moe") return llama_family(config, true);
  return deepseek_v3(config);
}

ExampleArch example_arch_named(std::string_view name) {
  if (name == "v4-like") return ExampleArch::v4_like;
  if (name == "deepseek-v4") return ExampleArch::deepseek_v4;
  if (name == "llama") return ExampleArch::llama;
  if (name == "qwen-moe") return ExampleArch::qwen_moe;
  throw std::invalid_argument(
      cat("unknown example architecture '", name, "' (known: v4-like, deepseek-v4, llama, qwen-moe)"));
}

ExampleSize example_size(ExampleArch arch) {
  if (arch == ExampleArch::v4_like) return {};
  return {.hidden = 128, .layers = 2, .experts = 4, .moe_intermediate = 128, .vocab = 256, .intermediate = 256};
}

HfConfig write_example_checkpoint(const std::filesystem::path& dir, int shards, const ExampleSize& size,
                                  ExampleArch arch) {
  std::filesystem::create_directories(dir);
  const std::string text = detail::example_config(arch, size);
  const HfConfig config = parse_hf_config(text);
  const std::vector<ShapedName> tensors = model_tensors(config);
  const auto n = static_cast<std::size_t>(shards < 1 ? 1 : shards);
  CheckpointIndex index;
  index.total_size = 0;
  // Contiguous runs of tensors per shard, about equal in count.
  for (std::size_t s = 0; s < n; ++s) {
    const std::size_t begin = tensors.size() * s / n, end = tensors.size() * (s + 1) / n;
    std::vector<std::vector<std::byte>> data;
    data.reserve(end - begin);
    std::vector<TensorView> views;
    const std::string shard = shard_file_name(s, n);
    for (std::size_t i = begin; i < end; ++i) {
      data.push_back(tensors[i].dtype == DType::I64 ? detail::i64_table(tensors[i], static_cast<U>(size.experts))
                                                    : detail::bf16_values(tensors[i], i, arch != ExampleArch::v4_like));
      views.push_back({tensors[i].name, tensors[i].dtype, tensors[i].shape, data.back()});
      index.weight_map[tensors[i].name] = shard;
      *index.total_size += data.back().size();
    }
    write_safetensors(dir / shard, views, {{"format", "pt"}});
  }
  write_index(dir / kIndexFileName, index);
  const std::array<std::span<const std::byte>, 1> pieces{std::as_bytes(std::span(text))};
  detail::write_atomically(dir / "config.json", pieces);
  return config;
}

}  // namespace mf::io
