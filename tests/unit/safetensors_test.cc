// safetensors reading and writing: golden bytes, round trips, one test per error (the same bad files are shown to
// the safetensors package too), and the safetensors package in both directions.
#include "minifloat/safetensors.h"

#include <gtest/gtest.h>

#include <array>
#include <filesystem>
#include <stdexcept>
#include <sstream>
#include <string>
#include <vector>

#include "io_test_util.h"
#include "minifloat/npy.h"

namespace mf::io {
namespace {

using namespace mf::io::testing;
using Shape = std::vector<std::uint64_t>;

// A file from its header text and data, with the length prefix computed and no padding added.
std::string st_bytes(std::string_view header, std::string_view data = "") {
  return str(le(header.size(), 8), header, data);
}

// One header entry: "name":{"dtype":..,"shape":..,"data_offsets":[begin,end]}.
std::string entry(std::string_view name, std::string_view dtype, std::string_view shape, std::uint64_t begin,
                  std::uint64_t end) {
  return str('"', name, "\":{\"dtype\":\"", dtype, "\",\"shape\":", shape, ",\"data_offsets\":[", begin, ",", end,
             "]}");
}

TEST(DType, NamesBitsAndSizes) {
  EXPECT_EQ(all_dtypes.size(), 19u);
  for (const DTypeInfo& info : all_dtypes) {
    EXPECT_EQ(find_dtype(info.name), info.dtype);
    EXPECT_EQ(dtype_name(info.dtype), info.name);
  }
  EXPECT_EQ(dtype_bits(DType::F4), 4);
  EXPECT_EQ(dtype_bits(DType::F6_E3M2), 6);
  EXPECT_EQ(dtype_bits(DType::BOOL), 8);
  EXPECT_EQ(dtype_bits(DType::BF16), 16);
  EXPECT_EQ(dtype_bits(DType::U64), 64);
  EXPECT_FALSE(find_dtype("f32").has_value());
  EXPECT_FALSE(find_dtype("C64").has_value());

  EXPECT_EQ(tensor_size(DType::F32, Shape{3, 4}).bytes, 48u);
  EXPECT_EQ(tensor_size(DType::F32, Shape{}).bytes, 4u);  // a scalar
  EXPECT_EQ(tensor_size(DType::F4, Shape{2, 3}).bytes, 3u);
  EXPECT_EQ(tensor_size(DType::F6_E2M3, Shape{4}).bytes, 3u);
  EXPECT_EQ(tensor_size(DType::F4, Shape{3}).error, SizeError::not_whole_bytes);
  EXPECT_EQ(tensor_size(DType::F6_E3M2, Shape{2}).error, SizeError::not_whole_bytes);
  EXPECT_EQ(tensor_size(DType::U8, Shape{1ull << 32, 1ull << 32}).error, SizeError::overflow);
  EXPECT_EQ(tensor_size(DType::U16, Shape{1ull << 32, 1ull << 31}).error, SizeError::overflow);    // bits overflow
  EXPECT_EQ(tensor_size(DType::U8, Shape{1ull << 32, 1ull << 32, 0}).error, SizeError::overflow);  // checked in order
  EXPECT_EQ(tensor_size(DType::U16, Shape{0, 1ull << 32, 1ull << 31}).bytes, 0u);
}

// Computed by hand: the JSON below is 85 bytes (16 + 15 + 1 + 4 + 15 + 12 + 20 + 2), padded with 3 spaces to 88 =
// 0x58; the data section is the two f32 values; 8 + 88 + 8 = 104 bytes in all.
TEST(Safetensors, WritesGoldenBytes) {
  const std::string json = R"({"__metadata__":{"format":"pt"},"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  ASSERT_EQ(json.size(), 85u);
  const std::string expected = std::string("\x58\0\0\0\0\0\0\0", 8) + json + "   " +
                               std::string("\x00\x00\x80\x3f\x00\x00\x00\x40", 8);  // 1.0f, 2.0f
  ASSERT_EQ(expected.size(), 104u);

  TempDir dir;
  const Shape shape{2};
  const Bytes data = to_bytes(expected.substr(96));
  const std::array<TensorView, 1> tensors{{{"w", DType::F32, shape, data}}};
  write_safetensors(dir / "g.safetensors", tensors, {{"format", "pt"}});
  EXPECT_EQ(read_file(dir / "g.safetensors"), expected);
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"g.safetensors"});
}

