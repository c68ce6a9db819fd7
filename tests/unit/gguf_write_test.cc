// GGUF writing: a small file's bytes against a layout worked out by hand, ggml's encodings on hand-worked blocks,
// every error of the writer and of convert --format gguf (nothing left behind), and files read back by the reader.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <span>
#include <tuple>
#include <string>
#include <vector>

#include "io_test_util.h"
#include "minifloat/gguf.h"
#include "minifloat/gguf_model.h"
#include "minifloat/safetensors.h"

namespace mf::io {
namespace {

using namespace mf::io::testing;
using V = GgufValue;
using Meta = std::vector<std::pair<std::string, GgufValue>>;
using Dims = std::vector<std::uint64_t>;

std::string gs(std::string_view s) { return str(le(s.size(), 8), s); }
std::span<const std::byte> as_span(const std::string& s) { return std::as_bytes(std::span(s)); }
std::string bytes_text(const std::vector<std::byte>& b) { return to_string(b); }

template <class F>
IoErrc io_error_of(F&& f) {
  try {
    f();
  } catch (const IoError& e) {
    return e.code;
  }
  ADD_FAILURE() << "no IoError";
  return IoErrc::open_failed;
}

// ---- the file's bytes ----

TEST(GgufWriter, SmallFileMatchesHandLaidBytes) {
  TempDir dir;
  const Meta meta{{"general.architecture", V::of_string("llama")},
                  {"a.u32", V::of_u32(7)},
                  {"a.f32", V::of_f32(1.5f)},
                  {"a.bool", V::of_bool(true)},
                  {"a.ints", V::of_array(GgufValueType::INT32, {V::of_i32(1), V::of_i32(-2)})},
                  {"a.strs", V::of_strings({"x", "yz"})}};
  GgufWriter w(dir / "t.gguf", meta, {{"one", GgufType::F32, {2}}, {"two", GgufType::Q8_0, {32, 1}}});
  const std::string one = str(le(0x3F800000, 4), le(0xC0000000, 4));  // 1.0f, -2.0f
  const std::string two = str(le(0x3C00, 2), std::string(32, '\x01'));
  w.write_tensor(1, as_span(two));  // any order
  w.write_tensor(0, as_span(one));
  w.commit();

  std::string want = str("GGUF", le(3, 4), le(2, 8), le(6, 8));
  want += str(gs("general.architecture"), le(8, 4), gs("llama"));
  want += str(gs("a.u32"), le(4, 4), le(7, 4));
  want += str(gs("a.f32"), le(6, 4), le(0x3FC00000, 4));
  want += str(gs("a.bool"), le(7, 4), le(1, 1));
  want += str(gs("a.ints"), le(9, 4), le(5, 4), le(2, 8), le(1, 4), le(0xFFFFFFFE, 4));
  want += str(gs("a.strs"), le(9, 4), le(8, 4), le(2, 8), gs("x"), gs("yz"));
  want += str(gs("one"), le(1, 4), le(2, 8), le(0, 4), le(0, 8));              // F32 [2] at 0
  want += str(gs("two"), le(2, 4), le(32, 8), le(1, 8), le(8, 4), le(32, 8));  // Q8_0 [32, 1] at 32 (8 bytes, padded)
  want.append((32 - want.size() % 32) % 32, '\0');
  want += one + std::string(24, '\0') + two + std::string(30, '\0');  // each tensor padded to 32, the last too
  const std::string got = read_file(dir / "t.gguf");
  EXPECT_EQ(got.size(), want.size());
  EXPECT_TRUE(got == want);
  EXPECT_EQ(w.bytes_total(), want.size());
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"t.gguf"});  // no temporary file left

  const GgufFile f = read_gguf(dir / "t.gguf");
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(*f.find_metadata("a.f32")->as_float(), 1.5);
  EXPECT_EQ(f.find_metadata("a.ints")->element(1).as_int(), -2);
  EXPECT_EQ(f.find_metadata("a.strs")->element(1).as_string(), "yz");
  EXPECT_EQ(f.find("two")->offset, 32u);
  EXPECT_EQ(dequantize_gguf(f, *f.find("two")), std::vector<float>(32, 1.0f));
}

TEST(GgufWriter, OtherAlignmentIsWrittenAsGeneralAlignment) {
  TempDir dir;
  GgufWriter w(dir / "t.gguf", {}, {{"a", GgufType::F32, {1}}, {"b", GgufType::F32, {1}}}, 64);
  const std::string x = le(0, 4);
  w.write_tensor(0, as_span(x));
  w.write_tensor(1, as_span(x));
  w.commit();
  const GgufFile f = read_gguf(dir / "t.gguf");
  EXPECT_EQ(f.alignment(), 64u);
  EXPECT_EQ(f.data_offset() % 64, 0u);
  EXPECT_EQ(f.find("b")->offset, 64u);
  EXPECT_EQ(std::filesystem::file_size(dir / "t.gguf"), f.data_offset() + 128);
}

// ---- errors: each refused before a file exists, or leaving none behind ----

