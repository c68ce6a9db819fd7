// Bulk casts against the scalar codec (codec.h), bit for bit, on every Highway target this CPU supports and the build
// compiled (Highway's TestWithParamTarget: one instance per target, dispatch pinned to it): every format of
// 16 bits or fewer, every rounding and overflow option, on random, edge and adversarial inputs (each format's
// rounding midpoints and their neighbours, overflow boundaries, subnormals of the format and of f32, NaN payloads,
// +-0, +-Inf, the ue8m0 region below 2^-126), at every offset of a vector (odd lengths, so the scalar tails run too).
// The same inputs without Inf, NaN and f32 subnormals too, so that every vector takes the vector steps rather than the
// scalar codec. Bulk decode against decode() on every code of every format, on every target. The exhaustive suite
// runs all 2^32 f32 inputs through encode_bulk. The other value types (f64 with its own ties, every bf16 and f16
// value; into f64, bf16 and f16) and packed FP4 / FP6 codes the same way, with golden bytes typed by hand.
#include <gtest/gtest.h>
#include <hwy/targets.h>  // target enumeration only: the library is called through its public headers
#include <hwy/tests/hwy_gtest.h>

#include <algorithm>
#include <bit>
#include <cfenv>
#include <cmath>
#include <cstdint>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "minifloat/bulk.h"
#include "minifloat/format.h"
#include "minifloat/pack.h"
#include "minifloat/random.h"

#if HWY_ARCH_X86
#include <xmmintrin.h>  // _mm_getcsr / _mm_setcsr: the denormal modes
#endif

