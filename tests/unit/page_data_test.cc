// What the converter page and `minifloat show/block/plot` display, checked against docs/spec.md#worked-example and
// hand-worked block scales: describe_json, block_demo, strips_svg, error_svg.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "minifloat/block_demo.h"
#include "minifloat/describe_json.h"
#include "minifloat/picture.h"

namespace mf {
namespace {

std::size_t count(const std::string& s, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t i = s.find(what); i != std::string::npos; i = s.find(what, i + 1)) ++n;
  return n;
}

TEST(DescribeJson, SeedWorkedConversion) {
  // 0.3 = 1.2 x 2^-2: e4m3's exponent field is -2 + 7 = 5 = 0101, bf16's -2 + 127 = 125 = 01111101.
  const std::vector<const Format*> formats{&e4m3, &bf16, &e2m1};
  const auto j = nlohmann::json::parse(describe_json(0.3, false, formats, 1.0, {}));
  EXPECT_EQ(j["formats"][0]["exponent_field"], "0101");
  EXPECT_EQ(j["formats"][0]["stored_text"], "0.3125");
  EXPECT_EQ(j["formats"][1]["exponent_field"], "01111101");
  EXPECT_EQ(j["formats"][1]["mantissa_field"], "0011010");
  EXPECT_EQ(j["input_text"], "0.3");
  EXPECT_EQ(j["input_f32_bits"], nullptr);
}

TEST(DescribeJson, SeedScaleExample) {
  // 0.3 / 0.0625 = 4.8 -> e2m1 code 4 (0x6) -> 4 x 0.0625 = 0.25; unscaled 0.3 -> 0.5.
  const std::vector<const Format*> formats{&e2m1};
  const auto j = nlohmann::json::parse(describe_json(0.3, false, formats, 0.0625, {}));
  EXPECT_EQ(j["formats"][0]["code"], "0x6");
  EXPECT_EQ(j["formats"][0]["value"], 0.25);
  EXPECT_EQ(j["formats"][0]["unscaled"]["stored"], 0.5);
}

TEST(BlockDemo, OutlierZeroesSmallValues) {
  // Without the outlier: amax 0.3, floor(log2 0.3) - 2 = -4, S = 1/16: 0.1 -> 1.6 -> 1.5 x 1/16 = 0.09375.
  // With 40: floor(log2 40) - 2 = 3, S = 8: 0.3 / 8 = 0.0375 is below e2m1's 0.25 rounding point: all three -> 0.
  const std::vector<float> values{0.1f, 0.2f, 0.3f};
  const Scheme s = scheme_named("mxfp4");
  const BlockDemo plain = block_demo(values, s);
  EXPECT_EQ(plain.q.scale_code(0, 0), 127u - 4);
  EXPECT_EQ(plain.stored[0], 0.09375f);
  EXPECT_EQ(plain.zeroed, 0);
  const std::vector<float> more = with_outlier(values, 40.0f);
  ASSERT_EQ(more.size(), 4u);
  const BlockDemo r = block_demo(more, s);
  EXPECT_EQ(r.q.scale_code(0, 0), 127u + 3);
  EXPECT_EQ(r.zeroed, 3);
  EXPECT_EQ(r.nonzero, 4);
  EXPECT_EQ(r.stored[3], 32.0f);  // 40 / 8 = 5 -> e2m1 4 (tie to even between 4 and 6) -> 32
  const auto j = nlohmann::json::parse(block_demo_json(values, s, &more[3]));
  EXPECT_EQ(j["block"]["scales"][0]["power"], "2^-4");
  EXPECT_EQ(j["with_outlier"]["zeroed"], 3);
  EXPECT_EQ(j["with_outlier"]["values"][0]["became_zero"], true);
}

TEST(BlockDemo, OutlierReplacesTheLastOf32) {
  const std::vector<float> values(32, 1.0f);
  const std::vector<float> more = with_outlier(values, 40.0f);
  ASSERT_EQ(more.size(), 32u);
  EXPECT_EQ(more[31], 40.0f);
  EXPECT_EQ(more[30], 1.0f);
}

TEST(Picture, StripsHaveACellPerBit) {
  const std::string svg = strips_svg(0.3);
  // One rect per bit: f32 32 + bf16 16 + f16 16 + e4m3 8 + e5m2 8 + e3m2 6 + e2m3 6 + e2m1 4, 3 legend keys, and
  // the background.
  EXPECT_EQ(count(svg, "<rect "), 96u + 3 + 1);
  EXPECT_EQ(count(svg, "fill=\"#f0a202\""), 23u + 7 + 10 + 3 + 2 + 2 + 3 + 1 + 1);  // mantissa cells + key
  EXPECT_NE(svg.find("= 0.3125 (normal, error 4.17%)"), std::string::npos);
}

TEST(Picture, ErrorPanelLabelsEachFormat) {
  const std::string svg = error_svg(0.3);
  EXPECT_NE(svg.find(">e2m1 66.7%<"), std::string::npos);
  EXPECT_NE(svg.find(">e4m3 4.17%<"), std::string::npos);
  EXPECT_NE(svg.find(">bf16 0.26%<"), std::string::npos);
  EXPECT_EQ(count(svg, "<circle "), 8u);
  // 1000 overflows e4m3 to NaN: drawn on the top edge and labelled NaN; bf16 holds 1000 exactly.
  const std::string big = error_svg(1000);
  EXPECT_NE(big.find(">e4m3 NaN<"), std::string::npos);
  EXPECT_NE(big.find(">bf16 exact<"), std::string::npos);
}

}  // namespace
}  // namespace mf