TEST(GgufWriter, RefusesWhatReadersRefuse) {
  TempDir dir;
  const auto make = [&](Meta m, std::vector<GgufTensorSpec> t, std::uint64_t align = 32) {
    return io_error_of([&] { GgufWriter w(dir / "t.gguf", std::move(m), std::move(t), align); });
  };
  EXPECT_EQ(make({{"", V::of_u32(1)}}, {}), IoErrc::gguf_empty_key);
  EXPECT_EQ(make({{"k", V::of_u32(1)}, {"k", V::of_u32(2)}}, {}), IoErrc::gguf_duplicate_key);
  EXPECT_EQ(make({{"general.alignment", V::of_u32(64)}}, {}, 64), IoErrc::gguf_duplicate_key);
  EXPECT_EQ(make({}, {}, 48), IoErrc::gguf_bad_alignment);
  EXPECT_EQ(make({}, {}, 0), IoErrc::gguf_bad_alignment);
  EXPECT_EQ(make({}, {{"", GgufType::F32, {1}}}), IoErrc::invalid_name);
  EXPECT_EQ(make({}, {{std::string(64, 'n'), GgufType::F32, {1}}}), IoErrc::invalid_name);
  EXPECT_EQ(make({}, {{"a", GgufType::F32, {1}}, {"a", GgufType::F32, {1}}}), IoErrc::gguf_duplicate_tensor);
  EXPECT_EQ(make({}, {{"a", GgufType::F32, {}}}), IoErrc::gguf_bad_dims);
  EXPECT_EQ(make({}, {{"a", GgufType::F32, {1, 1, 1, 1, 1}}}), IoErrc::gguf_bad_dims);
  EXPECT_EQ(make({}, {{"a", GgufType::F32, {2, 0}}}), IoErrc::gguf_bad_dims);
  EXPECT_EQ(make({}, {{"a", GgufType::F32, {std::uint64_t{1} << 63}}}), IoErrc::gguf_bad_dims);
  EXPECT_EQ(make({}, {{"a", GgufType::F32, {1u << 31, 1u << 31, 4}}}), IoErrc::size_overflow);
  EXPECT_EQ(make({}, {{"a", static_cast<GgufType>(4), {32}}}), IoErrc::gguf_unknown_type);
  EXPECT_EQ(make({}, {{"a", GgufType::Q8_0, {16}}}), IoErrc::gguf_bad_row);
  { GgufWriter dropped(dir / "t.gguf", {}, {{"a", GgufType::F32, {1}}}); }
  EXPECT_TRUE(dir.entries().empty());  // a writer dropped without commit() leaves nothing
  EXPECT_EQ(io_error_of([&] { GgufWriter w(dir / "missing" / "t.gguf", {}, {}); }), IoErrc::write_failed);
}

TEST(GgufWriter, RefusesWrongWritesAndLeavesNoFile) {
  TempDir dir;
  {
    GgufWriter w(dir / "t.gguf", {}, {{"a", GgufType::F32, {2}}, {"b", GgufType::F32, {1}}});
    const std::string four = le(0, 4), eight = le(0, 8);
    EXPECT_EQ(io_error_of([&] { w.write_tensor(0, as_span(four)); }), IoErrc::size_mismatch);
    EXPECT_THROW(w.write_tensor(2, as_span(four)), std::invalid_argument);
    w.write_tensor(0, as_span(eight));
    EXPECT_THROW(w.write_tensor(0, as_span(eight)), std::invalid_argument);
    try {
      w.commit();
      ADD_FAILURE() << "commit with tensor 'b' missing";
    } catch (const IoError& e) {
      EXPECT_EQ(e.code, IoErrc::size_mismatch);
      EXPECT_NE(std::string(e.what()).find("tensor 'b': not written"), std::string::npos) << e.what();
    }
  }
  EXPECT_TRUE(dir.entries().empty());
}

TEST(GgufValue, ArraysHoldOneScalarType) {
  EXPECT_THROW(V::of_array(GgufValueType::INT32, {V::of_u32(1)}), std::invalid_argument);
  EXPECT_THROW(V::of_array(GgufValueType::STRING, {}), std::invalid_argument);
  EXPECT_EQ(V::of_array(GgufValueType::UINT32, {}).encoded(), str(le(4, 4), le(0, 8)));
  EXPECT_EQ(V::of_f32(-0.0f).encoded(), le(0x80000000, 4));
}

// ---- ggml's encodings, worked by hand ----

TEST(GgufEncode, Q8_0BlockByHand) {
  std::vector<float> x(32, 0.0f);
  // amax 127: d = 1, id = 1; rounding half away from zero, as ggml's roundf.
  x[0] = 127.0f, x[1] = -127.0f, x[2] = 2.5f, x[3] = -2.5f, x[4] = 1.49f, x[5] = 0.5f, x[6] = -0.5f;
  const std::vector<std::byte> b = gguf_encode(GgufType::Q8_0, x);
  std::string want = le(0x3C00, 2);  // f16 1.0
  for (const int q : {127, -127, 3, -3, 1, 1, -1}) want += static_cast<char>(static_cast<std::int8_t>(q));
  want.append(25, '\0');
  EXPECT_TRUE(bytes_text(b) == want);
  // amax 254: d = 2 (f16 0x4000), q = x / 2.
  std::vector<float> y(32, 3.0f);
  y[0] = -254.0f;
  const std::vector<std::byte> c = gguf_encode(GgufType::Q8_0, y);
  EXPECT_EQ(c[0], std::byte{0x00});
  EXPECT_EQ(c[1], std::byte{0x40});
  EXPECT_EQ(static_cast<std::int8_t>(c[2]), -127);
  EXPECT_EQ(static_cast<std::int8_t>(c[3]), 2);  // 1.5 rounds away from zero
  // All zero: d = 0, q = 0.
  EXPECT_TRUE(bytes_text(gguf_encode(GgufType::Q8_0, std::vector<float>(32, 0.0f))) == std::string(34, '\0'));
}

