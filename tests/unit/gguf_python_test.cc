// GGUF against gguf-py: files written by its GGUFWriter read and dequantized bit for bit as gguf.quants.dequantize
// does, the type table against gguf-py's, and the bad files of gguf_test.cc shown to gguf-py's GGUFReader too.
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
    case VT::INT8:
    case VT::INT16:
    case VT::INT32:
    case VT::INT64: return str(*v.as_int());
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
      {GgufType::F32, "F32"},         {GgufType::Q4_0, "Q4_0"},     {GgufType::Q5_0, "Q5_0"},
      {GgufType::Q8_0, "Q8_0"},       {GgufType::Q2_K, "Q2_K"},     {GgufType::Q8_K, "Q8_K"},
      {GgufType::IQ2_XXS, "IQ2_XXS"}, {GgufType::IQ4_XS, "IQ4_XS"}, {GgufType::I8, "I8"},
      {GgufType::F64, "F64"},         {GgufType::IQ1_M, "IQ1_M"},   {GgufType::BF16, "BF16"},
      {GgufType::TQ1_0, "TQ1_0"},     {GgufType::TQ2_0, "TQ2_0"},   {GgufType::MXFP4, "MXFP4"},
      {GgufType::NVFP4, "NVFP4"},     {GgufType::Q1_0, "Q1_0"}};
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
