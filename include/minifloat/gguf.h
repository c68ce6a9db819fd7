// minifloat/gguf.h: GGUF files (llama.cpp's checkpoint format), read with every header field checked, and the tensor
// types this library decodes (F32, F16, BF16, Q4_0, Q4_1, Q8_0, MXFP4) turned into f32 bit for bit as gguf-py 0.19.0
// does.
//
// Layout, all little-endian:
//   "GGUF", u32 version (2 or 3), u64 tensor_count, u64 kv_count
//   kv_count x  { string key, u32 value type, value }
//               string = u64 length + that many bytes (no terminator)
//               value  = u8 i8 u16 i16 u32 i32 f32 bool(1 byte) string u64 i64 f64, or an array:
//                        u32 element type + u64 count + count elements (an element of an array of arrays is again
//                        u32 element type + u64 count + elements)
//   tensor_count x { string name, u32 n_dims, n_dims x u64 dims (dims[0] varies fastest), u32 ggml type, u64 offset }
//   padding to the alignment (general.alignment, a u32 power of two; 32 without it), then the data section: each
//   tensor's bytes start `offset` bytes into it.
//
// The reader refuses what llama.cpp's (ggml/src/gguf.cpp) refuses, but for the leniencies below, and checks every
// read against the file's size. Like ggml (and gguf-py) it accepts n_dims 0 (one element: gguf-py writes 0-d arrays
// so), a dim of 0 (an empty tensor) and trailing bytes. Where it is more lenient than ggml: arrays of arrays are read
// (up to kGgufMaxNesting; gguf-py writes them, ggml refuses any), names are not limited to 63 bytes, and tensors may
// lie in any order with gaps between them (ggml wants each where the padded one before it ends): only alignment,
// overlap and the end of the file are checked.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "minifloat/dtype.h"

namespace mf::io {

inline constexpr std::uint64_t kGgufMaxString = std::uint64_t{1} << 30;  // bytes; ggml's GGUF_MAX_STRING_LENGTH
inline constexpr int kGgufMaxNesting = 8;                                // arrays of arrays, counting the outermost
inline constexpr std::uint32_t kGgufMaxDims = 4;                         // GGML_MAX_DIMS
inline constexpr std::uint64_t kGgufDefaultAlignment = 32;

// The ggml tensor types (ggml.h's enum ggml_type, as gguf-py 0.19.0 lists them). The gaps (4, 5, 31-33, 36-38)
// are types ggml has removed; a file using one, or an id past Q1_0, is refused.
enum class GgufType : std::uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q8_1 = 9,
  Q2_K = 10,
  Q3_K = 11,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  Q8_K = 15,
  IQ2_XXS = 16,
  IQ2_XS = 17,
  IQ3_XXS = 18,
  IQ1_S = 19,
  IQ4_NL = 20,
  IQ3_S = 21,
  IQ2_S = 22,
  IQ4_XS = 23,
  I8 = 24,
  I16 = 25,
  I32 = 26,
  I64 = 27,
  F64 = 28,
  IQ1_M = 29,
  BF16 = 30,
  TQ1_0 = 34,
  TQ2_0 = 35,
  MXFP4 = 39,
  NVFP4 = 40,
  Q1_0 = 41,
};

// A type's block: a row of n elements takes n / block_elements * block_bytes bytes (gguf-py's GGML_QUANT_SIZES).
struct GgufTypeInfo {
  std::uint32_t block_elements;
  std::uint32_t block_bytes;
};
// nullopt for an id that is not a GgufType.
std::optional<GgufTypeInfo> gguf_type_info(std::uint32_t type);
// "F32", "Q8_0", "MXFP4", ..., or "type 123" for an id that is not a GgufType. A std::string, not a view: the
// unknown ids have no stored name to point at.
std::string gguf_type_name(std::uint32_t type);

// The metadata value types (gguf.h's enum gguf_type).
enum class GgufValueType : std::uint32_t {
  UINT8 = 0,
  INT8 = 1,
  UINT16 = 2,
  INT16 = 3,
  UINT32 = 4,
  INT32 = 5,
  FLOAT32 = 6,
  BOOL = 7,
  STRING = 8,
  ARRAY = 9,
  UINT64 = 10,
  INT64 = 11,
  FLOAT64 = 12,
};
// ggml's short names: "u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "str", "arr", "u64", "i64", "f64".
std::string_view gguf_value_type_name(GgufValueType type);

