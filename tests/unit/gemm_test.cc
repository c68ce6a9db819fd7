// The GEMMs against expectations independent of the code under test:
//   * hand-worked sums whose value depends on the definition's order (the lane-strided partial sums and the tree);
//   * an f64 dot product of the dequantized operands, within the bound the definition implies (docs/gemm.md);
//   * act_quant against fp8-1x128 written out (rceil scale, 1e-4 clamp), linear's dispatch and accumulate;
//   * shapes and scales that do not fit, with messages naming both shapes; bf16 rounding against the codec.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "minifloat/codec.h"
#include "minifloat/gemm.h"
#include "minifloat/quantize.h"
#include "gemm_test_util.h"

namespace {

using Shape = std::vector<std::int64_t>;
using mf::test::message_of;
using mf::test::random_values;

std::vector<double> dequantized(const mf::QuantizedTensor& q) {
  std::vector<float> f(static_cast<std::size_t>(q.count()));
  mf::ref::dequantize(q, f.data());
  return {f.begin(), f.end()};
}

// ---- the order, worked by hand ----

TEST(Gemm, TreeOrderDecidesRoundingHandWorked) {
  // K = 16, one group: p[0] = 2^24, p[1] = 1, p[9] = 1. The tree adds p[1] + p[9] = 2 first, then 2^24 + 2 exactly;
  // a sequential sum would lose both ones (2^24 + 1 rounds to 2^24, ties to even).
  std::vector<float> a(16, 0.0f), w(16, 1.0f);
  a[0] = 0x1p24f;
  a[1] = 1.0f;
  a[9] = 1.0f;
  float c = 0;
  mf::f32_gemm(a.data(), w.data(), 1, 1, 16, mf::GemmOut{&c, nullptr});
  EXPECT_EQ(c, 16777218.0f);
  // Lanes 0 and 8 meet first: 2^24 + 1 (a tie) rounds to 2^24, and the other 1 (lane 4) follows alone: 2^24 again.
  a.assign(16, 0.0f);
  a[0] = 0x1p24f;
  a[8] = 1.0f;
  a[4] = 1.0f;
  mf::f32_gemm(a.data(), w.data(), 1, 1, 16, mf::GemmOut{&c, nullptr});
  EXPECT_EQ(c, 16777216.0f);
  mf::ref::f32_gemm(a.data(), w.data(), 1, 1, 16, mf::GemmOut{&c, nullptr});
  EXPECT_EQ(c, 16777216.0f);
}

TEST(Gemm, GroupsAreScaledThenAddedInOrder) {
  // bf16 GEMM, K = 256: two groups of 128. Group 0 sums to 2^24, group 1 to 1 + 1 in two lanes (2): 2^24 + 2.
  // Within group 1 alone, then added: exact. Lanes within one sequential chain: 2^24 + 1 + 1 -> 2^24.
  std::vector<std::uint16_t> a(256, 0), w(256, 0x3F80);  // w = 1
  a[0] = 0x4B80;                                         // 2^24
  a[128] = 0x3F80;                                       // 1, lane 0 of group 1
  a[129] = 0x3F80;                                       // 1, lane 1
  float c = 0;
  mf::bf16_gemm(a.data(), w.data(), 1, 1, 256, mf::GemmOut{&c, nullptr});
  EXPECT_EQ(c, 16777218.0f);
  // The same three in one lane chain of group 0 (k = 0, 16, 32): 2^24 + 1 -> 2^24, + 1 -> 2^24.
  a.assign(256, 0);
  a[0] = 0x4B80;
  a[16] = 0x3F80;
  a[32] = 0x3F80;
  mf::bf16_gemm(a.data(), w.data(), 1, 1, 256, mf::GemmOut{&c, nullptr});
  EXPECT_EQ(c, 16777216.0f);
}

TEST(Gemm, Fp8HandWorkedScales) {
  // x = 1 everywhere: rceil scale 2^ceil(log2(1/448)) = 2^-8, codes 256 (e4m3 0x78). Weight 128x128 of 0.5: scale
  // 2^ceil(log2(0.5/448)) = 2^-9, codes 256. C = 128 * (256 * 256) * 2^-8 * 2^-9 = 64 exactly.
  const std::vector<float> x(128, 1.0f), w(128 * 128, 0.5f);
  const mf::QuantizedTensor a = mf::act_quant(x.data(), Shape{1, 128});
  EXPECT_EQ(a.codes[0], 0x78);
  EXPECT_EQ(a.scales[0], 127 - 8);
  const mf::QuantizedTensor q = mf::quantize(w.data(), Shape{128, 128}, mf::scheme_named("fp8-128x128"));
  std::vector<float> c(128);
  mf::fp8_gemm(a, q, mf::GemmOut{c.data(), nullptr});
  for (const float v : c) EXPECT_EQ(v, 64.0f);
  std::vector<std::uint16_t> cb(128);
  mf::fp8_gemm(a, q, mf::GemmOut{nullptr, cb.data()});
  EXPECT_EQ(cb[5], 0x4280);  // 64 in bf16
}

// ---- against an f64 reference ----

// |C - C64| <= (depth) * 2^-24 * sum |terms| + the output rounding, with depth = G/16 chain additions + 4 tree
// levels + 1 scale product + K/G group additions (first-order bound of recursive summation).
void expect_within_bound(const std::vector<float>& c, const std::vector<double>& a, const std::vector<double>& w,
                         std::int64_t m, std::int64_t n, std::int64_t k, int group, const std::string& what) {
  const double u = std::ldexp(1.0, -24), depth = group / 16.0 + 4 + 1 + static_cast<double>(k) / group + 1;
  for (std::int64_t i = 0; i < m; ++i) {
    for (std::int64_t j = 0; j < n; ++j) {
      double exact = 0, magnitude = 0;
      for (std::int64_t l = 0; l < k; ++l) {
        exact += a[i * k + l] * w[j * k + l];
        magnitude += std::fabs(a[i * k + l] * w[j * k + l]);
      }
      const double err = std::fabs(c[i * n + j] - exact);
      ASSERT_LE(err, depth * u * magnitude * 1.0001) << what << " at " << i << ", " << j;
    }
  }
}

TEST(Gemm, QuantizedGemmsWithinTheDerivedBoundOfF64) {
  const std::int64_t m = 3, n = 40, k = 512;
  for (const bool outliers : {false, true}) {
    const std::vector<float> x = random_values(m * k, 11, outliers), wv = random_values(n * k, 12, outliers);
    const mf::QuantizedTensor a = mf::act_quant(x.data(), Shape{m, k});
    const std::vector<double> ad = dequantized(a);
    for (const char* scheme : {"fp8-128x128", "fp8-32x32", "mxfp4", "e4m3-128x128-f32"}) {
      mf::QuantizeOptions o;
      o.pad = true;
      const mf::QuantizedTensor q = mf::quantize(wv.data(), Shape{n, k}, mf::scheme_named(scheme), o);
      std::vector<float> c(static_cast<std::size_t>(m * n));
      if (q.scheme.element.format == &mf::e2m1) {
        mf::fp4_gemm(a, q, mf::GemmOut{c.data(), nullptr});
      } else {
        mf::fp8_gemm(a, q, mf::GemmOut{c.data(), nullptr});
      }
      expect_within_bound(c, ad, dequantized(q), m, n, k, 128, scheme);
    }
  }
}

TEST(Gemm, PlainGemmsWithinTheDerivedBoundOfF64) {
  const std::int64_t m = 4, n = 33, k = 300;
  const std::vector<float> a = random_values(m * k, 21, true), w = random_values(n * k, 22, true);
  std::vector<float> c(static_cast<std::size_t>(m * n));
  mf::f32_gemm(a.data(), w.data(), m, n, k, mf::GemmOut{c.data(), nullptr});
  expect_within_bound(c, {a.begin(), a.end()}, {w.begin(), w.end()}, m, n, k, 128, "f32");
}

// ---- act_quant and linear ----

TEST(Gemm, ActQuantIsFp8Per128WithTheDeepSeekClamp) {
  std::vector<float> x = random_values(2 * 256, 31);
  for (int i = 128; i < 256; ++i) x[i] = 0.0f;  // a zero block: amax clamped to 1e-4
  const mf::QuantizedTensor a = mf::act_quant(x.data(), Shape{2, 256});
  EXPECT_EQ(a.scheme.name, "fp8-1x128");
  ASSERT_EQ(a.scale_shape, (Shape{2, 2}));
  // 2^ceil(log2(1e-4 / 448)) = 2^-22 (1e-4/448 = 2.23e-7, between 2^-23 and 2^-22).
  EXPECT_EQ(a.scales[1], 127 - 22);
  for (std::size_t b : {0u, 2u, 3u}) {
    float amax = 0;
    for (int i = 0; i < 128; ++i) amax = std::max(amax, std::fabs(x[b * 128 + i]));
    EXPECT_EQ(a.scales[b], 127 + static_cast<int>(std::ceil(std::log2(static_cast<double>(amax) / 448))));
  }
  const mf::QuantizedTensor f = mf::act_quant(x.data(), Shape{2, 256}, mf::ActScale::f32);
  float s0 = 0;
  std::memcpy(&s0, f.scales.data(), 4);
  float amax = 0;
  for (int i = 0; i < 128; ++i) amax = std::max(amax, std::fabs(x[i]));
  EXPECT_EQ(s0, amax / 448.0f);
  EXPECT_THROW(mf::act_quant(x.data(), Shape{4, 100}), mf::GemmError);
}

TEST(Gemm, LinearDispatchesOnTheWeightAndAccumulates) {
  const std::int64_t m = 2, n = 32, k = 256;
  const std::vector<float> x = random_values(m * k, 41), wv = random_values(n * k, 42);
  const mf::QuantizedTensor a = mf::act_quant(x.data(), Shape{m, k});
  const mf::QuantizedTensor q4 = mf::quantize(wv.data(), Shape{n, k}, mf::scheme_named("mxfp4"));
  std::vector<float> expected(static_cast<std::size_t>(m * n));
  mf::ref::fp4_gemm(a, q4, mf::GemmOut{expected.data(), nullptr});
  mf::Weight w4;
  w4.quantized = &q4;
  EXPECT_EQ(mf::linear(x.data(), Shape{m, k}, w4), expected);
  // bf16 weights: x rounded to bf16 first.
  std::vector<std::uint16_t> w16(wv.size()), x16(x.size());
  for (std::size_t i = 0; i < wv.size(); ++i) w16[i] = static_cast<std::uint16_t>(mf::encode(mf::bf16, wv[i]));
  for (std::size_t i = 0; i < x.size(); ++i) x16[i] = static_cast<std::uint16_t>(mf::encode(mf::bf16, x[i]));
  mf::ref::bf16_gemm(x16.data(), w16.data(), m, n, k, mf::GemmOut{expected.data(), nullptr});
  mf::Weight wb;
  wb.bf16 = w16.data();
  wb.n = n;
  wb.k = k;
  EXPECT_EQ(mf::linear(x.data(), Shape{m, k}, wb), expected);
  // accumulate: old + result, one rounding.
  std::vector<float> y(static_cast<std::size_t>(m * n), 0.75f);
  mf::GemmOptions o;
  o.accumulate = true;
  mf::linear(x.data(), Shape{m, k}, wb, mf::GemmOut{y.data(), nullptr}, o);
  for (std::size_t i = 0; i < y.size(); ++i) EXPECT_EQ(y[i], 0.75f + expected[i]);
}

// ---- shapes that do not fit ----

TEST(Gemm, MisfitsNameBothShapes) {
  const std::vector<float> x = random_values(2 * 256, 51), wv = random_values(64 * 384, 52);
  const mf::QuantizedTensor a = mf::act_quant(x.data(), Shape{2, 256});
  const mf::QuantizedTensor w = mf::quantize(wv.data(), Shape{64, 384}, mf::scheme_named("fp8-32x32"));
  std::vector<float> c(2 * 64);
  const mf::GemmOut out{c.data(), nullptr};
  std::string m = message_of([&] { mf::fp8_gemm(a, w, out); });
  EXPECT_NE(m.find("[2, 256]"), std::string::npos) << m;
  EXPECT_NE(m.find("[64, 384]"), std::string::npos) << m;
  EXPECT_NE(m.find("K differs"), std::string::npos) << m;
  // Scales packed for another platform: four ue8m0 codes per int32, [64, 8] -> [64, 2] words.
  const mf::QuantizedTensor w2 = mf::quantize(wv.data(), Shape{64, 256}, mf::scheme_named("mxfp4"));
  mf::QuantizedTensor packed = w2;
  packed.scale_shape = {64, 2};
  m = message_of([&] { mf::fp4_gemm(a, packed, out); });
  EXPECT_NE(m.find("[64, 2]"), std::string::npos) << m;
  EXPECT_NE(m.find("[64, 8]"), std::string::npos) << m;
  EXPECT_NE(m.find("[2, 256]"), std::string::npos) << m;
  // The wrong GEMM for the weight, and a weight scheme the fp8 GEMM cannot take.
  m = message_of([&] { mf::fp8_gemm(a, w2, out); });
  EXPECT_NE(m.find("mxfp4"), std::string::npos) << m;
  const mf::QuantizedTensor m6 = mf::quantize(wv.data(), Shape{64, 256}, mf::scheme_named("mxfp6-e3m2"));
  EXPECT_NE(message_of([&] { mf::fp4_gemm(a, m6, out); }).find("mxfp6-e3m2"), std::string::npos);
  // The activation must be act_quant's.
  const mf::QuantizedTensor a32 = mf::quantize(x.data(), Shape{2, 256}, mf::scheme_named("mxfp8"));
  EXPECT_NE(message_of([&] { mf::fp4_gemm(a32, w2, out); }).find("1x128"), std::string::npos);
  // Exactly one output.
  EXPECT_NE(message_of([&] { mf::fp4_gemm(a, w2, mf::GemmOut{}); }).find("exactly one output"), std::string::npos);
  mf::Weight plain;
  plain.f32 = wv.data();
  plain.n = 64;
  plain.k = 300;
  m = message_of([&] { mf::linear(x.data(), Shape{2, 256}, plain, out); });
  EXPECT_NE(m.find("[64, 300]"), std::string::npos) << m;
}

TEST(Gemm, Bf16OutputRoundsToNearestEvenAsTheCodec) {
  const float cases[] = {1.0f + 0x1p-8f,
                         1.0f + 0x1p-8f + 0x1p-20f,
                         1.0f + 3 * 0x1p-8f,
                         -3.0e38f,
                         3.4e38f,
                         std::numeric_limits<float>::quiet_NaN(),
                         -0.0f,
                         1e-40f};
  for (const float v : cases) {
    // A 1 x 1 x 1 f32 GEMM writes v * 1 rounded to bf16.
    const float one = 1.0f;
    std::uint16_t out = 0;
    mf::f32_gemm(&v, &one, 1, 1, 1, mf::GemmOut{nullptr, &out});
    EXPECT_EQ(out, mf::encode(mf::bf16, v * 1.0f + 0.0f)) << v;
  }
}

}  // namespace
