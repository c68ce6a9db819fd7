// docs/spec.md#formats typed by hand from the standards, compared with what each mf::Format derives from its one line
// of data. Nothing here is computed by format.h: the table below is the independent reference.
#include "test_util.h"
#include "minifloat/format.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <set>
#include <string>
#include <string_view>

namespace mf::test {
namespace {

// One row of docs/spec.md#formats. Limits are hex-float literals so they are exact; codes are positive magnitudes.
struct SpecRow {
  std::string_view name;
  const Format* format;
  int sign_bits, exponent_bits, mantissa_bits, bias;
  double max_finite;
  double spec_max_decimal;  // the max-finite column as docs/spec.md prints it (3 significant digits for f32/bf16)
  double min_normal;
  double min_subnormal;  // 0: the format has none
  bool has_inf, has_nan, has_zero;
  std::uint32_t max_finite_code;
  std::uint32_t inf_code;  // +Inf; 0 where there is none
  std::uint32_t nan_code;  // the NaN an encoder returns for +NaN; 0 where there is none
  int emin, emax;          // exponents of the smallest normal and of the largest finite binade
  int bits, storage_bytes;
  std::uint32_t sign_mask, magnitude_mask, mantissa_mask, exponent_field_max;
};

// clang-format off
const SpecRow kSpec[] = {
  // name    format  s  e   m  bias  max finite       spec column  min normal  min subnormal
  {"f32",   &f32,   1, 8, 23, 127, 0x1.fffffep127, 3.40e38,  0x1p-126, 0x1p-149, true,  true,  true,
   0x7f7fffff, 0x7f800000, 0x7fc00000, -126, 127, 32, 4, 0x80000000, 0x7fffffff, 0x7fffff, 0xff},
  {"bf16",  &bf16,  1, 8, 7,  127, 0x1.fep127,     3.39e38,  0x1p-126, 0x1p-133, true,  true,  true,
   0x7f7f, 0x7f80, 0x7fc0, -126, 127, 16, 2, 0x8000, 0x7fff, 0x7f, 0xff},
  {"f16",   &f16,   1, 5, 10, 15,  65504,          65504,    0x1p-14,  0x1p-24,  true,  true,  true,
   0x7bff, 0x7c00, 0x7e00, -14, 15, 16, 2, 0x8000, 0x7fff, 0x3ff, 0x1f},
  {"e4m3",  &e4m3,  1, 4, 3,  7,   448,            448,      0x1p-6,   0x1p-9,   false, true,  true,
   0x7e, 0, 0x7f, -6, 8, 8, 1, 0x80, 0x7f, 0x7, 0xf},
  {"e5m2",  &e5m2,  1, 5, 2,  15,  57344,          57344,    0x1p-14,  0x1p-16,  true,  true,  true,
   0x7b, 0x7c, 0x7e, -14, 15, 8, 1, 0x80, 0x7f, 0x3, 0x1f},
  {"e3m2",  &e3m2,  1, 3, 2,  3,   28,             28,       0x1p-2,   0x1p-4,   false, false, true,
   0x1f, 0, 0, -2, 4, 6, 1, 0x20, 0x1f, 0x3, 0x7},
  {"e2m3",  &e2m3,  1, 2, 3,  1,   7.5,            7.5,      1,        0x1p-3,   false, false, true,
   0x1f, 0, 0, 0, 2, 6, 1, 0x20, 0x1f, 0x7, 0x3},
  {"e2m1",  &e2m1,  1, 2, 1,  1,   6,              6,        1,        0.5,      false, false, true,
   0x7, 0, 0, 0, 2, 4, 1, 0x8, 0x7, 0x1, 0x3},
  {"ue8m0", &ue8m0, 0, 8, 0,  127, 0x1p127,        0x1p127,  0x1p-127, 0,        false, true,  false,
   0xfe, 0, 0xff, -127, 127, 8, 1, 0x0, 0xff, 0x0, 0xff},
  {"ue4m3", &ue4m3, 0, 4, 3,  7,   448,            448,      0x1p-6,   0x1p-9,   false, true,  true,
   0x7e, 0, 0x7f, -6, 8, 7, 1, 0x0, 0x7f, 0x7, 0xf},
  // The fnuz formats (arXiv:2206.02915; LLVM Float8E4M3FNUZ, Float8E5M2FNUZ, Float8E4M3B11FNUZ): no Inf, NaN 0x80.
  {"e4m3fnuz", &e4m3fnuz, 1, 4, 3, 8, 240,        240,      0x1p-7,   0x1p-10,  false, true,  true,
   0x7f, 0, 0x80, -7, 7, 8, 1, 0x80, 0x7f, 0x7, 0xf},
  {"e5m2fnuz", &e5m2fnuz, 1, 5, 2, 16, 57344,     57344,    0x1p-15,  0x1p-17,  false, true,  true,
   0x7f, 0, 0x80, -15, 15, 8, 1, 0x80, 0x7f, 0x3, 0x1f},
  {"e4m3b11fnuz", &e4m3b11fnuz, 1, 4, 3, 11, 30,  30,       0x1p-10,  0x1p-13,  false, true,  true,
   0x7f, 0, 0x80, -10, 4, 8, 1, 0x80, 0x7f, 0x7, 0xf},
  // IEEE-style (LLVM Float8E3M4, Float8E4M3): S.111.0000 / S.1111.000 Inf, quiet NaN mantissa 1000 / 100.
  {"e3m4", &e3m4, 1, 3, 4, 3, 15.5,               15.5,     0x1p-2,   0x1p-6,   true,  true,  true,
   0x6f, 0x70, 0x78, -2, 3, 8, 1, 0x80, 0x7f, 0xf, 0x7},
  {"e4m3ieee", &e4m3ieee, 1, 4, 3, 7, 240,        240,      0x1p-6,   0x1p-9,   true,  true,  true,
   0x77, 0x78, 0x7c, -6, 7, 8, 1, 0x80, 0x7f, 0x7, 0xf},
  // PTX ISA 13.4 ue5m3 (llvm/llvm-project#210720): bias 15, largest 0xfe = 1.75 x 2^16, NaN 0xff.
  {"ue5m3", &ue5m3, 0, 5, 3, 15, 114688,          114688,   0x1p-14,  0x1p-17,  false, true,  true,
   0xfe, 0, 0xff, -14, 16, 8, 1, 0x0, 0xff, 0x7, 0x1f},
};
// clang-format on

// Compile-time spot checks: the derived limits are constexpr.
static_assert(e4m3.max_finite() == 448.0f);
static_assert(e5m2.max_finite() == 57344.0f);
static_assert(e2m1.max_finite() == 6.0f && e2m1.min_subnormal() == 0.5f);
static_assert(f16.max_finite() == 65504.0f && f16.min_subnormal() == 0x1p-24f);
static_assert(ue8m0.min_normal() == 0x1p-127f && ue8m0.min_subnormal() == 0.0f);
static_assert(e4m3.max_finite_code() == 0x7e && e4m3.nan_code() == 0x7f && e5m2.inf_code() == 0x7c);
static_assert(find_format("e2m1") == &e2m1 && find_format("nope") == nullptr);
static_assert(pow2f(-149) == 0x1p-149f && pow2f(127) == 0x1p127f);

TEST(FormatTable, EveryRowMatchesSpec) {
  for (const SpecRow& r : kSpec) {
    SCOPED_TRACE(std::string(r.name));
    const Format& f = *r.format;
    EXPECT_EQ(f.name, r.name);
    EXPECT_EQ(f.sign_bits, r.sign_bits);
    EXPECT_EQ(f.exponent_bits, r.exponent_bits);
    EXPECT_EQ(f.mantissa_bits, r.mantissa_bits);
    EXPECT_EQ(f.bias, r.bias);
    EXPECT_EQ(f.bits(), r.bits);
    EXPECT_EQ(f.storage_bytes(), r.storage_bytes);
    EXPECT_EQ(f.code_count(), std::uint64_t{1} << r.bits);
    EXPECT_EQ(f.is_signed(), r.sign_bits == 1);
    EXPECT_EQ(f.has_zero, r.has_zero);
    EXPECT_EQ(f.has_inf(), r.has_inf);
    EXPECT_EQ(f.has_nan(), r.has_nan);
    EXPECT_EQ(f.has_subnormals(), r.min_subnormal != 0);
    EXPECT_EQ(f.emin(), r.emin);
    EXPECT_EQ(f.emax(), r.emax);
    // Limits are exact f32 values: compare as doubles, bit for bit.
    EXPECT_EQ(static_cast<double>(f.max_finite()), r.max_finite) << std::hexfloat << f.max_finite();
    EXPECT_EQ(static_cast<double>(f.min_normal()), r.min_normal) << std::hexfloat << f.min_normal();
    EXPECT_EQ(static_cast<double>(f.min_subnormal()), r.min_subnormal) << std::hexfloat << f.min_subnormal();
    EXPECT_EQ(f.max_finite_code(), r.max_finite_code)
        << "expected " << hex(r.max_finite_code) << " got " << hex(f.max_finite_code());
    if (r.has_inf) {
      EXPECT_EQ(f.inf_code(), r.inf_code) << "expected " << hex(r.inf_code) << " got " << hex(f.inf_code());
    }
    if (r.has_nan) {
      EXPECT_EQ(f.nan_code(), r.nan_code) << "expected " << hex(r.nan_code) << " got " << hex(f.nan_code());
    }
    EXPECT_EQ(f.sign_mask(), r.sign_mask) << "expected " << hex(r.sign_mask) << " got " << hex(f.sign_mask());
    EXPECT_EQ(f.magnitude_mask(), r.magnitude_mask)
        << "expected " << hex(r.magnitude_mask) << " got " << hex(f.magnitude_mask());
    EXPECT_EQ(f.mantissa_mask(), r.mantissa_mask)
        << "expected " << hex(r.mantissa_mask) << " got " << hex(f.mantissa_mask());
    EXPECT_EQ(f.exponent_field_max(), r.exponent_field_max)
        << "expected " << hex(r.exponent_field_max) << " got " << hex(f.exponent_field_max());
    // docs/spec.md prints f32/bf16 max to 3 significant digits: agree to that precision.
    EXPECT_NEAR(f.max_finite() / r.spec_max_decimal, 1.0, 0.005 / 3.39) << r.spec_max_decimal;
  }
}

TEST(FormatTable, HandRowsAreSelfConsistent) {
  // Guards the hand-typed table itself: its limits follow from its fields by the IEEE definitions.
  for (const SpecRow& r : kSpec) {
    SCOPED_TRACE(std::string(r.name));
    EXPECT_EQ(r.bits, r.sign_bits + r.exponent_bits + r.mantissa_bits);
    EXPECT_EQ(r.min_normal, std::ldexp(1.0, r.emin));
    if (r.min_subnormal != 0) {
      EXPECT_EQ(r.min_subnormal, std::ldexp(1.0, r.emin - r.mantissa_bits));
    }
    const double max_mantissa = static_cast<double>(r.max_finite_code & r.mantissa_mask);
    EXPECT_EQ(r.max_finite, std::ldexp(1.0 + max_mantissa / std::ldexp(1.0, r.mantissa_bits), r.emax));
  }
}

TEST(FormatTable, NegativeSpecialCodes) {
  EXPECT_EQ(f32.nan_code(true), 0xffc00000u);
  EXPECT_EQ(f32.inf_code(true), 0xff800000u);
  EXPECT_EQ(bf16.nan_code(true), 0xffc0u);
  EXPECT_EQ(bf16.inf_code(true), 0xff80u);
  EXPECT_EQ(f16.nan_code(true), 0xfe00u);
  EXPECT_EQ(f16.inf_code(true), 0xfc00u);
  EXPECT_EQ(e4m3.nan_code(true), 0xffu);
  EXPECT_EQ(e5m2.nan_code(true), 0xfeu);
  EXPECT_EQ(e5m2.inf_code(true), 0xfcu);
  // Unsigned formats have one NaN whatever the sign asked for.
  EXPECT_EQ(ue8m0.nan_code(true), 0xffu);
  EXPECT_EQ(ue4m3.nan_code(true), 0x7fu);
  EXPECT_EQ(ue5m3.nan_code(true), 0xffu);
  // fnuz: one NaN, 0x80, for either sign.
  EXPECT_EQ(e4m3fnuz.nan_code(false), 0x80u);
  EXPECT_EQ(e4m3fnuz.nan_code(true), 0x80u);
  EXPECT_EQ(e5m2fnuz.nan_code(true), 0x80u);
  EXPECT_EQ(e3m4.nan_code(true), 0xf8u);
  EXPECT_EQ(e3m4.inf_code(true), 0xf0u);
  EXPECT_EQ(e4m3ieee.nan_code(true), 0xfcu);
  EXPECT_EQ(e4m3ieee.inf_code(true), 0xf8u);
  // Which formats have a -0 code.
  EXPECT_TRUE(e4m3.has_negative_zero());
  EXPECT_TRUE(e3m4.has_negative_zero());
  EXPECT_FALSE(e4m3fnuz.has_negative_zero());
  EXPECT_FALSE(e4m3b11fnuz.has_negative_zero());
  EXPECT_FALSE(ue5m3.has_negative_zero());
}

// The NaN and Inf codes of each narrow format, typed from docs/spec.md#formats.
struct SpecialSet {
  const Format* format;
  std::set<std::uint32_t> nans, infs;
};

TEST(FormatTable, NanAndInfPredicatesOnEveryNarrowCode) {
  // clang-format off
  const SpecialSet sets[] = {
      {&e4m3, {0x7f, 0xff}, {}},
      {&e5m2, {0x7d, 0x7e, 0x7f, 0xfd, 0xfe, 0xff}, {0x7c, 0xfc}},
      {&e3m2, {}, {}},
      {&e2m3, {}, {}},
      {&e2m1, {}, {}},
      {&ue8m0, {0xff}, {}},
      {&ue4m3, {0x7f}, {}},
      {&e4m3fnuz, {0x80}, {}},
      {&e5m2fnuz, {0x80}, {}},
      {&e4m3b11fnuz, {0x80}, {}},
      {&e3m4, {0x71, 0x72, 0x73, 0x74, 0x75, 0x76, 0x77, 0x78, 0x79, 0x7a, 0x7b, 0x7c, 0x7d, 0x7e, 0x7f,
               0xf1, 0xf2, 0xf3, 0xf4, 0xf5, 0xf6, 0xf7, 0xf8, 0xf9, 0xfa, 0xfb, 0xfc, 0xfd, 0xfe, 0xff}, {0x70, 0xf0}},
      {&e4m3ieee, {0x79, 0x7a, 0x7b, 0x7c, 0x7d, 0x7e, 0x7f, 0xf9, 0xfa, 0xfb, 0xfc, 0xfd, 0xfe, 0xff}, {0x78, 0xf8}},
      {&ue5m3, {0xff}, {}},
  };
  // clang-format on
  for (const SpecialSet& s : sets) {
    for (std::uint32_t code = 0; code < (1u << s.format->bits()); ++code) {
      EXPECT_EQ(s.format->is_nan(code), s.nans.count(code) == 1) << s.format->name << " code " << hex(code);
      EXPECT_EQ(s.format->is_inf(code), s.infs.count(code) == 1) << s.format->name << " code " << hex(code);
    }
  }
}

TEST(FormatTable, NanAndInfPredicatesOnEvery16BitCode) {
  // IEEE: exponent field all ones; mantissa 0 is Inf, anything else NaN.
  for (std::uint32_t code = 0; code < 0x10000; ++code) {
    const std::uint32_t b = code & 0x7fff;
    EXPECT_EQ(bf16.is_nan(code), b > 0x7f80) << "bf16 " << hex(code);
    EXPECT_EQ(bf16.is_inf(code), b == 0x7f80) << "bf16 " << hex(code);
    EXPECT_EQ(f16.is_nan(code), b > 0x7c00) << "f16 " << hex(code);
    EXPECT_EQ(f16.is_inf(code), b == 0x7c00) << "f16 " << hex(code);
  }
  EXPECT_TRUE(f32.is_nan(0x7f800001u));
  EXPECT_TRUE(f32.is_nan(0xffc00000u));
  EXPECT_FALSE(f32.is_nan(0x7f800000u));
  EXPECT_TRUE(f32.is_inf(0xff800000u));
  EXPECT_FALSE(f32.is_inf(0x7f7fffffu));
}

TEST(FormatTable, AllFormatsInSpecOrder) {
  ASSERT_EQ(all_formats.size(), std::size(kSpec));
  for (std::size_t i = 0; i < all_formats.size(); ++i) {
    EXPECT_EQ(all_formats[i], kSpec[i].format) << i;
    EXPECT_EQ(all_formats[i]->name, kSpec[i].name) << i;
  }
}

TEST(FormatTable, FindFormat) {
  for (const SpecRow& r : kSpec) EXPECT_EQ(find_format(r.name), r.format) << r.name;
  // minifloat's own names and the ecosystem's dtype spellings (typed here from ml_dtypes' and PyTorch's dtype
  // names); no other aliases, no padding, no prefixes.
  const std::vector<std::pair<std::string_view, const Format*>> spelled{{"float32", &f32},
                                                                        {"bfloat16", &bf16},
                                                                        {"float16", &f16},
                                                                        {"float8_e4m3fn", &e4m3},
                                                                        {"float8_e5m2", &e5m2},
                                                                        {"float6_e3m2fn", &e3m2},
                                                                        {"float6_e2m3fn", &e2m3},
                                                                        {"float4_e2m1fn", &e2m1},
                                                                        {"float4_e2m1fn_x2", &e2m1},
                                                                        {"float8_e8m0fnu", &ue8m0},
                                                                        {"float8_e4m3fnuz", &e4m3fnuz},
                                                                        {"float8_e5m2fnuz", &e5m2fnuz},
                                                                        {"float8_e4m3b11fnuz", &e4m3b11fnuz},
                                                                        {"float8_e3m4", &e3m4},
                                                                        {"float8_e4m3", &e4m3ieee},
                                                                        {"float8_e5m3fnu", &ue5m3}};
  for (const auto& [name, f] : spelled) EXPECT_EQ(find_format(name), f) << name;
  for (std::string_view bad : {"", "fp8", "e4m3fn", "float8_e4m3b11", "float8_e5m3", "e4m3 ", " e4m3", "e4m", "bf",
                               "f8", "ue8m0x", "Float16", "e5m3", "ue5m3fnu"}) {
    EXPECT_EQ(find_format(bad), nullptr) << "'" << bad << "'";
  }
}

TEST(FormatTable, EqualityIsByName) {
  EXPECT_TRUE(e4m3 == e4m3);
  EXPECT_FALSE(e4m3 == ue4m3);  // same fields but for the sign: different formats
  EXPECT_FALSE(bf16 == f32);
}

TEST(FormatTable, AlsoNamesMentionTheCommonName) {
  // docs/spec.md#formats' "also called" column: the first name each row gives.
  const std::pair<const Format*, std::string_view> also[] = {
      {&f32, "FP32"},
      {&bf16, "BF16"},
      {&f16, "FP16"},
      {&e4m3, "E4M3FN"},
      {&e5m2, "FP8 E5M2"},
      {&e3m2, "FP6 E3M2"},
      {&e2m3, "FP6 E2M3"},
      {&e2m1, "FP4 E2M1"},
      {&ue8m0, "E8M0"},
      {&ue4m3, "NVFP4"},
      {&e4m3fnuz, "E4M3FNUZ"},
      {&e5m2fnuz, "E5M2FNUZ"},
      {&e4m3b11fnuz, "E4M3B11FNUZ"},
      {&e3m4, "E3M4"},
      {&e4m3ieee, "float8_e4m3"},
      {&ue5m3, "UE5M3"},
  };
  for (const auto& [f, word] : also) {
    EXPECT_NE(f->also.find(word), std::string_view::npos) << f->name << ": " << f->also;
  }
}

TEST(FormatTable, Pow2fIsExactEverywhere) {
  for (int k = -149; k <= 127; ++k) {
    EXPECT_EQ(static_cast<double>(pow2f(k)), std::ldexp(1.0, k)) << "k = " << k;
  }
}

}  // namespace
}  // namespace mf::test
