// Tests for the Hadamard rotation (minifloat/hadamard.h):
//   * mf::ref::rotate against an independent definition, H_n[i][j] = (-1)^popcount(i & j) summed in double, within
//     the rounding bound the header documents;
//   * mf::rotate bit for bit against mf::ref::rotate on random and edge inputs, on every compiled Highway target,
//     for every n, one and several groups, unaligned pointers, and inputs large enough to use threads;
//   * involution, norm preservation, Inf/NaN propagation, and the argument errors.
#include <gtest/gtest.h>
#include <hwy/targets.h>  // target enumeration only: mf::rotate itself is called through the public header
#include <hwy/tests/hwy_gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "minifloat/hadamard.h"

namespace {

constexpr double kUnitRoundoff = std::numeric_limits<float>::epsilon() / 2;  // 2^-24
constexpr std::size_t kGuard = 8;                                            // sentinel values around each buffer
constexpr float kSentinel = 1234.5f;

std::vector<int> sizes(int from) {
  std::vector<int> v;
  for (int n = from; n <= mf::kMaxRotateSize; n *= 2) v.push_back(n);
  return v;
}

int log2_of(int n) { return std::countr_zero(static_cast<unsigned>(n)); }

// The documented first-order bound, relative to the group's 1-norm (per value, times n^-1/2) or 2-norm, with 1%
// for the higher-order terms.
double rounding_bound(int n) { return (log2_of(n) + 2) * kUnitRoundoff * 1.01; }

std::vector<float> normal_values(std::size_t count, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> v(count);
  for (float& x : v) x = dist(rng);
  return v;
}

// Any f32 bit pattern with the given exponent field range, random sign and mantissa.
std::vector<float> random_bits(std::size_t count, std::uint32_t seed, std::uint32_t min_exp, std::uint32_t max_exp) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<std::uint32_t> exp(min_exp, max_exp);
  std::vector<float> v(count);
  for (float& x : v) {
    const std::uint32_t bits = (rng() & 0x807fffffu) | (exp(rng) << 23);
    x = std::bit_cast<float>(bits);
  }
  return v;
}

// `value` with a random sign in each position.
std::vector<float> random_signs(float value, std::size_t count, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<float> v(count);
  for (float& x : v) x = rng() % 2 ? -value : value;
  return v;
}

// Equal bits, except that any NaN matches any NaN (the header leaves NaN sign and payload unspecified).
testing::AssertionResult same_bits(const std::vector<float>& expected, const std::vector<float>& actual) {
  if (expected.size() != actual.size()) return testing::AssertionFailure() << "sizes differ";
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const float e = expected[i], a = actual[i];
    if (std::isnan(e) && std::isnan(a)) continue;
    if (std::bit_cast<std::uint32_t>(e) != std::bit_cast<std::uint32_t>(a)) {
      char text[160];
      std::snprintf(text, sizeof text, "first mismatch at %zu: expected %a (0x%08x), got %a (0x%08x)", i, e,
                    std::bit_cast<std::uint32_t>(e), a, std::bit_cast<std::uint32_t>(a));
      return testing::AssertionFailure() << text;
    }
  }
  return testing::AssertionSuccess();
}

using RotateFn = std::function<void(float*, std::size_t, int)>;
const RotateFn kRef = [](float* x, std::size_t count, int n) { mf::ref::rotate(x, count, n); };
const RotateFn kFast = [](float* x, std::size_t count, int n) { mf::rotate(x, count, n); };

// Rotates a copy of `in` placed at an odd offset between sentinels (unaligned, and overruns show).
std::vector<float> rotated(const RotateFn& rotate, const std::vector<float>& in, int n) {
  std::vector<float> buf(in.size() + 2 * kGuard + 1, kSentinel);
  float* x = buf.data() + kGuard + 1;
  std::copy(in.begin(), in.end(), x);
  rotate(x, in.size(), n);
  for (std::size_t i = 0; i < buf.size(); ++i) {
    if (buf.data() + i < x || buf.data() + i >= x + in.size()) {
      EXPECT_EQ(buf[i], kSentinel) << "overrun at " << i;
    }
  }
  return {x, x + in.size()};
}

