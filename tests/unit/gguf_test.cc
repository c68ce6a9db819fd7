// GGUF reading and dequantizing: files written by gguf-py's GGUFWriter with gguf.quants.dequantize as the oracle
// (bit for bit), the type table against gguf-py's, one test per read error (the same bad files shown to gguf-py's
// GGUFReader too), and Q4_0, Q4_1, Q8_0 and MXFP4 blocks worked by hand.
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

#include "io_test_util.h"

namespace mf::io {
namespace {

using namespace mf::io::testing;
using Dims = std::vector<std::uint64_t>;
using VT = GgufValueType;

constexpr std::uint32_t kF32 = 0, kF16 = 1, kQ4_0 = 2, kQ4_1 = 3, kQ8_0 = 8, kQ4_K = 12, kMXFP4 = 39;

// ---- building files by hand ----

std::string gs(std::string_view s) { return str(le(s.size(), 8), s); }
std::string kv(std::string_view key, VT type, std::string_view payload) {
  return str(gs(key), le(static_cast<std::uint32_t>(type), 4), payload);
}
std::string kv_u32(std::string_view key, std::uint32_t v) { return kv(key, VT::UINT32, le(v, 4)); }
std::string array_of(VT element, std::uint64_t count, std::string_view elements) {
  return str(le(static_cast<std::uint32_t>(element), 4), le(count, 8), elements);
}
std::string tinfo(std::string_view name, const Dims& dims, std::uint32_t type, std::uint64_t offset) {
  std::string out = str(gs(name), le(dims.size(), 4));
  for (const std::uint64_t d : dims) out += le(d, 8);
  return str(out, le(type, 4), le(offset, 8));
}
std::string preamble(std::uint64_t tensors, std::uint64_t kvs, std::uint32_t version = 3) {
  return str("GGUF", le(version, 4), le(tensors, 8), le(kvs, 8));
}
// A whole file: header, zero padding to `alignment`, then `data`.
std::string gguf_bytes(const std::vector<std::string>& kvs, const std::vector<std::string>& infos,
                       std::string_view data = "", std::uint64_t alignment = 32, std::uint32_t version = 3) {
  std::string out = preamble(infos.size(), kvs.size(), version);
  for (const std::string& k : kvs) out += k;
  for (const std::string& t : infos) out += t;
  out.append((alignment - out.size() % alignment) % alignment, '\0');
  return out + std::string(data);
}

GgufFile parse(std::string_view bytes) { return parse_gguf(std::as_bytes(std::span(bytes)), "hand.gguf"); }

std::uint32_t bits(float x) { return std::bit_cast<std::uint32_t>(x); }

// Bit patterns compared, so that NaN payloads and signed zeros count; the first few differences are shown.
void expect_same_bits(const std::vector<float>& got, const std::vector<float>& want, std::string_view what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  int shown = 0;
  std::size_t differ = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (bits(got[i]) == bits(want[i])) continue;
    ++differ;
    if (shown++ < 5) {
      ADD_FAILURE() << what << "[" << i << "]: got " << got[i] << " (0x" << std::hex << bits(got[i]) << "), want "
                    << want[i] << " (0x" << bits(want[i]) << std::dec << ")";
    }
  }
  EXPECT_EQ(differ, 0u) << what << ": " << differ << " of " << got.size() << " values differ";
}

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
  const std::string data = str(std::string(64, '\x11'), std::string(144, '\x22'), std::string(16, '\x44'),
                               std::string(32, '\x33'), "xyz");
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

// ---- one test per read error; the same files go to gguf-py's reader below ----

struct BadFile {
  std::string name;
  std::string bytes;
  IoErrc code;
  std::string message;  // what the message must contain after "bad.gguf: "
};

void PrintTo(const BadFile& bad, std::ostream* os) { *os << bad.name; }

std::vector<BadFile> bad_header_files() {
  const std::string one = str(preamble(0, 1));
  return {
      {"BadMagic", str("GGML", gguf_bytes({}, {}).substr(4)), IoErrc::gguf_bad_magic,
       "not a GGUF file: it starts with \"GGML\", not \"GGUF\""},
      {"EmptyFile", "", IoErrc::truncated, "file is 0 bytes, shorter than the 24-byte GGUF header"},
      {"ShorterThanHeader", preamble(0, 0).substr(0, 12), IoErrc::truncated, "file is 12 bytes"},
      {"Version1", preamble(0, 0, 1), IoErrc::gguf_bad_version,
       "GGUF version 1 is not 2 or 3 (GGUF v1 is no longer supported"},
      {"Version4", preamble(0, 0, 4), IoErrc::gguf_bad_version, "GGUF version 4 is not 2 or 3"},
      {"BigEndian", preamble(0, 0, 0x03000000), IoErrc::gguf_bad_version,
       "GGUF version 50331648 is not 2 or 3 (a big-endian file?"},
      {"TensorCountTooLarge", preamble(1ull << 40, 0), IoErrc::gguf_bad_count,
       "tensor_count 1099511627776 and kv_count 0 cannot fit in the 0 bytes after the header"},
      {"KvCountTooLarge", str(preamble(0, 2), kv("a", VT::UINT8, "\x01")), IoErrc::gguf_bad_count,
       "tensor_count 0 and kv_count 2 cannot fit in the 14 bytes after the header"},
      {"CountsTogetherTooLarge", str(preamble(1, 1), std::string(30, '\0')), IoErrc::gguf_bad_count,
       "tensor_count 1 and kv_count 1 cannot fit in the 30 bytes"},
      {"KeyPastEnd", str(one, le(100, 8), std::string(20, 'k')), IoErrc::truncated,
       "file ends in metadata key 0 (needs 100 bytes at offset 32, has 20)"},
      {"KeyTooLong", str(one, le(kGgufMaxString + 1, 8), std::string(20, 'k')), IoErrc::gguf_string_too_long,
       "metadata key 0: string length 1073741825 is over the limit of 1073741824"},
      {"EmptyKey", str(one, kv("", VT::UINT32, le(1, 4))), IoErrc::gguf_empty_key, "metadata key 0 is empty"},
      {"UnknownValueType", str(one, gs("k"), le(13, 4), le(0, 8)), IoErrc::gguf_bad_value_type,
       "the type of metadata 'k': value type 13 is not a GGUF type (0-12)"},
      {"UnknownElementType", str(one, kv("k", VT::ARRAY, array_of(static_cast<VT>(99), 1, "\0"))),
       IoErrc::gguf_bad_value_type, "the array of metadata 'k': value type 99 is not a GGUF type"},
      {"ValuePastEnd", str(one, kv("k", VT::UINT64, le(5, 4))), IoErrc::truncated,
       "file ends in the value of metadata 'k' (needs 8 bytes at offset 37, has 4)"},
      {"StringValuePastEnd", str(one, kv("k", VT::STRING, str(le(50, 8), "short"))), IoErrc::truncated,
       "file ends in the value of metadata 'k' (needs 50 bytes"},
      {"ArrayCountPastEnd", str(one, kv("k", VT::ARRAY, array_of(VT::UINT32, 1000, std::string(8, '\0')))),
       IoErrc::truncated,
       "file ends in the array of metadata 'k' (1000 elements of u32 take at least 4 bytes each, 8 bytes left"},
      {"StringArrayCountPastEnd", str(one, kv("k", VT::ARRAY, array_of(VT::STRING, 3, str(gs("a"), gs("b"))))),
       IoErrc::truncated,
       "file ends in the array of metadata 'k' (3 elements of str take at least 8 bytes each, 18 bytes left"},
      {"NestingTooDeep",
       [] {
         std::string v = array_of(VT::UINT8, 1, "\x09");
         for (int level = 1; level <= kGgufMaxNesting; ++level) v = array_of(VT::ARRAY, 1, v);
         return gguf_bytes({kv("deep", VT::ARRAY, v)}, {});
       }(),
       IoErrc::gguf_nesting_too_deep, "the array of metadata 'deep': arrays nest deeper than 8 levels"},
      {"DuplicateKey", gguf_bytes({kv_u32("k", 1), kv_u32("j", 2), kv_u32("k", 3)}, {}), IoErrc::gguf_duplicate_key,
       "metadata key 'k' appears twice"},
      {"AlignmentNotU32", gguf_bytes({kv("general.alignment", VT::UINT64, le(64, 8))}, {}),
       IoErrc::gguf_bad_alignment, "general.alignment is a u64, not a u32"},
      {"AlignmentNotPowerOfTwo", gguf_bytes({kv_u32("general.alignment", 48)}, {}), IoErrc::gguf_bad_alignment,
       "general.alignment 48 is not a power of two"},
      {"AlignmentZero", gguf_bytes({kv_u32("general.alignment", 0)}, {}), IoErrc::gguf_bad_alignment,
       "general.alignment 0 is not a power of two"},
  };
}

std::vector<BadFile> bad_tensor_files() {
  const std::string info = tinfo("w", {4}, kF32, 0);
  const std::string sixteen(16, '\0');
  return {
      {"TensorInfoPastEnd", str(preamble(1, 0), info.substr(0, info.size() - 6)), IoErrc::truncated,
       "file ends in the tensor info of 'w' (needs 8 bytes"},
      {"TensorNamePastEnd", str(preamble(1, 0), le(30, 8), std::string(20, 'n')), IoErrc::truncated,
       "file ends in tensor info 0 (needs 30 bytes"},
      {"TooManyDims", gguf_bytes({}, {tinfo("w", {1, 1, 1, 1, 4}, kF32, 0)}, sixteen), IoErrc::gguf_bad_dims,
       "tensor 'w': n_dims 5 is over 4"},
      {"NegativeDim", gguf_bytes({}, {tinfo("w", {4, 1ull << 63}, kF32, 0)}, sixteen), IoErrc::gguf_bad_dims,
       "tensor 'w': dims[1] = 9223372036854775808 is 2^63 or more (negative to ggml)"},
      {"RemovedType", gguf_bytes({}, {tinfo("w", {32}, 4, 0)}, sixteen), IoErrc::gguf_unknown_type,
       "tensor 'w': type id 4 is not a ggml type"},
      {"TypePastTheTable", gguf_bytes({}, {tinfo("w", {32}, 42, 0)}, sixteen), IoErrc::gguf_unknown_type,
       "tensor 'w': type id 42 is not a ggml type"},
      {"RowNotWholeBlocks", gguf_bytes({}, {tinfo("w", {33, 2}, kQ8_0, 0)}, sixteen), IoErrc::gguf_bad_row,
       "tensor 'w': dims[0] = 33 is not a multiple of Q8_0's block of 32 elements"},
      {"QuantizedScalar", gguf_bytes({}, {tinfo("w", {}, kMXFP4, 0)}, sixteen), IoErrc::gguf_bad_row,
       "tensor 'w': dims[0] = 1 is not a multiple of MXFP4's block of 32 elements"},
      {"RowsOverflow", gguf_bytes({}, {tinfo("w", {1, 1ull << 32, 1ull << 32, 2}, kF32, 0)}, sixteen),
       IoErrc::size_overflow, "tensor 'w': dims [1, 4294967296, 4294967296, 2] overflow 64 bits"},
      {"ElementsOverflow", gguf_bytes({}, {tinfo("w", {1ull << 32, 1ull << 32}, kF32, 0)}, sixteen),
       IoErrc::size_overflow, "tensor 'w': dims [4294967296, 4294967296] x F32 overflow 64 bits"},
      {"RowBytesOverflow", gguf_bytes({}, {tinfo("w", {(1ull << 62) + 2, 1, 2}, kF32, 0)}, sixteen),
       IoErrc::size_overflow, "tensor 'w': dims [4611686018427387906, 1, 2] x F32 overflow 64 bits"},  // fuzz found
      {"BytesOverflow", gguf_bytes({}, {tinfo("w", {1ull << 62, 2}, kF16, 0)}, sixteen), IoErrc::size_overflow,
       "tensor 'w': dims [4611686018427387904, 2] x F16 overflow 64 bits"},
      {"DuplicateTensor", gguf_bytes({}, {info, tinfo("v", {4}, kF32, 32), tinfo("w", {4}, kF32, 64)}, "", 32),
       IoErrc::gguf_duplicate_tensor, "tensor 'w': name appears twice"},
      {"PaddingPastEnd", str(preamble(1, 0), info), IoErrc::truncated,
       "file ends in the padding before the data section (which starts at 64, file is 57 bytes)"},
      {"Misaligned", gguf_bytes({}, {tinfo("w", {4}, kF32, 16)}, std::string(32, '\0')), IoErrc::gguf_misaligned,
       "tensor 'w': offset 16 is not a multiple of the alignment 32"},
      {"MisalignedToCustom",
       gguf_bytes({kv_u32("general.alignment", 64)}, {tinfo("w", {4}, kF32, 32)}, std::string(64, '\0'), 64),
       IoErrc::gguf_misaligned, "tensor 'w': offset 32 is not a multiple of the alignment 64"},
      {"DataPastEnd", gguf_bytes({}, {tinfo("w", {8}, kF32, 0)}, sixteen), IoErrc::offsets_out_of_range,
       "tensor 'w': 32 bytes at offset 0 run past the end of the 16-byte data section"},
      {"OffsetWrapsAround", gguf_bytes({}, {tinfo("w", {4}, kF32, ~0ull - 31)}, std::string(32, '\0')),
       IoErrc::offsets_out_of_range, "tensor 'w': 16 bytes at offset 18446744073709551584 run past the end"},
      {"Overlap", gguf_bytes({}, {tinfo("a", {16}, kF32, 0), tinfo("b", {8}, kF32, 32)}, std::string(64, '\0')),
       IoErrc::offsets_overlap, "tensor 'b': bytes [32, 64) overlap tensor 'a' at [0, 64)"},
      {"SameOffset", gguf_bytes({}, {tinfo("a", {4}, kF32, 0), tinfo("b", {2}, kF32, 0)}, std::string(32, '\0')),
       IoErrc::offsets_overlap, "tensor 'b': bytes [0, 8) overlap tensor 'a' at [0, 16)"},
  };
}

std::vector<BadFile> bad_files() {
  std::vector<BadFile> all = bad_header_files();
  for (BadFile& b : bad_tensor_files()) all.push_back(std::move(b));
  return all;
}

class GgufError : public ::testing::TestWithParam<BadFile> {};

TEST_P(GgufError, IsRejectedWithItsNamedError) {
  const BadFile& bad = GetParam();
  TempDir dir;
  write_file(dir / "bad.gguf", bad.bytes);
  expect_io_error([&] { read_gguf(dir / "bad.gguf"); }, bad.code, str("bad.gguf: ", bad.message));
  expect_io_error([&] { parse_gguf(std::as_bytes(std::span(bad.bytes)), "bad.gguf"); }, bad.code,
                  str("bad.gguf: ", bad.message));
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
  const GgufFile f = parse(gguf_bytes({}, {tinfo("k", {256}, kQ4_K, 0), tinfo("i", {4}, 24, 160)},
                                      std::string(164, '\0')));
  expect_io_error([&] { dequantize_gguf(f, f.tensors()[0]); }, IoErrc::not_dequantizable,
                  "hand.gguf: tensor 'k': cannot dequantize type Q4_K (minifloat decodes F32, F16, BF16, Q4_0, Q4_1, "
                  "Q8_0 and MXFP4)");
  expect_io_error([&] { dequantize_gguf(f, f.tensors()[1]); }, IoErrc::not_dequantizable, "type I8");
}

// ---- gguf-py: its writer, its reader and its dequantizers as the oracle ----

const char* const kGgufScript = R"PY(
import os, signal, struct, sys, warnings
import numpy as np
import gguf
from gguf import GGMLQuantizationType as T, GGUFValueType as V
from gguf.quants import quantize, dequantize

warnings.simplefilter("ignore")
np.seterr(all="ignore")
mode, out = sys.argv[1], sys.argv[2]
rng = np.random.default_rng(20240601)

def types():
    for t in T:
        print("Q", int(t), t.name, *gguf.GGML_QUANT_SIZES[t])

def bad():
    # Which of the files we refuse gguf-py's reader accepts (a hang counts as a refusal: it has no bounds checks).
    signal.signal(signal.SIGALRM, lambda *a: (_ for _ in ()).throw(TimeoutError()))
    for name in open(out + "/bad.txt").read().split():
        signal.alarm(5)
        try:
            gguf.GGUFReader(out + "/" + name + ".gguf")
            print("accepted", name)
        except Exception:
            pass
        signal.alarm(0)

def f32_values(n):
    x = (rng.standard_normal(n) * 10.0 ** rng.integers(-45, 39, n)).astype(np.float32)
    special = [0.0, -0.0, 1e-45, -1e-40, 1.17e-38, 3.4e38, -3.4e38, np.inf, -np.inf, np.nan]
    x[: len(special)] = special
    return x

def bits16(n):
    return rng.integers(0, 1 << 16, n, dtype=np.uint32).astype(np.uint16)

def canon(vtype, value, sub=None):
    if vtype == V.STRING: return "s:" + value.encode("utf-8").hex()
    if vtype == V.BOOL: return "true" if value else "false"
    if vtype == V.FLOAT32: return "f32:%08x" % struct.unpack("<I", struct.pack("<f", value))[0]
    if vtype == V.FLOAT64: return "f64:%016x" % struct.unpack("<Q", struct.pack("<d", value))[0]
    if vtype == V.ARRAY:
        sub = sub if sub is not None else V.get_type(value[0])
        return "[%d:%s]" % (sub, ",".join(canon(sub, v) for v in value))
    return str(int(value))

def write():
    w = gguf.GGUFWriter(out + "/model.gguf", "testarch")
    w.add_custom_alignment(64)
    meta = {"general.architecture": (V.STRING, canon(V.STRING, "testarch")),
            "general.alignment": (V.UINT32, canon(V.UINT32, 64))}
    for key, value, vtype, sub in [
            ("t.string", "h\u00e9llo \"q\"\n\ttab", V.STRING, None), ("t.u32", 4000000000, V.UINT32, None),
            ("t.f32", 0.1, V.FLOAT32, None), ("t.bool", True, V.BOOL, None), ("t.false", False, V.BOOL, None),
            ("t.u8", 255, V.UINT8, None), ("t.i8", -128, V.INT8, None), ("t.u16", 65535, V.UINT16, None),
            ("t.i16", -32768, V.INT16, None), ("t.i32", -2147483648, V.INT32, None),
            ("t.u64", 2**64 - 1, V.UINT64, None), ("t.i64", -2**63, V.INT64, None), ("t.f64", -1e300, V.FLOAT64, None),
            ("t.strings", ["a", "", "\u00fc\u00df", "x" * 200], V.ARRAY, None),
            ("t.ints", [1, -2, 3, 2147483647], V.ARRAY, None), ("t.u64s", [0, 2**64 - 1], V.ARRAY, V.UINT64),
            ("t.floats", [0.5, -0.0, 1e-42], V.ARRAY, V.FLOAT32), ("t.bools", [True, False, True], V.ARRAY, V.BOOL),
            ("t.nested", [[1, 2], [3], [4, 5, 6]], V.ARRAY, None)]:
        w.add_key_value(key, value, vtype, sub_type=sub)
        meta[key] = (vtype, canon(vtype, value, sub))

