// The one rule inspect, verify, dequantize and convert share (src/checkpoint/quantization_rule.h, docs/checkpoints.md
// "Never silent"): a declared quantization is read in full or refused before anything is written, naming the method and
// the first tensor; a tensor quantized by its dtype or name is never copied as a weight nor quantized as one; names
// that look like scales but are a model family's parameters pass. The checkpoints are laid out as AutoAWQ (GEMM),
// AutoGPTQ, ModelOpt (NVFP4) and compressed-tensors (pack-quantized) write them; each case failed on the tree before
// the rule (the closing note of the issue shows it). Last, a fuzz-style sweep over random declarations and names.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "../unit/io_test_util.h"
#include "minifloat/checkpoint.h"
#include "minifloat/safetensors.h"
#include "run_cli.h"

namespace {

namespace fs = std::filesystem;
using mf::io::DType;
using mf::io::TensorView;
using mf::io::testing::TempDir;
using mf::io::testing::write_file;
using mf::test::run;
using Bytes = std::vector<std::byte>;

// A tensor to write: the bytes are kept here, the views point into them.
struct Tensor {
  std::string name;
  DType dtype;
  std::vector<std::uint64_t> shape;
  Bytes data;
};

std::uint64_t count(const std::vector<std::uint64_t>& shape) {
  std::uint64_t n = 1;
  for (const std::uint64_t d : shape) n *= d;
  return n;
}

int bits(DType t) {
  for (const auto& d : mf::io::all_dtypes) {
    if (d.dtype == t) return d.bits;
  }
  return 8;
}

// `byte` repeated over the tensor (0x38 is 1.0 in e4m3; 0x3c00 f16, 0x3f80 bf16, 0x3f800000 f32: 1.0 in each).
Tensor filled(std::string name, DType t, std::vector<std::uint64_t> shape) {
  const std::uint64_t n = count(shape) * static_cast<std::uint64_t>(bits(t)) / 8;
  Bytes b(n, std::byte{0});
  const auto put = [&](std::uint32_t one, int width) {
    for (std::uint64_t i = 0; i + width <= n; i += width) std::memcpy(b.data() + i, &one, width);
  };
  switch (t) {
    case DType::F32: put(0x3f800000u, 4); break;
    case DType::BF16: put(0x3f80u, 2); break;
    case DType::F16: put(0x3c00u, 2); break;
    case DType::F8_E4M3: put(0x38u, 1); break;
    case DType::F8_E8M0: put(0x7fu, 1); break;
    case DType::U8: put(0x21u, 1); break;  // two e2m1 codes: 0.5 and 1
    default: put(0x11111111u, 4); break;   // packed integers
  }
  return {std::move(name), t, std::move(shape), std::move(b)};
}

void write_checkpoint(const fs::path& dir, const std::vector<Tensor>& tensors, const std::string& config,
                      const std::string& hf_quant_config = "") {
  fs::create_directories(dir);
  std::vector<TensorView> views;
  for (const Tensor& t : tensors) views.push_back({t.name, t.dtype, t.shape, t.data});
  mf::io::write_safetensors(dir / "model.safetensors", views);
  if (!config.empty()) write_file(dir / "config.json", config);
  if (!hf_quant_config.empty()) write_file(dir / "hf_quant_config.json", hf_quant_config);
}

// ---- the published layouts (out = 32, in = 64, groups of 64) ----

// AutoAWQ's GEMM layout: qweight I32 [in, out/8], qzeros I32 [in/G, out/8], scales F16 [in/G, out].
// Zero points of 8 and codes of 1: every weight -7 x scale (values that quantize into every scheme non-trivially).
Tensor zeros_of_eight(std::string name, std::vector<std::uint64_t> shape) {
  Tensor z = filled(std::move(name), DType::I32, std::move(shape));
  for (std::size_t i = 0; i < z.data.size(); ++i) z.data[i] = std::byte{0x88};
  return z;
}
void add_awq(std::vector<Tensor>& t, const std::string& m) {
  t.push_back(filled(m + ".qweight", DType::I32, {64, 4}));
  t.push_back(zeros_of_eight(m + ".qzeros", {1, 4}));
  t.push_back(filled(m + ".scales", DType::F16, {1, 32}));
}
// AutoGPTQ: qweight I32 [in/8, out], qzeros I32 [in/G, out/8], scales F16 [in/G, out], g_idx I32 [in].
void add_gptq(std::vector<Tensor>& t, const std::string& m) {
  Tensor g = filled(m + ".g_idx", DType::I32, {64});
  std::fill(g.data.begin(), g.data.end(), std::byte{0});  // every input in group 0
  t.push_back(std::move(g));
  t.push_back(filled(m + ".qweight", DType::I32, {8, 32}));
  t.push_back(zeros_of_eight(m + ".qzeros", {1, 4}));
  t.push_back(filled(m + ".scales", DType::F16, {1, 32}));
}
// ModelOpt NVFP4: weight U8 [R, C/2], weight_scale F8_E4M3 [R, C/16], weight_scale_2 F32 [], input_scale F32 [].
void add_modelopt_nvfp4(std::vector<Tensor>& t, const std::string& m) {
  t.push_back(filled(m + ".input_scale", DType::F32, {}));
  t.push_back(filled(m + ".weight", DType::U8, {32, 32}));
  t.push_back(filled(m + ".weight_scale", DType::F8_E4M3, {32, 4}));
  t.push_back(filled(m + ".weight_scale_2", DType::F32, {}));
}
// ModelOpt INT4 (W4A16_AWQ): weight U8 [R/2, C], two output rows per byte, weight_scale F32 [R, C/G], and AWQ's
// pre_quant_scale BF16 [C].
void add_modelopt_int4(std::vector<Tensor>& t, const std::string& m) {
  t.push_back(filled(m + ".pre_quant_scale", DType::BF16, {64}));
  t.push_back(filled(m + ".weight", DType::U8, {16, 64}));
  t.push_back(filled(m + ".weight_scale", DType::F32, {32, 1}));
}
// ModelOpt W4A8_AWQ: the INT4 form with an FP8 second level, weight_scale_2 F32 []: no form minifloat reads.
void add_modelopt_w4a8(std::vector<Tensor>& t, const std::string& m) {
  add_modelopt_int4(t, m);
  t.push_back(filled(m + ".weight_scale_2", DType::F32, {}));
  t.push_back(filled(m + ".input_scale", DType::F32, {}));
}
// compressed-tensors pack-quantized int4: weight_packed I32 [R, C/8], weight_scale BF16 [R, C/G], weight_shape I64.
void add_ct_int4(std::vector<Tensor>& t, const std::string& m) {
  t.push_back(filled(m + ".weight_packed", DType::I32, {32, 8}));
  t.push_back(filled(m + ".weight_scale", DType::BF16, {32, 1}));
  Tensor shape = filled(m + ".weight_shape", DType::I64, {2});
  const std::int64_t rc[2] = {32, 64};
  std::memcpy(shape.data.data(), rc, sizeof rc);
  t.push_back(std::move(shape));
}

// bitsandbytes' 4-bit form: weight U8 (packed NF4) with weight.absmax, quant_map and quant_state: not read.
void add_bnb4(std::vector<Tensor>& t, const std::string& m) {
  t.push_back(filled(m + ".weight", DType::U8, {1024, 1}));
  t.push_back(filled(m + ".weight.absmax", DType::F32, {32}));
  t.push_back(filled(m + ".weight.quant_map", DType::F32, {16}));
}

constexpr const char* kBnbConfig =
    R"({"model_type": "llama", "quantization_config": {"quant_method": "bitsandbytes", "load_in_4bit": true,
        "bnb_4bit_quant_type": "nf4"}})";
