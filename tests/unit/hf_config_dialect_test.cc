// config.json of every dialect: detected from quant_method, checked with errors that name the key, and what inspect
// prints taken from it (scheme, modules left unquantized). The configs are the ones the libraries write (pasted from
// compressed-tensors 0.20, ModelOpt 0.47, transformers 5.23 and gpt-oss checkpoints).
#include <gtest/gtest.h>

#include <string>

#include "minifloat/hf_config.h"

namespace mf::io {
namespace {

constexpr const char* kTransformersFp8 =
    R"({"dtype": null, "quantization_config": {"quant_method": "fp8", "modules_to_not_convert": ["lm_head"],
        "modules_to_convert": null, "activation_scheme": "dynamic", "weight_block_size": [128, 128],
        "dequantize": false, "scale_fmt": "ue8m0", "expert_dtype": "fp8"}})";
constexpr const char* kCompressedTensors =
    R"({"torch_dtype": "bfloat16", "quantization_config": {"config_groups": {"group_0": {"format":
        "nvfp4-pack-quantized", "targets": ["Linear"], "weights": {"num_bits": 4, "type": "float", "strategy":
        "tensor_group", "group_size": 16}}}, "format": "nvfp4-pack-quantized", "ignore": ["lm_head"],
        "quant_method": "compressed-tensors", "quantization_status": "compressed", "version": "0.20.0"}})";
constexpr const char* kModelOpt =
    R"({"quantization_config": {"ignore": ["lm_head", "model.embed_tokens"], "quant_algo": "MXFP8",
        "producer": {"name": "modelopt", "version": "0.47.0"}, "quant_method": "modelopt"}})";
constexpr const char* kGptOss =
    R"({"quantization_config": {"quant_method": "mxfp4", "modules_to_not_convert": ["model.layers.*.self_attn",
        "lm_head"]}})";

TEST(HfConfigDialect, TransformersFineGrainedFp8) {
  const HfConfig c = parse_hf_config(kTransformersFp8);
  EXPECT_EQ(c.rules, ConfigRules::transformers_fp8);
  EXPECT_EQ(c.quant_method, "fp8");
  EXPECT_EQ(c.scheme, "fp8 [128, 128] ue8m0 scales");
  EXPECT_EQ(c.not_converted, std::vector<std::string>{"lm_head"});
  EXPECT_EQ(c.dtype, "");  // null, as transformers 5 writes it
  ASSERT_TRUE(c.quantization);
  EXPECT_EQ(c.quantization->block_rows, 128);
  EXPECT_TRUE(c.flags.fp8_attn && c.flags.fp8_mlp);
}

TEST(HfConfigDialect, TransformersFp8UnknownKeyIsNamed) {
  std::string text = kTransformersFp8;
  text.replace(text.find("\"dequantize\""), 12, "\"dequantise\"");
  try {
    parse_hf_config(text);
    FAIL() << "accepted";
  } catch (const HfConfigError& e) {
    EXPECT_EQ(e.code, HfErrc::unknown_key);
    EXPECT_NE(std::string(e.what()).find("Unknown HF quantization_config key 'dequantise' for transformers FP8"),
              std::string::npos)
        << e.what();
  }
}

TEST(HfConfigDialect, TransformersFp8BadBlockIsNamed) {
  std::string text = kTransformersFp8;
  text.replace(text.find("[128, 128]"), 10, "[128]");
  try {
    parse_hf_config(text);
    FAIL() << "accepted";
  } catch (const HfConfigError& e) {
    EXPECT_EQ(e.code, HfErrc::bad_type);
    EXPECT_NE(std::string(e.what()).find("transformers FP8 quantization_config key 'weight_block_size' is [128], "
                                         "not two positive integers, or null"),
              std::string::npos)
        << e.what();
  }
}

TEST(HfConfigDialect, CompressedTensors) {
  const HfConfig c = parse_hf_config(kCompressedTensors);
  EXPECT_EQ(c.rules, ConfigRules::compressed_tensors);
  EXPECT_EQ(c.scheme, "nvfp4-pack-quantized");
  EXPECT_EQ(c.not_converted, std::vector<std::string>{"lm_head"});
  EXPECT_EQ(c.dtype, "bfloat16");
}

TEST(HfConfigDialect, CompressedTensorsWithoutGroupsIsAnError) {
  try {
    parse_hf_config(R"({"quantization_config": {"quant_method": "compressed-tensors", "format": "float-quantized"}})");
    FAIL() << "accepted";
  } catch (const HfConfigError& e) {
    EXPECT_EQ(e.code, HfErrc::missing_key);
    EXPECT_EQ(std::string(e.what()), "Missing compressed-tensors quantization_config key 'config_groups'");
  }
}

