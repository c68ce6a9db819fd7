// NVFP4 weights in the GEMMs, and the weight-only form (f32 / bf16 activations as they are), against expectations
// independent of the code under test:
//   * hand-worked sums: e2m1 codes, E4M3 block scales and the tensor scale written out from the formats' tables
//     (OCP MX v1.0 for e2m1, OFP8 for e4m3), every intermediate exact;
//   * an f64 dot product whose weights are element x block scale x tensor scale computed in f64 from the codes,
//     within the bound docs/gemm.md derives;
//   * linear's forms, and the operands that must be refused (tensor scale zero, NaN or Inf; a scale grid that does
//     not fit), with messages naming both shapes.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
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

// An nvfp4 weight [n, k] with the given codes (one e2m1 code per element), E4M3 block scale codes (one per 16) and
// tensor scale: quantize() makes the tensor's frame, the bytes are then set by hand.
mf::QuantizedTensor nvfp4_weight(std::int64_t n, std::int64_t k, const std::vector<std::uint8_t>& codes,
                                 const std::vector<std::uint8_t>& scales, float tensor_scale) {
  const std::vector<float> zeros(static_cast<std::size_t>(n * k), 1.0f);
  mf::QuantizedTensor q = mf::quantize(zeros.data(), Shape{n, k}, mf::scheme_named("nvfp4"));
  for (std::size_t i = 0; i < codes.size(); ++i) {
    std::uint8_t& byte = q.codes[i / 2];
    byte = static_cast<std::uint8_t>(i % 2 ? (byte & 0x0F) | (codes[i] << 4) : (byte & 0xF0) | codes[i]);
  }
  q.scales = scales;
  q.tensor_scale = tensor_scale;
  return q;
}

// w[j, l] in f64 from the codes: e2m1 element x E4M3 block scale x tensor scale (nvfp4), or ref::dequantize's
// values for the other schemes (one-level: element x scale, exact in f32).
std::vector<double> weights_f64(const mf::QuantizedTensor& q) {
  std::vector<double> w(static_cast<std::size_t>(q.count()));
  if (!q.scheme.tensor_scale) {
    std::vector<float> f(w.size());
    mf::ref::dequantize(q, f.data());
    return {f.begin(), f.end()};
  }
  const std::int64_t k = q.cols(), scale_cols = q.scale_shape[1];
  for (std::int64_t j = 0; j < q.rows(); ++j) {
    for (std::int64_t l = 0; l < k; ++l) {
      const auto i = static_cast<std::size_t>(j * k + l);
      const double element = mf::decode(mf::e2m1, (q.codes[i / 2] >> (4 * (i % 2))) & 0xF);
      const double scale = mf::decode(mf::ue4m3, q.scales[static_cast<std::size_t>(j * scale_cols + l / 16)]);
      w[i] = element * scale * static_cast<double>(q.tensor_scale);
    }
  }
  return w;
}

// |C - C64| <= (G/16 + 6 + ceil(K/G)) * 2^-24 * sum |terms| (docs/gemm.md: the chains, the tree's 4 levels, the
// group factor's product and its product with the sum, the group additions).
void expect_within_bound(const std::vector<float>& c, const std::vector<double>& a, const std::vector<double>& w,
                         std::int64_t m, std::int64_t n, std::int64_t k, const std::string& what) {
  const double u = std::ldexp(1.0, -24), depth = 128 / 16.0 + 6 + std::ceil(static_cast<double>(k) / 128);
  for (std::int64_t i = 0; i < m; ++i) {
    for (std::int64_t j = 0; j < n; ++j) {
      double exact = 0, magnitude = 0;
      for (std::int64_t l = 0; l < k; ++l) {
        exact += a[i * k + l] * w[j * k + l];
        magnitude += std::fabs(a[i * k + l] * w[j * k + l]);
      }
      ASSERT_LE(std::fabs(c[i * n + j] - exact), depth * u * magnitude) << what << " at " << i << ", " << j;
    }
  }
}

