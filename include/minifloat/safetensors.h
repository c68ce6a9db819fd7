// minifloat/safetensors.h: safetensors checkpoints (docs/spec.md#safetensors), read with every header field checked and
// written all or nothing.
//
// Layout: 8-byte little-endian header length N (at most 100,000,000), N bytes of JSON
//   {"__metadata__": {"key": "value", ...}, "name": {"dtype": "F32", "shape": [3, 4], "data_offsets": [0, 48]}, ...}
// then the data section, which the tensors' [begin, end) offsets must tile exactly.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "minifloat/dtype.h"

namespace mf::io {

inline constexpr std::uint64_t kMaxSafetensorsHeader = 100'000'000;

// A tensor to write, or a tensor of a file read, seen in place. `data` is little-endian, exactly shape x dtype bytes;
// F4/F6 elements are packed and `shape` counts elements, not bytes.
struct TensorView {
  std::string_view name;
  DType dtype;
  std::span<const std::uint64_t> shape;
  std::span<const std::byte> data;
};

// One header entry of a file read.
struct SafetensorsTensor {
  std::string name;
  DType dtype;
  std::vector<std::uint64_t> shape;
  std::uint64_t begin;  // data_offsets, relative to the start of the data section
  std::uint64_t end;
};

// A checked safetensors file, memory-mapped: tensor bytes are read in place (zero-copy) through bytes()/view(), and
// only the pages a caller touches are read from disk. Copies share the mapping; views stay valid while any copy of
// the SafetensorsFile lives.
class SafetensorsFile {
 public:
  // The file's path (or the name given to parse_safetensors), for messages.
  const std::filesystem::path& path() const { return path_; }
  // Bytes before the data section: the 8-byte length and the header.
  std::uint64_t header_size() const { return header_bytes_; }
  // Bytes of the data section (the sum of the tensors' sizes).
  std::uint64_t data_size() const { return data_size_; }
  // False for a file read with read_safetensors_header: its tensors are listed, and bytes() / view() throw.
  bool has_data() const { return has_data_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  // In data order (ascending offsets; header order among empty tensors at one offset).
  const std::vector<SafetensorsTensor>& tensors() const { return tensors_; }
  // The tensor named `name`, or nullptr (a binary search over a name index built once at parse time); past this
  // file's own tensors, the ones borrowed from other files.
  const SafetensorsTensor* find(std::string_view name) const;
  // Makes `from`'s tensor named `name` one that find() answers and bytes() reads (from `from`, which is kept),
  // without listing it in tensors(): a weight's scale that a checkpoint's index puts in another shard, so that the
  // pair is found and read in the weight's shard (borrow_partners, checkpoint_tensors.h). False if `from` has none.
  bool borrow(std::shared_ptr<const SafetensorsFile> from, std::string_view name);
  // `tensor` must be one of tensors(). Throws std::logic_error naming the file and tensor when !has_data().
  std::span<const std::byte> bytes(const SafetensorsTensor& tensor) const;
  TensorView view(const SafetensorsTensor& tensor) const;
  // Drops the tensor's pages from this process's resident memory (the next access reads them from the file again);
  // a no-op for parse_safetensors' copies. A pass over a shard larger than memory calls it after each tensor.
  void release(const SafetensorsTensor& tensor) const;
  // All tensors as views, in data order: write_safetensors(path, file.views(), file.metadata()) copies a file.
  std::vector<TensorView> views() const;

 private:
  friend SafetensorsFile read_safetensors(const std::filesystem::path& path);
  friend SafetensorsFile parse_safetensors(std::span<const std::byte> bytes, const std::filesystem::path& name);
  friend SafetensorsFile read_safetensors_header(const std::filesystem::path& path);
  static SafetensorsFile parse(std::span<const std::byte> all, std::shared_ptr<const void> owner,
                               const std::filesystem::path& path);
  static SafetensorsFile parse(std::span<const std::byte> prefix, std::uint64_t file_size,
                               std::shared_ptr<const void> owner, const std::filesystem::path& path);
  std::map<std::string, std::string> metadata_;
  std::vector<SafetensorsTensor> tensors_;
  std::vector<std::size_t> by_name_;  // positions in tensors_, sorted by name: find() in O(log n)
  struct Borrowed {
    std::shared_ptr<const SafetensorsFile> file;
    const SafetensorsTensor* tensor;  // one of file->tensors()
  };
  std::vector<Borrowed> borrowed_;
  const Borrowed* borrowed(const SafetensorsTensor& tensor) const;
  std::shared_ptr<const void> owner_;  // the mapping (or copied bytes) that data_ points into
  std::span<const std::byte> data_;    // the whole data section (empty when read headers-only)
  std::uint64_t data_size_ = 0;
  bool has_data_ = true;
  std::uint64_t header_bytes_ = 0;
  std::filesystem::path path_;
  bool mapped_ = false;
};

// Maps and checks a whole file. Throws IoError with one code per failure: truncated (shorter than 8 bytes),
// header_too_large, header_past_end, invalid_json, header_not_object, duplicate_key, invalid_metadata,
// invalid_tensor_entry, unknown_dtype, invalid_shape, size_overflow, not_whole_bytes, size_mismatch,
// offsets_out_of_range, offsets_gap, offsets_overlap, trailing_bytes (and open_failed, read_failed).
SafetensorsFile read_safetensors(const std::filesystem::path& path);
// The same checks, reading only the 8-byte length and the header (pread, no mapping): the data section's size is the
// file's size less those, checked against the offsets as read_safetensors checks it, and never read (a sparse or
// zero-filled data region reads the same). For `inspect --headers-only` and `verify --headers-only`: tens of thousands
// of tensors in bounded memory, whatever the shards' size. bytes() and view() of the result throw.
SafetensorsFile read_safetensors_header(const std::filesystem::path& path);
// The same checks on bytes in memory (copied; `name` stands for the file in messages): for fuzzing and for callers
// that already hold a file's bytes.
SafetensorsFile parse_safetensors(std::span<const std::byte> bytes, const std::filesystem::path& name);

// Writes `tensors`, laid out in the order given, with a compact JSON header: "__metadata__" first (only when
// `metadata` is not empty, keys sorted), then the tensors in order, each as {"dtype", "shape", "data_offsets"};
// padded with spaces to a multiple of 8 bytes. All or nothing: a temporary file in the same directory is synced and
// renamed over `path`. Throws IoError (invalid_name, duplicate_key, size_overflow, not_whole_bytes, size_mismatch,
// header_too_large, write_failed).
void write_safetensors(const std::filesystem::path& path, std::span<const TensorView> tensors,
                       const std::map<std::string, std::string>& metadata = {});

// A safetensors file written tensor by tensor, for outputs larger than memory: the header is planned from the specs,
// so every tensor's place in the file is known before any data exists. The bytes arrive either
//   - streamed: write() appends them in spec order, in as many pieces as convenient; or
//   - placed: write_tensor(k, bytes) puts tensor k's whole bytes at its planned offset (pwrite), in any order, and
//     is safe to call from several threads at once for different tensors (how convert fills one shard from many
//     workers).
// One writer takes one of the two. commit() syncs the temporary file and renames it over `path`; destroyed without
// commit(), the writer removes the temporary file: the target never holds a partial file. Same layout and errors as
// write_safetensors.
class SafetensorsWriter {
 public:
  struct Spec {
    std::string name;
    DType dtype;
    std::vector<std::uint64_t> shape;
  };
  SafetensorsWriter(const std::filesystem::path& path, std::vector<Spec> specs,
                    const std::map<std::string, std::string>& metadata = {});
  ~SafetensorsWriter();
  SafetensorsWriter(const SafetensorsWriter&) = delete;
  SafetensorsWriter& operator=(const SafetensorsWriter&) = delete;

  void write(std::span<const std::byte> bytes);  // throws IoError (write_failed, or size_mismatch past the end)
  // Throws IoError size_mismatch (naming the tensor) unless `bytes` is exactly spec k's size, write_failed on an OS
  // error; std::invalid_argument for k out of range, a tensor written twice, or a writer already streamed into.
  void write_tensor(std::size_t k, std::span<const std::byte> bytes);
  // Not concurrently with writes. Throws IoError (size_mismatch if bytes are missing, write_failed).
  void commit();
  std::uint64_t bytes_total() const { return total_; }  // header included

 private:
  std::filesystem::path path_, temp_;
  int fd_ = -1;
  std::uint64_t total_ = 0, written_ = 0;
  std::vector<Spec> specs_;
  std::vector<std::uint64_t> begin_;  // file offset of each tensor's first byte
  std::vector<bool> placed_;          // write_tensor: which tensors arrived (under mutex_)
  bool streamed_ = false;             // write() was used
  std::mutex mutex_;                  // guards written_, placed_ and streamed_
};

}  // namespace mf::io
