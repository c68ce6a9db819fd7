// The `minifloat encode` / `decode` filters, run as a user would: text and binary, every narrow code against the
// hand-typed golden tables, the rounding and overflow options, and their errors of input.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#define MF_GOLDEN_DIR MF_SOURCE_DIR "/tests/golden"
#include "../golden/golden_table.h"
#include "run_cli.h"

#include "cli_test_util.h"

namespace {

using nlohmann::json;

using mf::test::read_file;
using mf::test::Result;
using mf::test::run;

using namespace mf::test;

// ---- encode / decode: every code round trips ----

struct CodeSpace {
  const char* name;
  int bits;
  std::uint32_t (*canonical)(std::uint32_t code);  // what decode-then-encode must give back
};
std::uint32_t same(std::uint32_t c) { return c; }
// IEEE-style formats decode every NaN payload to "nan"; encoding that gives the quiet NaN with the sign.
std::uint32_t e5m2_nan(std::uint32_t c) { return (c & 0x7f) > 0x7c ? (c & 0x80) | 0x7e : c; }
std::uint32_t bf16_nan(std::uint32_t c) { return (c & 0x7fff) > 0x7f80 ? (c & 0x8000) | 0x7fc0 : c; }
std::uint32_t f16_nan(std::uint32_t c) { return (c & 0x7fff) > 0x7c00 ? (c & 0x8000) | 0x7e00 : c; }
std::uint32_t e3m4_nan(std::uint32_t c) { return (c & 0x7f) > 0x70 ? (c & 0x80) | 0x78 : c; }
std::uint32_t e4m3ieee_nan(std::uint32_t c) { return (c & 0x7f) > 0x78 ? (c & 0x80) | 0x7c : c; }

void PrintTo(const CodeSpace& s, std::ostream* os) { *os << s.name; }

class RoundTrip : public ::testing::TestWithParam<CodeSpace> {};

TEST_P(RoundTrip, DecodeEveryCodeThenEncodeGivesItBack) {
  const CodeSpace& s = GetParam();
  std::vector<std::string> codes;
  for (std::uint32_t c = 0; c < (1u << s.bits); ++c) codes.push_back(c % 2 ? hex(c) : std::to_string(c));
  const Result dec = run({"decode", s.name}, joined(codes));
  ASSERT_EQ(dec.exit_code, 0) << dec.err;
  const auto values = lines(dec.out);
  ASSERT_EQ(values.size(), codes.size());
  const Result enc = run({"encode", s.name}, dec.out);
  ASSERT_EQ(enc.exit_code, 0) << enc.err;
  const auto back = lines(enc.out);
  ASSERT_EQ(back.size(), codes.size());
  const int digits = (s.bits + 3) / 4;
  for (std::uint32_t c = 0; c < codes.size(); ++c) {
    char want[16];
    std::snprintf(want, sizeof want, "0x%0*x", digits, s.canonical(c));
    EXPECT_EQ(back[c], want) << s.name << " code " << hex(c) << " decoded to " << values[c];
  }
}

INSTANTIATE_TEST_SUITE_P(Formats, RoundTrip,
                         ::testing::Values(CodeSpace{"e4m3", 8, same}, CodeSpace{"e5m2", 8, e5m2_nan},
                                           CodeSpace{"e3m2", 6, same}, CodeSpace{"e2m3", 6, same},
                                           CodeSpace{"e2m1", 4, same}, CodeSpace{"ue8m0", 8, same},
                                           CodeSpace{"ue4m3", 7, same}, CodeSpace{"bf16", 16, bf16_nan},
                                           CodeSpace{"f16", 16, f16_nan}, CodeSpace{"e4m3fnuz", 8, same},
                                           CodeSpace{"e5m2fnuz", 8, same}, CodeSpace{"e4m3b11fnuz", 8, same},
                                           CodeSpace{"e3m4", 8, e3m4_nan}, CodeSpace{"e4m3ieee", 8, e4m3ieee_nan},
                                           CodeSpace{"ue5m3", 8, same}),
                         [](const auto& info) { return std::string(info.param.name); });

// The decimals decode prints read back (as f32) to the exact values of the hand-typed golden tables.
TEST(Decode, EveryNarrowCodeMatchesGoldenTable) {
  for (const char* name : {"e4m3", "e5m2", "e3m2", "e2m3", "e2m1", "ue8m0", "ue4m3", "e4m3fnuz", "e5m2fnuz",
                           "e4m3b11fnuz", "e3m4", "e4m3ieee", "ue5m3"}) {
    const auto golden = mf::test::load_golden(name);
    std::vector<std::string> codes;
    for (const auto& g : golden) codes.push_back(hex(g.code));
    const Result r = run({"decode", name}, joined(codes));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto values = lines(r.out);
    ASSERT_EQ(values.size(), golden.size()) << name;
    for (std::size_t i = 0; i < golden.size(); ++i) {
      const float got = std::strtof(values[i].c_str(), nullptr);
      const float want = static_cast<float>(golden[i].value);
      if (std::isnan(want)) {
        EXPECT_TRUE(std::isnan(got)) << name << " " << codes[i] << " -> " << values[i];
      } else {
        EXPECT_EQ(got, want) << name << " " << codes[i] << " -> " << values[i];
      }
      EXPECT_EQ(std::signbit(got), std::signbit(want)) << name << " " << codes[i] << " -> " << values[i];
    }
  }
}

TEST(Decode, F32BitsThroughDecimalAndThroughBits) {
  // Edges of f32 plus a spread of patterns (SplitMix64-style mixing: deterministic, no library code).
  std::vector<std::uint32_t> codes = {0x00000000, 0x80000000, 0x00000001, 0x007fffff, 0x00800000, 0x3e99999a,
                                      0x3f800000, 0x7f7fffff, 0xff7fffff, 0x7f800000, 0xff800000};
  std::uint64_t x = 7;
  for (int i = 0; i < 500; ++i) {
    x += 0x9E3779B97F4A7C15ull;
    std::uint64_t z = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    const auto c = static_cast<std::uint32_t>(z ^ (z >> 31));
    if ((c & 0x7fffffff) <= 0x7f800000) codes.push_back(c);  // NaNs are checked below
  }
  std::vector<std::string> in;
  for (auto c : codes) in.push_back(hex(c));
  const Result dec = run({"decode", "f32"}, joined(in));
  ASSERT_EQ(dec.exit_code, 0) << dec.err;
  const Result enc = run({"encode", "f32"}, dec.out);
  ASSERT_EQ(enc.exit_code, 0) << enc.err;
  const auto back = lines(enc.out);
  ASSERT_EQ(back.size(), codes.size());
  for (std::size_t i = 0; i < codes.size(); ++i) {
    char want[16];
    std::snprintf(want, sizeof want, "0x%08x", codes[i]);
    EXPECT_EQ(back[i], want);
  }
  // Through --bits on both sides the pattern is the identity, NaN payloads included.
  const Result bits = run({"decode", "f32", "--bits", "0x7f800001", "0xffc00001", "0x3e99999a"});
  EXPECT_EQ(bits.out, "0x7f800001\n0xffc00001\n0x3e99999a\n");
  EXPECT_EQ(run({"encode", "f32", "--bits", "0x7f800001", "0xffc00001"}).out, "0x7f800001\n0xffc00001\n");
}

// ---- encode: defaults and options, from docs/spec.md#encode ----

TEST(Encode, DefaultsAndEdgesFromTheSpec) {
  // e4m3: 448 < |x| <= 464 -> 448; above, and +-Inf, -> NaN by sign. -1 = 1.0 x 2^0: 1 0111 000.
  EXPECT_EQ(run({"encode", "e4m3"}, "0.3\n-1\n448\n464\n464.01\n-500\ninf\n-inf\nnan\n-0\n0.001953125\n").out,
            "0x2a\n0xb8\n0x7e\n0x7e\n0x7f\n0xff\n0x7f\n0xff\n0x7f\n0x80\n0x01\n");
  // e5m2 overflows to Inf from 61440; f16 from 65520; bf16 from f32 bits 0x7f7f8000.
  EXPECT_EQ(run({"encode", "e5m2"}, "61439\n61440\n-61440\n57344\n").out, "0x7b\n0x7c\n0xfc\n0x7b\n");
  EXPECT_EQ(run({"encode", "f16"}, "65519\n65520\n0.3\n").out, "0x7bff\n0x7c00\n0x34cd\n");
  EXPECT_EQ(run({"encode", "bf16", "--bits"}, "0x7f7f7fff\n0x7f7f8000\n0x3e99999a\n").out, "0x7f7f\n0x7f80\n0x3e9a\n");
  // e2m1 saturates and maps NaN to the zero of the opposite sign; 0.25 is the tie 0 / 0.5 -> even (0).
  EXPECT_EQ(run({"encode", "e2m1"}, "100\n-inf\nnan\n-nan\n0.25\n0.75\n2.5\n5\n").out,
            "0x7\n0xf\n0x8\n0x0\n0x0\n0x2\n0x4\n0x6\n");
  // ue8m0: 1.m < 1.5 rounds down, 1.5 up; 0, negatives and NaN -> 0xff.
  EXPECT_EQ(run({"encode", "ue8m0"}, "1\n1.49\n1.5\n0.25\n0\n-1\nnan\n").out,
            "0x7f\n0x7f\n0x80\n0x7d\n0xff\n0xff\n0xff\n");
}

// Decimals round once, from their f64 value: 1.06250000001 lies just above the e4m3 tie 1.0625 between 1 (0x38) and
// 1.125 (0x39), and 1.0039062500001 just above the bf16 tie between 1 (0x3f80) and 1.0078125 (0x3f81). Through f32
// both would land on the tie (f32 keeps 24 bits) and round to even, down; --bits with those f32 values shows it.
TEST(Encode, DecimalsRoundOnceFromTheirF64Value) {
  EXPECT_EQ(run({"encode", "e4m3"}, "1.06250000001\n-1.06250000001\n1.0625\n").out, "0x39\n0xb9\n0x38\n");
  EXPECT_EQ(run({"encode", "e4m3", "--bits", "0x3f880000"}).out, "0x38\n");  // f32(1.06250000001) = 1.0625
  EXPECT_EQ(run({"encode", "bf16"}, "1.0039062500001\n1.00390625\n").out, "0x3f81\n0x3f80\n");
  EXPECT_EQ(run({"encode", "bf16", "--bits", "0x3f808000"}).out, "0x3f80\n");  // f32(1.0039062500001)
  // Many lines go through the bulk cast together; each still rounds once (every 4th just above a tie).
  std::string in, want;
  for (int i = 0; i < 300; ++i) {
    in += i % 4 == 0 ? "1.06250000001\n" : "1.0625\n";
    want += i % 4 == 0 ? "0x39\n" : "0x38\n";
  }
  EXPECT_EQ(run({"encode", "e4m3"}, in).out, want);
}

TEST(Encode, BitsInput) {
  // 0x3e99999a is 0.3 in f32; 0x00000001 = 2^-149 rounds to +0; 0x80000000 is -0.
  EXPECT_EQ(run({"encode", "e4m3", "--bits"}, "0x3e99999a\n0x00000001\n0x80000000\n0x43e00000\n").out,
            "0x2a\n0x00\n0x80\n0x7e\n");  // 0x43e00000 = 448
  const Result r = run({"encode", "e4m3", "--bits", "0x3f800000", "0xbf800000"});
  EXPECT_EQ(r.out, "0x38\n0xb8\n");
}

// ---- encode / decode --binary: raw little-endian arrays through the bulk casts ----

std::string f32_bytes(const std::vector<float>& x) {
  return std::string(reinterpret_cast<const char*>(x.data()), x.size() * 4);
}

TEST(EncodeBinary, HandWorkedCodesAndTheTextFormsCodes) {
  // The spec's e4m3 edges (as in DefaultsAndEdgesFromTheSpec), one byte per code.
  const std::vector<float> edges{0.3f, -1, 448, 464, 464.01f, -500, INFINITY, -INFINITY, NAN, -0.0f, 0.001953125f};
  const Result r = run({"encode", "e4m3", "--binary", "-", "-"}, f32_bytes(edges));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, std::string("\x2a\xb8\x7e\x7e\x7f\xff\x7f\xff\x7f\x80\x01", 11));
  // Many values, every option: the codes the text form prints, line i's stochastic bits for element i - 1.
  std::vector<float> x;
  std::string lines;
  for (int i = 0; i < 3000; ++i) {
    x.push_back(std::ldexp(static_cast<float>((i * 7919) % 2001 - 1000), -(i % 23)) / 7.0f);
    lines += "0x" +
             [](std::uint32_t b) {
               char buf[9];
               std::snprintf(buf, sizeof buf, "%08x", b);
               return std::string(buf);
             }(std::bit_cast<std::uint32_t>(x.back())) +
             "\n";
  }
  for (const char* fmt : {"e2m1", "e5m2", "bf16"}) {
    for (const std::vector<std::string>& opts :
         {std::vector<std::string>{}, {"--rounding", "stochastic", "--seed", "9"}, {"--overflow", "saturate"}}) {
      std::vector<std::string> text{"encode", fmt, "--bits"}, binary{"encode", fmt, "--binary", "-", "-"};
      text.insert(text.end(), opts.begin(), opts.end());
      binary.insert(binary.end(), opts.begin(), opts.end());
      const Result t = run(text, lines), b = run(binary, f32_bytes(x));
      ASSERT_EQ(b.exit_code, 0) << b.err;
      std::istringstream want(t.out);
      const std::size_t width = std::string_view(fmt) == "bf16" ? 2 : 1;
      ASSERT_EQ(b.out.size(), x.size() * width) << fmt;
      for (std::size_t i = 0; i < x.size(); ++i) {
        std::string hex;
        want >> hex;
        std::uint32_t got = static_cast<unsigned char>(b.out[i * width]);
        if (width == 2) got |= static_cast<std::uint32_t>(static_cast<unsigned char>(b.out[i * width + 1])) << 8;
        ASSERT_EQ(got, std::stoul(hex, nullptr, 16)) << fmt << " element " << i;
      }
    }
  }
}

