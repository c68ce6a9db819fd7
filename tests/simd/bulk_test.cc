// Bulk casts against the scalar codec (codec.h), bit for bit, on every compiled Highway target: every format of
// 16 bits or fewer, every rounding and overflow option, on random, edge and adversarial inputs (each format's
// rounding midpoints and their neighbours, overflow boundaries, subnormals of the format and of f32, NaN payloads,
// +-0, +-Inf, the ue8m0 region below 2^-126), at every offset of a vector (odd lengths, so the scalar tails run too).
// The same inputs without Inf, NaN and f32 subnormals too, so that every vector takes the vector steps rather than the
// scalar codec. Bulk decode against decode() on every code of every format, on every target. The exhaustive suite
// runs all 2^32 f32 inputs through encode_bulk.
#include <gtest/gtest.h>

#include <bit>
#include <cfenv>
#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "each_target.h"
#include "hwy/highway.h"
#include "hwy/targets.h"
#include "minifloat/bulk.h"
#include "minifloat/format.h"
#include "minifloat/random.h"

namespace {

using mf::test::for_each_target;

// Inputs that stress format f: every code's value and the midpoints between neighbours (exact in f32 for formats of
// 16 bits or fewer) with their f32 neighbours, then random bit patterns, random values near f's range, and specials.
std::vector<float> inputs(const mf::Format& f, std::uint32_t seed) {
  std::vector<float> x;
  const std::uint32_t count = f.code_count() > 4096 ? 4096 : static_cast<std::uint32_t>(f.code_count());
  std::mt19937 rng(seed);
  for (std::uint32_t k = 0; k < count; ++k) {
    const std::uint32_t c = f.code_count() > 4096 ? rng() % static_cast<std::uint32_t>(f.code_count()) : k;
    const float v = mf::decode(f, c), w = mf::decode(f, c + 1);
    if (!std::isfinite(v)) continue;
    for (const float y : {v, std::isfinite(w) ? (v + w) / 2 : v * 1.0625f}) {
      for (const float s : {1.0f, -1.0f}) {
        const float z = s * y;
        x.push_back(z);
        x.push_back(std::nextafter(z, INFINITY));
        x.push_back(std::nextafter(z, -INFINITY));
      }
    }
  }
  for (int i = 0; i < 20000; ++i) x.push_back(std::bit_cast<float>(static_cast<std::uint32_t>(rng())));
  const float top = static_cast<float>(f.max_finite());
  std::uniform_real_distribution<float> u(-1.25f, 1.25f);
  for (int i = 0; i < 20000; ++i) x.push_back(u(rng) * top * std::ldexp(1.0f, -static_cast<int>(rng() % 40)));
  for (const float s : {0.0f, -0.0f, INFINITY, -INFINITY, NAN, -NAN, 1e-40f, -1e-40f, 0x1p-127f, 0x1.8p-127f,
                        0x1p-126f, 3.4e38f, -3.4e38f}) {
    x.push_back(s);
  }
  x.push_back(std::bit_cast<float>(0x7F800001u));  // signalling NaN with a payload
  x.push_back(std::bit_cast<float>(0xFFC12345u));
  return x;
}

// x without the lanes the vector steps hand to the scalar codec (Inf, NaN, f32 subnormals).
std::vector<float> vector_steps_only(const std::vector<float>& x) {
  std::vector<float> y;
  for (const float v : x) {
    if (std::isfinite(v) && std::fpclassify(v) != FP_SUBNORMAL) y.push_back(v);
  }
  return y;
}

template <class Code>
void check_encode(const mf::Format& f, const mf::BulkOptions& o, const std::vector<float>& x, const std::string& what) {
  for (const std::size_t offset : {std::size_t{0}, std::size_t{1}, std::size_t{5}}) {
    const std::span<const float> in(x.data() + offset, x.size() - offset);
    std::vector<Code> got(in.size());
    mf::encode_bulk(f, in, std::span<Code>(got), o);
    std::size_t bad = 0;
    for (std::size_t i = 0; i < in.size(); ++i) {
      mf::EncodeOptions e{o.rounding, o.overflow, mf::stochastic_bits(o.seed, i)};
      const auto want = static_cast<Code>(mf::encode(f, in[i], e));
      if (got[i] != want && bad++ < 3) {
        ADD_FAILURE() << what << ": element " << i << " x = " << in[i] << " (0x" << std::hex
                      << std::bit_cast<std::uint32_t>(in[i]) << "): got 0x" << +got[i] << ", want 0x" << +want
                      << std::dec;
      }
    }
    EXPECT_EQ(bad, 0u) << what << ", offset " << offset;
  }
}

TEST(BulkEncode, EveryFormatOptionAndTargetMatchesTheScalarCodec) {
  for_each_target([](std::int64_t target) {
    for (const mf::Format* f : mf::all_formats) {
      if (f->bits() > 16 || (f->bits() > 8 && f->bits() < 16)) continue;
      const std::vector<float> mixed = inputs(*f, 1), clean = vector_steps_only(mixed);
      for (const auto rounding : {mf::Rounding::nearest_even, mf::Rounding::toward_zero, mf::Rounding::stochastic}) {
        for (const auto overflow : {mf::Overflow::standard, mf::Overflow::saturate}) {
          const mf::BulkOptions o{rounding, overflow, 42, 1};
          const std::string what = std::string(hwy::TargetName(target)) + " " + std::string(f->name) + " rounding " +
                                   std::to_string(static_cast<int>(rounding)) + " overflow " +
                                   std::to_string(static_cast<int>(overflow));
          for (const std::vector<float>* x : {&mixed, &clean}) {
            if (f->bits() <= 8) {
              check_encode<std::uint8_t>(*f, o, *x, what);
            } else {
              check_encode<std::uint16_t>(*f, o, *x, what);
            }
          }
        }
      }
    }
  });
}

TEST(BulkEncode, ThreadsGiveTheSameCodes) {
  std::vector<float> x(300000);
  std::mt19937 rng(3);
  std::normal_distribution<float> n(0, 3);
  for (float& v : x) v = n(rng);
  for (const auto rounding : {mf::Rounding::nearest_even, mf::Rounding::stochastic}) {
    std::vector<std::uint8_t> one(x.size()), two(x.size());
    mf::encode_bulk(mf::e2m1, x, std::span<std::uint8_t>(one), {rounding, mf::Overflow::standard, 9, 1});
    mf::encode_bulk(mf::e2m1, x, std::span<std::uint8_t>(two), {rounding, mf::Overflow::standard, 9, 2});
    EXPECT_EQ(one, two);
  }
}

// A caller casting an array piece by piece (first_index) gets the stochastic codes of one whole-array call.
TEST(BulkEncode, PiecesWithFirstIndexEqualTheWhole) {
  std::vector<float> x(1000);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = 0.1f * static_cast<float>(i % 37) - 1.5f;
  const mf::BulkOptions o{mf::Rounding::stochastic, mf::Overflow::standard, 5, 1};
  std::vector<std::uint8_t> whole(x.size()), pieces(x.size());
  mf::encode_bulk(mf::e2m1, x, std::span<std::uint8_t>(whole), o);
  for (std::size_t begin = 0; begin < x.size(); begin += 300) {
    const std::size_t len = std::min<std::size_t>(300, x.size() - begin);
    mf::BulkOptions p = o;
    p.first_index = begin;
    mf::encode_bulk(mf::e2m1, std::span<const float>(x.data() + begin, len),
                    std::span<std::uint8_t>(pieces.data() + begin, len), p);
  }
  EXPECT_EQ(whole, pieces);
}

// Round to nearest even under another f32 rounding mode: the vector step that adds in f32 must not be used.
TEST(BulkEncode, NearestEvenHoldsUnderAnotherFloatRoundingMode) {
  const std::vector<float> x = vector_steps_only(inputs(mf::e4m3, 4));
  const int mode = std::fegetround();
  for (const int other : {FE_UPWARD, FE_DOWNWARD, FE_TOWARDZERO}) {
    ASSERT_EQ(std::fesetround(other), 0);
    std::vector<std::uint8_t> got(x.size());
    mf::encode_bulk(mf::e4m3, x, std::span<std::uint8_t>(got));
    std::fesetround(mode);
    for (std::size_t i = 0; i < x.size(); ++i) {
      ASSERT_EQ(got[i], mf::encode(mf::e4m3, x[i])) << "mode " << other << " x = " << x[i];
    }
  }
}

TEST(BulkDecode, EveryCodeOfEveryFormatOnEveryTarget) {
  for_each_target([](std::int64_t target) {
    for (const mf::Format* f : mf::all_formats) {
      if (f->bits() > 16 || (f->bits() > 8 && f->bits() < 16)) continue;
      // Every code, then high bits set above the format's (ignored, as decode does), at every vector offset.
      const std::size_t n = f->code_count() * (f->bits() < 8 ? 2 : 1) + 3;
      for (const std::size_t offset : {std::size_t{0}, std::size_t{1}, std::size_t{3}}) {
        std::vector<float> got(n - offset);
        std::vector<std::uint32_t> codes(n - offset);
        for (std::size_t i = 0; i < codes.size(); ++i) codes[i] = static_cast<std::uint32_t>((i + offset) * 0x10001u);
        if (f->bits() <= 8) {
          std::vector<std::uint8_t> c(codes.begin(), codes.end());
          mf::decode_bulk(*f, c, got);
          for (std::size_t i = 0; i < c.size(); ++i) codes[i] = c[i];
        } else {
          std::vector<std::uint16_t> c(codes.begin(), codes.end());
          mf::decode_bulk(*f, c, got);
          for (std::size_t i = 0; i < c.size(); ++i) codes[i] = c[i];
        }
        for (std::size_t i = 0; i < got.size(); ++i) {
          ASSERT_EQ(std::bit_cast<std::uint32_t>(got[i]), std::bit_cast<std::uint32_t>(mf::decode(*f, codes[i])))
              << hwy::TargetName(target) << " " << f->name << " code 0x" << std::hex << codes[i];
        }
      }
    }
  });
}

TEST(BulkErrors, LengthsAndCodeWidthsAreChecked) {
  std::vector<float> x(4);
  std::vector<std::uint8_t> c3(3), c4(4);
  std::vector<std::uint16_t> w4(4);
  EXPECT_THROW(mf::encode_bulk(mf::e4m3, x, std::span<std::uint8_t>(c3)), std::invalid_argument);
  try {
    mf::decode_bulk(mf::e4m3, std::span<const std::uint8_t>(c3), x);
    ADD_FAILURE() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "decode_bulk: codes has 3 elements, x has 4 (one code per value)");
  }
  EXPECT_THROW(mf::encode_bulk(mf::bf16, x, std::span<std::uint8_t>(c4)), std::invalid_argument);
  EXPECT_THROW(mf::encode_bulk(mf::e4m3, x, std::span<std::uint16_t>(w4)), std::invalid_argument);
  EXPECT_THROW(mf::decode_bulk(mf::e4m3, std::span<const std::uint8_t>(c3), x), std::invalid_argument);
}

}  // namespace
