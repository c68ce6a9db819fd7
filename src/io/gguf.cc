#include "minifloat/gguf.h"

#include <algorithm>
#include <array>
#include <bit>
#include <charconv>
#include <cstring>
#include <limits>
#include <stdexcept>

#include "byte_source.h"
#include "file.h"
#include "minifloat/remote.h"
#include "little_endian.h"
#include "minifloat/codec.h"

namespace mf::io {
namespace {

using detail::cat;
using fs_path = std::filesystem::path;
// A GGUF header read without its data (read_gguf_header) is read in growing prefixes, up to this much.
constexpr std::uint64_t kGgufMaxHeaderRead = std::uint64_t{1} << 30;
// Thrown by the reader of a prefix that ends before what it reads: read more and parse again.
struct PrefixShort {};

struct TypeRow {
  std::string_view name;  // empty: an id ggml does not define (removed types)
  std::uint32_t block_elements = 0, block_bytes = 0;
};

// Indexed by ggml type id; sizes as gguf-py 0.19.0's GGML_QUANT_SIZES (the unit test compares the two).
constexpr std::array<TypeRow, 42> kTypes{{
    {"F32", 1, 4},
    {"F16", 1, 2},
    {"Q4_0", 32, 18},
    {"Q4_1", 32, 20},
    {},
    {},
    {"Q5_0", 32, 22},
    {"Q5_1", 32, 24},
    {"Q8_0", 32, 34},
    {"Q8_1", 32, 40},
    {"Q2_K", 256, 84},
    {"Q3_K", 256, 110},
    {"Q4_K", 256, 144},
    {"Q5_K", 256, 176},
    {"Q6_K", 256, 210},
    {"Q8_K", 256, 292},
    {"IQ2_XXS", 256, 66},
    {"IQ2_XS", 256, 74},
    {"IQ3_XXS", 256, 98},
    {"IQ1_S", 256, 50},
    {"IQ4_NL", 32, 18},
    {"IQ3_S", 256, 110},
    {"IQ2_S", 256, 82},
    {"IQ4_XS", 256, 136},
    {"I8", 1, 1},
    {"I16", 1, 2},
    {"I32", 1, 4},
    {"I64", 1, 8},
    {"F64", 1, 8},
    {"IQ1_M", 256, 56},
    {"BF16", 1, 2},
    {},
    {},
    {},
    {"TQ1_0", 256, 54},
    {"TQ2_0", 256, 66},
    {},
    {},
    {},
    {"MXFP4", 32, 17},
    {"NVFP4", 64, 36},
    {"Q1_0", 128, 18},
}};

constexpr std::array<std::string_view, 13> kValueTypeNames{"u8",   "i8",  "u16", "i16", "u32", "i32", "f32",
                                                           "bool", "str", "arr", "u64", "i64", "f64"};
// Bytes of a scalar value type; 0 for STRING and ARRAY.
constexpr std::array<std::uint8_t, 13> kValueTypeBytes{1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};

std::size_t scalar_bytes(GgufValueType t) { return kValueTypeBytes[static_cast<std::size_t>(t)]; }

bool is_unsigned(GgufValueType t) {
  return t == GgufValueType::UINT8 || t == GgufValueType::UINT16 || t == GgufValueType::UINT32 ||
         t == GgufValueType::UINT64;
}
bool is_signed(GgufValueType t) {
  return t == GgufValueType::INT8 || t == GgufValueType::INT16 || t == GgufValueType::INT32 ||
         t == GgufValueType::INT64;
}

// A C-escaped, quoted string, cut after 120 bytes (at a UTF-8 character boundary) with its length.
std::string quote_text(std::string_view s) {
  constexpr std::size_t kShown = 120;
  std::size_t shown = std::min(s.size(), kShown);
  while (shown > 0 && shown < s.size() && (static_cast<unsigned char>(s[shown]) & 0xC0) == 0x80) --shown;
  std::string out = "\"";
  for (const char c : s.substr(0, shown)) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += cat("\\", std::string_view(&c, 1));
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (u < 0x20 || u == 0x7F) {
      constexpr std::string_view hex = "0123456789abcdef";
      out += cat("\\x", hex.substr(u >> 4, 1), hex.substr(u & 15, 1));
    } else {
      out += c;
    }
  }
  return shown == s.size() ? out + "\"" : cat(out, "...\" (", s.size(), " bytes)");
}

template <class T>
std::string shortest(T x) {
  std::array<char, 40> buffer{};
  const auto result = std::to_chars(buffer.data(), buffer.data() + buffer.size(), x);
  return std::string(buffer.data(), result.ptr);
}

std::string dims_text(std::span<const std::uint64_t> dims) {
  std::string s = "[";
  for (std::size_t i = 0; i < dims.size(); ++i) s += cat(i == 0 ? "" : ", ", dims[i]);
  return s + "]";
}

}  // namespace

