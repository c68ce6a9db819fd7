// config.json rules: DeepSeek V3/V4 and DeepInfer forms, the flags, one test per error, and DeepInfer's own check
// (DeepInfer's loop, docs/spec.md#deepinfer-config, run in Python) giving the very same messages.
#include "minifloat/hf_config.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "io_test_util.h"

namespace mf::io {
namespace {

using namespace mf::io::testing;

// DeepSeek-V3's config.json, trimmed to the fields that matter here (values as published).
constexpr const char* kDeepSeekV3 = R"({
  "architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3", "torch_dtype": "bfloat16",
  "hidden_size": 7168, "intermediate_size": 18432, "moe_intermediate_size": 2048, "num_hidden_layers": 61,
  "n_routed_experts": 256, "n_shared_experts": 1, "first_k_dense_replace": 3, "vocab_size": 129280,
  "tie_word_embeddings": false, "rms_norm_eps": 1e-06,
  "quantization_config": {"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8",
                          "weight_block_size": [128, 128]}
})";

std::string deepinfer(std::string_view quant, std::string_view dtype = R"("torch_dtype": "bfloat16", )") {
  return str("{", dtype, R"("model_type": "deepseek_v4", "quantization_config": )", quant, "}");
}
constexpr const char* kDeepInferQuant =
    R"({"quant_method": "fp8", "expert_dtype": "fp4", "activation_scheme": "dynamic", "weight_block_size": [32, 32], "scale_fmt": "ue8m0"})";

TEST(HfConfig, DeepSeekV3) {
  const HfConfig c = parse_hf_config(kDeepSeekV3);
  EXPECT_EQ(c.rules, ConfigRules::deepseek);
  EXPECT_EQ(c.model_type, "deepseek_v3");
  EXPECT_EQ(c.dtype, "bfloat16");
  ASSERT_TRUE(c.quantization.has_value());
  EXPECT_EQ(c.quantization->block_rows, 128);
  EXPECT_EQ(c.quantization->scale_fmt, "");  // V3: f32 scales
  EXPECT_TRUE(c.flags.fp8_attn);
  EXPECT_TRUE(c.flags.fp8_mlp);
  EXPECT_FALSE(c.flags.mxfp8);
  EXPECT_FALSE(c.flags.mxfp4);
  EXPECT_EQ(c.number("hidden_size"), 7168);
  EXPECT_EQ(c.number("tie_word_embeddings"), 0);
  EXPECT_EQ(c.number_or("q_lora_rank", -1), -1);
  EXPECT_THROW(c.number("q_lora_rank"), HfConfigError);
}

TEST(HfConfig, DeepSeekV4FormWithUe8m0AndFp4Experts) {
  const HfConfig c = parse_hf_config(
      R"({"quantization_config": {"quant_method": "fp8", "fmt": "e4m3", "scale_fmt": "ue8m0", "expert_dtype": "fp4",
          "weight_block_size": [128, 128], "activation_scheme": "dynamic"}, "dtype": "bfloat16"})");
  EXPECT_EQ(c.rules, ConfigRules::deepseek);
  EXPECT_EQ(c.dtype, "bfloat16");
  EXPECT_TRUE(c.flags.fp8_attn && c.flags.fp8_mlp && c.flags.mxfp4);
  EXPECT_FALSE(c.flags.mxfp8);
}

TEST(HfConfig, PlainModelHasNoFlags) {
  const HfConfig c = parse_hf_config(R"({"torch_dtype": "float16", "hidden_size": 64})");
  EXPECT_EQ(c.rules, ConfigRules::deepseek);
  EXPECT_FALSE(c.quantization.has_value());
  EXPECT_FALSE(c.flags.fp8_attn || c.flags.fp8_mlp || c.flags.mxfp8 || c.flags.mxfp4);
}

TEST(HfConfig, DeepInferIsDetectedAndSetsEveryFlag) {
  const HfConfig c = parse_hf_config(deepinfer(kDeepInferQuant));
  EXPECT_EQ(c.rules, ConfigRules::deepinfer);
  EXPECT_TRUE(c.flags.fp8_attn && c.flags.fp8_mlp && c.flags.mxfp8 && c.flags.mxfp4);
  EXPECT_EQ(c.quantization->block_cols, 32);
  EXPECT_EQ(c.quantization->expert_dtype, "fp4");
  EXPECT_EQ(c.quantization->fmt, "");
  EXPECT_EQ(config_rules_named("auto"), ConfigRules::detect);
  EXPECT_EQ(config_rules_named("deepinfer"), ConfigRules::deepinfer);
  EXPECT_THROW(config_rules_named("vllm"), std::invalid_argument);
}

struct BadConfig {
  std::string name, json;
  ConfigRules rules;
  HfErrc code;
  std::string message;  // the whole message
};
void PrintTo(const BadConfig& b, std::ostream* os) { *os << b.name; }

