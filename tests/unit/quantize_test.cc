// Block quantization against hand-worked expectations, independent of the code under test (docs/spec.md#block-scaling,
// docs/spec.md#schemes):
//   * the outlier demonstration of docs/spec.md#outlier: one outlier in an MXFP4 block zeroes the block's small values;
//   * the scale rules (floor, rceil, even, f32, e4m3) on chosen amax values, with scale codes typed by hand;
//   * zero, -0 and NaN/Inf blocks, the DeepSeek 1e-4 clamp, errors and their messages;
//   * scheme names and custom spellings, bits per value;
//   * DeepSeek's act_quant written out from docs/spec.md#block-scaling against fp8-1x128 with the deepseek profile.
// Packing, layouts, requantize and rotation are in quantize_layout_test.cc; the FP4 experiment
// (docs/spec.md#fp4-experiment) is in quantize_fp4_experiment_test.cc.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "minifloat/codec.h"
#include "minifloat/quantize.h"
#include "minifloat/scale.h"
#include "minifloat/scheme.h"

namespace {

using Shape = std::vector<std::int64_t>;
constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

mf::Scheme scheme(const char* name, mf::Profile p = mf::Profile::ocp) {
  return mf::with_profile(mf::scheme_named(name), p);
}

std::vector<float> dequantized(const mf::QuantizedTensor& q) {
  std::vector<float> out(static_cast<std::size_t>(q.count()));
  mf::dequantize(q, out.data());
  return out;
}

// The scale code chosen for a single block whose amax is `amax` (the other values are smaller).
std::uint32_t scale_code_for(const mf::Scheme& s, float amax) {
  std::vector<float> x(static_cast<std::size_t>(s.block_size()), amax / 3);
  x[1] = -amax;
  const mf::QuantizedTensor q = mf::quantize(x.data(), Shape{s.block_rows, s.block_cols}, s);
  return q.scale_code(0, 0);
}

std::string thrown_message(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(nothing thrown)";
}

// ---- (a) docs/spec.md#outlier: "Add an outlier and see how many small values become 0" ----

TEST(OutlierDemo, OneOutlierZeroesTheSmallValuesOfItsMxfp4Block) {
  // Block A: 1/32, 2/32, ..., 32/32 (0.03125 .. 1.0, exact in f32).
  //   amax = 1 -> floor rule: S = 2^(floor(log2 1) - emax_e2m1) = 2^(0 - 2) = 0.25, ue8m0 code 127 - 2 = 125 (0x7D).
  //   x / S = (i+1)/8 = 0.125, 0.25, 0.375, ...; e2m1 steps near 0 are 0, 0.5, so 0.125 -> 0, 0.25 (a tie) -> 0
  //   (even), 0.375 -> 0.5: exactly 2 of the 32 nonzero values become 0.
  std::vector<float> a(32);
  for (int i = 0; i < 32; ++i) a[i] = static_cast<float>(i + 1) / 32;
  const mf::QuantizedTensor qa = mf::quantize(a.data(), Shape{32}, mf::scheme_named("mxfp4"));
  EXPECT_EQ(qa.scales, std::vector<std::uint8_t>{0x7D});
  const std::vector<float> da = dequantized(qa);
  EXPECT_EQ(std::count(da.begin(), da.end(), 0.0f), 2);
  EXPECT_EQ(da[2], 0.125f);  // 3/32: x / S = 0.375 -> 0.5, times S
  EXPECT_EQ(da[31], 1.0f);   // 32/32: x / S = 4, exact

  // Block B: the same with the last value replaced by an outlier, 100.
  //   amax = 100 -> floor(log2 100) = 6 (64 <= 100 < 128) -> S = 2^(6 - 2) = 16, code 127 + 4 = 131 (0x83).
  //   The small values give x / S <= (31/32) / 16 = 0.06 < 0.25, below half the smallest step: all 31 become 0.
  //   The outlier itself: 100 / 16 = 6.25 saturates to 6 -> 96.
  std::vector<float> b = a;
  b[31] = 100.0f;
  const mf::QuantizedTensor qb = mf::quantize(b.data(), Shape{32}, mf::scheme_named("mxfp4"));
  EXPECT_EQ(qb.scales, std::vector<std::uint8_t>{0x83});
  const std::vector<float> db = dequantized(qb);
  EXPECT_EQ(std::count(db.begin(), db.end(), 0.0f), 31);
  EXPECT_EQ(db[31], 96.0f);

  // "Block scaling limits this damage to one block": B then A in one tensor, A loses only its 2 values.
  std::vector<float> both = b;
  both.insert(both.end(), a.begin(), a.end());
  const std::vector<float> d = dequantized(mf::quantize(both.data(), Shape{64}, mf::scheme_named("mxfp4")));
  EXPECT_EQ(std::vector<float>(d.begin() + 32, d.end()), da);
  EXPECT_EQ(std::count(d.begin(), d.end(), 0.0f), 31 + 2);
}

// ---- (b) scale rules on chosen amax values ----

struct RuleRow {
  const char* scheme;
  float amax;
  std::uint32_t floor, rceil, even;  // ue8m0 codes = exponent + 127
};

// floor: 2^(floor(log2 amax) - emax); rceil: 2^ceil(log2(amax / max)); even: amax's mantissa rounded (RNE) to the
// element's width, then floor. emax/max: e2m1 2/6, e4m3 8/448, e5m2 15/57344, e2m3 2/7.5, e3m2 4/28.
const RuleRow kRuleRows[] = {
    {"mxfp4", 6.0f, 0x7F, 0x7F, 0x7F},       // 6 = 1.5 * 2^2: all three give 2^0
    {"mxfp4", 7.0f, 0x7F, 0x80, 0x80},       // floor 2^0 (7 clips to 6); rceil log2(7/6) = 0.22 -> 2^1;
                                             // even: 1.75 * 4 is a tie between 1.5 and 2 -> 2 (even) -> 8 -> 2^1
    {"mxfp4", 6.5f, 0x7F, 0x80, 0x7F},       // even: 1.625 -> 1.5 -> 6 -> 2^0
    {"mxfp4", 3.0f, 0x7E, 0x7E, 0x7E},       // floor(log2 3) = 1 -> 2^-1; rceil log2(0.5) = -1
    {"mxfp4", 4.0f, 0x7F, 0x7F, 0x7F},       // rceil: log2(4/6) = -0.58 -> 0
    {"mxfp4", 0.1f, 0x79, 0x7A, 0x79},       // floor(-3.32) = -4 -> -6; rceil ceil(log2(0.1/6) = -5.91) = -5
    {"mxfp4", 1.0f, 0x7D, 0x7D, 0x7D},       // floor 0 - 2; rceil ceil(-2.58) = -2
    {"mxfp4", 0x1p-130f, 0x00, 0x00, 0x00},  // f32 subnormal: exponent -132 clamps to -127
    {"mxfp4", std::numeric_limits<float>::max(), 0xFC, 0xFD, 0xFD},  // floor 127 - 2; rceil ceil(125.4); even:
                                                                     // rounds up to 2^128 -> 128 - 2
    {"mxfp8", 448.0f, 0x7F, 0x7F, 0x7F},
    {"mxfp8", 500.0f, 0x7F, 0x80, 0x80},         // even: 500 = 1.953 * 2^8 -> 2.0 * 2^8 -> 2^1
    {"mxfp8", 480.0f, 0x7F, 0x80, 0x7F},         // 480 = 1.875 * 2^8 has 3 mantissa bits already
    {"mxfp8", 1.0f, 0x77, 0x77, 0x77},           // floor 0 - 8 = -8; rceil ceil(-8.81) = -8
    {"mxfp8-e5m2", 65000.0f, 0x7F, 0x80, 0x80},  // floor(log2 65000) = 15; 65000 = 1.98 * 2^15 -> 2.0
    {"mxfp8-e5m2", 1.0f, 0x70, 0x70, 0x70},      // -15; ceil(log2(1/57344) = -15.8) = -15
    {"mxfp6-e2m3", 7.5f, 0x7F, 0x7F, 0x7F},
    {"mxfp6-e2m3", 7.9f, 0x7F, 0x80, 0x80},  // even: 7.9 = 1.975 * 4 -> 2.0 * 4
    {"mxfp6-e3m2", 28.0f, 0x7F, 0x7F, 0x7F},
    {"mxfp6-e3m2", 30.0f, 0x7F, 0x80, 0x80},  // even: 30 = 1.875 * 16, a tie between 1.75 and 2.0 -> 2.0 (even)
};

TEST(ScaleRules, PowerOfTwoRulesGiveTheHandWorkedCodes) {
  for (const RuleRow& r : kRuleRows) {
    const mf::Scheme s = mf::scheme_named(r.scheme);
    EXPECT_EQ(scale_code_for(s, r.amax), r.floor) << r.scheme << " floor, " << r.amax;
    const mf::Scheme rceil = mf::with_rule(s, mf::ScaleRule::rceil), even = mf::with_rule(s, mf::ScaleRule::even);
    EXPECT_EQ(scale_code_for(rceil, r.amax), r.rceil) << r.scheme << " rceil, " << r.amax;
    EXPECT_EQ(scale_code_for(even, r.amax), r.even) << r.scheme << " even, " << r.amax;
  }
}

// The exponent k of S = 2^k each rule asks for, from the definitions with exact comparisons (no log2):
//   floor: 2^(k + emax) <= amax < 2^(k + emax + 1);  rceil: max * 2^(k-1) < amax <= max * 2^k;
//   even: amax rounded to `m` mantissa bits (RNE, by nearbyint on the scaled significand), then floor.
int floor_k(double amax, int emax) {
  int k = -200;
  while (std::ldexp(1.0, k + emax + 1) <= amax) ++k;
  return k;
}
int rceil_k(double amax, double max) {
  int k = -200;
  while (max * std::ldexp(1.0, k) < amax) ++k;
  return k;
}
int even_k(double amax, int m, int emax) {
  int e = 0;
  const double frac = std::frexp(amax, &e);  // amax = frac * 2^e, frac in [0.5, 1)
  return floor_k(std::ldexp(std::nearbyint(std::ldexp(frac, m + 1)), e - m - 1), emax);
}

TEST(ScaleRules, RandomAmaxFollowsTheDefinitions) {
  struct Elem {
    const char* scheme;
    int emax, m;
    double max;
  };
  std::mt19937 rng(11);
  for (const Elem& el : {Elem{"mxfp4", 2, 1, 6}, Elem{"mxfp8", 8, 3, 448}, Elem{"mxfp8-e5m2", 15, 2, 57344},
                         Elem{"mxfp6-e3m2", 4, 2, 28}, Elem{"mxfp6-e2m3", 2, 3, 7.5}}) {
    const mf::Scheme s = mf::scheme_named(el.scheme);
    const mf::Scheme rceil = mf::with_rule(s, mf::ScaleRule::rceil), even = mf::with_rule(s, mf::ScaleRule::even);
    for (int i = 0; i < 300; ++i) {
      // Normal f32 values of moderate range, and max * 2^j or 2^j one ulp either side (where the rules turn).
      const float p = i % 3 == 1 ? static_cast<float>(el.max) * std::ldexp(1.0f, static_cast<int>(rng() % 40) - 20)
                                 : std::ldexp(1.0f, static_cast<int>(rng() % 40) - 20);
      const float amax = i % 3 == 0 ? std::bit_cast<float>((static_cast<std::uint32_t>(rng()) & 0x7FFFFFu) |
                                                           ((100 + static_cast<std::uint32_t>(rng() % 60)) << 23))
                                    : std::nextafter(p, rng() % 2 ? 0.0f : 1e30f);
      const auto code = [](int k) { return static_cast<std::uint32_t>(std::clamp(k, -127, 127) + 127); };
      EXPECT_EQ(scale_code_for(s, amax), code(floor_k(amax, el.emax))) << el.scheme << " floor, " << amax;
      EXPECT_EQ(scale_code_for(rceil, amax), code(rceil_k(amax, el.max))) << el.scheme << " rceil, " << amax;
      EXPECT_EQ(scale_code_for(even, amax), code(even_k(amax, el.m, el.emax))) << el.scheme << " even, " << amax;
    }
  }
}

// mse: the chosen power of two has the least squared error among floor-1 .. rceil+1, computed here with the plain
// codec (RNE, saturating) in double. Ties between candidates may go either way (docs/spec.md does not say).
TEST(ScaleRules, MseChoosesALeastSquaredErrorPowerOfTwo) {
  std::mt19937 rng(12);
  for (const char* name : {"e2m3-1x32-ue8m0-mse", "e2m1-1x32-ue8m0-mse", "e4m3-1x32-ue8m0-mse"}) {
    const mf::Scheme s = mf::scheme_named(name);
    const mf::Format& f = *s.element.format;
    const mf::EncodeOptions sat{mf::Rounding::nearest_even, mf::Overflow::saturate, 0};
    for (int b = 0; b < 200; ++b) {
      std::vector<float> x(32);
      const float spread = std::ldexp(1.0f, static_cast<int>(rng() % 6));  // heavier tails in some blocks
      for (float& v : x) v = std::normal_distribution<float>(0, 1)(rng) * (rng() % 8 == 0 ? spread : 1.0f);
      float amax = 0;
      for (const float v : x) amax = std::max(amax, std::fabs(v));
      const auto error = [&](int k) {
        double e = 0;
        for (const float v : x) {
          const double q = mf::decode(f, mf::encode(f, v / std::ldexp(1.0f, k), sat)) * std::ldexp(1.0, k);
          e += (v - q) * (v - q);
        }
        return e;
      };
      const int lo = floor_k(amax, s.element.emax()) - 1, hi = rceil_k(amax, s.element.max()) + 1;
      double best = INFINITY;
      for (int k = lo; k <= hi; ++k) best = std::min(best, error(k));
      const mf::QuantizedTensor q = mf::quantize(x.data(), Shape{32}, s);
      const int k = static_cast<int>(q.scales[0]) - 127;
      EXPECT_TRUE(k >= lo && k <= hi) << name << ", block " << b << ": k = " << k;
      EXPECT_EQ(error(k), best) << name << ", block " << b << ": k = " << k;
    }
  }
}

TEST(ScaleRules, ElementsSaturateInsteadOfOverflowing) {
  // mxfp8, amax 500: floor keeps S = 1, and 500 > 464 would be NaN in a plain e4m3 cast; here it is 448 (0x7E).
  std::vector<float> x(32, 1.0f);
  x[0] = 500.0f;
  x[1] = -500.0f;
  mf::QuantizedTensor q = mf::quantize(x.data(), Shape{32}, mf::scheme_named("mxfp8"));
  EXPECT_EQ(q.codes[0], 0x7E);
  EXPECT_EQ(q.codes[1], 0xFE);
  // mxfp8-e5m2, amax 65000: S = 1, and 65000 > 61440 would be Inf in a plain cast; here 57344 (0x7B).
  x[0] = 65000.0f;
  x[1] = -65000.0f;
  q = mf::quantize(x.data(), Shape{32}, mf::scheme_named("mxfp8-e5m2"));
  EXPECT_EQ(q.codes[0], 0x7B);
  EXPECT_EQ(q.codes[1], 0xFB);
  // mxfp4, amax 7: S = 1, 7 -> 6 (code 7).
  x[0] = 7.0f;
  x[1] = 1.0f;
  q = mf::quantize(x.data(), Shape{32}, mf::scheme_named("mxfp4"));
  EXPECT_EQ(q.codes[0] & 0xF, 0x7);
}

TEST(ScaleRules, F32ScalesAreAmaxOverMax) {
  const mf::Scheme e4m3_f32 = mf::scheme_named("e4m3-1x128-f32"), int8 = mf::scheme_named("int8-1x32");
  EXPECT_EQ(scale_code_for(e4m3_f32, 1.0f), 0x3B124925u);    // 1/448 = 2^-9 * (1 + 1/7): mantissa 1198372.57 -> RNE
  EXPECT_EQ(scale_code_for(e4m3_f32, 448.0f), 0x3F800000u);  // 1.0
  EXPECT_EQ(scale_code_for(e4m3_f32, 896.0f), 0x40000000u);  // 2.0
  EXPECT_EQ(scale_code_for(int8, 127.0f), 0x3F800000u);
  EXPECT_EQ(scale_code_for(int8, 1.0f), 0x3C010204u);  // 1/127 = 2^-7 * 128/127: mantissa 66052.03 -> 66052
  // int8: +-amax -> +-127 (0x7F / 0x81 two's complement), 0 -> 0.
  std::vector<float> x(32, 0.0f);
  x[0] = 1.0f;
  x[1] = -1.0f;
  const mf::QuantizedTensor q = mf::quantize(x.data(), Shape{32}, int8);
  EXPECT_EQ(q.codes[0], 0x7F);
  EXPECT_EQ(q.codes[1], 0x81);
  EXPECT_EQ(q.codes[2], 0x00);
}

TEST(ScaleRules, Nvfp4TwoLevelScales) {
  const mf::Scheme s = mf::scheme_named("nvfp4");
  // Tensor amax 2688 -> tensor scale 2688 / (448 * 6) = 1. Block 0 (amax 2688): 2688 / 6 / 1 = 448 -> ue4m3 0x7E.
  // Block 1 (amax 10): 10 / 6 = 1.667 -> nearest ue4m3 1.625 (= 1.101b, code 7 << 3 | 5 = 0x3D); its 10 then
  // divides to 6.15 and saturates to 6 (-> 9.75), 5 -> 3.08 -> 3 (-> 4.875).
  std::vector<float> x(32, 0.0f);
  x[0] = 2688.0f;
  x[16] = 10.0f;
  x[17] = 5.0f;
  mf::QuantizedTensor q = mf::quantize(x.data(), Shape{32}, s);
  EXPECT_EQ(q.tensor_scale, 1.0f);
  EXPECT_EQ(q.scales, (std::vector<std::uint8_t>{0x7E, 0x3D}));
  std::vector<float> d = dequantized(q);
  EXPECT_EQ(d[0], 2688.0f);
  EXPECT_EQ(d[16], 9.75f);
  EXPECT_EQ(d[17], 4.875f);
  // Tensor amax 100 -> tensor scale 100 / 2688. Block amax 100: 448 -> 0x7E. Block amax 1: 1 / 6 * 26.88 = 4.48
  // -> nearest ue4m3 4.5 (= 1.001b * 2^2, code (2 + 7) << 3 | 1 = 0x49). A zero block: 0 -> code 0x00, values 0.
  std::vector<float> y(48, 0.0f);
  y[3] = -100.0f;
  y[20] = 1.0f;
  q = mf::quantize(y.data(), Shape{48}, s);
  EXPECT_EQ(q.tensor_scale, 100.0f / 2688.0f);
  EXPECT_EQ(q.scales, (std::vector<std::uint8_t>{0x7E, 0x49, 0x00}));
  d = dequantized(q);
  for (int i = 32; i < 48; ++i) EXPECT_EQ(d[i], 0.0f);
}

// A known tensor amax replaces the pass over the input: 2688 gives tensor scale 1 whatever the data; then the
// block of amax 10 scales as in Nvfp4TwoLevelScales, and the value 5000 above the given amax saturates to 6 * 448.
TEST(ScaleRules, Nvfp4GivenTensorAmax) {
  const mf::Scheme s = mf::scheme_named("nvfp4");
  std::vector<float> x(32, 0.0f);
  x[0] = 5000.0f;
  x[16] = 10.0f;
  mf::QuantizeOptions o;
  o.tensor_amax = 2688.0f;
  for (const bool fast : {true, false}) {
    const mf::QuantizedTensor q =
        fast ? mf::quantize(x.data(), Shape{32}, s, o) : mf::ref::quantize(x.data(), Shape{32}, s, o);
    EXPECT_EQ(q.tensor_scale, 1.0f);
    EXPECT_EQ(q.scales, (std::vector<std::uint8_t>{0x7E, 0x3D}));
    const std::vector<float> d = dequantized(q);
    EXPECT_EQ(d[0], 2688.0f);
    EXPECT_EQ(d[16], 9.75f);
  }
  for (const float bad : {-1.0f, std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()}) {
    o.tensor_amax = bad;
    EXPECT_THROW(mf::quantize(x.data(), Shape{32}, s, o), mf::QuantizeError) << bad;
  }
}

// torchao clamps NVFP4 block scales to 2^-6 (ue4m3 0x08): amax 0.01 gives 0.01 / 6 = 0.00167, which the ocp
// profile rounds onto the subnormal grid (0.00167 * 2^9 = 0.853 -> code 0x01) and torchao lifts to 0x08; an
// all-zero block gets 0x00 and 0x08. The element 0.01 then divides by 2^-6 (0.64 -> e2m1 0.5, code 0x01) or by
// 2^-9 (5.12 -> 6, code 0x07).
TEST(ScaleRules, TorchaoClampsNvfp4ScalesTo2PowMinus6) {
  std::vector<float> x(32, 0.0f);
  x[0] = 0.01f;
  for (const bool fast : {true, false}) {
    const auto quantize = [&](mf::Profile p) {
      const mf::Scheme s = mf::with_profile(mf::scheme_named("fp4-e4m3-16"), p);
      return fast ? mf::quantize(x.data(), Shape{32}, s) : mf::ref::quantize(x.data(), Shape{32}, s);
    };
    const mf::QuantizedTensor ocp = quantize(mf::Profile::ocp), torchao = quantize(mf::Profile::torchao);
    EXPECT_EQ(ocp.scales, (std::vector<std::uint8_t>{0x01, 0x00}));
    EXPECT_EQ(torchao.scales, (std::vector<std::uint8_t>{0x08, 0x08}));
    EXPECT_EQ(ocp.codes[0] & 0xF, 0x07);
    EXPECT_EQ(torchao.codes[0] & 0xF, 0x01);
  }
}

TEST(ZeroBlocks, FloorGivesTheSmallestScaleAndElementsKeepTheirSign) {
  std::vector<float> x(64, 0.0f);
  std::fill(x.begin() + 32, x.end(), -0.0f);
  const mf::QuantizedTensor q = mf::quantize(x.data(), Shape{64}, mf::scheme_named("mxfp4"));
  EXPECT_EQ(q.scales, (std::vector<std::uint8_t>{0x00, 0x00}));  // S = 2^-127
  EXPECT_EQ(q.codes[0], 0x00);
  EXPECT_EQ(q.codes[16], 0x88);  // -0 is e2m1 code 8, two per byte
  const std::vector<float> d = dequantized(q);
  for (int i = 0; i < 64; ++i) {
    EXPECT_EQ(d[i], 0.0f);
    EXPECT_EQ(std::signbit(d[i]), i >= 32) << i;
  }
  EXPECT_EQ(scale_code_for(mf::with_rule(mf::scheme_named("mxfp8"), mf::ScaleRule::even), 0.0f), 0x00u);
  EXPECT_EQ(scale_code_for(mf::scheme_named("fp8-1x128"), 0.0f), 0x00u);  // ocp profile: no clamp
}

TEST(ZeroBlocks, DeepSeekClampsAmaxTo1e4) {
  // ceil(log2(1e-4 / 448)) = ceil(-13.29 - 8.81) = ceil(-22.10) = -22 -> code 127 - 22 = 105 (0x69).
  EXPECT_EQ(scale_code_for(scheme("fp8-1x128", mf::Profile::deepseek), 0.0f), 0x69u);
  EXPECT_EQ(scale_code_for(scheme("fp8-1x128", mf::Profile::deepseek), 1e-6f), 0x69u);
  EXPECT_EQ(scale_code_for(scheme("e4m3-1x128-f32", mf::Profile::deepseek), 0.0f),
            std::bit_cast<std::uint32_t>(1e-4f / 448.0f));  // DeepSeek-V3's default f32 scale, amax clamped
  std::vector<float> x(128, -0.0f);
  const mf::QuantizedTensor q = mf::quantize(x.data(), Shape{128}, scheme("fp8-1x128", mf::Profile::deepseek));
  EXPECT_EQ(q.codes, std::vector<std::uint8_t>(128, 0x80));  // -0 kept
}

TEST(NonFiniteBlocks, ScaleIsNaNAndOnlyThatBlockDequantizesToNaN) {
  struct Case {
    const char* scheme;
    float bad;
    std::uint32_t nan_scale;  // ue8m0 0xFF, ue4m3 0x7F; 0 = any f32 NaN
  };
  for (const Case& c :
       {Case{"mxfp4", kNaN, 0xFF}, Case{"mxfp8", kInf, 0xFF}, Case{"nvfp4", -kInf, 0x7F},
        Case{"fp4-e4m3-16", kNaN, 0x7F}, Case{"e4m3-1x128-f32", -kInf, 0}, Case{"fp8-32x32", kNaN, 0xFF}}) {
    const mf::Scheme s = mf::scheme_named(c.scheme);
    const Shape shape = {s.block_rows, 2 * s.block_cols};
    std::vector<float> x(static_cast<std::size_t>(shape[0] * shape[1]));
    std::mt19937 rng(7);
    for (float& v : x) v = std::normal_distribution<float>(0, 1)(rng);
    std::vector<float> good = x;  // the same tensor with the bad value zeroed: the other block must not change
    x[3] = c.bad;
    good[3] = 0.0f;
    const mf::QuantizedTensor q = mf::quantize(x.data(), shape, s);
    if (c.nan_scale) {
      EXPECT_EQ(q.scale_code(0, 0), c.nan_scale) << c.scheme;
    } else {
      EXPECT_TRUE(std::isnan(std::bit_cast<float>(q.scale_code(0, 0)))) << c.scheme;
    }
    if (s.tensor_scale) {
      EXPECT_TRUE(std::isfinite(q.tensor_scale)) << c.scheme;
    }
    const std::vector<float> d = dequantized(q), dg = dequantized(mf::quantize(good.data(), shape, s));
    for (std::int64_t r = 0; r < shape[0]; ++r) {
      for (std::int64_t col = 0; col < shape[1]; ++col) {
        const std::size_t i = static_cast<std::size_t>(r * shape[1] + col);
        if (col < s.block_cols)
          EXPECT_TRUE(std::isnan(d[i])) << c.scheme << " index " << i;
        else
          EXPECT_EQ(d[i], dg[i]) << c.scheme << " index " << i;
      }
    }
  }
}

TEST(Errors, NonfiniteErrorNamesTheTensorAndIndex) {
  std::vector<float> x(64, 1.0f);
  x[37] = kNaN;
  mf::QuantizeOptions o;
  o.nonfinite = mf::NonFinite::error;
  o.tensor_name = "layers.3.mlp.up_proj";
  const mf::Scheme s = mf::scheme_named("mxfp4");
  const std::string msg = thrown_message([&] { (void)mf::quantize(x.data(), Shape{2, 32}, s, o); });
  EXPECT_THROW((void)mf::quantize(x.data(), Shape{2, 32}, s, o), mf::QuantizeError);
  EXPECT_NE(msg.find("layers.3.mlp.up_proj"), std::string::npos) << msg;
  EXPECT_NE(msg.find("37"), std::string::npos) << msg;
  x[37] = -kInf;
  EXPECT_THROW((void)mf::ref::quantize(x.data(), Shape{2, 32}, mf::scheme_named("mxfp8"), o), mf::QuantizeError);
}

TEST(Errors, ShapesThatDoNotBlockNameTheDimensionAndMentionPad) {
  std::vector<float> x(200 * 128, 1.0f);
  std::string msg = thrown_message([&] { (void)mf::quantize(x.data(), Shape{2, 33}, mf::scheme_named("mxfp4")); });
  EXPECT_NE(msg.find("last dimension"), std::string::npos) << msg;
  EXPECT_NE(msg.find("33"), std::string::npos) << msg;
  EXPECT_NE(msg.find("--pad"), std::string::npos) << msg;
  EXPECT_THROW((void)mf::quantize(x.data(), Shape{2, 33}, mf::scheme_named("mxfp4")), mf::QuantizeError);
  msg = thrown_message([&] { (void)mf::quantize(x.data(), Shape{200, 128}, mf::scheme_named("fp8-128x128")); });
  EXPECT_NE(msg.find("rows"), std::string::npos) << msg;
  EXPECT_NE(msg.find("200"), std::string::npos) << msg;
  EXPECT_NE(msg.find("--pad"), std::string::npos) << msg;
  // With pad the partial blocks quantize, scaled over their valid elements only.
  mf::QuantizeOptions pad;
  pad.pad = true;
  x[32] = 6.0f;  // row 0's partial block is x[32] = 6 alone -> S = 1 (0x7F); row 1's is x[65] = 1 alone
  const mf::QuantizedTensor q = mf::quantize(x.data(), Shape{2, 33}, mf::scheme_named("mxfp4"), pad);
  EXPECT_EQ(q.scale_shape, (Shape{2, 2}));
  EXPECT_EQ(q.scale_code(0, 1), 0x7Fu);
  EXPECT_EQ(q.scale_code(1, 1), 0x7Du);  // amax 1 -> 2^-2
}

TEST(Errors, UnknownNamesAreInvalidArgumentsNamingThem) {
  // The last: a block of 2^40 values would overflow the block size.
  for (const char* bad : {"mxfp5", "nvfp8", "", "e2m1-1x32-", "e2m1-x32", "e2m1-1048576x1048576"}) {
    EXPECT_THROW((void)mf::scheme_named(bad), std::invalid_argument) << bad;
  }
  EXPECT_NE(thrown_message([] { (void)mf::scheme_named("mxfp5"); }).find("mxfp5"), std::string::npos);
  EXPECT_THROW((void)mf::scale_rule_named("ceil"), std::invalid_argument);
  EXPECT_NE(thrown_message([] { (void)mf::scale_rule_named("ceil"); }).find("ceil"), std::string::npos);
  EXPECT_THROW((void)mf::profile_named("nvidia"), std::invalid_argument);
  EXPECT_NE(thrown_message([] { (void)mf::profile_named("nvidia"); }).find("nvidia"), std::string::npos);
  EXPECT_THROW((void)mf::layout_named("tiled"), std::invalid_argument);
  EXPECT_NE(thrown_message([] { (void)mf::layout_named("tiled"); }).find("tiled"), std::string::npos);
  EXPECT_EQ(mf::profile_named("deepseek"), mf::Profile::deepseek);
  EXPECT_EQ(mf::scale_rule_named("rceil"), mf::ScaleRule::rceil);
  EXPECT_EQ(mf::layout_named("ggml"), mf::Layout::ggml);
  // Pairs that make no sense: ggml is MXFP4 only; rule f32 needs an f32 scale.
  EXPECT_THROW((void)mf::with_profile(mf::scheme_named("nvfp4"), mf::Profile::ggml), std::invalid_argument);
  EXPECT_THROW((void)mf::with_rule(mf::scheme_named("mxfp4"), mf::ScaleRule::f32), std::invalid_argument);
}

TEST(Schemes, CustomSpellingsParse) {
  mf::Scheme s = mf::scheme_named("e2m1-1x32-ue8m0-rceil");
  ASSERT_FALSE(s.element.is_int());
  EXPECT_EQ(*s.element.format, mf::e2m1);
  EXPECT_EQ(s.block_rows, 1);
  EXPECT_EQ(s.block_cols, 32);
  EXPECT_EQ(*s.scale_format, mf::ue8m0);
  EXPECT_EQ(s.rule, mf::ScaleRule::rceil);
  EXPECT_FALSE(s.tensor_scale);
  EXPECT_EQ(s.name, "e2m1-1x32-ue8m0-rceil");

  s = mf::scheme_named("int4-1x128");  // integers default to an f32 scale, amax / 7
  EXPECT_TRUE(s.element.is_int());
  EXPECT_EQ(s.element.bits(), 4);
  EXPECT_EQ(s.element.max(), 7.0f);
  EXPECT_EQ(s.block_cols, 128);
  EXPECT_EQ(*s.scale_format, mf::f32);
  EXPECT_EQ(s.rule, mf::ScaleRule::f32);

  s = mf::scheme_named("e4m3-128x128-f32");
  EXPECT_EQ(s.block_rows, 128);
  EXPECT_EQ(s.rule, mf::ScaleRule::f32);
  EXPECT_EQ(mf::scheme_named("e2m1-1x16-ue4m3").rule, mf::ScaleRule::e4m3);
  EXPECT_EQ(mf::scheme_named("e2m1-1x16-ue5m3").rule, mf::ScaleRule::e4m3);  // nvfp4-ue5m3's scale, one level
  EXPECT_EQ(mf::scheme_named("e3m2-1x32").rule, mf::ScaleRule::floor);       // ue8m0 by default

  for (const char* bad :
       {"e2m1", "e2m1-32", "e2m1-1x0", "e2m1-0x32", "e2m1-1xabc", "e2m1--1x32", "e9m9-1x32", "bf16-1x32", "ue8m0-1x32",
        "int3-1x32", "e2m1-1x32-e5m2", "e2m1-1x32-ue8m0-ceil", "e2m1-1x32-ue8m0-f32", "e2m1-1x32-ue8m0-rceil-x",
        "int8-1x32-ue8m0-floor", "e2m1-1x16-ue5m3-4over6", "e2m1-1x32-f32-e4m3",
        // signed 8-bit formats that are no scheme's element (fnuz's -0 code is its NaN)
        "e4m3fnuz-1x32", "e5m2fnuz-1x32", "e4m3b11fnuz-1x32", "e3m4-1x32", "e4m3ieee-1x32"}) {
    EXPECT_THROW((void)mf::scheme_named(bad), std::invalid_argument) << bad;
  }
}

TEST(Schemes, NamedSchemesAndBitsPerValue) {
  const std::vector<std::string> names = mf::scheme_names();
  for (const char* n : {"mxfp8", "mxfp8-e5m2", "mxfp6-e3m2", "mxfp6-e2m3", "mxfp4", "nvfp4", "fp4-e4m3-16", "fp8-1x128",
                        "fp8-128x128", "fp8-32x32"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), n), names.end()) << n;
  }
  EXPECT_DOUBLE_EQ(mf::scheme_named("mxfp4").bits_per_value(), 4.25);
  EXPECT_DOUBLE_EQ(mf::scheme_named("nvfp4").bits_per_value(), 4.5);
  EXPECT_DOUBLE_EQ(mf::scheme_named("mxfp8").bits_per_value(), 8.25);
  EXPECT_DOUBLE_EQ(mf::scheme_named("mxfp6-e2m3").bits_per_value(), 6.25);
  EXPECT_DOUBLE_EQ(mf::scheme_named("fp8-1x128").bits_per_value(), 8.0625);
  EXPECT_NEAR(mf::scheme_named("fp8-128x128").bits_per_value(), 8.0005, 1e-4);  // 8 + 8 / 16384
  EXPECT_NEAR(mf::scheme_named("fp8-32x32").bits_per_value(), 8.008, 1e-3);
  EXPECT_TRUE(mf::scheme_named("nvfp4").tensor_scale);
  EXPECT_FALSE(mf::scheme_named("fp4-e4m3-16").tensor_scale);
  // Bytes per block (docs/spec.md#schemes): mxfp4 17, nvfp4 9 (+ the 4-byte tensor scale), fp8-128x128 16385.
  std::vector<float> x(128 * 128, 1.0f);
  EXPECT_EQ(mf::quantize(x.data(), Shape{32}, mf::scheme_named("mxfp4")).nbytes(), 17u);
  EXPECT_EQ(mf::quantize(x.data(), Shape{16}, mf::scheme_named("nvfp4")).nbytes(), 9u + 4u);
  EXPECT_EQ(mf::quantize(x.data(), Shape{32}, mf::scheme_named("mxfp6-e3m2")).nbytes(), 25u);
  EXPECT_EQ(mf::quantize(x.data(), Shape{128, 128}, mf::scheme_named("fp8-128x128")).nbytes(), 16385u);
}