namespace {

// Every rounding and overflow option: those without a vector codec (away_from_zero, nearest_away; clamp,
// nan_outside_range) take the scalar codec inside encode_bulk, and must give its codes all the same.
constexpr mf::Rounding kRoundings[] = {mf::Rounding::nearest_even, mf::Rounding::toward_zero, mf::Rounding::stochastic,
                                       mf::Rounding::away_from_zero, mf::Rounding::nearest_away};
constexpr mf::Overflow kOverflows[] = {mf::Overflow::format_default, mf::Overflow::saturate, mf::Overflow::clamp,
                                       mf::Overflow::nan_outside_range};

// One instance of each per-target test per target, dispatch pinned to it; the scalar codec runs the same in each.
class BulkEncodeTarget : public hwy::TestWithParamTarget {};
HWY_TARGET_INSTANTIATE_TEST_SUITE_P(BulkEncodeTarget);
class BulkDecodeTarget : public hwy::TestWithParamTarget {};
HWY_TARGET_INSTANTIATE_TEST_SUITE_P(BulkDecodeTarget);
class BulkPackedTarget : public hwy::TestWithParamTarget {};
HWY_TARGET_INSTANTIATE_TEST_SUITE_P(BulkPackedTarget);

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
  for (const float s : {0.0f, -0.0f, INFINITY, -INFINITY, NAN, -NAN, 1e-40f, -1e-40f, 0x1p-127f, 0x1.8p-127f, 0x1p-126f,
                        3.4e38f, -3.4e38f}) {
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

TEST_P(BulkEncodeTarget, EveryFormatOptionAndTargetMatchesTheScalarCodec) {
  const std::int64_t target = GetParam();
  for (const mf::Format* f : mf::all_formats) {
    if (f->bits() > 16 || (f->bits() > 8 && f->bits() < 16)) continue;
    const std::vector<float> mixed = inputs(*f, 1), clean = vector_steps_only(mixed);
    for (const auto rounding : kRoundings) {
      for (const auto overflow : kOverflows) {
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
}

TEST(BulkEncode, ThreadsGiveTheSameCodes) {
  std::vector<float> x(300000);
  std::mt19937 rng(3);
  std::normal_distribution<float> n(0, 3);
  for (float& v : x) v = n(rng);
  for (const auto rounding : {mf::Rounding::nearest_even, mf::Rounding::stochastic}) {
    std::vector<std::uint8_t> one(x.size()), two(x.size());
    mf::encode_bulk(mf::e2m1, x, std::span<std::uint8_t>(one), {rounding, mf::Overflow::format_default, 9, 1});
    mf::encode_bulk(mf::e2m1, x, std::span<std::uint8_t>(two), {rounding, mf::Overflow::format_default, 9, 2});
    EXPECT_EQ(one, two);
  }
}

// A caller casting an array piece by piece (first_index) gets the stochastic codes of one whole-array call, from
// pieces that start anywhere, and both are the codes of encode() with each element's stochastic_bits; also where the
// indices cross 2^32 (the hash's middle changes there: mid-vector at 2^32 - 517).
TEST_P(BulkEncodeTarget, PiecesWithFirstIndexEqualTheWhole) {
  std::vector<float> x(1000);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = 0.1f * static_cast<float>(i % 37) - 1.5f;
  for (const std::uint64_t base : {std::uint64_t{0}, (std::uint64_t{1} << 32) - 517}) {
    mf::BulkOptions o{mf::Rounding::stochastic, mf::Overflow::format_default, 5, 1};
    o.first_index = base;
    std::vector<std::uint8_t> whole(x.size());
    mf::encode_bulk(mf::e2m1, x, std::span<std::uint8_t>(whole), o);
    for (std::size_t i = 0; i < x.size(); ++i) {
      const mf::EncodeOptions e{mf::Rounding::stochastic, mf::Overflow::format_default,
                                mf::stochastic_bits(5, base + i)};
      ASSERT_EQ(whole[i], mf::encode(mf::e2m1, x[i], e)) << "element " << base << " + " << i;
    }
    for (const std::size_t piece : {300, 301, 97}) {
      std::vector<std::uint8_t> pieces(x.size());
      for (std::size_t begin = 0; begin < x.size(); begin += piece) {
        const std::size_t len = std::min<std::size_t>(piece, x.size() - begin);
        mf::BulkOptions p = o;
        p.first_index = base + begin;
        mf::encode_bulk(mf::e2m1, std::span<const float>(x.data() + begin, len),
                        std::span<std::uint8_t>(pieces.data() + begin, len), p);
      }
      EXPECT_EQ(whole, pieces) << "pieces of " << piece << " from " << base;
    }
  }
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

TEST_P(BulkDecodeTarget, EveryCodeOfEveryFormatOnEveryTarget) {
  const std::int64_t target = GetParam();
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
}

// Casts of 4 MiB or more (input and output together) take streaming stores from their output's first vector-aligned
// element on (bulk.cc): an output that starts 1 to 3 elements past a 64-byte boundary (head, streamed body, tail),
// on one thread and on two (each thread's chunk streams and fences on its own), against decode().
TEST_P(BulkDecodeTarget, LargeOutputsThroughStreamingStoresOnEveryTarget) {
  const std::int64_t target = GetParam();
  const std::size_t n = (std::size_t{1} << 20) + 77;  // 4 MiB of f32 and more
  std::vector<float> storage(n + 16);
  for (const mf::Format* f : {&mf::bf16, &mf::f16, &mf::e4m3, &mf::e2m1}) {
    for (const std::size_t offset : {std::size_t{1}, std::size_t{3}}) {
      for (const int threads : {1, 2}) {
        std::span<float> got(storage.data() + offset, n);
        std::fill(storage.begin(), storage.end(), -1.0f);
        std::vector<std::uint16_t> codes(n);
        for (std::size_t i = 0; i < n; ++i) codes[i] = static_cast<std::uint16_t>(i * 2654435761u >> 7);
        if (f->bits() <= 8) {
          std::vector<std::uint8_t> c(n);
          for (std::size_t i = 0; i < n; ++i) c[i] = static_cast<std::uint8_t>(codes[i]);
          mf::decode_bulk(*f, c, got, threads);
        } else {
          mf::decode_bulk(*f, codes, got, threads);
        }
        for (std::size_t i = 0; i < n; ++i) {
          const std::uint32_t code = f->bits() <= 8 ? codes[i] & 0xFFu : codes[i];
          ASSERT_EQ(std::bit_cast<std::uint32_t>(got[i]), std::bit_cast<std::uint32_t>(mf::decode(*f, code)))
              << hwy::TargetName(target) << " " << f->name << " offset " << offset << " threads " << threads
              << " element " << i;
        }
        EXPECT_EQ(storage[offset - 1], -1.0f);  // nothing written outside the span
        EXPECT_EQ(storage[offset + n], -1.0f);
      }
    }
  }
}

// The same for encode: codes from 1 to 3 elements past a 64-byte boundary, nearest-even and stochastic, against
// encode() with each element's stochastic bits.
template <class Code>
void check_streamed_encode(std::int64_t target, const mf::Format& f, const std::vector<float>& x) {
  std::vector<Code> storage(x.size() + 80);
  for (const auto rounding : {mf::Rounding::nearest_even, mf::Rounding::stochastic}) {
    for (const auto& [offset, threads] : {std::pair{1, 1}, std::pair{2, 1}, std::pair{3, 2}}) {
      const mf::BulkOptions o{rounding, mf::Overflow::format_default, 11, threads};
      std::fill(storage.begin(), storage.end(), Code{0x5A});
      const std::span<Code> got(storage.data() + offset, x.size());
      mf::encode_bulk(f, std::span<const float>(x), got, o);
      for (std::size_t i = 0; i < x.size(); ++i) {
        const mf::EncodeOptions e{o.rounding, o.overflow, mf::stochastic_bits(o.seed, i)};
        ASSERT_EQ(got[i], mf::encode(f, x[i], e)) << hwy::TargetName(target) << " " << f.name << " offset " << offset
                                                  << " threads " << threads << " x = " << x[i];
      }
      EXPECT_EQ(storage[offset - 1], Code{0x5A});  // nothing written outside the span
      EXPECT_EQ(storage[offset + x.size()], Code{0x5A});
    }
  }
}

// Zeros in the vectors that take stochastic rounding's subnormal step: a zero's code there comes out of that step's
// shifts (a count past 31 on x86), and a wrong count would round a zero up about once in 256 draws, so many zeros.
// Also for a format built by the caller whose zero count stays below 32 (bf16's layout with bias 126: its smallest
// normal 2^-125 is an f32 normal), which needs the zero fixup.
constexpr mf::Format kBias126{"e8m7b126", "", 1, 8, 7, 126, mf::Specials::ieee};
TEST_P(BulkEncodeTarget, ZerosAmongSubnormalsRoundStochasticallyToZero) {
  std::vector<const mf::Format*> formats(mf::all_formats.begin(), mf::all_formats.end());
  formats.push_back(&kBias126);
  for (const mf::Format* f : formats) {
    if (f->bits() > 16 || (f->bits() > 8 && f->bits() < 16) || !f->has_subnormals()) continue;
    std::vector<float> x(24000);
    for (std::size_t i = 0; i < x.size(); ++i) {
      // Below the smallest normal, but f32 normals (f32 subnormals take the scalar codec).
      const float sub = std::max(f->min_subnormal(), 0x1p-126f) * (1.0f + static_cast<float>(i % 7) / 8.0f);
      x[i] = i % 4 == 0 ? 0.0f : i % 4 == 1 ? -0.0f : i % 4 == 2 ? sub : -sub;
    }
    const mf::BulkOptions o{mf::Rounding::stochastic, mf::Overflow::format_default, 3, 1};
    const std::string what = std::string(hwy::TargetName(GetParam())) + " " + std::string(f->name);
    if (f->bits() <= 8) {
      check_encode<std::uint8_t>(*f, o, x, what);
    } else {
      check_encode<std::uint16_t>(*f, o, x, what);
    }
  }
}

TEST_P(BulkEncodeTarget, LargeCastsThroughStreamingStoresOnEveryTarget) {
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 4.0f);
  std::vector<float> x((std::size_t{1} << 20) + 77);  // 4 MiB of f32 and more
  for (float& v : x) v = normal(rng);
  x[1000] = NAN, x[2000] = -INFINITY, x[3000] = 0x1p-140f, x[4000] = -0.0f;  // groups through the rare path
  check_streamed_encode<std::uint8_t>(GetParam(), mf::e4m3, x);
  check_streamed_encode<std::uint16_t>(GetParam(), mf::bf16, x);
}

// Formats of bulk.h: 8 bits or fewer, or 16.
bool bulk_format(const mf::Format& f) { return f.bits() <= 8 || f.bits() == 16; }

std::string name_of(std::int64_t target, const mf::Format& f, const mf::BulkOptions& o) {
  return std::string(hwy::TargetName(target)) + " " + std::string(f.name) + " rounding " +
         std::to_string(static_cast<int>(o.rounding)) + " overflow " + std::to_string(static_cast<int>(o.overflow));
}

// Calls fn(o) for every rounding and overflow option.
template <class Fn>
void for_each_option(Fn fn) {
  for (const auto rounding : kRoundings) {
    for (const auto overflow : kOverflows) {
      fn(mf::BulkOptions{rounding, overflow, 42, 1});
    }
  }
}

// codes = encode_bulk(input) against want(i, options), element by element.
template <class Code, class Input, class Want>
void check_against(const mf::BulkOptions& o, const Input& encode, std::size_t n, Want want, const std::string& what) {
  std::vector<Code> got(n);
  encode(std::span<Code>(got));
  std::size_t bad = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const mf::EncodeOptions e{o.rounding, o.overflow, mf::stochastic_bits(o.seed, i)};
    const auto w = static_cast<Code>(want(i, e));
    if (got[i] != w && bad++ < 3) {
      ADD_FAILURE() << what << ": element " << i << ": got 0x" << std::hex << +got[i] << ", want 0x" << +w;
    }
  }
  EXPECT_EQ(bad, 0u) << what;
}

// f64 inputs: the f32 inputs, and for each of f's rounding midpoints the f64 values just above and below it, which
// round to the midpoint itself in f32 (a cast through f32 rounds them twice, to the even neighbour); f64 values
// beyond f32's range and below its subnormals; random f64 bit patterns.
std::vector<double> inputs64(const mf::Format& f) {
  std::vector<double> x;
  for (const float v : inputs(f, 7)) x.push_back(v);
  const std::uint32_t count = f.code_count() > 4096 ? 4096 : static_cast<std::uint32_t>(f.code_count());
  for (std::uint32_t c = 0; c < count; ++c) {
    const double v = mf::decode(f, c), w = mf::decode(f, c + 1);
    if (!std::isfinite(v) || !std::isfinite(w)) continue;
    const double mid = (v + w) / 2;
    for (const double s : {1.0, -1.0}) {
      x.push_back(s * std::nextafter(mid, INFINITY));
      x.push_back(s * std::nextafter(mid, -INFINITY));
      x.push_back(s * (mid + std::ldexp(std::abs(mid), -40)));
    }
  }
  std::mt19937_64 rng(11);
  for (int i = 0; i < 20000; ++i) x.push_back(std::bit_cast<double>(rng()));
  for (const double s : {1e300, -1e300, 1e-300, -1e-300, 3.5e38, 0x1p-150, 0x1.0000001p-149}) x.push_back(s);
  return x;
}

TEST_P(BulkEncodeTarget, F64RoundsOnceFromTheF64ValueOnEveryTarget) {
  const std::int64_t target = GetParam();
  for (const mf::Format* f : mf::all_formats) {
    if (!bulk_format(*f)) continue;
    const std::vector<double> x = inputs64(*f);
    for_each_option([&](const mf::BulkOptions& o) {
      const auto want = [&](std::size_t i, const mf::EncodeOptions& e) { return mf::encode(*f, x[i], e); };
      const auto run = [&](auto codes) { mf::encode_bulk(*f, std::span<const double>(x), codes, o); };
      if (f->bits() <= 8) {
        check_against<std::uint8_t>(o, run, x.size(), want, "f64 " + name_of(target, *f, o));
      } else {
        check_against<std::uint16_t>(o, run, x.size(), want, "f64 " + name_of(target, *f, o));
      }
    });
  }
}

// Typed by hand: f64 values just above a tie of e4m3 (1.0625, between 1 and 1.125) and of e2m1 (2.5, between 2 and
// 3) round up; through f32 they become the tie and round to the even code.
TEST(BulkEncode, F64JustAboveATieRoundsUp) {
  const std::vector<double> x{1.0625 + 0x1p-40, 2.5 + 0x1p-30, -(2.5 + 0x1p-30), 2.5};
  std::vector<std::uint8_t> e4m3(x.size()), e2m1(x.size());
  mf::encode_bulk(mf::e4m3, std::span<const double>(x), std::span<std::uint8_t>(e4m3));
  mf::encode_bulk(mf::e2m1, std::span<const double>(x), std::span<std::uint8_t>(e2m1));
  EXPECT_EQ(e4m3[0], 0x39);                                          // 1.125; through f32, 0x38 (1.0)
  EXPECT_EQ(e2m1[1], 0x5);                                           // 3.0; through f32, 0x4 (2.0)
  EXPECT_EQ(e2m1[2], 0xD);                                           // -3.0
  EXPECT_EQ(e2m1[3], 0x4);                                           // the tie itself: 2.0, even
  EXPECT_EQ(mf::encode(mf::e4m3, static_cast<float>(x[0])), 0x38u);  // the double rounding this avoids
}

TEST_P(BulkEncodeTarget, EveryBf16AndF16ValueThroughEveryFormatOnEveryTarget) {
  std::vector<std::uint16_t> all(1 << 16);
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = static_cast<std::uint16_t>(i);
  const std::int64_t target = GetParam();
  for (const mf::Format* from : {&mf::bf16, &mf::f16}) {
    for (const mf::Format* f : mf::all_formats) {
      if (!bulk_format(*f)) continue;
      for_each_option([&](const mf::BulkOptions& o) {
        const auto want = [&](std::size_t i, const mf::EncodeOptions& e) {
          return mf::encode(*f, mf::decode(*from, all[i]), e);
        };
        const auto run = [&](auto codes) { mf::encode_bulk(*f, *from, std::span<const std::uint16_t>(all), codes, o); };
        const std::string what = std::string(from->name) + " " + name_of(target, *f, o);
        if (f->bits() <= 8) {
          check_against<std::uint8_t>(o, run, all.size(), want, what);
        } else {
          check_against<std::uint16_t>(o, run, all.size(), want, what);
        }
      });
    }
  }
}

// Every code (and high bits above the format's, ignored) into f64, bf16 and f16, at odd lengths.
template <class Code>
void check_decode_wide(const mf::Format& f, const std::string& what) {
  std::vector<Code> codes(f.code_count() * (f.bits() < 8 ? 2 : 1) + 3);
  for (std::size_t i = 0; i < codes.size(); ++i) codes[i] = static_cast<Code>(i * 0x10001u);
  std::vector<double> d(codes.size());
  mf::decode_bulk(f, std::span<const Code>(codes), std::span<double>(d));
  for (std::size_t i = 0; i < codes.size(); ++i) {
    const double want = mf::decode(f, codes[i]);
    ASSERT_TRUE(d[i] == want || (std::isnan(d[i]) && std::isnan(want))) << what << " f64 code " << +codes[i];
  }
  for (const mf::Format* to : {&mf::bf16, &mf::f16}) {
    std::vector<std::uint16_t> w(codes.size());
    mf::decode_bulk(f, std::span<const Code>(codes), *to, std::span<std::uint16_t>(w));
    for (std::size_t i = 0; i < codes.size(); ++i) {
      ASSERT_EQ(w[i], mf::encode(*to, mf::decode(f, codes[i]))) << what << " " << to->name << " code " << +codes[i];
    }
  }
}

TEST_P(BulkDecodeTarget, IntoF64Bf16AndF16OnEveryTarget) {
  const std::int64_t target = GetParam();
  for (const mf::Format* f : mf::all_formats) {
    if (!bulk_format(*f)) continue;
    const std::string what = std::string(hwy::TargetName(target)) + " " + std::string(f->name);
    if (f->bits() <= 8) {
      check_decode_wide<std::uint8_t>(*f, what);
    } else {
      check_decode_wide<std::uint16_t>(*f, what);
    }
  }
}

// Packed against the unpacked codes packed by pack.h, every length up to 70 (odd FP4 lengths, FP6 lengths off a
// group) and a long one across pieces, every option, every target; decoded back against decode().
TEST_P(BulkPackedTarget, EncodeAndDecodeEqualTheUnpackedCodesPacked) {
  const std::int64_t target = GetParam();
  for (const mf::Format* f : {&mf::e2m1, &mf::e2m3, &mf::e3m2, &mf::e4m3}) {
    const std::vector<float> all = inputs(*f, 2);
    for_each_option([&](const mf::BulkOptions& o) {
      std::vector<std::size_t> lengths{all.size(), 5001};
      for (std::size_t n = 0; n <= 70; ++n) lengths.push_back(n);
      for (const std::size_t n : lengths) {
        const std::span<const float> x(all.data(), n);
        std::vector<std::uint8_t> codes(n), want(mf::packed_size(n, f->bits())), got(want.size());
        mf::encode_bulk(*f, x, std::span<std::uint8_t>(codes), o);
        mf::pack_codes(codes, f->bits(), want);
        mf::encode_bulk_packed(*f, x, got, o);
        ASSERT_EQ(got, want) << name_of(target, *f, o) << " n " << n;
        std::vector<float> back(n);
        mf::decode_bulk_packed(*f, got, back);
        for (std::size_t i = 0; i < n; ++i) {
          ASSERT_EQ(std::bit_cast<std::uint32_t>(back[i]), std::bit_cast<std::uint32_t>(mf::decode(*f, codes[i])))
              << name_of(target, *f, o) << " n " << n << " element " << i;
        }
      }
    });
  }
}

// Typed by hand. e2m1: 1.0 = 0x2, -0.5 = 0x9, 6.0 = 0x7 -> bytes 92 07 (last nibble padded with 0).
// e2m3: 1.0 = 8, 2.0 = 16, -1.0 = 40, 0.125 = 1 -> 8 | 16 << 6 | 40 << 12 | 1 << 18 = 0x068408 -> 08 84 06;
// then 7.5 = 31 alone -> 1f 00 00.
TEST(BulkPacked, GoldenBytes) {
  const std::vector<float> fp4{1.0f, -0.5f, 6.0f};
  std::vector<std::uint8_t> p4(2);
  mf::encode_bulk_packed(mf::e2m1, fp4, p4);
  EXPECT_EQ(p4, (std::vector<std::uint8_t>{0x92, 0x07}));
  const std::vector<float> fp6{1.0f, 2.0f, -1.0f, 0.125f, 7.5f};
  std::vector<std::uint8_t> p6(6);
  mf::encode_bulk_packed(mf::e2m3, fp6, p6);
  EXPECT_EQ(p6, (std::vector<std::uint8_t>{0x08, 0x84, 0x06, 0x1F, 0x00, 0x00}));
  std::vector<float> back(5);
  mf::decode_bulk_packed(mf::e2m3, p6, back);
  EXPECT_EQ(back, fp6);
  std::vector<float> back4(3);
  mf::decode_bulk_packed(mf::e2m1, p4, back4);
  EXPECT_EQ(back4, fp4);
}

TEST(BulkPacked, SizesAndFormatsAreChecked) {
  const std::vector<float> x(5);
  std::vector<std::uint8_t> two(2), three(3), w(5);
  try {
    mf::encode_bulk_packed(mf::e2m1, x, two);
    ADD_FAILURE() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "encode_bulk_packed: packed has 2 bytes, 5 e2m1 codes pack into 3");
  }
  std::vector<float> y(5);
  EXPECT_THROW(mf::decode_bulk_packed(mf::e2m3, three, y), std::invalid_argument);  // 5 FP6 codes take 6 bytes
  EXPECT_THROW(mf::encode_bulk_packed(mf::bf16, x, w), std::invalid_argument);
  const std::vector<std::uint16_t> h(5);
  std::vector<std::uint8_t> c(5);
  EXPECT_THROW(mf::encode_bulk(mf::e4m3, mf::e4m3, std::span<const std::uint16_t>(h), std::span<std::uint8_t>(c)),
               std::invalid_argument);
}

TEST(BulkEncode, ThreadsGiveTheSameCodesForEveryInputType) {
  std::vector<double> x(300001);
  std::mt19937 rng(3);
  std::normal_distribution<double> n(0, 3);
  for (double& v : x) v = n(rng);
  std::vector<float> xf(x.begin(), x.end());
  for (const auto rounding : {mf::Rounding::nearest_even, mf::Rounding::stochastic}) {
    const mf::BulkOptions one{rounding, mf::Overflow::format_default, 9, 1},
        two{rounding, mf::Overflow::format_default, 9, 2};
    std::vector<std::uint8_t> a(x.size()), b(x.size());
    mf::encode_bulk(mf::e4m3, std::span<const double>(x), std::span<std::uint8_t>(a), one);
    mf::encode_bulk(mf::e4m3, std::span<const double>(x), std::span<std::uint8_t>(b), two);
    EXPECT_EQ(a, b);
    std::vector<std::uint8_t> p(mf::packed_size(x.size(), 6)), q(p.size());
    mf::encode_bulk_packed(mf::e2m3, xf, p, one);
    mf::encode_bulk_packed(mf::e2m3, xf, q, two);
    EXPECT_EQ(p, q);
    std::vector<float> u(x.size()), v(x.size());
    mf::decode_bulk_packed(mf::e2m3, p, u, 1);
    mf::decode_bulk_packed(mf::e2m3, p, v, 2);
    EXPECT_EQ(u, v);
  }
}

// f32 subnormals (and zeros and normals beside them, never Inf or NaN, so that the vector steps take them) for every
// format, option and target, with the CPU's denormals-are-zero and flush-to-zero off and then on (x86 MXCSR): the
// codes are the scalar codec's, whose integer steps no floating-point setting touches.
TEST_P(BulkEncodeTarget, F32SubnormalsUnderEveryDenormalModeOnEveryTarget) {
  const std::int64_t target = GetParam();
  std::vector<float> x;
  std::mt19937 rng(9);
  for (int i = 0; i < 4000; ++i) {
    const std::uint32_t sign = (rng() & 1u) << 31;
    const std::uint32_t kind = rng() % 8;
    const std::uint32_t mag = kind == 0 ? 0u : kind == 1 ? 0x00800000u + rng() % 0x01000000u : 1u + rng() % 0x007FFFFFu;
    x.push_back(std::bit_cast<float>(sign | mag));
  }
#if HWY_ARCH_X86
  const unsigned saved = _mm_getcsr();
  for (const unsigned modes : {0u, 0x8040u}) {  // DAZ (bit 6) and FTZ (bit 15)
    _mm_setcsr((saved & ~0x8040u) | modes);
#else
  for (const unsigned modes : {0u}) {
#endif
    for (const mf::Format* f : mf::all_formats) {
      if (f->bits() > 16 || (f->bits() > 8 && f->bits() < 16)) continue;
      for (const auto rounding : kRoundings) {
        const mf::BulkOptions o{rounding, mf::Overflow::format_default, 5, 1};
        const std::string what = std::string(hwy::TargetName(target)) + " " + std::string(f->name) + " rounding " +
                                 std::to_string(static_cast<int>(rounding)) + " MXCSR modes " + std::to_string(modes);
        if (f->bits() <= 8) {
          check_encode<std::uint8_t>(*f, o, x, what);
        } else {
          check_encode<std::uint16_t>(*f, o, x, what);
        }
      }
    }
  }
#if HWY_ARCH_X86
  _mm_setcsr(saved);
#endif
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
