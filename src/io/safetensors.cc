#include "minifloat/safetensors.h"

#include <algorithm>
#include <array>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>

#include "byte_source.h"
#include "file.h"
#include "json_checked.h"
#include "minifloat/text.h"

namespace mf::io {
namespace {

// std::map-backed: ordered_json inserts in linear time and copies values when it grows. The header's order, which
// breaks ties between empty tensors at one offset, is recorded while parsing instead.
using Json = nlohmann::json;
using detail::cat;
constexpr std::string_view kMetadataKey = "__metadata__";
constexpr int kMaxDepth = 64;  // a valid header nests 3 deep (object, entry, shape)

std::string offsets_text(std::uint64_t begin, std::uint64_t end) {
  return cat("data_offsets [", begin, ", ", end, "]");
}

// shape x dtype in bytes, or the IoError that says why there is no such number.
std::uint64_t checked_size(DType dtype, std::span<const std::uint64_t> shape, const std::filesystem::path& file,
                           std::string_view name) {
  const TensorSize size = tensor_size(dtype, shape);
  const std::string what = cat("shape ", shape_text(shape), " x ", dtype_name(dtype));
  if (size.error == SizeError::overflow) {
    throw IoError(IoErrc::size_overflow, file, name, cat(what, " overflows 64 bits"));
  }
  if (size.error == SizeError::not_whole_bytes) {
    throw IoError(IoErrc::not_whole_bytes, file, name, cat(what, " is not a whole number of bytes"));
  }
  return size.bytes;
}

// ---- reading ----

// An untrusted value for a message, cut short (parse_header bounds its depth, so dump() recursion is bounded too).
std::string brief(const Json& value) {
  const std::string text = value.dump();
  return text.size() <= 80 ? text : cat(text.substr(0, 77), "...");
}

// The header as JSON, and its top-level keys in the order they appear.
struct Header {
  Json json;
  std::vector<std::string> keys;
};

// The header, checked as JSON (unique keys, bounded depth), with its top-level keys in order.
Header parse_header(std::string_view text, const std::filesystem::path& file) {
  Header header;
  header.json = detail::parse_json_checked(text, file, "header", kMaxDepth, &header.keys);
  if (!header.json.is_object()) throw IoError(IoErrc::header_not_object, file, "header is not a JSON object");
  return header;
}

std::map<std::string, std::string> parse_metadata(const Json& value, const std::filesystem::path& file) {
  if (!value.is_object()) throw IoError(IoErrc::invalid_metadata, file, "__metadata__ is not an object");
  std::map<std::string, std::string> metadata;
  for (auto it = value.begin(); it != value.end(); ++it) {
    if (!it.value().is_string()) {
      throw IoError(IoErrc::invalid_metadata, file,
                    cat("__metadata__ value of '", it.key(), "' is a ", it.value().type_name(), ", not a string"));
    }
    metadata.emplace(it.key(), it.value().get<std::string>());
  }
  return metadata;
}

std::vector<std::uint64_t> parse_shape(const Json& value, const std::filesystem::path& file, std::string_view name) {
  if (!value.is_array()) throw IoError(IoErrc::invalid_shape, file, name, "shape is not a list");
  std::vector<std::uint64_t> shape;
  for (const Json& dim : value) {
    if (!dim.is_number_unsigned()) {
      throw IoError(IoErrc::invalid_shape, file, name,
                    cat("shape ", brief(value), " is not all non-negative integers"));
    }
    shape.push_back(dim.get<std::uint64_t>());
  }
  return shape;
}

// One "name": {"dtype", "shape", "data_offsets"} entry, checked on its own (keys, types, size against offsets).
SafetensorsTensor parse_tensor(const std::string& name, const Json& entry, std::uint64_t data_size,
                               const std::filesystem::path& file) {
  if (!entry.is_object()) throw IoError(IoErrc::invalid_tensor_entry, file, name, "entry is not an object");
  for (const char* key : {"dtype", "shape", "data_offsets"}) {
    if (!entry.contains(key)) {
      throw IoError(IoErrc::invalid_tensor_entry, file, name, cat("entry has no \"", key, "\""));
    }
  }
  const Json& dtype = entry.at("dtype");
  if (!dtype.is_string()) throw IoError(IoErrc::invalid_tensor_entry, file, name, "dtype is not a string");
  const std::optional<DType> known = find_dtype(dtype.get<std::string>());
  if (!known) throw IoError(IoErrc::unknown_dtype, file, name, cat("unknown dtype ", brief(dtype)));
  SafetensorsTensor t{name, *known, parse_shape(entry.at("shape"), file, name), 0, 0};

  const Json& offsets = entry.at("data_offsets");
  if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() ||
      !offsets[1].is_number_unsigned() || offsets[0].get<std::uint64_t>() > offsets[1].get<std::uint64_t>()) {
    throw IoError(IoErrc::invalid_tensor_entry, file, name,
                  cat("data_offsets ", brief(offsets), " is not [begin, end] with begin <= end"));
  }
  t.begin = offsets[0].get<std::uint64_t>();
  t.end = offsets[1].get<std::uint64_t>();
  const std::uint64_t bytes = checked_size(t.dtype, t.shape, file, name);
  if (t.end - t.begin != bytes) {
    throw IoError(IoErrc::size_mismatch, file, name,
                  cat(offsets_text(t.begin, t.end), " do not match shape ", shape_text(t.shape), " x ",
                      dtype_name(t.dtype), " = ", bytes, " bytes"));
  }
  if (t.end > data_size) {
    throw IoError(IoErrc::offsets_out_of_range, file, name,
                  cat(offsets_text(t.begin, t.end), " run past the ", data_size, "-byte data section"));
  }
  return t;
}

// In data order, the tensors must cover [0, data_size) exactly once.
void check_tiling(std::vector<SafetensorsTensor>& tensors, std::uint64_t data_size, const std::filesystem::path& file) {
  std::stable_sort(tensors.begin(), tensors.end(), [](const SafetensorsTensor& a, const SafetensorsTensor& b) {
    return std::pair(a.begin, a.end) < std::pair(b.begin, b.end);
  });
  std::uint64_t covered = 0;
  const SafetensorsTensor* previous = nullptr;
  for (const SafetensorsTensor& t : tensors) {
    if (t.begin > covered) {
      throw IoError(IoErrc::offsets_gap, file, t.name,
                    cat(offsets_text(t.begin, t.end), " leave bytes [", covered, ", ", t.begin, ") before it unused"));
    }
    if (t.begin < covered) {
      throw IoError(
          IoErrc::offsets_overlap, file, t.name,
          cat(offsets_text(t.begin, t.end), " overlap tensor '", previous->name, "', which ends at ", covered));
    }
    covered = t.end;
    previous = &t;
  }
  if (covered != data_size) {
    throw IoError(IoErrc::trailing_bytes, file,
                  cat(data_size - covered, " bytes after the last tensor (data section is ", data_size,
                      " bytes, tensors cover ", covered, ")"));
  }
}

// `prefix` holds the file's first bytes (all of them, or at least the length and the header); `file_size` is the
// whole file's size.
std::uint64_t read_header_length(std::span<const std::byte> prefix, std::uint64_t file_size,
                                 const std::filesystem::path& file) {
  if (file_size < 8) {
    throw IoError(IoErrc::truncated, file, cat("file is ", file_size, " bytes, shorter than the 8-byte header length"));
  }
  std::uint64_t n = 0;
  for (std::size_t i = 8; i-- > 0;) n = n << 8 | static_cast<std::uint64_t>(prefix[i]);
  if (n > kMaxSafetensorsHeader) {
    throw IoError(IoErrc::header_too_large, file,
                  cat("header length ", n, " is over the limit of ", kMaxSafetensorsHeader));
  }
  if (n > file_size - 8) {
    throw IoError(IoErrc::header_past_end, file,
                  cat("header length ", n, " runs past the end of the ", file_size, "-byte file"));
  }
  return n;
}

}  // namespace