// ---- (c) DeepSeek act_quant (inference/kernel.py, scale_fmt ue8m0) from docs/spec.md#block-scaling ----

struct ActQuant {
  std::vector<std::uint8_t> codes;
  std::vector<std::uint8_t> scales;  // ue8m0 codes
};

// fast_log2_ceil: the exponent field of x's f32 bits, plus one when any mantissa bit is set.
int fast_log2_ceil(float x) {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(x);
  return static_cast<int>((bits >> 23) & 0xFF) - 127 + ((bits & 0x7FFFFF) != 0 ? 1 : 0);
}

ActQuant act_quant(const std::vector<float>& x) {
  ActQuant out;
  for (std::size_t g = 0; g < x.size(); g += 128) {
    float amax = 0;
    for (std::size_t i = g; i < g + 128; ++i) amax = std::max(amax, std::fabs(x[i]));  // cols % 128 == 0
    amax = std::max(amax, 1e-4f);
    const int e = fast_log2_ceil(amax / 448.0f);
    // The kernel multiplies by fp8_max_inv = 1/448 in f32 instead: fl(1/448) is 4.5e-8 high, less than the half ulp
    // (6e-8) that could move a quotient across a power of two, so the exponent is the same.
    EXPECT_EQ(e, fast_log2_ceil(amax * (1.0f / 448.0f))) << "amax " << amax;
    const float s = std::ldexp(1.0f, e);
    out.scales.push_back(static_cast<std::uint8_t>(e + 127));
    for (std::size_t i = g; i < g + 128; ++i) {
      const float y = std::clamp(x[i] / s, -448.0f, 448.0f);
      out.codes.push_back(static_cast<std::uint8_t>(mf::encode(mf::e4m3, y)));
    }
  }
  return out;
}

