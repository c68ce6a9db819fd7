// Lossless casts between block schemes (minifloat/lossless_cast.h). Every cast is checked the obvious way: input and
// output dequantized (ref::dequantize) and compared value by value, bit for bit; the cast's own block report is held
// to ref::cast_exactness, which does exactly that. Hand-worked codes for the scale arithmetic (E4M3: bias 7, 3
// mantissa bits, OCP FP8 spec; E8M0: 2^(code - 127), OCP MX v1.0), and DeepSeek's cast_e2m1fn_to_e4m3fn rule
// (inference/convert.py: tile scale = max block scale / 2^6) for MXFP4 -> FP8.
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "minifloat/codec.h"
#include "minifloat/lossless_cast.h"
#include "minifloat/quantize.h"
#include "minifloat/scheme.h"

namespace {

using mf::QuantizedTensor;

// An MXFP4 tensor [rows, cols] with random nibbles and the given scale code for each 1x32 block (row-major).
QuantizedTensor mxfp4(std::int64_t rows, std::int64_t cols, const std::vector<std::uint8_t>& scales,
                      std::uint32_t seed = 1) {
  QuantizedTensor q;
  q.shape = {rows, cols};
  q.scheme = mf::scheme_named("mxfp4");
  q.layout = mf::Layout::packed;
  std::mt19937 rng(seed);
  q.codes.resize(static_cast<std::size_t>(rows * cols / 2));
  for (std::uint8_t& b : q.codes) b = static_cast<std::uint8_t>(rng());
  q.scales = scales;
  q.scale_shape = {rows, (cols + 31) / 32};
  return q;
}

// An FP8 tensor [rows, cols] of `scheme` (tiles with ue8m0 or f32 scales) with random finite codes.
QuantizedTensor fp8(std::int64_t rows, std::int64_t cols, const char* scheme,
                    const std::vector<std::uint32_t>& scales) {
  QuantizedTensor q;
  q.shape = {rows, cols};
  q.scheme = mf::scheme_named(scheme);
  q.layout = mf::Layout::packed;
  std::mt19937 rng(7);
  q.codes.resize(static_cast<std::size_t>(rows * cols));
  for (std::uint8_t& b : q.codes) {
    b = static_cast<std::uint8_t>(rng());
    if ((b & 0x7F) == 0x7F) b = 0x7E;  // no NaN codes
  }
  const bool f32_scales = *q.scheme.scale_format == mf::f32;
  for (const std::uint32_t s : scales) {
    for (int k = 0; k < (f32_scales ? 4 : 1); ++k) q.scales.push_back(static_cast<std::uint8_t>(s >> (8 * k)));
  }
  q.scale_shape = {(rows + q.scheme.block_rows - 1) / q.scheme.block_rows,
                   (cols + q.scheme.block_cols - 1) / q.scheme.block_cols};
  return q;
}

std::vector<float> values(const QuantizedTensor& q) {
  std::vector<float> v(static_cast<std::size_t>(q.count()));
  mf::ref::dequantize(q, v.data());
  return v;
}

// Every value of `out` is the bit pattern of `in`'s, and the cast reported no inexact block.
void expect_bit_exact(const QuantizedTensor& in, const mf::CastResult& r) {
  const std::vector<float> x = values(in), y = values(r.q);
  ASSERT_EQ(x.size(), y.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    ASSERT_EQ(std::bit_cast<std::uint32_t>(x[i]), std::bit_cast<std::uint32_t>(y[i])) << "value " << i;
  }
  EXPECT_EQ(r.report.inexact_blocks, 0);
  EXPECT_EQ(r.report.first_inexact, -1);
}

// The cast's report against the reference's, field by field.
void expect_report_matches_ref(const QuantizedTensor& in, const mf::CastResult& r) {
  const mf::CastReport ref = mf::ref::cast_exactness(in, r.q);
  EXPECT_EQ(r.report.blocks, ref.blocks);
  EXPECT_EQ(r.report.inexact_blocks, ref.inexact_blocks);
  EXPECT_EQ(r.report.first_inexact, ref.first_inexact);
  EXPECT_EQ(r.report.max_abs_error, ref.max_abs_error);
  EXPECT_EQ(r.report.max_rel_error, ref.max_rel_error);
  EXPECT_EQ(r.report.why.empty(), ref.inexact_blocks == 0);
}

TEST(LosslessCast, Mxfp4ToNvfp4HandWorked) {
  // One row of one block, scale 2^3 (code 130), elements 6.0 (nibble 7) and -0.5 (nibble 9) repeated.
  QuantizedTensor in = mxfp4(1, 32, {130});
  for (std::uint8_t& b : in.codes) b = 0x97;
  const mf::CastResult r = mf::lossless_cast(in, mf::scheme_named("nvfp4"));
  // kmax = 3, g = kmax - 8 = -5: tensor scale 2^-5; each half's E4M3 scale 2^(3+5) = 2^8 = 1.0 x 2^(15-7): 0x78.
  EXPECT_EQ(r.q.tensor_scale, 0x1p-5f);
  ASSERT_EQ(r.q.scales.size(), 2u);
  EXPECT_EQ(r.q.scales[0], 0x78);
  EXPECT_EQ(r.q.scales[1], 0x78);
  EXPECT_EQ(r.q.codes, in.codes);  // the same nibbles
  EXPECT_EQ(r.q.scale_shape, (std::vector<std::int64_t>{1, 2}));
  expect_bit_exact(in, r);
}

TEST(LosslessCast, Mxfp4ToNvfp4ExactUpToSeventeenBinades) {
  // Block scales 2^10 .. 2^-7 (codes 137 .. 120): a span of 17 binades, the most E4M3's 2^-9..2^8 holds.
  std::vector<std::uint8_t> scales;
  for (int i = 0; i < 18 * 2; ++i) scales.push_back(static_cast<std::uint8_t>(137 - (i % 18)));
  const QuantizedTensor in = mxfp4(4, 9 * 32, scales);
  const mf::CastResult r = mf::lossless_cast(in, mf::scheme_named("nvfp4"));
  EXPECT_EQ(r.q.tensor_scale, 0x1p2f);  // 2^(10 - 8)
  EXPECT_EQ(r.report.blocks, 4 * 18);
  expect_bit_exact(in, r);
  expect_report_matches_ref(in, r);
}

TEST(LosslessCast, Mxfp4ToNvfp4EighteenBinadesIsInexact) {
  // One block at 2^-8 below a block at 2^10: its scale would be E4M3 2^-10, below the smallest subnormal.
  std::vector<std::uint8_t> scales(8, 130);
  scales[0] = 137;  // 2^10
  scales[5] = 119;  // 2^-8: row 1, block 1
  QuantizedTensor in = mxfp4(2, 128, scales);
  for (std::uint8_t& b : in.codes) b = 0x33;  // 1.5 everywhere: no zero block, no lucky requantization
  const mf::CastResult r = mf::lossless_cast(in, mf::scheme_named("nvfp4"));
  EXPECT_EQ(r.report.blocks, 2 * 8);
  // Output blocks 2 and 3 of row 1 (1x16 halves of input block 1): indices 8 + 2, 8 + 3.
  EXPECT_EQ(r.report.inexact_blocks, 2);
  EXPECT_EQ(r.report.first_inexact, 10);
  EXPECT_NE(r.report.why.find("2^-8"), std::string::npos) << r.report.why;
  EXPECT_GT(r.report.max_abs_error, 0);
  expect_report_matches_ref(in, r);
}

TEST(LosslessCast, Mxfp4ToNvfp4ZeroBlocksDoNotCount) {
  // A zero block's scale (2^-127 from the floor rule) may lie anywhere: its values are zeros either way.
  std::vector<std::uint8_t> scales{140, 0, 140, 0};
  QuantizedTensor in = mxfp4(2, 64, scales);
  for (std::size_t i = 16; i < 32; ++i) in.codes[i] = 0x88;  // block 1: -0 and -0
  for (std::size_t i = 48; i < 64; ++i) in.codes[i] = 0x00;  // block 3: +0
  const mf::CastResult r = mf::lossless_cast(in, mf::scheme_named("nvfp4"));
  expect_bit_exact(in, r);
  expect_report_matches_ref(in, r);
}

TEST(LosslessCast, Mxfp4ToFp8TileHandWorked) {
  // One 128x128 tile of 128 x 4 blocks, all scale 2^5 (code 132), every element 6.0 (nibble 7).
  QuantizedTensor in = mxfp4(128, 128, std::vector<std::uint8_t>(128 * 4, 132));
  for (std::uint8_t& b : in.codes) b = 0x77;
  const mf::CastResult r = mf::lossless_cast(in, mf::scheme_named("fp8-128x128"));
  // DeepSeek: tile scale 2^5 / 2^6 = 2^-1 (E8M0 126); 6 x 2^6 = 384 = 1.5 x 2^8: E4M3 (15 << 3) | 4 = 0x7C.
  ASSERT_EQ(r.q.scales.size(), 1u);
  EXPECT_EQ(r.q.scales[0], 126);
  for (const std::uint8_t c : r.q.codes) ASSERT_EQ(c, 0x7C);
  expect_bit_exact(in, r);
}

TEST(LosslessCast, Mxfp4ToFp8ExactWithinFourteenBinades) {
  // 256 x 256: four tiles; in each, block scales spread over 2^14 (codes 130 .. 116), random nibbles.
  std::vector<std::uint8_t> scales;
  for (int i = 0; i < 256 * 8; ++i) scales.push_back(static_cast<std::uint8_t>(116 + (i * 7) % 15));
  const QuantizedTensor in = mxfp4(256, 256, scales, 3);
  for (const char* to : {"fp8-128x128", "e4m3-128x128-f32", "fp8-32x32", "mxfp8"}) {
    SCOPED_TRACE(to);
    const mf::CastResult r = mf::lossless_cast(in, mf::scheme_named(to));
    expect_bit_exact(in, r);
    expect_report_matches_ref(in, r);
  }
}

TEST(LosslessCast, Mxfp4ToFp8FifteenBinadesRoundsAsDeepSeek) {
  // A block at 2^-15 under a tile maximum of 2^0: 0.5 x 2^(k - s) = 2^-10, half E4M3's smallest subnormal: rounds
  // to 0 (ties to even), as DeepSeek's x.to(float8_e4m3fn) does; 1.0 x 2^-9 stays exact.
  std::vector<std::uint8_t> scales(128 * 4, 127);
  scales[4 * 5 + 2] = 112;  // row 5, block 2
  QuantizedTensor in = mxfp4(128, 128, scales);
  for (std::uint8_t& b : in.codes) b = 0x21;  // 0.5 (even elements), 1.0 (odd elements)
  const mf::CastResult r = mf::lossless_cast(in, mf::scheme_named("fp8-128x128"));
  EXPECT_EQ(r.q.scales[0], 127 - 6);
  EXPECT_EQ(r.report.inexact_blocks, 1);
  EXPECT_EQ(r.report.first_inexact, 0);
  EXPECT_EQ(r.q.codes[5 * 128 + 64], 0x00);  // 0.5 x 2^-15 lost
  EXPECT_EQ(r.q.codes[5 * 128 + 65], 0x01);  // 1.0 x 2^-15 = E4M3 2^-9 x 2^-6
  EXPECT_EQ(r.report.max_rel_error, 1.0);
  expect_report_matches_ref(in, r);
}

TEST(LosslessCast, Fp8TilesToMxfp8) {
  // ue8m0 tiles: the same codes, each 1x32 block with its tile's scale code.
  const QuantizedTensor in = fp8(256, 384, "fp8-128x128", {120, 127, 140, 100, 127, 133});
  const mf::CastResult r = mf::lossless_cast(in, mf::scheme_named("mxfp8"));
  EXPECT_EQ(r.q.codes, in.codes);
  ASSERT_EQ(r.q.scale_shape, (std::vector<std::int64_t>{256, 12}));
  EXPECT_EQ(r.q.scales[0 * 12 + 3], 120);     // row 0, block 3: tile (0, 0)
  EXPECT_EQ(r.q.scales[0 * 12 + 4], 127);     // block 4: tile (0, 1)
  EXPECT_EQ(r.q.scales[200 * 12 + 11], 133);  // row 200, block 11: tile (1, 2)
  expect_bit_exact(in, r);
  expect_report_matches_ref(in, r);
}

TEST(LosslessCast, Fp8F32TilesToMxfp8) {
  // F32 tile scales: powers of two carry over; 0.75 (no power of two) makes its tile's blocks requantized.
  const std::uint32_t half = std::bit_cast<std::uint32_t>(0.5f), three_q = std::bit_cast<std::uint32_t>(0.75f);
  const QuantizedTensor in = fp8(128, 256, "e4m3-128x128-f32", {half, three_q});
  const mf::CastResult r = mf::lossless_cast(in, mf::scheme_named("mxfp8"));
  EXPECT_EQ(r.q.scales[0], 126);
  EXPECT_EQ(r.report.blocks, 128 * 8);
  EXPECT_GT(r.report.inexact_blocks, 0);
  EXPECT_LE(r.report.inexact_blocks, 128 * 4);
  EXPECT_EQ(r.report.first_inexact % 8, 4);  // the first block of the second tile's columns
  EXPECT_NE(r.report.why.find("0.75"), std::string::npos) << r.report.why;
  expect_report_matches_ref(in, r);
}

TEST(LosslessCast, PartialEdgeBlocksAndTiles) {
  // 130 x 48: a partial 1x32 block at each row's end (16 columns), partial 128x128 tiles on both sides (2 rows).
  std::vector<std::uint8_t> scales;
  for (int i = 0; i < 130 * 2; ++i) scales.push_back(static_cast<std::uint8_t>(120 + i % 9));
  const QuantizedTensor in = mxfp4(130, 48, scales, 5);
  for (const char* to : {"nvfp4", "fp8-128x128", "fp8-32x32"}) {
    SCOPED_TRACE(to);
    const mf::CastResult r = mf::lossless_cast(in, mf::scheme_named(to));
    expect_bit_exact(in, r);
    expect_report_matches_ref(in, r);
  }
  const QuantizedTensor tiles = fp8(130, 96, "fp8-128x128", {125, 131});  // 2 x 1 tiles, the second of 2 rows
  const mf::CastResult r = mf::lossless_cast(tiles, mf::scheme_named("mxfp8"));
  EXPECT_EQ(r.q.scales[129 * 3 + 2], 131);
  expect_bit_exact(tiles, r);
}

TEST(LosslessCast, RefusedPairsAndNaNScales) {
  const QuantizedTensor in = mxfp4(1, 32, {127});
  EXPECT_NE(mf::lossless_cast_refusal(mf::scheme_named("nvfp4"), mf::scheme_named("mxfp4")), "");
  EXPECT_EQ(mf::lossless_cast_refusal(mf::scheme_named("mxfp4"), mf::scheme_named("nvfp4")), "");
  try {
    mf::lossless_cast(in, mf::scheme_named("mxfp6-e2m3"), "w");
    FAIL() << "no cast expected";
  } catch (const mf::QuantizeError& e) {
    EXPECT_NE(std::string(e.what()).find("tensor 'w': no lossless cast from mxfp4 to mxfp6-e2m3"), std::string::npos)
        << e.what();
  }
  const QuantizedTensor nan = mxfp4(1, 32, {0xFF});
  EXPECT_THROW(mf::lossless_cast(nan, mf::scheme_named("nvfp4")), mf::QuantizeError);
}

}  // namespace
