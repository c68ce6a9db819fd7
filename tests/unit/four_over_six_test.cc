// NVFP4 "4/6" (Four Over Six, arXiv 2512.02010): a block worked by hand from the published reference, and the
// rule's properties (its choice is one of the two candidates, the one with the smaller squared error; never worse
// than the M=6 scale alone), exhaustively over small blocks.
//
// The reference: mit-han-lab/fouroversix, src/fouroversix/quantize/pytorch/reference.py at commit
// 00e70335f0d87aab3b5d1a5c9bf7ade504b7bdb8: compute_nv_scale_factors (encode_scale = 6 * 256 / x_amax, block scale
// = e4m3(amax / 6 * encode_scale), times scale_expansion_factor 1.5 for M=4), fake_quantize_to_e2m1 (torch.round:
// ties to even), select_fouroversix (sum of squared errors, select_4 = err4 < err6 strictly). ModelOpt 0.47.0 agrees
// on the tensor scale (weights_scaling_factor_2 = global_amax / (6 * 256), numeric_utils.E4M3_MAX_46) and on the
// candidates (MSE calibration over amax multipliers 1.0 and 1.5, argmin keeping the first on ties).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "minifloat/codec.h"
#include "minifloat/quantize.h"
#include "minifloat/scale.h"
#include "minifloat/scheme.h"

