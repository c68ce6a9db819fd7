// .npy reading and writing: golden bytes, round trips, one test per error, and numpy itself in both directions.
#include "minifloat/npy.h"

#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <string>
#include <vector>

#include "io_test_util.h"

namespace mf::io {
namespace {

using namespace mf::io::testing;

constexpr std::array<DType, 12> kNpyDtypes{DType::BOOL, DType::U8,  DType::I8,  DType::U16, DType::I16, DType::U32,
                                           DType::I32,  DType::U64, DType::I64, DType::F16, DType::F32, DType::F64};

// A .npy file from its parts, with no padding added: what a test writes is exactly what the reader sees.
std::string npy_bytes(std::string_view header, std::string_view data, int major = 1) {
  return std::string("\x93NUMPY") + static_cast<char>(major) + '\0' + le(header.size(), major == 1 ? 2 : 4) +
         std::string(header) + std::string(data);
}

std::string f32_bytes(std::initializer_list<float> values) {
  std::string out(values.size() * 4, '\0');
  std::memcpy(out.data(), values.begin(), out.size());  // the tests run on little-endian machines
  return out;
}

// Test data for a dtype: pattern bytes, with BOOL kept to 0 and 1 as NumPy writes it.
Bytes sample_data(DType dtype, std::span<const std::uint64_t> shape, std::uint32_t seed) {
  Bytes data = pattern_bytes(tensor_size(dtype, shape).bytes, seed);
  if (dtype == DType::BOOL) {
    for (auto& b : data) b &= std::byte{1};
  }
  return data;
}

TEST(Npy, DescrsAreNumpysLittleEndianNames) {
  EXPECT_EQ(npy_descr(DType::F32), "<f4");
  EXPECT_EQ(npy_descr(DType::F16), "<f2");
  EXPECT_EQ(npy_descr(DType::BOOL), "|b1");
  EXPECT_EQ(npy_descr(DType::U8), "|u1");
  EXPECT_EQ(npy_descr(DType::I64), "<i8");
  for (const DType t : {DType::BF16, DType::F8_E4M3, DType::F8_E5M2, DType::F8_E8M0, DType::F4, DType::F6_E2M3}) {
    EXPECT_FALSE(npy_descr(t).has_value()) << dtype_name(t);
  }
}

// np.save([1, 2, 3] as f32), computed by hand: the dict is 57 chars, plus 21 - 1 spaces of room for the first dim,
// plus a newline = 78; with the 10-byte prefix that is 88, padded to 128, so the header length is 118 = 0x76.
TEST(Npy, WritesNumpysBytesForATinyArray) {
  const std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }";
  ASSERT_EQ(dict.size(), 57u);
  const std::string header = dict + std::string(118 - 1 - dict.size(), ' ') + "\n";
  const std::string expected = std::string("\x93NUMPY\x01\x00\x76\x00", 10) + header + f32_bytes({1, 2, 3});
  ASSERT_EQ(expected.size(), 140u);

  TempDir dir;
  const std::array<std::uint64_t, 1> shape{3};
  write_npy(dir / "a.npy", DType::F32, shape, to_bytes(f32_bytes({1, 2, 3})));
  EXPECT_EQ(read_file(dir / "a.npy"), expected);

  const NpyArray a = read_npy(dir / "a.npy");
  EXPECT_EQ(a.dtype, DType::F32);
  EXPECT_EQ(a.shape, std::vector<std::uint64_t>{3});
  EXPECT_EQ(to_string(a.data), f32_bytes({1, 2, 3}));
}

TEST(Npy, RoundTripsEveryDtypeAndShape) {
  TempDir dir;
  const std::vector<std::vector<std::uint64_t>> shapes{{}, {0}, {7}, {2, 3, 4}, {3, 0, 2}};
  std::uint32_t seed = 0;
  for (const DType dtype : kNpyDtypes) {
    for (const auto& shape : shapes) {
      const Bytes data = sample_data(dtype, shape, ++seed);
      write_npy(dir / "x.npy", dtype, shape, data);
      const NpyArray a = read_npy(dir / "x.npy");
      EXPECT_EQ(a.dtype, dtype);
      EXPECT_EQ(a.shape, shape);
      EXPECT_EQ(a.data, data) << dtype_name(dtype);
      EXPECT_EQ(read_file(dir / "x.npy").size() % 64, data.size() % 64) << "data starts on a 64-byte boundary";
    }
  }
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"x.npy"}) << "no temporary files are left";
}