TEST(GgufEncode, HalfFloatsRoundToNearestEven) {
  const float tie_down = std::bit_cast<float>(0x3F808000u), tie_up = std::bit_cast<float>(0x3F818000u);
  EXPECT_TRUE(bytes_text(gguf_encode(GgufType::BF16, std::vector<float>{1.0f, tie_down, tie_up})) ==
              str(le(0x3F80, 2), le(0x3F80, 2), le(0x3F82, 2)));
  EXPECT_TRUE(bytes_text(gguf_encode(GgufType::F16, std::vector<float>{1.0f, 65504.0f, -2.0f})) ==
              str(le(0x3C00, 2), le(0x7BFF, 2), le(0xC000, 2)));
  const std::vector<float> f32{1.0f, std::numeric_limits<float>::quiet_NaN()};
  EXPECT_EQ(gguf_encode(GgufType::F32, f32).size(), 8u);  // F32 as given, NaN included
}

TEST(GgufEncode, RefusesWhatTheTypeCannotHold) {
  EXPECT_THROW(gguf_encode(GgufType::F16, std::vector<float>{65520.0f}), std::invalid_argument);  // rounds to Inf
  EXPECT_THROW(gguf_encode(GgufType::BF16, std::vector<float>{std::numeric_limits<float>::infinity()}),
               std::invalid_argument);
  std::vector<float> nan(32, 1.0f);
  nan[7] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_THROW(gguf_encode(GgufType::Q8_0, nan), std::invalid_argument);
  EXPECT_THROW(gguf_encode(GgufType::Q8_0, std::vector<float>(16, 1.0f)), std::invalid_argument);   // half a block
  EXPECT_THROW(gguf_encode(GgufType::MXFP4, std::vector<float>(32, 1.0f)), std::invalid_argument);  // not f32 -> it
  EXPECT_THROW(gguf_encode(GgufType::Q4_K, std::vector<float>(256, 1.0f)), std::invalid_argument);
  std::vector<float> big(32, 1.0f);
  big[0] = 1e10f;  // d = amax / 127 overflows Q8_0's f16 scale
  EXPECT_THROW(gguf_encode(GgufType::Q8_0, big), std::invalid_argument);
}

TEST(GgufDecode, RefusesPartialBlocksAndUndecodedTypes) {
  EXPECT_THROW(gguf_decode(GgufType::Q8_0, std::vector<std::byte>(33)), std::invalid_argument);
  EXPECT_THROW(gguf_decode(GgufType::Q4_K, std::vector<std::byte>(144)), std::invalid_argument);
  EXPECT_EQ(gguf_decode(GgufType::MXFP4, std::vector<std::byte>(17)), std::vector<float>(32, 0.0f));
}

// ---- convert --format gguf: what it refuses, before any file is made ----

// A tiny Llama checkpoint: config.json (edited by `change`) and BF16 tensors of the shapes named.
void tiny_llama(const fs::path& dir, const std::string& config,
                const std::vector<std::pair<std::string, Dims>>& tensors, DType dtype = DType::BF16) {
  fs::create_directories(dir);
  write_file(dir / "config.json", config);
  std::vector<SafetensorsWriter::Spec> specs;
  for (const auto& [name, shape] : tensors) specs.push_back({name, dtype, shape});
  SafetensorsWriter w(dir / "model.safetensors", specs);
  for (std::size_t k = 0; k < specs.size(); ++k) {
    std::uint64_t n = 1;
    for (const std::uint64_t d : specs[k].shape) n *= d;
    const std::vector<std::byte> zeros(n * (dtype == DType::F32 ? 4 : dtype == DType::F8_E4M3 ? 1 : 2));
    w.write_tensor(k, zeros);
  }
  w.commit();
}

const char* kLlamaConfig = R"({"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 64,
  "intermediate_size": 96, "num_hidden_layers": 1, "num_attention_heads": 2, "num_key_value_heads": 1,
  "max_position_embeddings": 128, "vocab_size": 32, "rms_norm_eps": 1e-5, "rope_theta": 10000.0})";

std::vector<std::pair<std::string, Dims>> llama_tensors() {
  return {{"model.embed_tokens.weight", {32, 64}},
          {"model.norm.weight", {64}},
          {"model.layers.0.self_attn.q_proj.weight", {64, 64}},
          {"model.layers.0.self_attn.k_proj.weight", {32, 64}},
          {"model.layers.0.input_layernorm.weight", {64}}};
}

std::string replaced(std::string s, std::string_view from, std::string_view to) {
  return s.replace(s.find(from), from.size(), to);
}

