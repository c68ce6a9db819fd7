// The ops commands as a user runs them: kv, pack-scales and unpack-scales, and their error paths. Expected bytes
// come from the layouts' formulas worked here, on files the test writes itself.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "minifloat/safetensors.h"
#include "run_cli.h"

namespace mf::test {
namespace {

namespace fs = std::filesystem;

class OpsCli : public CliDirTest {
 protected:
  OpsCli() : CliDirTest("mf_ops_cli_") {}

  // A .safetensors file with one tensor `name` of `dtype` and `shape` holding `bytes`, plus a bf16 weight to copy.
  std::string file(const std::string& name, io::DType dtype, std::vector<std::uint64_t> shape,
                   const std::vector<std::uint8_t>& bytes) {
    const std::vector<std::uint8_t> w(8, 0x3F);
    const std::vector<std::uint64_t> wshape{2, 2};
    const std::vector<io::TensorView> views{{"w", io::DType::BF16, wshape, std::as_bytes(std::span(w))},
                                            {name, dtype, shape, std::as_bytes(std::span(bytes))}};
    const std::string p = path(name + ".safetensors");
    io::write_safetensors(p, views);
    return p;
  }
};

void expect_usage_error(const Result& r, const std::string& needle) {
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.err.rfind("minifloat: error: ", 0), 0u) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find(needle), std::string::npos) << "expected '" << needle << "' in: " << r.err;
}

std::vector<std::uint8_t> bytes_of(const io::SafetensorsFile& f, const io::SafetensorsTensor& t) {
  const auto b = f.bytes(t);
  std::vector<std::uint8_t> v(b.size());
  std::memcpy(v.data(), b.data(), b.size());
  return v;
}

std::vector<std::uint8_t> seed000_codes() {
  std::mt19937 rng(1);
  std::vector<std::uint8_t> codes(1536 * 128);
  for (auto& c : codes) c = static_cast<std::uint8_t>(100 + rng() % 40);
  return codes;
}