namespace {

using Shape = std::vector<std::int64_t>;

TEST(FourOverSix, SchemeAndRule) {
  const mf::Scheme s = mf::scheme_named("nvfp4-4over6");
  EXPECT_EQ(s.rule, mf::ScaleRule::four_over_six);
  EXPECT_TRUE(s.tensor_scale);
  EXPECT_EQ(s.block_cols, 16);
  EXPECT_EQ(mf::scale_rule_named("4over6"), mf::ScaleRule::four_over_six);
  EXPECT_EQ(mf::to_string(mf::ScaleRule::four_over_six), "4over6");
  EXPECT_EQ(mf::with_rule(mf::scheme_named("nvfp4"), mf::ScaleRule::four_over_six).rule, mf::ScaleRule::four_over_six);
  // Only NVFP4's element and scale: e4m3 elements or ue8m0 scales have no "4 or 6".
  EXPECT_THROW((void)mf::scheme_named("e4m3-1x16-ue4m3-4over6"), std::invalid_argument);
  EXPECT_THROW((void)mf::scheme_named("e2m1-1x32-ue8m0-4over6"), std::invalid_argument);
  // The tensor scale normalizes to 256, not 448: 6 / (6 * 256) = 2^-8.
  EXPECT_EQ(mf::tensor_scale_for(s, 6.0f), 0x1p-8f);
  EXPECT_EQ(mf::tensor_scale_for(mf::scheme_named("nvfp4"), 6.0f), 6.0f / 2688.0f);
}

// Four blocks of 16, tensor amax 6, so the tensor scale is 6 / 1536 = 2^-8 and a block scale code S means S * 2^-8.
//   block 0: 6, then 15 x 5.  M=6: amax 6 -> 6 / 6 / 2^-8 = 256 = ue4m3 0x78, divisor 1; 5 rounds (tie) to 4, error
//            15 * 1^2 = 15.  M=4: 384 = 0x7C, divisor 1.5; 6 / 1.5 = 4 exact; 5 / 1.5 = 3.33 -> 3 (4.5), error
//            15 * 0.5^2 = 3.75.  -> M=4: scale 0x7C, codes 4 = 0x6 and 3 = 0x5, bytes 0x56 then 7 x 0x55.
//   block 1: 6, then 15 x 3.  M=6: divisor 1, 3 exact, error 0.  M=4: divisor 1.5, 3 / 1.5 = 2 exact, 6 -> 4 exact,
//            error 0.  A tie keeps M=6: scale 0x78, codes 6 = 0x7 and 3 = 0x5, bytes 0x57 then 7 x 0x55.
//   block 2: 3, then 15 x -1.  M=6: 3 / 6 / 2^-8 = 128 = 0x70, divisor 0.5: 3 -> 6, -1 -> -2, error 0.  M=4: 192 =
//            0x74, divisor 0.75: -1 / 0.75 = -1.33 -> -1.5 (-1.125), error 15 / 64.  -> M=6: scale 0x70, codes 0x7
//            and -2 = 0xC, bytes 0xC7 then 7 x 0xCC.
//   block 3: zeros: scale 0x00, codes 0.
TEST(FourOverSix, BlocksByHand) {
  std::vector<float> x(64, 0.0f);
  for (int i = 0; i < 16; ++i) {
    x[i] = i == 0 ? 6.0f : 5.0f;
    x[16 + i] = i == 0 ? 6.0f : 3.0f;
    x[32 + i] = i == 0 ? 3.0f : -1.0f;
  }
  const mf::QuantizedTensor q = mf::quantize(x.data(), Shape{64}, mf::scheme_named("nvfp4-4over6"));
  EXPECT_EQ(q.tensor_scale, 0x1p-8f);
  EXPECT_EQ(q.scales, (std::vector<std::uint8_t>{0x7C, 0x78, 0x70, 0x00}));
  std::vector<std::uint8_t> want(32, 0x00);
  for (int j = 0; j < 8; ++j) {
    want[j] = j == 0 ? 0x56 : 0x55;
    want[8 + j] = j == 0 ? 0x57 : 0x55;
    want[16 + j] = j == 0 ? 0xC7 : 0xCC;
  }
  EXPECT_EQ(q.codes, want);
  std::vector<float> back(64);
  mf::dequantize(q, back.data());
  EXPECT_EQ(back[0], 6.0f);
  EXPECT_EQ(back[1], 4.5f);
  EXPECT_EQ(back[17], 3.0f);
  EXPECT_EQ(back[33], -1.0f);
  // Plain nvfp4 normalizes to 448: ts = 6 / 2688, and block 0 takes 6 / 6 / ts = 448 = 0x7E.
  const mf::QuantizedTensor plain = mf::quantize(x.data(), Shape{64}, mf::scheme_named("nvfp4"));
  EXPECT_EQ(plain.scales[0], 0x7E);
}

// The SIMD entry point runs the scalar reference for this rule: identical bytes on random data, bf16 input too.
TEST(FourOverSix, DispatchMatchesReference) {
  std::mt19937_64 rng(7);
  std::normal_distribution<float> d(0, 1);
  std::vector<float> x(64 * 48);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = d(rng) * std::ldexp(1.0f, static_cast<int>(i / 256) - 6);
  const mf::Scheme s = mf::scheme_named("nvfp4-4over6");
  const mf::QuantizedTensor a = mf::quantize(x.data(), Shape{48, 64}, s);
  const mf::QuantizedTensor b = mf::ref::quantize(x.data(), Shape{48, 64}, s);
  EXPECT_EQ(a.codes, b.codes);
  EXPECT_EQ(a.scales, b.scales);
  EXPECT_EQ(a.tensor_scale, b.tensor_scale);
}

// The squared error of one block's round trip, from the codes and scales alone (decode, then compare).
double block_error(const std::vector<float>& x, const std::vector<std::uint8_t>& codes, std::size_t block,
                   float divisor) {
  double err = 0;
  for (std::size_t i = 16 * block; i < 16 * block + 16; ++i) {
    const std::uint8_t c = i % 2 ? codes[i / 2] >> 4 : codes[i / 2] & 0xF;
    const double e = x[i] - static_cast<double>(mf::decode(mf::e2m1, c)) * divisor;
    err += e * e;
  }
  return err;
}

// The error of a block quantized with ue4m3 scale code `code` under tensor scale ts (elements RNE into e2m1).
double error_with(const float* x, std::uint32_t code, float ts) {
  const float divisor = mf::decode(mf::ue4m3, code) * ts;
  double err = 0;
  for (int i = 0; i < 16; ++i) {
    const float e2m1 = divisor == 0
                           ? 0.0f
                           : mf::decode(mf::e2m1, mf::encode(mf::e2m1, x[i] / divisor,
                                                             {mf::Rounding::nearest_even, mf::Overflow::saturate, 0}));
    const double e = x[i] - static_cast<double>(e2m1) * divisor;
    err += e * e;
  }
  return err;
}

// Exhaustive over small blocks: every block of 16 whose values take two magnitudes a (once) and b (15 times) from
// a grid of 64 magnitudes with both signs. The chosen scale is one of the two candidates, the one with the smaller
// error (M=6 on a tie), and its error is never above the M=6 scale's.
TEST(FourOverSix, ExhaustiveTwoValueBlocks) {
  std::vector<float> grid;
  for (int i = 1; i <= 64; ++i) grid.push_back(static_cast<float>(i) * 0.09375f);
  const mf::Scheme s = mf::scheme_named("nvfp4-4over6");
  std::vector<float> x;
  for (const float a : grid) {
    for (const float b : grid) {
      for (const float sign : {1.0f, -1.0f}) {
        x.push_back(a);
        for (int i = 1; i < 16; ++i) x.push_back(sign * b);
      }
    }
  }
  const auto n = static_cast<std::int64_t>(x.size());
  // One tensor amax for all blocks (the grid's largest value), so every block shares ts = 6 / 1536.
  const mf::QuantizedTensor q = mf::quantize(x.data(), Shape{n}, s);
  const float ts = q.tensor_scale;
  int fours = 0;
  for (std::size_t blk = 0; blk < q.scales.size(); ++blk) {
    const float* bx = x.data() + 16 * blk;
    float amax = 0;
    for (int i = 0; i < 16; ++i) amax = std::max(amax, std::fabs(bx[i]));
    const float ideal = amax / 6.0f / ts;
    const std::uint32_t six = mf::encode(mf::ue4m3, ideal, {mf::Rounding::nearest_even, mf::Overflow::saturate, 0});
    const std::uint32_t four =
        mf::encode(mf::ue4m3, ideal * 1.5f, {mf::Rounding::nearest_even, mf::Overflow::saturate, 0});
    const double e6 = error_with(bx, six, ts), e4 = error_with(bx, four, ts);
    const std::uint32_t want = e4 < e6 ? four : six;
    ASSERT_EQ(q.scales[blk], want) << "block " << blk << " amax " << amax;
    const double got = block_error(x, q.codes, blk, mf::decode(mf::ue4m3, q.scales[blk]) * ts);
    EXPECT_LE(got, e6) << "block " << blk;
    EXPECT_DOUBLE_EQ(got, std::min(e4, e6)) << "block " << blk;
    fours += want == four && four != six;
  }
  EXPECT_GT(fours, 0);  // both choices occur
  EXPECT_LT(fours, static_cast<int>(q.scales.size()));
}

// Random tensors: 4/6's total error is at most that of the same tensor scale with every block at M=6.
TEST(FourOverSix, NeverWorseThanSixPerBlock) {
  std::mt19937_64 rng(11);
  std::student_t_distribution<float> d(3);
  std::vector<float> x(16 * 4096);
  for (float& v : x) v = d(rng);
  const mf::QuantizedTensor q =
      mf::quantize(x.data(), Shape{static_cast<std::int64_t>(x.size())}, mf::scheme_named("nvfp4-4over6"));
  double total46 = 0, total6 = 0;
  for (std::size_t blk = 0; blk < q.scales.size(); ++blk) {
    const float* bx = x.data() + 16 * blk;
    float amax = 0;
    for (int i = 0; i < 16; ++i) amax = std::max(amax, std::fabs(bx[i]));
    const std::uint32_t six =
        mf::encode(mf::ue4m3, amax / 6.0f / q.tensor_scale, {mf::Rounding::nearest_even, mf::Overflow::saturate, 0});
    const double e6 = error_with(bx, six, q.tensor_scale);
    const double e46 = block_error(x, q.codes, blk, mf::decode(mf::ue4m3, q.scales[blk]) * q.tensor_scale);
    ASSERT_LE(e46, e6) << "block " << blk;
    total46 += e46, total6 += e6;
  }
  EXPECT_LT(total46, total6);
}

TEST(FourOverSix, NonFiniteBlock) {
  std::vector<float> x(32, 1.0f);
  x[3] = NAN;
  const mf::QuantizedTensor q = mf::quantize(x.data(), Shape{32}, mf::scheme_named("nvfp4-4over6"));
  EXPECT_EQ(q.scales[0], 0x7F);  // the NaN scale, as nvfp4
  EXPECT_NE(q.scales[1], 0x7F);
  mf::QuantizeOptions o;
  o.nonfinite = mf::NonFinite::error;
  EXPECT_THROW((void)mf::quantize(x.data(), Shape{32}, mf::scheme_named("nvfp4-4over6"), o), mf::QuantizeError);
}

}  // namespace