TEST(Npy, ReadsVersions2And3) {
  TempDir dir;
  const std::string header = "{'descr': '<i2', 'fortran_order': False, 'shape': (2,), }\n";
  for (const int major : {2, 3}) {
    write_file(dir / "v.npy", npy_bytes(header, std::string("\x01\x00\x02\x00", 4), major));
    const NpyArray a = read_npy(dir / "v.npy");
    EXPECT_EQ(a.dtype, DType::I16);
    EXPECT_EQ(a.shape, std::vector<std::uint64_t>{2});
    EXPECT_EQ(a.data.size(), 4u);
  }
}

// Python literal spellings that numpy's ast.literal_eval accepts.
TEST(Npy, AcceptsOtherLiteralSpellings) {
  TempDir dir;
  const std::array<std::pair<const char*, std::vector<std::uint64_t>>, 5> cases{{
      {R"({"shape": (2, 3), "fortran_order": False, "descr": "|u1"})", {2, 3}},
      {"{'descr':'|u1','fortran_order':False,'shape':(2,3,)}", {2, 3}},
      {"  {\n 'descr' : '|u1' ,\t'fortran_order' : False , 'shape' : ( 6 , ) , }  \n", {6}},
      {"{'descr': '|u1', 'fortran_order': False, 'shape': (1, 6)}", {1, 6}},
      {"{'descr': '|u1', 'fortran_order': False, 'shape': (), }", {}},
  }};
  for (const auto& [header, shape] : cases) {
    write_file(dir / "s.npy", npy_bytes(header, std::string(shape.empty() ? 1 : 6, '\x05')));
    EXPECT_EQ(read_npy(dir / "s.npy").shape, shape) << header;
  }
}

// ---- one test per read error ----

class NpyError : public ::testing::Test {
 protected:
  // Writes `bytes` and expects read_npy to fail with `code` and a message containing `part` and the file name.
  void expect_read_error(const std::string& bytes, IoErrc code, std::string_view part) {
    write_file(dir_ / "bad.npy", bytes);
    expect_io_error([&] { read_npy(dir_ / "bad.npy"); }, code, part);
    expect_io_error([&] { read_npy(dir_ / "bad.npy"); }, code, "bad.npy: ");
  }
  static std::string header(std::string_view descr, std::string_view order, std::string_view shape) {
    return str("{'descr': '", descr, "', 'fortran_order': ", order, ", 'shape': ", shape, ", }\n");
  }
  TempDir dir_;
};

TEST_F(NpyError, MissingFile) {
  expect_io_error([&] { read_npy(dir_ / "missing.npy"); }, IoErrc::open_failed, "cannot open");
}

TEST_F(NpyError, NotARegularFile) {
  expect_io_error([&] { read_npy(dir_.path()); }, IoErrc::open_failed, "not a regular file");
}

TEST_F(NpyError, ShorterThanTheMagicString) {
  expect_read_error("\x93NUM", IoErrc::truncated, "file ends in the magic string");
}

TEST_F(NpyError, BadMagic) { expect_read_error("PK\x03\x04 not npy at all", IoErrc::npy_bad_magic, "not a .npy file"); }

TEST_F(NpyError, UnknownVersion) {
  std::string bytes = npy_bytes(header("<f4", "False", "(1,)"), "abcd");
  bytes[6] = 4;
  expect_read_error(bytes, IoErrc::npy_bad_version, "format version 4.0 is not 1.0, 2.0 or 3.0");
}

TEST_F(NpyError, HeaderLengthPastTheEnd) {
  const std::string bytes = npy_bytes(header("<f4", "False", "(1,)"), "");
  expect_read_error(bytes.substr(0, bytes.size() - 5), IoErrc::truncated, "file ends in the header");
}