// A hand-made file: header entries out of data order, an F4 tensor with an odd last dim, a scalar, an empty tensor,
// no padding, extra whitespace, and an extra entry key (ignored, as the safetensors package does).
TEST(Safetensors, ReadsGoldenBytes) {
  TempDir dir;
  const std::string header = str("{\n  ", entry("s", "U16", "[]", 3, 5), ",\n  ", entry("e", "BF16", "[0, 7]", 3, 3),
                                 ",\n  ", R"("q":{"dtype":"F4","shape":[2,3],"data_offsets":[0,3],"extra":1})",
                                 ",\n  \"__metadata__\": {\"format\": \"mf\", \"note\": \"\\u00e9\\n\"}\n}");
  write_file(dir / "h.safetensors", st_bytes(header, "\x12\x34\x56\x78\x9a"));
  const SafetensorsFile f = read_safetensors(dir / "h.safetensors");

  EXPECT_EQ(f.metadata(), (std::map<std::string, std::string>{{"format", "mf"}, {"note", "\xc3\xa9\n"}}));
  ASSERT_EQ(f.tensors().size(), 3u);
  const SafetensorsTensor &q = f.tensors()[0], &e = f.tensors()[1], &s = f.tensors()[2];
  EXPECT_EQ(q.name, "q");
  EXPECT_EQ(q.dtype, DType::F4);
  EXPECT_EQ(q.shape, (Shape{2, 3}));
  EXPECT_EQ(to_string(f.bytes(q)), "\x12\x34\x56");
  EXPECT_EQ(e.name, "e");  // empty at offset 3: before "s", which also starts at 3
  EXPECT_EQ(e.shape, (Shape{0, 7}));
  EXPECT_TRUE(f.bytes(e).empty());
  EXPECT_EQ(s.name, "s");
  EXPECT_EQ(s.shape, Shape{});
  EXPECT_EQ(to_string(f.bytes(s)), "\x78\x9a");
  EXPECT_EQ(f.find("s"), &s);
  EXPECT_EQ(f.find("missing"), nullptr);
  const TensorView v = f.view(s);
  EXPECT_EQ(v.name, "s");
  EXPECT_EQ(v.data.data(), f.bytes(s).data()) << "views point into the file's storage";
}

TEST(Safetensors, EmptyFileHasAnEightByteHeader) {
  TempDir dir;
  write_safetensors(dir / "e.safetensors", {});
  EXPECT_EQ(read_file(dir / "e.safetensors"), str(le(8, 8), "{}      "));
  const SafetensorsFile f = read_safetensors(dir / "e.safetensors");
  EXPECT_TRUE(f.tensors().empty());
  EXPECT_TRUE(f.metadata().empty());
}

// Every dtype with a few shapes (F4/F6 only where they fill whole bytes), tricky metadata; reading then writing the
// views gives the same bytes again.
TEST(Safetensors, RoundTripsEveryDtype) {
  TempDir dir;
  std::vector<std::pair<std::string, std::pair<DType, Shape>>> specs;
  for (const DTypeInfo& info : all_dtypes) {
    const bool packed = info.bits < 8;
    for (const Shape& shape : {Shape{}, Shape{0}, Shape{4}, Shape{3, 8}, Shape{2, 0, 5}}) {
      if (packed && tensor_size(info.dtype, shape).error) continue;
      specs.push_back({str(info.name, ".", specs.size()), {info.dtype, shape}});
    }
  }
  std::vector<Bytes> data;
  std::vector<TensorView> views;
  for (const auto& [name, spec] : specs) data.push_back(pattern_bytes(tensor_size(spec.first, spec.second).bytes, 7));
  for (std::size_t i = 0; i < specs.size(); ++i) {
    views.push_back({specs[i].first, specs[i].second.first, specs[i].second.second, data[i]});
  }
  const std::map<std::string, std::string> metadata{{"quote\"back\\slash", "line\nbreak\ttab"}, {"", "\xe2\x82\xac"}};
  write_safetensors(dir / "a.safetensors", views, metadata);
  const std::string bytes = read_file(dir / "a.safetensors");
  const std::size_t header_len = static_cast<unsigned char>(bytes[0]) | static_cast<unsigned char>(bytes[1]) << 8;
  EXPECT_EQ(header_len % 8, 0u);
  const std::string header = bytes.substr(8, header_len);
  EXPECT_EQ(header.find_last_not_of(' '), header.rfind('}')) << "padded with spaces after the closing brace";
  EXPECT_LT(header_len - header.rfind('}'), 9u);

  const SafetensorsFile f = read_safetensors(dir / "a.safetensors");
  EXPECT_EQ(f.metadata(), metadata);
  ASSERT_EQ(f.tensors().size(), specs.size());
  for (std::size_t i = 0; i < specs.size(); ++i) {
    const SafetensorsTensor& t = f.tensors()[i];
    EXPECT_EQ(t.name, specs[i].first);
    EXPECT_EQ(t.dtype, specs[i].second.first);
    EXPECT_EQ(t.shape, specs[i].second.second);
    EXPECT_EQ(Bytes(f.bytes(t).begin(), f.bytes(t).end()), data[i]) << t.name;
  }
  write_safetensors(dir / "b.safetensors", f.views(), f.metadata());
  EXPECT_EQ(read_file(dir / "a.safetensors"), read_file(dir / "b.safetensors"));
}

