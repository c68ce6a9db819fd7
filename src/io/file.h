// src/io/file.h (private): checked reads and all-or-nothing writes, shared by the .npy and safetensors code.
#pragma once

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "minifloat/dtype.h"

namespace mf::io::detail {

// Message text from strings and integers. (Also sidesteps GCC 12's false -Wrestrict on "literal" + std::string.)
template <class... Parts>
std::string cat(const Parts&... parts) {
  std::string out;
  const auto add = [&out](const auto& part) {
    if constexpr (std::is_integral_v<std::remove_cvref_t<decltype(part)>>) {
      out += std::to_string(part);
    } else {
      out += std::string_view(part);
    }
  };
  (add(parts), ...);
  return out;
}

inline std::string os_error(std::string_view what) { return cat(what, ": ", std::strerror(errno)); }

// A regular file opened for reading, with its size taken once at open.
class InputFile {
 public:
  explicit InputFile(const std::filesystem::path& path) : path_(path) {
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) throw IoError(IoErrc::open_failed, path_, os_error("cannot open"));
    struct stat st {};
    const bool stat_ok = ::fstat(fd_, &st) == 0;
    if (!stat_ok || !S_ISREG(st.st_mode)) {
      const std::string detail = stat_ok ? "not a regular file" : os_error("cannot stat");
      ::close(fd_);
      throw IoError(IoErrc::open_failed, path_, detail);
    }
    size_ = static_cast<std::uint64_t>(st.st_size);
  }
  ~InputFile() { ::close(fd_); }
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;

  std::uint64_t size() const { return size_; }
  const std::filesystem::path& path() const { return path_; }
  int fd() const { return fd_; }

  // Throws `truncated` unless the file holds `count` bytes from `offset`; `what` names what would be cut off.
  void require(std::uint64_t offset, std::uint64_t count, std::string_view what) const {
    if (offset > size_ || count > size_ - offset) {
      throw IoError(IoErrc::truncated, path_,
                    cat("file ends in the ", what, " (needs ", offset, " + ", count, " bytes, has ", size_, ")"));
    }
  }

  // Exactly `count` bytes from `offset`, checked against the file size before anything is allocated.
  std::vector<std::byte> read(std::uint64_t offset, std::uint64_t count, std::string_view what) const {
    require(offset, count, what);
    std::vector<std::byte> out(static_cast<std::size_t>(count));
    std::size_t done = 0;
    while (done < out.size()) {
      const ::ssize_t n = ::pread(fd_, out.data() + done, out.size() - done, static_cast<::off_t>(offset + done));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) throw IoError(IoErrc::read_failed, path_, os_error("read error"));
      if (n == 0) throw IoError(IoErrc::truncated, path_, "file shrank while being read");
      done += static_cast<std::size_t>(n);
    }
    return out;
  }

 private:
  std::filesystem::path path_;
  int fd_ = -1;
  std::uint64_t size_ = 0;
};

// A whole regular file mapped read-only: tensors are read in place, and the OS pages them in (and drops them under
// memory pressure) as callers touch them. A file truncated by another process while mapped raises SIGBUS on access;
// checkpoints are written by rename, which never truncates a file in place.
class MappedFile {
 public:
  explicit MappedFile(const std::filesystem::path& path) : in_(path) {
    if (in_.size() == 0) return;  // mmap of zero bytes fails; an empty span is the answer
    void* p = ::mmap(nullptr, static_cast<std::size_t>(in_.size()), PROT_READ, MAP_PRIVATE, in_.fd(), 0);
    if (p == MAP_FAILED) throw IoError(IoErrc::read_failed, path, os_error("cannot map"));
    data_ = static_cast<const std::byte*>(p);
    ::madvise(p, static_cast<std::size_t>(in_.size()), MADV_SEQUENTIAL);
  }
  ~MappedFile() {
    if (data_ != nullptr) ::munmap(const_cast<std::byte*>(data_), static_cast<std::size_t>(in_.size()));
  }
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  std::span<const std::byte> bytes() const { return {data_, static_cast<std::size_t>(in_.size())}; }

 private:
  InputFile in_;
  const std::byte* data_ = nullptr;
};

// A fresh file next to `path` (same directory, so the final rename stays on one file system). O_EXCL with a
// pid + counter name rather than mkstemp, whose 0600 mode would ignore the user's umask.
inline int create_temp_next_to(const std::filesystem::path& path, std::filesystem::path& temp) {
  static std::atomic<unsigned> counter{0};
  for (int attempt = 0; attempt < 100; ++attempt) {
    temp = path.parent_path() / cat(".", path.filename().string(), ".tmp-", ::getpid(), "-", counter.fetch_add(1));
    const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0 || errno != EEXIST) return fd;
  }
  errno = EEXIST;
  return -1;
}

inline bool write_all(int fd, std::span<const std::byte> bytes) {
  while (!bytes.empty()) {
    const ::ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    bytes = bytes.subspan(static_cast<std::size_t>(n));
  }
  return true;
}

// write_all at a fixed offset, leaving the file position alone: several threads may fill one file this way at once.
inline bool pwrite_all(int fd, std::span<const std::byte> bytes, std::uint64_t offset) {
  while (!bytes.empty()) {
    const ::ssize_t n = ::pwrite(fd, bytes.data(), bytes.size(), static_cast<::off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    bytes = bytes.subspan(static_cast<std::size_t>(n));
    offset += static_cast<std::uint64_t>(n);
  }
  return true;
}

// The end of a write to `temp` (from create_temp_next_to): syncs and closes `fd` (set to -1), then renames `temp`
// over `path`; on any failure `temp` is removed and IoError write_failed thrown.
inline void commit_temp(int& fd, const std::filesystem::path& temp, const std::filesystem::path& path) {
  std::string error;
  if (::fsync(fd) != 0) error = os_error("fsync failed");
  if (::close(fd) != 0 && error.empty()) error = os_error("close failed");
  fd = -1;
  if (error.empty() && ::rename(temp.c_str(), path.c_str()) != 0) error = os_error("rename failed");
  if (!error.empty()) {
    ::unlink(temp.c_str());
    throw IoError(IoErrc::write_failed, path, error);
  }
}

// Writes `pieces` in order to a temporary file next to `path`, syncs it and renames it over `path`: readers see the
// old file or the whole new one, never a part, and the temporary file is removed on any failure.
inline void write_atomically(const std::filesystem::path& path, std::span<const std::span<const std::byte>> pieces) {
  std::filesystem::path temp;
  const int fd = create_temp_next_to(path, temp);
  if (fd < 0) throw IoError(IoErrc::write_failed, path, os_error("cannot create a temporary file"));
  std::string error;  // the first failure, with its errno text taken at once
  const auto note = [&error](std::string_view what) {
    if (error.empty()) error = os_error(what);
  };
  for (const std::span<const std::byte> piece : pieces) {
    if (!write_all(fd, piece)) {
      note("write error");
      break;
    }
  }
  if (error.empty() && ::fsync(fd) != 0) note("fsync failed");
  if (::close(fd) != 0) note("close failed");
  if (error.empty() && ::rename(temp.c_str(), path.c_str()) != 0) note("rename failed");
  if (!error.empty()) {
    ::unlink(temp.c_str());
    throw IoError(IoErrc::write_failed, path, error);
  }
  // Best effort: make the rename itself durable. The new file is complete whether or not this succeeds.
  const std::filesystem::path dir = path.parent_path().empty() ? "." : path.parent_path();
  const int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd >= 0) {
    ::fsync(dir_fd);
    ::close(dir_fd);
  }
}

}  // namespace mf::io::detail
