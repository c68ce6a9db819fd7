// The ARCH.* keys that convert_hf_to_gguf's TextModel.set_gguf_parameters writes for every architecture, in its
// order, for the architectures past llama and gpt-oss (gguf_models.h): config.json read as the converter reads it.
#include <cmath>
#include <limits>

#include "../../io/file.h"
#include "gguf_models.h"

namespace mf::io::detail {

namespace fs = std::filesystem;
using Json = nlohmann::json;

std::string_view gguf_arch_name(GgufArch arch) {
  switch (arch) {
    case GgufArch::llama: return "llama";
    case GgufArch::gpt_oss: return "gpt-oss";
    case GgufArch::qwen2: return "qwen2";
    case GgufArch::qwen3: return "qwen3";
    case GgufArch::qwen3moe: return "qwen3moe";
    case GgufArch::deepseek2: return "deepseek2";
    case GgufArch::deepseek4: return "deepseek4";
  }
  return "llama";
}

void set_key(GgufKeys& keys, std::string key, GgufValue value) {
  for (auto& [k, v] : keys) {
    if (k == key) {
      v = std::move(value);
      return;
    }
  }
  keys.emplace_back(std::move(key), std::move(value));
}

const Json* find_param(const Json& c, std::initializer_list<const char*> keys) {
  for (const char* key : keys) {
    const auto it = c.find(key);
    if (it != c.end()) return it->is_null() ? nullptr : &*it;  // find_hparam takes the first present key
  }
  return nullptr;
}

Json rope_parameters(const Json& c, const fs::path& file) {
  Json rp = Json::object();
  for (const char* key : {"rope_parameters", "rope_scaling"}) {
    const auto it = c.find(key);
    if (it == c.end()) continue;
    if (!it->is_null() && !(it->is_object() && it->empty())) rp = *it;  // python's `or {}`
    break;
  }
  if (!rp.is_object()) gguf_unsupported(file, "'rope_parameters' (or 'rope_scaling') is not an object");
  if (rp.contains("full_attention") || rp.contains("sliding_attention")) return rp;
  const Json* theta =
      find_param(c, {"global_rope_theta", "rope_global_theta", "rope_theta_global", "rope_theta", "rotary_emb_base"});
  if (!rp.contains("rope_theta") && theta) rp["rope_theta"] = *theta;
  if (!rp.contains("rope_type") && rp.contains("type") && !rp["type"].is_null()) rp["rope_type"] = rp["type"];
  const Json* orig = find_param(c, {"original_max_position_embeddings"});
  if (!rp.contains("original_max_position_embeddings") && orig) rp["original_max_position_embeddings"] = *orig;
  return rp;
}

namespace {

using V = GgufValue;

std::uint32_t u32_of(const Json& v, std::string_view key, const fs::path& file) {
  if (!v.is_number_unsigned() || v.get<std::uint64_t>() > std::numeric_limits<std::uint32_t>::max()) {
    gguf_unsupported(file,
                     cat("'", key, "' must be a non-negative integer below 2^32 (llama.cpp's metadata holds it)"));
  }
  return static_cast<std::uint32_t>(v.get<std::uint64_t>());
}

float f32_of(const Json& v, std::string_view key, const fs::path& file) {
  if (!v.is_number() || !std::isfinite(v.get<double>())) gguf_unsupported(file, cat("'", key, "' must be a number"));
  return static_cast<float>(v.get<double>());  // gguf-py's add_float32
}

// A key the converter writes when config.json has one of `names`: as u32 under ARCH.suffix.
void maybe_u32(const Json& c, const fs::path& file, GgufKeys& out, const std::string& key,
               std::initializer_list<const char*> names) {
  if (const Json* v = find_param(c, names)) set_key(out, key, V::of_u32(u32_of(*v, *names.begin(), file)));
}

// The rotary scaling keys: default (none), linear and yarn as the converter writes them; others refused.
void rope_scaling(const Json& rp, const fs::path& file, const std::string& a, GgufKeys& out) {
  const auto type = rp.find("rope_type");
  if (type == rp.end() || type->is_null()) return;
  const std::string t = type->is_string() ? type->get<std::string>() : type->dump();
  if (t == "default") return;
  const auto factor = rp.find("factor");
  if ((t != "linear" && t != "yarn") || factor == rp.end() || factor->is_null()) {
    gguf_unsupported(file, cat("rope type \"", t, "\"", (t == "linear" || t == "yarn") ? " without a factor" : "",
                               ": --format gguf writes the default, linear and yarn rotary embeddings of this "
                               "architecture only"));
  }
  set_key(out, a + ".rope.scaling.type", V::of_string(t));
  set_key(out, a + ".rope.scaling.factor", V::of_f32(f32_of(*factor, "factor", file)));
  if (t == "linear") return;
  const auto orig = rp.find("original_max_position_embeddings");
  if (orig == rp.end()) gguf_unsupported(file, "yarn rope scaling without original_max_position_embeddings");
  set_key(out, a + ".rope.scaling.original_context_length",
          V::of_u32(u32_of(*orig, "original_max_position_embeddings", file)));
  const auto opt = [&](std::initializer_list<const char*> names, const char* suffix) {
    if (const Json* v = find_param(rp, names)) set_key(out, a + suffix, V::of_f32(f32_of(*v, *names.begin(), file)));
  };
  opt({"extrapolation_factor"}, ".rope.scaling.yarn_ext_factor");
  opt({"attention_factor", "attn_factor"}, ".rope.scaling.yarn_attn_factor");
  opt({"beta_fast"}, ".rope.scaling.yarn_beta_fast");
  opt({"beta_slow"}, ".rope.scaling.yarn_beta_slow");
}

// expert_gating_func (gguf-py's ExpertGatingFuncType).
void gating_func(const Json& c, const fs::path& file, const std::string& a, GgufKeys& out) {
  const Json* f = find_param(c, {"score_function", "scoring_func", "score_func", "moe_router_activation",
                                 "moe_router_activation_func", "expert_selection_fn"});
  if (!f) return;
  const std::string s = f->is_string() ? f->get<std::string>() : f->dump();
  const std::uint32_t value = s == "softmax" ? 1 : s == "sigmoid" ? 2 : s == "sqrtsoftplus" ? 4 : 0;
  if (value == 0) gguf_unsupported(file, cat("expert score function ", f->dump(), " is not one llama.cpp knows"));
  set_key(out, a + ".expert_gating_func", V::of_u32(value));
}

}  // namespace

GgufKeys text_model_params(const Json& c, const fs::path& file, GgufArch arch, const TextOverrides& o) {
  const std::string a(gguf_arch_name(arch));
  GgufKeys out;
  set_key(out, a + ".block_count", V::of_u32(count_field(c, "num_hidden_layers", file)));
  maybe_u32(
      c, file, out, a + ".context_length",
      {"max_position_embeddings", "n_ctx", "n_positions", "max_length", "max_sequence_length", "model_max_length"});
  maybe_u32(c, file, out, a + ".embedding_length", {"hidden_size", "n_embd", "dim"});
  maybe_u32(
      c, file, out, a + ".feed_forward_length",
      {"prefix_dense_intermediate_size", "dense_intermediate_size", "intermediate_size", "n_inner", "hidden_dim"});
  maybe_u32(c, file, out, a + ".attention.head_count", {"num_attention_heads", "n_head", "n_heads"});
  if (o.n_head_kv) {
    set_key(out, a + ".attention.head_count_kv", V::of_u32(*o.n_head_kv));
  } else {
    maybe_u32(c, file, out, a + ".attention.head_count_kv", {"num_key_value_heads", "n_kv_heads"});
  }
  if (const auto causal = c.find("is_causal"); causal != c.end() && *causal == false) {
    gguf_unsupported(file, "is_causal is false: --format gguf writes causal language models only");
  }
  const Json rp = rope_parameters(c, file);
  if (rp.contains("full_attention") || rp.contains("sliding_attention") || rp.contains("mrope_section") ||
      find_param(
          c, {"local_rope_theta", "rope_local_theta", "rope_theta_local", "swa_rope_theta", "rope_local_base_freq"})) {
    gguf_unsupported(file, "per-attention-type or multimodal rotary parameters: not written by --format gguf");
  }
  rope_scaling(rp, file, a, out);
  if (const auto theta = rp.find("rope_theta"); theta != rp.end() && !theta->is_null()) {
    set_key(out, a + ".rope.freq_base", V::of_f32(f32_of(*theta, "rope_theta", file)));
  }
  if (o.rms_eps) {
    set_key(out, a + ".attention.layer_norm_rms_epsilon", V::of_f32(*o.rms_eps));
  } else if (const Json* eps = find_param(c, {"rms_norm_eps", "norm_eps"})) {
    set_key(out, a + ".attention.layer_norm_rms_epsilon", V::of_f32(f32_of(*eps, "rms_norm_eps", file)));
  }
  if (const Json* eps = find_param(c, {"layer_norm_eps", "layer_norm_epsilon", "norm_epsilon"})) {
    set_key(out, a + ".attention.layer_norm_epsilon", V::of_f32(f32_of(*eps, "layer_norm_eps", file)));
  }
  maybe_u32(c, file, out, a + ".expert_count", {"num_local_experts", "num_experts", "n_routed_experts"});
  maybe_u32(c, file, out, a + ".expert_used_count", {"num_experts_per_tok", "num_experts_per_token", "top_k_experts"});
  maybe_u32(c, file, out, a + ".expert_group_count", {"n_group"});
  maybe_u32(c, file, out, a + ".expert_group_used_count", {"topk_group"});
  gating_func(c, file, a, out);
  if (const auto hd = c.find("head_dim"); hd != c.end() && !hd->is_null()) {
    set_key(out, a + ".attention.key_length", V::of_u32(u32_of(*hd, "head_dim", file)));
    set_key(out, a + ".attention.value_length", V::of_u32(u32_of(*hd, "head_dim", file)));
  }
  set_key(out, std::string(kFileTypeKey), V::of_u32(0));  // filled in by gguf_metadata
  return out;
}

}  // namespace mf::io::detail