// ---- worked by hand ----

TEST(GemmNvfp4, HandWorkedWithActQuant) {
  // x = 1: act_quant codes 0x78 (256), scale 2^-8. Weight [1, 128]: e2m1 code 0x3 (1.5) in E4M3 blocks of scale
  // code 0x30 (2^-1), tensor scale 0.375. Each product 256 x 0.75 = 192, the group 128 x 192 = 24576, times
  // 2^-8 x 0.375: 36, all exact.
  const std::vector<float> x(128, 1.0f);
  const mf::QuantizedTensor a = mf::act_quant(x.data(), Shape{1, 128});
  const mf::QuantizedTensor w =
      nvfp4_weight(1, 128, std::vector<std::uint8_t>(128, 0x3), std::vector<std::uint8_t>(8, 0x30), 0.375f);
  float c = 0;
  mf::fp4_gemm(a, w, mf::GemmOut{&c, nullptr});
  EXPECT_EQ(c, 36.0f);
  mf::ref::fp4_gemm(a, w, mf::GemmOut{&c, nullptr});
  EXPECT_EQ(c, 36.0f);
}

TEST(GemmNvfp4, HandWorkedWeightOnly) {
  // a[k] = k + 1 for k < 32. Block 0: code 0x1 (0.5) x scale code 0x40 (2) = 1; block 1: code 0xA (-1) x scale
  // code 0x28 (2^-2) = -0.25. Sum 1 + ... + 16 - (17 + ... + 32) / 4 = 136 - 98 = 38, times the tensor scale 0.375:
  // 14.25. Every partial sum is an integer or a quarter below 2^10: exact.
  std::vector<std::uint8_t> codes(32, 0x1);
  for (int i = 16; i < 32; ++i) codes[i] = 0xA;
  const mf::QuantizedTensor w = nvfp4_weight(1, 32, codes, {0x40, 0x28}, 0.375f);
  std::vector<float> a(32);
  std::vector<std::uint16_t> a16(32);
  for (int i = 0; i < 32; ++i) {
    a[i] = static_cast<float>(i + 1);
    a16[i] = static_cast<std::uint16_t>(mf::encode(mf::bf16, a[i]));
  }
  float c = 0;
  mf::weight_only_gemm(a.data(), 1, w, mf::GemmOut{&c, nullptr});
  EXPECT_EQ(c, 14.25f);
  mf::weight_only_gemm(a16.data(), 1, w, mf::GemmOut{&c, nullptr});
  EXPECT_EQ(c, 14.25f);
  mf::ref::weight_only_gemm(a.data(), 1, w, mf::GemmOut{&c, nullptr});
  EXPECT_EQ(c, 14.25f);
}

TEST(GemmNvfp4, TensorScaleIsAppliedPerGroupNotPerWeight) {
  // Element 0.5 (code 0x1) x block scale 448 (code 0x7E) = 224 inside w; tensor scale 1.5 x 2^126. Dequantized per
  // weight, 448 x 1.5 x 2^126 overflows f32 (Inf); per group it does not: a = 2^-10 in one lane, the group's sum
  // 224 x 2^-10 = 7/32, times the tensor scale 21/64 x 2^126 = 21 x 2^120, exact.
  const mf::QuantizedTensor w = nvfp4_weight(1, 16, std::vector<std::uint8_t>(16, 0x1), {0x7E}, 0x1.8p126f);
  std::vector<float> a(16, 0.0f);
  a[3] = 0x1p-10f;
  float c = 0;
  mf::weight_only_gemm(a.data(), 1, w, mf::GemmOut{&c, nullptr});
  EXPECT_EQ(c, std::ldexp(21.0f, 120));
}

// ---- against f64 ----