// ---- one test per read error; the same files are shown to the safetensors package below ----

struct BadFile {
  std::string name;
  std::string bytes;
  IoErrc code;
  std::string message;  // what the message must contain after "model.safetensors: "
};

void PrintTo(const BadFile& bad, std::ostream* os) { *os << bad.name; }

std::vector<BadFile> bad_files() {
  const std::string f32x2 = entry("a", "F32", "[2]", 0, 8);
  return {
      {"ShorterThan8Bytes", "{}", IoErrc::truncated, "file is 2 bytes, shorter than the 8-byte header length"},
      {"HeaderTooLarge", st_bytes("{}").replace(0, 8, le(100'000'001, 8)), IoErrc::header_too_large,
       "header length 100000001 is over the limit of 100000000"},
      {"HeaderAtTheLimitPastEnd", st_bytes("{}").replace(0, 8, le(100'000'000, 8)), IoErrc::header_past_end,
       "header length 100000000 runs past the end of the 10-byte file"},
      {"HeaderPastEnd", st_bytes("{}").replace(0, 8, le(3, 8)), IoErrc::header_past_end,
       "header length 3 runs past the end of the 10-byte file"},
      {"EmptyHeader", st_bytes(""), IoErrc::invalid_json, "header is not valid JSON"},
      {"BadJson", st_bytes(R"({"a":{"dtype":"F32",)"), IoErrc::invalid_json, "header is not valid JSON"},
      {"NotUtf8", st_bytes("{\"\xff\":1}"), IoErrc::invalid_json, "header is not valid JSON"},
      {"HeaderNotObject", st_bytes("[1, 2]"), IoErrc::header_not_object, "header is not a JSON object"},
      {"DuplicateTensor", st_bytes(str("{", f32x2, ",", entry("a", "F32", "[2]", 8, 16), "}"), std::string(16, 0)),
       IoErrc::duplicate_key, "key 'a' appears twice"},
      {"DuplicateMetadataKey", st_bytes(R"({"__metadata__":{"k":"1","k":"2"}})"), IoErrc::duplicate_key,
       "key 'k' appears twice"},
      {"MetadataNotObject", st_bytes(R"({"__metadata__":["k","v"]})"), IoErrc::invalid_metadata,
       "__metadata__ is not an object"},
      {"MetadataValueNotString", st_bytes(R"({"__metadata__":{"k":1}})"), IoErrc::invalid_metadata,
       "__metadata__ value of 'k' is a number, not a string"},
      {"EntryNotObject", st_bytes(R"({"a":[0,8]})"), IoErrc::invalid_tensor_entry,
       "tensor 'a': entry is not an object"},
      {"EntryWithoutDtype", st_bytes(R"({"a":{"shape":[2],"data_offsets":[0,8]}})", std::string(8, 0)),
       IoErrc::invalid_tensor_entry, "tensor 'a': entry has no \"dtype\""},
      {"DtypeNotString", st_bytes(R"({"a":{"dtype":32,"shape":[2],"data_offsets":[0,8]}})", std::string(8, 0)),
       IoErrc::invalid_tensor_entry, "tensor 'a': dtype is not a string"},
      {"OffsetsNotAPair", st_bytes(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[8]}})", std::string(8, 0)),
       IoErrc::invalid_tensor_entry, "tensor 'a': data_offsets [8] is not [begin, end] with begin <= end"},
      {"OffsetsBackwards", st_bytes(str("{", entry("a", "U8", "[0]", 8, 0), "}"), std::string(8, 0)),
       IoErrc::invalid_tensor_entry, "tensor 'a': data_offsets [8,0] is not [begin, end] with begin <= end"},
      {"UnknownDtype", st_bytes(str("{", entry("a", "C64", "[1]", 0, 8), "}"), std::string(8, 0)),
       IoErrc::unknown_dtype, "tensor 'a': unknown dtype \"C64\""},
      {"ShapeNotList", st_bytes(str("{", entry("a", "F32", "2", 0, 8), "}"), std::string(8, 0)), IoErrc::invalid_shape,
       "tensor 'a': shape is not a list"},
      {"ShapeNegative", st_bytes(str("{", entry("a", "F32", "[2,-1]", 0, 8), "}"), std::string(8, 0)),
       IoErrc::invalid_shape, "tensor 'a': shape [2,-1] is not all non-negative integers"},
      {"ShapeNotInteger", st_bytes(str("{", entry("a", "F32", "[2.0]", 0, 8), "}"), std::string(8, 0)),
       IoErrc::invalid_shape, "tensor 'a': shape [2.0] is not all non-negative integers"},
      {"NestedTooDeep",
       st_bytes(str("{", entry("a", "F32", str(std::string(100'000, '['), std::string(100'000, ']')), 0, 4), "}"),
                std::string(4, 0)),
       IoErrc::invalid_json, "header nests deeper than 64"},
      {"ShapeNested", st_bytes(str("{", entry("a", "F32", "[[2]]", 0, 8), "}"), std::string(8, 0)),
       IoErrc::invalid_shape, "tensor 'a': shape [[2]] is not all non-negative integers"},
      {"SizeOverflow", st_bytes(str("{", entry("a", "F32", "[4294967296,4294967296]", 0, 0), "}")),
       IoErrc::size_overflow, "tensor 'a': shape [4294967296, 4294967296] x F32 overflows 64 bits"},
      {"NotWholeBytes", st_bytes(str("{", entry("a", "F4", "[3]", 0, 2), "}"), std::string(2, 0)),
       IoErrc::not_whole_bytes, "tensor 'a': shape [3] x F4 is not a whole number of bytes"},
      {"SizeMismatch", st_bytes(str("{", entry("w", "F32", "[3,4]", 0, 10), "}"), std::string(10, 0)),
       IoErrc::size_mismatch, "tensor 'w': data_offsets [0, 10] do not match shape [3, 4] x F32 = 48 bytes"},
      {"OffsetsOutOfRange", st_bytes(str("{", f32x2, "}"), std::string(4, 0)), IoErrc::offsets_out_of_range,
       "tensor 'a': data_offsets [0, 8] run past the 4-byte data section"},
      {"GapBefore", st_bytes(str("{", entry("a", "F32", "[1]", 4, 8), "}"), std::string(8, 0)), IoErrc::offsets_gap,
       "tensor 'a': data_offsets [4, 8] leave bytes [0, 4) before it unused"},
      {"GapBetween", st_bytes(str("{", entry("b", "U8", "[2]", 10, 12), ",", f32x2, "}"), std::string(12, 0)),
       IoErrc::offsets_gap, "tensor 'b': data_offsets [10, 12] leave bytes [8, 10) before it unused"},
      {"Overlap", st_bytes(str("{", f32x2, ",", entry("b", "F32", "[2]", 4, 12), "}"), std::string(12, 0)),
       IoErrc::offsets_overlap, "tensor 'b': data_offsets [4, 12] overlap tensor 'a', which ends at 8"},
      {"EmptyTensorInsideAnother",
       st_bytes(str("{", f32x2, ",", entry("e", "F32", "[0]", 4, 4), "}"), std::string(8, 0)), IoErrc::offsets_overlap,
       "tensor 'e': data_offsets [4, 4] overlap tensor 'a', which ends at 8"},
      {"TrailingBytes", st_bytes(str("{", f32x2, "}"), std::string(10, 0)), IoErrc::trailing_bytes,
       "2 bytes after the last tensor (data section is 10 bytes, tensors cover 8)"},
      {"TrailingBytesNoTensors", st_bytes("{}", "x"), IoErrc::trailing_bytes, "1 bytes after the last tensor"},
  };
}