std::optional<GgufTypeInfo> gguf_type_info(std::uint32_t type) {
  if (type >= kTypes.size() || kTypes[type].name.empty()) return std::nullopt;
  return GgufTypeInfo{kTypes[type].block_elements, kTypes[type].block_bytes};
}

std::string gguf_type_name(std::uint32_t type) {
  if (type >= kTypes.size() || kTypes[type].name.empty()) return cat("type ", type);
  return std::string(kTypes[type].name);
}

std::string_view gguf_value_type_name(GgufValueType type) {
  const auto i = static_cast<std::size_t>(type);
  return i < kValueTypeNames.size() ? kValueTypeNames[i] : "?";
}

// ---- values ----

std::optional<std::uint64_t> GgufValue::as_uint() const {
  if (is_unsigned(type_)) return bits_;
  if (const std::optional<std::int64_t> v = as_int(); is_signed(type_) && v && *v >= 0) {
    return static_cast<std::uint64_t>(*v);
  }
  return std::nullopt;
}

std::optional<std::int64_t> GgufValue::as_int() const {
  if (is_unsigned(type_)) {
    if (bits_ > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) return std::nullopt;
    return static_cast<std::int64_t>(bits_);
  }
  if (!is_signed(type_)) return std::nullopt;
  const std::size_t shift = 64 - 8 * scalar_bytes(type_);  // sign-extend from the value's width
  return static_cast<std::int64_t>(bits_ << shift) >> shift;
}

std::optional<double> GgufValue::as_float() const {
  if (type_ == GgufValueType::FLOAT32) return std::bit_cast<float>(static_cast<std::uint32_t>(bits_));
  if (type_ == GgufValueType::FLOAT64) return std::bit_cast<double>(bits_);
  return std::nullopt;
}

std::optional<bool> GgufValue::as_bool() const {
  if (type_ != GgufValueType::BOOL) return std::nullopt;
  return bits_ != 0;
}

std::optional<std::string_view> GgufValue::as_string() const {
  if (type_ != GgufValueType::STRING) return std::nullopt;
  return std::string_view(string_);
}

GgufValue GgufValue::element(std::uint64_t i) const {
  if (!is_array() || i >= count_) {
    throw std::out_of_range(cat("GgufValue::element(", i, ") of ", size(), " elements"));
  }
  if (element_type_ == GgufValueType::ARRAY) return items_[i];
  GgufValue v;
  v.type_ = element_type_;
  if (element_type_ == GgufValueType::STRING) {
    v.string_ = strings_[i];
  } else {
    const std::size_t width = scalar_bytes(element_type_);
    v.bits_ = load_le(raw_.data() + i * width, width);
  }
  return v;
}

