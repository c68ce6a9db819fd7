// Quantized (codes, scales) pairs in checkpoints: both stored forms through a file, packed e2m1, the scale grids
// that fit no block, verify, convert's re-layout and refusals, the memory figures and the example checkpoints.
#include "minifloat/checkpoint.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "io_test_util.h"
#include "minifloat/checkpoint_commands.h"
#include "minifloat/checkpoint_tensors.h"
#include "minifloat/codec.h"

namespace mf::io {
namespace {

using namespace mf::io::testing;
using Shape = std::vector<std::uint64_t>;

// ---- quantized pairs ----

TEST(QuantizedPairs, RoundTripThroughAFileInBothForms) {
  TempDir dir;
  std::vector<float> x(64 * 96);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(std::sin(0.37 * static_cast<double>(i))) * 3;
  const std::vector<std::int64_t> shape{64, 96};
  QuantizeOptions o;
  o.pad = true;
  const std::vector<std::pair<std::string, std::string>> cases{{"fp8", "fp8-128x128"},
                                                               {"fp8v3", "e4m3-128x128-f32"},
                                                               {"fp4", "e2m1-1x32-ue8m0-rceil"},
                                                               {"nv", "nvfp4"},
                                                               {"mx8", "mxfp8"}};
  std::vector<OwnedTensor> all;
  std::vector<QuantizedTensor> qs;
  for (const auto& [name, scheme] : cases) {
    qs.push_back(quantize(x.data(), shape, scheme_named(scheme), o));
    for (OwnedTensor& t : pair_tensors(name, qs.back())) all.push_back(std::move(t));
  }
  EXPECT_EQ(all[1].name, "fp8_scale_inv");
  EXPECT_EQ(all[1].dtype, DType::F8_E8M0);
  EXPECT_EQ(all[3].dtype, DType::F32);
  EXPECT_EQ(all[4].dtype, DType::F4);
  EXPECT_EQ(all[5].shape, (Shape{64, 3}));
  EXPECT_EQ(all[7].name, "nv_scale");
  EXPECT_EQ(all[8].name, "nv_scale_2");
  std::vector<TensorView> views;
  for (const OwnedTensor& t : all) views.push_back(t.view());
  write_safetensors(dir / "q.safetensors", views);
  const SafetensorsFile f = read_safetensors(dir / "q.safetensors");
  const std::vector<QuantizedPair> pairs = find_pairs(f);
  ASSERT_EQ(pairs.size(), cases.size());
  std::map<std::string, std::string> found;
  for (const QuantizedPair& p : pairs) found[p.weight] = p.scheme.name;
  EXPECT_EQ(found, (std::map<std::string, std::string>{{"fp8", "e4m3-128x128-ue8m0-rceil"},
                                                       {"fp8v3", "e4m3-128x128-f32-f32"},
                                                       {"fp4", "e2m1-1x32-ue8m0-rceil"},
                                                       {"nv", "nvfp4"},
                                                       {"mx8", "e4m3-1x32-ue8m0-rceil"}}));
  for (const QuantizedPair& p : pairs) {
    const std::size_t k = static_cast<std::size_t>(
        std::find_if(cases.begin(), cases.end(), [&](const auto& c) { return c.first == p.weight; }) - cases.begin());
    const QuantizedTensor back = read_pair(f, p);
    EXPECT_EQ(back.codes, qs[k].codes) << p.weight;
    EXPECT_EQ(back.scales, qs[k].scales) << p.weight;
    EXPECT_EQ(back.tensor_scale, qs[k].tensor_scale) << p.weight;
    std::vector<float> a(x.size()), b(x.size());
    dequantize(back, a.data());
    dequantize(qs[k], b.data());
    EXPECT_EQ(a, b) << p.weight;
  }
}

TEST(QuantizedPairs, ScaleGridThatFitsNoBlockIsNamed) {
  TempDir dir;
  const Shape w_shape{64, 96}, s_shape{5, 5};
  const Bytes w(64 * 96), s(100);  // named: the views must not outlive them
  const std::vector<TensorView> t{{"w", DType::F8_E4M3, w_shape, w}, {"w_scale_inv", DType::F32, s_shape, s}};
  write_safetensors(dir / "q.safetensors", t);
  expect_io_error([&] { find_pairs(read_safetensors(dir / "q.safetensors")); }, IoErrc::size_mismatch,
                  "tensor 'w': scale w_scale_inv [5, 5] fits no block of [64, 96]");
}

// DeepInfer's FP4-QAT condition, block by block.
TEST(Fp4Qat, BlocksOfE2m1ValuesTimesOnePowerOfTwo) {
  const auto codes = [](std::initializer_list<float> values) {
    std::vector<std::uint8_t> out;
    for (const float v : values) out.push_back(static_cast<std::uint8_t>(encode(e4m3, v)));
    return out;
  };
  EXPECT_TRUE(fp4_qat_block(codes({0, 0, -0.0f})));
  EXPECT_TRUE(fp4_qat_block(codes({6, 4, 3, 2, 1.5f, 1, 0.5f, -6})));
  EXPECT_TRUE(fp4_qat_block(codes({48, 32, 24, 4})));            // x 8: 6, 4, 3, 0.5
  EXPECT_TRUE(fp4_qat_block(codes({0.75f, 0.0625f})));           // x 1/8: 6, 0.5
  EXPECT_TRUE(fp4_qat_block(codes({3, 1})));                     // 3, 1 (or 6, 2 at x 1/2)
  EXPECT_FALSE(fp4_qat_block(codes({6, 2.5f})));                 // 2.5 is no e2m1 value at any shared power
  EXPECT_FALSE(fp4_qat_block(codes({6, 0.25f})));                // 0.25 needs a finer grid than 0.5 x 2^0
  EXPECT_FALSE(fp4_qat_block(codes({5})));                       // 5 is 1.25 x 4, 2.5 x 2, ...: never on the grid
  EXPECT_FALSE(fp4_qat_block(std::vector<std::uint8_t>{0x7F}));  // NaN
}

// ---- memory: the accounting of docs/spec.md#v4-memory, tensor by tensor ----

// docs/spec.md#v4-geometry: wkv [512, 7168] in FP8 with 128x128 ue8m0 scales is 3,670,016 bytes plus 4 x 56 = 224 scale
// bytes (0.006%); an expert w1 [3072, 7168] in FP4 is 3072 x 3584 = 11,010,048 bytes plus [3072, 224] = 688,128 scale
// bytes. Per parameter that is 0.5 + 1/32 = 0.53125 bytes (the seed rounds the 6.25% overhead to "about 0.5625",
// which would be 0.5 + 0.0625; its own byte counts give 0.53125).
TEST(Memory, Seed002TensorFigures) {
  const HfConfig config = parse_hf_config(R"({"model_type": "deepseek_v4", "torch_dtype": "bfloat16",
      "vocab_size": 16, "hidden_size": 7168, "num_hidden_layers": 1, "num_attention_heads": 1, "head_dim": 512,
      "q_lora_rank": 128, "n_routed_experts": 1, "n_shared_experts": 0, "moe_intermediate_size": 3072})");
  const Recipe recipe = parse_recipe(R"({"*attn.wkv.weight": "fp8-128x128", "*.experts.*": "e2m1-1x32-ue8m0-rceil"})");
  const MemoryReport r = memory_report(config, recipe);
  std::map<std::string, MemoryClass> by;
  for (const MemoryClass& c : r.classes) by[c.target] = c;
  EXPECT_EQ(by["fp8-128x128"].params, 512u * 7168);
  EXPECT_EQ(by["fp8-128x128"].data_bytes, 3'670'016u);
  EXPECT_EQ(by["fp8-128x128"].scale_bytes, 224u);
  EXPECT_NEAR(224.0 / 3'670'016 * 100, 0.006, 0.0005);
  const MemoryClass& fp4 = by["e2m1-1x32-ue8m0-rceil"];
  EXPECT_EQ(fp4.tensors, 3u);  // w1, w2, w3
  EXPECT_EQ(fp4.data_bytes, 3u * 11'010'048);
  EXPECT_EQ(fp4.scale_bytes, 3u * 688'128);
  EXPECT_EQ(static_cast<double>(fp4.data_bytes + fp4.scale_bytes) / static_cast<double>(fp4.params), 0.53125);
  EXPECT_EQ(r.params, by["fp8-128x128"].params + fp4.params + by["keep"].params);
  EXPECT_EQ(by["keep"].data_bytes, 2 * by["keep"].params);  // bf16
}

TEST(Memory, ShardsOfAJobArray) {
  EXPECT_TRUE(shard_is_mine(0, 0, 1));
  EXPECT_TRUE(shard_is_mine(5, 1, 2));
  EXPECT_FALSE(shard_is_mine(5, 0, 2));
  EXPECT_THROW(shard_is_mine(0, 2, 2), std::invalid_argument);
  EXPECT_THROW(shard_is_mine(0, 0, 0), std::invalid_argument);
}

TEST(ExampleCheckpoint, IsConsistentAndDeterministic) {
  TempDir a, b;
  write_example_checkpoint(a.path());
  write_example_checkpoint(b.path(), 2);
  const CheckpointSummary s = check_checkpoint(open_checkpoint(a.path()));
  EXPECT_EQ(s.tensors, 63u);
  for (const char* f : {"config.json", "model.safetensors.index.json", "model-00001-of-00002.safetensors"}) {
    EXPECT_EQ(read_file(a / f), read_file(b / f)) << f;
  }
  const HfConfig c = read_hf_config(a / "config.json");
  EXPECT_EQ(c.model_type, "deepseek_v4");
  EXPECT_FALSE(c.quantization.has_value());
}

// The real architectures in miniature: their tensors, and `memory`'s count of them by hand. Llama: embeddings and
// head 2 x 256 x 128; per layer norms 2 x 128, q and o 2 x 256 x 128, k and v 2 x 128 x 128, MLP 3 x 256 x 128.
TEST(ExampleCheckpoint, ArchitecturesInMiniature) {
  const struct {
    ExampleArch arch;
    const char* model_type;
    std::size_t tensors;
  } cases[] = {{ExampleArch::llama, "llama", 21},
               {ExampleArch::qwen_moe, "qwen3_moe", 45},
               {ExampleArch::deepseek_v4, "deepseek_v4", 86}};
  for (const auto& c : cases) {
    TempDir dir;
    const HfConfig config = write_example_checkpoint(dir.path(), 2, example_size(c.arch), c.arch);
    EXPECT_EQ(config.model_type, c.model_type);
    EXPECT_EQ(check_checkpoint(open_checkpoint(dir.path())).tensors, c.tensors) << c.model_type;
  }
  TempDir dir;
  const HfConfig llama = write_example_checkpoint(dir.path(), 1, example_size(ExampleArch::llama), ExampleArch::llama);
  EXPECT_EQ(memory_report(llama, recipe_named("fp8-block")).params,
            2u * 256 * 128 + 2 * (2 * 128 + 2 * 256 * 128 + 2 * 128 * 128 + 3 * 256 * 128) + 128);
  EXPECT_EQ(example_arch_named("qwen-moe"), ExampleArch::qwen_moe);
  EXPECT_THROW(example_arch_named("gpt"), std::invalid_argument);
}

// DeepSeek-V4 without layer_types: transformers' defaults (two heavily compressed layers, then alternating with
// compressed sparse ones, which alone have an indexer; the first 3 layers hash-routed).
TEST(ModelTensors, DeepSeekV4LayerTypesDefaultAsTransformers) {
  const HfConfig config = parse_hf_config(R"({"model_type": "deepseek_v4", "vocab_size": 16, "hidden_size": 64,
      "num_hidden_layers": 5, "num_attention_heads": 2, "head_dim": 64, "q_lora_rank": 32, "o_groups": 2,
      "o_lora_rank": 32, "n_routed_experts": 2, "num_experts_per_tok": 1, "moe_intermediate_size": 32})");
  std::set<std::string> names;
  for (const ShapedName& t : model_tensors(config)) names.insert(t.name);
  for (const char* absent :
       {"layers.0.attn.indexer.wq_b.weight", "layers.1.attn.indexer.wq_b.weight", "layers.2.attn.indexer.wq_b.weight",
        "layers.4.attn.indexer.wq_b.weight", "layers.3.ffn.gate.tid2eid", "layers.2.ffn.gate.bias"}) {
    EXPECT_FALSE(names.contains(absent)) << absent;
  }
  for (const char* present : {"layers.3.attn.indexer.wq_b.weight", "layers.2.ffn.gate.tid2eid",
                              "layers.3.ffn.gate.bias", "layers.4.attn.compressor.ape", "hc_head_fn"}) {
    EXPECT_TRUE(names.contains(present)) << present;
  }
}

// A recipe whose scheme patterns match nothing would label a plain checkpoint quantized: refused, nothing written.
TEST(Convert, ARecipeThatQuantizesNothingIsRefused) {
  TempDir dir;
  fs::create_directories(dir / "in");
  write_safetensors(dir / "in" / "model.safetensors",
                    std::vector<TensorView>{{"a.weight", DType::BF16, Shape{128, 256}, Bytes(128 * 256 * 2)}});
  expect_io_error([&] { convert_checkpoint(dir / "in", dir / "out", parse_recipe(R"({"*.experts.*": "mxfp4"})")); },
                  IoErrc::unmatched_pattern, "quantizes no tensor of this checkpoint: '*.experts.*' matches no tensor");
  EXPECT_FALSE(fs::exists(dir / "out"));
}

// An MXFP4 pair in minifloat's form converted by the mxfp4 recipe into ModelOpt's dialect: the same code and scale
// bytes under ModelOpt's names and dtypes (U8 [R, C/2], U8 [R, C/32]), reported as re-laid out with no error; and
// the same pair by the mxfp8 recipe is refused (it would need requantizing), with nothing written.
TEST(Convert, AnMxfp4PairIsReLaidOutNotRequantized) {
  TempDir dir;
  std::vector<float> x(128 * 64);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(std::sin(0.37 * static_cast<double>(i)));
  const QuantizedTensor q = quantize(x.data(), std::vector<std::int64_t>{128, 64}, scheme_named("mxfp4"));
  std::vector<OwnedTensor> parts = pair_tensors("m.weight", q);
  std::vector<TensorView> views;
  for (const OwnedTensor& t : parts) views.push_back(t.view());
  fs::create_directories(dir / "in");
  write_safetensors(dir / "in" / "model.safetensors", views);
  ConvertOptions o;
  o.format = WriteFormat::modelopt;
  const ConvertReport r = convert_checkpoint(dir / "in", dir / "out", recipe_named("mxfp4"), o);
  ASSERT_EQ(r.tensors.size(), 1u);
  EXPECT_EQ(r.tensors[0].name, "m.weight");
  EXPECT_EQ(r.tensors[0].target, "mxfp4 re-laid out");
  EXPECT_EQ(r.tensors[0].max_abs, 0.0);
  const SafetensorsFile f = read_safetensors(dir / "out" / "model.safetensors");
  ASSERT_NE(f.find("m.weight"), nullptr);
  ASSERT_NE(f.find("m.weight_scale"), nullptr);
  EXPECT_EQ(f.find("m.weight")->dtype, DType::U8);
  EXPECT_EQ(f.find("m.weight")->shape, (Shape{128, 32}));
  EXPECT_EQ(f.find("m.weight_scale")->shape, (Shape{128, 2}));
  EXPECT_EQ(to_string(f.bytes(*f.find("m.weight"))), to_string(parts[0].data));
  EXPECT_EQ(to_string(f.bytes(*f.find("m.weight_scale"))), to_string(parts[1].data));
  // Into another scheme: dequantized exactly, then quantized. MXFP8 holds every MXFP4 block exactly (its scale is
  // 2^6 finer, and e4m3 holds every e2m1 value times 2^6), so the requantization loses nothing.
  const ConvertReport r8 = convert_checkpoint(dir / "in", dir / "out8", recipe_named("mxfp8"), o);
  ASSERT_EQ(r8.tensors.size(), 1u);
  EXPECT_EQ(r8.tensors[0].target, "mxfp8 requantized from e2m1-1x32-ue8m0-rceil");
  EXPECT_EQ(r8.tensors[0].max_abs, 0.0);
  const SafetensorsFile f8 = read_safetensors(dir / "out8" / "model.safetensors");
  EXPECT_EQ(f8.find("m.weight")->dtype, DType::F8_E4M3);
}

// FP8 128x128 blocks with F32 scales that are all powers of two (2^-2, 2^3, 2^-127 an f32 subnormal, 2^127), asked
// for as fp8-128x128 (ue8m0 scales): the E8M0 codes are the exponents + 127 and the codes are the input's bytes; back
// by fp8-block the F32 scales are the input's bytes again. One scale that is no power of two is named, nothing written.
TEST(Convert, Fp8BlockScalesBetweenF32AndUe8m0) {
  TempDir dir;
  Bytes codes(256 * 256);
  for (std::size_t i = 0; i < codes.size(); ++i) codes[i] = static_cast<std::byte>((i * 37) % 0x7F);  // no NaN code
  const std::array<float, 4> scales{0.25f, 8.0f, std::ldexp(1.0f, -127), std::ldexp(1.0f, 127)};
  Bytes scale_bytes(16);
  std::memcpy(scale_bytes.data(), scales.data(), 16);
  fs::create_directories(dir / "in");
  write_safetensors(dir / "in" / "model.safetensors",
                    std::vector<TensorView>{{"m.weight", DType::F8_E4M3, Shape{256, 256}, codes},
                                            {"m.weight_scale_inv", DType::F32, Shape{2, 2}, scale_bytes}});
  const ConvertReport r = convert_checkpoint(dir / "in", dir / "e8", parse_recipe(R"({"*": "fp8-128x128"})"));
  ASSERT_EQ(r.tensors.size(), 1u);
  EXPECT_EQ(r.tensors[0].target, "fp8-128x128 re-laid out");
  EXPECT_EQ(r.tensors[0].max_abs, 0.0);
  {
    const SafetensorsFile f = read_safetensors(dir / "e8" / "model.safetensors");
    ASSERT_NE(f.find("m.weight_scale_inv"), nullptr);
    EXPECT_EQ(f.find("m.weight_scale_inv")->dtype, DType::F8_E8M0);
    EXPECT_EQ(to_string(f.bytes(*f.find("m.weight"))), to_string(codes));
    const Bytes e8m0{std::byte{125}, std::byte{130}, std::byte{0}, std::byte{254}};
    EXPECT_EQ(to_string(f.bytes(*f.find("m.weight_scale_inv"))), to_string(e8m0));
  }
  const ConvertReport back = convert_checkpoint(dir / "e8", dir / "f32", recipe_named("fp8-block"));
  ASSERT_EQ(back.tensors.size(), 1u);
  EXPECT_EQ(back.tensors[0].target, "e4m3-128x128-f32 re-laid out");
  {
    const SafetensorsFile f = read_safetensors(dir / "f32" / "model.safetensors");
    EXPECT_EQ(f.find("m.weight_scale_inv")->dtype, DType::F32);
    EXPECT_EQ(to_string(f.bytes(*f.find("m.weight_scale_inv"))), to_string(scale_bytes));
    EXPECT_EQ(to_string(f.bytes(*f.find("m.weight"))), to_string(codes));
  }
  const float third = 0.3f;
  std::memcpy(scale_bytes.data() + 4, &third, 4);
  write_safetensors(dir / "in" / "model.safetensors",
                    std::vector<TensorView>{{"m.weight", DType::F8_E4M3, Shape{256, 256}, codes},
                                            {"m.weight_scale_inv", DType::F32, Shape{2, 2}, scale_bytes}});
  try {
    convert_checkpoint(dir / "in", dir / "bad", parse_recipe(R"({"*": "fp8-128x128"})"));
    ADD_FAILURE() << "a scale of 0.3 written as ue8m0";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("tensor 'm.weight_scale_inv' holds 0.3 at index 1, not a power of two"),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("requantize from the unquantized model"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(dir / "bad"));
}

// V4's experts as some exporters store them: two e2m1 codes per I8 / U8 byte, [R, C/2], read as [R, C].
TEST(QuantizedPairs, PackedE2m1AsI8OrU8) {
  TempDir dir;
  std::vector<float> x(8 * 64);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(std::cos(0.11 * static_cast<double>(i)));
  const QuantizedTensor q = quantize(x.data(), std::vector<std::int64_t>{8, 64}, scheme_named("e2m1-1x32-ue8m0-rceil"));
  std::vector<OwnedTensor> parts = pair_tensors("e", q);
  const Shape packed{8, 32};
  const std::vector<TensorView> views{{"e", DType::I8, packed, parts[0].data},
                                      parts[1].view(),
                                      {"u", DType::U8, packed, parts[0].data},
                                      {"u_scale_inv", parts[1].dtype, parts[1].shape, parts[1].data}};
  write_safetensors(dir / "p.safetensors", views);
  const SafetensorsFile f = read_safetensors(dir / "p.safetensors");
  const std::vector<QuantizedPair> pairs = find_pairs(f);
  ASSERT_EQ(pairs.size(), 2u);
  for (const QuantizedPair& p : pairs) {
    EXPECT_EQ(p.shape, (std::vector<std::int64_t>{8, 64})) << p.weight;
    EXPECT_EQ(p.scheme.name, "e2m1-1x32-ue8m0-rceil") << p.weight;
    EXPECT_EQ(read_pair(f, p).codes, q.codes) << p.weight;
  }
}

TEST(QuantizedPairs, DtypesThatMakeNoPairAreNamed) {
  TempDir dir;
  const Shape w2{4, 32}, s1{4}, scalar{};
  write_safetensors(dir / "a.safetensors", std::vector<TensorView>{{"w", DType::F8_E4M3, w2, Bytes(128)},
                                                                   {"w_scale_inv", DType::F32, s1, Bytes(16)}});
  expect_io_error([&] { find_pairs(read_safetensors(dir / "a.safetensors")); }, IoErrc::size_mismatch,
                  "tensor 'w': weight F8_E4M3 [4, 32] with scale w_scale_inv F32 [4] is not a 2-D weight with a 2-D "
                  "F32, F8_E8M0, F8_E4M3, BF16 or F16 scale grid, or one scale for an FP8 tensor");
  write_safetensors(dir / "b.safetensors", std::vector<TensorView>{{"w", DType::F4, w2, Bytes(64)},
                                                                   {"w_scale", DType::F8_E4M3, Shape{4, 2}, Bytes(8)},
                                                                   {"w_scale_2", DType::BF16, scalar, Bytes(2)}});
  expect_io_error([&] { find_pairs(read_safetensors(dir / "b.safetensors")); }, IoErrc::size_mismatch,
                  "tensor 'w': NVFP4 needs e2m1 data and an F32 scalar _scale_2");
}

// verify's checks on pairs, each on a hand-made file.
class VerifyPairs : public ::testing::Test {
 protected:
  std::string fails(DType scale_dtype, Bytes scale, Bytes codes = Bytes(4 * 32, std::byte{0x38})) {
    const Shape w{4, 32}, s{1, 1};
    write_safetensors(dir_ / "model.safetensors",
                      std::vector<TensorView>{{"w", DType::F8_E4M3, w, codes}, {"w_scale_inv", scale_dtype, s, scale}});
    try {
      verify_checkpoint(dir_.path());
    } catch (const VerifyError& e) {
      EXPECT_EQ(e.tensor, "w");
      return e.what();
    }
    return "passed";
  }
  TempDir dir_;
};

TEST_F(VerifyPairs, ScalesAndCodes) {
  EXPECT_EQ(fails(DType::F8_E8M0, Bytes{std::byte{127}}), "passed");
  EXPECT_EQ(fails(DType::F32, to_bytes(std::string("\0\0\x80\x3f", 4))), "passed");  // 1.0f
  EXPECT_EQ(fails(DType::F8_E8M0, Bytes{std::byte{0xFF}}), "tensor 'w_scale_inv': scale 0 is NaN (ue8m0 code 255)");
  EXPECT_EQ(fails(DType::F32, Bytes(4)), "tensor 'w_scale_inv': scale 0 is not positive (f32 code 0)");
  // A zero scale over an all-zero block (+0 and -0 codes) is what an all-zero block quantizes to: it passes.
  Bytes zeros(4 * 32, std::byte{0x00});
  zeros[5] = std::byte{0x80};
  EXPECT_EQ(fails(DType::F32, Bytes(4), zeros), "passed");
  EXPECT_EQ(fails(DType::F32, to_bytes(std::string("\0\0\x80\xbf", 4))),
            "tensor 'w_scale_inv': scale 0 is not positive (f32 code 3212836864)");  // -1.0f
  EXPECT_EQ(fails(DType::F32, to_bytes(std::string("\0\0\x80\x7f", 4))),
            "tensor 'w_scale_inv': scale 0 is infinite (f32 code 2139095040)");  // +Inf
  Bytes codes(4 * 32, std::byte{0x38});
  codes[70] = std::byte{0x7F};
  EXPECT_EQ(fails(DType::F8_E8M0, Bytes{std::byte{127}}, codes), "tensor 'w': element 70 is NaN");
}

// Converting a checkpoint that already holds FP8 pairs: into the scheme they hold (fp8-block), their codes and F32
// scales stay as they are (a scale is never quantized as a weight); into another (mxfp4), they are requantized from
// their exact values.
TEST(Convert, ScalesOfExistingPairsAreKept) {
  TempDir dir;
  const Shape w{256, 4096}, s{2, 32}, b{256, 64};
  const Bytes scale = pattern_bytes(2 * 32 * 4, 5);
  fs::create_directories(dir / "in");
  write_safetensors(dir / "in" / "model.safetensors",
                    std::vector<TensorView>{{"w", DType::F8_E4M3, w, Bytes(256 * 4096, std::byte{0x38})},
                                            {"w_scale_inv", DType::F32, s, scale},
                                            {"b", DType::F32, b, Bytes(256 * 64 * 4)}});
  const ConvertReport r = convert_checkpoint(dir / "in", dir / "out", recipe_named("fp8-block"));
  EXPECT_EQ(r.shards_written, 1u);
  const SafetensorsFile f = read_safetensors(dir / "out" / "model.safetensors");
  ASSERT_NE(f.find("w_scale_inv"), nullptr);
  EXPECT_EQ(f.find("w_scale_inv")->dtype, DType::F32);
  EXPECT_EQ(to_string(f.bytes(*f.find("w_scale_inv"))), to_string(scale));
  EXPECT_EQ(f.find("b")->dtype, DType::F8_E4M3) << "a plain F32 weight is quantized";
  ASSERT_NE(f.find("b_scale_inv"), nullptr);
  ASSERT_EQ(r.tensors.size(), 1u);
  EXPECT_EQ(r.tensors[0].name, "b");

  const ConvertReport r4 = convert_checkpoint(dir / "in", dir / "out4", recipe_named("mxfp4"));
  const SafetensorsFile f4 = read_safetensors(dir / "out4" / "model.safetensors");
  EXPECT_EQ(f4.find("w")->dtype, DType::F4) << "an FP8 pair asked for as mxfp4";
  EXPECT_EQ(f4.find("w_scale_inv")->dtype, DType::F8_E8M0);
  ASSERT_EQ(r4.tensors.size(), 2u);
  EXPECT_EQ(r4.tensors[0].target, "mxfp4 requantized from e4m3-128x128-f32-f32");
}

}  // namespace
}  // namespace mf::io
