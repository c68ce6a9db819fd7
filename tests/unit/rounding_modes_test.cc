// The roundings away_from_zero and nearest_away and the overflow options clamp and nan_outside_range (codec.h),
// against tables worked by hand: ONNX Cast (opset 25) to FLOAT8E8M0 from the operator's text, the same roundings on
// the signed formats, and Transformer Engine's round-up E8M0 conversion from its source.
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <cstdio>
#include <string>

#include "test_util.h"
#include "minifloat/codec.h"
#include "minifloat/format.h"
#include "minifloat/scale.h"
#include "minifloat/scheme.h"

namespace mf::test {
namespace {

float f32_bits(std::uint32_t b) { return std::bit_cast<float>(b); }

::testing::AssertionResult encodes(const Format& f, float x, std::uint32_t expected, const EncodeOptions& o) {
  const std::uint32_t got = encode(f, x, o);
  if (got == expected) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << f.name << " encode f32 " << hex(std::bit_cast<std::uint32_t>(x))
                                       << " rounding " << static_cast<int>(o.rounding) << " overflow "
                                       << static_cast<int>(o.overflow) << ": expected " << hex(expected) << " got "
                                       << hex(got);
}

// ONNX Cast-25, attribute round_mode: "`up`: round to nearest value away from zero, `down`: round to nearest value
// towards zero, `nearest`: round to nearest value and ties round up." Attribute saturate, with the operator's table
// for FLOAT8E8M0: "saturate + up": 0 -> 0 (code 0x00, 2^-127), NaN -> NaN, Inf -> E8M0_MAX, x > E8M0_MAX ->
// E8M0_MAX, x < E8M0_MIN -> E8M0_MIN; "non-saturate + nearest": 0, Inf, x > E8M0_MAX, x < E8M0_MIN -> NaN. Negative
// inputs and -0 are "Unspecified"/"undefined behavior" there; onnxruntime 1.32 gives E8M0_MIN with saturate and NaN
// without (python/tests/test_e8m0_rounding.py checks every row against it), which is what clamp and
// nan_outside_range give. E8M0_MIN = 2^-127 (0x00), E8M0_MAX = 2^127 (0xFE), NaN 0xFF.
constexpr EncodeOptions onnx(Rounding r, bool saturate) {
  return {r, saturate ? Overflow::clamp : Overflow::nan_outside_range, 0};
}
constexpr Rounding kUp = Rounding::away_from_zero, kDown = Rounding::toward_zero, kNearest = Rounding::nearest_away;

struct OnnxRow {
  std::uint32_t x;  // f32 bits
  std::uint8_t up_sat, up, down_sat, down, nearest_sat, nearest;
  const char* why;
};

// Worked from the definitions above: x = 1.m * 2^E is between 2^E (code E + 127) and 2^(E+1); up takes 2^(E+1)
// unless m = 0, down takes 2^E, nearest takes 2^(E+1) from 1.m = 1.5 (the midpoint 1.5 * 2^E, a tie) up. Below
// 2^-126 the neighbours are 2^-127 (0x00) and 2^-126 (0x01), midpoint 1.5 * 2^-127 = f32 0x00600000.
constexpr OnnxRow kOnnxRows[] = {
    {0x3F800000, 0x7F, 0x7F, 0x7F, 0x7F, 0x7F, 0x7F, "1.0 exact"},
    {0x3F800001, 0x80, 0x80, 0x7F, 0x7F, 0x7F, 0x7F, "just above 1"},
    {0x3FBFFFFF, 0x80, 0x80, 0x7F, 0x7F, 0x7F, 0x7F, "just below the midpoint 1.5"},
    {0x3FC00000, 0x80, 0x80, 0x7F, 0x7F, 0x80, 0x80, "1.5: a tie, nearest rounds up"},
    {0x3F400000, 0x7F, 0x7F, 0x7E, 0x7E, 0x7F, 0x7F, "0.75 = 1.5 * 2^-1: a tie"},
    {0x40400000, 0x81, 0x81, 0x80, 0x80, 0x81, 0x81, "3.0 = 1.5 * 2: a tie"},
    {0x7F000000, 0xFE, 0xFE, 0xFE, 0xFE, 0xFE, 0xFE, "2^127 = E8M0_MAX exact"},
    {0x7F000001, 0xFE, 0xFF, 0xFE, 0xFF, 0xFE, 0xFF, "x > E8M0_MAX (every mode, before rounding)"},
    {0x7F7FFFFF, 0xFE, 0xFF, 0xFE, 0xFF, 0xFE, 0xFF, "FLT_MAX > E8M0_MAX"},
    {0x7F800000, 0xFE, 0xFF, 0xFE, 0xFF, 0xFE, 0xFF, "+Inf"},
    {0xFF800000, 0x00, 0xFF, 0x00, 0xFF, 0x00, 0xFF, "-Inf: below E8M0_MIN"},
    {0x7FC00000, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, "NaN"},
    {0xFFC00000, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, "-NaN"},
    {0x7F800001, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, "signalling NaN"},
    {0x00000000, 0x00, 0xFF, 0x00, 0xFF, 0x00, 0xFF, "0: E8M0 has no zero"},
    {0x80000000, 0x00, 0xFF, 0x00, 0xFF, 0x00, 0xFF, "-0"},
    {0xBF800000, 0x00, 0xFF, 0x00, 0xFF, 0x00, 0xFF, "-1: negative"},
    {0x00000001, 0x00, 0xFF, 0x00, 0xFF, 0x00, 0xFF, "2^-149 < E8M0_MIN"},
    {0x003FFFFF, 0x00, 0xFF, 0x00, 0xFF, 0x00, 0xFF, "just below 2^-127"},
    {0x00400000, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, "2^-127 = E8M0_MIN exact"},
    {0x00400001, 0x01, 0x01, 0x00, 0x00, 0x00, 0x00, "just above 2^-127"},
    {0x005FFFFF, 0x01, 0x01, 0x00, 0x00, 0x00, 0x00, "just below 1.5 * 2^-127"},
    {0x00600000, 0x01, 0x01, 0x00, 0x00, 0x01, 0x01, "1.5 * 2^-127: a tie between subnormals"},
    {0x007FFFFF, 0x01, 0x01, 0x00, 0x00, 0x01, 0x01, "largest f32 subnormal"},
    {0x00800000, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, "2^-126"},
    {0x00C00000, 0x02, 0x02, 0x01, 0x01, 0x02, 0x02, "1.5 * 2^-126: a tie"},
};

TEST(OnnxCastE8m0, EveryRoundModeAndSaturateAsTheOperatorDefinesThem) {
  for (const OnnxRow& r : kOnnxRows) {
    SCOPED_TRACE(r.why);
    const float x = f32_bits(r.x);
    EXPECT_TRUE(encodes(ue8m0, x, r.up_sat, onnx(kUp, true)));
    EXPECT_TRUE(encodes(ue8m0, x, r.up, onnx(kUp, false)));
    EXPECT_TRUE(encodes(ue8m0, x, r.down_sat, onnx(kDown, true)));
    EXPECT_TRUE(encodes(ue8m0, x, r.down, onnx(kDown, false)));
    EXPECT_TRUE(encodes(ue8m0, x, r.nearest_sat, onnx(kNearest, true)));
    EXPECT_TRUE(encodes(ue8m0, x, r.nearest, onnx(kNearest, false)));
  }
}

TEST(OnnxCastE8m0, FromF64RoundsOnceOnTheSameRules) {
  // 1 + 2^-40 is above 1 (up: 2^1), though it rounds to 1.0 in f32; 1.5 - 2^-40 is below the tie.
  EXPECT_EQ(encode(ue8m0, 1.0 + 0x1p-40, onnx(kUp, true)), 0x80u);
  EXPECT_EQ(encode(ue8m0, 1.5 - 0x1p-40, onnx(kNearest, true)), 0x7Fu);
  EXPECT_EQ(encode(ue8m0, 0x1p127 * (1 + 0x1p-40), onnx(kDown, false)), 0xFFu);  // above E8M0_MAX
  EXPECT_EQ(encode(ue8m0, 0x1p-127 * (1 - 0x1p-40), onnx(kUp, false)), 0xFFu);   // below E8M0_MIN
}

// The ml_dtypes grid below 2^-126 stays the default's: nearest_even gives 0x01 to everything above 2^-127 there
// (docs/encoding.md); nearest_away rounds to the nearer value.
TEST(OnnxCastE8m0, NearestEvenKeepsMlDtypesGridNearestAwayDoesNot) {
  EXPECT_TRUE(encodes(ue8m0, f32_bits(0x00400001), 0x01, {}));
  EXPECT_TRUE(encodes(ue8m0, f32_bits(0x00400001), 0x00, {Rounding::nearest_away}));
}

// ---- the same roundings on signed formats, on the magnitude ----
// e2m1 values 0, 0.5, 1, 1.5, 2, 3, 4, 6 (codes 0..7, sign 0x8); e4m3 max 448 (0x7E), NaN 0x7F; e5m2 Inf 0x7C.

TEST(AwayFromZero, RoundsTheMagnitudeUpInEveryFormat) {
  const EncodeOptions up{Rounding::away_from_zero};
  EXPECT_TRUE(encodes(e2m1, 1.25f, 0x3, up));                  // between 1 and 1.5
  EXPECT_TRUE(encodes(e2m1, -1.25f, 0xB, up));                 // -1.5: away from zero, not toward +inf
  EXPECT_TRUE(encodes(e2m1, 0.01f, 0x1, up));                  // the smallest subnormal, 0.5
  EXPECT_TRUE(encodes(e2m1, -0.01f, 0x9, up));                 //
  EXPECT_TRUE(encodes(e2m1, 2.0f, 0x4, up));                   // exact
  EXPECT_TRUE(encodes(e2m1, 6.5f, 0x7, up));                   // e2m1 has no NaN or Inf: saturates
  EXPECT_TRUE(encodes(e2m1, 0.0f, 0x0, up));                   //
  EXPECT_TRUE(encodes(e2m1, -0.0f, 0x8, up));                  // the sign of zero kept
  EXPECT_TRUE(encodes(e4m3, f32_bits(0x3F800001), 0x39, up));  // 1 + 2^-23 -> 1.125
  EXPECT_TRUE(encodes(e4m3, 0x1p-20f, 0x01, up));              // -> 2^-9, the smallest subnormal
  EXPECT_TRUE(encodes(e4m3, 440.0f, 0x7E, up));                // -> 448
  EXPECT_TRUE(encodes(e4m3, 448.5f, 0x7F, up));                // past 448: NaN (the format's overflow)
  EXPECT_TRUE(encodes(e4m3, 448.5f, 0x7E, {Rounding::away_from_zero, Overflow::saturate}));
  EXPECT_TRUE(encodes(e5m2, 57345.0f, 0x7C, up));  // past 57344: Inf
  EXPECT_TRUE(encodes(bf16, f32_bits(0x3F800001), 0x3F81, up));
}

TEST(NearestAway, TiesGoAwayFromZeroInEveryFormat) {
  const EncodeOptions na{Rounding::nearest_away};
  EXPECT_TRUE(encodes(e2m1, 1.25f, 0x3, na));    // tie 1 | 1.5: nearest_even gives 1 (0x2)
  EXPECT_TRUE(encodes(e2m1, 1.25f, 0x2, {}));    //
  EXPECT_TRUE(encodes(e2m1, -2.5f, 0xD, na));    // tie 2 | 3 -> -3
  EXPECT_TRUE(encodes(e2m1, 0.25f, 0x1, na));    // tie 0 | 0.5 -> 0.5 (nearest_even: 0)
  EXPECT_TRUE(encodes(e2m1, 5.0f, 0x7, na));     // tie 4 | 6 -> 6 (nearest_even: 4)
  EXPECT_TRUE(encodes(e2m1, 1.2f, 0x2, na));     // not a tie
  EXPECT_TRUE(encodes(e4m3, 464.0f, 0x7F, na));  // tie 448 | 512: away is past 448, NaN (nearest_even keeps 448)
  EXPECT_TRUE(encodes(e4m3, 464.0f, 0x7E, {}));
  EXPECT_TRUE(encodes(e4m3, 1.0625f, 0x39, na));                 // tie 1 | 1.125
  EXPECT_TRUE(encodes(bf16, f32_bits(0x3F808000), 0x3F81, na));  // tie
  EXPECT_EQ(encode(e2m1, 1.25, na), 0x3u);                       // from f64
}

// ---- clamp and nan_outside_range on other formats ----

TEST(RangeOptions, ClampAndNanOutsideRangeOnSignedAndUnsignedFormats) {
  const EncodeOptions clamp{Rounding::nearest_even, Overflow::clamp};
  const EncodeOptions nan{Rounding::nearest_even, Overflow::nan_outside_range};
  EXPECT_TRUE(encodes(e4m3, 1000.0f, 0x7E, clamp));
  EXPECT_TRUE(encodes(e4m3, -f32_bits(0x7F800000), 0xFE, clamp));  // -Inf -> -448
  EXPECT_TRUE(encodes(e4m3, 0.0f, 0x00, clamp));                   // zero is inside the range
  EXPECT_TRUE(encodes(e4m3, 450.0f, 0x7F, nan));  // checked before rounding: 450 > 448 (the default gives 448)
  EXPECT_TRUE(encodes(e4m3, -450.0f, 0xFF, nan));
  EXPECT_TRUE(encodes(e4m3, 448.0f, 0x7E, nan));
  EXPECT_TRUE(encodes(e5m2, f32_bits(0x7F800000), 0x7E, nan));  // Inf -> NaN, not Inf
  EXPECT_TRUE(encodes(e2m1, 7.0f, 0x7, nan));                   // no NaN in e2m1: clamps
  EXPECT_TRUE(encodes(ue4m3, -1.0f, 0x00, clamp));              // below 0: the lowest code
  EXPECT_TRUE(encodes(ue4m3, -1.0f, 0x7F, nan));
  EXPECT_TRUE(encodes(ue4m3, -0.0f, 0x00, nan));  // -0 == 0 is inside
  EXPECT_TRUE(encodes(f32, f32_bits(0x7F800000), 0x7F7FFFFF, clamp));
  EXPECT_TRUE(encodes(f32, f32_bits(0xFF800000), 0xFFC00000, nan));
}

// ---- Transformer Engine's E8M0 conversion ----
// transformer_engine/common/util/ptx.cuh (and utils.cuh before it), float_to_e8m0: on Blackwell the PTX instruction
// cvt.rp.satfinite.ue8m0x2.f32 (round toward +inf, saturate to finite); elsewhere, NaN -> 0xFF, Inf -> 0xFE,
// 0 -> 0x00, otherwise the f32 exponent field, plus one when the mantissa is nonzero, unless the field is 0xFE
// (saturate) or the input is an f32 subnormal no larger than 2^-127 (mantissa <= 0x400000). That is
// away_from_zero with clamp on every non-negative input; the table is worked from those lines.
TEST(TransformerEngineE8m0, RoundUpAsFloatToE8m0Computes) {
  const EncodeOptions te{Rounding::away_from_zero, Overflow::clamp};
  const struct {
    std::uint32_t x;
    std::uint8_t code;
  } rows[] = {
      {0x00000000, 0x00},  // 0
      {0x00000001, 0x00},  // field 0, mantissa 1 <= 0x400000
      {0x00400000, 0x00},  // 2^-127: mantissa 0x400000, kept
      {0x00400001, 0x01},  // field 0, mantissa > 0x400000: + 1
      {0x00800000, 0x01},  // 2^-126, mantissa 0
      {0x3F800000, 0x7F},  // 1.0
      {0x3F800001, 0x80},  // mantissa 1: + 1
      {0x3FFFFFFF, 0x80},  //
      {0x7F000000, 0xFE},  // 2^127
      {0x7F000001, 0xFE},  // field 0xFE: no + 1 (satfinite)
      {0x7F7FFFFF, 0xFE},  //
      {0x7F800000, 0xFE},  // Inf
      {0x7FC00000, 0xFF},  // NaN
  };
  for (const auto& r : rows) EXPECT_TRUE(encodes(ue8m0, f32_bits(r.x), r.code, te));
}

// TE's MXFP8 block scale, quantize_mxfp8.cuh: biased_exponent = float_to_e8m0(amax * max_norm_rcp) with
// max_norm_rcp = float(1.0 / 448) = f32 0x3B124925; elements times exp2f_rcp(biased_exponent) = 2^(127 - e), or 1
// for e = 0. The products below are worked in f32: 448 * 0x3B124925 is within half an ulp of 1 and rounds to 1.0
// (0x7F); 449 * it is 0x3F804925 (0x80); 1.0 * it = 0x3B124925, mantissa nonzero, field 0x76 + 1 = 0x77; f32 0x04600001
// = 448 * 2^-127
// * (1 + 2^-23 / 1.75) times it rounds (f32 subnormal, quantum 2^-149) to 2^-127 exactly: mantissa 0x400000, kept,
// 0x00, where rceil's exact ceil(log2(amax / 448)) = -126 gives 0x01.
TEST(TransformerEngineMxScale, ScaleOfFloatToE8m0OfTheProductAndDivisorOneAtCodeZero) {
  const Scheme te = with_profile(scheme_named("mxfp8"), Profile::te);
  const Scheme rceil = with_rule(scheme_named("mxfp8"), ScaleRule::rceil);  // the exact rule, profile ocp
  EXPECT_EQ(te.rule, ScaleRule::rceil);
  const struct {
    std::uint32_t amax;
    std::uint32_t code;
    float divisor;
  } rows[] = {
      {0x43E00000, 0x7F, 1.0f},      // 448
      {0x43E08000, 0x80, 2.0f},      // 449
      {0x3F800000, 0x77, 0x1p-8f},   // 1.0
      {0x04600001, 0x00, 1.0f},      // just above 448 * 2^-127: rceil gives 0x01
      {0x04600000, 0x00, 1.0f},      // 448 * 2^-127 exactly
      {0x00000000, 0x00, 1.0f},      // zero block
      {0x7F7FFFFF, 0xF7, 0x1p120f},  // FLT_MAX times it: f32 0x7B124924, field 0xF6 + 1
  };
  for (const auto& r : rows) {
    const BlockScale bs = block_scale(te, f32_bits(r.amax), false);
    EXPECT_EQ(bs.code, r.code) << hex(r.amax);
    EXPECT_EQ(bs.divisor, r.divisor) << hex(r.amax);
  }
  EXPECT_EQ(block_scale(rceil, f32_bits(0x04600001), false).code, 0x01u);
  // The elements of a block with scale 0x00 are divided by 1: at most 448 * 2^-127, they become signed zeros.
  const BlockScale zero = block_scale(te, f32_bits(0x04600001), false);
  EXPECT_EQ(element_code(te, -f32_bits(0x04600001), zero), 0x80u);
}

}  // namespace
}  // namespace mf::test