TEST(DeepSeekActQuant, Fp8_1x128WithTheDeepSeekProfileMatchesTheKernel) {
  const int rows = 16, cols = 512;
  std::mt19937 rng(42);
  std::vector<float> x(static_cast<std::size_t>(rows) * cols);
  const float mags[] = {1.0f, 1e-6f, 1e3f, 3e-3f, 1e30f, 448.0f, 0.0f, 1e-20f};
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < cols; ++c) {
      const float v = std::normal_distribution<float>(0, 1)(rng) * mags[r % 8];
      x[static_cast<std::size_t>(r * cols + c)] = mf::decode(mf::bf16, mf::encode(mf::bf16, v));  // bf16 activations
    }
  }
  // Groups whose amax sits on 448 * 2^k, one f32 ulp either side of it, and on the 1e-4 clamp.
  const float edges[] = {448.0f,
                         std::nextafter(448.0f, 0.0f),
                         std::nextafter(448.0f, 1e9f),
                         448.0f * 0x1p-20f,
                         std::nextafter(448.0f * 0x1p7f, 0.0f),
                         1e-4f,
                         std::nextafter(1e-4f, 0.0f),
                         0x1p-14f};
  for (int k = 0; k < 8; ++k) {  // rows 6 and 14 are zeros, so each edge is its group's amax
    x[static_cast<std::size_t>((k < 4 ? 6 : 14) * cols + (k % 4) * 128 + 5)] = (k % 2 ? -1 : 1) * edges[k];
  }
  for (int c = 0; c < 128; ++c) x[static_cast<std::size_t>(2 * cols + c)] = -0.0f;  // a -0 group

  const mf::Scheme s = scheme("fp8-1x128", mf::Profile::deepseek);
  for (const mf::InputType type : {mf::InputType::f32, mf::InputType::bf16}) {
    mf::QuantizedTensor q;
    std::vector<float> input = x;
    if (type == mf::InputType::f32) {
      q = mf::quantize(x.data(), Shape{rows, cols}, s);
    } else {  // the edges are not all bf16 values: the kernel sees them rounded
      std::vector<std::uint16_t> b(x.size());
      for (std::size_t i = 0; i < x.size(); ++i) b[i] = static_cast<std::uint16_t>(mf::encode(mf::bf16, x[i]));
      for (std::size_t i = 0; i < x.size(); ++i) input[i] = mf::decode(mf::bf16, b[i]);
      q = mf::quantize(b.data(), type, Shape{rows, cols}, s);
    }
    const ActQuant expected = act_quant(input);
    EXPECT_EQ(q.scale_shape, (Shape{rows, cols / 128}));
    EXPECT_EQ(q.scales, expected.scales);
    ASSERT_EQ(q.codes.size(), expected.codes.size());
    for (std::size_t i = 0; i < q.codes.size(); ++i) {
      ASSERT_EQ(q.codes[i], expected.codes[i]) << "index " << i << ", x = " << input[i];
    }
  }
}

}  // namespace