    expected = {}
    def add(name, array, raw_dtype=None, values=None):
        w.add_tensor(name, array, raw_dtype=raw_dtype)
        if values is not None:
            expected[name] = np.ascontiguousarray(values, dtype=np.float32)
    x = f32_values(2 * 3 * 64).reshape(2, 3, 64)
    add("f32.3d", x, values=x)
    h = bits16(96)
    h[:6] = [0x7C01, 0xFE01, 0x7C00, 0x0001, 0x8000, 0x03FF]  # signaling and quiet NaN, Inf, subnormals, -0
    h = h.view(np.float16)
    add("f16.1d", h, values=dequantize(h.view(np.uint8), T.F16))
    b = bits16(4 * 64)
    b[:5] = [0x7F81, 0xFFC1, 0xFF80, 0x0001, 0x8000]
    b = b.reshape(4, 64).view(np.uint8)
    add("bf16.2d", b, T.BF16, dequantize(b, T.BF16))
    q = quantize(f32_values(3 * 128).reshape(3, 128) / np.float32(1e30), T.Q8_0)
    add("q8_0.quantized", q, T.Q8_0, dequantize(q, T.Q8_0))
    raw = rng.integers(0, 256, (2, 4, 34)).astype(np.uint8)  # random scales too: NaN, Inf, subnormal
    raw[0, :, 0:2] = np.array([0x7C00, 0xFE01, 0x0001, 0x8000], dtype=np.uint16).view(np.uint8).reshape(4, 2)
    raw = raw.reshape(2, 4 * 34)
    add("q8_0.raw", raw, T.Q8_0, dequantize(raw, T.Q8_0))
    m = quantize(f32_values(2 * 64).reshape(2, 64) / np.float32(1e20), T.MXFP4)
    add("mxfp4.quantized", m, T.MXFP4, dequantize(m, T.MXFP4))
    mx = rng.integers(0, 256, (2, 2, 3, 17)).astype(np.uint8)  # every scale byte, every nibble
    mx[0, 0, :, 0] = [0, 1, 2]
    mx[0, 1, :, 0] = [127, 254, 255]
    mx = mx.reshape(2, 2, 3 * 17)
    add("mxfp4.raw", mx, T.MXFP4, dequantize(mx, T.MXFP4))
    for qt, size in ((T.Q4_0, 18), (T.Q4_1, 20)):
        name = qt.name.lower()
        q4 = quantize((rng.standard_normal((2, 128)) * 3).astype(np.float32), qt)
        add(name + ".quantized", q4, qt, dequantize(q4, qt))
        r4 = rng.integers(0, 256, (3, 2 * size)).astype(np.uint8)  # random scales (and mins): NaN, Inf, subnormal
        r4[0, 0:2] = np.array([0x7C00], dtype=np.uint16).view(np.uint8)
        r4[1, 0:2] = np.array([0x0001], dtype=np.uint16).view(np.uint8)
        add(name + ".raw", r4, qt, dequantize(r4, qt))
    add("q4_k", rng.integers(0, 256, (2, 144)).astype(np.uint8), T.Q4_K)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    for name, values in expected.items():
        values.tofile(out + "/" + name + ".f32")