double norm2(const float* x, std::size_t count) {
  double s = 0;
  for (std::size_t i = 0; i < count; ++i) s += static_cast<double>(x[i]) * x[i];
  return std::sqrt(s);
}

// ---- the scale constant ----

static_assert(mf::rotate_scale(1) == 1.0f && mf::rotate_scale(16) == 0.25f && mf::rotate_scale(4096) == 0x1p-6f);

TEST(RotateScale, IsTheNearestFloatToTheInverseSquareRoot) {
  for (int n : sizes(1)) {
    const double exact = 1.0 / std::sqrt(static_cast<double>(n));
    const float s = mf::rotate_scale(n);
    EXPECT_EQ(s, static_cast<float>(exact)) << n;
    EXPECT_LE(std::abs(s - exact), (std::nextafter(s, 2.0f) - s) / 2) << n;  // within half an ulp: the nearest
  }
}

// ---- the reference against the definition ----

TEST(RefRotate, MatchesDefinitionWithinBound) {
  for (int n : sizes(1)) {
    const int groups = n <= 256 ? 3 : 1;
    const std::vector<float> in = normal_values(static_cast<std::size_t>(n) * groups, 100 + n);
    const std::vector<float> out = rotated(kRef, in, n);
    const double scale = 1.0 / std::sqrt(static_cast<double>(n));
    for (int g = 0; g < groups; ++g) {
      const float* x = in.data() + g * n;
      double abs_sum = 0;
      for (int j = 0; j < n; ++j) abs_sum += std::abs(x[j]);
      const double tolerance = rounding_bound(n) * scale * abs_sum;
      for (int i = 0; i < n; ++i) {
        double y = 0;
        for (int j = 0; j < n; ++j) y += (std::popcount(static_cast<unsigned>(i & j)) % 2 ? -1.0 : 1.0) * x[j];
        ASSERT_NEAR(out[g * n + i], y * scale, tolerance) << "n = " << n << ", group " << g << ", i = " << i;
      }
    }
  }
}

TEST(RefRotate, SmallCasesByHand) {
  std::vector<float> x = {3.0f, 1.0f};
  mf::ref::rotate(x.data(), 2, 2);
  EXPECT_EQ(x[0], 4.0f * mf::rotate_scale(2));
  EXPECT_EQ(x[1], 2.0f * mf::rotate_scale(2));
  x = {1.0f, 2.0f, 3.0f, 4.0f};
  mf::ref::rotate(x.data(), 4, 4);
  EXPECT_EQ(x, (std::vector<float>{5.0f, -1.0f, -2.0f, 0.0f}));
  x = {7.0f, -7.0f};
  mf::ref::rotate(x.data(), 2, 1);  // n = 1 is the identity
  EXPECT_EQ(x, (std::vector<float>{7.0f, -7.0f}));
}

// ---- properties and errors, for both implementations ----

class RotateImpl : public testing::TestWithParam<bool> {
 protected:
  const RotateFn& rotate() const { return GetParam() ? kFast : kRef; }
};

INSTANTIATE_TEST_SUITE_P(Both, RotateImpl, testing::Bool(),
                         [](const testing::TestParamInfo<bool>& info) { return info.param ? "fast" : "ref"; });

TEST_P(RotateImpl, IsAnInvolutionWithinBound) {
  for (int n : sizes(1)) {
    const std::vector<float> in = random_bits(static_cast<std::size_t>(n) * 2, 200 + n, 127 - 20, 127 + 20);
    const std::vector<float> twice = rotated(rotate(), rotated(rotate(), in, n), n);
    for (int g = 0; g < 2; ++g) {
      double err = 0;
      for (int i = g * n; i < (g + 1) * n; ++i) err += std::pow(static_cast<double>(twice[i]) - in[i], 2);
      EXPECT_LE(std::sqrt(err), 2 * rounding_bound(n) * norm2(in.data() + g * n, n)) << "n = " << n;
    }
  }
}