constexpr const char* kAwqGemvConfig =
    R"({"model_type": "llama", "torch_dtype": "float16", "quantization_config": {"quant_method": "awq", "bits": 4,
        "group_size": 64, "zero_point": true, "version": "gemv"}})";
constexpr const char* kGptqMarlinConfig =
    R"({"model_type": "llama", "torch_dtype": "float16", "quantization_config": {"quant_method": "gptq", "bits": 4,
        "group_size": 64, "desc_act": true, "sym": true, "checkpoint_format": "marlin"}})";
constexpr const char* kGptqV2Config =
    R"({"model_type": "llama", "torch_dtype": "float16", "quantization_config": {"quant_method": "gptq", "bits": 4,
        "group_size": 64, "desc_act": true, "sym": true, "checkpoint_format": "gptq_v2"}})";
constexpr const char* kAwqConfig =
    R"({"model_type": "llama", "torch_dtype": "float16", "quantization_config": {"quant_method": "awq", "bits": 4,
        "group_size": 64, "zero_point": true, "version": "gemm"}})";
constexpr const char* kGptqConfig =
    R"({"model_type": "llama", "torch_dtype": "float16", "quantization_config": {"quant_method": "gptq", "bits": 4,
        "group_size": 64, "desc_act": true, "sym": true}})";
