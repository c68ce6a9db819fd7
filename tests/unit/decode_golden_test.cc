// Decode of every code: the <=8-bit formats against the golden tables (written from the standards by
// make_tables.py), bf16/f16 against an IEEE decoder written here with std::ldexp, plus hand-typed spot values.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <ostream>
#include <string>
#include <vector>

#include "../golden/golden_table.h"
#include "test_util.h"
#include "minifloat/codec.h"
#include "minifloat/format.h"

namespace mf::test {
namespace {

std::uint32_t bits_of(float x) { return std::bit_cast<std::uint32_t>(x); }

// Expected f32 bits of a decoded value; 8-bit NaNs decode to the canonical quiet NaN with the code's sign.
std::uint32_t expected_bits(double value) {
  if (std::isnan(value)) return std::signbit(value) ? 0xffc00000u : 0x7fc00000u;
  return bits_of(static_cast<float>(value));  // exact: every value of these formats is an f32
}

// Compares decode(f, code) with the exact expected value: equal as numbers, same sign of zero, same NaN-ness and
// NaN sign. Prints the code, expected and actual f32 bits in hex.
::testing::AssertionResult decodes_to(const Format& f, std::uint32_t code, double expected) {
  const float got = decode(f, code);
  bool ok;
  if (std::isnan(expected)) {
    ok = std::isnan(got) && std::signbit(got) == std::signbit(expected);
  } else {
    ok = static_cast<double>(got) == expected && std::signbit(got) == std::signbit(expected);
  }
  if (ok) return ::testing::AssertionSuccess();
  char buf[160];
  std::snprintf(buf, sizeof buf, " value %a (f32 %s) got %a (f32 %s)", expected, hex(expected_bits(expected)).c_str(),
                static_cast<double>(got), hex(bits_of(got)).c_str());
  return ::testing::AssertionFailure() << f.name << " code " << hex(code) << ": expected" << buf;
}

// ---- the <=8-bit formats against the golden tables ----

struct NarrowCase {
  const Format* format;
  double min_normal;  // hand-typed (docs/spec.md#formats), for the classification check
};
const NarrowCase kNarrow[] = {
    {&e4m3, 0x1p-6},
    {&e5m2, 0x1p-14},
    {&e3m2, 0x1p-2},
    {&e2m3, 1.0},
    {&e2m1, 1.0},
    {&ue8m0, 0x1p-127},
    {&ue4m3, 0x1p-6},
    // LLVM APFloat's minExponent: Float8E4M3FNUZ -7, Float8E5M2FNUZ -15, Float8E4M3B11FNUZ -10, Float8E3M4 -2,
    // Float8E4M3 -6; PTX ISA 13.4's ue5m3 (bias 15): -14.
    {&e4m3fnuz, 0x1p-7},
    {&e5m2fnuz, 0x1p-15},
    {&e4m3b11fnuz, 0x1p-10},
    {&e3m4, 0x1p-2},
    {&e4m3ieee, 0x1p-6},
    {&ue5m3, 0x1p-14},
};

// gtest prints a parameter by its format's name.
void PrintTo(const NarrowCase& c, std::ostream* os) { *os << c.format->name; }

class DecodeGolden : public ::testing::TestWithParam<NarrowCase> {};

TEST_P(DecodeGolden, EveryCodeMatchesTable) {
  const Format& f = *GetParam().format;
  const std::vector<GoldenCode> table = load_golden(f.name);
  ASSERT_EQ(table.size(), f.code_count());
  for (const GoldenCode& g : table) {
    EXPECT_TRUE(decodes_to(f, g.code, g.value));
    // Narrow NaNs are the canonical quiet NaN, payload dropped.
    if (std::isnan(g.value)) {
      EXPECT_EQ(bits_of(decode(f, g.code)), expected_bits(g.value))
          << f.name << " code " << hex(g.code) << ": expected " << hex(expected_bits(g.value)) << " got "
          << hex(bits_of(decode(f, g.code)));
    }
  }
}

TEST_P(DecodeGolden, HighBitsAboveTheFormatAreIgnored) {
  const Format& f = *GetParam().format;
  const std::vector<GoldenCode> table = load_golden(f.name);
  for (const GoldenCode& g : table) {
    for (std::uint32_t junk : {0xffffff00u, 0x100u, 0x80000000u, 0xabcd0000u}) {
      const std::uint32_t high = junk & ~static_cast<std::uint32_t>(f.code_count() - 1);
      EXPECT_TRUE(decodes_to(f, g.code | high, g.value)) << "with high bits " << hex(high);
    }
  }
}

TEST_P(DecodeGolden, FieldsAndClassAgreeWithTable) {
  const Format& f = *GetParam().format;
  const double min_normal = GetParam().min_normal;
  const int m = f.mantissa_bits, e = f.exponent_bits;
  for (const GoldenCode& g : load_golden(f.name)) {
    SCOPED_TRACE(std::string(f.name) + " code " + hex(g.code));
    const Fields fl = fields(f, g.code);
    // The three fields put back together give the code.
    EXPECT_EQ((fl.sign << (e + m)) | (fl.exponent << m) | fl.mantissa, g.code);
    ValueClass want;
    if (std::isnan(g.value)) {
      want = ValueClass::nan;
    } else if (std::isinf(g.value)) {
      want = ValueClass::inf;
    } else if (g.value == 0) {
      want = ValueClass::zero;
    } else {
      want = std::fabs(g.value) < min_normal ? ValueClass::subnormal : ValueClass::normal;
    }
    EXPECT_EQ(classify(f, g.code), want) << "expected " << to_string(want) << " got " << to_string(classify(f, g.code));
    if (want == ValueClass::nan || want == ValueClass::inf) continue;
    EXPECT_EQ(fl.sign, std::signbit(g.value) ? 1u : 0u);
    // |value| = (implicit + mantissa / 2^m) * 2^unbiased, the implicit bit 1 for normals and 0 otherwise.
    const double implicit = want == ValueClass::normal ? 1.0 : 0.0;
    const double magnitude = std::ldexp(implicit + std::ldexp(fl.mantissa, -m), fl.unbiased_exponent);
    EXPECT_EQ(magnitude, std::fabs(g.value)) << "unbiased exponent " << fl.unbiased_exponent;
  }
}

INSTANTIATE_TEST_SUITE_P(Narrow, DecodeGolden, ::testing::ValuesIn(kNarrow),
                         [](const auto& info) { return std::string(info.param.format->name); });

TEST(DecodeGoldenTables, E2m1ListedInSpec) {
  // docs/spec.md#formats: E2M1 codes 0..7 are 0, 0.5, 1, 1.5, 2, 3, 4, 6; codes 8..15 are their negatives (8 is -0).
  const double positive[] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};
  for (std::uint32_t c = 0; c < 8; ++c) {
    EXPECT_TRUE(decodes_to(e2m1, c, positive[c]));
    EXPECT_TRUE(decodes_to(e2m1, c | 8, -positive[c]));
  }
}

TEST(DecodeGoldenTables, NarrowSpotValues) {
  EXPECT_TRUE(decodes_to(e4m3, 0x7e, 448));
  EXPECT_TRUE(decodes_to(e4m3, 0xfe, -448));
  EXPECT_TRUE(decodes_to(e4m3, 0x01, 0x1p-9));
  EXPECT_TRUE(decodes_to(e4m3, 0x08, 0x1p-6));
  EXPECT_TRUE(decodes_to(e4m3, 0x2a, 0.3125));  // 0 0101 010 = 1.25 * 2^-2
  EXPECT_TRUE(decodes_to(e4m3, 0x80, -0.0));
  EXPECT_TRUE(decodes_to(e5m2, 0x7b, 57344));
  EXPECT_TRUE(decodes_to(e5m2, 0x01, 0x1p-16));
  EXPECT_TRUE(decodes_to(e5m2, 0x7c, INFINITY));
  EXPECT_TRUE(decodes_to(e5m2, 0xfc, -INFINITY));
  // The fnuz formats: 0x80 is the NaN (ml_dtypes decodes it to f32 0xffc00000), 0x7f the largest value.
  EXPECT_TRUE(decodes_to(e4m3fnuz, 0x80, -NAN));
  EXPECT_TRUE(decodes_to(e4m3fnuz, 0x7f, 240));
  EXPECT_TRUE(decodes_to(e4m3fnuz, 0xff, -240));
  EXPECT_TRUE(decodes_to(e5m2fnuz, 0x7f, 57344));
  EXPECT_TRUE(decodes_to(e4m3b11fnuz, 0x7f, 30));
  EXPECT_TRUE(decodes_to(e4m3b11fnuz, 0x01, 0x1p-13));
  // IEEE-style: e3m4 S.111.0000 and e4m3ieee S.1111.000 are Inf.
  EXPECT_TRUE(decodes_to(e3m4, 0x6f, 15.5));
  EXPECT_TRUE(decodes_to(e3m4, 0x70, INFINITY));
  EXPECT_TRUE(decodes_to(e3m4, 0x80, -0.0));
  EXPECT_TRUE(decodes_to(e4m3ieee, 0x77, 240));
  EXPECT_TRUE(decodes_to(e4m3ieee, 0xf8, -INFINITY));
  // ue5m3 (llvm/llvm-project#210720's table): the top binade is finite, 0xff the NaN.
  EXPECT_TRUE(decodes_to(ue5m3, 0xf8, 65536));
  EXPECT_TRUE(decodes_to(ue5m3, 0xfe, 114688));
  EXPECT_TRUE(decodes_to(ue5m3, 0xff, NAN));
  EXPECT_TRUE(decodes_to(ue5m3, 0x01, 0x1p-17));
  EXPECT_TRUE(decodes_to(ue5m3, 0x08, 0x1p-14));
  EXPECT_TRUE(decodes_to(e3m2, 0x1f, 28));
  EXPECT_TRUE(decodes_to(e3m2, 0x01, 0.0625));
  EXPECT_TRUE(decodes_to(e2m3, 0x1f, 7.5));
  EXPECT_TRUE(decodes_to(e2m3, 0x01, 0.125));
  EXPECT_TRUE(decodes_to(ue8m0, 0x00, 0x1p-127));  // an f32 subnormal
  EXPECT_TRUE(decodes_to(ue8m0, 0x7f, 1));
  EXPECT_TRUE(decodes_to(ue8m0, 0xfe, 0x1p127));
  EXPECT_TRUE(decodes_to(ue4m3, 0x7e, 448));
  EXPECT_TRUE(decodes_to(ue4m3, 0x38, 1));
  // 8-bit NaNs: canonical quiet NaN with the code's sign, whatever the payload.
  const std::pair<const Format*, std::uint32_t> nans[] = {{&e4m3, 0x7f}, {&e5m2, 0x7d},  {&e5m2, 0x7e},
                                                          {&e5m2, 0x7f}, {&ue8m0, 0xff}, {&ue4m3, 0x7f}};
  for (const auto& [f, code] : nans) {
    EXPECT_EQ(bits_of(decode(*f, code)), 0x7fc00000u) << f->name << " " << hex(code);
    if (f->is_signed()) {
      EXPECT_EQ(bits_of(decode(*f, code | 0x80)), 0xffc00000u) << f->name << " " << hex(code | 0x80);
    }
  }
}

// ---- bf16 and f16: every code against an IEEE decoder written from the definition ----

struct Ieee {
  int exponent_bits, mantissa_bits;
};

// The value of an IEEE binary code (1 sign bit): NaN comes back as NaN; use ieee_nan_bits for its f32 bits.
double ieee_value(Ieee t, std::uint32_t code) {
  const int m = t.mantissa_bits, e = t.exponent_bits;
  const int bias = (1 << (e - 1)) - 1;
  const bool negative = (code >> (e + m)) & 1;
  const std::uint32_t field = (code >> m) & ((1u << e) - 1);
  const std::uint32_t mantissa = code & ((1u << m) - 1);
  double v;
  if (field == (1u << e) - 1) {
    v = mantissa == 0 ? INFINITY : NAN;
  } else if (field == 0) {
    v = std::ldexp(static_cast<double>(mantissa), 1 - bias - m);
  } else {
    v = std::ldexp(static_cast<double>(mantissa + (1u << m)), static_cast<int>(field) - bias - m);
  }
  return negative ? -v : v;
}

// IEEE widening keeps a NaN's payload: the mantissa moves to the top of the f32 mantissa.
std::uint32_t ieee_nan_bits(Ieee t, std::uint32_t code) {
  const int m = t.mantissa_bits, e = t.exponent_bits;
  const std::uint32_t sign = ((code >> (e + m)) & 1) << 31;
  return sign | 0x7f800000u | ((code & ((1u << m) - 1)) << (23 - m));
}

void check_every_16_bit_code(const Format& f, Ieee t) {
  int failures = 0;
  for (std::uint32_t code = 0; code < 0x10000 && failures < 20; ++code) {
    const double want = ieee_value(t, code);
    const ::testing::AssertionResult r = decodes_to(f, code, want);
    if (!r) ++failures;
    EXPECT_TRUE(r);
    if (std::isnan(want)) {
      const std::uint32_t got = bits_of(decode(f, code)), expect = ieee_nan_bits(t, code);
      if (got != expect) ++failures;
      EXPECT_EQ(got, expect) << f.name << " NaN code " << hex(code) << ": expected " << hex(expect) << " got "
                             << hex(got);
    } else {
      const std::uint32_t got = bits_of(decode(f, code)), expect = expected_bits(want);
      EXPECT_EQ(got, expect) << f.name << " code " << hex(code) << ": expected " << hex(expect) << " got " << hex(got);
    }
  }
}

TEST(Decode16, EveryBf16CodeMatchesIeeeDecoder) { check_every_16_bit_code(bf16, {8, 7}); }
TEST(Decode16, EveryF16CodeMatchesIeeeDecoder) { check_every_16_bit_code(f16, {5, 10}); }

TEST(Decode16, Bf16IsTheTopHalfOfF32) {
  // A second, independent reference: bf16 is the top 16 bits of an f32 (NaNs included).
  for (std::uint32_t code = 0; code < 0x10000; ++code) {
    EXPECT_EQ(bits_of(decode(bf16, code)), code << 16) << "code " << hex(code);
  }
}

TEST(Decode16, HandTypedSpotValues) {
  EXPECT_EQ(bits_of(decode(bf16, 0x7f7f)), bits_of(3.38953139e38f));
  EXPECT_EQ(static_cast<double>(decode(bf16, 0x7f7f)), 338953138925153547590470800371487866880.0);
  EXPECT_TRUE(decodes_to(bf16, 0x0001, 0x1p-133));
  EXPECT_TRUE(decodes_to(bf16, 0x0080, 0x1p-126));
  EXPECT_TRUE(decodes_to(bf16, 0x3f80, 1.0));
  EXPECT_TRUE(decodes_to(bf16, 0x3e9a, 0.30078125));
  EXPECT_TRUE(decodes_to(bf16, 0x8000, -0.0));
  EXPECT_TRUE(decodes_to(bf16, 0x7f80, INFINITY));
  EXPECT_TRUE(decodes_to(bf16, 0xff80, -INFINITY));
  EXPECT_TRUE(decodes_to(f16, 0x7bff, 65504));
  EXPECT_TRUE(decodes_to(f16, 0xfbff, -65504));
  EXPECT_TRUE(decodes_to(f16, 0x0001, 0x1p-24));
  EXPECT_TRUE(decodes_to(f16, 0x03ff, 0x1.ff8p-15));  // largest subnormal: 1023 * 2^-24
  EXPECT_TRUE(decodes_to(f16, 0x0400, 0x1p-14));
  EXPECT_TRUE(decodes_to(f16, 0x3c00, 1.0));
  EXPECT_TRUE(decodes_to(f16, 0x3555, 0.333251953125));
  EXPECT_TRUE(decodes_to(f16, 0x8000, -0.0));
  EXPECT_TRUE(decodes_to(f16, 0x7c00, INFINITY));
  EXPECT_TRUE(decodes_to(f16, 0xfc00, -INFINITY));
  // 16-bit NaNs keep their payload (IEEE widening).
  EXPECT_EQ(bits_of(decode(f16, 0x7e00)), 0x7fc00000u);
  EXPECT_EQ(bits_of(decode(f16, 0xfe00)), 0xffc00000u);
  EXPECT_EQ(bits_of(decode(f16, 0x7c01)), 0x7f802000u);
  EXPECT_EQ(bits_of(decode(f16, 0x7dff)), 0x7fbfe000u);
  EXPECT_EQ(bits_of(decode(bf16, 0x7fc0)), 0x7fc00000u);
  EXPECT_EQ(bits_of(decode(bf16, 0x7f81)), 0x7f810000u);
  EXPECT_EQ(bits_of(decode(bf16, 0xffff)), 0xffff0000u);
}

TEST(Decode16, F32IsTheIdentity) {
  for (std::uint64_t b = 0; b <= 0xffffffffull; b += 65537) {
    const auto code = static_cast<std::uint32_t>(b);
    EXPECT_EQ(bits_of(decode(f32, code)), code) << hex(code);
  }
  for (std::uint32_t code : {0x7f800001u, 0xffc00001u, 0x7fffffffu, 0x80000000u, 0x00000001u, 0x7f7fffffu}) {
    EXPECT_EQ(bits_of(decode(f32, code)), code) << hex(code);
  }
}

// ---- fields() and classify() on hand-picked codes ----

struct FieldCase {
  const Format* format;
  std::uint32_t code;
  std::uint32_t sign, exponent, mantissa;
  int unbiased;
  ValueClass value_class;
};

TEST(FieldsAndClass, HandPicked) {
  // clang-format off
  const FieldCase cases[] = {
      {&e4m3, 0x2a, 0, 5, 2, -2, ValueClass::normal},      // 0.3125 = 1.25 * 2^-2
      {&e4m3, 0x00, 0, 0, 0, -6, ValueClass::zero},        // zero reports emin
      {&e4m3, 0x80, 1, 0, 0, -6, ValueClass::zero},
      {&e4m3, 0x01, 0, 0, 1, -6, ValueClass::subnormal},
      {&e4m3, 0x7e, 0, 15, 6, 8, ValueClass::normal},      // 448 lives in the all-ones exponent binade
      {&e4m3, 0xff, 1, 15, 7, 8, ValueClass::nan},
      {&e5m2, 0x7c, 0, 31, 0, 16, ValueClass::inf},
      {&e5m2, 0xfc, 1, 31, 0, 16, ValueClass::inf},
      {&e5m2, 0x7d, 0, 31, 1, 16, ValueClass::nan},
      {&e5m2, 0x03, 0, 0, 3, -14, ValueClass::subnormal},
      {&e3m2, 0x3f, 1, 7, 3, 4, ValueClass::normal},       // -28
      {&e2m3, 0x08, 0, 1, 0, 0, ValueClass::normal},       // 1.0
      {&e2m3, 0x27, 1, 0, 7, 0, ValueClass::subnormal},    // -0.875
      {&e2m1, 0x1, 0, 0, 1, 0, ValueClass::subnormal},     // 0.5
      {&e2m1, 0x9, 1, 0, 1, 0, ValueClass::subnormal},     // -0.5
      {&e2m1, 0x7, 0, 3, 1, 2, ValueClass::normal},        // 6
      {&ue8m0, 0x00, 0, 0, 0, -127, ValueClass::normal},   // 2^-127: no zero, no subnormals
      {&ue8m0, 0x7f, 0, 127, 0, 0, ValueClass::normal},
      {&ue8m0, 0xfe, 0, 254, 0, 127, ValueClass::normal},
      {&ue8m0, 0xff, 0, 255, 0, 128, ValueClass::nan},
      {&ue4m3, 0x7f, 0, 15, 7, 8, ValueClass::nan},
      {&ue4m3, 0x00, 0, 0, 0, -6, ValueClass::zero},
      {&bf16, 0x3e9a, 0, 125, 0x1a, -2, ValueClass::normal},
      {&bf16, 0x8001, 1, 0, 1, -126, ValueClass::subnormal},
      {&f16, 0x0001, 0, 0, 1, -14, ValueClass::subnormal},
      {&f16, 0x7e00, 0, 31, 0x200, 16, ValueClass::nan},
      {&f32, 0x3f800000, 0, 127, 0, 0, ValueClass::normal},
      {&f32, 0xff800000, 1, 255, 0, 128, ValueClass::inf},
  };
  // clang-format on
  for (const FieldCase& c : cases) {
    SCOPED_TRACE(std::string(c.format->name) + " code " + hex(c.code));
    const Fields fl = fields(*c.format, c.code);
    EXPECT_EQ(fl.sign, c.sign);
    EXPECT_EQ(fl.exponent, c.exponent);
    EXPECT_EQ(fl.mantissa, c.mantissa);
    EXPECT_EQ(fl.unbiased_exponent, c.unbiased);
    EXPECT_EQ(classify(*c.format, c.code), c.value_class)
        << "expected " << to_string(c.value_class) << " got " << to_string(classify(*c.format, c.code));
  }
  EXPECT_TRUE(decodes_to(ue8m0, 0x00, 0x1p-127));
}

TEST(FieldsAndClass, ClassNames) {
  EXPECT_EQ(to_string(ValueClass::zero), "zero");
  EXPECT_EQ(to_string(ValueClass::subnormal), "subnormal");
  EXPECT_EQ(to_string(ValueClass::normal), "normal");
  EXPECT_EQ(to_string(ValueClass::inf), "inf");
  EXPECT_EQ(to_string(ValueClass::nan), "nan");
}

// Compile time: the codec is constexpr.
static_assert(decode(e2m1, 0x7) == 6.0f);
static_assert(decode(e4m3, 0x7e) == 448.0f);
static_assert(decode(ue8m0, 0x00) == 0x1p-127f);
static_assert(decode(f16, 0x0001) == 0x1p-24f);
static_assert(fields(e4m3, 0x2a).unbiased_exponent == -2);
static_assert(classify(e2m1, 0x1) == ValueClass::subnormal);

}  // namespace
}  // namespace mf::test
