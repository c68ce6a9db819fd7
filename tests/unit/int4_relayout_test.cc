// Integer pairs re-laid out by convert (src/checkpoint/int4_relayout.cc) on words worked out by hand from the three
// layouts (docs/checkpoints.md "Dialects"; /work/shared/checkpoints-in-the-wild.md sections 5.3 and 7):
//   AutoAWQ GEMM: qweight [C, R/8], output order_map[i] = [0, 2, 4, 6, 1, 3, 5, 7][i] at nibble i of word [k][0];
//                 qzeros likewise, no offset;
//   AutoGPTQ:     qweight [C x 4 / 32, R], input k of output n at bit 4 (k % 8) of word [k / 8][n]; qzeros [G, R/8]
//                 along the outputs, stored as zero - 1;
//   compressed-tensors pack-quantized: weight_packed [R, C/8], column c of row n at bit 4 c of word [n][c / 8], the
//                 code stored as q (= signed q - 8, plus 8); weight_zero_point [R/8, G] down the rows, likewise.
// Here R = 8 outputs, C = 8 inputs, one group: code q[n][k] = (n + k) % 16, zero z[n] = n + 1, scales f16 0.5.
#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <fstream>
#include <vector>

#include "io_test_util.h"
#include "minifloat/checkpoint_commands.h"
#include "minifloat/checkpoint_tensors.h"
#include "minifloat/safetensors.h"