// Bad files that the safetensors package (0.8) accepts:
// - a key repeated in __metadata__: its serde map keeps the last value; a silent choice is worse than an error.
// - C64: the package added complex64, which is not among the dtypes of docs/spec.md#safetensors.
const std::string kStricterThanPackage = "accepted DuplicateMetadataKey\naccepted UnknownDtype\n";

class SafetensorsError : public ::testing::TestWithParam<BadFile> {};

TEST_P(SafetensorsError, IsRejectedWithItsNamedError) {
  const BadFile& bad = GetParam();
  TempDir dir;
  write_file(dir / "model.safetensors", bad.bytes);
  expect_io_error([&] { read_safetensors(dir / "model.safetensors"); }, bad.code,
                  str("model.safetensors: ", bad.message));
  // The headers-only reading runs the same checks (the data section measured by the file's size, not read).
  expect_io_error([&] { read_safetensors_header(dir / "model.safetensors"); }, bad.code,
                  str("model.safetensors: ", bad.message));
}

// A file whose data section is a hole (truncate past the header, as the replicas of python/tests/header_replica.py
// are): the headers-only reading lists what read_safetensors lists, and refuses, by name, to hand out data.
TEST(SafetensorsHeadersOnly, ListsTheTensorsAndReadsNoData) {
  TempDir dir;
  const std::string header = str("{", entry("b", "BF16", "[2,3]", 8, 20), ",", entry("a", "F32", "[2]", 0, 8), "}");
  write_file(dir / "m.safetensors", st_bytes(header));
  std::filesystem::resize_file(dir / "m.safetensors", 8 + header.size() + 20);
  const SafetensorsFile full = read_safetensors(dir / "m.safetensors");
  const SafetensorsFile head = read_safetensors_header(dir / "m.safetensors");
  ASSERT_EQ(head.tensors().size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(head.tensors()[i].name, full.tensors()[i].name);
    EXPECT_EQ(head.tensors()[i].shape, full.tensors()[i].shape);
    EXPECT_EQ(head.tensors()[i].begin, full.tensors()[i].begin);
    EXPECT_EQ(head.tensors()[i].end, full.tensors()[i].end);
  }
  EXPECT_EQ(head.data_size(), 20u);
  EXPECT_EQ(head.header_size(), 8 + header.size());
  EXPECT_TRUE(full.has_data());
  EXPECT_FALSE(head.has_data());
  EXPECT_EQ(head.find("b")->dtype, DType::BF16);
  try {
    (void)head.bytes(*head.find("b"));
    ADD_FAILURE() << "bytes() of a headers-only file did not throw";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("tensor 'b': its data was asked for, but the file was read headers-only"),
              std::string::npos)
        << e.what();
  }
  // One byte short of the offsets: the same error as the mapped reading's.
  std::filesystem::resize_file(dir / "m.safetensors", 8 + header.size() + 19);
  expect_io_error([&] { read_safetensors_header(dir / "m.safetensors"); }, IoErrc::offsets_out_of_range,
                  "tensor 'b': data_offsets [8, 20] run past the 19-byte data section");
}