TEST(HfConfigDialect, CompressedTensorsWeightTypeIsChecked) {
  std::string text = kCompressedTensors;
  text.replace(text.find("\"type\": \"float\""), 15, "\"type\": \"fp\"");
  try {
    parse_hf_config(text);
    FAIL() << "accepted";
  } catch (const HfConfigError& e) {
    EXPECT_EQ(e.code, HfErrc::unsupported_value);
    EXPECT_NE(std::string(e.what()).find("config_groups.group_0.weights.type: 'fp'; expected ['float', 'int']"),
              std::string::npos)
        << e.what();
  }
}

TEST(HfConfigDialect, ModelOptInConfigJson) {
  const HfConfig c = parse_hf_config(kModelOpt);
  EXPECT_EQ(c.rules, ConfigRules::modelopt);
  EXPECT_EQ(c.scheme, "MXFP8");
  EXPECT_EQ(c.not_converted, (std::vector<std::string>{"lm_head", "model.embed_tokens"}));
}

TEST(HfConfigDialect, ModelOptFromHfQuantConfigJson) {
  const HfConfig c = parse_hf_config(R"({"torch_dtype": "bfloat16"})", ConfigRules::detect,
                                     R"({"producer": {"name": "modelopt", "version": "0.47.0"}, "quantization":
                                         {"quant_algo": "NVFP4", "kv_cache_quant_algo": null, "group_size": 16,
                                          "exclude_modules": ["lm_head"]}})");
  EXPECT_EQ(c.rules, ConfigRules::modelopt);
  EXPECT_EQ(c.scheme, "NVFP4");
  EXPECT_EQ(c.not_converted, std::vector<std::string>{"lm_head"});
  EXPECT_THROW(parse_hf_config("{}", ConfigRules::detect, R"({"producer": {}})"), HfConfigError);
}

// Unsloth's and NVIDIA's NVFP4 releases: FP8 per channel for attention, NVFP4 for the MLP, regex targets and ignore
// (checkpoints-in-the-wild.md 5.7).
TEST(HfConfigDialect, CompressedTensorsMixedPrecisionGroupsKeepTheirTargets) {
  const HfConfig c = parse_hf_config(
      R"({"quantization_config": {"quant_method": "compressed-tensors", "format": "mixed-precision",
          "ignore": ["lm_head", "re:.*layers\\.1\\.mlp\\.down_proj$"], "config_groups": {
          "group_0": {"format": "float-quantized", "targets": ["re:.*self_attn\\.(q|k|v|o)_proj$"],
                      "weights": {"num_bits": 8, "type": "float", "strategy": "channel"}},
          "group_1": {"format": "nvfp4-pack-quantized", "targets": ["re:.*mlp\\.(gate|up|down)_proj$"],
                      "weights": {"num_bits": 4, "type": "float", "strategy": "tensor_group", "group_size": 16}}}}})");
  ASSERT_EQ(c.groups.size(), 2u);
  EXPECT_EQ(c.groups[0].format, "float-quantized");
  EXPECT_EQ(c.groups[0].targets, std::vector<std::string>{"re:.*self_attn\\.(q|k|v|o)_proj$"});
  EXPECT_EQ(c.groups[0].group_size, 0);
  EXPECT_EQ(c.groups[1].format, "nvfp4-pack-quantized");
  EXPECT_EQ(c.groups[1].num_bits, 4);
  EXPECT_EQ(c.groups[1].group_size, 16);
  EXPECT_EQ(c.not_converted, (std::vector<std::string>{"lm_head", "re:.*layers\\.1\\.mlp\\.down_proj$"}));
  EXPECT_EQ(c.scheme, "mixed-precision, float-quantized, nvfp4-pack-quantized");
}

TEST(HfConfigDialect, CompressedTensorsNumBitsPastAnIntIsNamed) {
  std::string text = kCompressedTensors;
  text.replace(text.find("\"num_bits\": 4"), 13, "\"num_bits\": 4294967300");
  try {
    parse_hf_config(text);
    FAIL() << "accepted";
  } catch (const HfConfigError& e) {
    EXPECT_EQ(e.code, HfErrc::bad_type);
    EXPECT_NE(std::string(e.what()).find("weights.num_bits' is 4294967300, not an integer of 0 to 64"),
              std::string::npos)
        << e.what();
  }
}