// The error convert_to_gguf raises for a checkpoint, with no output file made.
std::string convert_error(const std::string& config, const std::vector<std::pair<std::string, Dims>>& tensors,
                          const std::string& recipe = "q8_0", std::string_view out_name = "out.gguf",
                          DType dtype = DType::BF16) {
  TempDir dir;
  tiny_llama(dir / "in", config, tensors, dtype);
  try {
    convert_to_gguf(dir / "in", dir / out_name, gguf_recipe(recipe));
  } catch (const std::exception& e) {
    EXPECT_FALSE(fs::exists(dir / out_name));
    EXPECT_EQ(dir.entries(), std::vector<std::string>{"in"});
    return e.what();
  }
  ADD_FAILURE() << "converted";
  return "";
}

TEST(ConvertToGguf, WritesTheTinyLlama) {
  TempDir dir;
  tiny_llama(dir / "in", kLlamaConfig, llama_tensors());
  const ConvertReport r =
      convert_to_gguf(dir / "in", dir / "out.gguf", gguf_recipe("q8_0"), {}, GgufTokenizerMode::none);
  const GgufFile f = read_gguf(dir / "out.gguf");
  EXPECT_EQ(f.find("blk.0.attn_q.weight")->type, static_cast<std::uint32_t>(GgufType::Q8_0));
  EXPECT_EQ(f.find("blk.0.attn_k.weight")->dims, (Dims{64, 32}));
  EXPECT_EQ(f.find("output_norm.weight")->type, static_cast<std::uint32_t>(GgufType::F32));
  EXPECT_EQ(f.find_metadata("general.file_type")->as_uint(), 7u);
  EXPECT_EQ(f.find_metadata("llama.rope.dimension_count")->as_uint(), 32u);
  EXPECT_EQ(f.find_metadata("llama.attention.head_count_kv")->as_uint(), 1u);
  EXPECT_EQ(r.tensors.size(), 3u);  // the three Q8_0 weights
  EXPECT_EQ(r.output_bytes, fs::file_size(dir / "out.gguf"));
}

// Q and K already MXFP4 in DeepSeek-V4's form (W as I8 [R, C/2], two e2m1 codes a byte, W_scale_inv F8_E8M0 [R, C/32])
// converted by the mxfp4 recipe: re-laid out, not requantized. Each ggml block is worked out here from the input
// bytes: llama.cpp's row (row 2i + j of a head takes row j x head_dim / 2 + i), the block's scale byte, then byte j
// holding element j (low nibble) and element j + 16 (high nibble), element e being nibble e % 2 of input byte e / 2.
TEST(ConvertToGguf, AnMxfp4PairIsReLaidOutIntoGgmlBlocks) {
  TempDir dir;
  fs::create_directories(dir / "in");
  write_file(dir / "in" / "config.json", kLlamaConfig);
  const auto codes = [](std::uint64_t rows) {
    std::vector<std::byte> b(rows * 32);
    for (std::size_t i = 0; i < b.size(); ++i) b[i] = static_cast<std::byte>((i * 37 + i / 32) & 0xFF);
    return b;
  };
  const auto scales = [](std::uint64_t rows) {
    std::vector<std::byte> b(rows * 2);
    for (std::size_t i = 0; i < b.size(); ++i) b[i] = static_cast<std::byte>(100 + i % 50);
    return b;
  };
  const std::string q = "model.layers.0.self_attn.q_proj.weight", k = "model.layers.0.self_attn.k_proj.weight";
  const std::vector<SafetensorsWriter::Spec> specs{{"model.embed_tokens.weight", DType::BF16, {32, 64}},
                                                   {"model.norm.weight", DType::BF16, {64}},
                                                   {q, DType::I8, {64, 32}},
                                                   {q + "_scale_inv", DType::F8_E8M0, {64, 2}},
                                                   {k, DType::I8, {32, 32}},
                                                   {k + "_scale_inv", DType::F8_E8M0, {32, 2}},
                                                   {"model.layers.0.input_layernorm.weight", DType::BF16, {64}}};
  const std::vector<std::vector<std::byte>> data{
      std::vector<std::byte>(32 * 64 * 2), std::vector<std::byte>(128), codes(64), scales(64), codes(32), scales(32),
      std::vector<std::byte>(128)};
  SafetensorsWriter w(dir / "in" / "model.safetensors", specs);
  for (std::size_t i = 0; i < specs.size(); ++i) w.write_tensor(i, data[i]);
  w.commit();
  const ConvertReport r =
      convert_to_gguf(dir / "in", dir / "out.gguf", gguf_recipe("mxfp4"), {}, GgufTokenizerMode::none);
  ASSERT_EQ(r.tensors.size(), 2u);
  EXPECT_EQ(r.tensors[1].name, q);  // by name, as llama.cpp's converter reads a shard: k_proj first
  EXPECT_EQ(r.tensors[1].target, "mxfp4 re-laid out");
  EXPECT_EQ(r.tensors[1].max_abs, 0.0);
  const GgufFile f = read_gguf(dir / "out.gguf");
  for (const auto& [name, rows, heads, in] :
       {std::tuple{"blk.0.attn_q.weight", 64u, 2u, 2u}, std::tuple{"blk.0.attn_k.weight", 32u, 1u, 4u}}) {
    const GgufTensor* t = f.find(name);
    ASSERT_NE(t, nullptr) << name;
    EXPECT_EQ(t->type, static_cast<std::uint32_t>(GgufType::MXFP4));
    const std::vector<std::byte>& c = data[in];
    const std::vector<std::byte>& sc = data[in + 1];
    std::vector<std::byte> want;
    const std::uint32_t head = rows / heads, half = head / 2;
    for (std::uint32_t row = 0; row < rows; ++row) {
      const std::uint32_t h = row / head, i = (row % head) / 2, j = row % 2;
      const std::uint32_t from = h * head + j * half + i;
      for (std::uint32_t b = 0; b < 2; ++b) {
        want.push_back(sc[from * 2 + b]);
        const auto element = [&](std::uint32_t e) {
          const auto byte = std::to_integer<unsigned>(c[from * 32 + b * 16 + e / 2]);
          return e % 2 == 0 ? byte & 0xF : byte >> 4;
        };
        for (std::uint32_t e = 0; e < 16; ++e)
          want.push_back(static_cast<std::byte>(element(e) | element(e + 16) << 4));
      }
    }
    const std::span<const std::byte> got = f.bytes(*t);
    EXPECT_TRUE(std::equal(got.begin(), got.end(), want.begin(), want.end())) << name;
  }
}

