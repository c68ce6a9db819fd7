// GGUF writing: metadata values, ggml's encodings of f32 tensors, and the all-or-nothing file writer.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <set>
#include <stdexcept>

#include "file.h"
#include "minifloat/codec.h"
#include "minifloat/gguf.h"

namespace mf::io {
namespace {

using detail::cat;

void put_le(std::string& out, std::uint64_t v, std::size_t width) {
  for (std::size_t i = 0; i < width; ++i) out += static_cast<char>(v >> (8 * i) & 0xFF);
}

void put_string(std::string& out, std::string_view s) {
  put_le(out, s.size(), 8);
  out += s;
}

std::size_t scalar_width(GgufValueType t) {
  switch (t) {
    case GgufValueType::UINT8:
    case GgufValueType::INT8:
    case GgufValueType::BOOL: return 1;
    case GgufValueType::UINT16:
    case GgufValueType::INT16: return 2;
    case GgufValueType::UINT32:
    case GgufValueType::INT32:
    case GgufValueType::FLOAT32: return 4;
    case GgufValueType::UINT64:
    case GgufValueType::INT64:
    case GgufValueType::FLOAT64: return 8;
    default: return 0;  // STRING, ARRAY
  }
}

std::string g9(float x) {
  char b[32];
  std::snprintf(b, sizeof b, "%.9g", static_cast<double>(x));
  return b;
}

std::uint64_t align_up(std::uint64_t n, std::uint64_t a) { return (n + a - 1) / a * a; }

}  // namespace

// ---- values ----

GgufValue GgufValue::of_u32(std::uint32_t v) {
  GgufValue x;
  x.type_ = GgufValueType::UINT32;
  x.bits_ = v;
  return x;
}
GgufValue GgufValue::of_i32(std::int32_t v) {
  GgufValue x;
  x.type_ = GgufValueType::INT32;
  x.bits_ = static_cast<std::uint32_t>(v);
  return x;
}
GgufValue GgufValue::of_u64(std::uint64_t v) {
  GgufValue x;
  x.type_ = GgufValueType::UINT64;
  x.bits_ = v;
  return x;
}
GgufValue GgufValue::of_f32(float v) {
  GgufValue x;
  x.type_ = GgufValueType::FLOAT32;
  x.bits_ = std::bit_cast<std::uint32_t>(v);
  return x;
}
GgufValue GgufValue::of_bool(bool v) {
  GgufValue x;
  x.type_ = GgufValueType::BOOL;
  x.bits_ = v ? 1 : 0;
  return x;
}
GgufValue GgufValue::of_string(std::string v) {
  GgufValue x;
  x.type_ = GgufValueType::STRING;
  x.string_ = std::move(v);
  return x;
}
GgufValue GgufValue::of_strings(std::vector<std::string> v) {
  GgufValue x;
  x.type_ = GgufValueType::ARRAY;
  x.element_type_ = GgufValueType::STRING;
  x.count_ = v.size();
  x.strings_ = std::move(v);
  return x;
}
GgufValue GgufValue::of_array(GgufValueType element, const std::vector<GgufValue>& values) {
  const std::size_t width = scalar_width(element);
  if (width == 0) {
    throw std::invalid_argument(cat("GgufValue::of_array: element type ", gguf_value_type_name(element),
                                    " is not a scalar (of_strings makes arrays of strings)"));
  }
  GgufValue x;
  x.type_ = GgufValueType::ARRAY;
  x.element_type_ = element;
  x.count_ = values.size();
  for (const GgufValue& v : values) {
    if (v.type_ != element) {
      throw std::invalid_argument(cat("GgufValue::of_array: a ", gguf_value_type_name(v.type_), " in an array of ",
                                      gguf_value_type_name(element)));
    }
    for (std::size_t i = 0; i < width; ++i) x.raw_.push_back(static_cast<std::byte>(v.bits_ >> (8 * i) & 0xFF));
  }
  return x;
}

std::string GgufValue::encoded() const {
  std::string out;
  if (type_ == GgufValueType::STRING) {
    put_string(out, string_);
  } else if (type_ != GgufValueType::ARRAY) {
    put_le(out, bits_, scalar_width(type_));
  } else {
    put_le(out, static_cast<std::uint32_t>(element_type_), 4);
    put_le(out, count_, 8);
    if (element_type_ == GgufValueType::STRING) {
      for (const std::string& s : strings_) put_string(out, s);
    } else if (element_type_ == GgufValueType::ARRAY) {
      for (const GgufValue& v : items_) out += v.encoded();  // each nested array: its own type, count, elements
    } else {
      out.append(reinterpret_cast<const char*>(raw_.data()), raw_.size());
    }
  }
  return out;
}

// ---- encodings ----

namespace {

// F32, F16, BF16 or Q8_0, whole blocks, and (but for F32) no NaN or Inf to store in a weight.
GgufTypeInfo check_encodable(GgufType type, std::span<const float> x) {
  const std::optional<GgufTypeInfo> info = gguf_type_info(static_cast<std::uint32_t>(type));
  const bool known = type == GgufType::F32 || type == GgufType::F16 || type == GgufType::BF16 || type == GgufType::Q8_0;
  if (!known) {
    throw std::invalid_argument(cat("gguf_encode: cannot encode f32 values as ",
                                    gguf_type_name(static_cast<std::uint32_t>(type)), " (F32, F16, BF16, Q8_0)"));
  }
  if (x.size() % info->block_elements != 0) {
    throw std::invalid_argument(
        cat("gguf_encode: ", x.size(), " values are not whole blocks of ", info->block_elements));
  }
  if (type == GgufType::F32) return *info;
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (!std::isfinite(x[i])) {
      throw std::invalid_argument(cat("value ", i, " is not finite: ", gguf_type_name(static_cast<std::uint32_t>(type)),
                                      " would store NaN or Inf in a weight"));
    }
  }
  return *info;
}

void put16(std::vector<std::byte>& out, std::size_t at, std::uint32_t h) {
  out[at] = static_cast<std::byte>(h & 0xFF);
  out[at + 1] = static_cast<std::byte>(h >> 8);
}

// F16 or BF16, rounded to nearest even; a value that overflows to Inf is an error.
void encode_half(GgufType type, std::span<const float> x, std::vector<std::byte>& out) {
  const Format& f = type == GgufType::F16 ? f16 : bf16;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const std::uint32_t h = encode(f, x[i]);
    if (std::isinf(decode(f, h))) {
      throw std::invalid_argument(cat("value ", i, " (", g9(x[i]), ") overflows ",
                                      gguf_type_name(static_cast<std::uint32_t>(type)), " to Inf"));
    }
    put16(out, 2 * i, h);
  }
}

