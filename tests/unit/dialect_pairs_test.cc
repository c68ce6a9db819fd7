// The dialects' pair forms on hand-worked tensors: which names pair up, the scheme read off the shapes, and values
// worked out by hand from the formats (e2m1 code 0x7 = 6, 0x9 = -0.5; e4m3 0x38 = 1; E8M0 e = 2^(e-127)).
// python/tests/test_dialects.py checks the same against the libraries themselves.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <vector>

#include "io_test_util.h"
#include "minifloat/checkpoint_commands.h"
#include "minifloat/checkpoint_tensors.h"
#include "minifloat/safetensors.h"

namespace mf::io {
namespace {

using namespace mf::io::testing;
using Shape = std::vector<std::uint64_t>;

std::vector<std::byte> bytes(std::initializer_list<int> v) {
  std::vector<std::byte> out;
  for (const int b : v) out.push_back(static_cast<std::byte>(b));
  return out;
}
std::vector<std::byte> f32(float x) {
  std::vector<std::byte> out(4);
  std::memcpy(out.data(), &x, 4);
  return out;
}
std::vector<std::byte> bf16(std::initializer_list<float> v) {
  std::vector<std::byte> out;
  for (const float x : v) {
    const auto h = static_cast<std::uint16_t>(std::bit_cast<std::uint32_t>(x) >> 16);  // exact for these values
    out.push_back(static_cast<std::byte>(h & 0xff));
    out.push_back(static_cast<std::byte>(h >> 8));
  }
  return out;
}

struct Owned {
  std::string name;
  DType dtype;
  Shape shape;
  std::vector<std::byte> data;
};

SafetensorsFile file_of(const std::vector<Owned>& tensors) {
  TempDir dir;
  std::vector<TensorView> views;
  for (const Owned& t : tensors) views.push_back({t.name, t.dtype, t.shape, t.data});
  write_safetensors(dir / "m.safetensors", views);
  return read_safetensors(dir / "m.safetensors");  // the mapping outlives the directory's removal
}

TEST(DialectPairs, CompressedTensorsNvfp4DividesByTheGlobalScale) {
  // 1 x 32: codes 0x7 (6) and 0x9 (-0.5) alternate; block 0 scale e4m3 0x40 (2), block 1 0x38 (1); global 4.
  std::vector<std::byte> packed(16, std::byte{0x97});
  const SafetensorsFile f = file_of({{"m.weight_packed", DType::U8, {1, 16}, packed},
                                     {"m.weight_scale", DType::F8_E4M3, {1, 2}, bytes({0x40, 0x38})},
                                     {"m.weight_global_scale", DType::F32, {1}, f32(4)},
                                     {"m.input_global_scale", DType::F32, {1}, f32(2)}});
  const std::vector<QuantizedPair> pairs = find_pairs(f);
  ASSERT_EQ(pairs.size(), 1u);
  const QuantizedPair& p = pairs[0];
  EXPECT_EQ(p.form, PairForm::packed_global);
  EXPECT_EQ(p.output, "m.weight");
  EXPECT_EQ(p.output_shape, (Shape{1, 32}));
  EXPECT_EQ(p.scheme_name, "e2m1-1x16-e4m3-global");
  EXPECT_EQ(p.extras, std::vector<std::string>{"m.input_global_scale"});
  const std::vector<float> v = dequantize_pair(f, p);
  ASSERT_EQ(v.size(), 32u);
  EXPECT_EQ(v[0], 6 * (2.0f / 4));  // even element: low nibble
  EXPECT_EQ(v[1], -0.5f * 0.5f);
  EXPECT_EQ(v[16], 6 * (1.0f / 4));  // second block
  EXPECT_EQ(v[17], -0.125f);
}

TEST(DialectPairs, CompressedTensorsMxfp4) {
  std::vector<std::byte> packed(16, std::byte{0x97});
  const SafetensorsFile f = file_of(
      {{"m.weight_packed", DType::U8, {1, 16}, packed}, {"m.weight_scale", DType::U8, {1, 1}, bytes({125})}});  // 2^-2
  const std::vector<QuantizedPair> pairs = find_pairs(f);
  ASSERT_EQ(pairs.size(), 1u);
  EXPECT_EQ(pairs[0].form, PairForm::packed);
  const std::vector<float> v = dequantize_pair(f, pairs[0]);
  EXPECT_EQ(v[0], 1.5f);
  EXPECT_EQ(v[31], -0.125f);
}

std::vector<std::byte> words(std::initializer_list<std::uint32_t> v) {
  std::vector<std::byte> out;
  for (const std::uint32_t w : v) {
    for (int b = 0; b < 4; ++b) out.push_back(static_cast<std::byte>((w >> (8 * b)) & 0xff));
  }
  return out;
}
std::vector<std::byte> i64(std::initializer_list<std::int64_t> v) {
  std::vector<std::byte> out;
  for (const std::int64_t x : v) {
    for (int b = 0; b < 8; ++b)
      out.push_back(static_cast<std::byte>((static_cast<std::uint64_t>(x) >> (8 * b)) & 0xff));
  }
  return out;
}

// compressed-tensors pack-quantized int4 (compressors/pack_quantized: element c of a row at bit 4c of the row's I32
// words, stored as q + 8; value (q - zp) x scale[group]). One row of 16 columns in two groups of 8; the word
// 0x76543210 holds the stored codes 0..7 (q = -8..-1), 0xFEDCBA98 the codes 8..15 (q = 0..7). Scales bf16 0.5 and
// 2. With weight_g_idx (GPTQ's act-order), column c's group is g_idx[c], here mirrored: 1 for c < 8, 0 after.
TEST(DialectPairs, CompressedTensorsPackQuantizedInt4WithGroupIndex) {
  for (const bool g_idx : {false, true}) {
    std::vector<Owned> t{{"m.weight_packed", DType::I32, {1, 2}, words({0x76543210u, 0xFEDCBA98u})},
                         {"m.weight_scale", DType::BF16, {1, 2}, bf16({0.5f, 2.0f})},
                         {"m.weight_shape", DType::I64, {2}, i64({1, 16})}};
    if (g_idx)
      t.push_back({"m.weight_g_idx", DType::I32, {16}, words({1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0})});
    const SafetensorsFile f = file_of(t);
    const std::vector<QuantizedPair> pairs = find_pairs(f);
    ASSERT_EQ(pairs.size(), 1u);
    const QuantizedPair& p = pairs[0];
    EXPECT_EQ(p.form, PairForm::integer);
    EXPECT_EQ(p.bits, 4);
    EXPECT_EQ(p.output, "m.weight");
    EXPECT_EQ(p.scheme_name, "int4-1x8-bf16");
    const std::vector<float> v = dequantize_pair(f, p);
    ASSERT_EQ(v.size(), 16u);
    for (int c = 0; c < 16; ++c) {
      const float q = static_cast<float>(c - 8);
      const float scale = (c < 8) != g_idx ? 0.5f : 2.0f;
      EXPECT_EQ(v[c], q * scale) << c << (g_idx ? " with g_idx" : "");
    }
  }
}

// 3-bit codes cross word boundaries (32 consecutive elements in exactly 3 words): element 10 is bits 30..32, the
// top two bits of word 0 and the lowest of word 1. Every stored code is 5 (q = 5 - 4 = 1) but element 10, 6 (q = 2);
// per channel (one scale, f32 0.25), asymmetric: the zero point is packed along the rows as the codes are, here
// one row's stored 3 (zp = -1), so the values are (q + 1) x 0.25.
TEST(DialectPairs, CompressedTensorsPackQuantizedThreeBitsAcrossWordsWithZeroPoint) {
  std::uint32_t w[3] = {0, 0, 0};
  for (std::uint32_t c = 0; c < 32; ++c) {
    const std::uint64_t code = c == 10 ? 6 : 5, at = 3 * c;
    w[at / 32] |= static_cast<std::uint32_t>(code << (at % 32));
    if (at % 32 > 29) w[at / 32 + 1] |= static_cast<std::uint32_t>(code >> (32 - at % 32));
  }
  const SafetensorsFile f = file_of({{"m.weight_packed", DType::I32, {1, 3}, words({w[0], w[1], w[2]})},
                                     {"m.weight_scale", DType::F32, {1, 1}, f32(0.25f)},
                                     {"m.weight_shape", DType::I64, {2}, i64({1, 32})},
                                     {"m.weight_zero_point", DType::I32, {1, 1}, words({3})}});
  const std::vector<QuantizedPair> pairs = find_pairs(f);
  ASSERT_EQ(pairs.size(), 1u);
  EXPECT_EQ(pairs[0].bits, 3);
  EXPECT_EQ(pairs[0].zero_point, "m.weight_zero_point");
  const std::vector<float> v = dequantize_pair(f, pairs[0]);
  for (int c = 0; c < 32; ++c) EXPECT_EQ(v[c], (c == 10 ? 3 : 2) * 0.25f) << c;
}

// int-quantized int8 (W8A8): I8 codes, one bf16 scale per row.
TEST(DialectPairs, CompressedTensorsInt8PerChannel) {
  const SafetensorsFile f = file_of({{"m.weight", DType::I8, {2, 2}, bytes({0x7f, 0x81, 0xff, 0x01})},
                                     {"m.weight_scale", DType::BF16, {2, 1}, bf16({0.5f, 4.0f})}});
  const std::vector<QuantizedPair> pairs = find_pairs(f);
  ASSERT_EQ(pairs.size(), 1u);
  EXPECT_EQ(pairs[0].scheme_name, "int8-channel-bf16");
  EXPECT_EQ(dequantize_pair(f, pairs[0]), (std::vector<float>{63.5f, -63.5f, -4.0f, 4.0f}));
}

// AutoGPTQ (auto_gptq/nn_modules/qlinear/qlinear_cuda_old.py, checkpoint_format gptq): qweight I32 [C x 4 / 32, R]
// packs input k of output n at bit 4 (k % 8) of word [k / 8][n]; qzeros I32 [G, R x 4 / 32] packs output n's zero at
// bit 4 (n % 8) of word [g][n / 8], stored as zero - 1; scales F16 [G, R]; g_idx I32 [C] the group of each input;
// W[n][k] = (q - (stored zero + 1)) x scale[g_idx[k]][n]. Here R = 8, C = 16, q = (k + n) % 16, every stored zero 7
// (zero 8), scales f16 0.5 (group 0) and 2 (group 1), g_idx mirrored (inputs 0-7 in group 1).
SafetensorsFile gptq_file(std::uint32_t zero_word) {
  std::vector<std::uint32_t> q(2 * 8, 0);
  for (std::uint32_t k = 0; k < 16; ++k) {
    for (std::uint32_t n = 0; n < 8; ++n) q[(k / 8) * 8 + n] |= ((k + n) % 16) << (4 * (k % 8));
  }
  std::vector<std::byte> qw, sc, gi;
  for (const std::uint32_t w : q) {
    for (int b = 0; b < 4; ++b) qw.push_back(static_cast<std::byte>((w >> (8 * b)) & 0xff));
  }
  for (int g = 0; g < 2; ++g) {
    for (int n = 0; n < 8; ++n) {
      sc.push_back(std::byte{0x00});
      sc.push_back(g == 0 ? std::byte{0x38} : std::byte{0x40});
    }
  }
  for (std::uint32_t k = 0; k < 16; ++k) {
    const std::uint32_t g = k < 8 ? 1 : 0;
    for (int b = 0; b < 4; ++b) gi.push_back(static_cast<std::byte>((g >> (8 * b)) & 0xff));
  }
  return file_of({{"m.g_idx", DType::I32, {16}, gi},
                  {"m.qweight", DType::I32, {2, 8}, qw},
                  {"m.qzeros", DType::I32, {2, 1}, words({zero_word, zero_word})},
                  {"m.scales", DType::F16, {2, 8}, sc}});
}

TEST(DialectPairs, AutoGptqPackedAlongTheInputsWithZerosMinusOne) {
  const SafetensorsFile f = gptq_file(0x77777777u);
  const std::vector<QuantizedPair> pairs = find_pairs(f);
  ASSERT_EQ(pairs.size(), 1u);
  const QuantizedPair& p = pairs[0];
  EXPECT_EQ(p.form, PairForm::integer);
  EXPECT_EQ(p.packing, QuantizedPair::Packing::gptq);
  EXPECT_EQ(p.output, "m.weight");
  EXPECT_EQ(p.output_shape, (Shape{8, 16}));
  EXPECT_EQ(p.group_index, "m.g_idx");
  const std::vector<float> v = dequantize_pair(f, p);
  for (int n = 0; n < 8; ++n) {
    for (int k = 0; k < 16; ++k) {
      EXPECT_EQ(v[n * 16 + k], static_cast<float>((k + n) % 16 - 8) * (k < 8 ? 2.0f : 0.5f)) << n << ", " << k;
    }
  }
}

// checkpoint_format gptq_v2 (AutoGPTQ's v2; llama.cpp's dequant_gptq adds 1 only for "gptq"): the same words, the zero
// points as stored. The words 0xf0f0f0f0 hold zero 0 for even outputs and 15 for odd ones (v1 would read 1 and 16,
// wrapped to 0); the config's declaration sets gptq_v2 (read_as_declared), here set by hand.
TEST(DialectPairs, AutoGptqV2ZerosAsStored) {
  const SafetensorsFile f = gptq_file(0xf0f0f0f0u);
  std::vector<QuantizedPair> pairs = find_pairs(f);
  ASSERT_EQ(pairs.size(), 1u);
  EXPECT_FALSE(pairs[0].gptq_v2);  // the file alone reads as v1
  pairs[0].gptq_v2 = true;
  const std::vector<float> v = dequantize_pair(f, pairs[0]);
  for (int n = 0; n < 8; ++n) {
    for (int k = 0; k < 16; ++k) {
      const int zero = n % 2 == 0 ? 0 : 15;
      EXPECT_EQ(v[n * 16 + k], static_cast<float>((k + n) % 16 - zero) * (k < 8 ? 2.0f : 0.5f)) << n << ", " << k;
    }
  }
}

// AutoAWQ's GEMM words (awq/utils/packing_utils.py): output n = 8 col + j sits at nibble AWQ_REVERSE_ORDER[j] =
// [0, 4, 1, 5, 2, 6, 3, 7][j] of word [k][col]; zeros likewise, with no offset; W[n][k] = (q - z) x s. One input,
// eight outputs: the word 0x76543210 holds nibble i = i, so output j reads nibble REVERSE[j]; zero 2, scale 1.
TEST(DialectPairs, AutoAwqInterleavedNibbles) {
  std::vector<std::byte> one;  // f16 1.0 = 0x3c00 for each output
  for (int n = 0; n < 8; ++n) {
    one.push_back(std::byte{0x00});
    one.push_back(std::byte{0x3c});
  }
  const SafetensorsFile g = file_of({{"m.qweight", DType::I32, {1, 1}, words({0x76543210u})},
                                     {"m.qzeros", DType::I32, {1, 1}, words({0x22222222u})},
                                     {"m.scales", DType::F16, {1, 8}, one}});
  const std::vector<QuantizedPair> pairs = find_pairs(g);
  ASSERT_EQ(pairs.size(), 1u);
  EXPECT_EQ(pairs[0].packing, QuantizedPair::Packing::awq);
  const std::vector<float> v = dequantize_pair(g, pairs[0]);
  const int reverse[8] = {0, 4, 1, 5, 2, 6, 3, 7};
  for (int n = 0; n < 8; ++n) EXPECT_EQ(v[n], static_cast<float>(reverse[n] - 2)) << n;
}

TEST(DialectPairs, Fp8PerChannelBf16Scales) {
  // 2 x 2 e4m3 0x38 (1) and 0xb8 (-1); row scales bf16 0.5 and 3.
  const SafetensorsFile f = file_of({{"m.weight", DType::F8_E4M3, {2, 2}, bytes({0x38, 0xb8, 0x38, 0x38})},
                                     {"m.weight_scale", DType::BF16, {2, 1}, bf16({0.5f, 3.0f})},
                                     {"m.input_scale", DType::BF16, {1}, bf16({1.0f})}});
  const std::vector<QuantizedPair> pairs = find_pairs(f);
  ASSERT_EQ(pairs.size(), 1u);
  EXPECT_EQ(pairs[0].form, PairForm::scaled);
  EXPECT_EQ(pairs[0].scheme_name, "e4m3-channel-bf16");
  EXPECT_EQ(pairs[0].extras, std::vector<std::string>{"m.input_scale"});
  EXPECT_EQ(dequantize_pair(f, pairs[0]), (std::vector<float>{0.5f, -0.5f, 3.0f, 3.0f}));
}

TEST(DialectPairs, ModelOptBlockScalesWithFourDimensions) {
  // 130 x 2 weight, scales [2, 1, 1, 1]: rows 0-127 take 2, rows 128-129 take 0.25.
  std::vector<std::byte> codes(260, std::byte{0x38});
  std::vector<std::byte> scales = f32(2);
  const std::vector<std::byte> quarter = f32(0.25f);
  scales.insert(scales.end(), quarter.begin(), quarter.end());
  const SafetensorsFile f =
      file_of({{"m.weight", DType::F8_E4M3, {130, 2}, codes}, {"m.weight_scale", DType::F32, {2, 1, 1, 1}, scales}});
  const std::vector<QuantizedPair> pairs = find_pairs(f);
  ASSERT_EQ(pairs.size(), 1u);
  EXPECT_EQ(pairs[0].scheme_name, "e4m3-128x2-f32");
  const std::vector<float> v = dequantize_pair(f, pairs[0]);
  EXPECT_EQ(v[2 * 127 + 1], 2.0f);
  EXPECT_EQ(v[2 * 128], 0.25f);
}

// ModelOpt's INT4 (W4A16_AWQ; quant_utils.py pack_int4_in_uint8): W U8 [R/2, C], output rows 2i (low nibble) and
// 2i+1 (high nibble) of column c in byte [i, c], two's-complement int4; W_scale [R, C/G]. Here R = 4, C = 4, G = 2:
// byte 0x8F = rows 0 and 1 of column 0: low 0xF = -1, high 0x8 = -8; 0x70 = 0 and 7; 0x21 = 1 and 2; 0xE9 = -7 and -2.
TEST(DialectPairs, ModelOptInt4TwoOutputRowsPerByte) {
  const SafetensorsFile f =
      file_of({{"m.weight", DType::U8, {2, 4}, bytes({0x8F, 0x70, 0x21, 0xE9, 0x10, 0x32, 0x54, 0x76})},
               {"m.weight_scale",
                DType::F32,
                {4, 2},
                [] {
                  std::vector<std::byte> b;
                  for (const float x : {0.5f, 2.0f, 1.0f, 0.25f, 3.0f, 1.0f, 1.0f, 1.0f}) {
                    const std::vector<std::byte> v = f32(x);
                    b.insert(b.end(), v.begin(), v.end());
                  }
                  return b;
                }()},
               {"m.pre_quant_scale", DType::BF16, {4}, bf16({1.0f, 2.0f, 0.5f, 1.0f})}});
  const std::vector<QuantizedPair> pairs = find_pairs(f);
  ASSERT_EQ(pairs.size(), 1u);
  EXPECT_EQ(pairs[0].form, PairForm::integer);
  EXPECT_EQ(pairs[0].scheme_name, "int4-1x2-f32");
  EXPECT_EQ(pairs[0].pre_quant_scale, "m.pre_quant_scale");
  // Codes: row 0 = [-1, 0, 1, -7], row 1 = [-8, 7, 2, -2], row 2 = [0, 2, 4, 6], row 3 = [1, 3, 5, 7].
  // x scales [0.5 0.5 2 2 | 1 1 0.25 0.25 | 3 3 1 1 | 1 1 1 1], x pre_quant_scale [1, 2, 0.5, 1] by column.
  EXPECT_EQ(dequantize_pair(f, pairs[0]), (std::vector<float>{-0.5f, 0.0f, 1.0f, -14.0f,   //
                                                              -8.0f, 14.0f, 0.25f, -0.5f,  //
                                                              0.0f, 12.0f, 2.0f, 6.0f,     //
                                                              1.0f, 6.0f, 2.5f, 7.0f}));
}

// ModelOpt's INT8 (W8A16) and FP8_PER_CHANNEL_PER_TOKEN: one F32 scale per output row, [R].
TEST(DialectPairs, ModelOptInt8AndFp8PerRowScalesOfOneDimension) {
  std::vector<std::byte> scales = f32(0.5f);
  const std::vector<std::byte> four = f32(4.0f);
  scales.insert(scales.end(), four.begin(), four.end());
  const SafetensorsFile f = file_of({{"a.weight", DType::I8, {2, 2}, bytes({0x7f, 0x81, 0xff, 0x01})},
                                     {"a.weight_scale", DType::F32, {2}, scales},
                                     {"b.weight", DType::F8_E4M3, {2, 2}, bytes({0x38, 0xb8, 0x38, 0x38})},
                                     {"b.weight_scale", DType::F32, {2}, scales}});
  const std::vector<QuantizedPair> pairs = find_pairs(f);
  ASSERT_EQ(pairs.size(), 2u);
  EXPECT_EQ(pairs[0].scheme_name, "int8-channel-f32");
  EXPECT_EQ(dequantize_pair(f, pairs[0]), (std::vector<float>{63.5f, -63.5f, -4.0f, 4.0f}));
  EXPECT_EQ(pairs[1].scheme_name, "e4m3-channel-f32");
  EXPECT_EQ(dequantize_pair(f, pairs[1]), (std::vector<float>{0.5f, -0.5f, 4.0f, 4.0f}));
}

TEST(DialectPairs, APreQuantScaleOfAnotherShapeIsNamed) {
  const SafetensorsFile f = file_of({{"m.weight", DType::I8, {2, 2}, bytes({1, 2, 3, 4})},
                                     {"m.weight_scale",
                                      DType::F32,
                                      {2},
                                      [] {
                                        std::vector<std::byte> b = f32(1.0f);
                                        const std::vector<std::byte> c = f32(1.0f);
                                        b.insert(b.end(), c.begin(), c.end());
                                        return b;
                                      }()},
                                     {"m.pre_quant_scale", DType::BF16, {3}, bf16({1.0f, 1.0f, 1.0f})}});
  try {
    find_pairs(f);
    FAIL() << "a pre_quant_scale [3] of a [2, 2] weight was taken";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("m.pre_quant_scale"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("one F32/BF16/F16 value per input column, [2] expected"), std::string::npos)
        << e.what();
  }
}

TEST(DialectPairs, GptOssBlocksAreTransposedAsTransformersLoadsThem) {
  // 1 expert, 2 rows of 32: row 0 all 0x7 (6) with e = 127 (1); row 1 all 0x9 (-0.5) with e = 128 (2).
  std::vector<std::byte> blocks(32, std::byte{0x99});
  std::fill_n(blocks.begin(), 16, std::byte{0x77});
  const SafetensorsFile f = file_of({{"e.gate_up_proj_blocks", DType::U8, {1, 2, 1, 16}, blocks},
                                     {"e.gate_up_proj_scales", DType::U8, {1, 2, 1}, bytes({127, 128})}});
  const std::vector<QuantizedPair> pairs = find_pairs(f);
  ASSERT_EQ(pairs.size(), 1u);
  const QuantizedPair& p = pairs[0];
  EXPECT_EQ(p.form, PairForm::blocks);
  EXPECT_EQ(p.output, "e.gate_up_proj");
  EXPECT_EQ(p.output_shape, (Shape{1, 32, 2}));
  const std::vector<float> v = dequantize_pair(f, p);
  ASSERT_EQ(v.size(), 64u);
  for (int c = 0; c < 32; ++c) {
    EXPECT_EQ(v[2 * c], 6.0f);       // [0, c, 0]: row 0
    EXPECT_EQ(v[2 * c + 1], -1.0f);  // [0, c, 1]: row 1
  }
}

TEST(DialectPairs, ShapesThatFitNoFormNameBothTensors) {
  const SafetensorsFile f = file_of({{"m.weight_packed", DType::U8, {1, 16}, std::vector<std::byte>(16)},
                                     {"m.weight_scale", DType::U8, {1, 2}, bytes({127, 127})}});
  expect_io_error([&] { find_pairs(f); }, IoErrc::size_mismatch,
                  "tensor 'm.weight_packed': U8 [1, 16] with m.weight_scale U8 [1, 2] fits no form: weight_packed U8 "
                  "[R, C/2] with weight_scale U8 [R, C/32]");
}

// A compressed-tensors float-quantized config whose `ignore` list is `ignore` (JSON items).
std::string ct_config(const std::string& ignore) {
  return R"({"quantization_config": {"quant_method": "compressed-tensors", "config_groups": {"g": {"targets":
      ["Linear"], "weights": {"num_bits": 8, "type": "float"}}}, "format": "float-quantized", "ignore": [)" +
         ignore + "]}}";
}