TEST(DecodeBinary, EveryE4m3CodeAsTheTextFormsBits) {
  std::string codes, lines;
  for (int c = 0; c < 256; ++c) {
    codes += static_cast<char>(c);
    lines += std::to_string(c) + "\n";
  }
  const Result b = run({"decode", "e4m3", "--binary", "-", "-"}, codes);
  ASSERT_EQ(b.exit_code, 0) << b.err;
  ASSERT_EQ(b.out.size(), 256u * 4);
  std::istringstream want(run({"decode", "e4m3", "--bits"}, lines).out);
  for (int c = 0; c < 256; ++c) {
    std::uint32_t got = 0;
    std::memcpy(&got, b.out.data() + 4 * c, 4);
    std::string hex;
    want >> hex;
    EXPECT_EQ(got, std::stoul(hex, nullptr, 16)) << "code " << c;
  }
}

TEST(Binary, ErrorsNameTheOffsetAndLeaveNoOutput) {
  const std::string out = ::testing::TempDir() + "mf_binary_" + std::to_string(::getpid()) + ".bin";
  std::remove(out.c_str());
  Result r = run({"encode", "e4m3", "--binary", "-", out}, "abcde");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("offset 4"), std::string::npos) << r.err;
  EXPECT_FALSE(std::ifstream(out).good()) << "no partial OUT";
  r = run({"decode", "e2m1", "--binary", "-", out}, std::string("\x01\x02\x0f\x10", 4));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("offset 3 is 0x10"), std::string::npos) << r.err;
  EXPECT_FALSE(std::ifstream(out).good());
  r = run({"decode", "f16", "--binary", "-", "-"}, "abc");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("offset 2"), std::string::npos) << r.err;
  EXPECT_EQ(run({"encode", "e4m3", "--binary", "-", "-", "0.5"}).exit_code, 2);
  // A good run writes OUT whole.
  r = run({"encode", "e4m3", "--binary", "-", out}, f32_bytes({1.0f, -2.0f}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(read_file(out), std::string("\x38\xc0", 2));
  std::remove(out.c_str());
}

TEST(Decode, ValuesAndBits) {
  EXPECT_EQ(run({"decode", "e2m1"}, "0\n1\n2\n3\n4\n5\n6\n7\n8\n9\n15\n").out,
            "0\n0.5\n1\n1.5\n2\n3\n4\n6\n-0\n-0.5\n-6\n");
  EXPECT_EQ(run({"decode", "e4m3", "0x7e", "0x7f", "0x08", "0x01"}).out, "448\nnan\n0.015625\n0.001953125\n");
  EXPECT_EQ(run({"decode", "e5m2", "0x7c", "0xfc", "0x7b"}).out, "inf\n-inf\n57344\n");
  EXPECT_EQ(run({"decode", "ue8m0", "127", "0x80", "0xff"}).out, "1\n2\nnan\n");
  // 0.3125 = 1.25 x 2^-2: f32 exponent 125 (0x7d), mantissa .01 -> 0x3ea00000; NaN -> quiet NaN with the sign.
  EXPECT_EQ(run({"decode", "e4m3", "--bits", "0x2a", "0x7f", "0xff"}).out, "0x3ea00000\n0x7fc00000\n0xffc00000\n");
  EXPECT_EQ(run({"decode", "bf16", "--bits", "0x3e9a", "0x7f81"}).out, "0x3e9a0000\n0x7f810000\n");
}

TEST(Encode, OverflowSaturate) {
  EXPECT_EQ(run({"encode", "e4m3", "--overflow", "saturate"}, "500\n-inf\nnan\n").out, "0x7e\n0xfe\n0x7f\n");
  EXPECT_EQ(run({"encode", "e5m2", "--overflow", "saturate"}, "inf\n-1e9\n").out, "0x7b\n0xfb\n");
  EXPECT_EQ(run({"encode", "bf16", "--overflow", "saturate"}, "inf\n").out, "0x7f7f\n");
  EXPECT_EQ(run({"encode", "f16", "--overflow", "saturate"}, "1e6\n").out, "0x7bff\n");
}

TEST(Encode, RoundingTowardZero) {
  // 0.3 -> 1.125 x 2^-2 (0x29) not 1.25; finite values never overflow; e2m1 5.9 -> 4, 2.9 -> 2.
  EXPECT_EQ(run({"encode", "e4m3", "--rounding", "toward_zero"}, "0.3\n-0.3\n479\n").out, "0x29\n0xa9\n0x7e\n");
  EXPECT_EQ(run({"encode", "e2m1", "--rounding", "toward_zero"}, "5.9\n2.9\n0.49\n").out, "0x6\n0x4\n0x0\n");
  EXPECT_EQ(run({"encode", "bf16", "--rounding", "toward_zero"}, "0.3\n").out, "0x3e99\n");
  EXPECT_EQ(run({"encode", "e5m2", "--rounding", "toward_zero"}, "1e9\n").out, "0x7b\n");
}

TEST(Encode, StochasticIsReproducibleAndUnbiased) {
  // 1.03125 sits a quarter of the way from 1 (0x38) to 1.125 (0x39): it must round up with probability 1/4.
  const std::string input = joined(std::vector<std::string>(1000, "1.03125"));
  const Result a = run({"encode", "e4m3", "--rounding", "stochastic", "--seed", "7"}, input);
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_EQ(run({"encode", "e4m3", "--rounding", "stochastic", "--seed", "7"}, input).out, a.out);
  EXPECT_NE(run({"encode", "e4m3", "--rounding", "stochastic", "--seed", "8"}, input).out, a.out);
  const auto codes = lines(a.out);
  ASSERT_EQ(codes.size(), 1000u);
  const auto up = std::count(codes.begin(), codes.end(), "0x39");
  EXPECT_EQ(std::count(codes.begin(), codes.end(), "0x38") + up, 1000);
  EXPECT_GT(up, 250 - 60) << "binomial(1000, 1/4): sd 13.7";
  EXPECT_LT(up, 250 + 60);
  // Values on the grid never move.
  const Result exact = run({"encode", "e4m3", "--rounding", "stochastic", "--seed", "7"},
                           joined(std::vector<std::string>(100, "1.125")));
  EXPECT_EQ(exact.out, joined(std::vector<std::string>(100, "0x39")));
}

TEST(Filters, ArgumentsInsteadOfStdin) {
  EXPECT_EQ(run({"encode", "e4m3", "0.3", "448", "-1"}).out, "0x2a\n0x7e\n0xb8\n");
  EXPECT_EQ(run({"decode", "e2m1", "0x7", "15"}).out, "6\n-6\n");
  // "-inf" would read as an option: after "--" it is a value (E4M3 has no Inf: NaN with the sign).
  EXPECT_EQ(run({"encode", "e4m3", "--", "-inf", "-0"}).out, "0xff\n0x80\n");
}

TEST(Filters, LineEndingsAndBlanks) {
  // CRLF, surrounding blanks and a missing final newline are all fine.
  EXPECT_EQ(run({"encode", "e4m3"}, "1\r\n 2 \r\n3").out, "0x38\n0x40\n0x44\n");
  EXPECT_EQ(run({"decode", "e4m3"}, "0x38\r\n0x40").out, "1\n2\n");
}

}  // namespace