// ggml's quantize_row_q8_0_ref: per 32 values d = amax / 127 as f16, codes round(v / d) half away from zero.
void encode_q8_0(std::span<const float> x, std::vector<std::byte>& out) {
  for (std::size_t b = 0; b < x.size() / 32; ++b) {
    const float* v = x.data() + 32 * b;
    float amax = 0;
    for (std::size_t i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(v[i]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    const std::uint32_t h = encode(f16, d);
    if (std::isinf(decode(f16, h))) {
      throw std::invalid_argument(cat("block ", b, ": its scale ", g9(d), " overflows Q8_0's f16 scale"));
    }
    put16(out, 34 * b, h);
    for (std::size_t i = 0; i < 32; ++i) {
      const auto q = static_cast<std::int8_t>(std::round(v[i] * id));  // std::round: half away from zero
      out[34 * b + 2 + i] = static_cast<std::byte>(q);
    }
  }
}

}  // namespace

std::vector<std::byte> gguf_encode(GgufType type, std::span<const float> x) {
  const GgufTypeInfo info = check_encodable(type, x);
  std::vector<std::byte> out(x.size() / info.block_elements * info.block_bytes);
  if (type == GgufType::F32) {
    std::memcpy(out.data(), x.data(), out.size());
  } else if (type == GgufType::F16 || type == GgufType::BF16) {
    encode_half(type, x, out);
  } else {
    encode_q8_0(x, out);
  }
  return out;
}

// ---- the writer ----

namespace {

// The metadata key-value pairs as GGUF's header holds them; keys non-empty and unique.
void put_metadata(std::string& header, const std::vector<std::pair<std::string, GgufValue>>& metadata,
                  const std::filesystem::path& path) {
  std::set<std::string_view> keys;
  for (const auto& [key, value] : metadata) {
    if (key.empty()) throw IoError(IoErrc::gguf_empty_key, path, "a metadata key is empty");
    if (!keys.insert(key).second) {
      throw IoError(IoErrc::gguf_duplicate_key, path, cat("metadata key '", key, "' is given twice"));
    }
    put_string(header, key);
    put_le(header, static_cast<std::uint32_t>(value.type()), 4);
    header += value.encoded();
  }
}

// Tensor t's data size, after checking its name (unique in `names`), dims and type as ggml would.
std::uint64_t checked_tensor_bytes(const GgufTensorSpec& t, const std::filesystem::path& path,
                                   std::set<std::string_view>& names) {
  if (t.name.empty() || t.name.size() > kGgufMaxName) {
    throw IoError(IoErrc::invalid_name, path, t.name,
                  cat("a tensor name must be 1 to ", kGgufMaxName, " bytes (ggml's limit), not ", t.name.size()));
  }
  if (!names.insert(t.name).second) throw IoError(IoErrc::gguf_duplicate_tensor, path, t.name, "name given twice");
  if (t.dims.empty() || t.dims.size() > kGgufMaxDims) {
    throw IoError(IoErrc::gguf_bad_dims, path, t.name, cat(t.dims.size(), " dims (1 to ", kGgufMaxDims, ")"));
  }
  std::uint64_t n = 1;
  for (const std::uint64_t d : t.dims) {
    if (d == 0 || d >> 63 != 0) throw IoError(IoErrc::gguf_bad_dims, path, t.name, cat("a dim of ", d));
    if (n > (std::uint64_t{1} << 62) / d) throw IoError(IoErrc::size_overflow, path, t.name, "dims overflow");
    n *= d;
  }
  const std::optional<GgufTypeInfo> info = gguf_type_info(static_cast<std::uint32_t>(t.type));
  if (!info) {
    throw IoError(IoErrc::gguf_unknown_type, path, t.name,
                  cat("type id ", static_cast<std::uint32_t>(t.type), " is not a ggml type"));
  }
  if (t.dims[0] % info->block_elements != 0) {
    throw IoError(IoErrc::gguf_bad_row, path, t.name,
                  cat("dims[0] = ", t.dims[0], " is not a multiple of ",
                      gguf_type_name(static_cast<std::uint32_t>(t.type)), "'s block of ", info->block_elements));
  }
  return n / info->block_elements * info->block_bytes;  // n < 2^62, block_bytes < 2^9
}

void put_tensor_info(std::string& header, const GgufTensorSpec& t, std::uint64_t offset) {
  put_string(header, t.name);
  put_le(header, t.dims.size(), 4);
  for (const std::uint64_t d : t.dims) put_le(header, d, 8);
  put_le(header, static_cast<std::uint32_t>(t.type), 4);
  put_le(header, offset, 8);
}

// A temporary file beside `path` of `total` bytes (zeros: the padding between and after tensors), the header first;
// its descriptor.
int create_filled(const std::filesystem::path& path, std::filesystem::path& temp, std::uint64_t total,
                  const std::string& header) {
  const int fd = detail::create_temp_next_to(path, temp);
  if (fd < 0) throw IoError(IoErrc::write_failed, path, detail::os_error("cannot create a temporary file"));
  if (::ftruncate(fd, static_cast<::off_t>(total)) != 0 || !detail::write_all(fd, std::as_bytes(std::span(header)))) {
    const std::string error = detail::os_error("write error");
    ::close(fd);
    ::unlink(temp.c_str());
    throw IoError(IoErrc::write_failed, path, error);
  }
  return fd;
}

}  // namespace

GgufWriter::GgufWriter(const std::filesystem::path& path, std::vector<std::pair<std::string, GgufValue>> metadata,
                       std::vector<GgufTensorSpec> tensors, std::uint64_t alignment)
    : path_(path), tensors_(std::move(tensors)) {
  if (!std::has_single_bit(alignment) || alignment > (std::uint64_t{1} << 31)) {
    throw IoError(IoErrc::gguf_bad_alignment, path, cat("alignment ", alignment, " is not a power of two up to 2^31"));
  }
  if (alignment != kGgufDefaultAlignment) {
    metadata.emplace_back("general.alignment", GgufValue::of_u32(static_cast<std::uint32_t>(alignment)));
  }
  std::string header = "GGUF";
  put_le(header, 3, 4);
  put_le(header, tensors_.size(), 8);
  put_le(header, metadata.size(), 8);
  put_metadata(header, metadata, path);
  std::set<std::string_view> names;
  std::uint64_t next = 0;  // the data section's first free, aligned byte
  for (const GgufTensorSpec& t : tensors_) {
    const std::uint64_t bytes = checked_tensor_bytes(t, path, names);
    put_tensor_info(header, t, next);
    offsets_.push_back(next);
    sizes_.push_back(bytes);
    next = align_up(next + bytes, alignment);
  }
  written_.assign(tensors_.size(), false);
  data_offset_ = align_up(header.size(), alignment);
  header.resize(data_offset_, '\0');
  total_ = data_offset_ + next;
  fd_ = create_filled(path, temp_, total_, header);
}

GgufWriter::~GgufWriter() {
  if (fd_ >= 0) {
    ::close(fd_);
    ::unlink(temp_.c_str());
  }
}

void GgufWriter::write_tensor(std::size_t k, std::span<const std::byte> bytes) {
  if (fd_ < 0) throw IoError(IoErrc::write_failed, path_, "write after commit");
  if (k >= tensors_.size()) throw std::invalid_argument(cat("GgufWriter: tensor ", k, " of ", tensors_.size()));
  const GgufTensorSpec& t = tensors_[k];
  if (bytes.size() != sizes_[k]) {
    throw IoError(IoErrc::size_mismatch, path_, t.name,
                  cat(bytes.size(), " bytes given, ", gguf_type_name(static_cast<std::uint32_t>(t.type)),
                      " of these dims takes ", sizes_[k]));
  }
  if (written_[k]) throw std::invalid_argument(cat("GgufWriter: tensor '", t.name, "' written twice"));
  if (!detail::pwrite_all(fd_, bytes, data_offset_ + offsets_[k])) {
    throw IoError(IoErrc::write_failed, path_, t.name, detail::os_error("write error"));
  }
  written_[k] = true;
}

void GgufWriter::commit() {
  if (fd_ < 0) throw IoError(IoErrc::write_failed, path_, "commit after commit");
  const auto missing = std::find(written_.begin(), written_.end(), false);
  if (missing != written_.end()) {
    throw IoError(IoErrc::size_mismatch, path_, tensors_[static_cast<std::size_t>(missing - written_.begin())].name,
                  "not written");
  }
  detail::commit_temp(fd_, temp_, path_);
}

}  // namespace mf::io