// The SIMD kernels' NVFP4 scale shortcut against the general rule, over f32 amax in [2^-30, 2^20) (every 13th
// bit pattern) and several tensor scales: the same code and divisor, bit for bit.
TEST(ScaleRules, E4m3FastMatchesBlockScale) {
  for (const mf::Profile p : {mf::Profile::ocp, mf::Profile::torchao})
    for (const float ts : {1.0f, 0.37f, 3.1e-5f, 1.9e3f}) {
      const mf::Scheme s = mf::with_profile(mf::scheme_named("nvfp4"), p);
      int mismatches = 0;
      for (std::uint32_t bits = std::bit_cast<std::uint32_t>(0x1p-30f); bits < std::bit_cast<std::uint32_t>(0x1p20f);
           bits += 13) {
        const float amax = std::bit_cast<float>(bits);
        const mf::BlockScale want = mf::block_scale(s, amax, false, ts);
        const mf::BlockScale got = mf::e4m3_scale_fast(amax, 6.0f, ts, mf::min_e4m3_scale(s));
        if ((got.code != want.code ||
             std::bit_cast<std::uint32_t>(got.divisor) != std::bit_cast<std::uint32_t>(want.divisor)) &&
            ++mismatches <= 5) {
          ADD_FAILURE() << "amax " << amax << " ts " << ts << ": code " << got.code << " vs " << want.code;
        }
      }
      EXPECT_EQ(mismatches, 0) << "tensor scale " << ts;
    }
}
