// The block-scaling commands as a user runs them: quantize, dequantize, error, block, and their error paths.
// Expected values come from hand-worked arithmetic or from files the test writes itself.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "minifloat/npy.h"
#include "minifloat/safetensors.h"
#include "run_cli.h"

namespace mf::test {
namespace {

namespace fs = std::filesystem;

class BlockCli : public CliDirTest {
 protected:
  BlockCli() : CliDirTest("mf_block_cli_") {}

  // An f32 .npy of `shape` holding `values`.
  std::string npy(const std::string& name, std::vector<std::uint64_t> shape, const std::vector<float>& values) {
    io::write_npy(path(name), io::DType::F32, shape, std::as_bytes(std::span(values)));
    return path(name);
  }
};

// One line on stderr, starting as every error does, and exit code 2.
void expect_usage_error(const Result& r, const std::string& needle) {
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.err.rfind("minifloat: error: ", 0), 0u) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find(needle), std::string::npos) << "expected '" << needle << "' in: " << r.err;
}

TEST_F(BlockCli, QuantizeDequantizeRoundTripIsExactOnRepresentableValues) {
  // Each 32-value block holds 0.5 * {0, 0.5, 1, ..., 6} patterns: amax 3 gives floor scale 2^(1 - 2) = 0.5, and every
  // value is an E2M1 value times 0.5, so mxfp4 stores them exactly.
  const float grid[8] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6};
  std::vector<float> x(4 * 64);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = (i % 3 == 0 ? -0.5f : 0.5f) * grid[i % 8];
  const std::string in = npy("x.npy", {4, 64}, x), q = path("x.safetensors"), back = path("back.npy");
  const Result rq = run({"quantize", "--scheme", "mxfp4", in, q});
  ASSERT_EQ(rq.exit_code, 0) << rq.err;
  EXPECT_NE(rq.out.find("4.25 bits per value"), std::string::npos) << rq.out;
  const io::SafetensorsFile file = io::read_safetensors(q);
  ASSERT_NE(file.find("x"), nullptr);
  EXPECT_EQ(file.find("x")->dtype, io::DType::F4);
  ASSERT_NE(file.find("x_scale"), nullptr);
  EXPECT_EQ(file.find("x_scale")->dtype, io::DType::F8_E8M0);
  EXPECT_EQ(file.find("x_scale")->shape, (std::vector<std::uint64_t>{4, 2}));
  EXPECT_EQ(file.metadata().at("minifloat.scheme"), "mxfp4");
  // Every scale is 0.5 = ue8m0 0x7E.
  for (const std::byte b : file.bytes(*file.find("x_scale"))) EXPECT_EQ(static_cast<int>(b), 0x7E);
  const Result rd = run({"dequantize", q, back});
  ASSERT_EQ(rd.exit_code, 0) << rd.err;
  const io::NpyArray a = io::read_npy(back);
  ASSERT_EQ(a.shape, (std::vector<std::uint64_t>{4, 64}));
  const auto* v = reinterpret_cast<const float*>(a.data.data());
  for (std::size_t i = 0; i < x.size(); ++i) EXPECT_EQ(v[i], x[i]) << "index " << i;
}

TEST_F(BlockCli, GgmlLayoutIsSeventeenByteBlocksAndDequantizesAlike) {
  std::vector<float> x(2 * 32);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = 0.1f * static_cast<float>(i) - 3.0f;
  const std::string in = npy("x.npy", {2, 32}, x);
  ASSERT_EQ(run({"quantize", "--scheme", "mxfp4", "--layout", "ggml", in, path("g.safetensors")}).exit_code, 0);
  ASSERT_EQ(run({"quantize", "--scheme", "mxfp4", in, path("o.safetensors")}).exit_code, 0);
  const io::SafetensorsFile g = io::read_safetensors(path("g.safetensors"));
  ASSERT_NE(g.find("x"), nullptr);
  EXPECT_EQ(g.find("x")->dtype, io::DType::U8);
  EXPECT_EQ(g.bytes(*g.find("x")).size(), 2u * 17);
  EXPECT_EQ(g.find("x_scale"), nullptr);
  ASSERT_EQ(run({"dequantize", path("g.safetensors"), path("g.npy")}).exit_code, 0);
  ASSERT_EQ(run({"dequantize", path("o.safetensors"), path("o.npy")}).exit_code, 0);
  EXPECT_EQ(io::read_npy(path("g.npy")).data, io::read_npy(path("o.npy")).data);
}

TEST_F(BlockCli, ShapeThatDoesNotBlockNamesTheDimensionAndPad) {
  const std::string in = npy("x.npy", {3, 100}, std::vector<float>(300, 1.0f));
  const Result r = run({"quantize", "--scheme", "mxfp4", in, path("out.safetensors")});
  expect_usage_error(r, "last dimension (100)");
  EXPECT_NE(r.err.find("--pad"), std::string::npos);
  EXPECT_FALSE(fs::exists(path("out.safetensors")));
  EXPECT_EQ(run({"quantize", "--scheme", "mxfp4", "--pad", in, path("out.safetensors")}).exit_code, 0);
}

