// convert --format gguf from quantized sources: the block layouts written by hand from ggml-common.h (block_nvfp4,
// block_q4_0, block_q4_1, block_q8_0) and gguf-py's quants.py, and the cases GGML's blocks cannot hold. The
// comparison with llama.cpp's own converter is python/tests/test_gguf_sources.py.
#include <gtest/gtest.h>

#include <cstdint>
#include <stdexcept>
#include <vector>

#include "checkpoint/gguf/gguf_sources.h"
#include "minifloat/gguf_model.h"

namespace mf::io {
namespace {

std::vector<std::uint8_t> bytes_of(const std::vector<std::byte>& b) {
  std::vector<std::uint8_t> out;
  for (std::byte x : b) out.push_back(static_cast<std::uint8_t>(x));
  return out;
}

// One row of 64 values whose code is its index mod 16, packed two per byte (element 2i low): each 16-value
// sub-block then holds codes 0..15, and block_nvfp4 stores per sub-block the bytes b | (b + 8) << 4, b = 0..7,
// after the four scale bytes.
TEST(GgufSources, Nvfp4BlockLayoutIsGgmls) {
  std::vector<std::uint8_t> codes(32);
  for (int i = 0; i < 32; ++i) codes[i] = static_cast<std::uint8_t>((2 * i) % 16 | ((2 * i + 1) % 16) << 4);
  const std::vector<std::uint8_t> scales{0x38, 0x40, 0x01, 0x7E};
  const std::vector<std::uint8_t> got = bytes_of(detail::nvfp4_blocks(codes, scales, 64));
  ASSERT_EQ(got.size(), 36u);
  EXPECT_EQ(std::vector<std::uint8_t>(got.begin(), got.begin() + 4), scales);
  for (int j = 0; j < 4; ++j) {
    for (int b = 0; b < 8; ++b) EXPECT_EQ(got[4 + j * 8 + b], b | (b + 8) << 4) << j << " " << b;
  }
}

TEST(GgufSources, Nvfp4WhatGgmlCannotHoldIsRefused) {
  const std::vector<std::uint8_t> codes(24), scales(3, 0x38);
  EXPECT_THROW(detail::nvfp4_blocks(codes, scales, 48), std::invalid_argument);  // not whole 64-value blocks
  std::vector<std::uint8_t> c(32), s{0x38, 0xB8, 0x38, 0x38};                    // -1.0: a sign
  EXPECT_THROW(detail::nvfp4_blocks(c, s, 64), std::invalid_argument);
  s[1] = 0x7F;  // E4M3's NaN, which ggml reads as 0
  EXPECT_THROW(detail::nvfp4_blocks(c, s, 64), std::invalid_argument);
}

// Q4_0: f16 d, then byte i = (u[i] + 8) | (u[i + 16] + 8) << 4. u = -8..7 twice, d = 0.5 (f16 0x3800).
TEST(GgufSources, IntegerCodesAsQ4_0) {
  std::vector<float> u(32), x(32);
  for (int i = 0; i < 32; ++i) u[i] = static_cast<float>(i % 16 - 8), x[i] = u[i] * 0.5f;
  const auto got = detail::integer_blocks(GgufType::Q4_0, u, x);
  ASSERT_TRUE(got);
  const std::vector<std::uint8_t> b = bytes_of(*got);
  ASSERT_EQ(b.size(), 18u);
  EXPECT_EQ(b[0], 0x00);
  EXPECT_EQ(b[1], 0x38);
  for (int i = 0; i < 16; ++i) EXPECT_EQ(b[2 + i], i | i << 4) << i;
  EXPECT_FALSE(detail::integer_blocks(GgufType::Q4_1, std::vector<float>(31), std::vector<float>(31)));
}

// Q4_1: f16 d, f16 m, then nibbles q = u - min(u). u = 3..18 twice, d = 0.25 (0x3400), m = 3 x 0.25 (0x3A00).
TEST(GgufSources, IntegerCodesAsQ4_1) {
  std::vector<float> u(32), x(32);
  for (int i = 0; i < 32; ++i) u[i] = static_cast<float>(3 + i % 16), x[i] = u[i] * 0.25f;
  EXPECT_FALSE(detail::integer_blocks(GgufType::Q4_0, u, x));  // 18 is no Q4_0 code
  const auto got = detail::integer_blocks(GgufType::Q4_1, u, x);
  ASSERT_TRUE(got);
  const std::vector<std::uint8_t> b = bytes_of(*got);
  ASSERT_EQ(b.size(), 20u);
  EXPECT_EQ(b[1], 0x34);
  EXPECT_EQ(b[3], 0x3A);
  for (int i = 0; i < 16; ++i) EXPECT_EQ(b[4 + i], i | i << 4) << i;
}

// Q8_0: f16 d, then int8 u. u = -16..15, d = 2 (0x4000).
TEST(GgufSources, IntegerCodesAsQ8_0) {
  std::vector<float> u(32), x(32);
  for (int i = 0; i < 32; ++i) u[i] = static_cast<float>(i - 16), x[i] = u[i] * 2;
  const auto got = detail::integer_blocks(GgufType::Q8_0, u, x);
  ASSERT_TRUE(got);
  const std::vector<std::uint8_t> b = bytes_of(*got);
  EXPECT_EQ(b[1], 0x40);
  for (int i = 0; i < 32; ++i) EXPECT_EQ(static_cast<std::int8_t>(b[2 + i]), i - 16) << i;
}

// Two scales in one block of 32 (a group of 16), or a scale f16 does not hold: no exact form.
TEST(GgufSources, IntegerBlocksWithoutAnExactFormAreNone) {
  std::vector<float> u(32), x(32);
  for (int i = 0; i < 32; ++i) u[i] = static_cast<float>(i % 8 - 4), x[i] = u[i] * (i < 16 ? 0.5f : 0.75f);
  for (GgufType t : {GgufType::Q4_0, GgufType::Q4_1, GgufType::Q8_0}) EXPECT_FALSE(detail::integer_blocks(t, u, x));
  for (int i = 0; i < 32; ++i) x[i] = u[i] * 1e-9f;  // below f16's smallest subnormal
  for (GgufType t : {GgufType::Q4_0, GgufType::Q4_1, GgufType::Q8_0}) EXPECT_FALSE(detail::integer_blocks(t, u, x));
  for (int i = 0; i < 32; ++i) x[i] = u[i] * (1 + 0x1p-20f);  // 21 significant bits: not an f16
  for (GgufType t : {GgufType::Q4_0, GgufType::Q4_1, GgufType::Q8_0}) EXPECT_FALSE(detail::integer_blocks(t, u, x));
}

// The flags choose among a type recipe's encodings: with an MXFP4 recipe they are refused before anything is read.
TEST(GgufSources, FlagsGoWithTypeRecipes) {
  for (const bool keep : {false, true}) {
    GgufRecipe r = gguf_recipe("mxfp4");
    r.fp8_as_q8 = !keep;
    r.keep_quantized = keep;
    EXPECT_THROW(convert_to_gguf("no-such-checkpoint", "out.gguf", r), std::invalid_argument);
  }
}

}  // namespace
}  // namespace mf::io