TEST(ConvertToGguf, RefusesWhatItCannotWrite) {
  const std::string cfg = kLlamaConfig;
  const auto has = [](const std::string& what, std::string_view part) {
    return what.find(part) != std::string::npos ? ::testing::AssertionSuccess() : ::testing::AssertionFailure() << what;
  };
  EXPECT_TRUE(
      has(convert_error(replaced(replaced(cfg, "LlamaForCausalLM", "MistralForCausalLM"), "\"llama\"", "\"mistral\""),
                        llama_tensors()),
          "architecture \"MistralForCausalLM\": --format gguf writes Llama (architectures "
          "LlamaForCausalLM or model_type llama), gpt-oss"));
  EXPECT_TRUE(has(convert_error(replaced(cfg, "\"vocab_size\": 32", "\"vocab_size\": -1"), llama_tensors()),
                  "'vocab_size' must be a positive integer"));
  EXPECT_TRUE(has(convert_error(replaced(cfg, "\"rms_norm_eps\": 1e-5, ", ""), llama_tensors()),
                  "'rms_norm_eps' must be a positive number"));
  EXPECT_TRUE(has(convert_error(replaced(cfg, "\"rope_theta\": 10000.0",
                                         "\"rope_scaling\": {\"rope_type\": "
                                         "\"llama3\", \"factor\": 8.0}"),
                                llama_tensors()),
                  "rope_type \"llama3\""));
  EXPECT_TRUE(
      has(convert_error(replaced(cfg, "\"num_attention_heads\": 2", "\"num_attention_heads\": 3"), llama_tensors()),
          "hidden_size 64 is not a multiple of num_attention_heads 3"));
  auto extra = llama_tensors();
  extra.push_back({"model.layers.0.mlp.experts.0.up_proj.weight", {96, 64}});
  EXPECT_TRUE(has(convert_error(cfg, extra),
                  "tensor 'model.layers.0.mlp.experts.0.up_proj.weight': no llama.cpp "
                  "name for it"));
  auto past = llama_tensors();
  past.push_back({"model.layers.1.mlp.up_proj.weight", {96, 64}});  // layer 1 of a 1-layer model
  EXPECT_TRUE(has(convert_error(cfg, past), "no llama.cpp name for it"));
  auto wrong_rows = llama_tensors();
  wrong_rows[3].second = {64, 64};  // K with 2 heads' rows where config.json says 1 KV head
  EXPECT_TRUE(has(convert_error(cfg, wrong_rows), "64 rows are not 1 heads x head_dim 32"));
  auto no_norm = llama_tensors();
  no_norm.erase(no_norm.begin() + 1);
  EXPECT_TRUE(has(convert_error(cfg, no_norm), "no tensor for output_norm.weight"));
  EXPECT_TRUE(has(convert_error(cfg, llama_tensors(), "q8_0", "out.bin"), "OUT must be a path ending in .gguf"));
  EXPECT_TRUE(
      has(convert_error(cfg, llama_tensors(), "q8_0", "out.gguf", DType::F8_E4M3), "F8_E4M3 is not F32, F16 or BF16"));
}

TEST(ConvertToGguf, MissingConfigIsNamed) {
  TempDir dir;
  tiny_llama(dir / "in", kLlamaConfig, llama_tensors());
  fs::remove(dir / "in" / "config.json");
  EXPECT_EQ(io_error_of([&] { convert_to_gguf(dir / "in", dir / "o.gguf", gguf_recipe("f16")); }),
            IoErrc::gguf_unsupported);
  EXPECT_FALSE(fs::exists(dir / "o.gguf"));
}

TEST(GgufRecipe, RefusesSchemesGgufHasNoTypeFor) {
  EXPECT_EQ(gguf_recipe("bf16").type, GgufType::BF16);
  EXPECT_TRUE(gguf_recipe("mxfp4").recipe.has_value());
  for (const char* r : {"nvfp4", "fp8-block", "mxfp8", "deepseek-v4"}) {
    try {
      gguf_recipe(r);
      ADD_FAILURE() << r;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(str("recipe ", r, " cannot be written as --format gguf")), std::string::npos)
          << e.what();
      EXPECT_NE(std::string(e.what()).find("formats that can express it: minifloat"), std::string::npos);
    }
  }
}

