// The forms published releases store their quantized weights in, beyond minifloat's own W + W_scale_inv F32 / E8M0:
// DeepSeek-V4's release names (X.weight + X.scale, E8M0 or F32, FP4 experts as I8), Qwen's FP8 with BF16 / F16
// weight_scale_inv, and transformers' FineGrainedFP8 with one scale per tensor. Each on a file made by hand,
// dequantized against a table worked out here from the release's published formula (value = code x scale, one
// rounding to f32; checkpoints-in-the-wild.md 1.3, 2.3, 3.3), with the pairs found, the ones that are no pairs, the
// named errors, verify's check of config.json's block against the grids, and convert's re-layout; then the
// miniatures of make-example-checkpoint --like.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "io_test_util.h"
#include "minifloat/checkpoint.h"
#include "minifloat/checkpoint_commands.h"
#include "minifloat/checkpoint_tensors.h"

namespace mf::io {
namespace {

using namespace mf::io::testing;
using Shape = std::vector<std::uint64_t>;

Bytes u8s(std::initializer_list<int> v) {
  Bytes out;
  for (const int b : v) out.push_back(static_cast<std::byte>(b));
  return out;
}

template <class T>
Bytes raw(std::initializer_list<T> v) {
  Bytes out(v.size() * sizeof(T));
  std::memcpy(out.data(), std::data(v), out.size());
  return out;
}

// A few e4m3 codes and their values, typed from the format (bias 7, 3 mantissa bits): what the tables below use.
//   0x38 = 1, 0x40 = 2, 0x44 = 3, 0x3c = 1.5, 0xb0 = -0.5, 0x7e = 448, 0x08 = 2^-6 (least normal),
//   0x01 = 2^-9 (least subnormal), 0x00 = 0, 0x80 = -0.
// DeepSeek's e2m1 table (its inference/convert.py FP4_TABLE; code 8 is -0 in the OCP format, which minifloat follows).
constexpr float kFp4[16] = {0.0f,  0.5f,  1.0f,  1.5f,  2.0f,  3.0f,  4.0f,  6.0f,
                            -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f};

std::vector<QuantizedPair> pairs_of(const fs::path& file) { return find_pairs(read_safetensors(file)); }

// A tensor to write, owning its shape and bytes (a TensorView only points at them).
struct Made {
  std::string name;
  DType dtype;
  Shape shape;
  Bytes data;
};

void write_made(const fs::path& path, const std::vector<Made>& tensors) {
  std::vector<TensorView> views;
  for (const Made& t : tensors) views.push_back({t.name, t.dtype, t.shape, t.data});
  write_safetensors(path, views);
}

const QuantizedPair& pair_named(const std::vector<QuantizedPair>& pairs, const std::string& weight) {
  for (const QuantizedPair& p : pairs) {
    if (p.weight == weight) return p;
  }
  throw std::runtime_error("no pair " + weight);
}

void expect_bits(const std::vector<float>& got, const std::vector<float>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(std::bit_cast<std::uint32_t>(got[i]), std::bit_cast<std::uint32_t>(want[i]))
        << what << " element " << i << ": got " << got[i] << ", want " << want[i];
  }
}

// ---- DeepSeek-V4 as released: X.weight + X.scale ----

TEST(ReleaseForms, DeepSeekV4ReleaseNamesPairAndDequantizeToTheTable) {
  TempDir dir;
  // An FP8 linear [2, 4] (one 128x128 tile, partial) with E8M0 scale 0x7a = 2^-5; an FP4 expert [2, 32] stored as I8
  // [2, 16] with E8M0 scales [2, 1]: 0x80 = 2^1 for row 0, 0x7f = 1 for row 1.
  Bytes expert(32, std::byte{0});
  expert[0] = std::byte{0x21};   // elements 0, 1: low nibble 1 (0.5), high nibble 2 (1)
  expert[15] = std::byte{0xf9};  // elements 30, 31: 9 (-0.5), 15 (-6)
  expert[16] = std::byte{0x87};  // row 1, elements 0, 1: 7 (6), 8 (-0)
  const std::vector<Made> views{
      {"layers.0.attn.wq_a.weight", DType::F8_E4M3, Shape{2, 4}, u8s({0x38, 0x40, 0xb0, 0x7e, 0x08, 0x01, 0x80, 0x3c})},
      {"layers.0.attn.wq_a.scale", DType::F8_E8M0, Shape{1, 1}, u8s({0x7a})},
      {"layers.0.ffn.experts.0.w1.weight", DType::I8, Shape{2, 16}, expert},
      {"layers.0.ffn.experts.0.w1.scale", DType::F8_E8M0, Shape{2, 1}, u8s({0x80, 0x7f})},
      // Not pairs: a float X.scale beside a float weight, a norm's scale, V4's hyper-connection scale.
      {"layers.0.attn.gate.weight", DType::BF16, Shape{1, 2}, Bytes(4)},
      {"layers.0.attn.gate.scale", DType::F32, Shape{1, 1}, raw<float>({1.0f})},
      {"layers.0.attn_norm.scale", DType::F32, Shape{4}, Bytes(16)},
      {"layers.0.hc_attn_scale", DType::F32, Shape{3}, Bytes(12)},
  };
  write_made(dir / "m.safetensors", views);
  const SafetensorsFile f = read_safetensors(dir / "m.safetensors");
  const std::vector<QuantizedPair> pairs = find_pairs(f);
  ASSERT_EQ(pairs.size(), 2u);
  const QuantizedPair& fp8 = pair_named(pairs, "layers.0.attn.wq_a.weight");
  EXPECT_EQ(fp8.form, PairForm::deepseek_v4);
  EXPECT_EQ(fp8.scale, "layers.0.attn.wq_a.scale");
  EXPECT_EQ(fp8.scheme_name, "e4m3-128x128-ue8m0-rceil");
  EXPECT_EQ(to_string(fp8.form), "X.weight + X.scale");
  // W[r, c] = fp8[r, c] x 2^(e - 127) (section 1.3).
  const float s = 0x1p-5f;
  expect_bits(dequantize_pair(f, fp8), {1 * s, 2 * s, -0.5f * s, 448 * s, 0x1p-6f * s, 0x1p-9f * s, -0.0f, 1.5f * s},
              "wq_a");
  const QuantizedPair& fp4 = pair_named(pairs, "layers.0.ffn.experts.0.w1.weight");
  EXPECT_EQ(fp4.form, PairForm::deepseek_v4);
  EXPECT_EQ(fp4.shape, (std::vector<std::int64_t>{2, 32}));
  EXPECT_EQ(fp4.scheme_name, "e2m1-1x32-ue8m0-rceil");
  // value[r, c] = FP4_TABLE[nibble] x 2^(scale[r, c / 32] - 127), the low nibble element 2j (section 1.3).
  std::vector<float> want(64);
  const auto* b = reinterpret_cast<const std::uint8_t*>(expert.data());
  for (int i = 0; i < 64; ++i) {
    const int nibble = i % 2 == 0 ? b[i / 2] & 15 : b[i / 2] >> 4;
    want[i] = kFp4[nibble] * (i < 32 ? 2.0f : 1.0f);
  }
  expect_bits(dequantize_pair(f, fp4), want, "w1");
  EXPECT_EQ(want[33], -0.0f);
  EXPECT_TRUE(std::signbit(want[33]));  // code 8: -0 (DeepSeek's own table has +0: the one documented difference)
}

TEST(ReleaseForms, DeepSeekV4FlashBaseF32ScalesAndV41Tiles) {
  TempDir dir;
  // V4-Flash-Base: X.scale F32; V4.1: 32x32 tiles ([64, 32]: scale [2, 1]); an engram table F8 [2, 64] with 1x32.
  Bytes w(64 * 32, std::byte{0x38});
  w[32 * 32] = std::byte{0x40};  // row 32, the second tile: 2
  const std::vector<Made> views{
      {"base.wq_a.weight", DType::F8_E4M3, Shape{2, 2}, u8s({0x38, 0x44, 0xb0, 0x01})},
      {"base.wq_a.scale", DType::F32, Shape{1, 1}, raw<float>({0.375f})},
      {"v41.wq_a.weight", DType::F8_E4M3, Shape{64, 32}, w},
      {"v41.wq_a.scale", DType::F8_E8M0, Shape{2, 1}, u8s({0x7f, 0x7d})},
      {"layers.1.engram.embed.weight", DType::F8_E4M3, Shape{2, 64}, Bytes(128, std::byte{0x3c})},
      {"layers.1.engram.embed.scale", DType::F8_E8M0, Shape{2, 2}, u8s({0x7f, 0x80, 0x7e, 0x7f})},
  };
  write_made(dir / "m.safetensors", views);
  const SafetensorsFile f = read_safetensors(dir / "m.safetensors");
  const std::vector<QuantizedPair> pairs = find_pairs(f);
  ASSERT_EQ(pairs.size(), 3u);
  const QuantizedPair& base = pair_named(pairs, "base.wq_a.weight");
  EXPECT_EQ(base.scheme_name, "e4m3-128x128-f32-f32");
  expect_bits(dequantize_pair(f, base), {0.375f, 3 * 0.375f, -0.5f * 0.375f, 0x1p-9f * 0.375f}, "Flash-Base");
  const QuantizedPair& v41 = pair_named(pairs, "v41.wq_a.weight");
  EXPECT_EQ(v41.block_rows, 32);
  EXPECT_EQ(v41.scheme_name, "e4m3-32x32-ue8m0-rceil");
  const std::vector<float> y = dequantize_pair(f, v41);
  EXPECT_EQ(y[0], 1.0f);
  EXPECT_EQ(y[31 * 32], 1.0f);       // row 31: the first tile's scale 2^0
  EXPECT_EQ(y[32 * 32], 2 * 0.25f);  // row 32: the second tile's, 2^-2
  EXPECT_EQ(y[63 * 32 + 31], 0.25f);
  const QuantizedPair& engram = pair_named(pairs, "layers.1.engram.embed.weight");
  EXPECT_EQ(engram.block_cols, 32);
  const std::vector<float> e = dequantize_pair(f, engram);
  EXPECT_EQ(e[0], 1.5f);
  EXPECT_EQ(e[32], 3.0f);
  EXPECT_EQ(e[64], 0.75f);
  EXPECT_EQ(e[127], 1.5f);
}

TEST(ReleaseForms, ReleaseScalesThatFitNoGridAreNamed) {
  TempDir dir;
  // [256, 256] in 128x128 blocks is a [2, 2] grid, in 32x32 [8, 8]: a [3, 3] grid fits neither.
  write_made(dir / "a.safetensors",
             std::vector<Made>{{"l.wq_a.weight", DType::F8_E4M3, Shape{256, 256}, Bytes(256 * 256)},
                               {"l.wq_a.scale", DType::F8_E8M0, Shape{3, 3}, Bytes(9)}});
  expect_io_error([&] { pairs_of(dir / "a.safetensors"); }, IoErrc::size_mismatch,
                  "tensor 'l.wq_a.weight': scale l.wq_a.scale [3, 3] fits no block of [256, 256] (tried 128x128, "
                  "32x32, 1x128, 1x32)");
  // A BF16 X.scale beside an FP8 weight: no scale format of the release form.
  write_made(dir / "b.safetensors", std::vector<Made>{{"l.wq_a.weight", DType::F8_E4M3, Shape{4, 4}, Bytes(16)},
                                                      {"l.wq_a.scale", DType::BF16, Shape{1, 1}, Bytes(2)}});
  expect_io_error([&] { pairs_of(dir / "b.safetensors"); }, IoErrc::size_mismatch,
                  "tensor 'l.wq_a.weight': weight F8_E4M3 [4, 4] with scale l.wq_a.scale BF16 [1, 1] is not a 2-D "
                  "weight with a 2-D F8_E8M0 or F32 scale grid");
  // An expert I8 [4, 16] (C = 32) whose scale is [4, 2]: no 1x32 grid.
  write_made(dir / "c.safetensors", std::vector<Made>{{"e.w1.weight", DType::I8, Shape{4, 16}, Bytes(64)},
                                                      {"e.w1.scale", DType::F8_E8M0, Shape{4, 2}, Bytes(8)}});
  expect_io_error([&] { pairs_of(dir / "c.safetensors"); }, IoErrc::size_mismatch,
                  "tensor 'e.w1.weight': scale e.w1.scale [4, 2] fits no block of [4, 32]");
}

// ---- Qwen's FP8: W_scale_inv in BF16 or F16 ----

TEST(ReleaseForms, QwenBf16AndF16ScalesWidenExactly) {
  TempDir dir;
  // [130, 2]: rows 0..127 in tile 0, rows 128, 129 in the partial tile 1. BF16 scales 0x3c23 = 1.2734375 x 2^-7 and
  // 0x3b80 = 2^-8; F16 scales 0x2a66 = 1.599609375 x 2^-5 and 0x1c00 = 2^-8.
  Bytes codes(130 * 2, std::byte{0x38});
  codes[1] = std::byte{0x3c};            // row 0, column 1: 1.5
  codes[128 * 2] = std::byte{0x44};      // row 128: 3
  codes[129 * 2 + 1] = std::byte{0xb0};  // row 129, column 1: -0.5
  const std::vector<Made> views{
      {"q.weight", DType::F8_E4M3, Shape{130, 2}, codes},
      {"q.weight_scale_inv", DType::BF16, Shape{2, 1}, raw<std::uint16_t>({0x3c23, 0x3b80})},
      {"h.weight", DType::F8_E4M3, Shape{130, 2}, codes},
      {"h.weight_scale_inv", DType::F16, Shape{2, 1}, raw<std::uint16_t>({0x2a66, 0x1c00})},
  };
  write_made(dir / "m.safetensors", views);
  const SafetensorsFile f = read_safetensors(dir / "m.safetensors");
  const std::vector<QuantizedPair> pairs = find_pairs(f);
  ASSERT_EQ(pairs.size(), 2u);
  const QuantizedPair& q = pair_named(pairs, "q.weight");
  EXPECT_EQ(q.form, PairForm::deepseek);
  EXPECT_EQ(q.scheme_name, "e4m3-128x128-bf16");
  EXPECT_EQ(pair_named(pairs, "h.weight").scheme_name, "e4m3-128x128-f16");
  // W = float(w_fp8) x float(s) per 128x128 tile (section 3.3): the scales as the exact values typed above.
  const float b0 = 0x1.46p-7f, b1 = 0x1p-8f, h0 = 0x1.998p-5f, h1 = 0x1p-8f;
  const auto table = [&](float s0, float s1) {
    std::vector<float> want(260);
    for (int r = 0; r < 130; ++r) {
      for (int c = 0; c < 2; ++c) want[r * 2 + c] = 1.0f * (r < 128 ? s0 : s1);
    }
    want[1] = 1.5f * s0;
    want[256] = 3 * s1;
    want[259] = -0.5f * s1;
    return want;
  };
  expect_bits(dequantize_pair(f, q), table(b0, b1), "BF16 scales");
  expect_bits(dequantize_pair(f, pair_named(pairs, "h.weight")), table(h0, h1), "F16 scales");
  EXPECT_EQ(1.5f * b0, 0x1.e9p-7f);  // the product is exact: 3 + 8 significant bits
  // read_pair holds the widened values as f32 scales.
  const QuantizedTensor t = read_pair(f, q);
  float s = 0;
  std::memcpy(&s, t.scales.data(), 4);
  EXPECT_EQ(s, b0);
}

// ---- transformers' FineGrainedFP8 with weight_block_size null: one scale per tensor ----

TEST(ReleaseForms, OneScalePerTensorInEveryShape) {
  TempDir dir;
  const Bytes codes = u8s({0x38, 0x40, 0x44, 0xb0, 0x7e, 0x08, 0x01, 0x00, 0x80, 0x3c, 0x38, 0x38, 0x38, 0x38, 0x38});
  const float s = 0.0123f;
  Bytes big(300 * 2, std::byte{0x40});
  const std::vector<Made> views{
      {"a.weight", DType::F8_E4M3, Shape{3, 5}, codes},
      {"a.weight_scale_inv", DType::F32, Shape{}, raw<float>({s})},
      {"a.activation_scale", DType::F32, Shape{}, raw<float>({0.5f})},
      {"b.weight", DType::F8_E4M3, Shape{3, 5}, codes},
      {"b.weight_scale_inv", DType::F32, Shape{1}, raw<float>({s})},
      // [1, 1] over a [300, 2] weight: a 128x128 grid would be [3, 1], so it is one scale for the tensor.
      {"c.weight", DType::F8_E4M3, Shape{300, 2}, big},
      {"c.weight_scale_inv", DType::F32, Shape{1, 1}, raw<float>({s})},
      {"d.weight", DType::F8_E4M3, Shape{3, 5}, codes},
      {"d.weight_scale_inv", DType::BF16, Shape{}, raw<std::uint16_t>({0x3c23})},
  };
  write_made(dir / "m.safetensors", views);
  const SafetensorsFile f = read_safetensors(dir / "m.safetensors");
  const std::vector<QuantizedPair> pairs = find_pairs(f);
  ASSERT_EQ(pairs.size(), 4u);
  // W = w x weight_scale_inv: the e4m3 values typed above, times s, one rounding to f32.
  const std::vector<float> w{1, 2, 3, -0.5f, 448, 0x1p-6f, 0x1p-9f, 0, -0.0f, 1.5f, 1, 1, 1, 1, 1};
  std::vector<float> want;
  for (const float v : w) want.push_back(v * s);
  for (const char* name : {"a.weight", "b.weight"}) {
    const QuantizedPair& p = pair_named(pairs, name);
    EXPECT_EQ(p.form, PairForm::deepseek);
    EXPECT_EQ(p.scheme_name, "e4m3-tensor-f32");
    expect_bits(dequantize_pair(f, p), want, name);
  }
  EXPECT_EQ(pair_named(pairs, "a.weight").extras, std::vector<std::string>{"a.activation_scale"});
  const std::vector<float> c = dequantize_pair(f, pair_named(pairs, "c.weight"));
  EXPECT_EQ(c.size(), 600u);
  EXPECT_EQ(c[599], 2 * s);
  const QuantizedPair& d = pair_named(pairs, "d.weight");
  EXPECT_EQ(d.scheme_name, "e4m3-tensor-bf16");
  EXPECT_EQ(dequantize_pair(f, d)[9], 0x1.e9p-7f);
}

// ---- the miniatures, and verify's block check ----

class ReleaseExample : public ::testing::Test {
 protected:
  TempDir dir_;
  fs::path make(ReleaseLike like) {
    const fs::path p = dir_ / std::string(to_string(like));
    write_release_example(p, like);
    return p;
  }
};

TEST_F(ReleaseExample, EachMiniatureHoldsItsReleasesForm) {
  struct Case {
    ReleaseLike like;
    std::string weight, scale;
    DType weight_dtype, scale_dtype;
    Shape scale_shape;
    std::string scheme, family;
  };
  const std::vector<Case> cases{
      {ReleaseLike::deepseek_v4_release,
       "layers.0.attn.wq_b.weight",
       "layers.0.attn.wq_b.scale",
       DType::F8_E4M3,
       DType::F8_E8M0,
       {2, 1},
       "e4m3-128x128-ue8m0-rceil",
       "DeepSeek-V4 as released (X.weight + X.scale)"},
      {ReleaseLike::deepseek_v4_release,
       "layers.1.ffn.experts.3.w2.weight",
       "layers.1.ffn.experts.3.w2.scale",
       DType::I8,
       DType::F8_E8M0,
       {128, 4},
       "e2m1-1x32-ue8m0-rceil",
       "DeepSeek-V4 as released"},
      {ReleaseLike::deepseek_v4_1,
       "layers.0.attn.wq_b.weight",
       "layers.0.attn.wq_b.scale",
       DType::F8_E4M3,
       DType::F8_E8M0,
       {8, 2},
       "e4m3-32x32-ue8m0-rceil",
       "DeepSeek-V4.1 as released (X.weight + X.scale)"},
      {ReleaseLike::deepseek_v4_1,
       "layers.1.engram.embed.weight",
       "layers.1.engram.embed.scale",
       DType::F8_E4M3,
       DType::F8_E8M0,
       {64, 8},
       "e4m3-1x32-ue8m0-rceil",
       "DeepSeek-V4.1"},
      {ReleaseLike::deepseek_v3,
       "model.layers.0.self_attn.kv_a_proj_with_mqa.weight",
       "model.layers.0.self_attn.kv_a_proj_with_mqa.weight_scale_inv",
       DType::F8_E4M3,
       DType::F32,
       {2, 1},
       "e4m3-128x128-f32-f32",
       "DeepSeek-V3"},
      {ReleaseLike::deepseek_v3,
       "model.layers.2.eh_proj.weight",
       "model.layers.2.eh_proj.weight_scale_inv",
       DType::F8_E4M3,
       DType::F32,
       {1, 2},
       "e4m3-128x128-f32-f32",
       "DeepSeek-V3"},
      {ReleaseLike::qwen_fp8,
       "model.layers.0.self_attn.k_proj.weight",
       "model.layers.0.self_attn.k_proj.weight_scale_inv",
       DType::F8_E4M3,
       DType::BF16,
       {1, 1},
       "e4m3-128x128-bf16",
       "Qwen FP8 release"},
      {ReleaseLike::fp8_per_tensor,
       "model.layers.1.mlp.down_proj.weight",
       "model.layers.1.mlp.down_proj.weight_scale_inv",
       DType::F8_E4M3,
       DType::F32,
       {},
       "e4m3-tensor-f32",
       "transformers FineGrainedFP8 per tensor"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(to_string(c.like)) + " " + c.weight);
    const fs::path p = dir_ / std::string(to_string(c.like));
    if (!fs::exists(p)) write_release_example(p, c.like);
    const Checkpoint ck = open_checkpoint(p);
    const std::string shard = ck.index.weight_map.at(c.weight);
    EXPECT_EQ(ck.index.weight_map.at(c.scale), shard);  // a weight's scale in its shard
    const SafetensorsFile f = read_safetensors(p / shard);
    EXPECT_EQ(f.find(c.weight)->dtype, c.weight_dtype);
    EXPECT_EQ(f.find(c.scale)->dtype, c.scale_dtype);
    EXPECT_EQ(f.find(c.scale)->shape, c.scale_shape);
    EXPECT_EQ(pair_named(find_pairs(f), c.weight).scheme_name, c.scheme);
    const InspectReport r = inspect_checkpoint(p, false, ConfigRules::detect, 1);
    EXPECT_NE(r.family.find(c.family), std::string::npos) << r.family;
    EXPECT_EQ(r.not_understood, "");
    EXPECT_NO_THROW(verify_checkpoint(p));
  }
}

TEST_F(ReleaseExample, V41ConfigIsReadFromTextConfigAndHeldToTheGrid) {
  const fs::path p = make(ReleaseLike::deepseek_v4_1);
  const HfConfig c = read_hf_config(p / "config.json");
  EXPECT_EQ(c.rules, ConfigRules::deepinfer);
  EXPECT_TRUE(c.quantization_in_text_config);
  ASSERT_TRUE(c.quantization);
  EXPECT_EQ(c.quantization->block_rows, 32);
  EXPECT_EQ(c.dtype, "bfloat16");
  EXPECT_TRUE(c.flags.mxfp4);
  // The same checkpoint with weight_block_size [128, 128] (and fmt, DeepSeek's V4 form): the 32x32 grids disagree.
  std::string text = read_file(p / "config.json");
  const std::string from = "\"weight_block_size\": [\n        32,\n        32\n      ]";
  ASSERT_NE(text.find(from), std::string::npos) << text;
  text.replace(text.find(from), from.size(), "\"weight_block_size\": [128, 128], \"fmt\": \"e4m3\"");
  write_file(p / "config.json", text);
  try {
    verify_checkpoint(p);
    ADD_FAILURE() << "verify accepted 32x32 tiles under weight_block_size [128, 128]";
  } catch (const VerifyError& e) {
    EXPECT_EQ(e.tensor, "layers.0.attn.wq_a.weight");
    EXPECT_EQ(std::string(e.what()),
              "config.json (deepseek rules, read from text_config) gives weight_block_size [128, 128], but tensor "
              "'layers.0.attn.wq_a.weight' [64, 128] has scale 'layers.0.attn.wq_a.scale' [2, 4]: the grid of 32x32 "
              "blocks, not the [1, 1] of 128x128 blocks");
  }
}

TEST_F(ReleaseExample, V4ReleaseUnderA32x32ConfigIsRefusedByName) {
  const fs::path p = make(ReleaseLike::deepseek_v4_release);
  std::string text = read_file(p / "config.json");
  const std::string from = "\"weight_block_size\": [\n      128,\n      128\n    ]";
  ASSERT_NE(text.find(from), std::string::npos) << text;
  text.replace(text.find(from), from.size(), "\"weight_block_size\": [32, 32], \"expert_dtype\": \"fp4\"");
  write_file(p / "config.json", text);
  try {
    verify_checkpoint(p);
    ADD_FAILURE() << "verify accepted 128x128 tiles under weight_block_size [32, 32]";
  } catch (const VerifyError& e) {
    EXPECT_EQ(e.tensor, "layers.0.attn.wq_a.weight");
    EXPECT_NE(std::string(e.what()).find("gives weight_block_size [32, 32], but tensor 'layers.0.attn.wq_a.weight' "
                                         "[64, 128] has scale 'layers.0.attn.wq_a.scale' [1, 1]: the grid of 128x128 "
                                         "blocks, not the [2, 4] of 32x32 blocks"),
              std::string::npos)
        << e.what();
  }
}

TEST_F(ReleaseExample, PerTensorPairsUnderABlockConfigAreNamed) {
  const fs::path p = make(ReleaseLike::fp8_per_tensor);
  std::string text = read_file(p / "config.json");
  const std::string from = "\"weight_block_size\": null";
  ASSERT_NE(text.find(from), std::string::npos) << text;
  text.replace(text.find(from), from.size(), "\"weight_block_size\": [128, 128]");
  write_file(p / "config.json", text);
  try {
    verify_checkpoint(p);
    ADD_FAILURE() << "verify accepted per-tensor scales under weight_block_size [128, 128]";
  } catch (const VerifyError& e) {
    EXPECT_NE(std::string(e.what()).find("has scale 'model.layers.0.self_attn.q_proj.weight_scale_inv' []: one scale "
                                         "for the tensor, not the [2, 1] of 128x128 blocks"),
              std::string::npos)
        << e.what();
  }
}

// convert re-lays out what it can: Qwen's BF16 scales into fp8-block's F32 ones (widened, codes as they are), and
// DeepSeek-V4's released pairs into minifloat's W + W_scale_inv names for the deepseek-v4 recipe (bytes as they are).
TEST_F(ReleaseExample, ConvertReLaysOutTheSameScheme) {
  const fs::path qwen = make(ReleaseLike::qwen_fp8);
  ConvertOptions o;
  o.threads = 1;
  const ConvertReport r = convert_checkpoint(qwen, dir_ / "qwen-out", recipe_named("fp8-block"), o);
  int relaid = 0;
  for (const TensorReport& t : r.tensors) {
    if (!t.target.ends_with("re-laid out")) continue;
    ++relaid;
    EXPECT_EQ(t.rmse, 0) << t.name;
  }
  EXPECT_EQ(relaid, 32);
  const std::string w = "model.layers.1.mlp.experts.2.down_proj.weight";
  const Checkpoint in = open_checkpoint(qwen), out = open_checkpoint(dir_ / "qwen-out");
  const SafetensorsFile fi = read_safetensors(qwen / in.index.weight_map.at(w));
  const SafetensorsFile fo = read_safetensors(dir_ / "qwen-out" / out.index.weight_map.at(w));
  EXPECT_TRUE(std::ranges::equal(fi.bytes(*fi.find(w)), fo.bytes(*fo.find(w))));
  const SafetensorsTensor& s = *fo.find(w + "_scale_inv");
  EXPECT_EQ(s.dtype, DType::F32);
  const std::span<const std::byte> bf = fi.bytes(*fi.find(w + "_scale_inv")), f32s = fo.bytes(s);
  for (std::size_t i = 0; i < bf.size() / 2; ++i) {
    std::uint16_t h;
    std::uint32_t u;
    std::memcpy(&h, bf.data() + 2 * i, 2);
    std::memcpy(&u, f32s.data() + 4 * i, 4);
    EXPECT_EQ(u, static_cast<std::uint32_t>(h) << 16) << i;  // bf16 is the top half of an f32
  }
  EXPECT_NO_THROW(verify_checkpoint(dir_ / "qwen-out"));

  const fs::path v4 = make(ReleaseLike::deepseek_v4_release);
  convert_checkpoint(v4, dir_ / "v4-out", recipe_named("deepseek-v4"), o);
  const Checkpoint o4 = open_checkpoint(dir_ / "v4-out"), i4 = open_checkpoint(v4);
  for (const std::string name : {"layers.0.attn.wkv.weight", "layers.1.ffn.experts.0.w3.weight"}) {
    const std::string module = name.substr(0, name.size() - 7);
    const SafetensorsFile a = read_safetensors(v4 / i4.index.weight_map.at(name));
    const SafetensorsFile b = read_safetensors(dir_ / "v4-out" / o4.index.weight_map.at(name));
    EXPECT_TRUE(std::ranges::equal(a.bytes(*a.find(name)), b.bytes(*b.find(name)))) << name;
    ASSERT_NE(b.find(name + "_scale_inv"), nullptr) << name;
    EXPECT_EQ(b.find(module + ".scale"), nullptr) << name;
    EXPECT_TRUE(std::ranges::equal(a.bytes(*a.find(module + ".scale")), b.bytes(*b.find(name + "_scale_inv"))));
  }
  EXPECT_NO_THROW(verify_checkpoint(dir_ / "v4-out"));
}

// --format deepseek on DeepSeek's bare names writes the release form (X.weight + X.scale); what it cannot hold is
// refused by name before anything is written: FP4 outside the routed experts (DeepSeek's model.py and vLLM read every
// other .scale as an FP8 block scale, checkpoints-in-the-wild.md 1.4) and a quantized tensor that is no module weight.
TEST_F(ReleaseExample, DeepSeekReleaseFormRefusesWhatItCannotHold) {
  const fs::path v4 = make(ReleaseLike::deepseek_v4_release);
  ConvertOptions o;
  o.threads = 1;
  o.format = WriteFormat::deepseek;
  convert_checkpoint(v4, dir_ / "ok", recipe_named("deepseek-v4"), o);
  const Checkpoint out = open_checkpoint(dir_ / "ok");
  const std::string w = "layers.1.ffn.experts.0.w3.weight";
  const SafetensorsFile f = read_safetensors(dir_ / "ok" / out.index.weight_map.at(w));
  ASSERT_NE(f.find("layers.1.ffn.experts.0.w3.scale"), nullptr);
  EXPECT_EQ(f.find(w)->dtype, DType::I8);
  EXPECT_EQ(f.find(w + "_scale_inv"), nullptr);

  Recipe fp4_attention = recipe_named("deepseek-v4");
  fp4_attention.rules.insert(fp4_attention.rules.begin(), {"*attn.wq_a.weight", "e2m1-1x32-ue8m0-rceil"});
  try {
    convert_checkpoint(v4, dir_ / "fp4-attn", fp4_attention, o);
    FAIL() << "FP4 outside the experts was written";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("layers.0.attn.wq_a.weight"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("routed experts only"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(dir_ / "fp4-attn"));

  Recipe mixers = recipe_named("deepseek-v4");
  mixers.rules.insert(mixers.rules.begin(), {"*hc_attn_fn", "fp8-128x128"});
  try {
    convert_checkpoint(v4, dir_ / "mixers", mixers, o);
    FAIL() << "a mixer that is no module weight was written";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("hc_attn_fn"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("module weights only"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(dir_ / "mixers"));
}

}  // namespace
}  // namespace mf::io