// The checks, in order, on the whole file's bytes; `owner` keeps them alive for the views.
// A file read headers-only passes an empty `all`: then `header` holds the header's bytes and `file_size` the file's
// size, and the data section is checked against the offsets without being read.
SafetensorsFile SafetensorsFile::parse(std::span<const std::byte> all, std::shared_ptr<const void> owner,
                                       const std::filesystem::path& path) {
  return parse(all, all.size(), std::move(owner), path);
}

SafetensorsFile SafetensorsFile::parse(std::span<const std::byte> prefix, std::uint64_t file_size,
                                       std::shared_ptr<const void> owner, const std::filesystem::path& path) {
  const std::uint64_t header_len = read_header_length(prefix, file_size, path);
  const std::span<const std::byte> header_bytes = prefix.subspan(8, header_len);
  const Header header =
      parse_header(std::string_view(reinterpret_cast<const char*>(header_bytes.data()), header_bytes.size()), path);
  const std::uint64_t data_offset = 8 + header_len;
  const std::uint64_t data_size = file_size - data_offset;

  SafetensorsFile file;
  for (const std::string& key : header.keys) {
    const Json& value = header.json.at(key);
    if (key == kMetadataKey) {
      file.metadata_ = parse_metadata(value, path);
    } else {
      file.tensors_.push_back(parse_tensor(key, value, data_size, path));
    }
  }
  check_tiling(file.tensors_, data_size, path);
  file.by_name_.resize(file.tensors_.size());
  for (std::size_t i = 0; i < file.by_name_.size(); ++i) file.by_name_[i] = i;
  std::sort(file.by_name_.begin(), file.by_name_.end(),
            [&t = file.tensors_](std::size_t a, std::size_t b) { return t[a].name < t[b].name; });
  file.header_bytes_ = data_offset;
  file.path_ = path;
  file.owner_ = std::move(owner);
  file.data_size_ = data_size;
  file.has_data_ = prefix.size() == file_size;
  if (file.has_data_) file.data_ = prefix.subspan(data_offset);
  return file;
}