std::string GgufValue::text(std::size_t max_elements) const {
  switch (type_) {
    case GgufValueType::STRING: return quote_text(string_);
    case GgufValueType::BOOL: return bits_ != 0 ? "true" : "false";
    case GgufValueType::FLOAT32: return shortest(std::bit_cast<float>(static_cast<std::uint32_t>(bits_)));
    case GgufValueType::FLOAT64: return shortest(std::bit_cast<double>(bits_));
    case GgufValueType::ARRAY: break;
    default: return is_signed(type_) ? cat(*as_int()) : cat(bits_);
  }
  std::string out = "[";
  const std::uint64_t shown = std::min<std::uint64_t>(count_, max_elements);
  for (std::uint64_t i = 0; i < shown; ++i) {
    // Nested arrays in place: element() would copy each one's whole subtree.
    const std::string item =
        element_type_ == GgufValueType::ARRAY ? items_[i].text(max_elements) : element(i).text(max_elements);
    out += cat(i == 0 ? "" : ", ", item);
  }
  if (shown < count_) out += cat(shown == 0 ? "" : ", ", "... (", count_, " elements)");
  return out + "]";
}

std::uint64_t GgufTensor::elements() const {
  std::uint64_t n = 1;
  for (const std::uint64_t d : dims) n *= d;  // checked for overflow when the file was parsed
  return n;
}

// ---- reading ----

// A cursor over the file's bytes: every read is checked against the end before it happens.
struct GgufValueReader {
  std::span<const std::byte> all;  // the whole file, or (read_gguf_header) its first bytes
  const fs_path& file;
  std::uint64_t size = all.size();  // the whole file's
  std::uint64_t pos = 0;

  std::uint64_t left() const { return all.size() - pos; }
  // Where the bytes at hand end before the file does, `e` is not the file's fault: the caller reads more and parses
  // again (PrefixShort); else `e` stands.
  [[noreturn]] void fail(IoError e) const {
    if (all.size() < size) throw PrefixShort{};
    throw std::move(e);
  }
  void need(std::uint64_t n, std::string_view what) const {
    if (n > left()) {
      fail(IoError(IoErrc::truncated, file,
                   cat("file ends in ", what, " (needs ", n, " bytes at offset ", pos, ", has ", left(), ")")));
    }
  }
  std::uint64_t uint(std::size_t width, std::string_view what) {
    need(width, what);
    const std::uint64_t v = load_le(all.data() + pos, width);
    pos += width;
    return v;
  }
  std::string string(std::string_view what) {
    const std::uint64_t n = uint(8, what);
    if (n > kGgufMaxString) {
      throw IoError(IoErrc::gguf_string_too_long, file,
                    cat(what, ": string length ", n, " is over the limit of ", kGgufMaxString));
    }
    need(n, what);
    std::string s(reinterpret_cast<const char*>(all.data() + pos), static_cast<std::size_t>(n));
    pos += n;
    return s;
  }
  GgufValueType value_type(std::string_view what) {
    const std::uint64_t t = uint(4, what);
    if (t >= kValueTypeNames.size()) {
      throw IoError(IoErrc::gguf_bad_value_type, file, cat(what, ": value type ", t, " is not a GGUF type (0-12)"));
    }
    return static_cast<GgufValueType>(t);
  }
  GgufValue value(GgufValueType type, int depth, std::string_view key);
  void array(GgufValue& v, int depth, std::string_view key);
};

GgufValue GgufValueReader::value(GgufValueType type, int depth, std::string_view key) {
  GgufValue v;
  v.type_ = type;
  if (type == GgufValueType::STRING) {
    v.string_ = string(cat("the value of metadata '", key, "'"));
  } else if (type == GgufValueType::ARRAY) {
    array(v, depth + 1, key);
  } else {
    v.bits_ = uint(scalar_bytes(type), cat("the value of metadata '", key, "'"));
  }
  return v;
}