TEST_P(RotateImpl, PreservesTheNormWithinBound) {
  for (int n : sizes(1)) {
    const std::vector<float> in = normal_values(static_cast<std::size_t>(n) * 2, 300 + n);
    const std::vector<float> out = rotated(rotate(), in, n);
    for (int g = 0; g < 2; ++g) {
      const double before = norm2(in.data() + g * n, n), after = norm2(out.data() + g * n, n);
      EXPECT_LE(std::abs(after - before), rounding_bound(n) * before) << "n = " << n;
    }
  }
}

TEST_P(RotateImpl, InfGivesSignedInfAndNanGivesNanInItsGroupOnly) {
  for (int n : sizes(1)) {
    std::vector<float> in = normal_values(static_cast<std::size_t>(n) * 3, 400 + n);
    const int p = n / 3;  // any position; this one is odd for n >= 8
    in[p] = std::numeric_limits<float>::infinity();
    in[2 * n + p] = std::numeric_limits<float>::quiet_NaN();
    const std::vector<float> out = rotated(rotate(), in, n);
    for (int i = 0; i < n; ++i) {
      const bool negative = std::popcount(static_cast<unsigned>(i & p)) % 2 == 1;
      ASSERT_TRUE(std::isinf(out[i]) && std::signbit(out[i]) == negative) << "n = " << n << ", i = " << i;
      ASSERT_TRUE(std::isfinite(out[n + i])) << "n = " << n << ", i = " << i;
      ASSERT_TRUE(std::isnan(out[2 * n + i])) << "n = " << n << ", i = " << i;
    }
  }
}

TEST_P(RotateImpl, EmptyInputIsFine) {
  rotate()(nullptr, 0, 16);
  std::vector<float> x(5, 1.0f);
  rotate()(x.data(), 0, 4096);
  EXPECT_EQ(x, std::vector<float>(5, 1.0f));
}

TEST_P(RotateImpl, RejectsBadSizeNamingIt) {
  std::vector<float> x(1 << 14);
  for (int n : {0, -16, 3, 12, 24, 48, 8192, std::numeric_limits<int>::max(), std::numeric_limits<int>::min()}) {
    try {
      rotate()(x.data(), 0, n);
      ADD_FAILURE() << "no exception for n = " << n;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("n = " + std::to_string(n)), std::string::npos) << e.what();
    }
  }
}

TEST_P(RotateImpl, RejectsCountNotAMultipleOfNNamingBoth) {
  std::vector<float> x(4096);
  for (auto [count, n] : {std::pair<std::size_t, int>{17, 16}, {8, 16}, {4095, 4096}, {4096 + 2048, 4096}, {3, 2}}) {
    try {
      rotate()(x.data(), count, n);
      ADD_FAILURE() << "no exception for count = " << count << ", n = " << n;
    } catch (const std::invalid_argument& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("count = " + std::to_string(count)), std::string::npos) << what;
      EXPECT_NE(what.find("n = " + std::to_string(n)), std::string::npos) << what;
    }
  }
  EXPECT_THROW(mf::validate_rotate(17, 16), std::invalid_argument);
  EXPECT_NO_THROW(mf::validate_rotate(32, 16));
}

// ---- the fast path against the reference, on every compiled Highway target ----

// Highway's fixture: one instance per target, dispatch pinned to it.
class RotateTarget : public hwy::TestWithParamTarget {
 protected:
  // mf::rotate on a copy of `in` must give the reference's bits.
  static void expect_same_as_ref(const std::vector<float>& in, int n, const char* what) {
    EXPECT_TRUE(same_bits(rotated(kRef, in, n), rotated(kFast, in, n))) << what << ", n = " << n;
  }
};

HWY_TARGET_INSTANTIATE_TEST_SUITE_P(RotateTarget);