SafetensorsFile read_safetensors(const std::filesystem::path& path) {
  if (detail::is_url(path)) {
    throw IoError(IoErrc::open_failed, path,
                  "over HTTP only headers are read (inspect, verify --headers-only, memory); this command reads "
                  "tensor data: download the checkpoint first");
  }
  auto mapping = std::make_shared<const detail::MappedFile>(path);
  const std::span<const std::byte> all = mapping->bytes();
  SafetensorsFile file = SafetensorsFile::parse(all, std::move(mapping), path);
  file.mapped_ = true;
  return file;
}

SafetensorsFile read_safetensors_header(const std::filesystem::path& path) {
  // A local file or a URL (byte_source.h): the same reads and checks over either.
  const std::unique_ptr<detail::ByteSource> in = detail::open_source(path);
  const std::uint64_t size = in->size();
  const std::vector<std::byte> length = in->read(0, std::min<std::uint64_t>(8, size), "header length");
  // The checks on the length come first (a huge length is refused before anything is allocated or fetched for it).
  const std::uint64_t n = read_header_length(std::span(length.data(), length.size()), size, path);
  auto prefix = std::make_shared<std::vector<std::byte>>(in->read(0, 8 + n, "header"));
  const std::span<const std::byte> bytes(*prefix);
  return SafetensorsFile::parse(bytes, size, nullptr, path);
}

SafetensorsFile parse_safetensors(std::span<const std::byte> bytes, const std::filesystem::path& name) {
  auto copy = std::make_shared<const std::vector<std::byte>>(bytes.begin(), bytes.end());
  const std::span<const std::byte> all(*copy);
  return SafetensorsFile::parse(all, std::move(copy), name);
}

const SafetensorsTensor* SafetensorsFile::find(std::string_view name) const {
  const auto it = std::lower_bound(by_name_.begin(), by_name_.end(), name,
                                   [this](std::size_t i, std::string_view n) { return tensors_[i].name < n; });
  if (it != by_name_.end() && tensors_[*it].name == name) return &tensors_[*it];
  for (const Borrowed& b : borrowed_) {
    if (b.tensor->name == name) return b.tensor;
  }
  return nullptr;
}

bool SafetensorsFile::borrow(std::shared_ptr<const SafetensorsFile> from, std::string_view name) {
  const SafetensorsTensor* t = from->find(name);
  if (t == nullptr) return false;
  borrowed_.push_back({std::move(from), t});
  return true;
}

const SafetensorsFile::Borrowed* SafetensorsFile::borrowed(const SafetensorsTensor& tensor) const {
  for (const Borrowed& b : borrowed_) {
    if (b.tensor == &tensor) return &b;
  }
  return nullptr;
}

std::span<const std::byte> SafetensorsFile::bytes(const SafetensorsTensor& tensor) const {
  if (const Borrowed* b = borrowed(tensor)) return b->file->bytes(tensor);
  // A headers-only reading promised never to touch tensor data: a caller that asks for it is a bug, named here.
  if (!has_data_) {
    throw std::logic_error(cat(path_.string(), ": tensor '", tensor.name,
                               "': its data was asked for, but the file was read headers-only"));
  }
  return data_.subspan(tensor.begin, tensor.end - tensor.begin);
}