INSTANTIATE_TEST_SUITE_P(Read, SafetensorsError, ::testing::ValuesIn(bad_files()),
                         [](const ::testing::TestParamInfo<BadFile>& info) { return info.param.name; });

TEST(SafetensorsOpenError, MissingFileAndDirectory) {
  TempDir dir;
  expect_io_error([&] { read_safetensors(dir / "missing.safetensors"); }, IoErrc::open_failed, "cannot open");
  expect_io_error([&] { read_safetensors(dir.path()); }, IoErrc::open_failed, "not a regular file");
}

// ---- write errors: checked before anything is created; an existing file is untouched ----

class SafetensorsWriteError : public ::testing::Test {
 protected:
  void expect_write_error(std::span<const TensorView> tensors, IoErrc code, std::string_view part,
                          const std::map<std::string, std::string>& metadata = {}) {
    write_file(dir_ / "out.safetensors", "old");
    expect_io_error([&] { write_safetensors(dir_ / "out.safetensors", tensors, metadata); }, code, part);
    EXPECT_EQ(read_file(dir_ / "out.safetensors"), "old");
    EXPECT_EQ(dir_.entries(), std::vector<std::string>{"out.safetensors"});
  }
  TempDir dir_;
  Shape two_{2};
  Bytes eight_ = Bytes(8);
};