TEST_F(OpsCli, KvTableAndJson) {
  const Result r = run({"kv", "--tokens", "8", "--seed", "3"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("fp4-e4m3-16           288"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("mxfp8                 528"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("v4-mixed              584"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("v4-nvfp4              384"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("mxfp6-e3m2            400"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("mxfp6-e2m3            400"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("8 tokens of normal(0, 1), seed 3"), std::string::npos) << r.out;
  const Result j = run({"kv", "--format", "v4-mixed,mxfp8", "--tokens", "2", "--json"});
  ASSERT_EQ(j.exit_code, 0) << j.err;
  EXPECT_NE(j.out.find("\"bytes_per_token\": 584"), std::string::npos) << j.out;
  EXPECT_NE(j.out.find("\"bytes_per_token\": 528"), std::string::npos) << j.out;
  EXPECT_EQ(j.out.find("288"), std::string::npos) << j.out;
  EXPECT_NE(j.out.find("\"count\": 1024"), std::string::npos) << j.out;
}

TEST_F(OpsCli, KvErrors) {
  expect_usage_error(run({"kv", "--format", "nvfp4"}), "unknown KV format 'nvfp4'");
  expect_usage_error(run({"kv", "--tokens", "0"}), "--tokens must be 1 to");
  expect_usage_error(run({"kv", "--sigma", "-1"}), "--sigma must be a positive");
  const std::vector<float> x(3 * 100, 1.0f);
  const std::vector<std::uint64_t> shape{3, 100};
  const std::vector<io::TensorView> v{{"kv", io::DType::F32, shape, std::as_bytes(std::span(x))}};
  io::write_safetensors(path("kv.safetensors"), v);
  expect_usage_error(run({"kv", path("kv.safetensors")}), "[3, 100] does not fit KV entries of [tokens, 512]");
}

// docs/kv.md#vllm-nvfp4's example vector (head_dim 64, scale 0.5): vllm-nvfp4 stores the eight 1s as 1.03125 and
// 2688 as 1344 (saturated), the rest exactly: MSE = (8 * 0.03125^2 + 1344^2) / 64 = 28224.0001220703125; 4/6 holds
// the 1s exactly: 1344^2 / 64 = 28224.
TEST_F(OpsCli, KvVllmExampleAndErrors) {
  std::vector<float> x(64, 0.0f);
  for (int i = 0; i < 16; i += 2) x[i] = 1.0f;
  for (int i = 16; i < 32; ++i) x[i] = -3.0f;
  x[48] = 2688.0f;
  const std::vector<std::uint64_t> shape{1, 64};
  const std::vector<io::TensorView> v{{"k", io::DType::F32, shape, std::as_bytes(std::span(x))}};
  io::write_safetensors(path("k.safetensors"), v);
  const Result j = run({"kv", path("k.safetensors"), "--format", "vllm-nvfp4,vllm-nvfp4-4over6", "--head-dim", "64",
                        "--scale", "0.5", "--json"});
  ASSERT_EQ(j.exit_code, 0) << j.err;
  EXPECT_NE(j.out.find("\"bytes_per_vector\": 36"), std::string::npos) << j.out;
  EXPECT_NE(j.out.find("\"mse\": 28224.00012207031"), std::string::npos) << j.out;
  EXPECT_NE(j.out.find("\"mse\": 28224.0,"), std::string::npos) << j.out;
  EXPECT_NE(j.out.find("\"source\": \"1 vectors of "), std::string::npos) << j.out;
  const Result t = run({"kv", "--format", "vllm-nvfp4", "--tokens", "4"});
  ASSERT_EQ(t.exit_code, 0) << t.err;
  EXPECT_NE(t.out.find("head_dim 128, per-tensor scale 1: 4 vectors of normal(0, 1), seed 0"), std::string::npos)
      << t.out;
  EXPECT_NE(t.out.find("vllm-nvfp4                   72   3.556x"), std::string::npos) << t.out;
  for (const std::string bad : {"0", "-1", "nan", "inf"}) {
    expect_usage_error(run({"kv", "--format", "vllm-nvfp4", "--scale", bad}), "--scale must be a finite per-tensor");
  }
  expect_usage_error(run({"kv", "--format", "vllm-nvfp4", "--head-dim", "72"}), "--head-dim must be a multiple of 16");
  expect_usage_error(run({"kv", "--format", "mxfp8,vllm-nvfp4"}), "measured in separate runs");
  expect_usage_error(run({"kv", "--head-dim", "64"}), "--head-dim and --scale apply to the vllm-* formats only");
  expect_usage_error(run({"kv", "--format", "vllm-nvfp5"}), "unknown vLLM KV format 'vllm-nvfp5'");
  expect_usage_error(run({"kv", path("k.safetensors"), "--format", "vllm-nvfp4"}),
                     "[1, 64] does not fit KV entries of [tokens, 128]");
}

// docs/spec.md#scale-packing: [1536, 128] ue8m0 codes -> [1536, 32] int32 on NVIDIA, [1536, 64] int16 on Ascend; other
// tensors copied.
TEST_F(OpsCli, PackScalesSeed000) {
  const std::vector<std::uint8_t> codes = seed000_codes();
  const std::string in = file("x_scale", io::DType::F8_E8M0, {1536, 128}, codes);
  for (const std::string platform : {"nvidia", "ascend"}) {
    const std::string out = path("packed_" + platform + ".safetensors");
    const Result r = run({"pack-scales", "--platform", platform, in, out});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const io::SafetensorsFile f = io::read_safetensors(out);
    const io::SafetensorsTensor* t = f.find("x_scale");
    ASSERT_NE(t, nullptr);
    const bool nv = platform == "nvidia";
    EXPECT_EQ(t->dtype, nv ? io::DType::I32 : io::DType::I16);
    EXPECT_EQ(t->shape, (std::vector<std::uint64_t>{1536, nv ? 32u : 64u}));
    EXPECT_NE(r.out.find(nv ? "[1536, 32]" : "[1536, 64]"), std::string::npos) << r.out;
    // Little-endian words of 4 (2) consecutive codes of a row: the same bytes as the codes, as no padding is needed.
    EXPECT_EQ(bytes_of(f, *t), codes);
    ASSERT_NE(f.find("w"), nullptr);
    EXPECT_EQ(f.find("w")->dtype, io::DType::BF16);
    // unpack-scales reads the layout and code shape from the metadata.
    const std::string back = path("back_" + platform + ".safetensors");
    const Result u = run({"unpack-scales", out, back});
    ASSERT_EQ(u.exit_code, 0) << u.err;
    const io::SafetensorsFile g = io::read_safetensors(back);
    ASSERT_NE(g.find("x_scale"), nullptr);
    EXPECT_EQ(g.find("x_scale")->dtype, io::DType::F8_E8M0);
    EXPECT_EQ(g.find("x_scale")->shape, (std::vector<std::uint64_t>{1536, 128}));
    EXPECT_EQ(bytes_of(g, *g.find("x_scale")), codes);
    EXPECT_TRUE(g.metadata().empty());
  }
}

TEST_F(OpsCli, PackScalesPadsToWholeWords) {
  // 2 rows of 5 codes -> [2, 2] int32: the fifth code, then three zero bytes.
  const std::string in = file("s", io::DType::F8_E8M0, {2, 5}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10});
  const Result r = run({"pack-scales", "--platform", "nvidia", in, path("o.safetensors")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const io::SafetensorsFile f = io::read_safetensors(path("o.safetensors"));
  EXPECT_EQ(bytes_of(f, *f.find("s")), (std::vector<std::uint8_t>{1, 2, 3, 4, 5, 0, 0, 0, 6, 7, 8, 9, 10, 0, 0, 0}));
}

TEST_F(OpsCli, PackScalesDeepGemmAndCublas) {
  // DeepGEMM: 5 rows x 6 codes -> [2, 8] int32 MN-major (word (j, r) at j * 8 + r).
  std::vector<std::uint8_t> codes;
  for (int r = 0; r < 5; ++r)
    for (int c = 0; c < 6; ++c) codes.push_back(static_cast<std::uint8_t>(0x10 * (r + 1) + c));
  const std::string in = file("s", io::DType::F8_E8M0, {5, 6}, codes);
  ASSERT_EQ(run({"pack-scales", "--platform", "deepgemm", in, path("d.safetensors")}).exit_code, 0);
  const io::SafetensorsFile d = io::read_safetensors(path("d.safetensors"));
  EXPECT_EQ(d.find("s")->dtype, io::DType::I32);
  EXPECT_EQ(d.find("s")->shape, (std::vector<std::uint64_t>{2, 8}));
  const std::vector<std::uint8_t> db = bytes_of(d, *d.find("s"));
  EXPECT_EQ(std::vector<std::uint8_t>(db.begin(), db.begin() + 8),
            (std::vector<std::uint8_t>{0x10, 0x11, 0x12, 0x13, 0x20, 0x21, 0x22, 0x23}));
  EXPECT_EQ(std::vector<std::uint8_t>(db.begin() + 32, db.begin() + 36), (std::vector<std::uint8_t>{0x14, 0x15, 0, 0}));
  // cuBLAS: [128, 8] bytes; row 1's codes at byte 16, row 0's fifth code in the second tile (byte 512).
  ASSERT_EQ(run({"pack-scales", "--platform", "cublas-128x4", in, path("c.safetensors")}).exit_code, 0);
  const io::SafetensorsFile c = io::read_safetensors(path("c.safetensors"));
  EXPECT_EQ(c.find("s")->dtype, io::DType::F8_E8M0);
  EXPECT_EQ(c.find("s")->shape, (std::vector<std::uint64_t>{128, 8}));
  const std::vector<std::uint8_t> cb = bytes_of(c, *c.find("s"));
  EXPECT_EQ(cb[16], 0x20);
  EXPECT_EQ(cb[512], 0x14);
  EXPECT_EQ(cb[512 + 16], 0x24);
}

// docs/spec.md#wrong-scale-dtype: Ascend's int16 scales checked as NVIDIA's; both shapes in one line.
TEST_F(OpsCli, UnpackScalesPackedForAnotherPlatform) {
  const std::vector<std::uint8_t> codes = seed000_codes();
  const std::string in = file("x_scale", io::DType::I16, {1536, 64}, codes);
  const Result r = run({"unpack-scales", "--platform", "nvidia", "--codes", "1536,128", "--tensor", "x_scale", in,
                        path("o.safetensors")});
  expect_usage_error(r,
                     "scales [1536, 64] int16 do not fit nvidia-int32 scales for codes [1536, 128]: expected "
                     "[1536, 32] int32 (they are ascend-int16 scales: packed for another platform?)");
  EXPECT_FALSE(fs::exists(path("o.safetensors")));
  // As Ascend's, they unpack.
  ASSERT_EQ(run({"unpack-scales", "--platform", "ascend", "--codes", "1536,128", "--tensor", "x_scale", in,
                 path("o.safetensors")})
                .exit_code,
            0);
}

TEST_F(OpsCli, PackScalesErrors) {
  const std::string packed = file("x_scale", io::DType::I16, {1536, 64}, seed000_codes());
  expect_usage_error(run({"pack-scales", "--platform", "nvidia", "--tensor", "x_scale", packed, path("o.safetensors")}),
                     "tensor 'x_scale' is I16 [1536, 64], not one-byte scale codes");
  expect_usage_error(run({"pack-scales", "--platform", "nvidia", packed, path("o.safetensors")}),
                     "no F8_E8M0 scale tensor to pack (tensors: w BF16 [2, 2], x_scale I16 [1536, 64])");
  expect_usage_error(run({"pack-scales", "--platform", "nvidia", "--tensor", "nope", packed, path("o.safetensors")}),
                     "no tensor 'nope'");
  expect_usage_error(run({"pack-scales", "--platform", "tpu", packed, path("o.safetensors")}),
                     "unknown scale layout 'tpu'");
  expect_usage_error(run({"pack-scales", "--platform", "nvidia", packed, path("o.npy")}), "o.npy: pack-scales");
  EXPECT_FALSE(fs::exists(path("o.safetensors")));
  EXPECT_EQ(run({"pack-scales", packed, path("o.safetensors")}).exit_code, 2);  // --platform is required
}

TEST_F(OpsCli, UnpackScalesErrors) {
  const std::string packed = file("x_scale", io::DType::I32, {4, 2}, std::vector<std::uint8_t>(32, 1));
  expect_usage_error(run({"unpack-scales", packed, path("o.safetensors")}), "no tensor packed by pack-scales");
  expect_usage_error(run({"unpack-scales", "--tensor", "x_scale", packed, path("o.safetensors")}), "give --platform");
  expect_usage_error(
      run({"unpack-scales", "--platform", "nvidia", "--tensor", "x_scale", packed, path("o.safetensors")}),
      "give the code shape with --codes");
  expect_usage_error(run({"unpack-scales", "--platform", "nvidia", "--codes", "4,x", "--tensor", "x_scale", packed,
                          path("o.safetensors")}),
                     "--codes '4,x' is not a shape");
  expect_usage_error(run({"unpack-scales", "--platform", "nvidia", "--codes", "4,9", "--tensor", "x_scale", packed,
                          path("o.safetensors")}),
                     "scales [4, 2] int32 do not fit nvidia-int32 scales for codes [4, 9]: expected [4, 3] int32");
  EXPECT_FALSE(fs::exists(path("o.safetensors")));
}

}  // namespace
}  // namespace mf::test