TEST_F(NpyError, HeaderNotTheDictOfThreeKeys) {
  const std::array<std::pair<std::string, const char*>, 12> cases{{
      {"['descr', '<f4']", "expected '{'"},
      {"{'descr': '<f4', 'fortran_order': False}", "needs the keys"},
      {header("<f4", "False", "(1,)") + "x", "text after the closing '}'"},
      {"{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (1,)}", "unexpected or repeated key 'descr'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'extra': 1}", "unexpected or repeated key 'extra'"},
      {header("<f4", "False", "(4)"), "expected ','"},  // (4) is an int in Python, not a tuple
      {header("<f4", "False", "[4]"), "expected '('"},
      {header("<f4", "False", "(-4,)"), "expected a non-negative integer"},
      {header("<f4", "false", "(4,)"), "expected True or False"},
      {header("<f4", "False", "(99999999999999999999,)"), "does not fit in 64 bits"},
      {"{'descr: '<f4'", "expected ':'"},
      {"{'descr': '<f4", "unterminated string"},
  }};
  for (const auto& [text, part] : cases) {
    SCOPED_TRACE(text);
    expect_read_error(npy_bytes(text, ""), IoErrc::npy_bad_header, part);
  }
}

TEST_F(NpyError, UnsupportedDescr) {
  expect_read_error(npy_bytes(header("<c8", "False", "(1,)"), std::string(8, '\0')), IoErrc::npy_unsupported_dtype,
                    "unsupported descr '<c8'");
}

TEST_F(NpyError, BigEndian) {
  expect_read_error(npy_bytes(header(">f4", "False", "(1,)"), std::string(4, '\0')), IoErrc::npy_big_endian,
                    "big-endian descr '>f4' is not supported");
}

TEST_F(NpyError, FortranOrder) {
  expect_read_error(npy_bytes(header("<f4", "True", "(2, 2)"), std::string(16, '\0')), IoErrc::npy_fortran_order,
                    "fortran_order is True");
}

TEST_F(NpyError, SizeOverflow) {
  expect_read_error(npy_bytes(header("<f8", "False", "(4294967296, 4294967296)"), ""), IoErrc::size_overflow,
                    "overflows 64 bits");
}

TEST_F(NpyError, TruncatedData) {
  expect_read_error(npy_bytes(header("<f4", "False", "(2, 2)"), std::string(15, '\0')), IoErrc::truncated,
                    "file ends in the data");
}

TEST_F(NpyError, TrailingBytes) {
  expect_read_error(npy_bytes(header("<f4", "False", "(2, 2)"), std::string(17, '\0')), IoErrc::trailing_bytes,
                    "1 bytes after the 16 bytes of data");
}

// ---- write errors: nothing is left behind, an existing file is untouched ----

TEST(NpyWriteError, DtypeWithoutANpyType) {
  TempDir dir;
  const std::array<std::uint64_t, 1> shape{2};
  expect_io_error([&] { write_npy(dir / "a.npy", DType::BF16, shape, Bytes(4)); }, IoErrc::npy_unsupported_dtype,
                  "dtype BF16 has no plain .npy type");
  EXPECT_TRUE(dir.entries().empty());
}

TEST(NpyWriteError, DataSizeDoesNotMatchShape) {
  TempDir dir;
  write_file(dir / "a.npy", "old");
  const std::array<std::uint64_t, 2> shape{2, 3};
  expect_io_error([&] { write_npy(dir / "a.npy", DType::F32, shape, Bytes(20)); }, IoErrc::size_mismatch,
                  "20 bytes of data, but the shape needs 24");
  EXPECT_EQ(read_file(dir / "a.npy"), "old");
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"a.npy"});
}

TEST(NpyWriteError, SizeOverflow) {
  TempDir dir;
  const std::array<std::uint64_t, 2> shape{1ull << 40, 1ull << 40};
  expect_io_error([&] { write_npy(dir / "a.npy", DType::U8, shape, {}); }, IoErrc::size_overflow, "overflows");
}

TEST(NpyWriteError, MissingDirectory) {
  TempDir dir;
  const std::array<std::uint64_t, 1> shape{1};
  expect_io_error([&] { write_npy(dir / "no/such/dir/a.npy", DType::U8, shape, Bytes(1)); }, IoErrc::write_failed,
                  "cannot create a temporary file");
}

// The final rename fails (the target is a directory): the temporary file must be gone and the target untouched.
TEST(NpyWriteError, FailedRenameRemovesTheTemporaryFile) {
  TempDir dir;
  fs::create_directory(dir / "target.npy");
  const std::array<std::uint64_t, 1> shape{1};
  expect_io_error([&] { write_npy(dir / "target.npy", DType::U8, shape, Bytes(1)); }, IoErrc::write_failed,
                  "rename failed");
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"target.npy"});
  EXPECT_TRUE(fs::is_directory(dir / "target.npy"));
}