    # What gguf-py's own reader sees: metadata in file order, tensors with their ggml dims and offsets.
    r = gguf.GGUFReader(out + "/model.gguf")
    for key, field in r.fields.items():
        if not key.startswith("GGUF."):
            vtype, text = meta[key]
            assert field.types[0] == vtype, key
            print("M", key, int(vtype), text)
    for t in r.tensors:
        print("T", t.name, int(t.tensor_type), ",".join(str(int(d)) for d in t.shape), t.data_offset - r.data_offset,
              t.n_bytes, "yes" if t.name in expected else "no")
    print("A", r.alignment, r.data_offset)

{"types": types, "bad": bad, "write": write}[mode]()
)PY";

class GgufPython : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(python_has(dir_, "numpy", "numpy"));
    ASSERT_TRUE(python_has(dir_, "gguf", "gguf==0.19.0"));
    write_file(dir_ / "gg.py", kGgufScript);
  }
  // Runs the script once; its output lines, split at spaces.
  void run(std::string_view mode) {
    const RunResult r = run_python(dir_ / "gg.py", str(mode, " '", dir_.path().string(), "'"));
    EXPECT_EQ(r.status, 0) << r.output;
    output_.clear();
    std::istringstream lines(r.output);
    for (std::string line; std::getline(lines, line);) {
      std::istringstream words(line);
      std::vector<std::string> row;
      for (std::string w; words >> w;) row.push_back(w);
      if (!row.empty()) output_.push_back(std::move(row));
    }
  }
  // The lines that start with `tag`, without it.
  std::vector<std::vector<std::string>> rows(std::string_view tag) const {
    std::vector<std::vector<std::string>> out;
    for (const auto& row : output_) {
      if (row[0] == tag) out.emplace_back(row.begin() + 1, row.end());
    }
    return out;
  }
  std::vector<std::vector<std::string>> output_;
  TempDir dir_;
};