void SafetensorsFile::release(const SafetensorsTensor& tensor) const {
  if (const Borrowed* b = borrowed(tensor)) return b->file->release(tensor);
  if (!mapped_) return;
  // Whole pages inside the tensor only: its neighbours may still be in use.
  const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  const auto begin = reinterpret_cast<std::uintptr_t>(data_.data() + tensor.begin);
  const auto end = reinterpret_cast<std::uintptr_t>(data_.data() + tensor.end);
  const std::uintptr_t first = (begin + page - 1) / page * page, last = end / page * page;
  if (last > first) ::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
}

TensorView SafetensorsFile::view(const SafetensorsTensor& tensor) const {
  return {tensor.name, tensor.dtype, tensor.shape, bytes(tensor)};
}

std::vector<TensorView> SafetensorsFile::views() const {
  std::vector<TensorView> out;
  out.reserve(tensors_.size());
  for (const SafetensorsTensor& t : tensors_) out.push_back(view(t));
  return out;
}

// ---- writing ----
namespace {

// A JSON string literal; nlohmann rejects text that is not UTF-8.
std::optional<std::string> json_string(std::string_view s) {
  try {
    return Json(s).dump();
  } catch (const Json::exception&) {
    return std::nullopt;
  }
}

std::string metadata_json(const std::map<std::string, std::string>& metadata, const std::filesystem::path& file) {
  std::string out = "{";
  for (const auto& [key, value] : metadata) {
    const std::optional<std::string> k = json_string(key), v = json_string(value);
    if (!k || !v) throw IoError(IoErrc::invalid_metadata, file, cat("__metadata__ entry '", key, "' is not UTF-8"));
    out += cat(out.size() == 1 ? "" : ",", *k, ":", *v);
  }
  return out + "}";
}

std::string tensor_json(const TensorView& t, std::uint64_t begin, std::uint64_t end) {
  std::string shape = "[";
  for (std::size_t i = 0; i < t.shape.size(); ++i) shape += cat(i == 0 ? "" : ",", t.shape[i]);
  return cat("{\"dtype\":\"", dtype_name(t.dtype), "\",\"shape\":", shape, "],\"data_offsets\":[", begin, ",", end,
             "]}");
}

// The header, padded with spaces to a multiple of 8; checks every name and size on the way.
std::string header_json(std::span<const TensorView> tensors, const std::map<std::string, std::string>& metadata,
                        const std::filesystem::path& file, bool check_data = true) {
  std::string out = "{";
  if (!metadata.empty()) out += cat("\"", kMetadataKey, "\":", metadata_json(metadata, file));
  std::set<std::string_view> names;
  std::uint64_t offset = 0;
  for (const TensorView& t : tensors) {
    const std::optional<std::string> name = json_string(t.name);
    if (!name) throw IoError(IoErrc::invalid_name, file, t.name, "name is not UTF-8");
    if (t.name == kMetadataKey) throw IoError(IoErrc::invalid_name, file, t.name, "name is reserved");
    if (!names.insert(t.name).second) throw IoError(IoErrc::duplicate_key, file, t.name, "name given twice");
    const std::uint64_t bytes = checked_size(t.dtype, t.shape, file, t.name);
    if (check_data && bytes != t.data.size()) {
      throw IoError(IoErrc::size_mismatch, file, t.name,
                    cat(t.data.size(), " bytes of data do not match shape ", shape_text(t.shape), " x ",
                        dtype_name(t.dtype), " = ", bytes, " bytes"));
    }
    out += cat(out.size() == 1 ? "" : ",", *name, ":", tensor_json(t, offset, offset + bytes));
    offset += bytes;
  }
  out += "}";
  out.append((8 - out.size() % 8) % 8, ' ');
  if (out.size() > kMaxSafetensorsHeader) {
    throw IoError(IoErrc::header_too_large, file, cat("header of ", out.size(), " bytes is over the limit"));
  }
  return out;
}

}  // namespace

void write_safetensors(const std::filesystem::path& path, std::span<const TensorView> tensors,
                       const std::map<std::string, std::string>& metadata) {
  const std::string header = header_json(tensors, metadata, path);
  std::array<std::byte, 8> length{};
  for (std::size_t i = 0; i < 8; ++i) length[i] = static_cast<std::byte>(header.size() >> (8 * i) & 0xff);
  std::vector<std::span<const std::byte>> pieces{length, std::as_bytes(std::span(header))};
  for (const TensorView& t : tensors) pieces.push_back(t.data);
  detail::write_atomically(path, pieces);
}