constexpr const char* kModeloptConfig =
    R"({"model_type": "llama", "torch_dtype": "bfloat16", "quantization_config": {"quant_method": "modelopt",
        "quant_algo": "NVFP4", "group_size": 16, "ignore": ["lm_head"]}})";
constexpr const char* kHfQuantConfig =
    R"({"producer": {"name": "modelopt", "version": "0.47.0"}, "quantization": {"quant_algo": "NVFP4",
        "group_size": 16, "exclude_modules": ["lm_head"]}})";
// marlin-24: 2:4-sparse int4 for Marlin's kernels, a compressed-tensors format minifloat does not read.
constexpr const char* kCtMarlinConfig =
    R"({"model_type": "llama", "quantization_config": {"quant_method": "compressed-tensors", "format":
        "marlin-24", "config_groups": {"group_0": {"targets": ["Linear"], "weights": {"num_bits": 4, "type": "int",
        "strategy": "group", "group_size": 64, "symmetric": true}}}, "ignore": ["lm_head"]}})";

std::vector<Tensor> model_with(void (*add)(std::vector<Tensor>&, const std::string&)) {
  std::vector<Tensor> t;
  t.push_back(filled("model.embed_tokens.weight", DType::BF16, {16, 64}));
  add(t, "model.layers.0.mlp.down_proj");
  add(t, "model.layers.0.self_attn.q_proj");
  t.push_back(filled("model.norm.weight", DType::BF16, {64}));
  return t;
}

nlohmann::json config_of(const fs::path& dir) {
  return nlohmann::json::parse(mf::io::testing::read_file(dir / "config.json"));
}

// Every command refuses, with exit 2, the message's `parts`, and no output.
void expect_refused_everywhere(const TempDir& dir, const fs::path& in, const std::vector<std::string>& parts) {
  const std::vector<std::vector<std::string>> commands{
      {"dequantize", in.string(), (dir / "out").string(), "--dtype", "bf16"},
      {"dequantize", in.string(), (dir / "out").string()},
      {"convert", in.string(), (dir / "out").string(), "--recipe", "mxfp4"},
      {"convert", in.string(), (dir / "out").string(), "--recipe", "nvfp4"},
      {"convert", in.string(), (dir / "out").string(), "--recipe", "fp8-block"},
      {"convert", in.string(), (dir / "out").string(), "--recipe", "mxfp4", "--format", "minifloat"},
      {"convert", in.string(), (dir / "out").string(), "--recipe", "nvfp4", "--format", "compressed-tensors"},
      {"verify", in.string()},
      {"inspect", in.string()}};
  for (const auto& c : commands) {
    const auto r = run(c);
    EXPECT_EQ(r.exit_code, 2) << c[0] << " " << c.back() << ": " << r.out << r.err;
    for (const std::string& p : parts) EXPECT_NE(r.err.find(p), std::string::npos) << c[0] << ": " << r.err;
    EXPECT_FALSE(fs::exists(dir / "out")) << c[0] << " " << c.back();
  }
}

TEST(QuantizationRule, BitsandbytesIsRefusedByEveryCommandNamingTheMethodAndTheFirstTensor) {
  TempDir dir;
  write_checkpoint(dir / "in", model_with(add_bnb4), kBnbConfig);
  expect_refused_everywhere(dir, dir / "in",
                            {"config.json declares quantization 'bitsandbytes'",
                             "'model.layers.0.mlp.down_proj.weight' (U8 [1024, 1])", "nothing was written"});
}

