// Hand-made GGUF files for the reading tests (gguf_test.cc) and the gguf-py comparisons (gguf_python_test.cc):
// byte builders, and the bad files each of which must fail with its own named error.
#pragma once

#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "io_test_util.h"
#include "minifloat/gguf.h"

namespace mf::io::gguf_files {

using namespace mf::io::testing;
using Dims = std::vector<std::uint64_t>;
using VT = GgufValueType;

inline constexpr std::uint32_t kF32 = 0, kF16 = 1, kQ4_0 = 2, kQ4_1 = 3, kQ8_0 = 8, kQ4_K = 12, kMXFP4 = 39;

// ---- building files by hand ----

inline std::string gs(std::string_view s) { return str(le(s.size(), 8), s); }
inline std::string kv(std::string_view key, VT type, std::string_view payload) {
  return str(gs(key), le(static_cast<std::uint32_t>(type), 4), payload);
}
inline std::string kv_u32(std::string_view key, std::uint32_t v) { return kv(key, VT::UINT32, le(v, 4)); }
inline std::string array_of(VT element, std::uint64_t count, std::string_view elements) {
  return str(le(static_cast<std::uint32_t>(element), 4), le(count, 8), elements);
}
inline std::string tinfo(std::string_view name, const Dims& dims, std::uint32_t type, std::uint64_t offset) {
  std::string out = str(gs(name), le(dims.size(), 4));
  for (const std::uint64_t d : dims) out += le(d, 8);
  return str(out, le(type, 4), le(offset, 8));
}
inline std::string preamble(std::uint64_t tensors, std::uint64_t kvs, std::uint32_t version = 3) {
  return str("GGUF", le(version, 4), le(tensors, 8), le(kvs, 8));
}
// A whole file: header, zero padding to `alignment`, then `data`.
inline std::string gguf_bytes(const std::vector<std::string>& kvs, const std::vector<std::string>& infos,
                              std::string_view data = "", std::uint64_t alignment = 32, std::uint32_t version = 3) {
  std::string out = preamble(infos.size(), kvs.size(), version);
  for (const std::string& k : kvs) out += k;
  for (const std::string& t : infos) out += t;
  out.append((alignment - out.size() % alignment) % alignment, '\0');
  return out + std::string(data);
}

inline GgufFile parse(std::string_view bytes) { return parse_gguf(std::as_bytes(std::span(bytes)), "hand.gguf"); }

inline std::uint32_t bits(float x) { return std::bit_cast<std::uint32_t>(x); }

// Bit patterns compared, so that NaN payloads and signed zeros count; the first few differences are shown.
inline void expect_same_bits(const std::vector<float>& got, const std::vector<float>& want, std::string_view what) {
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

// ---- one test per read error (gguf_test.cc); the same files go to gguf-py's reader (gguf_python_test.cc) ----

struct BadFile {
  std::string name;
  std::string bytes;
  IoErrc code;
  std::string message;  // what the message must contain after "bad.gguf: "
};

inline void PrintTo(const BadFile& bad, std::ostream* os) { *os << bad.name; }

inline std::vector<BadFile> bad_header_files() {
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
      {"AlignmentNotU32", gguf_bytes({kv("general.alignment", VT::UINT64, le(64, 8))}, {}), IoErrc::gguf_bad_alignment,
       "general.alignment is a u64, not a u32"},
      {"AlignmentNotPowerOfTwo", gguf_bytes({kv_u32("general.alignment", 48)}, {}), IoErrc::gguf_bad_alignment,
       "general.alignment 48 is not a power of two"},
      {"AlignmentZero", gguf_bytes({kv_u32("general.alignment", 0)}, {}), IoErrc::gguf_bad_alignment,
       "general.alignment 0 is not a power of two"},
  };
}

inline std::vector<BadFile> bad_tensor_files() {
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

inline std::vector<BadFile> bad_files() {
  std::vector<BadFile> all = bad_header_files();
  for (BadFile& b : bad_tensor_files()) all.push_back(std::move(b));
  return all;
}

}  // namespace mf::io::gguf_files
