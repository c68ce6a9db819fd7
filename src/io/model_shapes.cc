// The parameter tensors a config implies (DeepSeek V3 in Hugging Face names, a tiny V4 in DeepSeek's), and the
// synthetic example checkpoint built from them.
#include <bit>
#include <cmath>
#include <cstring>

#include "file.h"
#include "minifloat/checkpoint_ops.h"
#include "minifloat/codec.h"

namespace mf::io {
namespace {

using detail::cat;
using U = std::uint64_t;

std::vector<ShapedName> deepseek_v3(const HfConfig& c) {
  const U hidden = c.number("hidden_size"), vocab = c.number("vocab_size"), layers = c.number("num_hidden_layers");
  const U heads = c.number("num_attention_heads"), q_lora = c.number_or("q_lora_rank", 0);
  const U kv_lora = c.number("kv_lora_rank"), nope = c.number("qk_nope_head_dim"), rope = c.number("qk_rope_head_dim");
  const U v_dim = c.number("v_head_dim"), inter = c.number("intermediate_size");
  const U experts = c.number_or("n_routed_experts", 0), shared = c.number_or("n_shared_experts", 0);
  const U moe_inter = experts ? c.number("moe_intermediate_size") : 0, dense = c.number_or("first_k_dense_replace", 0);
  std::vector<ShapedName> t{{"model.embed_tokens.weight", {vocab, hidden}}};
  const auto mlp = [&](const std::string& p, U in) {
    t.push_back({p + "gate_proj.weight", {in, hidden}});
    t.push_back({p + "up_proj.weight", {in, hidden}});
    t.push_back({p + "down_proj.weight", {hidden, in}});
  };
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

// A V4-like layout at whatever size the config says (docs/spec.md#v4-recipe lists these modules).
std::vector<ShapedName> deepseek_v4(const HfConfig& c) {
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

std::string example_config(const ExampleSize& z) {
  return cat("{\n  \"architectures\": [\"DeepseekV4ForCausalLM\"],\n  \"model_type\": \"deepseek_v4\",\n",
             "  \"torch_dtype\": \"bfloat16\",\n  \"vocab_size\": ", z.vocab, ",\n  \"hidden_size\": ", z.hidden,
             ",\n  \"num_hidden_layers\": ", z.layers, ",\n  \"num_attention_heads\": 2,\n  \"head_dim\": ", z.hidden,
             ",\n  \"q_lora_rank\": ", z.hidden / 2, ",\n  \"n_routed_experts\": ", z.experts,
             ",\n  \"n_shared_experts\": 1,\n  \"num_experts_per_tok\": 2,\n  \"moe_intermediate_size\": ",
             z.moe_intermediate, ",\n  \"hc_mult\": 2,\n  \"index_n_heads\": 2,\n  \"index_head_dim\": 32,\n",
             "  \"rms_norm_eps\": 1e-06\n}\n");
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

std::vector<std::byte> bf16_values(const ShapedName& t, std::uint64_t seed) {
  U n = 1;
  for (const U d : t.shape) n *= d;
  std::vector<std::byte> out(n * 2);
  Normal rng{seed * 0x9E3779B97F4A7C15ull + 1};
  const bool norm = t.shape.size() == 1;
  for (U i = 0; i < n; ++i) {
    const double v = norm ? 1.0 + 0.05 * rng.next() : 0.02 * rng.next();
    const auto bits = static_cast<std::uint16_t>(encode(bf16, static_cast<float>(v)));
    std::memcpy(out.data() + 2 * i, &bits, 2);
  }
  return out;
}

}  // namespace

std::vector<ShapedName> model_tensors(const HfConfig& config) {
  return config.model_type == "deepseek_v4" ? deepseek_v4(config) : deepseek_v3(config);
}

HfConfig write_example_checkpoint(const std::filesystem::path& dir, int shards, const ExampleSize& size) {
  std::filesystem::create_directories(dir);
  const std::string text = example_config(size);
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
      data.push_back(bf16_values(tensors[i], i));
      views.push_back({tensors[i].name, DType::BF16, tensors[i].shape, data.back()});
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