// verify holds config.json against the tensors: a quantized module the config leaves unquantized, and a config that
// announces quantization over a checkpoint with none, are each an error naming what disagrees.
// compressed-tensors NVFP4 with a zero block scale: verify passes it over an all-zero block (the scale minifloat's
// quantizer writes there), and names it over a nonzero code, whose value it would lose.
TEST(DialectVerify, AZeroScaleOnlyOverZeroCodes) {
  for (const bool nonzero : {false, true}) {
    TempDir dir;
    std::vector<std::byte> packed(16, std::byte{0x00});            // 1 x 32: block 0 (16 codes) zero
    std::fill(packed.begin() + 8, packed.end(), std::byte{0x97});  // block 1: 6 and -0.5
    if (nonzero) packed[3] = std::byte{0x10};                      // element 7 of block 0: 0.5
    const std::uint64_t codes_shape[] = {1, 16}, scale_shape[] = {1, 2}, one[] = {1};
    const std::vector<std::byte> scales = bytes({0x00, 0x38}), global = f32(1);
    const std::vector<TensorView> t{{"m.weight_packed", DType::U8, codes_shape, packed},
                                    {"m.weight_scale", DType::F8_E4M3, scale_shape, scales},
                                    {"m.weight_global_scale", DType::F32, one, global}};
    write_safetensors(dir / "model.safetensors", t);
    if (!nonzero) {
      EXPECT_EQ(verify_checkpoint(dir.path()).pairs, 1u);
      continue;
    }
    try {
      verify_checkpoint(dir.path());
      ADD_FAILURE() << "a zero scale over a nonzero code passed";
    } catch (const VerifyError& e) {
      EXPECT_NE(std::string(e.what()).find("the scale of element 7 of 'm.weight_packed' is zero, but its code is not"),
                std::string::npos)
          << e.what();
    }
  }
}

