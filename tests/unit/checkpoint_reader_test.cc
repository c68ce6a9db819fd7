// CheckpointReader (checkpoint_reader.h) against dequantize_checkpoint's files: the same tensor names in the same
// order, every value bit for bit in f32 and bf16, for every published release in miniature (and the one minifloat
// refuses refused with dequantize's message); the errors a caller can make.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "io_test_util.h"
#include "minifloat/checkpoint.h"
#include "minifloat/checkpoint_commands.h"
#include "minifloat/checkpoint_reader.h"
#include "minifloat/codec.h"

namespace mf::io {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

// Every tensor of the files dequantize wrote in `dir`, in shard order then data order.
std::vector<std::pair<std::string, std::vector<std::byte>>> written(const fs::path& dir) {
  const Checkpoint c = open_checkpoint(dir);
  std::vector<std::pair<std::string, std::vector<std::byte>>> out;
  for (std::size_t i = 0; i < c.shards.size(); ++i) {
    const SafetensorsFile f = read_safetensors(c.shard_path(i));
    for (const SafetensorsTensor& t : f.tensors()) {
      const std::span<const std::byte> b = f.bytes(t);
      out.emplace_back(t.name, std::vector<std::byte>(b.begin(), b.end()));
    }
  }
  return out;
}

std::vector<std::byte> bytes_of(const auto& v) {
  const auto b = std::as_bytes(std::span(v));
  return {b.begin(), b.end()};
}

class ReaderLike : public ::testing::TestWithParam<ReleaseLike> {};

TEST_P(ReaderLike, ReadsWhatDequantizeWrites) {
  TempDir dir;
  write_release_example(dir / "src", GetParam());
  ConvertOptions o;
  o.threads = 1;
  if (GetParam() == ReleaseLike::modelopt_w4a8_awq) {  // the one form minifloat refuses, by name
    std::string refused;
    try {
      (void)dequantize_checkpoint(dir / "src", dir / "f32", false, o);
    } catch (const IoError& e) {
      refused = e.what();
    }
    ASSERT_FALSE(refused.empty());
    try {
      CheckpointReader r(dir / "src");
      FAIL() << "opened";
    } catch (const IoError& e) {
      EXPECT_EQ(std::string(e.what()), refused);
    }
    return;
  }
  (void)dequantize_checkpoint(dir / "src", dir / "f32", false, o);
  (void)dequantize_checkpoint(dir / "src", dir / "bf16", true, o);
  const auto f32 = written(dir / "f32"), as_bf16 = written(dir / "bf16");
  const CheckpointReader r(dir / "src");
  ASSERT_EQ(r.tensors().size(), f32.size());
  for (std::size_t k = 0; k < f32.size(); ++k) {
    const LogicalTensor& t = r.tensors()[k];
    ASSERT_EQ(t.name, f32[k].first);
    if (t.kept) {
      EXPECT_EQ(r.stored(t.name), f32[k].second) << t.name;
      EXPECT_THROW((void)r.values(t.name), IoError);
      continue;
    }
    EXPECT_EQ(bytes_of(r.values(t.name)), f32[k].second) << t.name;
    EXPECT_EQ(bytes_of(r.values16(t.name, mf::bf16, 2)), as_bf16[k].second) << t.name;
  }
}

INSTANTIATE_TEST_SUITE_P(Releases, ReaderLike,
                         ::testing::Values(ReleaseLike::deepseek_v4_release, ReleaseLike::deepseek_v4_1,
                                           ReleaseLike::deepseek_v3, ReleaseLike::qwen_fp8, ReleaseLike::fp8_per_tensor,
                                           ReleaseLike::modelopt_fp8_pc_pt, ReleaseLike::modelopt_w4a16_awq,
                                           ReleaseLike::modelopt_w8a16, ReleaseLike::modelopt_w8a8_sq,
                                           ReleaseLike::modelopt_w4a8_awq, ReleaseLike::autoawq, ReleaseLike::gptq,
                                           ReleaseLike::gptq_v2, ReleaseLike::compressed_tensors_w4a16,
                                           ReleaseLike::compressed_tensors_w4a16_asym, ReleaseLike::kimi_k2_thinking,
                                           ReleaseLike::compressed_tensors_mixed_nvfp4),
                         [](const auto& info) {
                           std::string name(to_string(info.param));
                           for (char& ch : name) {
                             if (ch == '-' || ch == '.') ch = '_';
                           }
                           return name;
                         });

TEST(CheckpointReader, NamesWhatCannotBeRead) {
  TempDir dir;
  write_release_example(dir / "src", ReleaseLike::gptq);
  const CheckpointReader r(dir / "src");
  EXPECT_EQ(r.find("no.such.tensor"), nullptr);
  EXPECT_THROW((void)r.values("no.such.tensor"), std::out_of_range);
  const LogicalTensor* integer = nullptr;
  const LogicalTensor* plain = nullptr;
  for (const LogicalTensor& t : r.tensors()) {
    if (t.dialect == "integer" && !integer) integer = &t;
    if (t.dialect == "plain" && !t.kept && !plain) plain = &t;
  }
  ASSERT_TRUE(integer && plain);
  try {
    (void)r.quantized(integer->name);
    FAIL() << "read";
  } catch (const IoError& e) {
    EXPECT_EQ(e.tensor, integer->name);
    EXPECT_NE(std::string(e.what()).find("no QuantizedTensor form"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)r.stored(plain->name), IoError);
}

}  // namespace
}  // namespace mf::io
