// Opening a checkpoint is O(n log n) in its tensor count. A file of 200,000 tensors (100,000 FP8 weights with their
// scales, names as a real checkpoint spells them, listed in reverse) is parsed, every tensor is found by name, the
// pairs are matched (a [1, 128] weight with a [1, 1] scale reads as one 128x128 block), and `inspect` and `verify`
// run over it. ctest gives this program 300 s (tests/CMakeLists.txt): about 10 s of work here, a few times that
// under the sanitizers, when each step is O(n log n); the quadratic steps it replaces (a linear name lookup, and
// nlohmann's callback parser, which rescans an object's members each time one of them closes) ran for over 9
// minutes on this file without finishing. The speed itself is measured by bench/bench_checkpoint_header.cc.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "io_test_util.h"
#include "minifloat/checkpoint_commands.h"
#include "minifloat/checkpoint_tensors.h"
#include "minifloat/safetensors.h"

namespace mf::io {
namespace {

constexpr std::uint64_t kWeightShape[] = {1, 128}, kScaleShape[] = {1, 1};

using namespace mf::io::testing;

TEST(HeaderScale, TwoHundredThousandTensors) {
  constexpr int kPairs = 100000;
  TempDir dir;
  const std::vector<std::byte> codes(128, std::byte{0x38});  // e4m3 1.0
  const std::vector<std::byte> one{std::byte{0}, std::byte{0}, std::byte{0x80}, std::byte{0x3f}};
  std::vector<std::string> names;
  for (int i = kPairs; i-- > 0;) {
    const std::string w = str("model.layers.", i / 768, ".mlp.experts.", i % 768 / 3, ".proj", i % 3, ".weight");
    names.push_back(w + "_scale_inv");
    names.push_back(w);
  }
  std::vector<TensorView> views;
  for (const std::string& n : names) {
    if (n.ends_with("_scale_inv")) {
      views.push_back({n, DType::F32, kScaleShape, one});
    } else {
      views.push_back({n, DType::F8_E4M3, kWeightShape, codes});
    }
  }
  const auto file = dir / "model.safetensors";
  write_safetensors(file, views);

  const SafetensorsFile f = read_safetensors(file);
  ASSERT_EQ(f.tensors().size(), names.size());
  for (const std::string& n : names) {
    const SafetensorsTensor* t = f.find(n);
    ASSERT_NE(t, nullptr) << n;
    ASSERT_EQ(t->name, n);
  }
  EXPECT_EQ(f.find("model.layers.0.mlp.experts.0.proj0.weigh"), nullptr);
  EXPECT_EQ(f.find("zzz"), nullptr);
  EXPECT_EQ(f.find(""), nullptr);

  const std::vector<QuantizedPair> pairs = find_pairs(f);
  ASSERT_EQ(pairs.size(), static_cast<std::size_t>(kPairs));
  EXPECT_TRUE(std::all_of(pairs.begin(), pairs.end(), [](const QuantizedPair& p) {
    return p.scale == p.weight + "_scale_inv" && p.scheme.name == "e4m3-128x128-f32-f32";
  })) << pairs[0].scheme.name;

  const InspectReport r = inspect_checkpoint(file, false, ConfigRules::detect, 1);
  EXPECT_EQ(r.tensors.size(), names.size());
  EXPECT_EQ(r.params, static_cast<std::uint64_t>(kPairs) * 128);
  VerifyOptions options;
  options.threads = 2;
  EXPECT_EQ(verify_checkpoint(file, options).pairs, static_cast<std::size_t>(kPairs));
}

}  // namespace
}  // namespace mf::io