struct GgufValueReader;  // the parser (src/io/gguf.cc), the one writer of values

// One metadata value: a scalar, a string, or an array of one element type (arrays of arrays nest at most
// kGgufMaxNesting deep). Arrays of scalars keep the file's bytes (one value per element would take many times the
// file's size); element() makes a value of one of them.
class GgufValue {
 public:
  GgufValueType type() const { return type_; }
  bool is_array() const { return type_ == GgufValueType::ARRAY; }

  // Scalars; nullopt for a value of another type (or out of range for the result).
  std::optional<std::uint64_t> as_uint() const;       // u8..u64, and i8..i64 that are not negative
  std::optional<std::int64_t> as_int() const;         // i8..i64, and u8..u64 up to INT64_MAX
  std::optional<double> as_float() const;             // f32 (widened exactly) or f64
  std::optional<bool> as_bool() const;                // bool: any nonzero byte is true, as ggml reads it
  std::optional<std::string_view> as_string() const;  // the bytes as stored: not checked to be UTF-8

  // Arrays: the elements' type and count (for other values: their own type, and 0).
  GgufValueType element_type() const { return is_array() ? element_type_ : type_; }
  std::uint64_t size() const { return is_array() ? count_ : 0; }
  // Element i of an array, as a value of its own. Throws std::out_of_range past size().
  GgufValue element(std::uint64_t i) const;

  // For people: 42, -1.5, true, "text" (C escapes, cut after 120 bytes with its length), arrays as
  // [a, b, c] or [a, b, ... (32000 elements)] showing at most `max_elements` elements at each level.
  std::string text(std::size_t max_elements = 8) const;

  // Values to write (GgufWriter). of_array takes scalars of `element` (throws std::invalid_argument for another
  // type, a string or an array among them); of_strings an array of strings.
  static GgufValue of_u32(std::uint32_t v);
  static GgufValue of_i32(std::int32_t v);
  static GgufValue of_u64(std::uint64_t v);
  static GgufValue of_f32(float v);
  static GgufValue of_bool(bool v);
  static GgufValue of_string(std::string v);
  static GgufValue of_strings(std::vector<std::string> v);
  static GgufValue of_array(GgufValueType element, const std::vector<GgufValue>& values);
  // The bytes a file stores after the value's u32 type: the scalar, u64 length + bytes, or u32 element type +
  // u64 count + elements.
  std::string encoded() const;

 private:
  friend struct GgufValueReader;
  GgufValueType type_ = GgufValueType::UINT8;
  GgufValueType element_type_ = GgufValueType::UINT8;  // arrays
  std::uint64_t bits_ = 0;                             // scalars: the value's little-endian bytes, zero-extended
  std::uint64_t count_ = 0;                            // arrays: elements
  std::string string_;                                 // STRING
  std::vector<std::byte> raw_;                         // arrays of scalars: the elements' bytes, as in the file
  std::vector<std::string> strings_;                   // arrays of strings
  std::vector<GgufValue> items_;                       // arrays of arrays
};

// One tensor info entry.
struct GgufTensor {
  std::string name;
  std::uint32_t type;               // the raw ggml type id (always a GgufType in a file read)
  std::vector<std::uint64_t> dims;  // ggml order: dims[0] varies fastest (the row length)
  std::uint64_t offset;             // relative to the data section
  std::uint64_t bytes;              // computed from type and dims
  // numpy / safetensors order: dims reversed ({} for n_dims 0, a single element).
  std::vector<std::uint64_t> shape() const { return {dims.rbegin(), dims.rend()}; }
  std::uint64_t elements() const;  // the product of dims (1 for n_dims 0)
};

// A checked GGUF file, memory-mapped like SafetensorsFile: bytes() views the file in place, copies share the
// mapping, and views stay valid while any copy lives.
class GgufFile {
 public:
  // The file's path (or the name given to parse_gguf), for messages.
  const std::filesystem::path& path() const { return path_; }
  std::uint32_t version() const { return version_; }          // 2 or 3
  std::uint64_t alignment() const { return alignment_; }      // general.alignment, or 32
  std::uint64_t data_offset() const { return data_offset_; }  // where the data section starts in the file
  // In file order.
  const std::vector<std::pair<std::string, GgufValue>>& metadata() const { return metadata_; }
  // The value of `key`, or nullptr (binary search over an index built at parse time).
  const GgufValue* find_metadata(std::string_view key) const;
  // In header order.
  const std::vector<GgufTensor>& tensors() const { return tensors_; }
  const GgufTensor* find(std::string_view name) const;
  // `tensor` must be one of tensors() (std::invalid_argument if its bytes are not in this file).
  std::span<const std::byte> bytes(const GgufTensor& tensor) const;