// AWQ's other versions and GPTQ's v2 pack (or offset) otherwise than the layouts minifloat reads: refused by name.
TEST(QuantizationRule, AwqAndGptqLayoutsNotReadAreRefusedNamingThem) {
  {
    TempDir dir;
    write_checkpoint(dir / "in", model_with(add_awq), kAwqGemvConfig);
    expect_refused_everywhere(dir, dir / "in",
                              {"config.json declares quantization 'awq'", "its version 'gemv' with 4-bit codes",
                               "'model.layers.0.mlp.down_proj.qweight' (I32 [64, 4])"});
  }
  {
    TempDir dir;
    write_checkpoint(dir / "in", model_with(add_gptq), kGptqMarlinConfig);
    expect_refused_everywhere(dir, dir / "in",
                              {"config.json declares quantization 'gptq'", "its checkpoint_format 'marlin'",
                               "'model.layers.0.mlp.down_proj.g_idx' (I32 [64])"});
  }
}

// AutoAWQ's GEMM layout and AutoGPTQ's (v1 and gptq_v2) are read (checked value for value in
// tests/unit/dialect_pairs_test.cc, python/tests/test_dialects.py and test_gptq_v2.py): every command runs, dequantize
// writes plain weights only.
TEST(QuantizationRule, AwqAndGptqAreReadByEveryCommand) {
  using Add = void (*)(std::vector<Tensor>&, const std::string&);
  for (const auto& [add, config] :
       {std::pair<Add, const char*>{add_awq, kAwqConfig}, {add_gptq, kGptqConfig}, {add_gptq, kGptqV2Config}}) {
    TempDir dir;
    write_checkpoint(dir / "in", model_with(add), config);
    for (const char* c : {"inspect", "verify"}) {
      const auto r = run({c, (dir / "in").string()});
      EXPECT_EQ(r.exit_code, 0) << c << ": " << r.err;
    }
    const auto d = run({"dequantize", (dir / "in").string(), (dir / "out").string()});
    ASSERT_EQ(d.exit_code, 0) << d.err;
    const mf::io::SafetensorsFile out = mf::io::read_safetensors(dir / "out" / "model.safetensors");
    std::set<std::string> names;
    for (const auto& t : out.tensors()) names.insert(t.name);
    EXPECT_EQ(names, (std::set<std::string>{"model.embed_tokens.weight", "model.layers.0.mlp.down_proj.weight",
                                            "model.layers.0.self_attn.q_proj.weight", "model.norm.weight"}));
    EXPECT_EQ(out.find("model.layers.0.mlp.down_proj.weight")->shape, (std::vector<std::uint64_t>{32, 64}));
    const auto c = run({"convert", (dir / "in").string(), (dir / "conv").string(), "--recipe", "mxfp4"});
    EXPECT_EQ(c.exit_code, 0) << c.err;
  }
}

// Without config.json, the names alone: bitsandbytes' absmax and quant_map are quantization parameters.
TEST(QuantizationRule, QuantizationTensorsWithoutAConfigAreRefusedByTheirNames) {
  TempDir dir;
  write_checkpoint(dir / "in", model_with(add_bnb4), "");
  expect_refused_everywhere(dir, dir / "in", {"looks quantized (by its dtype) but is part of no pair minifloat reads"});
}

TEST(QuantizationRule, CompressedTensorsFormatNotReadIsRefusedNamingIt) {
  TempDir dir;
  write_checkpoint(dir / "in", model_with(add_ct_int4), kCtMarlinConfig);
  expect_refused_everywhere(dir, dir / "in",
                            {"config.json declares quantization 'compressed-tensors'",
                             "'group_0' stores int4 weights "
                             "as 'marlin-24'",
                             "'model.layers.0.mlp.down_proj.weight_packed' (I32 [32, 8])"});
}