TEST_F(SafetensorsWriteError, ReservedName) {
  const std::array<TensorView, 1> t{{{"__metadata__", DType::F32, two_, eight_}}};
  expect_write_error(t, IoErrc::invalid_name, "tensor '__metadata__': name is reserved");
}

TEST_F(SafetensorsWriteError, NameNotUtf8) {
  const std::array<TensorView, 1> t{{{"bad\xff", DType::F32, two_, eight_}}};
  expect_write_error(t, IoErrc::invalid_name, "name is not UTF-8");
}

TEST_F(SafetensorsWriteError, DuplicateName) {
  const std::array<TensorView, 2> t{{{"a", DType::F32, two_, eight_}, {"a", DType::F32, two_, eight_}}};
  expect_write_error(t, IoErrc::duplicate_key, "tensor 'a': name given twice");
}

TEST_F(SafetensorsWriteError, DataSizeDoesNotMatchShape) {
  const std::array<TensorView, 1> t{{{"a", DType::F16, two_, eight_}}};
  expect_write_error(t, IoErrc::size_mismatch, "tensor 'a': 8 bytes of data do not match shape [2] x F16 = 4 bytes");
}

TEST_F(SafetensorsWriteError, NotWholeBytes) {
  const Shape three{3};
  const std::array<TensorView, 1> t{{{"a", DType::F4, three, Bytes(2)}}};
  expect_write_error(t, IoErrc::not_whole_bytes, "shape [3] x F4 is not a whole number of bytes");
}

TEST_F(SafetensorsWriteError, SizeOverflow) {
  const Shape huge{1ull << 40, 1ull << 40};
  const std::array<TensorView, 1> t{{{"a", DType::U8, huge, {}}}};
  expect_write_error(t, IoErrc::size_overflow, "overflows 64 bits");
}

TEST_F(SafetensorsWriteError, MetadataNotUtf8) {
  expect_write_error({}, IoErrc::invalid_metadata, "__metadata__ entry 'k' is not UTF-8", {{"k", "\xc3"}});
}

// {"__metadata__":{"k":"..."}} is 25 bytes around the value: one byte over the limit, padded to 100000008.
TEST_F(SafetensorsWriteError, HeaderTooLarge) {
  expect_write_error({}, IoErrc::header_too_large, "header of 100000008 bytes is over the limit",
                     {{"k", std::string(kMaxSafetensorsHeader - 24, 'x')}});
}

TEST(SafetensorsWriteFailure, MissingDirectory) {
  TempDir dir;
  expect_io_error([&] { write_safetensors(dir / "no/dir/a.safetensors", {}); }, IoErrc::write_failed,
                  "cannot create a temporary file");
}

TEST(SafetensorsWriteFailure, FailedRenameRemovesTheTemporaryFile) {
  TempDir dir;
  fs::create_directory(dir / "target.safetensors");
  expect_io_error([&] { write_safetensors(dir / "target.safetensors", {}); }, IoErrc::write_failed, "rename failed");
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"target.safetensors"});
}

// ---- the safetensors package, both directions ----

constexpr const char* kSafetensorsScript = R"PY(
import sys
import numpy as np
from safetensors import TensorSpec, deserialize, safe_open, serialize_file
from safetensors.numpy import load_file, save_file

mode, d = sys.argv[1], sys.argv[2]
NUMPY = {"BOOL": np.bool_, "U8": np.uint8, "I8": np.int8, "U16": np.uint16, "I16": np.int16, "F16": np.float16,
         "U32": np.uint32, "I32": np.int32, "F32": np.float32, "U64": np.uint64, "I64": np.int64, "F64": np.float64}