// The printable form the script gives each value, built from our reading of it.
std::string canon(const GgufValue& v) {
  const auto hex = [](std::uint64_t x, int digits) {
    char buf[20];
    std::snprintf(buf, sizeof buf, "%0*llx", digits, static_cast<unsigned long long>(x));
    return std::string(buf);
  };
  switch (v.type()) {
    case VT::STRING: {
      std::string out = "s:";
      const std::string_view text = *v.as_string();  // a named view: the optional is a temporary
      for (const char c : text) out += hex(static_cast<unsigned char>(c), 2);
      return out;
    }
    case VT::BOOL: return *v.as_bool() ? "true" : "false";
    case VT::FLOAT32: return "f32:" + hex(std::bit_cast<std::uint32_t>(static_cast<float>(*v.as_float())), 8);
    case VT::FLOAT64: return "f64:" + hex(std::bit_cast<std::uint64_t>(*v.as_float()), 16);
    case VT::ARRAY: {
      std::string out = str("[", static_cast<int>(v.element_type()), ":");
      for (std::uint64_t i = 0; i < v.size(); ++i) out += str(i == 0 ? "" : ",", canon(v.element(i)));
      return out + "]";
    }
    case VT::INT8: case VT::INT16: case VT::INT32: case VT::INT64: return str(*v.as_int());
    default: return str(*v.as_uint());
  }
}

