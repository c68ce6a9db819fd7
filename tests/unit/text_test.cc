// Numbers and codes as text: parse_decimal, parse_code, parse_number, shortest, hex_code, bit_fields, binary, and
// the reproducible random bits of random.h. Expected values are literals read by the compiler or hand-typed strings.
#include "test_util.h"
#include "minifloat/text.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "minifloat/format.h"
#include "minifloat/random.h"

namespace mf::test {
namespace {

std::uint64_t bits(double x) { return std::bit_cast<std::uint64_t>(x); }

// parse_decimal(text) is exactly `expected`, bit for bit (so -0 and the NaN sign count).
::testing::AssertionResult parses_to(std::string_view text, double expected) {
  const std::optional<double> got = parse_decimal(text);
  if (!got) return ::testing::AssertionFailure() << "'" << text << "' rejected; expected f64 " << hex(bits(expected));
  const bool same = std::isnan(expected) ? std::isnan(*got) && std::signbit(*got) == std::signbit(expected)
                                         : bits(*got) == bits(expected);
  if (same) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "'" << text << "': expected f64 " << hex(bits(expected)) << " got "
                                       << hex(bits(*got));
}

// parse_code(text, max_bits) == expected (nullopt: rejected), printing codes in hex.
::testing::AssertionResult code_is(std::string_view text, int max_bits, std::optional<std::uint32_t> expected) {
  const std::optional<std::uint32_t> got = parse_code(text, max_bits);
  if (got == expected) return ::testing::AssertionSuccess();
  const auto show = [](std::optional<std::uint32_t> c) { return c ? hex(*c) : std::string("rejected"); };
  return ::testing::AssertionFailure() << "parse_code('" << text << "', " << max_bits << "): expected "
                                       << show(expected) << " got " << show(got);
}

TEST(ParseDecimal, Accepts) {
  EXPECT_TRUE(parses_to("0.3", 0.3));
  EXPECT_TRUE(parses_to("-1e-3", -1e-3));
  EXPECT_TRUE(parses_to("+2", 2.0));
  EXPECT_TRUE(parses_to(" 5 ", 5.0));
  EXPECT_TRUE(parses_to("\t7.25\t", 7.25));
  EXPECT_TRUE(parses_to("0", 0.0));
  EXPECT_TRUE(parses_to("-0", -0.0));
  EXPECT_TRUE(parses_to("-0.0", -0.0));
  EXPECT_TRUE(parses_to("448", 448.0));
  EXPECT_TRUE(parses_to(".5", 0.5));
  EXPECT_TRUE(parses_to("5.", 5.0));
  EXPECT_TRUE(parses_to("1E3", 1000.0));
  EXPECT_TRUE(parses_to("1e+3", 1000.0));
  EXPECT_TRUE(parses_to("3.14159265358979323846264338327950288", 3.14159265358979323846264338327950288));
  EXPECT_TRUE(parses_to("1.7976931348623157e308", 1.7976931348623157e308));
  EXPECT_TRUE(parses_to("inf", std::numeric_limits<double>::infinity()));
  EXPECT_TRUE(parses_to("-inf", -std::numeric_limits<double>::infinity()));
  EXPECT_TRUE(parses_to("nan", std::numeric_limits<double>::quiet_NaN()));
  EXPECT_TRUE(parses_to("-nan", -std::numeric_limits<double>::quiet_NaN()));
}

TEST(ParseDecimal, OutOfRangeRoundsLikeStrtod) {
  EXPECT_TRUE(parses_to("1e999", std::numeric_limits<double>::infinity()));
  EXPECT_TRUE(parses_to("-1e999", -std::numeric_limits<double>::infinity()));
  EXPECT_TRUE(parses_to("1e-400", 0.0));
  EXPECT_TRUE(parses_to("-1e-400", -0.0));
  // Subnormals are read exactly, as the compiler and strtod read them.
  EXPECT_TRUE(parses_to("1e-310", 1e-310));
  EXPECT_TRUE(parses_to("1e-310", std::strtod("1e-310", nullptr)));
  EXPECT_TRUE(parses_to("-2.5e-320", -2.5e-320));
  EXPECT_TRUE(parses_to("4.9406564584124654e-324", 0x1p-1074));
  // Around half the smallest subnormal, 2^-1075 = 2.47032822920623272088e-324.
  EXPECT_TRUE(parses_to("2.4703282292062328e-324", 0x1p-1074));
  EXPECT_TRUE(parses_to("2.4703282292062327e-324", 0.0));
  EXPECT_TRUE(parses_to("1.8e308", std::numeric_limits<double>::infinity()));
}

TEST(ParseDecimal, Rejects) {
  for (std::string_view bad : {"",    " ",  "abc", "0x10", "-0x10", "0X10", "1.5x", "--1",  "+-1", "-+1",  "++1",
                               "1 2", "1e", "e5",  ".",    "-",     "+",    "1,5",  "0.3f", "x1",  "1.5.1"}) {
    const std::optional<double> got = parse_decimal(bad);
    EXPECT_FALSE(got.has_value()) << "'" << bad << "' accepted as f64 " << hex(got ? bits(*got) : 0);
  }
}

TEST(ParseCode, HexAndDecimal) {
  EXPECT_TRUE(code_is("0x2a", 32, 42));
  EXPECT_TRUE(code_is("0X2A", 32, 42));
  EXPECT_TRUE(code_is("42", 32, 42));
  EXPECT_TRUE(code_is(" 0x7 ", 32, 7));
  EXPECT_TRUE(code_is("0", 32, 0));
  EXPECT_TRUE(code_is("0x0", 32, 0));
  EXPECT_TRUE(code_is("0xffffffff", 32, 0xffffffffu));
  EXPECT_TRUE(code_is("4294967295", 32, 0xffffffffu));
  for (std::string_view bad :
       {"", "0x", "0xg", "-1", "+1", "1.0", "abc", "0x1 2", "0x100000000", "4294967296", "99999999999999999999999"}) {
    EXPECT_TRUE(code_is(bad, 32, std::nullopt));
  }
}

TEST(ParseCode, WidthLimit) {
  EXPECT_TRUE(code_is("0xff", 8, 0xff));
  EXPECT_TRUE(code_is("0x100", 8, std::nullopt));
  EXPECT_TRUE(code_is("255", 8, 255));
  EXPECT_TRUE(code_is("256", 8, std::nullopt));
  EXPECT_TRUE(code_is("15", 4, 15));
  EXPECT_TRUE(code_is("16", 4, std::nullopt));
  EXPECT_TRUE(code_is("0x3f", 6, 0x3f));
  EXPECT_TRUE(code_is("0x40", 6, std::nullopt));
  EXPECT_TRUE(code_is("0x7f", 7, 0x7f));
  EXPECT_TRUE(code_is("0x80", 7, std::nullopt));
  EXPECT_TRUE(code_is("0xffff", 16, 0xffff));
  EXPECT_TRUE(code_is("0x10000", 16, std::nullopt));
}

TEST(ParseNumber, F32BitsOrDecimal) {
  const auto p = parse_number("0x3e99999a");
  ASSERT_TRUE(p.has_value());
  EXPECT_TRUE(p->from_f32_bits);
  EXPECT_EQ(p->value, static_cast<double>(0.3f)) << std::hexfloat << p->value;
  const auto q = parse_number("0.3");
  ASSERT_TRUE(q.has_value());
  EXPECT_FALSE(q->from_f32_bits);
  EXPECT_EQ(bits(q->value), bits(0.3));
  const auto one = parse_number(" 0x3F800000 ");
  ASSERT_TRUE(one.has_value());
  EXPECT_EQ(one->value, 1.0);
  EXPECT_EQ(parse_number("0x00000001")->value, 0x1p-149);
  EXPECT_EQ(parse_number("0x80000000")->value, 0.0);
  EXPECT_TRUE(std::signbit(parse_number("0x80000000")->value));
  EXPECT_EQ(parse_number("0x7f800000")->value, std::numeric_limits<double>::infinity());
  EXPECT_EQ(parse_number("0xff800000")->value, -std::numeric_limits<double>::infinity());
  EXPECT_TRUE(std::isnan(parse_number("0x7fc00000")->value));
  EXPECT_EQ(parse_number("0x7f7fffff")->value, 0x1.fffffep127);
  EXPECT_EQ(parse_number("0x1")->value, 0x1p-149);  // short hex is still f32 bits
  const auto dec = parse_number("-1e-3");
  ASSERT_TRUE(dec.has_value());
  EXPECT_FALSE(dec->from_f32_bits);
  EXPECT_EQ(bits(dec->value), bits(-1e-3));
  for (std::string_view bad : {"", "0x", "0x1g", "0x100000000", "abc", "-0x3f800000", "1.5x"}) {
    EXPECT_FALSE(parse_number(bad).has_value()) << "'" << bad << "'";
  }
}

TEST(Shortest, HandPicked) {
  EXPECT_EQ(shortest(0.3f), "0.3");
  EXPECT_EQ(shortest(0.3), "0.3");
  EXPECT_EQ(shortest(0.1f), "0.1");
  EXPECT_EQ(shortest(0.30078125f), "0.30078125");
  EXPECT_EQ(shortest(1.0f / 3.0f), "0.33333334");
  EXPECT_EQ(shortest(448.0f), "448");
  EXPECT_EQ(shortest(65504.0f), "65504");
  EXPECT_EQ(shortest(-1.5f), "-1.5");
  EXPECT_EQ(shortest(0.0f), "0");
  EXPECT_EQ(shortest(-0.0f), "-0");
  EXPECT_EQ(shortest(-0.0), "-0");
  EXPECT_EQ(shortest(std::numeric_limits<float>::infinity()), "inf");
  EXPECT_EQ(shortest(-std::numeric_limits<float>::infinity()), "-inf");
  EXPECT_EQ(shortest(std::numeric_limits<double>::infinity()), "inf");
  EXPECT_EQ(shortest(std::numeric_limits<float>::quiet_NaN()), "nan");
  EXPECT_EQ(shortest(std::numeric_limits<double>::quiet_NaN()), "nan");
  EXPECT_EQ(shortest(0x1p-149f), "1e-45");
}

TEST(Shortest, ReadsBackExactly) {
  // Round trip through strtof/strtod, and no shorter digit string (one fewer significant digit) reads back.
  std::mt19937_64 rng(12345);
  for (int i = 0; i < 20000; ++i) {
    const float x = std::bit_cast<float>(static_cast<std::uint32_t>(rng()));
    if (!std::isfinite(x)) continue;
    const std::string s = shortest(x);
    EXPECT_EQ(std::bit_cast<std::uint32_t>(std::strtof(s.c_str(), nullptr)), std::bit_cast<std::uint32_t>(x))
        << "f32 " << hex(std::bit_cast<std::uint32_t>(x)) << " -> '" << s << "'";
    const double y = std::bit_cast<double>(static_cast<std::uint64_t>(rng()));
    if (!std::isfinite(y)) continue;
    const std::string t = shortest(y);
    EXPECT_EQ(bits(std::strtod(t.c_str(), nullptr)), bits(y)) << "f64 " << hex(bits(y)) << " -> '" << t << "'";
  }
  // Shortness: no longer than the scientific form with the fewest significant digits that reads back (fixed
  // notation may win on length: to_chars prints 603438784, not 6.0343878e+08).
  for (int i = 0; i < 2000; ++i) {
    const float x = std::bit_cast<float>(static_cast<std::uint32_t>(rng()) & 0x7f7fffffu);
    char sci[64];
    for (int p = 0; p < 9; ++p) {  // p + 1 significant digits; 9 always suffice for f32
      std::snprintf(sci, sizeof sci, "%.*e", p, static_cast<double>(x));
      if (std::strtof(sci, nullptr) == x) break;
    }
    std::string minimal = sci;  // printf writes at least two exponent digits, as to_chars does
    EXPECT_LE(shortest(x).size(), minimal.size()) << "'" << shortest(x) << "' is longer than " << minimal;
  }
}

TEST(HexCode, Widths) {
  EXPECT_EQ(hex_code(e2m1, 0x7), "0x7");
  EXPECT_EQ(hex_code(e2m1, 0x0), "0x0");
  EXPECT_EQ(hex_code(e3m2, 0x3f), "0x3f");
  EXPECT_EQ(hex_code(e2m3, 0x05), "0x05");
  EXPECT_EQ(hex_code(e4m3, 0x4d), "0x4d");
  EXPECT_EQ(hex_code(e4m3, 0x02), "0x02");
  EXPECT_EQ(hex_code(e5m2, 0xfc), "0xfc");
  EXPECT_EQ(hex_code(ue8m0, 0xff), "0xff");
  EXPECT_EQ(hex_code(ue4m3, 0x7f), "0x7f");
  EXPECT_EQ(hex_code(bf16, 0x3e9a), "0x3e9a");
  EXPECT_EQ(hex_code(f16, 0x0001), "0x0001");
  EXPECT_EQ(hex_code(f32, 0x3f800000), "0x3f800000");
  EXPECT_EQ(hex_code(f32, 0x00000001), "0x00000001");
  EXPECT_EQ(hex_code(f32, 0xffc00000), "0xffc00000");
}

TEST(BitFields, SignExponentMantissa) {
  EXPECT_EQ(bit_fields(e4m3, 0x2a), "0 | 0101 | 010");
  EXPECT_EQ(bit_fields(e4m3, 0xff), "1 | 1111 | 111");
  EXPECT_EQ(bit_fields(e5m2, 0x7c), "0 | 11111 | 00");
  EXPECT_EQ(bit_fields(e3m2, 0x21), "1 | 000 | 01");
  EXPECT_EQ(bit_fields(e2m3, 0x1f), "0 | 11 | 111");
  EXPECT_EQ(bit_fields(e2m1, 0xf), "1 | 11 | 1");
  EXPECT_EQ(bit_fields(bf16, 0x3e9a), "0 | 01111101 | 0011010");
  EXPECT_EQ(bit_fields(f16, 0x7bff), "0 | 11110 | 1111111111");
  EXPECT_EQ(bit_fields(f32, 0x3f800001), "0 | 01111111 | 00000000000000000000001");
  // Unsigned formats have no sign part; ue8m0 has no mantissa either.
  EXPECT_EQ(bit_fields(ue8m0, 0x7f), "01111111");
  EXPECT_EQ(bit_fields(ue8m0, 0x00), "00000000");
  EXPECT_EQ(bit_fields(ue4m3, 0x38), "0111 | 000");
  EXPECT_EQ(bit_fields(ue4m3, 0x7f), "1111 | 111");
  EXPECT_EQ(bit_fields(e4m3, 0x2a, ""), "00101010");
  EXPECT_EQ(bit_fields(e4m3, 0x2a, "."), "0.0101.010");
}

TEST(BitFields, Binary) {
  EXPECT_EQ(binary(5, 4), "0101");
  EXPECT_EQ(binary(0, 1), "0");
  EXPECT_EQ(binary(1, 1), "1");
  EXPECT_EQ(binary(0, 0), "");
  EXPECT_EQ(binary(0xffffffffu, 32), std::string(32, '1'));
  EXPECT_EQ(binary(0x80000000u, 32), "1" + std::string(31, '0'));
  EXPECT_EQ(binary(0x1f, 3), "111");  // only the low `width` bits
}

TEST(StochasticBits, ReferenceValues) {
  // SplitMix64 as published (Vigna): the first output from state 0 is 0xe220a8397b1dcdaf, and the next ones follow
  // by adding the golden gamma. Values below were computed from that definition outside this code base.
  const std::pair<std::uint64_t, std::uint64_t> mix[] = {{0, 0xe220a8397b1dcdafull},
                                                         {0x9e3779b97f4a7c15ull, 0x6e789e6aa1b965f4ull},
                                                         {0x3c6ef372fe94f82aull, 0x06c45d188009454full}};
  for (const auto& [x, want] : mix) {
    EXPECT_EQ(splitmix64(x), want) << "splitmix64(" << hex(x) << "): expected " << hex(want) << " got "
                                   << hex(splitmix64(x));
  }
  struct Case {
    std::uint64_t seed, index;
    std::uint32_t bits;
  };
  // stochastic_bits(seed, i): k = splitmix64(seed), x = lo32(i) + lo32(k); x ^= x >> 16, x *= 0x7feb352d,
  // x ^= hi32(k) ^ hi32(i) * 0x9e3779b9, x ^= x >> 15, x *= 0x846ca68b, x ^= x >> 16 (all mod 2^32). Values computed
  // from that definition outside this code base (Python integers), across the 2^32 boundary too.
  const Case cases[] = {{0, 0, 0xab3c6f47},
                        {0, 1, 0x69a0fe56},
                        {42, 0, 0xa9109873},
                        {42, 1, 0x985da2b6},
                        {42, 1000, 0x18e6e021},
                        {42, 1001, 0xa6d6f491},
                        {~0ull, 1ull << 63, 0x569e56c8},
                        {~0ull, ~0ull, 0x2bebad72},
                        {5, 0xffffffffull, 0xe45e6616},
                        {5, 0x100000000ull, 0x51134c36}};
  for (const Case& c : cases) {
    EXPECT_EQ(stochastic_bits(c.seed, c.index), c.bits)
        << "stochastic_bits(" << hex(c.seed) << ", " << hex(c.index) << "): expected " << hex(c.bits) << " got "
        << hex(stochastic_bits(c.seed, c.index));
  }
}

TEST(StochasticBits, PureFunctionOfSeedAndIndex) {
  // Any order of evaluation gives the same bits for the same (seed, index): split the stream two ways.
  std::vector<std::uint32_t> forward(1000), backward(1000);
  for (int i = 0; i < 1000; ++i) forward[i] = stochastic_bits(7, i);
  for (int i = 999; i >= 0; --i) backward[i] = stochastic_bits(7, i);
  EXPECT_EQ(forward, backward);
  // Different seeds give different streams; indices within a stream are not repeats.
  int same = 0;
  for (int i = 0; i < 1000; ++i) same += stochastic_bits(7, i) == stochastic_bits(8, i);
  EXPECT_LE(same, 1);
  std::set<std::uint32_t> distinct(forward.begin(), forward.end());
  EXPECT_GE(distinct.size(), 999u);
  // Roughly uniform: each of the 32 bits is set about half the time.
  for (int b = 0; b < 32; ++b) {
    int ones = 0;
    for (std::uint32_t r : forward) ones += (r >> b) & 1;
    EXPECT_NEAR(ones, 500, 80) << "bit " << b;
  }
  static_assert(stochastic_bits(1, 2) == stochastic_bits(1, 2));
}

}  // namespace
}  // namespace mf::test