TEST(GemmNvfp4, WithinTheDerivedBoundOfF64) {
  const std::int64_t m = 3, n = 24, k = 384;
  for (const bool outliers : {false, true}) {
    const std::vector<float> x = random_values(m * k, 61, outliers), wv = random_values(n * k, 62, outliers);
    const mf::QuantizedTensor a = mf::act_quant(x.data(), Shape{m, k});
    std::vector<float> af(static_cast<std::size_t>(m * k));
    mf::ref::dequantize(a, af.data());
    const mf::QuantizedTensor w = mf::quantize(wv.data(), Shape{n, k}, mf::scheme_named("nvfp4"));
    const std::vector<double> wd = weights_f64(w);
    std::vector<float> c(static_cast<std::size_t>(m * n));
    mf::fp4_gemm(a, w, mf::GemmOut{c.data(), nullptr});
    expect_within_bound(c, {af.begin(), af.end()}, wd, m, n, k, "nvfp4 x act_quant");
    mf::weight_only_gemm(x.data(), m, w, mf::GemmOut{c.data(), nullptr});
    expect_within_bound(c, {x.begin(), x.end()}, wd, m, n, k, "nvfp4 weight-only");
  }
}

TEST(GemmNvfp4, WeightOnlyFormsWithinTheDerivedBoundOfF64) {
  // K = 304: not a multiple of 128 (the last group has 48 values) nor of 32 for mxfp4's last block (pad).
  const std::int64_t m = 5, n = 20, k = 304;
  const std::vector<float> x = random_values(m * k, 71, true), wv = random_values(n * k, 72, true);
  std::vector<std::uint16_t> x16(x.size());
  std::vector<double> xb(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    x16[i] = static_cast<std::uint16_t>(mf::encode(mf::bf16, x[i]));
    xb[i] = mf::decode(mf::bf16, x16[i]);
  }
  for (const char* scheme : {"nvfp4", "mxfp4", "fp8-128x128", "fp8-32x32", "e4m3-128x128-f32"}) {
    mf::QuantizeOptions o;
    o.pad = true;
    const mf::QuantizedTensor w = mf::quantize(wv.data(), Shape{n, k}, mf::scheme_named(scheme), o);
    const std::vector<double> wd = weights_f64(w);
    std::vector<float> c(static_cast<std::size_t>(m * n)), r(c.size());
    mf::weight_only_gemm(x.data(), m, w, mf::GemmOut{c.data(), nullptr});
    expect_within_bound(c, {x.begin(), x.end()}, wd, m, n, k, std::string(scheme) + " f32");
    mf::ref::weight_only_gemm(x.data(), m, w, mf::GemmOut{r.data(), nullptr});
    EXPECT_EQ(c, r) << scheme;
    mf::weight_only_gemm(x16.data(), m, w, mf::GemmOut{c.data(), nullptr});
    expect_within_bound(c, xb, wd, m, n, k, std::string(scheme) + " bf16");
  }
}

// ---- linear ----

TEST(GemmNvfp4, LinearTakesNvfp4InBothForms) {
  const std::int64_t m = 2, n = 32, k = 256;
  const std::vector<float> x = random_values(m * k, 81, false), wv = random_values(n * k, 82, false);
  const mf::QuantizedTensor w = mf::quantize(wv.data(), Shape{n, k}, mf::scheme_named("nvfp4"));
  mf::Weight weight;
  weight.quantized = &w;
  // As mxfp4: act_quant (ue8m0) and fp4_gemm.
  const mf::QuantizedTensor a = mf::act_quant(x.data(), Shape{m, k});
  std::vector<float> expected(static_cast<std::size_t>(m * n));
  mf::ref::fp4_gemm(a, w, mf::GemmOut{expected.data(), nullptr});
  EXPECT_EQ(mf::linear(x.data(), Shape{m, k}, weight, 2), expected);
  // Weight-only: x as it is.
  weight.weight_only = true;
  mf::ref::weight_only_gemm(x.data(), m, w, mf::GemmOut{expected.data(), nullptr});
  EXPECT_EQ(mf::linear(x.data(), Shape{m, k}, weight, 2), expected);
  // bf16 output and accumulate: one rounded add of the old value, then RNE.
  std::vector<std::uint16_t> y(expected.size(), 0x3F40);  // 0.75
  mf::GemmOptions o;
  o.accumulate = true;
  mf::linear(x.data(), Shape{m, k}, weight, mf::GemmOut{nullptr, y.data()}, o);
  for (std::size_t i = 0; i < y.size(); ++i) {
    EXPECT_EQ(y[i], static_cast<std::uint16_t>(mf::encode(mf::bf16, 0.75f + expected[i])));
  }
}