TEST(DialectVerify, ConfigAgainstTensors) {
  TempDir dir;
  const std::vector<std::byte> codes(4, std::byte{0x38}), one = f32(1);
  const std::uint64_t shape[] = {2, 2}, scalar[] = {1};
  const std::vector<TensorView> quantized{{"model.lm_head.weight", DType::F8_E4M3, shape, codes},
                                          {"model.lm_head.weight_scale", DType::F32, scalar, one}};
  write_safetensors(dir / "model.safetensors", quantized);
  write_file(dir / "config.json", ct_config(R"("lm_head")"));
  try {
    verify_checkpoint(dir.path());
    FAIL() << "accepted";
  } catch (const VerifyError& e) {
    EXPECT_EQ(e.tensor, "model.lm_head.weight");
    EXPECT_NE(std::string(e.what()).find("config.json (compressed-tensors rules) leaves module 'model.lm_head' "
                                         "unquantized, but its weight 'model.lm_head.weight' is quantized"),
              std::string::npos)
        << e.what();
  }
  write_file(dir / "config.json", ct_config(R"("embed_tokens")"));
  EXPECT_EQ(verify_checkpoint(dir.path()).pairs, 1u);

  const std::vector<std::byte> plain(8, std::byte{0});
  const std::vector<TensorView> bf16_only{{"model.lm_head.weight", DType::BF16, shape, plain}};
  write_safetensors(dir / "model.safetensors", bf16_only);
  try {
    verify_checkpoint(dir.path());
    FAIL() << "accepted";
  } catch (const VerifyError& e) {
    EXPECT_NE(std::string(e.what()).find("config.json announces compressed-tensors quantization (float-quantized), "
                                         "but no tensor is quantized"),
              std::string::npos)
        << e.what();
  }
}