// u32 element type, u64 count, elements. The count is checked against the bytes left before anything is reserved.
void GgufValueReader::array(GgufValue& v, int depth, std::string_view key) {
  const std::string what = cat("the array of metadata '", key, "'");
  if (depth > kGgufMaxNesting) {
    throw IoError(IoErrc::gguf_nesting_too_deep, file,
                  cat(what, ": arrays nest deeper than ", kGgufMaxNesting, " levels"));
  }
  v.element_type_ = value_type(what);
  v.count_ = uint(8, what);
  const GgufValueType et = v.element_type_;
  const std::uint64_t least = et == GgufValueType::STRING ? 8 : et == GgufValueType::ARRAY ? 12 : scalar_bytes(et);
  if (v.count_ > left() / least) {
    fail(IoError(IoErrc::truncated, file,
                 cat("file ends in ", what, " (", v.count_, " elements of ", gguf_value_type_name(et),
                     " take at least ", least, " bytes each, ", left(), " bytes left at offset ", pos, ")")));
  }
  const auto n = static_cast<std::size_t>(v.count_);
  if (et == GgufValueType::STRING) {
    v.strings_.reserve(n);
    for (std::size_t i = 0; i < n; ++i) v.strings_.push_back(string(what));
  } else if (et == GgufValueType::ARRAY) {
    v.items_.reserve(n);
    for (std::size_t i = 0; i < n; ++i) v.items_.push_back(value(et, depth, key));
  } else {
    const std::size_t bytes = n * scalar_bytes(et);  // <= left(), checked above
    v.raw_.assign(all.begin() + static_cast<std::ptrdiff_t>(pos),
                  all.begin() + static_cast<std::ptrdiff_t>(pos + bytes));
    pos += bytes;
  }
}

