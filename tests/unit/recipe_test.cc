// Recipes: globs, the table of docs/spec.md#v4-recipe for deepseek-v4 tensor by tensor, the other built-ins, user
// files.
#include "minifloat/recipe.h"

#include <gtest/gtest.h>

#include "io_test_util.h"

namespace mf::io {
namespace {

using namespace mf::io::testing;

TEST(Recipe, Glob) {
  EXPECT_TRUE(glob_match("*", ""));
  EXPECT_TRUE(glob_match("*.experts.*", "layers.3.ffn.experts.17.w1.weight"));
  EXPECT_FALSE(glob_match("*.experts.*", "layers.3.ffn.shared_experts.w1.weight"));
  EXPECT_TRUE(glob_match("a?c", "abc"));
  EXPECT_FALSE(glob_match("a?c", "ac"));
  EXPECT_TRUE(glob_match("*a*b*c", "xxaxxbxxbxxc"));
  EXPECT_FALSE(glob_match("*a*b*c", "xxaxxbxxbxxcx"));
  EXPECT_TRUE(glob_match("lm_head.weight", "lm_head.weight"));
  EXPECT_FALSE(glob_match("lm_head.weight", "model.lm_head.weight"));
  EXPECT_TRUE(glob_match(std::string(50, '*') + "b", std::string(10000, 'a') + "b"));  // no exponential blowup
}

// docs/spec.md#v4-recipe, row by row, with DeepSeek's names (inference/model.py) and Hugging Face's.
TEST(Recipe, DeepSeekV4FollowsSeed002) {
  const Recipe r = recipe_named("deepseek-v4");
  const auto t = [&](std::string_view name) { return r.target_for(name, 2, true); };
  constexpr const char* fp8 = "fp8-128x128";
  constexpr const char* fp4 = "e2m1-1x32-ue8m0-rceil";
  EXPECT_EQ(t("embed.weight"), "bf16");  // Embedding: BF16
  EXPECT_EQ(t("model.embed_tokens.weight"), "bf16");
  for (const char* n : {"layers.0.attn.wq_a.weight", "layers.0.attn.wq_b.weight", "layers.0.attn.wkv.weight",
                        "layers.0.attn.wo_b.weight", "model.layers.0.self_attn.q_a_proj.weight"}) {
    EXPECT_EQ(t(n), fp8) << n;  // Q/O/KV linears: FP8 e4m3
  }
  EXPECT_EQ(t("layers.0.attn.wo_a.weight"), fp8);           // wo_a: FP8 in the checkpoint
  EXPECT_EQ(t("layers.5.ffn.experts.383.w1.weight"), fp4);  // routed experts: FP4 e2m1
  EXPECT_EQ(t("model.layers.5.mlp.experts.0.down_proj.weight"), fp4);
  EXPECT_EQ(t("layers.5.ffn.shared_experts.w2.weight"), fp8);  // shared expert: FP8, not BF16
  EXPECT_EQ(t("model.layers.5.mlp.shared_experts.up_proj.weight"), fp8);
  EXPECT_EQ(t("layers.0.attn.compressor.wkv.weight"), "f32");  // Compressor wkv/wgate: FP32
  EXPECT_EQ(t("layers.0.attn.compressor.wgate.weight"), "f32");
  EXPECT_EQ(t("layers.0.hc_attn_fn"), "f32");                         // HC: FP32
  EXPECT_EQ(t("layers.0.attn.indexer.wq_b.weight"), fp8);             // Indexer wq_b: FP8
  EXPECT_EQ(t("layers.0.attn.indexer.weights_proj.weight"), "bf16");  // Indexer weights_proj: BF16
  EXPECT_EQ(t("head.weight"), "bf16");                                // LM head: BF16 in the checkpoint
  EXPECT_EQ(t("lm_head.weight"), "bf16");
  EXPECT_EQ(t("layers.5.ffn.gate.weight"), "bf16");                        // the router: not a Linear
  EXPECT_EQ(r.target_for("layers.0.attn_norm.weight", 1, true), "keep");   // 1-D: cannot be tiled
  EXPECT_EQ(r.target_for("layers.5.ffn.gate.tid2eid", 2, false), "keep");  // integer tensors are never cast
  ASSERT_TRUE(r.hf_quantization.has_value());
  EXPECT_EQ(r.hf_quantization->block_rows, 128);
  EXPECT_EQ(r.hf_quantization->scale_fmt, "ue8m0");
  EXPECT_EQ(r.hf_quantization->expert_dtype, "fp4");
  const Scheme experts = *target_scheme(r, fp4);
  EXPECT_EQ(experts.rule, ScaleRule::rceil);
  EXPECT_EQ(experts.block_cols, 32);
  EXPECT_EQ(experts.profile, Profile::deepseek);
  EXPECT_FALSE(target_scheme(r, "bf16").has_value());
}

TEST(Recipe, OtherBuiltIns) {
  const Recipe di = recipe_named("deepinfer");
  EXPECT_EQ(di.target_for("layers.0.attn.wq_a.weight", 2, true), "fp8-32x32");
  EXPECT_EQ(di.target_for("layers.0.ffn.experts.1.w3.weight", 2, true), "e2m1-1x32-ue8m0-rceil");
  // What convert writes must pass DeepInfer's own check.
  const std::string config = hf_config_with_quantization(R"({"torch_dtype": "bfloat16"})", di.hf_quantization);
  EXPECT_EQ(parse_hf_config(config).rules, ConfigRules::deepinfer);
  const Recipe v4 = recipe_named("deepseek-v4");
  EXPECT_NO_THROW(parse_hf_config(hf_config_with_quantization("{}", v4.hf_quantization), ConfigRules::deepseek));
  const Recipe v3 = recipe_named("fp8-block");
  EXPECT_EQ(v3.target_for("model.layers.0.mlp.experts.0.up_proj.weight", 2, true), "e4m3-128x128-f32");
  EXPECT_EQ(target_scheme(v3, "e4m3-128x128-f32")->scale_format, &f32);
  for (const char* s : {"mxfp8", "mxfp4", "nvfp4", "nvfp4-4over6", "nvfp4-ue5m3"}) {
    const Recipe r = recipe_named(s);
    EXPECT_EQ(r.target_for("model.layers.0.self_attn.o_proj.weight", 2, true), s);
    EXPECT_EQ(r.target_for("lm_head.weight", 2, true), "bf16");
  }
  EXPECT_EQ(recipe_names().size(), 8u);
  try {
    recipe_named("int3");
    ADD_FAILURE();
  } catch (const RecipeError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown recipe 'int3' (known: deepseek-v4"), std::string::npos);
  }
}

TEST(Recipe, UserFileRulesInOrder) {
  const Recipe r = parse_recipe(R"({"profile": "deepseek", "rules": {"*.w2.*": "bf16", "*experts*": "nvfp4",
                                   "*": "e4m3-1x128-ue8m0"}})");
  EXPECT_EQ(r.profile, Profile::deepseek);
  EXPECT_EQ(r.target_for("x.experts.0.w2.weight", 2, true), "bf16");
  EXPECT_EQ(r.target_for("x.experts.0.w1.weight", 2, true), "nvfp4");
  EXPECT_EQ(r.target_for("x.attn.wq.weight", 2, true), "e4m3-1x128-ue8m0");
  EXPECT_FALSE(r.hf_quantization.has_value());
  const Recipe flat = parse_recipe(R"({"*": "mxfp4"})");
  EXPECT_EQ(flat.target_for("w", 2, true), "mxfp4");
  TempDir dir;
  write_file(dir / "mine.json", R"({"*": "mxfp6-e2m3"})");
  EXPECT_EQ(load_recipe((dir / "mine.json").string()).rules[0].target, "mxfp6-e2m3");
  EXPECT_EQ(load_recipe("mxfp8").name, "mxfp8");
}

TEST(Recipe, UserFileErrors) {
  const auto fails = [](std::string_view json, std::string_view part) {
    try {
      parse_recipe(json);
      ADD_FAILURE() << json;
    } catch (const RecipeError& e) {
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    }
  };
  fails("{", "recipe user: not valid JSON");
  fails("[]", "recipe user: not a JSON object");
  fails("{}", "recipe user: no rules");
  fails(R"({"*": 8})", "rule '*': target is not a string");
  fails(R"({"*": "fp7"})", "rule '*': target 'fp7' is not keep, bf16, f32 or a scheme");
  fails(R"({"rules": {}, "extra": 1})", "unknown key 'extra' (known: profile, rules)");
  fails(R"({"rules": ["*"]})", "rules is not an object of pattern: target");
  fails(R"({"rules": {"*": "mxfp4"}, "profile": "vllm"})", "recipe user: ");
  fails(R"({"rules": {"*": "mxfp4"}, "profile": 1})", "profile is not a string");
}

}  // namespace
}  // namespace mf::io