// And the other way: a bf16 weight in a layer whose siblings are quantized, that the config does not leave out.
TEST(DialectVerify, AnUnquantizedSiblingIsNamed) {
  TempDir dir;
  const std::vector<std::byte> codes(4, std::byte{0x38}), one = f32(1), plain(8, std::byte{0});
  const std::uint64_t shape[] = {2, 2}, scalar[] = {1};
  const std::vector<TensorView> tensors{{"model.layers.0.mlp.down_proj.weight", DType::BF16, shape, plain},
                                        {"model.layers.1.mlp.down_proj.weight", DType::F8_E4M3, shape, codes},
                                        {"model.layers.1.mlp.down_proj.weight_scale", DType::F32, scalar, one}};
  write_safetensors(dir / "model.safetensors", tensors);
  write_file(dir / "config.json", ct_config(R"("lm_head")"));
  try {
    verify_checkpoint(dir.path());
    FAIL() << "accepted";
  } catch (const VerifyError& e) {
    EXPECT_EQ(e.tensor, "model.layers.0.mlp.down_proj.weight");
    EXPECT_NE(std::string(e.what()).find("but its weight 'model.layers.0.mlp.down_proj.weight' is not quantized"),
              std::string::npos)
        << e.what();
  }
  write_file(dir / "config.json", ct_config(R"("model.layers.0.mlp.down_proj")"));
  EXPECT_EQ(verify_checkpoint(dir.path()).pairs, 1u);
}

}  // namespace
}  // namespace mf::io
