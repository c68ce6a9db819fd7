// GGUF reading and dequantizing: the type table, values, hand-made files that parse, one test per read error, and
// Q4_0, Q4_1, Q8_0 and MXFP4 blocks worked by hand. The same files against gguf-py: gguf_python_test.cc.
#include "minifloat/gguf.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "gguf_test_files.h"
#include "io_test_util.h"

namespace mf::io {
namespace {

using namespace mf::io::testing;
using namespace mf::io::gguf_files;

// ---- the type table ----

TEST(GgufTypes, NamesAndBlocks) {
  EXPECT_EQ(gguf_type_name(kF32), "F32");
  EXPECT_EQ(gguf_type_name(kQ8_0), "Q8_0");
  EXPECT_EQ(gguf_type_name(kMXFP4), "MXFP4");
  EXPECT_EQ(gguf_type_name(4), "type 4");  // Q4_2, removed from ggml
  EXPECT_EQ(gguf_type_name(123), "type 123");
  EXPECT_EQ(gguf_type_info(kQ8_0)->block_elements, 32u);
  EXPECT_EQ(gguf_type_info(kQ8_0)->block_bytes, 34u);
  EXPECT_EQ(gguf_type_info(kMXFP4)->block_bytes, 17u);
  EXPECT_FALSE(gguf_type_info(31).has_value());
  EXPECT_FALSE(gguf_type_info(42).has_value());
  for (const std::uint32_t t : {kF32, kF16, 30u, kQ4_0, kQ4_1, kQ8_0, kMXFP4}) EXPECT_TRUE(gguf_can_dequantize(t)) << t;
  for (const std::uint32_t t : {6u, kQ4_K, 24u, 28u, 40u, 99u}) EXPECT_FALSE(gguf_can_dequantize(t)) << t;
  EXPECT_EQ(gguf_value_type_name(VT::STRING), "str");
  EXPECT_EQ(gguf_value_type_name(VT::FLOAT64), "f64");
}

// ---- values ----

TEST(GgufValue, AccessorsAndText) {
  const std::string long_text = str(std::string(119, 'x'), "\xc3\xa9", "tail");  // 'é' straddles byte 120
  const std::string bytes = gguf_bytes(
      {kv("i8", VT::INT8, le(0xFF, 1)), kv("u64", VT::UINT64, le(~0ull, 8)), kv("f32", VT::FLOAT32, le(0x3FC00000, 4)),
       kv("f64", VT::FLOAT64, le(0x8000000000000000ull, 8)), kv("b", VT::BOOL, le(2, 1)),
       kv("s", VT::STRING, gs("a\"b\\c\n\x01")), kv("long", VT::STRING, gs(long_text)),
       kv("ints", VT::ARRAY, array_of(VT::INT16, 10, str(le(1, 2), le(0xFFFE, 2), std::string(16, '\0')))),
       kv("few", VT::ARRAY, array_of(VT::UINT8, 2, "\x07\x08")), kv("none", VT::ARRAY, array_of(VT::STRING, 0, "")),
       kv("strs", VT::ARRAY, array_of(VT::STRING, 2, str(gs("p"), gs("q")))),
       kv("nest", VT::ARRAY, array_of(VT::ARRAY, 2, str(array_of(VT::UINT8, 1, "\x05"), array_of(VT::BOOL, 0, ""))))},
      {});
  const GgufFile f = parse(bytes);
  const auto value = [&](std::string_view key) -> const GgufValue& {
    const GgufValue* v = f.find_metadata(key);
    if (v == nullptr) throw std::runtime_error(str("no key ", key));
    return *v;
  };
  EXPECT_EQ(value("i8").as_int(), -1);
  EXPECT_FALSE(value("i8").as_uint().has_value());
  EXPECT_EQ(value("i8").text(), "-1");
  EXPECT_EQ(value("u64").as_uint(), ~0ull);
  EXPECT_FALSE(value("u64").as_int().has_value());
  EXPECT_FALSE(value("u64").as_string().has_value());
  EXPECT_EQ(value("f32").as_float(), 1.5);
  EXPECT_EQ(value("f32").text(), "1.5");
  EXPECT_TRUE(std::signbit(*value("f64").as_float()));
  EXPECT_EQ(value("f64").text(), "-0");
  EXPECT_EQ(value("b").as_bool(), true);  // any nonzero byte, as ggml reads it
  EXPECT_EQ(value("b").text(), "true");
  EXPECT_EQ(value("s").as_string(), "a\"b\\c\n\x01");
  EXPECT_EQ(value("s").text(), R"("a\"b\\c\n\x01")");
  EXPECT_EQ(value("long").text(), str("\"", std::string(119, 'x'), "...\" (125 bytes)"));
  const GgufValue& ints = value("ints");
  EXPECT_TRUE(ints.is_array());
  EXPECT_EQ(ints.element_type(), VT::INT16);
  EXPECT_EQ(ints.size(), 10u);
  EXPECT_EQ(ints.element(1).as_int(), -2);
  EXPECT_THROW(ints.element(10), std::out_of_range);
  EXPECT_EQ(ints.text(), "[1, -2, 0, 0, 0, 0, 0, 0, ... (10 elements)]");
  EXPECT_EQ(ints.text(2), "[1, -2, ... (10 elements)]");
  EXPECT_EQ(ints.text(0), "[... (10 elements)]");
  EXPECT_EQ(value("few").text(), "[7, 8]");
  EXPECT_EQ(value("none").text(), "[]");
  EXPECT_EQ(value("strs").text(), R"(["p", "q"])");
  EXPECT_EQ(value("strs").element(1).as_string(), "q");
  EXPECT_EQ(value("nest").text(), "[[5], []]");
  EXPECT_EQ(value("nest").element(0).element_type(), VT::UINT8);
  EXPECT_FALSE(value("u64").is_array());
  EXPECT_EQ(value("u64").size(), 0u);
  EXPECT_EQ(f.find_metadata("missing"), nullptr);
  ASSERT_EQ(f.metadata().size(), 12u);
  EXPECT_EQ(f.metadata()[0].first, "i8");  // file order, not sorted
  EXPECT_EQ(f.metadata()[11].first, "nest");
}

// ---- hand-made files that must parse ----

// Version 2, the default alignment, a scalar (n_dims 0: one element, as ggml reads it), an empty tensor (a dim of
// 0), a type we list but do not decode, a gap between tensors, an empty tensor inside another's bytes, trailing
// bytes.
TEST(GgufRead, HandMadeFile) {
  const std::string data =
      str(std::string(64, '\x11'), std::string(144, '\x22'), std::string(16, '\x44'), std::string(32, '\x33'), "xyz");
  const std::string bytes = gguf_bytes({kv("general.name", VT::STRING, gs("tiny"))},
                                       {tinfo("scalar", {}, kF32, 0), tinfo("k", {256}, kQ4_K, 64),
                                        tinfo("empty", {0, 3}, kQ8_0, 96), tinfo("v", {8, 1}, kF32, 224)},
                                       data, 32, 2);
  const GgufFile f = parse(bytes);
  EXPECT_EQ(f.version(), 2u);
  EXPECT_EQ(f.alignment(), 32u);
  EXPECT_EQ(f.path(), "hand.gguf");
  EXPECT_EQ(f.data_offset() % 32, 0u);
  EXPECT_EQ(f.data_offset() + data.size(), bytes.size());
  ASSERT_EQ(f.tensors().size(), 4u);
  const GgufTensor &scalar = f.tensors()[0], &k = f.tensors()[1], &empty = f.tensors()[2], &v = f.tensors()[3];
  EXPECT_EQ(scalar.dims, Dims{});
  EXPECT_EQ(scalar.shape(), Dims{});
  EXPECT_EQ(scalar.elements(), 1u);
  EXPECT_EQ(scalar.bytes, 4u);
  EXPECT_EQ(k.name, "k");
  EXPECT_EQ(gguf_type_name(k.type), "Q4_K");
  EXPECT_EQ(k.bytes, 144u);
  EXPECT_EQ(to_string(f.bytes(k)), std::string(144, '\x22'));
  EXPECT_EQ(empty.bytes, 0u);
  EXPECT_EQ(empty.elements(), 0u);
  EXPECT_EQ(empty.shape(), (Dims{3, 0}));
  EXPECT_TRUE(dequantize_gguf(f, empty).empty());
  EXPECT_EQ(v.shape(), (Dims{1, 8}));
  EXPECT_EQ(to_string(f.bytes(v)), std::string(32, '\x33'));
  EXPECT_EQ(f.find("v"), &v);
  EXPECT_EQ(f.find("nope"), nullptr);
  EXPECT_EQ(f.find_metadata("general.name")->as_string(), "tiny");
  EXPECT_EQ(f.find_metadata("general.alignment"), nullptr);
  const GgufTensor stranger{"x", kF32, {1000}, 0, 4000};
  EXPECT_THROW(f.bytes(stranger), std::invalid_argument);
}

TEST(GgufRead, NoTensorsNeedsNoPadding) {
  const std::string bytes = str(preamble(0, 1), kv_u32("a", 7));
  const GgufFile f = parse(bytes);
  EXPECT_EQ(f.data_offset(), bytes.size());
  EXPECT_TRUE(f.tensors().empty());
  EXPECT_EQ(f.metadata()[0].second.as_uint(), 7u);
}

TEST(GgufRead, ArraysNestUpToTheLimit) {
  std::string value = array_of(VT::UINT8, 1, "\x09");
  for (int level = 1; level < kGgufMaxNesting; ++level) value = array_of(VT::ARRAY, 1, value);
  const GgufFile f = parse(gguf_bytes({kv("deep", VT::ARRAY, value)}, {}));
  EXPECT_EQ(f.metadata()[0].second.text(), "[[[[[[[[9]]]]]]]]");
}

TEST(GgufRead, CustomAlignmentAndReadFromDisk) {
  TempDir dir;
  const std::string bytes =
      gguf_bytes({kv_u32("general.alignment", 64)}, {tinfo("a", {4}, kF32, 0), tinfo("b", {2}, kF16, 64)},
                 str(std::string(16, '\x01'), std::string(48, '\0'), std::string("\x00\x3c\x00\xc0", 4)), 64);
  write_file(dir / "m.gguf", bytes);
  const GgufFile f = read_gguf(dir / "m.gguf");
  EXPECT_EQ(f.alignment(), 64u);
  EXPECT_EQ(f.data_offset() % 64, 0u);
  EXPECT_EQ(dequantize_gguf(f, *f.find("b")), (std::vector<float>{1.0f, -2.0f}));
  expect_io_error([&] { read_gguf(dir / "missing.gguf"); }, IoErrc::open_failed, "cannot open");
  expect_io_error([&] { read_gguf(dir.path()); }, IoErrc::open_failed, "not a regular file");
}

class GgufError : public ::testing::TestWithParam<BadFile> {};

TEST_P(GgufError, IsRejectedWithItsNamedError) {
  const BadFile& bad = GetParam();
  TempDir dir;
  write_file(dir / "bad.gguf", bad.bytes);
  expect_io_error([&] { read_gguf(dir / "bad.gguf"); }, bad.code, str("bad.gguf: ", bad.message));
  expect_io_error([&] { parse_gguf(std::as_bytes(std::span(bad.bytes)), "bad.gguf"); }, bad.code,
                  str("bad.gguf: ", bad.message));
  // The header-only reader (as over HTTP) names the same error.
  expect_io_error([&] { read_gguf_header(dir / "bad.gguf"); }, bad.code, str("bad.gguf: ", bad.message));
}

// A header of 200 kB (one long string value) outgrows read_gguf_header's first 64 KiB read twice: it reads on, and
// finds what the whole-file reader finds, short of the 4 MiB of data; cut inside that string, it names the same
// truncation.
TEST(GgufHeaderOnly, ReadsOnPastItsFirstPrefix) {
  TempDir dir;
  const std::string long_value(200'000, 'x');
  const std::string bytes = gguf_bytes({kv("general.notes", VT::STRING, gs(long_value)), kv_u32("a.count", 7)},
                                       {tinfo("w", {1 << 20}, kF32, 0)}, std::string(4 << 20, '\x01'));
  write_file(dir / "m.gguf", bytes);
  const GgufFile head = read_gguf_header(dir / "m.gguf");
  ASSERT_EQ(head.metadata().size(), 2u);
  EXPECT_EQ(head.metadata()[0].second.as_string(), long_value);
  EXPECT_EQ(*head.find_metadata("a.count")->as_uint(), 7u);
  ASSERT_EQ(head.tensors().size(), 1u);
  EXPECT_EQ(head.data_offset(), bytes.size() - (4 << 20));
  EXPECT_EQ(head.data_offset(), read_gguf(dir / "m.gguf").data_offset());
  EXPECT_THROW(head.bytes(head.tensors()[0]), std::invalid_argument);  // no data was read
  write_file(dir / "cut.gguf", bytes.substr(0, 150'000));
  std::string whole;
  try {
    read_gguf(dir / "cut.gguf");
  } catch (const IoError& e) {
    whole = e.what();
  }
  ASSERT_NE(whole.find("file ends in the value of metadata 'general.notes'"), std::string::npos) << whole;
  expect_io_error([&] { read_gguf_header(dir / "cut.gguf"); }, IoErrc::truncated, whole.substr(whole.find("cut.gguf")));
}

INSTANTIATE_TEST_SUITE_P(Read, GgufError, ::testing::ValuesIn(bad_files()),
                         [](const ::testing::TestParamInfo<BadFile>& info) { return info.param.name; });

// ---- hand-worked blocks ----

// Q8_0: 34 bytes per 32 elements, f16 d then 32 int8 q; each value float(q) * float(d).
TEST(GgufDequantize, Q8_0BlocksByHand) {
  std::string data;
  const auto block = [&](std::uint16_t d, std::initializer_list<int> q) {
    std::string b = le(d, 2);
    for (const int v : q) b += static_cast<char>(static_cast<std::int8_t>(v));
    b.append(34 - b.size(), '\0');
    data += b;
  };
  block(0x3800, {0, 1, -1, 127, -128, 3});  // d = 0.5
  block(0xB800, {0, 2});                    // d = -0.5: q = 0 gives -0
  block(0x0001, {2, -128});                 // d = 2^-24, the least f16 subnormal
  block(0xFC00, {0, 1, -1});                // d = -Inf: 0 * -Inf is NaN
  const GgufFile f = parse(gguf_bytes({}, {tinfo("q", {128}, kQ8_0, 0)}, data));
  const std::vector<float> y = dequantize_gguf(f, f.tensors()[0]);
  ASSERT_EQ(y.size(), 128u);
  const std::vector<float> first{0.0f, 0.5f, -0.5f, 63.5f, -64.0f, 1.5f, 0.0f};
  expect_same_bits({y.begin(), y.begin() + 7}, first, "block 0");
  EXPECT_EQ(bits(y[32]), bits(-0.0f));
  EXPECT_EQ(y[33], -1.0f);
  EXPECT_EQ(bits(y[34]), bits(-0.0f));
  EXPECT_EQ(y[64], std::ldexp(1.0f, -23));
  EXPECT_EQ(y[65], -std::ldexp(1.0f, -17));
  EXPECT_TRUE(std::isnan(y[96]));
  EXPECT_EQ(y[97], -std::numeric_limits<float>::infinity());
  EXPECT_EQ(y[98], std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(y[99]));  // every q = 0 of the block
}

// Q4_0: 18 bytes per 32 elements, f16 d then byte j holds element j (low nibble) and j + 16 (high); value (q - 8) * d.
// Q4_1: 20 bytes, f16 d, f16 m, the same nibbles; value d * q + m with the product rounded first.
TEST(GgufDequantize, Q4_0AndQ4_1BlocksByHand) {
  // d = 0.5: 0x8F: element 0 = (15 - 8) * 0.5 = 3.5, element 16 = (8 - 8) * 0.5 = 0; 0x70: element 1 = -4,
  // element 17 = -0.5.
  const std::string q40 = le(0x3800, 2) + "\x8F\x70" + std::string(14, '\x88');
  // d = -2, every byte 0x08: element j = (8 - 8) * -2 = -0, element 16 + j = (0 - 8) * -2 = 16.
  const std::string q40b = le(0xC000, 2) + std::string(16, '\x08');
  const GgufFile f0 = parse(gguf_bytes({}, {tinfo("q", {64}, kQ4_0, 0)}, q40 + q40b));
  const std::vector<float> y0 = dequantize_gguf(f0, f0.tensors()[0]);
  std::vector<float> want0(64, 0.0f);
  want0[0] = 3.5f, want0[1] = -4.0f, want0[17] = -0.5f;
  for (int j = 0; j < 16; ++j) want0[32 + j] = -0.0f, want0[48 + j] = 16.0f;
  expect_same_bits(y0, want0, "q4_0");
  // Q4_1: d = 0.1 in f16 (0x2E66 = 0.0999755859375), m = -1 (0xBC00). 0xF3: element 0 = d * 3 - 1, element 16 =
  // d * 15 - 1. The product d * 3 rounds to f32 before the sum: an fma would give a different last bit for some q.
  const std::string q41 = le(0x2E66, 2) + le(0xBC00, 2) + "\xF3" + std::string(15, '\0');
  const GgufFile f1 = parse(gguf_bytes({}, {tinfo("q", {32}, kQ4_1, 0)}, q41));
  const std::vector<float> y1 = dequantize_gguf(f1, f1.tensors()[0]);
  const float d = 0.0999755859375f;
  volatile float p3 = d * 3.0f, p15 = d * 15.0f;  // volatile: rounded products, as numpy forms them
  std::vector<float> want1(32, -1.0f);
  want1[0] = p3 + -1.0f, want1[16] = p15 + -1.0f;
  expect_same_bits(y1, want1, "q4_1");
}

// MXFP4: 17 bytes per 32 elements: the e8m0 byte e, then byte j holds element j (low nibble) and j + 16 (high).
// Value: e2m1(code) * 2^(e - 127), computed as ggml does: (2 x e2m1) * 2^(e - 128); the -0 code gives +0, and
// e = 255 is an exponent (2^128 x e2m1), not NaN.
TEST(GgufDequantize, Mxfp4BlocksByHand) {
  const auto block = [](std::uint8_t e, std::initializer_list<std::uint8_t> qs) {
    std::string b(1, static_cast<char>(e));
    for (const std::uint8_t q : qs) b += static_cast<char>(q);
    return b + std::string(17 - b.size(), '\0');
  };
  // e = 128: scale 2. 0x71: element 0 = code 1 (0.5 -> 1), element 16 = code 7 (6 -> 12); 0x8F: element 1 = code
  // 15 (-6 -> -12), element 17 = code 8 (-0 -> +0); 0x25: element 2 = code 5 (3 -> 6), element 18 = code 2 (1 -> 2).
  const std::string b0 = block(128, {0x71, 0x8F, 0x25});
  // e = 0: scale 2^-127. 0x31: element 0 = 0.5 * 2^-127, element 16 = 1.5 * 2^-127; 0x09: element 1 = -0.5 * 2^-127.
  const std::string b1 = block(0, {0x31, 0x09});
  // e = 255: scale 2^128. 0x21: element 0 = 0.5 * 2^128 = 2^127, element 16 = 1 * 2^128 = Inf; 0x0C: element 1 =
  // -2 * 2^128 = -Inf.
  const std::string b2 = block(255, {0x21, 0x0C});
  const GgufFile f = parse(gguf_bytes({}, {tinfo("m", {96}, kMXFP4, 0)}, str(b0, b1, b2)));
  const std::vector<float> y = dequantize_gguf(f, f.tensors()[0]);
  ASSERT_EQ(y.size(), 96u);
  std::vector<float> want(96, 0.0f);
  want[0] = 1.0f, want[16] = 12.0f, want[1] = -12.0f, want[17] = 0.0f, want[2] = 6.0f, want[18] = 2.0f;
  want[32] = std::ldexp(1.0f, -128), want[48] = 3 * std::ldexp(1.0f, -128), want[33] = -std::ldexp(1.0f, -128);
  want[64] = std::ldexp(1.0f, 127), want[80] = std::numeric_limits<float>::infinity();
  want[65] = -std::numeric_limits<float>::infinity();
  expect_same_bits(y, want, "mxfp4");
}

TEST(GgufDequantize, OtherTypesAreNamedErrors) {
  const GgufFile f =
      parse(gguf_bytes({}, {tinfo("k", {256}, kQ4_K, 0), tinfo("i", {4}, 24, 160)}, std::string(164, '\0')));
  expect_io_error([&] { dequantize_gguf(f, f.tensors()[0]); }, IoErrc::not_dequantizable,
                  "hand.gguf: tensor 'k': cannot dequantize type Q4_K (minifloat decodes F32, F16, BF16, Q4_0, Q4_1, "
                  "Q8_0 and MXFP4)");
  expect_io_error([&] { dequantize_gguf(f, f.tensors()[1]); }, IoErrc::not_dequantizable, "type I8");
}

}  // namespace
}  // namespace mf::io