// ---- bad input ----

TEST(GemmNvfp4, BadTensorScaleOrScaleGridIsANamedError) {
  const std::vector<float> x = random_values(2 * 256, 91, false), wv = random_values(48 * 256, 92, false);
  const mf::QuantizedTensor a = mf::act_quant(x.data(), Shape{2, 256});
  const mf::QuantizedTensor good = mf::quantize(wv.data(), Shape{48, 256}, mf::scheme_named("nvfp4"));
  std::vector<float> c(2 * 48);
  const mf::GemmOut out{c.data(), nullptr};
  for (const float t : {0.0f, -0.0f, std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
    mf::QuantizedTensor w = good;
    w.tensor_scale = t;
    for (const std::string& m : {message_of([&] { mf::fp4_gemm(a, w, out); }),
                                 message_of([&] { mf::weight_only_gemm(x.data(), 2, w, out); })}) {
      EXPECT_NE(m.find("tensor scale"), std::string::npos) << m;
      EXPECT_NE(m.find("[2, 256]"), std::string::npos) << m;
      EXPECT_NE(m.find("[48, 256]"), std::string::npos) << m;
    }
  }
  // A scale grid that does not fit: mxfp4's [48, 8] where nvfp4 needs [48, 16].
  mf::QuantizedTensor w = good;
  w.scales.resize(48 * 8);
  w.scale_shape = {48, 8};
  const std::string m = message_of([&] { mf::fp4_gemm(a, w, out); });
  EXPECT_NE(m.find("[48, 8]"), std::string::npos) << m;
  EXPECT_NE(m.find("[48, 16]"), std::string::npos) << m;
  EXPECT_NE(m.find("[2, 256]"), std::string::npos) << m;
  // No output; and a weight no GEMM takes.
  const std::string none = message_of([&] { mf::weight_only_gemm(x.data(), 2, good, mf::GemmOut{}); });
  EXPECT_NE(none.find("exactly one output"), std::string::npos) << none;
  const mf::QuantizedTensor six = mf::quantize(wv.data(), Shape{48, 256}, mf::scheme_named("mxfp6-e3m2"));
  const std::string m6 = message_of([&] { mf::weight_only_gemm(x.data(), 2, six, out); });
  EXPECT_NE(m6.find("mxfp6-e3m2"), std::string::npos) << m6;
  EXPECT_NE(m6.find("[48, 256]"), std::string::npos) << m6;
}

TEST(GemmNvfp4, NanBlockScalePropagatesToItsRowOnly) {
  // E4M3 code 0x7F is NaN: the weight's row 1 reads NaN in its first block, so its outputs are NaN, the others not.
  const std::vector<float> x = random_values(2 * 128, 95, false), wv = random_values(4 * 128, 96, false);
  const mf::QuantizedTensor a = mf::act_quant(x.data(), Shape{2, 128});
  mf::QuantizedTensor w = mf::quantize(wv.data(), Shape{4, 128}, mf::scheme_named("nvfp4"));
  w.scales[8] = 0x7F;  // row 1, block 0
  std::vector<float> c(2 * 4);
  mf::fp4_gemm(a, w, mf::GemmOut{c.data(), nullptr});
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 4; ++j) EXPECT_EQ(std::isnan(c[i * 4 + j]), j == 1) << i << ", " << j;
  }
  mf::weight_only_gemm(x.data(), 2, w, mf::GemmOut{c.data(), nullptr});
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 4; ++j) EXPECT_EQ(std::isnan(c[i * 4 + j]), j == 1) << i << ", " << j;
  }
}

}  // namespace