 private:
  friend GgufFile read_gguf(const std::filesystem::path& path);
  friend GgufFile read_gguf_header(const std::filesystem::path& path);
  friend GgufFile parse_gguf(std::span<const std::byte> bytes, const std::filesystem::path& name);
  static GgufFile parse(std::span<const std::byte> all, std::shared_ptr<const void> owner,
                        const std::filesystem::path& path);
  static GgufFile parse(std::span<const std::byte> prefix, std::uint64_t file_size, std::shared_ptr<const void> owner,
                        const std::filesystem::path& path);
  std::vector<std::pair<std::string, GgufValue>> metadata_;
  std::vector<std::size_t> keys_by_name_;  // positions in metadata_, sorted by key
  std::vector<GgufTensor> tensors_;
  std::vector<std::size_t> by_name_;   // positions in tensors_, sorted by name
  std::shared_ptr<const void> owner_;  // the mapping (or copied bytes) that data_ points into
  std::span<const std::byte> data_;    // the data section
  std::filesystem::path path_;
  std::uint32_t version_ = 3;
  std::uint64_t alignment_ = kGgufDefaultAlignment;
  std::uint64_t data_offset_ = 0;
};

// Maps and checks a whole file. Throws IoError, one code per failure: gguf_bad_magic, gguf_bad_version, truncated
// (the file ends inside the header, a string, an array or a tensor info), gguf_bad_count (tensor_count or kv_count
// more than the file could hold), gguf_string_too_long, gguf_bad_value_type, gguf_nesting_too_deep, gguf_empty_key,
// gguf_duplicate_key, gguf_bad_alignment, gguf_duplicate_tensor, gguf_bad_dims (n_dims over 4, a dim of 2^63 or
// more), gguf_unknown_type, gguf_bad_row (dims[0] not a multiple of the block), size_overflow, gguf_misaligned,
// offsets_out_of_range, offsets_overlap (and open_failed, read_failed).
GgufFile read_gguf(const std::filesystem::path& path);
// The metadata and tensor infos only, with every check of read_gguf but on the data (the tensors are placed against
// the data section's size, never read: bytes() throws). `path` may be a URL or hf://ORG/REPO[@REV]/FILE.gguf
// (minifloat/remote.h): the header is read in growing prefixes, 64 KiB then twice as much while it ends first.
GgufFile read_gguf_header(const std::filesystem::path& path);
// The same checks on bytes in memory (copied; `name` stands for the file in messages): for tests and fuzzing.
GgufFile parse_gguf(std::span<const std::byte> bytes, const std::filesystem::path& name);

// F32, F16, BF16, Q4_0, Q4_1, Q8_0 and MXFP4.
bool gguf_can_dequantize(std::uint32_t type);
// The tensor's values as f32, in shape() order (the file's order), bit-exact with gguf.quants.dequantize of
// gguf-py 0.19.0, NaN payloads and signed zeros included:
//   F32 as stored; F16 and BF16 widened exactly (NaN payloads kept, not quieted);
//   Q4_0:  blocks of 32 as 18 bytes, f16 d then 16 bytes whose low nibbles are elements 0..15 and high nibbles
//          elements 16..31: float(q - 8) * float(d);
//   Q4_1:  blocks of 32 as 20 bytes, f16 d, f16 m, then nibbles as Q4_0: d * float(q) + m, the product rounded to
//          f32 before the sum (no fma), as numpy computes it;
//   Q8_0:  blocks of 32 as 34 bytes, f16 d then 32 x int8 q: float(q) * float(d), one f32 multiplication;
//   MXFP4: blocks of 32 as 17 bytes, an e8m0 byte e then 16 bytes whose low nibbles are elements 0..15 and high
//          nibbles elements 16..31; ggml's half-scale form: (2 x e2m1 value, an integer) * 2^(e - 128) (so
//          e = 0 scales by 2^-128, and e = 255 is an ordinary exponent, not NaN), and the e2m1 code for -0 gives +0.
// Throws IoError not_dequantizable (naming the file, the tensor and its type) for every other type.
std::vector<float> dequantize_gguf(const GgufFile& file, const GgufTensor& tensor);
// The same decoding of bytes laid out as `type`. Throws std::invalid_argument for a type gguf_can_dequantize refuses
// or a size that is not whole blocks.
std::vector<float> gguf_decode(GgufType type, std::span<const std::byte> bytes);