// gpt-oss without experts (those need MXFP4 blocks; python/tests/test_gguf_gpt_oss.py converts them): llama.cpp's
// names for the rest, the types convert_hf_to_gguf keeps F32, and the gpt-oss.* metadata.
const char* kGptOssConfig = R"({"architectures": ["GptOssForCausalLM"], "model_type": "gpt_oss", "hidden_size": 64,
  "intermediate_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2, "num_key_value_heads": 1,
  "head_dim": 32, "max_position_embeddings": 128, "vocab_size": 32, "rms_norm_eps": 1e-5, "rope_theta": 150000.0,
  "num_local_experts": 4, "num_experts_per_tok": 2, "sliding_window": 16,
  "rope_scaling": {"rope_type": "yarn", "factor": 32.0, "original_max_position_embeddings": 4096}})";

std::vector<std::pair<std::string, Dims>> gpt_oss_tensors() {
  const std::string p = "model.layers.0.";
  return {{"model.embed_tokens.weight", {32, 64}},
          {"model.norm.weight", {64}},
          {p + "self_attn.q_proj.weight", {64, 64}},
          {p + "self_attn.q_proj.bias", {64}},
          {p + "self_attn.sinks", {2}},
          {p + "mlp.router.weight", {4, 64}},
          {p + "mlp.router.bias", {4}},
          {p + "post_attention_layernorm.weight", {64}}};
}

TEST(ConvertToGguf, GptOssNamesTypesAndMetadata) {
  TempDir dir;
  tiny_llama(dir / "in", kGptOssConfig, gpt_oss_tensors());
  convert_to_gguf(dir / "in", dir / "out.gguf", gguf_recipe("q8_0"), {}, GgufTokenizerMode::none);
  const GgufFile f = read_gguf(dir / "out.gguf");
  const auto type = [&f](const char* name) { return f.find(name) ? static_cast<int>(f.find(name)->type) : -1; };
  EXPECT_EQ(type("blk.0.attn_q.weight"), static_cast<int>(GgufType::Q8_0));
  for (const char* f32 : {"blk.0.attn_q.bias", "blk.0.attn_sinks.weight", "blk.0.ffn_gate_inp.weight",
                          "blk.0.ffn_gate_inp.bias", "blk.0.post_attention_norm.weight", "output_norm.weight"}) {
    EXPECT_EQ(type(f32), static_cast<int>(GgufType::F32)) << f32;
  }
  EXPECT_EQ(f.find_metadata("general.architecture")->as_string(), "gpt-oss");
  EXPECT_EQ(f.find_metadata("gpt-oss.expert_count")->as_uint(), 4u);
  EXPECT_EQ(f.find_metadata("gpt-oss.expert_used_count")->as_uint(), 2u);
  EXPECT_EQ(f.find_metadata("gpt-oss.expert_feed_forward_length")->as_uint(), 32u);
  EXPECT_EQ(f.find_metadata("gpt-oss.attention.sliding_window")->as_uint(), 16u);
  EXPECT_EQ(f.find_metadata("gpt-oss.rope.scaling.type")->as_string(), "yarn");
  EXPECT_EQ(f.find_metadata("gpt-oss.rope.scaling.factor")->as_float(), 32.0);
  EXPECT_EQ(f.find_metadata("gpt-oss.rope.scaling.original_context_length")->as_uint(), 4096u);
  EXPECT_EQ(f.find_metadata("gpt-oss.rope.dimension_count"), nullptr);
}

TEST(ConvertToGguf, GptOssRefusals) {
  const std::string cfg = kGptOssConfig;
  const auto has = [](const std::string& what, std::string_view part) {
    return what.find(part) != std::string::npos ? ::testing::AssertionSuccess() : ::testing::AssertionFailure() << what;
  };
  EXPECT_TRUE(has(convert_error(replaced(cfg, "\"yarn\"", "\"linear\""), gpt_oss_tensors()),
                  "writes gpt-oss's yarn rotary scaling only"));
  EXPECT_TRUE(has(convert_error(replaced(cfg, "\"sliding_window\"", "\"window\""), gpt_oss_tensors()),
                  "'sliding_window' must be a positive integer"));
  auto experts = gpt_oss_tensors();
  experts.push_back({"model.layers.0.mlp.experts.gate_up_proj", {4, 64, 64}});
  EXPECT_TRUE(has(convert_error(cfg, experts), "BF16 experts, not MXFP4 blocks"));
  auto unnamed = gpt_oss_tensors();
  unnamed.push_back({"model.layers.0.mlp.gate_proj.weight", {32, 64}});
  EXPECT_TRUE(has(convert_error(cfg, unnamed), "no llama.cpp name for it (--format gguf maps a gpt-oss's"));
}

// Qwen3-MoE: each expert's weights stacked per layer into ffn_{gate,up,down}_exps ([E, rows, cols], GGUF dims
// innermost first), the router and the q/k norms F32, and the qwen3moe.* keys of config.json (python/tests/
// test_gguf_arch.py compares whole files with llama.cpp's converter).
const char* kQwen3MoeConfig = R"({"architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe",
  "hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 1, "num_attention_heads": 2,
  "num_key_value_heads": 1, "head_dim": 32, "max_position_embeddings": 128, "vocab_size": 32, "rms_norm_eps": 1e-6,
  "rope_theta": 1000000.0, "num_experts": 2, "num_experts_per_tok": 1, "moe_intermediate_size": 32})";