std::string replace(std::string s, std::string_view from, std::string_view to) {
  return s.replace(s.find(from), from.size(), to);
}

std::vector<BadConfig> bad_configs() {
  const std::string q = kDeepInferQuant;
  const auto di = ConfigRules::deepinfer;
  const auto ds = ConfigRules::deepseek;
  return {
      {"QuantMethod", deepinfer(replace(q, "\"fp8\"", "\"int4\"")), di, HfErrc::unsupported_value,
       "Unsupported HF quant_method: 'int4'; expected 'fp8'"},
      {"ExpertDtype", deepinfer(replace(q, "\"fp4\"", "\"fp8\"")), di, HfErrc::unsupported_value,
       "Unsupported HF expert_dtype: 'fp8'; expected 'fp4'"},
      {"ActivationScheme", deepinfer(replace(q, "\"dynamic\"", "\"static\"")), di, HfErrc::unsupported_value,
       "Unsupported HF activation_scheme: 'static'; expected 'dynamic'"},
      {"BlockSize", deepinfer(replace(q, "[32, 32]", "[128, 128]")), di, HfErrc::unsupported_value,
       "Unsupported HF weight_block_size: [128, 128]; expected [32, 32]"},
      {"ScaleFmtNull", deepinfer(replace(q, "\"ue8m0\"", "null")), di, HfErrc::unsupported_value,
       "Unsupported HF scale_fmt: None; expected 'ue8m0'"},
      {"QuoteInValue", deepinfer(replace(q, "\"ue8m0\"", "\"it's\"")), di, HfErrc::unsupported_value,
       "Unsupported HF scale_fmt: \"it's\"; expected 'ue8m0'"},
      {"FmtE5m2", deepinfer(replace(q, "{", "{\"fmt\": \"e5m2\", ")), di, HfErrc::unsupported_value,
       "Unsupported HF fmt: 'e5m2'; expected 'e4m3'"},
      {"ModelDtype", deepinfer(q, R"("torch_dtype": "float16", )"), di, HfErrc::unsupported_value,
       "Unsupported HF torch_dtype: 'float16'; expected 'bfloat16'"},
      {"NoModelDtype", deepinfer(q, ""), di, HfErrc::missing_key, "Missing HF torch_dtype (expected 'bfloat16')"},
      {"MissingKey", deepinfer(replace(q, "\"expert_dtype\": \"fp4\", ", "")), di, HfErrc::missing_key,
       "Missing HF quantization_config key 'expert_dtype' (deepinfer rules expect 'fp4')"},
      {"UnknownKey", deepinfer(replace(q, "{", "{\"group_size\": 32, ")), di, HfErrc::unknown_key,
       "Unknown HF quantization_config key 'group_size' (known: quant_method, fmt, activation_scheme, "
       "weight_block_size, scale_fmt, expert_dtype)"},
      {"NoQuantizationConfig", R"({"torch_dtype": "bfloat16"})", di, HfErrc::missing_key,
       "Missing HF quantization_config (deepinfer rules need FP8 with FP4 experts)"},
      {"QuantizationNotObject", deepinfer("[1]"), ds, HfErrc::not_object, "HF quantization_config is not an object"},
      {"DeepSeekBlock", replace(kDeepSeekV3, "[128, 128]", "[1, 128]"), ds, HfErrc::unsupported_value,
       "Unsupported HF weight_block_size: [1, 128]; expected [128, 128]"},
      {"DeepSeekNoFmt", replace(kDeepSeekV3, "\"fmt\": \"e4m3\", ", ""), ds, HfErrc::missing_key,
       "Missing HF quantization_config key 'fmt' (deepseek rules expect 'e4m3')"},
      {"DeepSeekScaleFmt", replace(kDeepSeekV3, "\"fmt\"", "\"scale_fmt\": \"f32\", \"fmt\""), ds,
       HfErrc::unsupported_value, "Unsupported HF scale_fmt: 'f32'; expected 'ue8m0'"},
      {"DeepInferConfigUnderDeepSeekRules", deepinfer(kDeepInferQuant), ds, HfErrc::missing_key,
       "Missing HF quantization_config key 'fmt' (deepseek rules expect 'e4m3')"},
      {"DtypeNotString", R"({"torch_dtype": 16})", ds, HfErrc::bad_type, "HF torch_dtype is not a string"},
      {"NotObject", "[]", ds, HfErrc::not_object, "config is not a JSON object"},
      {"BadJson", "{\"a\":", ds, HfErrc::invalid_json, "config is not valid JSON: "},
  };
}

class HfConfigErrorTest : public ::testing::TestWithParam<BadConfig> {};