namespace {

constexpr std::uint64_t kPreambleBytes = 24;               // magic, version, tensor_count, kv_count
constexpr std::uint64_t kLeastKv = 8 + 4 + 1;              // key length, value type, a one-byte value
constexpr std::uint64_t kLeastTensorInfo = 8 + 4 + 4 + 8;  // name length, n_dims, type, offset

struct Preamble {
  std::uint32_t version;
  std::uint64_t tensor_count, kv_count;
};

Preamble read_preamble(GgufValueReader& r) {
  const fs_path& file = r.file;
  if (r.all.size() >= 4 && std::memcmp(r.all.data(), "GGUF", 4) != 0) {
    const std::string_view magic(reinterpret_cast<const char*>(r.all.data()), 4);
    throw IoError(IoErrc::gguf_bad_magic, file,
                  cat("not a GGUF file: it starts with ", quote_text(magic), ", not \"GGUF\""));
  }
  if (r.all.size() < kPreambleBytes) {
    r.fail(IoError(IoErrc::truncated, file,
                   cat("file is ", r.all.size(), " bytes, shorter than the ", kPreambleBytes, "-byte GGUF header")));
  }
  r.pos = 4;
  Preamble p{static_cast<std::uint32_t>(r.uint(4, "the header")), r.uint(8, "the header"), r.uint(8, "the header")};
  if (p.version != 2 && p.version != 3) {
    const std::string why = (p.version & 0xFFFF) == 0 ? " (a big-endian file? only little-endian GGUF is read)"
                            : p.version == 1          ? " (GGUF v1 is no longer supported by llama.cpp)"
                                                      : "";
    throw IoError(IoErrc::gguf_bad_version, file, cat("GGUF version ", p.version, " is not 2 or 3", why));
  }
  const std::uint64_t rest = r.left();
  if (p.tensor_count > rest / kLeastTensorInfo || p.kv_count > rest / kLeastKv ||
      p.kv_count * kLeastKv > rest - p.tensor_count * kLeastTensorInfo) {
    r.fail(IoError(IoErrc::gguf_bad_count, file,
                   cat("tensor_count ", p.tensor_count, " and kv_count ", p.kv_count, " cannot fit in the ", rest,
                       " bytes after the header (a tensor info takes at least ", kLeastTensorInfo,
                       " bytes, a key-value pair ", kLeastKv, ")")));
  }
  return p;
}

// Positions of `items`, sorted by key(item); the first key given twice, if any, in `duplicate`.
template <class Items, class Key>
std::vector<std::size_t> sorted_index(const Items& items, Key key, const std::string** duplicate) {
  std::vector<std::size_t> index(items.size());
  for (std::size_t i = 0; i < index.size(); ++i) index[i] = i;
  std::stable_sort(index.begin(), index.end(),
                   [&](std::size_t a, std::size_t b) { return key(items[a]) < key(items[b]); });
  *duplicate = nullptr;
  for (std::size_t i = 1; i < index.size() && *duplicate == nullptr; ++i) {
    if (key(items[index[i - 1]]) == key(items[index[i]])) *duplicate = &key(items[index[i]]);
  }
  return index;
}

std::vector<std::pair<std::string, GgufValue>> read_metadata(GgufValueReader& r, std::uint64_t count) {
  std::vector<std::pair<std::string, GgufValue>> metadata;
  metadata.reserve(static_cast<std::size_t>(count));  // count was checked against the file size
  for (std::uint64_t i = 0; i < count; ++i) {
    std::string key = r.string(cat("metadata key ", i));
    if (key.empty()) throw IoError(IoErrc::gguf_empty_key, r.file, cat("metadata key ", i, " is empty"));
    const GgufValueType type = r.value_type(cat("the type of metadata '", key, "'"));
    GgufValue value = r.value(type, 0, key);
    metadata.emplace_back(std::move(key), std::move(value));
  }
  return metadata;
}

std::uint64_t read_alignment(const GgufValue* value, const fs_path& file) {
  if (value == nullptr) return kGgufDefaultAlignment;
  if (value->type() != GgufValueType::UINT32) {
    throw IoError(IoErrc::gguf_bad_alignment, file,
                  cat("general.alignment is a ", gguf_value_type_name(value->type()), ", not a u32"));
  }
  const std::uint64_t a = *value->as_uint();
  if (!std::has_single_bit(a)) {
    throw IoError(IoErrc::gguf_bad_alignment, file, cat("general.alignment ", a, " is not a power of two"));
  }
  return a;
}

// dims x type in bytes: 0 when any dim is 0 (ggml's empty tensor), else the checked product.
std::uint64_t tensor_bytes(const GgufTensor& t, const GgufTypeInfo& info, const fs_path& file) {
  if (std::find(t.dims.begin(), t.dims.end(), 0) != t.dims.end()) return 0;
  constexpr std::uint64_t max = std::numeric_limits<std::uint64_t>::max();
  std::uint64_t rows = 1;  // every dim but the first
  for (std::size_t j = 1; j < t.dims.size(); ++j) {
    if (rows > max / t.dims[j]) {
      throw IoError(IoErrc::size_overflow, file, t.name, cat("dims ", dims_text(t.dims), " overflow 64 bits"));
    }
    rows *= t.dims[j];
  }
  const std::uint64_t row_elements = t.dims.empty() ? 1 : t.dims[0];
  const std::uint64_t row_blocks = row_elements / info.block_elements;  // whole: checked by the caller
  if (rows > max / row_elements || row_blocks > max / info.block_bytes ||
      rows > max / (row_blocks * info.block_bytes)) {
    throw IoError(IoErrc::size_overflow, file, t.name,
                  cat("dims ", dims_text(t.dims), " x ", gguf_type_name(t.type), " overflow 64 bits"));
  }
  return rows * row_blocks * info.block_bytes;
}

GgufTensor read_tensor_info(GgufValueReader& r, std::uint64_t i) {
  GgufTensor t{r.string(cat("tensor info ", i)), 0, {}, 0, 0};
  const fs_path& file = r.file;
  const std::string what = cat("the tensor info of '", t.name, "'");
  const std::uint64_t n_dims = r.uint(4, what);
  if (n_dims > kGgufMaxDims) {
    throw IoError(IoErrc::gguf_bad_dims, file, t.name, cat("n_dims ", n_dims, " is over ", kGgufMaxDims));
  }
  for (std::uint64_t j = 0; j < n_dims; ++j) {
    t.dims.push_back(r.uint(8, what));
    if (t.dims.back() >> 63 != 0) {
      throw IoError(IoErrc::gguf_bad_dims, file, t.name,
                    cat("dims[", j, "] = ", t.dims.back(), " is 2^63 or more (negative to ggml)"));
    }
  }
  t.type = static_cast<std::uint32_t>(r.uint(4, what));
  const std::optional<GgufTypeInfo> info = gguf_type_info(t.type);
  if (!info) {
    throw IoError(IoErrc::gguf_unknown_type, file, t.name, cat("type id ", t.type, " is not a ggml type"));
  }
  const std::uint64_t row = t.dims.empty() ? 1 : t.dims[0];
  if (row % info->block_elements != 0) {
    throw IoError(IoErrc::gguf_bad_row, file, t.name,
                  cat("dims[0] = ", row, " is not a multiple of ", gguf_type_name(t.type), "'s block of ",
                      info->block_elements, " elements"));
  }
  t.bytes = tensor_bytes(t, *info, file);
  t.offset = r.uint(8, what);
  return t;
}

// Each tensor aligned and inside the data section, and no two sharing a byte (empty tensors share none).
void check_placement(const std::vector<GgufTensor>& tensors, std::uint64_t data_size, std::uint64_t alignment,
                     const fs_path& file) {
  std::vector<const GgufTensor*> filled;
  for (const GgufTensor& t : tensors) {
    if (t.offset % alignment != 0) {
      throw IoError(IoErrc::gguf_misaligned, file, t.name,
                    cat("offset ", t.offset, " is not a multiple of the alignment ", alignment));
    }
    if (t.bytes > data_size || t.offset > data_size - t.bytes) {
      throw IoError(
          IoErrc::offsets_out_of_range, file, t.name,
          cat(t.bytes, " bytes at offset ", t.offset, " run past the end of the ", data_size, "-byte data section"));
    }
    if (t.bytes != 0) filled.push_back(&t);
  }
  std::stable_sort(filled.begin(), filled.end(),
                   [](const GgufTensor* a, const GgufTensor* b) { return a->offset < b->offset; });
  const GgufTensor* reach = nullptr;  // the tensor that ends last among those seen
  for (const GgufTensor* t : filled) {
    if (reach != nullptr && t->offset < reach->offset + reach->bytes) {
      throw IoError(IoErrc::offsets_overlap, file, t->name,
                    cat("bytes [", t->offset, ", ", t->offset + t->bytes, ") overlap tensor '", reach->name, "' at [",
                        reach->offset, ", ", reach->offset + reach->bytes, ")"));
    }
    if (reach == nullptr || t->offset + t->bytes > reach->offset + reach->bytes) reach = t;
  }
}

}  // namespace