std::vector<std::pair<std::string, Dims>> qwen3moe_tensors() {
  const std::string p = "model.layers.0.";
  std::vector<std::pair<std::string, Dims>> t{{"model.embed_tokens.weight", {32, 64}},
                                              {"model.norm.weight", {64}},
                                              {p + "self_attn.q_proj.weight", {64, 64}},
                                              {p + "self_attn.q_norm.weight", {32}},
                                              {p + "mlp.gate.weight", {2, 64}}};
  for (const char* e : {"0", "1"}) {
    t.push_back({str(p, "mlp.experts.", e, ".gate_proj.weight"), {32, 64}});
    t.push_back({str(p, "mlp.experts.", e, ".up_proj.weight"), {32, 64}});
    t.push_back({str(p, "mlp.experts.", e, ".down_proj.weight"), {64, 32}});
  }
  return t;
}

TEST(ConvertToGguf, Qwen3MoeExpertsAreStacked) {
  TempDir dir;
  tiny_llama(dir / "in", kQwen3MoeConfig, qwen3moe_tensors());
  convert_to_gguf(dir / "in", dir / "out.gguf", gguf_recipe("q8_0"), {}, GgufTokenizerMode::none);
  const GgufFile f = read_gguf(dir / "out.gguf");
  const auto type = [&f](const char* name) { return f.find(name) ? static_cast<int>(f.find(name)->type) : -1; };
  EXPECT_EQ(f.find("blk.0.ffn_gate_exps.weight")->dims, (Dims{64, 32, 2}));
  EXPECT_EQ(f.find("blk.0.ffn_down_exps.weight")->dims, (Dims{32, 64, 2}));
  EXPECT_EQ(type("blk.0.ffn_up_exps.weight"), static_cast<int>(GgufType::Q8_0));
  EXPECT_EQ(type("blk.0.ffn_gate_inp.weight"), static_cast<int>(GgufType::F32));
  EXPECT_EQ(type("blk.0.attn_q_norm.weight"), static_cast<int>(GgufType::F32));
  // the converter's order: by Hugging Face name, a layer's stacked experts down, gate, up where its last expert
  // weight came
  std::vector<std::string> names;
  for (const GgufTensor& t : f.tensors()) names.push_back(t.name);
  EXPECT_EQ(names,
            (std::vector<std::string>{"token_embd.weight", "blk.0.ffn_down_exps.weight", "blk.0.ffn_gate_exps.weight",
                                      "blk.0.ffn_up_exps.weight", "blk.0.ffn_gate_inp.weight",
                                      "blk.0.attn_q_norm.weight", "blk.0.attn_q.weight", "output_norm.weight"}));
  EXPECT_EQ(f.find_metadata("general.architecture")->as_string(), "qwen3moe");
  EXPECT_EQ(f.find_metadata("qwen3moe.expert_count")->as_uint(), 2u);
  EXPECT_EQ(f.find_metadata("qwen3moe.expert_used_count")->as_uint(), 1u);
  EXPECT_EQ(f.find_metadata("qwen3moe.expert_feed_forward_length")->as_uint(), 32u);
  EXPECT_EQ(f.find_metadata("qwen3moe.attention.key_length")->as_uint(), 32u);
  EXPECT_EQ(f.find_metadata("qwen3moe.rope.freq_base")->as_float(), 1e6);
  EXPECT_EQ(f.find_metadata("qwen3moe.rope.dimension_count"), nullptr);  // the converter writes none for Qwen
}

// DeepSeek V3's MLA: kv_b_proj [heads x (qk_nope + v), kv_lora] split per head into k_b (transposed: [heads,
// kv_lora, qk_nope]) and v_b ([heads, v, kv_lora]); one key/value head in the metadata; the MTP layer (past
// num_hidden_layers) dropped.
const char* kDeepseekConfig = R"({"architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3",
  "hidden_size": 64, "intermediate_size": 96, "moe_intermediate_size": 32, "num_hidden_layers": 1,
  "num_attention_heads": 2, "num_key_value_heads": 2, "max_position_embeddings": 128, "vocab_size": 32,
  "rms_norm_eps": 1e-6, "rope_theta": 10000.0, "q_lora_rank": null, "kv_lora_rank": 32, "qk_nope_head_dim": 16,
  "qk_rope_head_dim": 8, "v_head_dim": 24, "first_k_dense_replace": 1, "n_shared_experts": 1})";