namespace mf::io {
namespace {

namespace fs = std::filesystem;
using namespace mf::io::testing;
using Shape = std::vector<std::uint64_t>;

constexpr std::array<std::uint32_t, 8> kOrderMap{0, 2, 4, 6, 1, 3, 5, 7};  // AutoAWQ's pack order

std::uint32_t q(std::uint32_t n, std::uint32_t k) { return (n + k) % 16; }

Bytes words(const std::vector<std::uint32_t>& v) {
  Bytes out(v.size() * 4);
  std::memcpy(out.data(), v.data(), out.size());
  return out;
}

Bytes f16_halves(std::size_t n) {  // f16 0.5 = 0x3800
  Bytes out;
  for (std::size_t i = 0; i < n; ++i) {
    out.push_back(std::byte{0x00});
    out.push_back(std::byte{0x38});
  }
  return out;
}

std::vector<std::uint32_t> awq_qweight() {
  std::vector<std::uint32_t> w(8, 0);
  for (std::uint32_t k = 0; k < 8; ++k) {
    for (std::uint32_t i = 0; i < 8; ++i) w[k] |= q(kOrderMap[i], k) << (4 * i);
  }
  return w;
}

std::uint32_t awq_qzeros() {
  std::uint32_t w = 0;
  for (std::uint32_t i = 0; i < 8; ++i) w |= (kOrderMap[i] + 1) << (4 * i);
  return w;
}

// Each output's inputs, 4 bits each, input k at bit 4 k: GPTQ's column n and compressed-tensors' row n alike.
std::uint32_t row_word(std::uint32_t n) {
  std::uint32_t w = 0;
  for (std::uint32_t k = 0; k < 8; ++k) w |= q(n, k) << (4 * k);
  return w;
}

void write_awq(const fs::path& dir, std::uint32_t zeros = awq_qzeros()) {
  fs::create_directories(dir);
  write_safetensors(dir / "model.safetensors",
                    std::vector<TensorView>{{"m.qweight", DType::I32, Shape{8, 1}, words(awq_qweight())},
                                            {"m.qzeros", DType::I32, Shape{1, 1}, words({zeros})},
                                            {"m.scales", DType::F16, Shape{1, 8}, f16_halves(8)}});
  std::ofstream(dir / "config.json") << R"({"model_type": "llama", "quantization_config": {"quant_method": "awq", )"
                                        R"("bits": 4, "group_size": 8, "zero_point": true, "version": "gemm"}})";
}

std::string bytes_of(const SafetensorsFile& f, const std::string& name) {
  const SafetensorsTensor* t = f.find(name);
  return t == nullptr ? "(missing " + name + ")" : to_string(f.bytes(*t));
}

ConvertOptions format(WriteFormat w) {
  ConvertOptions o;
  o.format = w;
  return o;
}

TEST(Int4Relayout, AwqIntoGptqAndCompressedTensorsByHand) {
  TempDir dir;
  write_awq(dir / "awq");
  const Recipe keep = parse_recipe(R"({"*": "keep"})", "keep");
  const ConvertReport r = convert_checkpoint(dir / "awq", dir / "gptq", keep, format(WriteFormat::gptq));
  ASSERT_EQ(r.tensors.size(), 1u);
  EXPECT_EQ(r.tensors[0].name, "m.weight");
  EXPECT_EQ(r.tensors[0].target, "awq-int4-channel-f16 re-laid out");
  const SafetensorsFile g = read_safetensors(dir / "gptq" / "model.safetensors");
  std::vector<std::uint32_t> gptq_q(8);
  for (std::uint32_t n = 0; n < 8; ++n) gptq_q[n] = row_word(n);
  EXPECT_EQ(bytes_of(g, "m.qweight"), to_string(words(gptq_q)));
  EXPECT_EQ(g.find("m.qweight")->shape, (Shape{1, 8}));
  EXPECT_EQ(bytes_of(g, "m.qzeros"), to_string(words({0x76543210u})));  // zero n + 1 stored as n
  EXPECT_EQ(bytes_of(g, "m.scales"), to_string(f16_halves(8)));
  EXPECT_EQ(bytes_of(g, "m.g_idx"), to_string(words(std::vector<std::uint32_t>(8, 0))));

  convert_checkpoint(dir / "awq", dir / "ct", keep, format(WriteFormat::compressed_tensors));
  const SafetensorsFile c = read_safetensors(dir / "ct" / "model.safetensors");
  EXPECT_EQ(bytes_of(c, "m.weight_packed"), to_string(words(gptq_q)));
  EXPECT_EQ(bytes_of(c, "m.weight_zero_point"), to_string(words({0x87654321u})));  // zero n + 1 at bit 4 n
  EXPECT_EQ(c.find("m.weight_scale")->shape, (Shape{8, 1}));
  EXPECT_EQ(bytes_of(c, "m.weight_scale"), to_string(f16_halves(8)));
  const std::int64_t shape[2] = {8, 8};
  Bytes shape_bytes(16);
  std::memcpy(shape_bytes.data(), shape, 16);
  EXPECT_EQ(bytes_of(c, "m.weight_shape"), to_string(shape_bytes));
  EXPECT_EQ(c.find("m.weight_g_idx"), nullptr);  // groups in order: none written, as compressed-tensors 0.20

  // and back: AWQ's very words
  convert_checkpoint(dir / "ct", dir / "awq2", keep, format(WriteFormat::awq));
  const SafetensorsFile a = read_safetensors(dir / "awq2" / "model.safetensors");
  EXPECT_EQ(bytes_of(a, "m.qweight"), to_string(words(awq_qweight())));
  EXPECT_EQ(bytes_of(a, "m.qzeros"), to_string(words({awq_qzeros()})));
}

// GPTQ v1 stores zero - 1: a zero of 0 would be stored as 15, which AutoGPTQ and llama.cpp read as 16.
TEST(Int4Relayout, AZeroOfZeroIsNotWrittenAsGptq) {
  TempDir dir;
  write_awq(dir / "awq", 0x11110111u);
  try {
    convert_checkpoint(dir / "awq", dir / "out", parse_recipe(R"({"*": "keep"})", "keep"), format(WriteFormat::gptq));
    FAIL() << "a zero point of 0 was written as GPTQ";
  } catch (const std::invalid_argument& e) {
    // nibble 3 is output kOrderMap[3] = 6
    EXPECT_NE(std::string(e.what()).find("its zero point of row 6, group 0 is 0"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(dir / "out"));
}

}  // namespace
}  // namespace mf::io
