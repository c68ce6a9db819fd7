// docs/spec.md#fp4-experiment ("simulate FP4 quantization with PyTorch"): fake_fp4_quant(randn(128, 128) * 3), blocks
// of 32, scale 2^ceil(log2(amax / 6)), each value replaced by the nearest entry of the 16-value E2M1 table (argmin,
// so the first entry wins a tie). The seed reports a mean relative error "around 11.7%" over several random seeds.
// The seed's algorithm is written out here independently and compared with minifloat's e2m1-1x32-ue8m0-rceil.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

#include "minifloat/quantize.h"
#include "minifloat/scheme.h"

namespace {

// The seed's fp4_values, in its order: +0 first, and each magnitude's first occurrence is the smaller one.
constexpr float kTable[16] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6, -0.0f, -0.5f, -1, -1.5f, -2, -3, -4, -6};

int nearest_index(float y) {  // torch.argmin: the first minimum
  int best = 0;
  float best_diff = std::fabs(y - kTable[0]);
  for (int i = 1; i < 16; ++i) {
    const float d = std::fabs(y - kTable[i]);
    if (d < best_diff) best = i, best_diff = d;
  }
  return best;
}

// fake_fp4_quant(x, block_size=32) in f32, as torch computes it on a float32 tensor.
std::vector<float> seed_fake_fp4(const std::vector<float>& x) {
  std::vector<float> out(x.size());
  for (std::size_t b = 0; b < x.size(); b += 32) {
    float amax = 0;
    for (std::size_t i = b; i < b + 32; ++i) amax = std::max(amax, std::fabs(x[i]));
    const float scale = amax > 0 ? std::pow(2.0f, std::ceil(std::log2(amax / 6.0f))) : 1.0f;
    for (std::size_t i = b; i < b + 32; ++i) out[i] = kTable[nearest_index(x[i] / scale)] * scale;
  }
  return out;
}

std::vector<float> randn3(std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(128 * 128);
  for (float& v : x) v = normal(rng) * 3.0f;
  return x;
}

double relative_error(const std::vector<float>& x, const std::vector<float>& q) {
  double err = 0, mag = 0;
  for (std::size_t i = 0; i < x.size(); ++i) err += std::fabs(x[i] - q[i]), mag += std::fabs(x[i]);
  return err / mag;
}

const mf::Scheme& rceil_fp4() {
  static const mf::Scheme s = mf::scheme_named("e2m1-1x32-ue8m0-rceil");
  return s;
}

std::vector<float> minifloat_fake_fp4(const std::vector<float>& x) {
  std::vector<float> out(x.size());
  const std::int64_t shape[] = {128, 128};
  mf::fake_quantize(x.data(), out.data(), shape, rceil_fp4());
  return out;
}

// |y| is exactly halfway between two neighbouring E2M1 magnitudes.
bool is_tie(float y) {
  const float a = std::fabs(y);
  return a == 0.25f || a == 0.75f || a == 1.25f || a == 1.75f || a == 2.5f || a == 3.5f || a == 5.0f;
}

TEST(Fp4Experiment, RelativeErrorIsAboutTheSeeds11Point7Percent) {
  // Tolerance, derived from the spread: over seeds 0..11 with std::mt19937 + std::normal_distribution the error is
  // 11.68% .. 11.85% (mean 11.79%, sd 0.055 points per seed). The seed gives one rounded figure, "around 11.7%",
  // from torch's generator. Each seed within 11.7 +- 0.3 points (about 5 sd) allows for that rounding and generator;
  // it still rejects the neighbouring rules on the same data: floor (mxfp4) gives 10.67%, even 10.97%.
  double sum = 0;
  for (std::uint32_t seed = 0; seed < 8; ++seed) {
    const std::vector<float> x = randn3(seed);
    const double rel = relative_error(x, seed_fake_fp4(x));
    std::printf("seed %u: mean |x - q| / mean |x| = %.3f%%\n", seed, 100 * rel);
    EXPECT_NEAR(rel, 0.117, 0.003) << "seed " << seed;
    sum += rel;
  }
  EXPECT_NEAR(sum / 8, 0.117, 0.0015);  // the mean of 8 has sd ~0.02 points; 0.15 allows the seed's rounding
  const std::vector<float> x = randn3(0);
  std::vector<float> floor_q(x.size());
  const std::int64_t shape[] = {128, 128};
  mf::fake_quantize(x.data(), floor_q.data(), shape, mf::scheme_named("mxfp4"));
  EXPECT_LT(relative_error(x, floor_q), 0.117 - 0.003);  // the tolerance tells the rules apart
}