TEST(ConvertToGguf, DeepseekKvBIsSplitPerHead) {
  TempDir dir;
  const std::string p = "model.layers.0.";
  fs::create_directories(dir / "in");
  write_file(dir / "in" / "config.json", kDeepseekConfig);
  const std::vector<SafetensorsWriter::Spec> specs{{"model.embed_tokens.weight", DType::F32, {32, 64}},
                                                   {"model.norm.weight", DType::F32, {64}},
                                                   {p + "self_attn.kv_b_proj.weight", DType::F32, {2 * (16 + 24), 32}},
                                                   {"model.layers.1.eh_proj.weight", DType::F32, {64, 128}}};
  SafetensorsWriter w(dir / "in" / "model.safetensors", specs);
  for (std::size_t k = 0; k < specs.size(); ++k) {
    std::vector<float> x(specs[k].shape[0] * (specs[k].shape.size() > 1 ? specs[k].shape[1] : 1));
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i);  // each element its own index
    w.write_tensor(k, std::as_bytes(std::span(x)));
  }
  w.commit();
  convert_to_gguf(dir / "in", dir / "out.gguf", gguf_recipe("f32"), {}, GgufTokenizerMode::none);
  const GgufFile f = read_gguf(dir / "out.gguf");
  ASSERT_EQ(f.tensors().size(), 4u);  // eh_proj of the MTP layer 1 is not written
  EXPECT_EQ(f.find("blk.0.attn_k_b.weight")->dims, (Dims{16, 32, 2}));
  EXPECT_EQ(f.find("blk.0.attn_v_b.weight")->dims, (Dims{32, 24, 2}));
  // k_b[h, c, r] is kv_b's row h * 40 + r, column c; v_b[h, r, c] its row h * 40 + 16 + r (40 = qk_nope + v)
  const std::vector<float> k = dequantize_gguf(f, *f.find("blk.0.attn_k_b.weight"));
  const std::vector<float> v = dequantize_gguf(f, *f.find("blk.0.attn_v_b.weight"));
  for (const auto& [h, c, r] : {std::tuple{0, 0, 0}, {1, 5, 3}, {1, 31, 15}}) {
    EXPECT_EQ(k[(h * 32 + c) * 16 + r], static_cast<float>((h * 40 + r) * 32 + c)) << h << c << r;
  }
  for (const auto& [h, r, c] : {std::tuple{0, 0, 0}, {1, 7, 9}, {1, 23, 31}}) {
    EXPECT_EQ(v[(h * 24 + r) * 32 + c], static_cast<float>((h * 40 + 16 + r) * 32 + c)) << h << r << c;
  }
  EXPECT_EQ(f.find_metadata("deepseek2.attention.head_count_kv")->as_uint(), 1u);
  EXPECT_EQ(f.find_metadata("deepseek2.attention.key_length")->as_uint(), 32u + 8u);
  EXPECT_EQ(f.find_metadata("deepseek2.attention.value_length")->as_uint(), 32u);
  EXPECT_EQ(f.find_metadata("deepseek2.attention.key_length_mla")->as_uint(), 16u + 8u);
  EXPECT_EQ(f.find_metadata("deepseek2.attention.value_length_mla")->as_uint(), 24u);
  EXPECT_EQ(f.find_metadata("deepseek2.leading_dense_block_count")->as_uint(), 1u);
  EXPECT_EQ(f.find_metadata("deepseek2.rope.dimension_count")->as_uint(), 8u);
  EXPECT_EQ(f.find_metadata("deepseek2.attention.q_lora_rank"), nullptr);
  // q8_0: k_b's rows (qk_nope 16) are not whole 32-blocks, so it falls back to F16 as the converter does; v_b's are
  convert_to_gguf(dir / "in", dir / "q8.gguf", gguf_recipe("q8_0"), {}, GgufTokenizerMode::none);
  const GgufFile q = read_gguf(dir / "q8.gguf");
  EXPECT_EQ(q.find("blk.0.attn_k_b.weight")->type, static_cast<std::uint32_t>(GgufType::F16));
  EXPECT_EQ(q.find("blk.0.attn_v_b.weight")->type, static_cast<std::uint32_t>(GgufType::Q8_0));
}

TEST(ConvertToGguf, QwenAndDeepseekRefusals) {
  const auto has = [](const std::string& what, std::string_view part) {
    return what.find(part) != std::string::npos ? ::testing::AssertionSuccess() : ::testing::AssertionFailure() << what;
  };
  const std::string cfg = kQwen3MoeConfig;
  auto missing = qwen3moe_tensors();
  missing.pop_back();  // expert 1's down_proj
  EXPECT_TRUE(has(convert_error(cfg, missing), "expert 1's weight of blk.0.ffn_down_exps.weight is missing"));
  EXPECT_TRUE(has(convert_error(cfg, qwen3moe_tensors(), "mxfp4"), "--recipe mxfp4: --format gguf writes qwen3moe"));
  EXPECT_TRUE(has(convert_error(replaced(cfg, "\"rope_theta\": 1000000.0",
                                         R"("rope_scaling": {"rope_type": "longrope", "factor": 4.0})"),
                                qwen3moe_tensors()),
                  "rope type \"longrope\""));
  auto dense = qwen3moe_tensors();
  dense.push_back({"model.layers.0.mlp.up_proj.weight", {96, 64}});  // qwen3moe has no dense FFN in llama.cpp
  EXPECT_TRUE(has(convert_error(cfg, dense), "no llama.cpp name for it (--format gguf maps a Qwen3-MoE's"));
  auto extra = qwen3moe_tensors();
  extra.push_back({"model.layers.0.mlp.experts.2.up_proj.weight", {32, 64}});  // expert 2 of 2
  EXPECT_TRUE(has(convert_error(cfg, extra), "no llama.cpp name for it"));
  EXPECT_TRUE(has(convert_error(replaced(kDeepseekConfig, "\"v_head_dim\": 24", "\"v_head_dim\": 20"),
                                {{"model.embed_tokens.weight", {32, 64}},
                                 {"model.norm.weight", {64}},
                                 {"model.layers.0.self_attn.kv_b_proj.weight", {80, 32}}}),
                  "80 rows are not 2 groups (heads or experts) of 36"));
}

}  // namespace
}  // namespace mf::io