// The checks, in file order; `owner` keeps the bytes alive for the views.
GgufFile GgufFile::parse(std::span<const std::byte> all, std::shared_ptr<const void> owner, const fs_path& path) {
  return parse(all, all.size(), std::move(owner), path);
}

// `all` the file's first bytes, `file_size` its size: the header's checks, and the tensors against the data
// section's size; data_ holds the data only when `all` is the whole file. PrefixShort when `all` ends first.
GgufFile GgufFile::parse(std::span<const std::byte> all, std::uint64_t file_size, std::shared_ptr<const void> owner,
                         const fs_path& path) {
  GgufValueReader r{all, path, file_size};
  const Preamble p = read_preamble(r);
  GgufFile f;
  f.version_ = p.version;
  f.metadata_ = read_metadata(r, p.kv_count);
  const std::string* duplicate = nullptr;
  f.keys_by_name_ = sorted_index(
      f.metadata_, [](const auto& kv) -> const std::string& { return kv.first; }, &duplicate);
  if (duplicate != nullptr) {
    throw IoError(IoErrc::gguf_duplicate_key, path, cat("metadata key '", *duplicate, "' appears twice"));
  }
  f.alignment_ = read_alignment(f.find_metadata("general.alignment"), path);

  f.tensors_.reserve(static_cast<std::size_t>(p.tensor_count));  // checked against the file size
  for (std::uint64_t i = 0; i < p.tensor_count; ++i) f.tensors_.push_back(read_tensor_info(r, i));
  f.by_name_ = sorted_index(
      f.tensors_, [](const GgufTensor& t) -> const std::string& { return t.name; }, &duplicate);
  if (duplicate != nullptr) throw IoError(IoErrc::gguf_duplicate_tensor, path, *duplicate, "name appears twice");

  // The data section starts at the next multiple of the alignment; ggml requires that padding only with tensors.
  const std::uint64_t start = (r.pos + f.alignment_ - 1) / f.alignment_ * f.alignment_;
  if (start > file_size && !f.tensors_.empty()) {
    throw IoError(IoErrc::truncated, path,
                  cat("file ends in the padding before the data section (which starts at ", start, ", file is ",
                      file_size, " bytes)"));
  }
  f.data_offset_ = std::min<std::uint64_t>(start, file_size);
  if (all.size() == file_size) f.data_ = all.subspan(static_cast<std::size_t>(f.data_offset_));
  check_placement(f.tensors_, file_size - f.data_offset_, f.alignment_, path);
  f.path_ = path;
  f.owner_ = std::move(owner);
  return f;
}

