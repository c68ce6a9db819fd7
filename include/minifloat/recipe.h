// minifloat/recipe.h: which tensors of a checkpoint get which precision, as data: rules "tensor-name pattern ->
// target", first match wins. A target is a scheme name (scheme.h: "fp8-128x128", "mxfp4", "e2m1-1x32-ue8m0-rceil",
// ...), "bf16", "f32", or "keep" (copied as it is).
//
// Patterns are globs over the whole name: `*` matches any run of characters (dots included), `?` one character.
// A scheme target matches only floating 2-D tensors (a 1-D norm weight cannot be tiled; checkpoints store one
// matrix per expert); anything no rule claims is kept.
//
// Built-in recipes (docs/checkpoints.md has their tables):
//   deepseek-v4  docs/spec.md#v4-recipe: routed experts FP4 e2m1 1x32 ue8m0 (rceil); attention linears, shared
//                experts, the indexer's wq_b and wo_a FP8 e4m3 128x128 ue8m0; embeddings, lm_head, the router gate
//                and the indexer's weights_proj BF16; the compressor and the HC parameters F32.
//   deepinfer    the same split with FP8 32x32 (DeepInfer's weight_block_size [32, 32]) and FP4 experts.
//   fp8-block    DeepSeek V3: every linear FP8 e4m3 128x128 with f32 scales (weight_scale_inv), embeddings and
//                lm_head BF16.
//   mxfp8, mxfp4, nvfp4, nvfp4-4over6, nvfp4-ue5m3   every linear in that scheme; embeddings, lm_head and the
//                router gate BF16 (nvfp4-ue5m3: no checkpoint dialect holds UE5M3 scales, so convert refuses to
//                write it; check_write_format names why).
#pragma once

#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "minifloat/hf_config.h"
#include "minifloat/scheme.h"

namespace mf::io {

struct RecipeRule {
  std::string pattern;
  std::string target;
};

struct Recipe {
  std::string name;
  Profile profile = Profile::ocp;  // applied to every scheme target
  std::vector<RecipeRule> rules;
  // What convert writes as config.json's quantization_config (nullopt: the key is removed).
  std::optional<QuantizationConfig> hf_quantization;

  // The target for a tensor: a rule's target, or "keep". `floating`: F32, F16 or BF16.
  std::string target_for(std::string_view tensor, std::size_t rank, bool floating) const;
};

// Bad recipe text or name. The message names the rule.
struct RecipeError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

Recipe recipe_named(std::string_view name);  // throws RecipeError listing the names
std::vector<std::string> recipe_names();
// A user recipe: {"profile": "deepseek", "rules": {"*.experts.*": "mxfp4", "*": "fp8-128x128"}} (rules in order),
// or just the rules object. Every target is checked (a scheme must exist). Throws RecipeError.
Recipe parse_recipe(std::string_view json, std::string name = "user");
// A built-in name, or the path of a .json file.
Recipe load_recipe(const std::string& name_or_path);

// `true` when the glob `pattern` matches all of `text`.
bool glob_match(std::string_view pattern, std::string_view text);
// The scheme of a scheme target with the recipe's profile applied, or nullopt for keep / bf16 / f32.
std::optional<Scheme> target_scheme(const Recipe& recipe, const std::string& target);

}  // namespace mf::io
