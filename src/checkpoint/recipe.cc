// Recipes as data: the built-in tables and user JSON files, and glob matching of tensor names.
#include "minifloat/recipe.h"

#include <nlohmann/json.hpp>

#include "../io/file.h"

namespace mf::io {
namespace {

using Json = nlohmann::ordered_json;  // ordered: a user recipe's rules are tried in the order written
using detail::cat;

// Names of both families: DeepSeek's own (embed, head, attn.wq_a, ffn.experts.0.w1, ffn.shared_experts.w1,
// attn.compressor.wkv, hc_attn_fn) and Hugging Face's (model.embed_tokens, lm_head, self_attn.q_a_proj,
// mlp.experts.0.gate_proj, mlp.shared_experts.up_proj, mlp.gate). An MTP module's own embedding and head (DeepSeek-V4's
// mtp.0.emb.tok_emb and mtp.0.head, V3's model.layers.61.shared_head.head) stay bf16 as the model's do; so do
// llama.cpp's token_embd and output in a GGUF file requantized by convert --format gguf.
std::vector<RecipeRule> plain_names_first(std::vector<RecipeRule> tail) {
  std::vector<RecipeRule> rules{
      {"*embed*", "bf16"},           {"lm_head.weight", "bf16"},   {"head.weight", "bf16"},
      {"*.head.weight", "bf16"},     {"*.tok_emb.weight", "bf16"}, {"*.gate.weight", "bf16"},
      {"token_embd.weight", "bf16"}, {"output.weight", "bf16"},
  };
  rules.insert(rules.end(), tail.begin(), tail.end());
  return rules;
}

QuantizationConfig hf(int block, std::string scale_fmt, std::string expert_dtype, std::string fmt = "e4m3") {
  QuantizationConfig q;
  q.block_rows = q.block_cols = block;
  q.scale_fmt = std::move(scale_fmt);
  q.expert_dtype = std::move(expert_dtype);
  q.fmt = std::move(fmt);
  return q;
}

Recipe builtin(std::string_view name) {
  // docs/spec.md#schemes: V4's experts are mxfp4 with rceil scales.
  constexpr const char* kFp4Experts = "e2m1-1x32-ue8m0-rceil";
  if (name == "deepseek-v4") {
    return {"deepseek-v4", Profile::deepseek,
            plain_names_first({{"*indexer.weights_proj*", "bf16"},
                               {"*compressor*", "f32"},
                               {"*hc_*", "f32"},
                               {"*shared_experts*", "fp8-128x128"},
                               {"*.experts.*", kFp4Experts},
                               {"*", "fp8-128x128"}}),
            hf(128, "ue8m0", "fp4")};
  }
  if (name == "deepinfer") {
    return {"deepinfer", Profile::deepseek,
            plain_names_first({{"*indexer.weights_proj*", "bf16"},
                               {"*compressor*", "f32"},
                               {"*hc_*", "f32"},
                               {"*shared_experts*", "fp8-32x32"},
                               {"*.experts.*", kFp4Experts},
                               {"*", "fp8-32x32"}}),
            hf(32, "ue8m0", "fp4", "")};
  }
  if (name == "fp8-block") {
    return {"fp8-block", Profile::deepseek, plain_names_first({{"*", "e4m3-128x128-f32"}}), hf(128, "", "")};
  }
  if (name == "mxfp8" || name == "mxfp4" || name == "nvfp4" || name == "nvfp4-4over6" || name == "nvfp4-ue5m3") {
    return {std::string(name), Profile::ocp, plain_names_first({{"*", std::string(name)}}), std::nullopt};
  }
  throw RecipeError(cat("unknown recipe '", name,
                        "' (known: deepseek-v4, deepinfer, fp8-block, mxfp8, mxfp4, nvfp4, nvfp4-4over6, nvfp4-ue5m3, "
                        "or a .json file of rules)"));
}

void check_target(const Recipe& r, const RecipeRule& rule) {
  if (rule.target == "keep" || rule.target == "bf16" || rule.target == "f32") return;
  try {
    with_profile(scheme_named(rule.target), r.profile);
  } catch (const std::invalid_argument& e) {
    throw RecipeError(cat("recipe ", r.name, ": rule '", rule.pattern, "': target '", rule.target,
                          "' is not keep, bf16, f32 or a scheme: ", e.what()));
  }
}

}  // namespace

bool glob_match(std::string_view p, std::string_view t) {
  // Iterative with one backtrack point: linear in practice, never exponential.
  std::size_t pi = 0, ti = 0, star = std::string_view::npos, mark = 0;
  while (ti < t.size()) {
    if (pi < p.size() && (p[pi] == '?' || p[pi] == t[ti])) {
      ++pi;
      ++ti;
    } else if (pi < p.size() && p[pi] == '*') {
      star = pi++;
      mark = ti;
    } else if (star != std::string_view::npos) {
      pi = star + 1;
      ti = ++mark;
    } else {
      return false;
    }
  }
  while (pi < p.size() && p[pi] == '*') ++pi;
  return pi == p.size();
}

std::string Recipe::target_for(std::string_view tensor, std::size_t rank, bool floating) const {
  for (const RecipeRule& rule : rules) {
    if (!glob_match(rule.pattern, tensor)) continue;
    const bool is_scheme = rule.target != "keep" && rule.target != "bf16" && rule.target != "f32";
    if (is_scheme && (rank != 2 || !floating)) continue;
    if (!is_scheme && rule.target != "keep" && !floating) continue;  // never cast integer or packed tensors
    return rule.target;
  }
  return "keep";
}

std::optional<Scheme> target_scheme(const Recipe& recipe, const std::string& target) {
  if (target == "keep" || target == "bf16" || target == "f32") return std::nullopt;
  return with_profile(scheme_named(target), recipe.profile);
}

Recipe recipe_named(std::string_view name) { return builtin(name); }

std::vector<std::string> recipe_names() {
  return {"deepseek-v4", "deepinfer", "fp8-block", "mxfp8", "mxfp4", "nvfp4", "nvfp4-4over6", "nvfp4-ue5m3"};
}

Recipe parse_recipe(std::string_view text, std::string name) {
  Json json;
  try {
    json = Json::parse(text);
  } catch (const Json::exception& e) {
    throw RecipeError(cat("recipe ", name, ": not valid JSON: ", e.what()));
  }
  if (!json.is_object()) throw RecipeError(cat("recipe ", name, ": not a JSON object"));
  Recipe r;
  r.name = std::move(name);
  const bool nested = json.contains("rules");
  if (nested) {
    for (auto it = json.begin(); it != json.end(); ++it) {
      if (it.key() != "rules" && it.key() != "profile") {
        throw RecipeError(cat("recipe ", r.name, ": unknown key '", it.key(), "' (known: profile, rules)"));
      }
    }
    if (json.contains("profile")) {
      if (!json.at("profile").is_string()) throw RecipeError(cat("recipe ", r.name, ": profile is not a string"));
      try {
        r.profile = profile_named(json.at("profile").get<std::string>());
      } catch (const std::invalid_argument& e) {
        throw RecipeError(cat("recipe ", r.name, ": ", e.what()));
      }
    }
  }
  const Json& rules = nested ? json.at("rules") : json;
  if (!rules.is_object()) throw RecipeError(cat("recipe ", r.name, ": rules is not an object of pattern: target"));
  for (auto it = rules.begin(); it != rules.end(); ++it) {
    if (!it.value().is_string()) {
      throw RecipeError(cat("recipe ", r.name, ": rule '", it.key(), "': target is not a string"));
    }
    r.rules.push_back({it.key(), it.value().get<std::string>()});
    check_target(r, r.rules.back());
  }
  if (r.rules.empty()) throw RecipeError(cat("recipe ", r.name, ": no rules"));
  return r;
}

Recipe load_recipe(const std::string& name_or_path) {
  if (!name_or_path.ends_with(".json")) return recipe_named(name_or_path);
  const detail::InputFile in(name_or_path);
  const std::vector<std::byte> bytes = in.read(0, in.size(), "recipe");
  return parse_recipe(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()),
                      std::filesystem::path(name_or_path).filename().string());
}

}  // namespace mf::io