GgufFile read_gguf(const fs_path& path) {
  if (detail::is_url(path)) {
    throw IoError(IoErrc::open_failed, path,
                  "over HTTP only a GGUF file's header is read (inspect); this command reads tensor data: download "
                  "the file first");
  }
  auto mapping = std::make_shared<const detail::MappedFile>(path);
  const std::span<const std::byte> all = mapping->bytes();
  return GgufFile::parse(all, std::move(mapping), path);
}

GgufFile read_gguf_header(const fs_path& given) {
  const fs_path path = resolve_hf(given.string());
  const std::unique_ptr<detail::ByteSource> in = detail::open_source(path);
  const std::uint64_t size = in->size();
  // The header's length is known only by parsing it: read a little, and twice as much while it ends first.
  for (std::uint64_t have = std::min<std::uint64_t>(size, 1 << 16);; have = std::min(size, 2 * have)) {
    if (have > kGgufMaxHeaderRead) {
      throw IoError(IoErrc::header_too_large, path,
                    cat("the metadata and tensor infos run past the first ", kGgufMaxHeaderRead,
                        " bytes, the most read for a header"));
    }
    auto prefix = std::make_shared<std::vector<std::byte>>(in->read(0, have, "header"));
    const std::span<const std::byte> bytes(*prefix);
    try {
      return GgufFile::parse(bytes, size, std::move(prefix), path);
    } catch (const PrefixShort&) {
    }
  }
}

GgufFile parse_gguf(std::span<const std::byte> bytes, const fs_path& name) {
  auto copy = std::make_shared<const std::vector<std::byte>>(bytes.begin(), bytes.end());
  const std::span<const std::byte> all(*copy);
  return GgufFile::parse(all, std::move(copy), name);
}

const GgufValue* GgufFile::find_metadata(std::string_view key) const {
  const auto it = std::lower_bound(keys_by_name_.begin(), keys_by_name_.end(), key,
                                   [this](std::size_t i, std::string_view k) { return metadata_[i].first < k; });
  return it != keys_by_name_.end() && metadata_[*it].first == key ? &metadata_[*it].second : nullptr;
}

const GgufTensor* GgufFile::find(std::string_view name) const {
  const auto it = std::lower_bound(by_name_.begin(), by_name_.end(), name,
                                   [this](std::size_t i, std::string_view n) { return tensors_[i].name < n; });
  return it != by_name_.end() && tensors_[*it].name == name ? &tensors_[*it] : nullptr;
}

std::span<const std::byte> GgufFile::bytes(const GgufTensor& tensor) const {
  if (tensor.bytes > data_.size() || tensor.offset > data_.size() - tensor.bytes) {
    throw std::invalid_argument(cat("GgufFile::bytes: tensor '", tensor.name, "' is not in ", path_.string()));
  }
  return data_.subspan(static_cast<std::size_t>(tensor.offset), static_cast<std::size_t>(tensor.bytes));
}

}  // namespace mf::io