TEST_P(HfConfigErrorTest, FailsWithItsMessage) {
  const BadConfig& bad = GetParam();
  try {
    parse_hf_config(bad.json, bad.rules);
    ADD_FAILURE() << "accepted";
  } catch (const HfConfigError& e) {
    EXPECT_EQ(static_cast<int>(e.code), static_cast<int>(bad.code)) << e.what();
    if (bad.code == HfErrc::invalid_json) {
      EXPECT_TRUE(std::string(e.what()).starts_with(bad.message)) << e.what();
    } else {
      EXPECT_EQ(std::string(e.what()), bad.message);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Rules, HfConfigErrorTest, ::testing::ValuesIn(bad_configs()),
                         [](const ::testing::TestParamInfo<BadConfig>& info) { return info.param.name; });

TEST(HfConfig, FileErrorsNameTheFile) {
  TempDir dir;
  write_file(dir / "config.json", "[]");
  try {
    read_hf_config(dir / "config.json");
    ADD_FAILURE();
  } catch (const HfConfigError& e) {
    EXPECT_EQ(std::string(e.what()), str((dir / "config.json").string(), ": config is not a JSON object"));
  }
  EXPECT_THROW(read_hf_config(dir / "missing.json"), IoError);
}

TEST(HfConfig, RewritesQuantizationConfigKeepingTheRest) {
  const std::string in = R"({"z_first": 1, "quantization_config": {"quant_method": "x"}, "a_last": [1, 2]})";
  QuantizationConfig q;
  q.block_rows = q.block_cols = 32;
  q.fmt = "";
  q.expert_dtype = "fp4";
  EXPECT_EQ(
      hf_config_with_quantization(in, q),
      "{\n  \"z_first\": 1,\n  \"quantization_config\": {\n    \"quant_method\": \"fp8\",\n"
      "    \"activation_scheme\": \"dynamic\",\n    \"weight_block_size\": [\n      32,\n      32\n    ],\n"
      "    \"scale_fmt\": \"ue8m0\",\n    \"expert_dtype\": \"fp4\"\n  },\n  \"a_last\": [\n    1,\n    2\n  ]\n}\n");
  const HfConfig back = parse_hf_config(hf_config_with_quantization(deepinfer(kDeepInferQuant), q));
  EXPECT_EQ(back.rules, ConfigRules::deepinfer);
  EXPECT_EQ(hf_config_with_quantization(in, std::nullopt),
            "{\n  \"z_first\": 1,\n  \"a_last\": [\n    1,\n    2\n  ]\n}\n");
}

// DeepInfer's loop (docs/spec.md#deepinfer-config), verbatim in Python, on every unsupported-value case above: the
// messages must be equal.
constexpr const char* kDeepInferScript = R"PY(
import json, sys
for path in sys.argv[1:]:
    hf = json.load(open(path))
    quant = hf["quantization_config"]
    try:
        for key, expected in {
            "quant_method": "fp8",
            "expert_dtype": "fp4",
            "activation_scheme": "dynamic",
            "weight_block_size": [32, 32],
            "scale_fmt": "ue8m0",
        }.items():
            if quant[key] != expected:
                raise ValueError(f"Unsupported HF {key}: {quant[key]!r}; expected {expected!r}")
        print("accepted")
    except ValueError as e:
        print(e)
)PY";

TEST(HfConfigPython, SameMessagesAsDeepInfersLoop) {
  TempDir dir;
  write_file(dir / "check.py", kDeepInferScript);
  std::string args, expected;
  for (const BadConfig& bad : bad_configs()) {
    if (bad.rules != ConfigRules::deepinfer || bad.code != HfErrc::unsupported_value) continue;
    if (bad.name == "FmtE5m2" || bad.name == "ModelDtype") continue;  // checks outside the loop
    write_file(dir / (bad.name + ".json"), bad.json);
    args += str(" '", (dir / (bad.name + ".json")).string(), "'");
    expected += bad.message + "\n";
  }
  write_file(dir / "good.json", deepinfer(kDeepInferQuant));
  args += str(" '", (dir / "good.json").string(), "'");
  expected += "accepted\n";
  const RunResult r = run_python(dir / "check.py", args);
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(r.output, expected);
}

TEST(HfConfigPython, ReprMatchesPython) {
  TempDir dir;
  const std::vector<std::string> values = {R"("fp8")",           R"("it's")", R"("a\"b'c")", R"("tab\tnl\n\\")",
                                           "[32, 32]",           "null",      "true",        "[]",
                                           R"({"k": [1, "v"]})", "32.5",      "-7"};
  std::string lines, expected;
  for (const std::string& v : values) {
    lines += v + "\n";
    expected += python_repr_of_json(v) + "\n";
  }
  write_file(dir / "values.txt", lines);
  write_file(dir / "repr.py", "import json, sys\nfor line in open(sys.argv[1]):\n    print(repr(json.loads(line)))\n");
  const RunResult r = run_python(dir / "repr.py", str("'", (dir / "values.txt").string(), "'"));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(r.output, expected);
}

}  // namespace
}  // namespace mf::io