// inspect still lists the checkpoint, marking what it does not understand, and exits 2 with the same message.
TEST(QuantizationRule, InspectListsTheTensorsMarksTheUnreadOnesAndExits2) {
  TempDir dir;
  write_checkpoint(dir / "in", model_with(add_bnb4), "");
  const auto r = run({"inspect", (dir / "in").string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("model.layers.0.mlp.down_proj.weight.absmax"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("not understood"), std::string::npos) << r.out;
  const auto j = run({"inspect", (dir / "in").string(), "--json"});
  EXPECT_EQ(j.exit_code, 2);
  EXPECT_NE(nlohmann::json::parse(j.out).at("not_understood").get<std::string>().find("down_proj.weight"),
            std::string::npos);
}

// ModelOpt NVFP4 into minifloat's NVFP4 is a re-layout: codes and scales unchanged, and the output's config says what
// it holds (quant_method minifloat, schemes ["nvfp4"]), which verify holds the pairs against.
TEST(QuantizationRule, ModeloptNvfp4ToMinifloatNvfp4KeepsTheBytesAndDeclaresThem) {
  TempDir dir;
  const std::vector<Tensor> in = model_with(add_modelopt_nvfp4);
  write_checkpoint(dir / "in", in, kModeloptConfig, kHfQuantConfig);
  const auto r = run({"convert", (dir / "in").string(), (dir / "out").string(), "--recipe", "nvfp4"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json q = config_of(dir / "out").at("quantization_config");
  EXPECT_EQ(q.at("quant_method"), "minifloat");
  EXPECT_EQ(q.at("schemes"), nlohmann::json::array({"nvfp4"}));
  EXPECT_FALSE(fs::exists(dir / "out" / "hf_quant_config.json"));
  const mf::io::SafetensorsFile out = mf::io::read_safetensors(dir / "out" / "model.safetensors");
  for (const Tensor& t : in) {
    const mf::io::SafetensorsTensor* o = out.find(t.name);
    ASSERT_NE(o, nullptr) << t.name;
    const auto b = out.bytes(*o);
    EXPECT_TRUE(std::equal(b.begin(), b.end(), t.data.begin(), t.data.end())) << t.name;
  }
  const auto v = run({"verify", (dir / "out").string()});
  EXPECT_EQ(v.exit_code, 0) << v.err;
  EXPECT_NE(v.out.find("config.json valid under minifloat rules"), std::string::npos) << v.out;
}

// Into another scheme: dequantized exactly first, so one pass equals dequantize-to-f32 then convert, byte for byte;
// the activation scales of the old scheme are left out, and the config declares the new scheme.
TEST(QuantizationRule, ModeloptNvfp4IntoAnotherSchemeIsRequantizedFromItsExactValues) {
  TempDir dir;
  write_checkpoint(dir / "in", model_with(add_modelopt_nvfp4), kModeloptConfig, kHfQuantConfig);
  for (const char* recipe : {"mxfp4", "fp8-block"}) {
    const fs::path one = dir / (std::string("one-") + recipe), f32 = dir / "f32",
                   two = dir / (std::string("two-") + recipe);
    ASSERT_EQ(run({"convert", (dir / "in").string(), one.string(), "--recipe", recipe}).exit_code, 0);
    if (!fs::exists(f32)) {
      // bf16: the model's own dtype for its plain tensors, and exact for these products (e2m1 x e4m3 x 1.0 has at
      // most 6 significant bits), so the two passes see the same values.
      ASSERT_EQ(run({"dequantize", (dir / "in").string(), f32.string(), "--dtype", "bf16"}).exit_code, 0);
    }
    ASSERT_EQ(run({"convert", f32.string(), two.string(), "--recipe", recipe}).exit_code, 0);
    EXPECT_TRUE(mf::io::testing::read_file(one / "model.safetensors") ==
                mf::io::testing::read_file(two / "model.safetensors"))
        << recipe;
    EXPECT_EQ(config_of(one).at("quantization_config"), config_of(two).at("quantization_config")) << recipe;
    const mf::io::SafetensorsFile out = mf::io::read_safetensors(one / "model.safetensors");
    EXPECT_EQ(out.find("model.layers.0.mlp.down_proj.input_scale"), nullptr) << recipe;
    EXPECT_EQ(run({"verify", one.string()}).exit_code, 0) << recipe;
  }
  // fp8-block's config is DeepSeek's form; mxfp4's has no DeepSeek form, so minifloat's declaration names it.
  EXPECT_EQ(config_of(dir / "one-fp8-block").at("quantization_config").at("quant_method"), "fp8");
  EXPECT_EQ(config_of(dir / "one-mxfp4").at("quantization_config").at("schemes"),
            nlohmann::json::array({"e2m1-1x32-ue8m0-rceil"}));
}

// bf16 weights into nvfp4 with minifloat's form: the config declares it (before the rule it said nothing, so every
// engine saw an unquantized model of packed bytes).
TEST(QuantizationRule, MinifloatsNvfp4OutputDeclaresItsScheme) {
  TempDir dir;
  ASSERT_EQ(run({"make-example-checkpoint", (dir / "in").string(), "--arch", "llama"}).exit_code, 0);
  ASSERT_EQ(run({"convert", (dir / "in").string(), (dir / "out").string(), "--recipe", "nvfp4"}).exit_code, 0);
  EXPECT_EQ(config_of(dir / "out").at("quantization_config"),
            nlohmann::json::parse(R"({"quant_method": "minifloat", "schemes": ["nvfp4"]})"));
  EXPECT_EQ(run({"verify", (dir / "out").string()}).exit_code, 0);
  // A declaration the pairs do not bear out is a verify error.
  nlohmann::json c = config_of(dir / "out");
  c["quantization_config"]["schemes"] = {"mxfp4"};
  write_file(dir / "out" / "config.json", c.dump());
  const auto v = run({"verify", (dir / "out").string()});
  EXPECT_EQ(v.exit_code, 2);
  EXPECT_NE(v.err.find("declares the schemes [mxfp4], but a pair holds nvfp4"), std::string::npos) << v.err;
}

// DeepSeek V4's hyper-connection scales (hc_attn_scale F32 [3]) and a norm's scale (gpt-oss's original checkpoint:
// block.0.attn.norm.scale) are model parameters: dequantized and converted like any float tensor, never refused.
TEST(QuantizationRule, ScaleNamedModelParametersAreRecognisedByFamily) {
  TempDir dir;
  ASSERT_EQ(run({"make-example-checkpoint", (dir / "v4").string(), "--arch", "deepseek-v4"}).exit_code, 0);
  const auto d = run({"dequantize", (dir / "v4").string(), (dir / "v4-out").string()});
  ASSERT_EQ(d.exit_code, 0) << d.err;
  const mf::io::Checkpoint c = mf::io::open_checkpoint(dir / "v4-out");
  bool seen = false;
  for (std::size_t i = 0; i < c.shards.size(); ++i) {
    const mf::io::SafetensorsFile f = mf::io::read_safetensors(c.shard_path(i));
    if (const auto* t = f.find("layers.0.hc_attn_scale")) seen = t->dtype == DType::F32;
  }
  EXPECT_TRUE(seen);
  EXPECT_EQ(run({"inspect", (dir / "v4").string()}).exit_code, 0);

  std::vector<Tensor> oss{filled("block.0.attn.norm.scale", DType::BF16, {64}),
                          filled("block.0.attn.qkv.weight", DType::BF16, {32, 64})};
  write_checkpoint(dir / "oss", oss, R"({"model_type": "gpt_oss"})");
  EXPECT_EQ(run({"dequantize", (dir / "oss").string(), (dir / "oss-out").string()}).exit_code, 0);
  // The same name on a tensor that is not a norm's is still a quantization scale with no pair.
  std::vector<Tensor> odd{filled("block.0.attn.qkv.scale", DType::F8_E8M0, {32, 2}),
                          filled("block.0.attn.qkv.weight", DType::BF16, {32, 64})};
  write_checkpoint(dir / "odd", odd, "");
  EXPECT_EQ(run({"dequantize", (dir / "odd").string(), (dir / "odd-out").string()}).exit_code, 2);
}

// ---- fuzz-style: random declarations and tensor names; exit 0 implies everything was understood ----

struct Module {
  const char* kind;
  bool read;  // a form minifloat reads (or a plain tensor)
  void (*add)(std::vector<Tensor>&, const std::string&);
};

void add_plain(std::vector<Tensor>& t, const std::string& m) {
  t.push_back(filled(m + ".weight", DType::BF16, {32, 64}));
}
void add_deepseek_fp8(std::vector<Tensor>& t, const std::string& m) {
  t.push_back(filled(m + ".weight", DType::F8_E4M3, {32, 64}));
  t.push_back(filled(m + ".weight_scale_inv", DType::F32, {1, 1}));
}
void add_ct_nvfp4(std::vector<Tensor>& t, const std::string& m) {
  t.push_back(filled(m + ".weight_global_scale", DType::F32, {1}));
  t.push_back(filled(m + ".weight_packed", DType::U8, {32, 32}));
  t.push_back(filled(m + ".weight_scale", DType::F8_E4M3, {32, 4}));
}
void add_orphan_scale(std::vector<Tensor>& t, const std::string& m) {
  t.push_back(filled(m + ".weight_scale", DType::F32, {1}));
}
void add_orphan_fp8(std::vector<Tensor>& t, const std::string& m) {
  t.push_back(filled(m + ".weight", DType::F8_E4M3, {32, 64}));
}
void add_hc_scale(std::vector<Tensor>& t, const std::string& m) {
  t.push_back(filled(m + ".hc_attn_scale", DType::F32, {3}));
}
void add_norm_scale(std::vector<Tensor>& t, const std::string& m) {
  t.push_back(filled(m + ".norm.scale", DType::F32, {64}));
}
void add_hash_table(std::vector<Tensor>& t, const std::string& m) {
  t.push_back(filled(m + ".tid2eid", DType::I64, {16, 2}));
}
void add_bnb(std::vector<Tensor>& t, const std::string& m) {
  t.push_back(filled(m + ".weight", DType::U8, {1024, 1}));
  t.push_back(filled(m + ".weight.absmax", DType::F32, {32}));
}

const std::vector<Module> kModules{{"plain", true, add_plain},
                                   {"deepseek-fp8", true, add_deepseek_fp8},
                                   {"modelopt-nvfp4", true, add_modelopt_nvfp4},
                                   {"ct-nvfp4", true, add_ct_nvfp4},
                                   {"hc-scale", true, add_hc_scale},
                                   {"norm-scale", true, add_norm_scale},
                                   {"hash-table", true, add_hash_table},
                                   {"awq", true, add_awq},
                                   {"gptq", true, add_gptq},
                                   {"ct-int4", true, add_ct_int4},
                                   {"modelopt-int4", true, add_modelopt_int4},
                                   {"modelopt-w4a8", false, add_modelopt_w4a8},
                                   {"orphan-scale", false, add_orphan_scale},
                                   {"orphan-fp8", false, add_orphan_fp8},
                                   {"bnb", false, add_bnb}};

struct Declaration {
  const char* config;  // quantization_config, or "" for none
  bool read;
};
const std::vector<Declaration> kDeclarations{
    {"", true},
    {R"({"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic", "weight_block_size": [128, 128]})",
     true},
    {R"({"quant_method": "fp8", "activation_scheme": "dynamic", "weight_block_size": [128, 128]})", true},
    {R"({"quant_method": "compressed-tensors", "format": "nvfp4-pack-quantized", "config_groups": {"g": {"targets":
        ["Linear"], "weights": {"num_bits": 4, "type": "float"}}}})",
     true},
    {R"({"quant_method": "compressed-tensors", "format": "pack-quantized", "config_groups": {"g": {"targets":
        ["Linear"], "weights": {"num_bits": 4, "type": "int"}}}})",
     true},
    {R"({"quant_method": "compressed-tensors", "format": "marlin-24", "config_groups": {"g": {"targets":
        ["Linear"], "weights": {"num_bits": 4, "type": "int"}}}})",
     false},
    {R"({"quant_method": "modelopt", "quant_algo": "NVFP4"})", true},
    {R"({"quant_method": "modelopt", "quant_algo": "INT4_AWQ"})", false},
    {R"({"quant_method": "modelopt", "quant_algo": "W4A16_AWQ", "group_size": 128})", true},
    {R"({"quant_method": "modelopt", "quant_algo": "W4A8_AWQ", "group_size": 128})", false},
    {R"({"quant_method": "modelopt", "quant_algo": "NVFP4_SVD"})", false},
    {R"({"quant_method": "modelopt", "quant_algo": "MIXED_PRECISION", "quantized_layers": {
        "model.layers.0.mlp.up_proj": {"quant_algo": "NVFP4", "group_size": 16},
        "model.layers.1.mlp.up_proj": {"quant_algo": "FP8"}}})",
     true},
    {R"({"quant_method": "modelopt", "quant_algo": "MIXED_PRECISION", "quantized_layers": {
        "model.layers.0.mlp.up_proj": {"quant_algo": "W4A8_AWQ"}}})",
     false},
    {R"({"quant_method": "awq", "bits": 4})", true},
    {R"({"quant_method": "awq", "bits": 4, "version": "gemv_fast"})", false},
    {R"({"quant_method": "gptq", "bits": 4})", true},
    {R"({"quant_method": "gptq", "bits": 4, "checkpoint_format": "gptq_v2"})", true},
    {R"({"quant_method": "gptq", "bits": 4, "checkpoint_format": "marlin"})", false},
    {R"({"quant_method": "bitsandbytes", "load_in_4bit": true})", false},
    {R"({"quant_method": "minifloat", "schemes": ["nvfp4"]})", true}};