TEST(Fp4Experiment, MinifloatRceilGivesTheSeedsValues) {
  // Where the two can differ: on an exact tie the seed's argmin takes the first table entry, the smaller magnitude
  // (the table is ascending for each sign), while minifloat rounds to the even code. Ties at |y| = 0.25, 1.25, 2.5,
  // 5 agree (the smaller neighbour has the even code); at 0.75, 1.75, 3.5 they differ (0.5/1, 1.5/2, 3/4).
  // Random normal f32 values almost never land on a tie (|x| would have to be exactly 0.75 * 2^k, ...): the count
  // is printed and every differing value must be such a tie. Zero signs differ too: a small negative value is +0 in
  // the seed (argmin meets +0 before -0) and -0 in minifloat (docs/spec.md#special-blocks); the values compare equal.
  for (std::uint32_t seed = 0; seed < 8; ++seed) {
    const std::vector<float> x = randn3(seed);
    const std::vector<float> expected = seed_fake_fp4(x), actual = minifloat_fake_fp4(x);
    int ties = 0, differing = 0, zero_signs = 0;
    for (std::size_t b = 0; b < x.size(); b += 32) {
      float amax = 0;
      for (std::size_t i = b; i < b + 32; ++i) amax = std::max(amax, std::fabs(x[i]));
      const float scale = std::pow(2.0f, std::ceil(std::log2(amax / 6.0f)));
      for (std::size_t i = b; i < b + 32; ++i) {
        const bool tie = is_tie(x[i] / scale);
        ties += tie;
        if (expected[i] != actual[i]) {
          ++differing;
          EXPECT_TRUE(tie) << "seed " << seed << ", index " << i << ": x = " << x[i] << ", seed's " << expected[i]
                           << ", minifloat's " << actual[i];
        } else if (std::signbit(expected[i]) != std::signbit(actual[i])) {
          ++zero_signs;
          EXPECT_EQ(actual[i], 0.0f);
          EXPECT_TRUE(std::signbit(actual[i]) && x[i] < 0) << "index " << i;
        }
      }
    }
    std::printf("seed %u: %d exact ties, %d values differ, %d zeros differ only in sign\n", seed, ties, differing,
                zero_signs);
  }
}

TEST(Fp4Experiment, TiesAreWhereTheSeedAndRoundToEvenPart) {
  // One block with amax 6 (scale 1 in both) and every tie, both signs.
  const float ties[] = {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f};
  std::vector<float> x(128 * 128, 0.0f);
  for (int i = 0; i < 7; ++i) x[1 + i] = ties[i], x[8 + i] = -ties[i];
  x[0] = 6.0f;
  const std::vector<float> seed = seed_fake_fp4(x), ours = minifloat_fake_fp4(x);
  const float seed_pick[] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f};  // the smaller magnitude
  const float even_pick[] = {0.0f, 1.0f, 1.0f, 2.0f, 2.0f, 4.0f, 4.0f};  // the even code
  for (int i = 0; i < 7; ++i) {
    EXPECT_EQ(seed[1 + i], seed_pick[i]) << ties[i];
    EXPECT_EQ(seed[8 + i], -seed_pick[i]) << -ties[i];
    EXPECT_EQ(ours[1 + i], even_pick[i]) << ties[i];
    EXPECT_EQ(ours[8 + i], -even_pick[i]) << -ties[i];
  }
}

}  // namespace
