// NVFP4 with UE5M3 block scales (scheme nvfp4-ue5m3, and the one-level custom spelling e2m1-1x16-ue5m3), worked by
// hand. Every scale below comes from UE5M3's definition (docs/formats.md; PTX ISA 13.4's ue5m3): code = EEEEE MMM,
// value 2^(E-15) x (1 + M/8) for E >= 1, M x 2^-17 for E = 0, 0xFE = 114688 the largest, 0xFF the only NaN. The rule
// is TransformerEngine#3325's: tensor scale = tensor amax / (114688 x 6), block scale = UE5M3(RN(amax / 6 / tensor
// scale)), saturated (satfinite); e2m1 elements RNE, saturated to +-6: 0 0.5 1 1.5 2 3 4 6 = codes 0..7, sign 0x8.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "minifloat/codec.h"
#include "minifloat/quantize.h"
#include "minifloat/scale.h"
#include "minifloat/scheme.h"

namespace {

using Shape = std::vector<std::int64_t>;

mf::QuantizeOptions unpacked() {
  mf::QuantizeOptions o;
  o.layout = mf::Layout::unpacked;
  return o;
}

// One 16-value block whose first value is `amax` and the rest `rest`.
std::vector<float> block(float amax, float rest = 0.0f) {
  std::vector<float> x(16, rest);
  x[0] = amax;
  return x;
}

TEST(Nvfp4Ue5m3, SchemeAndTensorScale) {
  const mf::Scheme s = mf::scheme_named("nvfp4-ue5m3");
  EXPECT_EQ(s.element.format, &mf::e2m1);
  EXPECT_EQ(s.block_rows, 1);
  EXPECT_EQ(s.block_cols, 16);
  EXPECT_EQ(*s.scale_format, mf::ue5m3);
  EXPECT_EQ(s.rule, mf::ScaleRule::e4m3);
  EXPECT_TRUE(s.tensor_scale);
  EXPECT_EQ(s.bits_per_value(), 4.5);
  // The one-level spelling (AutoRound's and vLLM's plugins quantize this way: amax / 6 to UE5M3, no tensor scale).
  const mf::Scheme one = mf::scheme_named("e2m1-1x16-ue5m3");
  EXPECT_EQ(one.name, "e2m1-1x16-ue5m3-e4m3");
  EXPECT_FALSE(one.tensor_scale);
  // 114688 x 6 = 688128 = 10.5 x 2^16: a tensor amax of 10.5 gives the tensor scale 2^-16 exactly.
  EXPECT_EQ(mf::tensor_scale_for(s, 10.5f), 0x1p-16f);
  EXPECT_EQ(mf::tensor_scale_for(s, 0.0f), 1.0f);
  // 4/6 stays NVFP4's (TransformerEngine#3325 refuses 4over6 with UE5M3 scales); scales that are not 8-bit minifloats
  // are refused by name.
  EXPECT_THROW((void)mf::with_rule(s, mf::ScaleRule::four_over_six), std::invalid_argument);
  EXPECT_THROW((void)mf::scheme_named("e2m1-1x16-e5m2"), std::invalid_argument);
}

struct ScaleCase {
  float amax;          // the block's amax; ideal = amax / 6 (one-level scheme)
  std::uint32_t code;  // UE5M3 by hand
  float scale;         // its value
  const char* why;
};

// The one-level scheme e2m1-1x16-ue5m3: ideal = amax / 6 exactly for these amax, so each row is UE5M3's RNE.
TEST(Nvfp4Ue5m3, ScaleSelectionAtBoundaries) {
  const ScaleCase cases[] = {
      {6.0f, 0x78, 1.0f, "1 = 2^0: E 15, M 0"},
      {6.375f, 0x78, 1.0f, "1.0625: the midpoint of 1 (0x78) and 1.125 (0x79), ties to the even 0x78"},
      {6.375f + 0x1p-19f, 0x79, 1.125f, "just above that midpoint"},
      {7.125f, 0x7A, 1.25f, "1.1875: the midpoint of 1.125 (0x79) and 1.25 (0x7A), ties to the even 0x7A"},
      {6.0f * 1.75f, 0x7E, 1.75f, "1.75: M 6"},
      {6.0f * 1.9375f, 0x80, 2.0f, "1.9375: the midpoint of 1.875 (0x7F) and 2 (0x80): the mantissa carries into E"},
      {6.0f * 65536.0f, 0xF8, 65536.0f, "2^16: the top binade, E 31, finite (no Inf in UE5M3)"},
      {6.0f * 114688.0f, 0xFE, 114688.0f, "114688 = 1.75 x 2^16: the largest"},
      {6.0f * 118784.0f, 0xFE, 114688.0f, "118784: half way to 122880 (0xFF would be): saturated, not NaN"},
      {6.0f * 120000.0f, 0xFE, 114688.0f, "above the largest: saturated to 0xFE"},
      {6.0f * 0x1p-14f, 0x08, 0x1p-14f, "2^-14: the least normal"},
      {6.0f * 7.5f * 0x1p-17f, 0x08, 0x1p-14f, "7.5 x 2^-17: the midpoint of 0x07 and 0x08, ties to the even 0x08"},
      {6.0f * 7.0f * 0x1p-17f, 0x07, 7.0f * 0x1p-17f, "7 x 2^-17: the largest subnormal"},
      {6.0f * 3.0f * 0x1p-17f, 0x03, 3.0f * 0x1p-17f, "3 x 2^-17: subnormal"},
      {6.0f * 0x1p-17f, 0x01, 0x1p-17f, "2^-17: the least subnormal"},
      {6.0f * 0.75f * 0x1p-17f, 0x01, 0x1p-17f, "0.75 x 2^-17 rounds up to 2^-17"},
      {6.0f * 0x1p-18f, 0x00, 0.0f, "2^-18: the midpoint of 0 and 2^-17, ties to the even 0x00"},
  };
  const mf::Scheme s = mf::scheme_named("e2m1-1x16-ue5m3");
  for (const ScaleCase& c : cases) {
    const std::vector<float> x = block(c.amax, c.amax / 3.0f);
    const mf::QuantizedTensor q = mf::quantize(x.data(), Shape{16}, s, unpacked());
    ASSERT_EQ(q.scales.size(), 1u);
    EXPECT_EQ(q.scales[0], c.code) << c.why;
    EXPECT_EQ(mf::scale_divisor(s, c.code, 1.0f), c.scale) << c.why;
    EXPECT_EQ(mf::ref::quantize(x.data(), Shape{16}, s, unpacked()).scales[0], c.code) << c.why;
  }
}

// Six blocks of nvfp4-ue5m3 with tensor amax 10.5, so the tensor scale is 2^-16 and a block's ideal is amax / 6 x 2^16.
//   block 0: 10.5, -5.25, 0.875, 0.4375, -0.0.  ideal 114688 = 0xFE, divisor 114688 x 2^-16 = 1.75:
//            10.5 / 1.75 = 6 (0x7), -5.25 / 1.75 = -3 (0xD), 0.875 / 1.75 = 0.5 (0x1), 0.4375 / 1.75 = 0.25, the
//            midpoint of 0 and 0.5, ties to 0 (0x0), -0 keeps its sign (0x8).
//   block 1: 6, 1.25.  ideal 2^16 = 0xF8, divisor 1: 1.25, the midpoint of 1 and 1.5, ties to 1 (0x2).
//   block 2: 6 x 2^-30, 2^-30.  ideal 2^-14 = 0x08 (least normal), divisor 2^-30: codes 0x7 and 1 (0x2).
//   block 3: 6 x 2^-33, -3 x 2^-33.  ideal 2^-17 = 0x01 (least subnormal), divisor 2^-33: 0x7, -3 (0xD).
//   block 4: 6 x 2^-34.  ideal 2^-18 ties to 0x00: divisor 0, every element a signed zero.
//   block 5: zeros and -0: scale 0x00, codes 0x0 and 0x8.
TEST(Nvfp4Ue5m3, BlocksByHand) {
  std::vector<float> x(96, 0.0f);
  x[0] = 10.5f, x[1] = -5.25f, x[2] = 0.875f, x[3] = 0.4375f, x[4] = -0.0f;
  x[16] = 6.0f, x[17] = 1.25f;
  x[32] = 6.0f * 0x1p-30f, x[33] = 0x1p-30f;
  x[48] = 6.0f * 0x1p-33f, x[49] = -3.0f * 0x1p-33f;
  x[64] = 6.0f * 0x1p-34f, x[65] = -0x1p-35f;
  x[81] = -0.0f;
  const mf::Scheme s = mf::scheme_named("nvfp4-ue5m3");
  const mf::QuantizedTensor q = mf::quantize(x.data(), Shape{96}, s, unpacked());
  EXPECT_EQ(q.tensor_scale, 0x1p-16f);
  EXPECT_EQ(q.scales, (std::vector<std::uint8_t>{0xFE, 0xF8, 0x08, 0x01, 0x00, 0x00}));
  std::vector<std::uint8_t> want(96, 0x0);
  want[0] = 0x7, want[1] = 0xD, want[2] = 0x1, want[3] = 0x0, want[4] = 0x8;
  want[16] = 0x7, want[17] = 0x2;
  want[32] = 0x7, want[33] = 0x2;
  want[48] = 0x7, want[49] = 0xD;
  want[64] = 0x0, want[65] = 0x8;
  want[81] = 0x8;
  EXPECT_EQ(q.codes, want);
  EXPECT_EQ(mf::ref::quantize(x.data(), Shape{96}, s, unpacked()).codes, want);

  std::vector<float> back(96);
  mf::dequantize(q, back.data());
  EXPECT_EQ(back[0], 10.5f);
  EXPECT_EQ(back[1], -5.25f);
  EXPECT_EQ(back[2], 0.875f);
  EXPECT_EQ(back[3], 0.0f);
  EXPECT_EQ(back[17], 1.0f);
  EXPECT_EQ(back[32], 6.0f * 0x1p-30f);
  EXPECT_EQ(back[48], 6.0f * 0x1p-33f);
  EXPECT_EQ(back[49], -3.0f * 0x1p-33f);
  EXPECT_EQ(back[64], 0.0f);
  EXPECT_TRUE(std::signbit(back[65]));

  // Plain nvfp4 on the same tensor: tensor scale 10.5 / 2688, so block 3's ideal is 2^-33 x 2688 / 10.5 = 2^-25,
  // below ue4m3's least subnormal 2^-9: that block underflows to 0x00 where UE5M3's range keeps it.
  const mf::QuantizedTensor plain = mf::quantize(x.data(), Shape{96}, mf::scheme_named("nvfp4"), unpacked());
  EXPECT_EQ(plain.scales[3], 0x00);
}

// Overflow: values above the tensor amax a caller passes. ideal 21 / 6 x 2^16 = 229376 > 114688 saturates to 0xFE
// (divisor 1.75) and 21 / 1.75 = 12 saturates to e2m1's 6; 3e38 / 6 x 2^16 is +Inf in f32, also 0xFE.
TEST(Nvfp4Ue5m3, OverflowSaturates) {
  mf::QuantizeOptions o = unpacked();
  o.tensor_amax = 10.5f;
  std::vector<float> x = block(21.0f, 1.75f);
  const std::vector<float> huge = block(3e38f, -1.0f);
  x.insert(x.end(), huge.begin(), huge.end());
  const mf::Scheme s = mf::scheme_named("nvfp4-ue5m3");
  for (const bool fast : {true, false}) {
    const mf::QuantizedTensor q =
        fast ? mf::quantize(x.data(), Shape{32}, s, o) : mf::ref::quantize(x.data(), Shape{32}, s, o);
    EXPECT_EQ(q.tensor_scale, 0x1p-16f);
    EXPECT_EQ(q.scales, (std::vector<std::uint8_t>{0xFE, 0xFE}));
    EXPECT_EQ(q.codes[0], 0x7u);   // 12 -> 6
    EXPECT_EQ(q.codes[1], 0x2u);   // 1.75 / 1.75 = 1
    EXPECT_EQ(q.codes[16], 0x7u);  // 3e38 -> 6
    EXPECT_EQ(q.codes[17], 0x9u);  // -1 / 1.75 = -0.571: nearer -0.5 than -1
  }
}

// A block holding NaN or +-Inf: scale 0xFF (UE5M3's only NaN), codes 0, the block dequantizes to NaN; with
// nonfinite = error quantization fails naming the tensor and the index.
TEST(Nvfp4Ue5m3, NonFiniteBlocks) {
  std::vector<float> x = block(1.0f, 0.5f);
  const std::vector<float> bad = block(std::numeric_limits<float>::quiet_NaN(), 2.0f);
  x.insert(x.end(), bad.begin(), bad.end());
  const std::vector<float> inf = block(-std::numeric_limits<float>::infinity(), 2.0f);
  x.insert(x.end(), inf.begin(), inf.end());
  const mf::Scheme s = mf::scheme_named("nvfp4-ue5m3");
  const mf::QuantizedTensor q = mf::quantize(x.data(), Shape{48}, s, unpacked());
  // The tensor amax is over finite values: 2, so the tensor scale is 2 / 688128 and block 0's ideal 1 / 6 / that =
  // 114688 / 6 x 3 = 57344 = 1.75 x 2^15: 0xF6.
  EXPECT_EQ(q.scales, (std::vector<std::uint8_t>{0xF6, 0xFF, 0xFF}));
  for (int i = 16; i < 48; ++i) EXPECT_EQ(q.codes[static_cast<std::size_t>(i)], 0u) << i;
  std::vector<float> back(48);
  mf::dequantize(q, back.data());
  for (int i = 16; i < 48; ++i) EXPECT_TRUE(std::isnan(back[static_cast<std::size_t>(i)])) << i;

  mf::QuantizeOptions strict = unpacked();
  strict.nonfinite = mf::NonFinite::error;
  strict.tensor_name = "w";
  try {
    (void)mf::quantize(x.data(), Shape{48}, s, strict);
    FAIL() << "no error";
  } catch (const mf::QuantizeError& e) {
    EXPECT_NE(std::string(e.what()).find("tensor 'w': NaN at index 16"), std::string::npos) << e.what();
  }
}

// Round trips: every value that is an e2m1 value times a block's UE5M3 scale times the tensor scale comes back
// exactly, across the whole UE5M3 range (2^-17 .. 114688 relative to the largest block).
TEST(Nvfp4Ue5m3, RoundTripOfRepresentableValues) {
  const float e2m1[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  const mf::Scheme s = mf::scheme_named("nvfp4-ue5m3");
  std::vector<float> x;
  // Block b has scale code b + 1 (0x01 .. 0xFE) and amax 6 x its scale x 2^-16 (tensor amax 10.5: the 0xFE block).
  for (std::uint32_t code = 1; code <= 0xFE; ++code) {
    const float S = mf::decode(mf::ue5m3, code) * 0x1p-16f;
    for (int i = 0; i < 16; ++i) x.push_back((i % 2 ? -1.0f : 1.0f) * (i == 0 ? 6.0f : e2m1[i % 8]) * S);
  }
  const Shape shape{static_cast<std::int64_t>(x.size())};
  const mf::QuantizedTensor q = mf::quantize(x.data(), shape, s);
  EXPECT_EQ(q.tensor_scale, 0x1p-16f);
  for (std::uint32_t code = 1; code <= 0xFE; ++code) EXPECT_EQ(q.scales[code - 1], code);
  std::vector<float> back(x.size());
  mf::dequantize(q, back.data());
  EXPECT_EQ(back, x);
}

}  // namespace