std::vector<float> read_f32(const fs::path& path) {
  const std::string raw = read_file(path);
  std::vector<float> out(raw.size() / 4);
  std::memcpy(out.data(), raw.data(), out.size() * 4);
  return out;
}

TEST_F(GgufPython, TypeTableMatchesGgufPy) {
  run("types");
  const auto types = rows("Q");
  ASSERT_GE(types.size(), 34u);
  std::vector<bool> listed(64, false);
  for (const auto& row : types) {
    ASSERT_EQ(row.size(), 4u);
    const auto id = static_cast<std::uint32_t>(std::stoul(row[0]));
    ASSERT_LT(id, listed.size());
    listed[id] = true;
    EXPECT_EQ(gguf_type_name(id), row[1]);
    const std::optional<GgufTypeInfo> info = gguf_type_info(id);
    ASSERT_TRUE(info.has_value()) << row[1];
    EXPECT_EQ(info->block_elements, std::stoul(row[2])) << row[1];
    EXPECT_EQ(info->block_bytes, std::stoul(row[3])) << row[1];
  }
  for (std::uint32_t id = 0; id < listed.size(); ++id) {
    if (!listed[id]) {
      EXPECT_FALSE(gguf_type_info(id).has_value()) << "id " << id << " is not in gguf-py";
    }
  }
  // The enum's values are the ids of the names it gives them.
  const std::vector<std::pair<GgufType, std::string>> named{
      {GgufType::F32, "F32"}, {GgufType::Q4_0, "Q4_0"}, {GgufType::Q5_0, "Q5_0"}, {GgufType::Q8_0, "Q8_0"},
      {GgufType::Q2_K, "Q2_K"}, {GgufType::Q8_K, "Q8_K"}, {GgufType::IQ2_XXS, "IQ2_XXS"},
      {GgufType::IQ4_XS, "IQ4_XS"}, {GgufType::I8, "I8"}, {GgufType::F64, "F64"}, {GgufType::IQ1_M, "IQ1_M"},
      {GgufType::BF16, "BF16"}, {GgufType::TQ1_0, "TQ1_0"}, {GgufType::TQ2_0, "TQ2_0"},
      {GgufType::MXFP4, "MXFP4"}, {GgufType::NVFP4, "NVFP4"}, {GgufType::Q1_0, "Q1_0"}};
  for (const auto& [type, name] : named) EXPECT_EQ(gguf_type_name(static_cast<std::uint32_t>(type)), name);
}