// ModelOpt 0.47's MIXED_PRECISION hf_quant_config.json (process_layer_quant_config): one group per quantized layer,
// its target the layer itself, its format the layer's quant_algo.
TEST(HfConfigDialect, ModelOptMixedPrecisionLayersAreGroups) {
  const HfConfig c = parse_hf_config(R"({"torch_dtype": "bfloat16"})", ConfigRules::detect,
                                     R"({"producer": {"name": "modelopt", "version": "0.47.0"}, "quantization":
                                         {"quant_algo": "MIXED_PRECISION", "kv_cache_quant_algo": null,
                                          "quantized_layers": {
                                            "model.layers.0.mlp.down_proj": {"quant_algo": "W4A16_AWQ",
                                              "group_size": 128, "has_zero_point": false, "pre_quant_scale": true},
                                            "model.layers.0.self_attn.q_proj": {"quant_algo":
                                              "FP8_PER_CHANNEL_PER_TOKEN"}}}})");
  ASSERT_EQ(c.groups.size(), 2u);
  EXPECT_EQ(c.groups[0].name, "model.layers.0.mlp.down_proj");
  EXPECT_EQ(c.groups[0].format, "W4A16_AWQ");
  EXPECT_EQ(c.groups[0].group_size, 128);
  EXPECT_EQ(c.groups[0].targets, std::vector<std::string>{"model.layers.0.mlp.down_proj"});
  EXPECT_EQ(c.groups[1].format, "FP8_PER_CHANNEL_PER_TOKEN");
  try {
    parse_hf_config(R"({"quantization_config": {"quant_method": "modelopt", "quant_algo": "W4A16_AWQ",
                        "group_size": "128"}})");
    FAIL() << "accepted";
  } catch (const HfConfigError& e) {
    EXPECT_EQ(e.code, HfErrc::bad_type);
    EXPECT_NE(std::string(e.what()).find("'group_size' is '128', not a positive integer"), std::string::npos)
        << e.what();
  }
}

TEST(HfConfigDialect, GptOss) {
  const HfConfig c = parse_hf_config(kGptOss);
  EXPECT_EQ(c.rules, ConfigRules::gpt_oss);
  EXPECT_EQ(c.scheme, "mxfp4");
  EXPECT_EQ(c.not_converted.size(), 2u);
}

TEST(HfConfigDialect, UnknownQuantMethodIsListedNotRefused) {
  const HfConfig c = parse_hf_config(R"({"quantization_config": {"quant_method": "bitsandbytes", "bits": 4}})");
  EXPECT_EQ(c.rules, ConfigRules::unknown);
  EXPECT_EQ(c.quant_method, "bitsandbytes");
  EXPECT_FALSE(c.quantization);
}

TEST(HfConfigDialect, AwqAndGptqLayouts) {
  const HfConfig a = parse_hf_config(R"({"quantization_config": {"quant_method": "awq", "bits": 4, "group_size": 128,
      "zero_point": true, "version": "GEMM", "modules_to_not_convert": ["visual"]}})");
  EXPECT_EQ(a.rules, ConfigRules::awq);
  ASSERT_EQ(a.groups.size(), 1u);
  EXPECT_EQ(a.groups[0].format, "gemm");
  EXPECT_EQ(a.scheme, "awq gemm int4 group 128");
  EXPECT_EQ(a.not_converted, std::vector<std::string>{"visual"});
  const HfConfig g = parse_hf_config(R"({"quantization_config": {"quant_method": "gptq", "bits": 3, "group_size": -1,
      "desc_act": true, "sym": false}})");
  EXPECT_EQ(g.rules, ConfigRules::gptq);
  EXPECT_EQ(g.groups[0].format, "gptq");
  EXPECT_EQ(g.groups[0].num_bits, 3);
  const HfConfig m = parse_hf_config(R"({"quantization_config": {"quant_method": "gptq", "bits": 4,
      "is_marlin_format": true}})");
  EXPECT_EQ(m.groups[0].format, "marlin");
}

TEST(HfConfigDialect, DeepSeekFormWithQwensModulesToNotConvert) {
  const HfConfig c = parse_hf_config(
      R"({"quantization_config": {"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8",
          "weight_block_size": [128, 128], "modules_to_not_convert": ["lm_head", "mlp.gate"]}})");
  EXPECT_EQ(c.rules, ConfigRules::deepseek);
  EXPECT_EQ(c.not_converted, (std::vector<std::string>{"lm_head", "mlp.gate"}));
}

TEST(HfConfigDialect, RuleNames) {
  for (const char* name : {"deepseek", "deepinfer", "transformers-fp8", "compressed-tensors", "modelopt", "gpt-oss",
                           "minifloat", "awq", "gptq"}) {
    EXPECT_EQ(to_string(config_rules_named(name)), name);
  }
  EXPECT_THROW(config_rules_named("unknown"), std::invalid_argument);
}

}  // namespace
}  // namespace mf::io
