// MoE experts between DeepSeek-V4's per-expert MXFP4 weights (w1, w3, w2: I8 [R, C/2] with E8M0 scales 1x32) and
// gpt-oss's fused blocks, on bytes worked out by hand: every row of codes and scales of expert e's projection p holds
// its own tag, so the tests see where each row lands (gate_up_proj: row 2j gate's row j, row 2j + 1 up's row j).
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "io_test_util.h"
#include "minifloat/checkpoint_commands.h"
#include "minifloat/recipe.h"
#include "minifloat/safetensors.h"

namespace mf::io {
namespace {

using namespace mf::io::testing;
using Shape = std::vector<std::uint64_t>;

constexpr std::uint64_t kExperts = 2, kRows = 32, kCols = 32;  // every projection [32, 32]: one 32-block a row
const char* const kNames[3] = {"w1", "w3", "w2"};              // gate, up, down
const std::string kPrefix = "model.layers.0.ffn.experts.";

int code_tag(std::uint64_t e, int proj, std::uint64_t row) {
  return (static_cast<int>(e) * 3 + proj) * 32 + static_cast<int>(row);
}
int scale_tag(std::uint64_t e, int proj) { return 100 + static_cast<int>(e) * 3 + proj; }

// DeepSeek-V4's experts of one layer, with expert `skip`'s down projection (w2) left out when skip < kExperts, named
// from expert `first` on.
void write_v4_experts(const std::filesystem::path& dir, std::uint64_t skip = kExperts, std::uint64_t first = 0) {
  std::vector<std::string> names;
  std::vector<Bytes> data;
  std::vector<TensorView> views;
  for (std::uint64_t e = 0; e < kExperts; ++e) {
    for (int p = 0; p < 3; ++p) {
      if (e == skip && p == 2) continue;
      Bytes codes, scales;
      for (std::uint64_t r = 0; r < kRows; ++r) {
        codes.insert(codes.end(), kCols / 2, static_cast<std::byte>(code_tag(e, p, r)));
        scales.push_back(static_cast<std::byte>(scale_tag(e, p)));
      }
      names.push_back(kPrefix + std::to_string(first + e) + "." + kNames[p] + ".weight");
      data.push_back(std::move(codes));
      names.push_back(names.back() + "_scale_inv");
      data.push_back(std::move(scales));
    }
  }
  const Shape packed{kRows, kCols / 2}, grid{kRows, kCols / 32};  // views hold spans of these
  for (std::size_t i = 0; i < names.size(); i += 2) {
    views.push_back({names[i], DType::I8, packed, data[i]});
    views.push_back({names[i + 1], DType::F8_E8M0, grid, data[i + 1]});
  }
  std::filesystem::create_directories(dir);
  write_safetensors(dir / "model.safetensors", views);
}

std::vector<int> u8(std::span<const std::byte> b) {
  std::vector<int> out;
  for (const std::byte x : b) out.push_back(std::to_integer<int>(x));
  return out;
}

TEST(ExpertRelayout, DeepSeekExpertsGatheredIntoGptOssBlocksAndSplitBack) {
  TempDir dir;
  write_v4_experts(dir / "v4");
  ConvertOptions o;
  o.format = WriteFormat::gpt_oss;
  const ConvertReport r = convert_checkpoint(dir / "v4", dir / "oss", recipe_named("mxfp4"), o);
  ASSERT_EQ(r.tensors.size(), 2u);
  for (const TensorReport& t : r.tensors) {
    EXPECT_EQ(t.target, "mxfp4 re-laid out") << t.name;
    EXPECT_EQ(t.max_abs, 0.0) << t.name;
  }
  {
    const SafetensorsFile f = read_safetensors(dir / "oss" / "model.safetensors");
    EXPECT_EQ(f.tensors().size(), 4u);
    const SafetensorsTensor* gu = f.find(kPrefix + "gate_up_proj_blocks");
    const SafetensorsTensor* gus = f.find(kPrefix + "gate_up_proj_scales");
    const SafetensorsTensor* d = f.find(kPrefix + "down_proj_blocks");
    const SafetensorsTensor* ds = f.find(kPrefix + "down_proj_scales");
    ASSERT_TRUE(gu && gus && d && ds);
    EXPECT_EQ(gu->shape, (Shape{kExperts, 2 * kRows, kCols / 32, 16}));
    EXPECT_EQ(gus->shape, (Shape{kExperts, 2 * kRows, kCols / 32}));
    EXPECT_EQ(d->shape, (Shape{kExperts, kRows, kCols / 32, 16}));
    const std::vector<int> codes = u8(f.bytes(*gu)), scales = u8(f.bytes(*gus)), down = u8(f.bytes(*d));
    for (std::uint64_t e = 0; e < kExperts; ++e) {
      for (std::uint64_t row = 0; row < 2 * kRows; ++row) {
        const int proj = static_cast<int>(row % 2);  // gate, up, gate, up, ...
        const std::size_t at = (e * 2 * kRows + row) * 16;
        EXPECT_EQ(codes[at], code_tag(e, proj, row / 2)) << "expert " << e << " row " << row;
        EXPECT_EQ(codes[at + 15], code_tag(e, proj, row / 2)) << "expert " << e << " row " << row;
        EXPECT_EQ(scales[e * 2 * kRows + row], scale_tag(e, proj)) << "expert " << e << " row " << row;
      }
      for (std::uint64_t row = 0; row < kRows; ++row) {
        EXPECT_EQ(down[(e * kRows + row) * 16], code_tag(e, 2, row)) << "expert " << e << " down row " << row;
      }
    }
  }
  // Split again into minifloat's own form: Hugging Face's names, each expert's own bytes (codes as F4 [R, C]).
  const ConvertReport back = convert_checkpoint(dir / "oss", dir / "own", recipe_named("mxfp4"));
  ASSERT_EQ(back.tensors.size(), 2u);
  const SafetensorsFile own = read_safetensors(dir / "own" / "model.safetensors");
  const SafetensorsFile v4 = read_safetensors(dir / "v4" / "model.safetensors");
  EXPECT_EQ(own.tensors().size(), v4.tensors().size());
  const char* const hf[3] = {"gate_proj", "up_proj", "down_proj"};
  for (std::uint64_t e = 0; e < kExperts; ++e) {
    for (int p = 0; p < 3; ++p) {
      const std::string from = kPrefix + std::to_string(e) + "." + kNames[p] + ".weight";
      const std::string to = kPrefix + std::to_string(e) + "." + hf[p] + ".weight";
      ASSERT_NE(own.find(to), nullptr) << to;
      EXPECT_EQ(own.find(to)->dtype, DType::F4) << to;
      EXPECT_EQ(own.find(to)->shape, (Shape{kRows, kCols})) << to;
      EXPECT_EQ(to_string(own.bytes(*own.find(to))), to_string(v4.bytes(*v4.find(from)))) << to;
      EXPECT_EQ(to_string(own.bytes(*own.find(to + "_scale_inv"))), to_string(v4.bytes(*v4.find(from + "_scale_inv"))))
          << to;
    }
  }
}

TEST(ExpertRelayout, AnIncompleteLayerIsNotGathered) {
  TempDir dir;
  write_v4_experts(dir / "v4", 1);
  ConvertOptions o;
  o.format = WriteFormat::gpt_oss;
  try {
    convert_checkpoint(dir / "v4", dir / "oss", recipe_named("mxfp4"), o);
    ADD_FAILURE() << "experts without expert 1's down projection gathered";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("the MXFP4 experts model.layers.0.ffn.experts.*: model.layers.0.ffn.experts.1."
                                         "down_proj.weight is missing or not MXFP4"),
              std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(std::filesystem::exists(dir / "oss"));
}

// An expert index far past the tensors there are (a corrupt or hand-made name) is named, not used to size a table.
TEST(ExpertRelayout, AnExpertIndexPastTheTensorsIsNamed) {
  TempDir dir;
  write_v4_experts(dir / "v4", kExperts, 4000000000);
  ConvertOptions o;
  o.format = WriteFormat::gpt_oss;
  try {
    convert_checkpoint(dir / "v4", dir / "oss", recipe_named("mxfp4"), o);
    ADD_FAILURE() << "experts 4000000000 and 4000000001 gathered";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("model.layers.0.ffn.experts.4000000000.w1.weight has expert index "
                                         "4000000000, but the checkpoint holds only 6 quantized tensors"),
              std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(std::filesystem::exists(dir / "oss"));
}

}  // namespace
}  // namespace mf::io