// Metadata of all 13 types (arrays of strings, ints, u64, floats, bools, arrays), F32/F16/BF16/Q8_0/MXFP4 tensors
// (quantized by gguf-py, and raw bytes with every scale byte) in 1-D, 2-D and 3-D, and a Q4_K tensor we only list.
TEST_F(GgufPython, WeReadWhatGgufPyWritesAndDecodeAsItDoes) {
  run("write");
  const auto meta = rows("M");
  const GgufFile f = read_gguf(dir_ / "model.gguf");
  EXPECT_EQ(f.version(), 3u);
  ASSERT_EQ(f.metadata().size(), meta.size());
  ASSERT_GE(meta.size(), 21u);
  for (std::size_t i = 0; i < meta.size(); ++i) {
    const auto& [key, value] = f.metadata()[i];
    EXPECT_EQ(key, meta[i][0]);
    EXPECT_EQ(static_cast<int>(value.type()), std::stoi(meta[i][1])) << key;
    EXPECT_EQ(canon(value), meta[i][2]) << key;
    EXPECT_EQ(f.find_metadata(key), &value);
  }
  const auto tensors = rows("T");
  const auto layout = rows("A");
  ASSERT_EQ(layout.size(), 1u);
  EXPECT_EQ(f.alignment(), std::stoull(layout[0][0]));
  EXPECT_EQ(f.data_offset(), std::stoull(layout[0][1]));
  ASSERT_EQ(f.tensors().size(), tensors.size());
  ASSERT_EQ(tensors.size(), 12u);
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const GgufTensor& t = f.tensors()[i];
    const auto& row = tensors[i];
    EXPECT_EQ(t.name, row[0]);
    EXPECT_EQ(t.type, std::stoul(row[1])) << t.name;
    Dims dims;
    std::istringstream in(row[2]);
    for (std::string d; std::getline(in, d, ',');) dims.push_back(std::stoull(d));
    EXPECT_EQ(t.dims, dims) << t.name;
    EXPECT_EQ(t.shape(), Dims(dims.rbegin(), dims.rend())) << t.name;
    EXPECT_EQ(t.offset, std::stoull(row[3])) << t.name;
    EXPECT_EQ(t.bytes, std::stoull(row[4])) << t.name;
    EXPECT_EQ(f.find(t.name), &t);
    if (row[5] == "yes") {
      ASSERT_TRUE(gguf_can_dequantize(t.type)) << t.name;
      expect_same_bits(dequantize_gguf(f, t), read_f32(dir_ / (t.name + ".f32")), t.name);
    } else {
      EXPECT_EQ(gguf_type_name(t.type), "Q4_K");
      expect_io_error([&] { dequantize_gguf(f, t); }, IoErrc::not_dequantizable,
                      str("model.gguf: tensor '", t.name, "': cannot dequantize type Q4_K"));
    }
  }
}