def manifest():
    out = {}
    for line in open(f"{d}/manifest.txt"):
        name, dtype, *dims = line.split()
        out[name] = (dtype, [int(x) for x in dims], open(f"{d}/{name}.bin", "rb").read())
    return out

def check_ours():
    want, problems = manifest(), []
    got = dict(deserialize(open(f"{d}/ours.safetensors", "rb").read()))
    if set(got) != set(want):
        problems.append(f"names {sorted(got)} != {sorted(want)}")
    for name, (dtype, shape, raw) in want.items():
        g = got.get(name, {})
        if (g.get("dtype"), list(g.get("shape", [])), bytes(g.get("data", b""))) != (dtype, shape, raw):
            problems.append(f"{name}: deserialize gives {g.get('dtype')} {g.get('shape')}")
    with safe_open(f"{d}/ours.safetensors", framework="numpy") as f:
        if f.metadata() != {"format": "mf", "k2": "v2"}:
            problems.append(f"metadata {f.metadata()}")
    for name, a in load_file(f"{d}/ours_np.safetensors").items():
        dtype, shape, raw = want[name]
        if a.dtype != NUMPY[dtype] or list(a.shape) != shape or a.tobytes() != raw:
            problems.append(f"{name}: load_file gives {a.dtype} {a.shape}")
    print("\n".join(problems))
    return not problems

def make():
    rng = np.random.default_rng(0)
    lines, arrays, keep, specs = [], {}, [], {}
    for i, (dtype, np_type) in enumerate(NUMPY.items()):
        shape = [(2, 3), (5,), (), (0, 4)][i % 4]
        a = (rng.integers(0, 2, size=shape) if dtype == "BOOL" else rng.integers(0, 100, size=shape)).astype(np_type)
        arrays[f"np.{dtype}"] = a
        lines.append((f"np.{dtype}", dtype, list(a.shape), a.tobytes()))
    save_file(arrays, f"{d}/py_np.safetensors", metadata={"format": "np"})
    packed = [("bfloat16", "BF16", (2, 3), (2, 3)), ("float8_e4m3fn", "F8_E4M3", (7,), (7,)),
              ("float8_e5m2", "F8_E5M2", (3, 1), (3, 1)), ("float8_e8m0fnu", "F8_E8M0", (4,), (4,)),
              ("float4_e2m1fn_x2", "F4", (2, 3), (2, 6))]  # name, dtype, storage shape, logical shape
    for name, dtype, storage, logical in packed:
        raw = rng.integers(0, 256, size=int(np.prod(storage)) * (2 if dtype == "BF16" else 1), dtype=np.uint8)
        keep.append(raw)
        specs[f"raw.{dtype}"] = TensorSpec(dtype=name, shape=storage, data_ptr=raw.ctypes.data, data_len=raw.nbytes)
        lines.append((f"raw.{dtype}", dtype, list(logical), raw.tobytes()))
    serialize_file(specs, f"{d}/py_raw.safetensors", metadata={"format": "raw"})
    with open(f"{d}/manifest.txt", "w") as m:
        for name, dtype, shape, raw in lines:
            m.write(" ".join([name, dtype] + [str(x) for x in shape]) + "\n")
            open(f"{d}/{name}.bin", "wb").write(raw)
    return True

def accepts_bad():
    for name in open(f"{d}/bad.txt").read().split():
        try:
            deserialize(open(f"{d}/{name}.safetensors", "rb").read())
            print(f"accepted {name}")
        except Exception:
            pass
    return True

sys.exit(0 if {"check": check_ours, "make": make, "bad": accepts_bad}[mode]() else 1)
)PY";

class SafetensorsPython : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(python_has(dir_, "numpy", "numpy"));
    ASSERT_TRUE(python_has(dir_, "safetensors.numpy", "safetensors"));
    write_file(dir_ / "st.py", kSafetensorsScript);
  }
  RunResult run(std::string_view mode) {
    return run_python(dir_ / "st.py", str(mode, " '", dir_.path().string(), "'"));
  }
  TempDir dir_;
};

