// `minifloat dequantize` on checkpoints is never silent: a tensor that looks quantized (a quantized dtype, or a name
// like a scale's) that no pair explains is an error naming the file and tensor, raised before anything is written;
// `--passthrough` keeps named tensors on purpose; the output holds every float tensor in the dtype asked for and no
// hf_quant_config.json.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "../unit/io_test_util.h"
#include "minifloat/checkpoint.h"
#include "minifloat/safetensors.h"
#include "run_cli.h"

namespace {

namespace fs = std::filesystem;
using mf::io::DType;
using mf::io::TensorView;
using mf::io::testing::str;
using mf::io::testing::TempDir;
using mf::io::testing::write_file;
using mf::test::run;

const std::vector<std::uint64_t> kShape{4, 32}, kOne{1};
const std::vector<std::byte> kCodes(128, std::byte{0x38}), kBf16(256, std::byte{0x3f}), kF32(4, std::byte{0});

// A one-file checkpoint: an F8 weight with no scale, a bf16 weight and an orphan scale.
fs::path orphan_checkpoint(const TempDir& dir) {
  fs::create_directories(dir / "in");
  const std::vector<TensorView> views{{"a.weight", DType::F8_E4M3, kShape, kCodes},
                                      {"b.weight", DType::BF16, kShape, kBf16},
                                      {"c.weight_scale", DType::F32, kOne, kF32}};
  mf::io::write_safetensors(dir / "in" / "model.safetensors", views);
  write_file(dir / "in" / "config.json", R"({"model_type": "llama"})");
  write_file(dir / "in" / "hf_quant_config.json", R"({"quantization": {"quant_algo": "FP8"}})");
  return dir / "in";
}

TEST(DequantizeNeverSilent, AnFp8WeightWithoutAScaleIsAnErrorAndNothingIsWritten) {
  TempDir dir;
  const fs::path in = orphan_checkpoint(dir);
  const auto r = run({"dequantize", in.string(), (dir / "out").string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find(str((in / "model.safetensors").string(),
                           ": tensor 'a.weight': F8_E4M3 [4, 32] looks quantized "
                           "(by its dtype) but is part of no pair")),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("--passthrough 'a.weight'"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "out"));
}

TEST(DequantizeNeverSilent, AnOrphanScaleIsAnErrorByItsName) {
  TempDir dir;
  const fs::path in = orphan_checkpoint(dir);
  const auto r = run({"dequantize", in.string(), (dir / "out").string(), "--passthrough", "a.*"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("tensor 'c.weight_scale': F32 [1] looks quantized (by its name)"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "out"));
}

TEST(DequantizeNeverSilent, PassthroughKeepsNamedTensorsAndTheRestIsF32) {
  TempDir dir;
  const fs::path in = orphan_checkpoint(dir);
  const auto r =
      run({"dequantize", in.string(), (dir / "out").string(), "--passthrough", "a.weight", "--passthrough", "*_scale"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const mf::io::SafetensorsFile f = mf::io::read_safetensors(dir / "out" / "model.safetensors");
  ASSERT_EQ(f.tensors().size(), 3u);
  EXPECT_EQ(f.find("a.weight")->dtype, DType::F8_E4M3);
  EXPECT_EQ(f.find("c.weight_scale")->dtype, DType::F32);
  // --dtype f32 (the default) leaves no bf16 behind: 0x3f3f as bf16 is 0.74609375.
  ASSERT_EQ(f.find("b.weight")->dtype, DType::F32);
  float v = 0;
  std::memcpy(&v, f.bytes(*f.find("b.weight")).data(), 4);
  EXPECT_EQ(v, 0.74609375f);
  EXPECT_TRUE(fs::exists(dir / "out" / "config.json"));
  EXPECT_FALSE(fs::exists(dir / "out" / "hf_quant_config.json"));
}

TEST(DequantizeNeverSilent, APassthroughPatternThatMatchesNothingIsAnError) {
  TempDir dir;
  const fs::path in = orphan_checkpoint(dir);
  const auto r = run({"dequantize", in.string(), (dir / "out").string(), "--passthrough", "a.weight", "--passthrough",
                      "*_scale", "--passthrough", "nothing.*"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--passthrough 'nothing.*' matches no tensor"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "out"));
}

// The bad tensor in the last shard: the first shard is not written either.
TEST(DequantizeNeverSilent, ABadTensorInALaterShardStopsTheWholeRun) {
  TempDir dir;
  ASSERT_EQ(run({"make-example-checkpoint", (dir / "src").string()}).exit_code, 0);
  ASSERT_EQ(run({"convert", (dir / "src").string(), (dir / "q").string(), "--recipe", "deepseek-v4"}).exit_code, 0);
  const fs::path index_path = dir / "q" / "model.safetensors.index.json";
  mf::io::CheckpointIndex index = mf::io::read_index(index_path);
  const std::string last = index.weight_map.rbegin()->second;
  const mf::io::SafetensorsFile shard = mf::io::read_safetensors(dir / "q" / last);
  std::vector<TensorView> views = shard.views();
  views.push_back({"extra.weight", DType::F8_E5M2, kShape, kCodes});
  const fs::path rewritten = dir / "rewritten.safetensors";
  mf::io::write_safetensors(rewritten, views, shard.metadata());
  fs::rename(rewritten, dir / "q" / last);
  index.weight_map["extra.weight"] = last;
  index.total_size = *index.total_size + kCodes.size();
  mf::io::write_index(index_path, index);

  const auto r = run({"dequantize", (dir / "q").string(), (dir / "out").string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("tensor 'extra.weight': F8_E5M2 [4, 32] looks quantized"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "out"));
}

}  // namespace

namespace {

// A quant_method minifloat does not know: inspect still lists every tensor and says so plainly, then exits 2 with
// the refusal the other commands give (the quantization rule); dequantize refuses instead of copying.
TEST(InspectUnknownDialect, ListsTheTensorsAndSaysItDoesNotKnowTheScheme) {
  TempDir dir;
  const fs::path in = orphan_checkpoint(dir);
  write_file(in / "config.json", R"({"quantization_config": {"quant_method": "bitsandbytes", "bits": 4}})");
  const auto r = run({"inspect", in.string()});
  ASSERT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("config.json declares quantization 'bitsandbytes'"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("a.weight"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("config.json: quant_method 'bitsandbytes' is a dialect minifloat does not know"),
            std::string::npos)
      << r.out;
  const auto d = run({"dequantize", in.string(), (dir / "out").string()});
  EXPECT_EQ(d.exit_code, 2);
  EXPECT_FALSE(fs::exists(dir / "out"));
}

}  // namespace