// gguf-py's reader (0.19.0), shown every file we refuse, accepts these; llama.cpp's refuses every one of them:
// - BigEndian: gguf-py byte-swaps a file whose version reads as 0x03000000; ggml takes it for a mismatch of byte
//   order, and only little-endian files are read here.
// - StringValuePastEnd, ArrayCountPastEnd, OffsetWrapsAround: its reads past the end come back short, not failed.
// - EmptyKey, NestingTooDeep, TooManyDims: it has no such limits.
// - Misaligned, MisalignedToCustom, Overlap, SameOffset: it reads whatever lies at an offset (ggml requires each
//   tensor to start where the padded one before it ends).
// A count it trusts can make it loop without end; the script's timeout counts that as a refusal.
const std::string kLaxerInGgufPy =
    "accepted BigEndian\naccepted EmptyKey\naccepted StringValuePastEnd\naccepted ArrayCountPastEnd\n"
    "accepted NestingTooDeep\naccepted TooManyDims\naccepted Misaligned\naccepted MisalignedToCustom\n"
    "accepted OffsetWrapsAround\naccepted Overlap\naccepted SameOffset\n";

TEST_F(GgufPython, GgufPyRefusesTheBadFilesToo) {
  std::string names;
  for (const BadFile& bad : bad_files()) {
    write_file(dir_ / (bad.name + ".gguf"), bad.bytes);
    names += bad.name + "\n";
  }
  write_file(dir_ / "bad.txt", names);
  std::string accepted;
  run("bad");
  for (const auto& row : rows("accepted")) accepted += str("accepted ", row.at(0), "\n");
  EXPECT_EQ(accepted, kLaxerInGgufPy);
}

}  // namespace
}  // namespace mf::io