SafetensorsWriter::SafetensorsWriter(const std::filesystem::path& path, std::vector<Spec> specs,
                                     const std::map<std::string, std::string>& metadata)
    : path_(path), specs_(std::move(specs)), placed_(specs_.size(), false) {
  std::vector<TensorView> views;
  views.reserve(specs_.size());
  for (const Spec& s : specs_) views.push_back({s.name, s.dtype, s.shape, {}});
  const std::string header = header_json(views, metadata, path, false);
  std::uint64_t offset = 8 + header.size();
  begin_.reserve(specs_.size());
  for (const Spec& s : specs_) {
    begin_.push_back(offset);
    offset += tensor_size(s.dtype, s.shape).bytes;  // checked by header_json
  }
  std::array<std::byte, 8> length{};
  for (std::size_t i = 0; i < 8; ++i) length[i] = static_cast<std::byte>(header.size() >> (8 * i) & 0xff);
  fd_ = detail::create_temp_next_to(path, temp_);
  if (fd_ < 0) throw IoError(IoErrc::write_failed, path, detail::os_error("cannot create a temporary file"));
  total_ = offset;
  if (!detail::write_all(fd_, length) || !detail::write_all(fd_, std::as_bytes(std::span(header)))) {
    const std::string error = detail::os_error("write error");
    ::close(fd_);
    ::unlink(temp_.c_str());
    throw IoError(IoErrc::write_failed, path, error);
  }
  written_ = 8 + header.size();
}

SafetensorsWriter::~SafetensorsWriter() {
  if (fd_ >= 0) {
    ::close(fd_);
    ::unlink(temp_.c_str());
  }
}

void SafetensorsWriter::write(std::span<const std::byte> bytes) {
  if (fd_ < 0) throw IoError(IoErrc::write_failed, path_, "write after commit");
  const std::lock_guard lock(mutex_);
  if (std::find(placed_.begin(), placed_.end(), true) != placed_.end()) {
    throw std::invalid_argument("SafetensorsWriter: write() after write_tensor()");
  }
  streamed_ = true;
  if (bytes.size() > total_ - written_) {
    throw IoError(
        IoErrc::size_mismatch, path_,
        cat("tensor data runs ", bytes.size() - (total_ - written_), " bytes past what the header announces"));
  }
  if (!detail::write_all(fd_, bytes)) throw IoError(IoErrc::write_failed, path_, detail::os_error("write error"));
  written_ += bytes.size();
}

void SafetensorsWriter::write_tensor(std::size_t k, std::span<const std::byte> bytes) {
  if (fd_ < 0) throw IoError(IoErrc::write_failed, path_, "write after commit");
  if (k >= specs_.size()) {
    throw std::invalid_argument(cat("SafetensorsWriter: tensor ", k, " of ", specs_.size()));
  }
  const Spec& s = specs_[k];
  const std::uint64_t size = tensor_size(s.dtype, s.shape).bytes;
  if (bytes.size() != size) {
    throw IoError(IoErrc::size_mismatch, path_, s.name,
                  cat(bytes.size(), " bytes of data do not match shape ", shape_text(s.shape), " x ",
                      dtype_name(s.dtype), " = ", size, " bytes"));
  }
  {
    // Claimed before the bytes go out, so two threads cannot both write tensor k.
    const std::lock_guard lock(mutex_);
    if (streamed_) throw std::invalid_argument("SafetensorsWriter: write_tensor() after write()");
    if (placed_[k]) throw std::invalid_argument(cat("SafetensorsWriter: tensor '", s.name, "' written twice"));
    placed_[k] = true;
  }
  if (!detail::pwrite_all(fd_, bytes, begin_[k])) {
    throw IoError(IoErrc::write_failed, path_, s.name, detail::os_error("write error"));
  }
  const std::lock_guard lock(mutex_);
  written_ += bytes.size();  // counted once whole: commit() refuses a file with a tensor that failed half-way
}

void SafetensorsWriter::commit() {
  if (written_ != total_) {
    throw IoError(IoErrc::size_mismatch, path_, cat("only ", written_, " of ", total_, " bytes were written"));
  }
  detail::commit_temp(fd_, temp_, path_);
}

}  // namespace mf::io
