// The `minifloat` command, run as a user would: arguments in, stdout/stderr/exit code out.
//
// Expected values are worked out by hand from docs/spec.md (or read from the hand-typed golden tables), never from the
// program itself; the one exception is docs/formats.md, which must equal `minifloat formats --markdown` so the
// committed docs cannot drift from the format data.
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

using namespace mf::test;

using nlohmann::json;

using mf::test::read_file;
using mf::test::Result;
using mf::test::run;

// ---- show: the worked example of docs/spec.md#worked-example ----

TEST(Show, PointThreeInTheDefaultFormats) {
  const Result r = run({"show", "0.3"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  // 0.3 = 1.2 x 2^-2: exponent field = bias - 2. BF16 127 - 2 = 125, 0.2 x 2^7 = 25.6 -> 26 (0011010).
  expect_contains(row(r.out, "bf16"), {"0x3e9a", "0 | 01111101 | 0011010", "0.30078125"});
  // E4M3 7 - 2 = 5 (0101), 0.2 x 8 = 1.6 -> 2 (010): 1.25 x 2^-2 = 0.3125, error 0.0125 / 0.3 = 4.17%.
  expect_contains(row(r.out, "e4m3"), {"0x2a", "0 | 0101 | 010", " normal ", "0.3125", "4.17%"});
  // F16 15 - 2 = 13, 0.2 x 1024 = 204.8 -> 205; E5M2 15 - 2 = 13, 0.2 x 4 = 0.8 -> 1.
  expect_contains(row(r.out, "f16"), {"0x34cd", "0 | 01101 | 0011001101"});
  expect_contains(row(r.out, "e5m2"), {"0x35", "0 | 01101 | 01"});
  // E2M1 has 0 and 0.5 near 0.3: 0.5 is nearer (subnormal code 0x1), error 0.2 / 0.3 = 66.7%.
  expect_contains(row(r.out, "e2m1"), {"0x1", "0 | 00 | 1", "subnormal", "0.5", "66.7%"});
  EXPECT_EQ(row(r.out, "e3m2"), "");  // not a default format
}

TEST(Show, ScaleMakesE2m1Accurate) {
  const Result r = run({"show", "0.3", "--scale", "0.0625", "--formats", "e2m1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // 0.3 / 0.0625 = 4.8 -> nearest E2M1 value 4 = 1.0 x 2^2 (0 | 11 | 0 = 0x6); 4 x 0.0625 = 0.25; 0.05 / 0.3.
  expect_contains(r.out, {"4.8"});
  expect_contains(row(r.out, "e2m1"), {"0x6", "0 | 11 | 0", "0.25", "16.7%"});
  // Without the scale: 0.5 (0x1), 66.7%.
  const std::size_t without = r.out.find("without the scale");
  ASSERT_NE(without, std::string::npos) << r.out;
  expect_contains(r.out.substr(without), {"0.5", "0x1", "66.7%"});
}

TEST(Show, AcceptsF32BitsAndNegatives) {
  const Result bits = run({"show", "0x3e99999a", "--formats", "e4m3"});
  ASSERT_EQ(bits.exit_code, 0) << bits.err;
  expect_contains(bits.out, {"0.30000001192092896"});  // the f32 nearest 0.3, exactly
  expect_contains(row(bits.out, "e4m3"), {"0x2a"});
  const Result neg = run({"show", "-0.3", "--formats", "e4m3"});
  ASSERT_EQ(neg.exit_code, 0) << neg.err;
  expect_contains(row(neg.out, "e4m3"), {"0xaa", "1 | 0101 | 010"});  // sign bit set on 0x2a
  const Result sat = run({"show", "1000", "--formats", "e4m3", "--overflow", "saturate"});
  expect_contains(row(sat.out, "e4m3"), {"0x7e", "saturated", "448"});
}

// ---- show --json: the schema documented in docs/cli.md ----

std::vector<std::string> keys(const json& j) {
  std::vector<std::string> k;
  for (auto it = j.begin(); it != j.end(); ++it) k.push_back(it.key());
  std::sort(k.begin(), k.end());
  return k;
}
const std::vector<std::string> kShowKeys = {"formats",  "input",    "input_f32_bits", "input_text",
                                            "overflow", "rounding", "scale",          "scaled_input"};
const std::vector<std::string> kRowKeys = {"abs_error",      "bits",        "class",          "code",      "exponent",
                                           "exponent_field", "format",      "mantissa_field", "rel_error", "sign",
                                           "stored",         "stored_text", "value"};

TEST(ShowJson, FieldsForPointThree) {
  const Result r = run({"show", "0.3", "--formats", "e4m3,ue8m0", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(keys(j), kShowKeys);
  EXPECT_EQ(j["input"], 0.3);
  EXPECT_EQ(j["input_text"], "0.3");
  EXPECT_TRUE(j["input_f32_bits"].is_null());
  EXPECT_EQ(j["scale"], 1.0);
  EXPECT_EQ(j["scaled_input"], 0.3);
  EXPECT_EQ(j["overflow"], "default");
  EXPECT_EQ(j["rounding"], "nearest_even");
  ASSERT_EQ(j["formats"].size(), 2u);
  const json& e = j["formats"][0];
  EXPECT_EQ(keys(e), kRowKeys);
  EXPECT_EQ(e["format"], "e4m3");
  EXPECT_EQ(e["code"], "0x2a");
  EXPECT_EQ(e["bits"], "00101010");
  EXPECT_EQ(e["sign"], 0);
  EXPECT_EQ(e["exponent_field"], "0101");
  EXPECT_EQ(e["exponent"], -2);
  EXPECT_EQ(e["mantissa_field"], "010");
  EXPECT_EQ(e["class"], "normal");
  EXPECT_EQ(e["stored"], 0.3125);
  EXPECT_EQ(e["stored_text"], "0.3125");
  EXPECT_EQ(e["value"], 0.3125);
  EXPECT_NEAR(e["abs_error"].get<double>(), 0.0125, 1e-15);
  EXPECT_NEAR(e["rel_error"].get<double>(), 0.0125 / 0.3, 1e-15);
  // ue8m0: unsigned (sign null), no mantissa bits; 0.3 = 1.2 x 2^-2 rounds to 2^-2 (1.2 < 1.5): code 127 - 2.
  const json& u = j["formats"][1];
  EXPECT_TRUE(u["sign"].is_null());
  EXPECT_EQ(u["code"], "0x7d");
  EXPECT_EQ(u["mantissa_field"], "");
  EXPECT_EQ(u["exponent"], -2);
  EXPECT_EQ(u["stored"], 0.25);
}

TEST(ShowJson, ScaleAddsUnscaledAndBitsInputIsNamed) {
  const Result r = run({"show", "0.3", "--scale", "0.0625", "--formats", "e2m1", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["scale"], 0.0625);
  EXPECT_NEAR(j["scaled_input"].get<double>(), 4.8, 1e-15);
  const json& e = j["formats"][0];
  EXPECT_EQ(e["code"], "0x6");
  EXPECT_EQ(e["stored"], 4.0);
  EXPECT_EQ(e["value"], 0.25);
  EXPECT_NEAR(e["rel_error"].get<double>(), 1.0 / 6, 1e-12);
  ASSERT_TRUE(e.contains("unscaled"));
  EXPECT_EQ(e["unscaled"]["code"], "0x1");
  EXPECT_EQ(e["unscaled"]["class"], "subnormal");
  EXPECT_EQ(e["unscaled"]["value"], 0.5);
  EXPECT_NEAR(e["unscaled"]["rel_error"].get<double>(), 2.0 / 3, 1e-12);

  const json b = json::parse(run({"show", "0x3e99999a", "--formats", "bf16", "--json"}).out);
  EXPECT_EQ(b["input_f32_bits"], "0x3e99999a");
  EXPECT_EQ(b["input"], static_cast<double>(0.3f));
}

TEST(ShowJson, NonFiniteNumbersAreStrings) {
  // Options before "--" so that "-inf" is read as X, not as an option.
  const Result r = run({"show", "--formats", "e5m2,e4m3,e2m1", "--json", "--", "-inf"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["input"], "-inf");
  EXPECT_EQ(j["scaled_input"], "-inf");
  const json& e5 = j["formats"][0];  // e5m2 keeps -Inf (0xfc), no error
  EXPECT_EQ(e5["code"], "0xfc");
  EXPECT_EQ(e5["class"], "inf");
  EXPECT_EQ(e5["stored"], "-inf");
  EXPECT_TRUE(e5["exponent"].is_null());
  EXPECT_EQ(e5["abs_error"], 0.0);
  const json& e4 = j["formats"][1];  // e4m3 has no Inf: -Inf becomes NaN with the sign (0xff)
  EXPECT_EQ(e4["code"], "0xff");
  EXPECT_EQ(e4["class"], "nan");
  EXPECT_TRUE(e4["stored"].is_string());
  EXPECT_NE(e4["stored"].get<std::string>().find("nan"), std::string::npos);
  EXPECT_EQ(e4["rel_error"], "nan");
  const json& e2 = j["formats"][2];  // e2m1 saturates: -6 (0xf)
  EXPECT_EQ(e2["code"], "0xf");
  EXPECT_EQ(e2["class"], "saturated");
  EXPECT_EQ(e2["abs_error"], "inf");

  const json n = json::parse(run({"show", "nan", "--formats", "e4m3", "--json"}).out);
  EXPECT_EQ(n["input"], "nan");
  EXPECT_EQ(n["formats"][0]["stored"], "nan");
  EXPECT_EQ(n["formats"][0]["code"], "0x7f");
}

// ---- formats ----

TEST(Formats, MarkdownEqualsCommittedDocs) {
  const Result r = run({"formats", "--markdown"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string committed = read_file(MF_SOURCE_DIR "/docs/formats.md");
  ASSERT_FALSE(committed.empty()) << "docs/formats.md is missing";
  EXPECT_EQ(r.out, committed) << "regenerate: minifloat formats --markdown > docs/formats.md";
}

TEST(Formats, JsonMatchesSpecTable) {
  const Result r = run({"formats", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  ASSERT_TRUE(j.is_array());
  std::vector<std::string> names;
  for (const auto& f : j) names.push_back(f["name"]);
  EXPECT_EQ(names,
            (std::vector<std::string>{"f32", "bf16", "f16", "e4m3", "e5m2", "e3m2", "e2m3", "e2m1", "ue8m0", "ue4m3",
                                      "e4m3fnuz", "e5m2fnuz", "e4m3b11fnuz", "e3m4", "e4m3ieee", "ue5m3"}));
  const std::vector<std::string> format_keys = {
      "also",          "bias",     "bits",          "exponent_bits", "has_inf",         "has_nan",
      "has_zero",      "inf_code", "mantissa_bits", "max_finite",    "max_finite_code", "min_normal",
      "min_subnormal", "name",     "nan_code",      "sign_bits"};
  for (const auto& f : j) EXPECT_EQ(keys(f), format_keys) << f["name"];
  // docs/spec.md#formats, typed by hand.
  const json& e4m3 = j[3];
  EXPECT_EQ(e4m3["bits"], 8);
  EXPECT_EQ(e4m3["bias"], 7);
  EXPECT_EQ(e4m3["max_finite"], 448.0);
  EXPECT_EQ(e4m3["max_finite_code"], 0x7e);
  EXPECT_EQ(e4m3["min_normal"], std::ldexp(1.0, -6));
  EXPECT_EQ(e4m3["min_subnormal"], std::ldexp(1.0, -9));
  EXPECT_EQ(e4m3["has_inf"], false);
  EXPECT_TRUE(e4m3["inf_code"].is_null());
  EXPECT_EQ(e4m3["nan_code"], 0x7f);
  const json& e5m2 = j[4];
  EXPECT_EQ(e5m2["max_finite"], 57344.0);
  EXPECT_EQ(e5m2["max_finite_code"], 0x7b);
  EXPECT_EQ(e5m2["inf_code"], 0x7c);
  EXPECT_EQ(j[2]["max_finite"], 65504.0);                                           // f16
  EXPECT_EQ(j[1]["max_finite"], (2 - std::ldexp(1.0, -7)) * std::ldexp(1.0, 127));  // bf16
  EXPECT_EQ(j[5]["max_finite"], 28.0);                                              // e3m2
  EXPECT_EQ(j[6]["max_finite"], 7.5);                                               // e2m3
  const json& e2m1 = j[7];
  EXPECT_EQ(e2m1["max_finite"], 6.0);
  EXPECT_EQ(e2m1["min_subnormal"], 0.5);
  EXPECT_EQ(e2m1["has_nan"], false);
  EXPECT_TRUE(e2m1["nan_code"].is_null());
  const json& ue8m0 = j[8];
  EXPECT_EQ(ue8m0["sign_bits"], 0);
  EXPECT_EQ(ue8m0["has_zero"], false);
  EXPECT_EQ(ue8m0["max_finite"], std::ldexp(1.0, 127));
  EXPECT_EQ(ue8m0["max_finite_code"], 0xfe);
  EXPECT_EQ(ue8m0["min_normal"], std::ldexp(1.0, -127));
  EXPECT_TRUE(ue8m0["min_subnormal"].is_null());
  EXPECT_EQ(ue8m0["nan_code"], 0xff);
  EXPECT_EQ(j[9]["nan_code"], 0x7f);  // ue4m3
  const json& e4m3fnuz = j[10];       // arXiv:2206.02915: bias 8, NaN 0x80, no Inf
  EXPECT_EQ(e4m3fnuz["bias"], 8);
  EXPECT_EQ(e4m3fnuz["max_finite"], 240.0);
  EXPECT_EQ(e4m3fnuz["max_finite_code"], 0x7f);
  EXPECT_EQ(e4m3fnuz["nan_code"], 0x80);
  EXPECT_TRUE(e4m3fnuz["inf_code"].is_null());
  EXPECT_EQ(j[11]["max_finite"], 57344.0);  // e5m2fnuz
  EXPECT_EQ(j[12]["max_finite"], 30.0);     // e4m3b11fnuz
  EXPECT_EQ(j[13]["inf_code"], 0x70);       // e3m4
  EXPECT_EQ(j[13]["max_finite"], 15.5);
  EXPECT_EQ(j[14]["inf_code"], 0x78);  // e4m3ieee
  EXPECT_EQ(j[14]["max_finite"], 240.0);
  const json& ue5m3 = j[15];  // PTX ISA 13.4: bias 15, 0xfe = 114688, 0xff NaN
  EXPECT_EQ(ue5m3["sign_bits"], 0);
  EXPECT_EQ(ue5m3["max_finite"], 114688.0);
  EXPECT_EQ(ue5m3["max_finite_code"], 0xfe);
  EXPECT_EQ(ue5m3["nan_code"], 0xff);
  EXPECT_EQ(ue5m3["min_subnormal"], std::ldexp(1.0, -17));
}

TEST(Formats, TextTable) {
  const Result r = run({"formats"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_contains(row(r.out, "e4m3"), {"1/4/3", "448 (0x7e)", "0x7f, 0xff"});
  expect_contains(row(r.out, "e5m2"), {"57344 (0x7b)", "0x7c, 0xfc"});
  expect_contains(row(r.out, "e4m3fnuz"), {"1/4/3", "240 (0x7f)", "0x80 (the code of -0); no -0"});
  expect_contains(row(r.out, "ue5m3"), {"0/5/3", "114688 (0xfe)", "0xff"});
  EXPECT_EQ(lines(r.out).size(), 17u);  // header + 16 formats
}

TEST(Tour, HasTheThreeSections) {
  const Result r = run({"tour"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  // The three sections, 0.3 in e4m3, and the e2m1 scale example.
  expect_contains(r.out, {"1. The formats", "2. One number, every format", "3. Scales keep small formats accurate",
                          "0 | 0101 | 010", "16.7%"});
}

TEST(Help, EverySubcommandExitsZero) {
  for (const char* sub : {"formats", "show", "encode", "decode", "tour"}) {
    const Result r = run({sub, "--help"});
    EXPECT_EQ(r.exit_code, 0) << sub << ": " << r.err;
    expect_contains(r.out, {"Usage"});
  }
  const Result top = run({"--help"});
  EXPECT_EQ(top.exit_code, 0);
  expect_contains(top.out, {"formats", "show", "encode", "decode", "tour"});
  expect_contains(run({"encode", "--help"}).out, {"--bits", "--overflow", "--rounding", "--seed"});
  expect_contains(run({"show", "--help"}).out, {"--formats", "--scale", "--json"});
}

// The version is written once, in the top CMakeLists.txt's project() line; --version prints it (minifloat/version.h).
TEST(Version, IsTheProjectVersion) {
  const std::string cmake = read_file(MF_SOURCE_DIR "/CMakeLists.txt");
  const std::string key = "project(minifloat VERSION ";
  const std::size_t at = cmake.find(key);
  ASSERT_NE(at, std::string::npos) << "no '" << key << "' in CMakeLists.txt";
  const std::size_t begin = at + key.size();
  const std::string version = cmake.substr(begin, cmake.find_first_of(" \n)", begin) - begin);
  ASSERT_FALSE(version.empty());
  const Result r = run({"--version"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "minifloat " + version + "\n");
}

// ---- every error path: one line on stderr, exit 2, nothing on stdout ----

TEST(Errors, UnparsableValueNamesTheLine) {
  expect_usage_error(run({"encode", "e4m3"}, "0.5\n1.5\nabc\n"), "line 3");
  expect_usage_error(run({"encode", "e4m3"}, "0.5\n1.5\nabc\n"), "abc");
  expect_usage_error(run({"encode", "e4m3"}, "1\n\n2\n"), "line 2");      // a blank line is not a value
  expect_usage_error(run({"encode", "e4m3"}, "0x3e99999a\n"), "--bits");  // hints at --bits
  expect_usage_error(run({"decode", "e4m3"}, "0x2a\nzz\n"), "line 2");
  expect_usage_error(run({"encode", "e4m3", "1", "x"}), "x");
  expect_usage_error(run({"show", "abc"}), "abc");
}

TEST(Errors, UnknownFormat) {
  expect_usage_error(run({"encode", "e9m9"}, "1\n"), "e9m9");
  expect_usage_error(run({"decode", "fp8"}, "1\n"), "fp8");
}

TEST(Errors, BadFormatsList) {
  expect_usage_error(run({"show", "0.3", "--formats", "e4m3,e9m9"}), "e9m9");
  expect_usage_error(run({"show", "0.3", "--formats", ""}), "--formats");
}

TEST(Errors, UnknownOption) {
  expect_usage_error(run({"encode", "e4m3", "--frob", "1"}), "--frob");
  expect_usage_error(run({"show", "0.3", "--frob"}), "--frob");
  expect_usage_error(run({"encode", "e4m3", "--rounding", "up", "1"}), "--rounding");
  expect_usage_error(run({"encode", "e4m3", "--overflow", "wrap", "1"}), "--overflow");
  expect_usage_error(run({"encode", "e4m3", "--seed", "abc", "1"}), "--seed");
  expect_usage_error(run({"formats", "--markdown", "--json"}), "--json");
}

TEST(Errors, UnknownSubcommand) { expect_usage_error(run({"frobnicate"}), "frobnicate"); }

TEST(Errors, NoSubcommand) { expect_usage_error(run({}), "subcommand"); }

TEST(Errors, EmptyInput) {
  expect_usage_error(run({"encode", "e4m3"}, ""), "empty");
  expect_usage_error(run({"decode", "e4m3"}, ""), "empty");
}

TEST(Errors, CodeTooWideForTheFormat) {
  expect_usage_error(run({"decode", "e2m1"}, "0x7\n0x10\n"), "line 2");
  expect_usage_error(run({"decode", "e4m3", "256"}), "256");
  expect_usage_error(run({"decode", "ue4m3", "0x80"}), "0x80");  // 7 bits
}

TEST(Errors, BadScale) {
  for (const char* s : {"0", "-1", "inf", "nan"}) expect_usage_error(run({"show", "0.3", "--scale", s}), "--scale");
  expect_usage_error(run({"show", "0.3", "--scale", "abc"}), "--scale");
}

TEST(Errors, BitsInputWithout0x) {
  expect_usage_error(run({"encode", "e4m3", "--bits"}, "0x3e99999a\n1050253722\n"), "line 2");
  expect_usage_error(run({"encode", "e4m3", "--bits"}, "0.3\n"), "0.3");
  expect_usage_error(run({"encode", "e4m3", "--bits"}, "0x1ffffffff\n"), "line 1");  // more than 32 bits
}

TEST(Errors, MissingRequiredArgument) {
  expect_usage_error(run({"show"}), "X");
  expect_usage_error(run({"encode"}, "1\n"), "FORMAT");
  expect_usage_error(run({"decode"}, "1\n"), "FORMAT");
}

TEST(Errors, UnwritableOutputIsAnErrorNotATruncation) {
  // Every write to /dev/full fails: that must not pass for success.
  expect_usage_error(run({"formats"}, "", "/dev/full"), "standard output");
}

}  // namespace
