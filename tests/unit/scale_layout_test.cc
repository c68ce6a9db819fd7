// Scale layouts: golden bytes typed by hand from each layout's documented formula, round trips on every layout, and
// one test per error.
#include "minifloat/scale_layout.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <span>
#include <string>
#include <vector>

namespace mf {
namespace {

using Shape = std::vector<std::int64_t>;

// Word w of little-endian `bytes`, `n` bytes wide.
std::uint32_t word(const std::vector<std::uint8_t>& bytes, std::size_t w, int n) {
  std::uint32_t v = 0;
  for (int k = 0; k < n; ++k) v |= static_cast<std::uint32_t>(bytes[w * n + k]) << (8 * k);
  return v;
}

std::vector<std::uint8_t> random_codes(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::uint8_t> v(n);
  for (auto& c : v) c = static_cast<std::uint8_t>(1 + rng() % 254);  // never the zero padding byte
  return v;
}

TEST(ScaleLayout, NvidiaInt32ByHand) {
  // Two rows of five codes: four per word, code k at bits 8 * (k % 4), the fifth padded with zero codes.
  const std::vector<std::uint8_t> codes{1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  const PackedScales p = pack_scales(codes, Shape{2, 5}, ScaleLayout::nvidia_int32);
  EXPECT_EQ(p.shape, (Shape{2, 2}));
  EXPECT_EQ(p.element_bytes, 4);
  ASSERT_EQ(p.data.size(), 16u);
  EXPECT_EQ(word(p.data, 0, 4), 0x04030201u);
  EXPECT_EQ(word(p.data, 1, 4), 0x00000005u);
  EXPECT_EQ(word(p.data, 2, 4), 0x09080706u);
  EXPECT_EQ(word(p.data, 3, 4), 0x0000000Au);
}

TEST(ScaleLayout, AscendInt16ByHand) {
  const std::vector<std::uint8_t> codes{0x7F, 0x80, 0x81, 0x01, 0x02, 0x03};
  const PackedScales p = pack_scales(codes, Shape{2, 3}, ScaleLayout::ascend_int16);
  EXPECT_EQ(p.shape, (Shape{2, 2}));
  EXPECT_EQ(p.element_bytes, 2);
  ASSERT_EQ(p.data.size(), 8u);
  EXPECT_EQ(word(p.data, 0, 2), 0x807Fu);
  EXPECT_EQ(word(p.data, 1, 2), 0x0081u);
  EXPECT_EQ(word(p.data, 2, 2), 0x0201u);
  EXPECT_EQ(word(p.data, 3, 2), 0x0003u);
}

// docs/spec.md#scale-packing: x [1536, 4096] with a ue8m0 scale per 32 values -> [1536, 128] codes -> [1536, 32] int32
// (NVIDIA) or [1536, 64] int16 (Ascend). Every word checked against the formula, then the round trip.
TEST(ScaleLayout, Seed000Shapes) {
  const Shape codes_shape{1536, 128};
  const std::vector<std::uint8_t> codes = random_codes(1536 * 128, 0);
  const PackedScales n = pack_scales(codes, codes_shape, ScaleLayout::nvidia_int32);
  EXPECT_EQ(n.shape, (Shape{1536, 32}));
  const PackedScales a = pack_scales(codes, codes_shape, ScaleLayout::ascend_int16);
  EXPECT_EQ(a.shape, (Shape{1536, 64}));
  for (std::size_t r = 0; r < 1536; ++r) {
    for (std::size_t j = 0; j < 32; ++j) {
      const std::uint8_t* c = &codes[r * 128 + 4 * j];
      const std::uint32_t want = c[0] | c[1] << 8 | c[2] << 16 | static_cast<std::uint32_t>(c[3]) << 24;
      ASSERT_EQ(word(n.data, r * 32 + j, 4), want) << "row " << r << " word " << j;
    }
    for (std::size_t j = 0; j < 64; ++j) {
      const std::uint8_t* c = &codes[r * 128 + 2 * j];
      ASSERT_EQ(word(a.data, r * 64 + j, 2), static_cast<std::uint32_t>(c[0] | c[1] << 8)) << "row " << r;
    }
  }
  EXPECT_EQ(unpack_scales(n, codes_shape), codes);
  EXPECT_EQ(unpack_scales(a, codes_shape), codes);
}

// DeepGEMM MN-major: 5 rows x 6 codes -> words [2][align(5, 4) = 8], word (j, r) at j * 8 + r; code(r, c) = 0x10 (r+1)
// + c, so word (0, r) reads 0x(r+1)3 (r+1)2 (r+1)1 (r+1)0 and word (1, r) 0x0000 (r+1)5 (r+1)4; rows 5..7 are zero.
TEST(ScaleLayout, DeepGemmByHand) {
  std::vector<std::uint8_t> codes;
  for (int r = 0; r < 5; ++r) {
    for (int c = 0; c < 6; ++c) codes.push_back(static_cast<std::uint8_t>(0x10 * (r + 1) + c));
  }
  const PackedScales p = pack_scales(codes, Shape{5, 6}, ScaleLayout::deepgemm);
  EXPECT_EQ(p.shape, (Shape{2, 8}));
  EXPECT_EQ(p.element_bytes, 4);
  const std::vector<std::uint32_t> want{0x13121110, 0x23222120, 0x33323130, 0x43424140, 0x53525150, 0, 0, 0,
                                        0x1514,     0x2524,     0x3534,     0x4544,     0x5554,     0, 0, 0};
  ASSERT_EQ(p.data.size(), want.size() * 4);
  for (std::size_t w = 0; w < want.size(); ++w) EXPECT_EQ(word(p.data, w, 4), want[w]) << "word " << w;
  EXPECT_EQ(unpack_scales(p, Shape{5, 6}), codes);
}

// cuBLAS 128x4 tiles: offset = 512 * (row band * column tiles + column tile) + (r % 32) * 16 + ((r % 128) / 32) * 4
// + c % 4. Positions typed by hand.
TEST(ScaleLayout, Cublas128x4ByHand) {
  // 2 rows x 5 codes -> padded [128, 8]: two tiles side by side.
  const std::vector<std::uint8_t> codes{1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  const PackedScales p = pack_scales(codes, Shape{2, 5}, ScaleLayout::cublas_128x4);
  EXPECT_EQ(p.shape, (Shape{128, 8}));
  ASSERT_EQ(p.data.size(), 1024u);
  std::vector<std::uint8_t> want(1024, 0);
  want[0] = 1, want[1] = 2, want[2] = 3, want[3] = 4;      // row 0, tile 0
  want[512] = 5;                                           // row 0, code 4: tile 1
  want[16] = 6, want[17] = 7, want[18] = 8, want[19] = 9;  // row 1: (1 % 32) * 16
  want[528] = 10;
  EXPECT_EQ(p.data, want);

  // 130 rows x 1 code -> padded [256, 4]: two row bands; rows 32.. go 4 bytes over, row 128 starts the next tile.
  std::vector<std::uint8_t> col(130);
  for (int r = 0; r < 130; ++r) col[r] = static_cast<std::uint8_t>(r + 1);
  const PackedScales q = pack_scales(col, Shape{130, 1}, ScaleLayout::cublas_128x4);
  EXPECT_EQ(q.shape, (Shape{256, 4}));
  ASSERT_EQ(q.data.size(), 1024u);
  EXPECT_EQ(q.data[0], 1);      // row 0
  EXPECT_EQ(q.data[16], 2);     // row 1
  EXPECT_EQ(q.data[4], 33);     // row 32: (0) * 16 + 1 * 4
  EXPECT_EQ(q.data[20], 34);    // row 33: 16 + 4
  EXPECT_EQ(q.data[8], 65);     // row 64: 2 * 4
  EXPECT_EQ(q.data[508], 128);  // row 127: 31 * 16 + 3 * 4
  EXPECT_EQ(q.data[512], 129);  // row 128: tile 1
  EXPECT_EQ(q.data[528], 130);  // row 129
  EXPECT_EQ(q.data[1], 0);      // column padding
  EXPECT_EQ(unpack_scales(q, Shape{130, 1}), col);
}

TEST(ScaleLayout, RoundTripEveryLayoutAndShape) {
  const std::vector<Shape> shapes{{1}, {7}, {3, 1}, {5, 6}, {129, 9}, {4, 33, 130}, {2, 3, 5}, {0, 4}, {3, 0}};
  for (const std::string& name : scale_layout_names()) {
    const ScaleLayout layout = scale_layout_named(name);
    for (const Shape& s : shapes) {
      std::int64_t n = 1;
      for (auto d : s) n *= d;
      const std::vector<std::uint8_t> codes = random_codes(static_cast<std::size_t>(n), 7);
      const PackedScales p = pack_scales(codes, s, layout);
      EXPECT_EQ(p.shape, packed_scale_shape(layout, s)) << name;
      std::int64_t stored = p.element_bytes;
      for (auto d : p.shape) stored *= d;
      EXPECT_EQ(static_cast<std::int64_t>(p.data.size()), stored) << name;
      EXPECT_EQ(unpack_scales(p, s), codes) << name << " shape rank " << s.size();
    }
  }
}

TEST(ScaleLayout, BatchesPackOneAfterAnother) {
  // [2, 5, 6] codes in the DeepGEMM layout: two [2, 8] word blocks, the second made of the second member's codes.
  const std::vector<std::uint8_t> codes = random_codes(60, 3);
  const PackedScales p = pack_scales(codes, Shape{2, 5, 6}, ScaleLayout::deepgemm);
  EXPECT_EQ(p.shape, (Shape{2, 2, 8}));
  const PackedScales second = pack_scales(std::span(codes).subspan(30), Shape{5, 6}, ScaleLayout::deepgemm);
  EXPECT_TRUE(std::equal(second.data.begin(), second.data.end(), p.data.begin() + 64));
}

TEST(ScaleLayout, Names) {
  EXPECT_EQ(scale_layout_named("nvidia"), ScaleLayout::nvidia_int32);
  EXPECT_EQ(scale_layout_named("ascend"), ScaleLayout::ascend_int16);
  EXPECT_EQ(scale_layout_named("cublas-128x4"), ScaleLayout::cublas_128x4);
  EXPECT_EQ(to_string(ScaleLayout::deepgemm), "deepgemm");
  EXPECT_EQ(scale_layout_element_bytes(ScaleLayout::ascend_int16), 2);
  try {
    scale_layout_named("tpu");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'tpu'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("nvidia-int32"), std::string::npos) << e.what();
  }
}

// docs/spec.md#wrong-scale-dtype: Ascend's [1536, 64] int16 handed to an NVIDIA GEMM.
TEST(ScaleLayoutErrors, PackedForAnotherPlatform) {
  try {
    check_packed_scales(ScaleLayout::nvidia_int32, Shape{1536, 128}, Shape{1536, 64}, 2);
    FAIL();
  } catch (const ScaleLayoutError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("[1536, 64] int16"), std::string::npos) << m;
    EXPECT_NE(m.find("[1536, 128]"), std::string::npos) << m;
    EXPECT_NE(m.find("expected [1536, 32] int32"), std::string::npos) << m;
    EXPECT_NE(m.find("ascend-int16"), std::string::npos) << m;
  }
  EXPECT_NO_THROW(check_packed_scales(ScaleLayout::ascend_int16, Shape{1536, 128}, Shape{1536, 64}, 2));
}

TEST(ScaleLayoutErrors, WrongShapeNamesBoth) {
  try {
    check_packed_scales(ScaleLayout::nvidia_int32, Shape{1536, 128}, Shape{1536, 31}, 4);
    FAIL();
  } catch (const ScaleLayoutError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("[1536, 31] int32"), std::string::npos) << m;
    EXPECT_NE(m.find("expected [1536, 32] int32"), std::string::npos) << m;
    EXPECT_EQ(m.find("another platform"), std::string::npos) << m;
  }
}

TEST(ScaleLayoutErrors, UnpackChecksShapeAndBytes) {
  const std::vector<std::uint8_t> codes = random_codes(10, 1);
  PackedScales p = pack_scales(codes, Shape{2, 5}, ScaleLayout::nvidia_int32);
  EXPECT_THROW(unpack_scales(p, Shape{2, 9}), ScaleLayoutError);  // [2, 3] words expected
  EXPECT_NO_THROW(unpack_scales(p, Shape{2, 8}));                 // 8 codes also pack into [2, 2]
  p.data.pop_back();
  EXPECT_THROW(unpack_scales(p, Shape{2, 5}), ScaleLayoutError);  // a byte short
}

TEST(ScaleLayoutErrors, BadCodeShapes) {
  const std::vector<std::uint8_t> codes(6, 1);
  EXPECT_THROW(pack_scales(codes, Shape{}, ScaleLayout::row_major), ScaleLayoutError);
  EXPECT_THROW(pack_scales(codes, Shape{-2, -3}, ScaleLayout::row_major), ScaleLayoutError);
  EXPECT_THROW(pack_scales(codes, Shape{2, 4}, ScaleLayout::row_major), ScaleLayoutError);  // 8 codes, 6 given
  EXPECT_THROW(packed_scale_shape(ScaleLayout::deepgemm, Shape{std::int64_t{1} << 41, 2}), ScaleLayoutError);
}

}  // namespace
}  // namespace mf