TEST_F(BlockCli, NanWithNonfiniteErrorNamesTensorAndIndex) {
  std::vector<float> x(64, 1.0f);
  x[37] = NAN;
  const std::string in = npy("x.npy", {2, 32}, x);
  const Result r = run({"quantize", "--scheme", "mxfp8", "--nonfinite", "error", in, path("out.safetensors")});
  expect_usage_error(r, "tensor 'x'");
  EXPECT_NE(r.err.find("index 37"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(path("out.safetensors")));
  // By default the block's scale becomes NaN (0xFF) and the file is written.
  ASSERT_EQ(run({"quantize", "--scheme", "mxfp8", in, path("ok.safetensors")}).exit_code, 0);
  const io::SafetensorsFile f = io::read_safetensors(path("ok.safetensors"));
  const auto scales = f.bytes(*f.find("x_scale"));
  EXPECT_EQ(static_cast<int>(scales[1]), 0xFF);
  EXPECT_EQ(static_cast<int>(scales[0]), 0x7F - 8);  // amax 1: 2^(0 - 8)
}

TEST_F(BlockCli, BadInputsGetOneLineAndExitTwo) {
  const std::string in = npy("x.npy", {1, 32}, std::vector<float>(32, 1.0f));
  expect_usage_error(run({"quantize", "--scheme", "mxfp9", in, path("o.safetensors")}), "unknown scheme 'mxfp9'");
  expect_usage_error(run({"quantize", "--scheme", "mxfp4", "--rule", "round", in, path("o.safetensors")}),
                     "unknown scale rule 'round'");
  expect_usage_error(run({"quantize", "--scheme", "mxfp4", "--profile", "cuda", in, path("o.safetensors")}),
                     "unknown profile 'cuda'");
  expect_usage_error(run({"quantize", "--scheme", "mxfp4", path("missing.npy"), path("o.safetensors")}), "missing.npy");
  {
    std::ifstream src(in, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(src)), {});
    std::ofstream(path("trunc.npy"), std::ios::binary) << bytes.substr(0, bytes.size() - 7);
  }
  expect_usage_error(run({"quantize", "--scheme", "mxfp4", path("trunc.npy"), path("o.safetensors")}), "trunc.npy");
  expect_usage_error(run({"dequantize", in, path("o.npy")}), "x.npy");  // not a quantized file
  EXPECT_FALSE(fs::exists(path("o.safetensors")));
  EXPECT_FALSE(fs::exists(path("o.npy")));
}

TEST_F(BlockCli, DequantizeRefusesCodesOrScalesOfTheWrongSize) {
  const std::string in = npy("x.npy", {2, 64}, std::vector<float>(128, 0.5f));
  ASSERT_EQ(run({"quantize", "--scheme", "mxfp4", in, path("q.safetensors")}).exit_code, 0);
  const io::SafetensorsFile f = io::read_safetensors(path("q.safetensors"));
  // The same file with 8 bytes of codes missing, and one with a rotation its columns cannot have.
  const auto codes = f.bytes(*f.find("x"));
  const std::vector<std::uint64_t> short_shape{codes.size() - 8};
  std::vector<io::TensorView> views{{"x", io::DType::U8, short_shape, codes.first(codes.size() - 8)},
                                    f.view(*f.find("x_scale"))};
  io::write_safetensors(path("short.safetensors"), views, f.metadata());
  auto meta = f.metadata();
  meta["minifloat.rotate"] = "48";
  io::write_safetensors(path("rot.safetensors"), f.views(), meta);
  expect_usage_error(run({"dequantize", path("short.safetensors"), path("a.npy")}), "tensor 'x'");
  expect_usage_error(run({"dequantize", path("rot.safetensors"), path("b.npy")}), "rotate");
  EXPECT_FALSE(fs::exists(path("a.npy")));
  EXPECT_FALSE(fs::exists(path("b.npy")));
}

TEST_F(BlockCli, BlockShowsTheOutlierZeroingSmallValues) {
  // 0.5 and 1: amax 1, floor scale 2^(0 - 2) = 0.25: 0.5 -> 2 (0x4), 1 -> 4 (0x6). No zeros.
  // With the outlier 40: scale 2^(5 - 2) = 8: 0.5 / 8 = 0.0625 and 1 / 8 = 0.125 both round to 0 (below 0.25).
  const Result r = run({"block", "0.5,1", "--scheme", "mxfp4", "--outlier", "40"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("scale ue8m0 0x82"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("without the outlier: 0 of 2 nonzero values became 0"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("with the outlier 40:  2 of 3 nonzero values became 0"), std::string::npos) << r.out;
  expect_usage_error(run({"block", "0.5,abc"}), "value 2");
  std::string many = "1";
  for (int i = 0; i < 32; ++i) many += ",1";
  expect_usage_error(run({"block", many}), "1 to 32 values");
}

TEST_F(BlockCli, ErrorCommandComparesSchemes) {
  const Result r = run({"error", "--scheme", "mxfp4", "--compare", "mxfp8,nvfp4", "--dist", "normal", "--shape",
                        "64x128", "--seed", "3"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* s : {"mxfp4", "mxfp8", "nvfp4", "SQNR dB", "4.25", "8.25", "4.5"}) {
    EXPECT_NE(r.out.find(s), std::string::npos) << s << " in " << r.out;
  }
  expect_usage_error(run({"error", "--scheme", "mxfp4"}), "either IN or --dist");
  expect_usage_error(run({"error", "--scheme", "mxfp4", "--dist", "normal", "--shape", "12xq"}), "--shape");
  expect_usage_error(run({"error", "--scheme", "mxfp4", "--dist", "normal", "--sigma", "-1"}), "--sigma");
  expect_usage_error(run({"error", "--scheme", "mxfp4", "--dist", "student-t", "--dof", "0"}), "--dof");
}

}  // namespace
}  // namespace mf::test