// ---- writing (src/io/gguf_write.cc) ----

// One tensor of a file to write.
struct GgufTensorSpec {
  std::string name;                 // at most kGgufMaxName bytes, as ggml's loader requires
  GgufType type;                    // F32, F16, BF16, Q8_0, MXFP4 or any other GgufType: the bytes are the caller's
  std::vector<std::uint64_t> dims;  // ggml order (dims[0] the row length), 1 to 4 of them, none 0
};
inline constexpr std::size_t kGgufMaxName = 63;  // GGML_MAX_NAME - 1

// A GGUF v3 file written as llama.cpp's gguf.cpp (and gguf-py's GGUFWriter) writes one: the header, the metadata in
// the order given, the tensor infos in the order given with each tensor at the next multiple of `alignment` after
// the one before (general.alignment is added to the metadata when `alignment` is not 32), zero padding after the
// header and after every tensor, the last included. The whole file goes to a temporary name next to `path` and is
// renamed over it by commit(); a writer destroyed before commit() removes it, so `path` is the old file or the
// whole new one.
//
// The constructor checks everything the reader would refuse and throws IoError: gguf_empty_key,
// gguf_duplicate_key (general.alignment included), gguf_bad_alignment (not a power of two, or over 2^31),
// invalid_name (empty, or longer than kGgufMaxName), gguf_duplicate_tensor, gguf_bad_dims (no dims, over 4, or a
// dim of 0 or of 2^63 or more), gguf_unknown_type, gguf_bad_row (dims[0] not a multiple of the type's block),
// size_overflow; write_failed for the OS's errors.
class GgufWriter {
 public:
  GgufWriter(const std::filesystem::path& path, std::vector<std::pair<std::string, GgufValue>> metadata,
             std::vector<GgufTensorSpec> tensors, std::uint64_t alignment = kGgufDefaultAlignment);
  ~GgufWriter();
  GgufWriter(const GgufWriter&) = delete;
  GgufWriter& operator=(const GgufWriter&) = delete;

  // Tensor k's bytes, in the file's tensor order or any other. Throws IoError size_mismatch (naming the tensor)
  // unless `bytes` is exactly its size, write_failed on an OS error; std::invalid_argument for k out of range or a
  // tensor written twice.
  void write_tensor(std::size_t k, std::span<const std::byte> bytes);
  // Throws IoError size_mismatch naming the first tensor not written, write_failed on an OS error.
  void commit();
  std::uint64_t bytes_total() const { return total_; }
  // Where tensor k's bytes start, relative to the data section (its GgufTensor::offset once read back).
  std::uint64_t offset(std::size_t k) const { return offsets_.at(k); }

 private:
  std::filesystem::path path_, temp_;
  int fd_ = -1;
  std::vector<GgufTensorSpec> tensors_;
  std::vector<std::uint64_t> offsets_, sizes_;
  std::vector<bool> written_;
  std::uint64_t data_offset_ = 0, total_ = 0;
};

// ggml's encodings of f32 values (a row-major tensor whose rows are a multiple of the block long):
//   F32 as given; F16 rounded to nearest even (a finite value that overflows is refused);
//   BF16 rounded to nearest even (ggml_compute_fp32_to_bf16);
//   Q8_0 as ggml's quantize_row_q8_0_ref (and gguf-py's Q8_0): per 32 values d = amax / 127 in f32, q = round(x / d)
//        half away from zero computed as x * (1 / d), d stored as f16.
// Throws std::invalid_argument for another type, a size that is not whole blocks, or a value that is not finite
// (F16, BF16, Q8_0: ggml would store NaN or Inf where a weight was).
std::vector<std::byte> gguf_encode(GgufType type, std::span<const float> x);

}  // namespace mf::io