TEST(NpyWrite, ReplacesAnExistingFile) {
  TempDir dir;
  write_file(dir / "a.npy", std::string(1000, 'x'));
  const std::array<std::uint64_t, 1> shape{2};
  write_npy(dir / "a.npy", DType::U8, shape, to_bytes("\x01\x02"));
  EXPECT_EQ(to_string(read_npy(dir / "a.npy").data), "\x01\x02");
}

// ---- numpy itself, both directions ----

constexpr const char* kNumpyScript = R"PY(
import sys
import numpy as np

d = sys.argv[1]
ok = True
for line in open(f"{d}/manifest.txt"):
    name, descr, *dims = line.split()
    shape = tuple(int(x) for x in dims)
    raw = open(f"{d}/{name}.bin", "rb").read()
    np.save(f"{d}/{name}.numpy.npy", np.frombuffer(raw, dtype=np.dtype(descr)).reshape(shape))
    ours = np.load(f"{d}/{name}.ours.npy")
    if ours.dtype.str != descr or ours.shape != shape or ours.tobytes() != raw:
        print(f"{name}: np.load gives {ours.dtype.str} {ours.shape}, expected {descr} {shape}")
        ok = False
np.save(f"{d}/fortran.npy", np.asfortranarray(np.arange(6, dtype=np.float32).reshape(2, 3)))
np.save(f"{d}/big_endian.npy", np.arange(3, dtype=">f4"))
for major in (2, 3):
    with open(f"{d}/v{major}.npy", "wb") as f:
        np.lib.format.write_array(f, np.arange(6, dtype=np.int16).reshape(3, 2), version=(major, 0))
sys.exit(0 if ok else 1)
)PY";

TEST(NpyPython, NumpyAndMinifloatReadEachOthersFiles) {
  TempDir dir;
  ASSERT_TRUE(python_has(dir, "numpy", "numpy"));
  const std::vector<std::vector<std::uint64_t>> shapes{{}, {0}, {5}, {2, 3, 4}, {3, 0, 2}, {1, 1, 1, 1, 9}};
  std::string manifest;
  std::vector<std::pair<DType, std::vector<std::uint64_t>>> cases;
  for (const DType dtype : kNpyDtypes) {
    for (const auto& shape : shapes) {
      const std::string name = str("case", cases.size());
      const Bytes data = sample_data(dtype, shape, static_cast<std::uint32_t>(cases.size()));
      write_file(dir / (name + ".bin"), to_string(data));
      write_npy(dir / (name + ".ours.npy"), dtype, shape, data);
      manifest += str(name, " ", *npy_descr(dtype));
      for (const std::uint64_t d : shape) manifest += str(" ", d);
      manifest += "\n";
      cases.emplace_back(dtype, shape);
    }
  }
  write_file(dir / "manifest.txt", manifest);
  write_file(dir / "check.py", kNumpyScript);
  const RunResult r = run_python(dir / "check.py", str("'", dir.path().string(), "'"));
  ASSERT_EQ(r.status, 0) << "numpy could not read our files:\n" << r.output;

  for (std::size_t i = 0; i < cases.size(); ++i) {
    const std::string name = str("case", i);
    SCOPED_TRACE(str(name, " ", dtype_name(cases[i].first)));
    const NpyArray a = read_npy(dir / (name + ".numpy.npy"));
    EXPECT_EQ(a.dtype, cases[i].first);
    EXPECT_EQ(a.shape, cases[i].second);
    EXPECT_EQ(to_string(a.data), read_file(dir / (name + ".bin")));
    EXPECT_EQ(read_file(dir / (name + ".ours.npy")), read_file(dir / (name + ".numpy.npy"))) << "same bytes as np.save";
  }
  for (const char* v : {"v2.npy", "v3.npy"}) {
    const NpyArray a = read_npy(dir / v);
    EXPECT_EQ(a.shape, (std::vector<std::uint64_t>{3, 2}));
    EXPECT_EQ(to_string(a.data), std::string("\0\0\1\0\2\0\3\0\4\0\5\0", 12));
  }
  expect_io_error([&] { read_npy(dir / "fortran.npy"); }, IoErrc::npy_fortran_order, "fortran_order is True");
  expect_io_error([&] { read_npy(dir / "big_endian.npy"); }, IoErrc::npy_big_endian, "'>f4'");
}

}  // namespace
}  // namespace mf::io