// What no output of a command that exited 0 may hold: a tensor the rule calls quantized that is no part of a pair.
bool quantized_name_left(const std::string& name) {
  for (const char* p : {".qweight", ".qzeros", ".scales", ".g_idx", ".absmax", ".quant_map"}) {
    if (name.ends_with(p)) return true;
  }
  return false;
}

TEST(QuantizationRuleFuzz, ExitZeroMeansEveryDeclaredTensorWasUnderstoodAndTheOutputDeclaresWhatItHolds) {
  std::mt19937 rng(20261207);
  int refused = 0, passed = 0;
  for (int seed = 0; seed < 40; ++seed) {
    TempDir dir;
    std::vector<Tensor> tensors;
    bool all_read = true;
    std::set<std::string> kinds;
    const int modules = 1 + static_cast<int>(rng() % 3);
    for (int m = 0; m < modules; ++m) {
      const Module& mod = kModules[rng() % kModules.size()];
      mod.add(tensors, "model.layers." + std::to_string(m) + ".mlp.up_proj");
      all_read = all_read && mod.read;
      kinds.insert(mod.kind);
    }
    const Declaration& decl = kDeclarations[rng() % kDeclarations.size()];
    const std::string config = std::string(R"({"model_type": "llama", "torch_dtype": "bfloat16")") +
                               (*decl.config ? std::string(R"(, "quantization_config": )") + decl.config : "") + "}";
    write_checkpoint(dir / "in", tensors, config);
    const bool understood = all_read && decl.read;
    std::string label;
    for (const std::string& k : kinds) label += k + " ";
    label += std::string("| ") + decl.config;
    const std::vector<std::vector<std::string>> commands{
        {"inspect", (dir / "in").string()},
        {"verify", (dir / "in").string()},
        {"dequantize", (dir / "in").string(), (dir / "out").string()},
        {"convert", (dir / "in").string(), (dir / "out").string(), "--recipe", "mxfp4"},
        {"convert", (dir / "in").string(), (dir / "out").string(), "--recipe", "nvfp4", "--format",
         "compressed-tensors"}};
    for (const auto& c : commands) {
      fs::remove_all(dir / "out");
      const auto r = run(c);
      ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 2)
          << c[0] << " crashed (" << r.exit_code << ") on " << label << "\n"
          << r.err;
      if (r.exit_code == 2) {
        ++refused;
        EXPECT_FALSE(fs::exists(dir / "out")) << c[0] << " left output on " << label;
        continue;
      }
      ++passed;
      EXPECT_TRUE(understood) << c[0] << " exited 0 on what minifloat does not read: " << label;
      if (c[0] == "inspect") {
        EXPECT_EQ(r.out.find("not understood"), std::string::npos) << label;
      }
      if (!fs::exists(dir / "out")) continue;
      const mf::io::Checkpoint out = mf::io::open_checkpoint(dir / "out");
      for (std::size_t i = 0; i < out.shards.size(); ++i) {
        const mf::io::SafetensorsFile shard = mf::io::read_safetensors(out.shard_path(i));
        for (const auto& t : shard.tensors()) {
          EXPECT_FALSE(quantized_name_left(t.name)) << c[0] << " wrote " << t.name << " on " << label;
        }
      }
      const nlohmann::json written = config_of(dir / "out");
      if (c[0] == "dequantize") {
        EXPECT_FALSE(written.contains("quantization_config")) << label;
      } else {
        EXPECT_TRUE(written.contains("quantization_config")) << c[0] << " " << c[4] << " on " << label;
        const auto v = run({"verify", (dir / "out").string()});
        EXPECT_EQ(v.exit_code, 0) << c[0] << " " << c[4] << " on " << label << ": its output fails verify: " << v.err;
      }
    }
    // A checkpoint minifloat reads in full is dequantized.
    if (understood) {
      fs::remove_all(dir / "out");
      const auto d = run({"dequantize", (dir / "in").string(), (dir / "out").string()});
      EXPECT_EQ(d.exit_code, 0) << label << ": " << d.err;
    }
  }
  EXPECT_GT(refused, 20);  // both outcomes were reached
  EXPECT_GT(passed, 20);
}

}  // namespace