TEST_F(SafetensorsPython, PackageReadsOurFiles) {
  struct Spec {
    std::string name;
    DType dtype;
    Shape shape;
  };
  std::vector<Spec> specs;
  for (const DTypeInfo& info : all_dtypes) {
    specs.push_back({str("t.", info.name), info.dtype, info.bits == 6 ? Shape{4} : Shape{2, 3}});
  }
  specs.push_back({"t.scalar", DType::F32, {}});
  specs.push_back({"t.empty", DType::BF16, {0, 4}});

  std::vector<Bytes> data;
  std::vector<TensorView> all, numpy_only;
  std::string manifest;
  for (const Spec& spec : specs) {
    data.push_back(pattern_bytes(tensor_size(spec.dtype, spec.shape).bytes, static_cast<std::uint32_t>(data.size())));
    if (spec.dtype == DType::BOOL) {
      for (auto& b : data.back()) b &= std::byte{1};
    }
    write_file(dir_ / (spec.name + ".bin"), to_string(data.back()));
    manifest += str(spec.name, " ", dtype_name(spec.dtype));
    for (const std::uint64_t dim : spec.shape) manifest += str(" ", dim);
    manifest += "\n";
    all.push_back({spec.name, spec.dtype, spec.shape, data.back()});  // moving `data` keeps its elements' buffers
    if (npy_descr(spec.dtype)) numpy_only.push_back(all.back());      // the dtypes that numpy has
  }
  write_file(dir_ / "manifest.txt", manifest);
  write_safetensors(dir_ / "ours.safetensors", all, {{"format", "mf"}, {"k2", "v2"}});
  write_safetensors(dir_ / "ours_np.safetensors", numpy_only);
  const RunResult r = run("check");
  EXPECT_EQ(r.status, 0) << "the safetensors package disagrees with our files:\n" << r.output;
}

TEST_F(SafetensorsPython, WeReadThePackagesFiles) {
  const RunResult r = run("make");
  ASSERT_EQ(r.status, 0) << r.output;
  const SafetensorsFile np_file = read_safetensors(dir_ / "py_np.safetensors");
  const SafetensorsFile raw_file = read_safetensors(dir_ / "py_raw.safetensors");
  EXPECT_EQ(np_file.metadata(), (std::map<std::string, std::string>{{"format", "np"}}));
  EXPECT_EQ(raw_file.metadata(), (std::map<std::string, std::string>{{"format", "raw"}}));
  std::istringstream manifest(read_file(dir_ / "manifest.txt"));
  std::string line;
  int checked = 0;
  while (std::getline(manifest, line)) {
    std::istringstream fields(line);
    std::string name, dtype;
    fields >> name >> dtype;
    Shape shape;
    for (std::uint64_t dim = 0; fields >> dim;) shape.push_back(dim);
    const SafetensorsTensor* t = (name.starts_with("np.") ? np_file : raw_file).find(name);
    ASSERT_NE(t, nullptr) << name;
    EXPECT_EQ(dtype_name(t->dtype), dtype) << name;
    EXPECT_EQ(t->shape, shape) << name;
    EXPECT_EQ(to_string((name.starts_with("np.") ? np_file : raw_file).bytes(*t)), read_file(dir_ / (name + ".bin")));
    ++checked;
  }
  EXPECT_EQ(checked, 17);
  // Same layout and header as the package wrote (one metadata key, so its order cannot differ).
  for (const char* file : {"py_np.safetensors", "py_raw.safetensors"}) {
    const SafetensorsFile f = read_safetensors(dir_ / file);
    write_safetensors(dir_ / "rewritten.safetensors", f.views(), f.metadata());
    EXPECT_EQ(read_file(dir_ / "rewritten.safetensors"), read_file(dir_ / file)) << file;
  }
}

// Every file rejected above is rejected by the package too, except where this reader is knowingly stricter.
TEST_F(SafetensorsPython, PackageRejectsOurBadFiles) {
  std::string names;
  for (const BadFile& bad : bad_files()) {
    write_file(dir_ / (bad.name + ".safetensors"), bad.bytes);
    names += bad.name + "\n";
  }
  write_file(dir_ / "bad.txt", names);
  const RunResult r = run("bad");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(r.output, kStricterThanPackage);
}

}  // namespace
}  // namespace mf::io