TEST(RotateTargets, IncludeTheBaselineAndAvx2WhereSupported) {
  const std::vector<std::int64_t> targets = hwy::SupportedAndGeneratedTargets();
  auto has = [&](std::int64_t t) { return std::find(targets.begin(), targets.end(), t) != targets.end(); };
  EXPECT_TRUE(has(HWY_SCALAR) || has(HWY_EMU128));
#if HWY_ARCH_X86
  if (hwy::SupportedTargets() & HWY_AVX2) {
    EXPECT_TRUE(has(HWY_AVX2));
  }
#endif
  for (std::int64_t t : targets) std::printf("compiled and supported: %s\n", hwy::TargetName(t));
}

TEST_P(RotateTarget, DispatchesToThisTarget) {
  std::vector<float> x(64, 1.0f);
  mf::rotate(x.data(), x.size(), 64);
  ASSERT_TRUE(hwy::GetChosenTarget().IsInitialized());
  const auto expected =
      std::countr_zero(static_cast<std::uint64_t>(HWY_CHOSEN_TARGET_SHIFT(GetParam()) | HWY_CHOSEN_TARGET_MASK_SCALAR));
  EXPECT_EQ(hwy::GetChosenTarget().GetIndex(), static_cast<std::size_t>(expected));
}

TEST_P(RotateTarget, RandomInputsMatchReferenceBits) {
  for (int n : sizes(1)) {
    for (std::size_t groups : {1, 3}) {
      const std::size_t count = groups * static_cast<std::size_t>(n);
      expect_same_as_ref(normal_values(count, 500 + n), n, "normal");
      expect_same_as_ref(random_bits(count, 600 + n, 1, 127 + 60), n, "normal numbers, 2^-126..2^60");
      expect_same_as_ref(random_bits(count, 700 + n, 0, 255), n, "any bit pattern");
    }
  }
}

// Edge inputs, three groups each: the cases most likely to differ if a path flushed, reordered or fused anything.
std::vector<std::pair<const char*, std::vector<float>>> edge_inputs(int n) {
  const auto len = static_cast<std::size_t>(n), count = 3 * len;
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  const float max = std::numeric_limits<float>::max(), tiny = std::numeric_limits<float>::denorm_min();
  std::vector<std::pair<const char*, std::vector<float>>> cases = {
      {"+0", std::vector<float>(count, 0.0f)},
      {"-0", std::vector<float>(count, -0.0f)},
      {"random +-0", random_signs(0.0f, count, 1)},
      {"subnormals", random_bits(count, 2, 0, 0)},  // exponent field 0
      {"+-denorm_min", random_signs(tiny, count, 3)},
      {"+-max", random_signs(max, count, 4)},
      {"near overflow", random_bits(count, 5, 254 - 6, 254)},
      {"one +Inf", normal_values(count, 6)},
      {"one -Inf", normal_values(count, 7)},
      {"+Inf and -Inf", normal_values(count, 8)},
      {"one NaN", normal_values(count, 9)},
  };
  const std::size_t p = count / 2;  // in the middle group
  cases[7].second[p] = inf;
  cases[8].second[p] = -inf;
  cases[9].second[p] = inf;
  cases[9].second[p / len * len] = -inf;  // same group: Inf - Inf gives NaN
  cases[10].second[p] = nan;
  return cases;
}

TEST_P(RotateTarget, EdgeInputsMatchReferenceBits) {
  for (int n : sizes(1)) {
    for (const auto& [name, in] : edge_inputs(n)) expect_same_as_ref(in, n, name);
  }
}

// >= 1 MiB, so mf::rotate splits the groups between threads; odd group counts leave uneven splits.
TEST_P(RotateTarget, LargeThreadedInputsMatchReferenceBits) {
  for (auto [n, groups] : {std::pair<int, std::size_t>{16, 16385}, {128, 4097}, {1024, 257}, {4096, 65}}) {
    const std::size_t count = groups * static_cast<std::size_t>(n);
    ASSERT_GE(count * sizeof(float), std::size_t{1} << 20);
    expect_same_as_ref(normal_values(count, 800 + n), n, "large");
  }
}

}  // namespace
