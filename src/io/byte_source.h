// src/io/byte_source.h (private): the seam between the header readers and where the bytes are. A local file is read
// with pread; a URL by HTTP range requests (src/io/http.h). The safetensors header, the index and config.json are
// read through it, so the header-only checks are one implementation over either.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

namespace mf::io::detail {

// "http://" or "https://" (hf:// is resolved to one of these before anything is read).
bool is_url(const std::filesystem::path& path);

class ByteSource {
 public:
  virtual ~ByteSource() = default;
  virtual std::uint64_t size() const = 0;
  // Exactly `count` bytes from `offset`; IoError truncated when the file is shorter.
  virtual std::vector<std::byte> read(std::uint64_t offset, std::uint64_t count, std::string_view what) const = 0;
};

// `path` opened for reading: a local regular file, or a URL.
std::unique_ptr<ByteSource> open_source(const std::filesystem::path& path);

// A whole small file (config.json, an index), or nullopt when there is none (no such local file, HTTP 404). Over
// `limit` bytes is IoError header_too_large.
std::optional<std::vector<std::byte>> read_small_file(const std::filesystem::path& path, std::uint64_t limit,
                                                      std::string_view what);

// Reads the headers of these safetensors URLs in parallel into the HTTP cache, so that the readers that follow find
// them there. The first failure (in the given order) is thrown.
void prefetch_safetensors_headers(const std::vector<std::filesystem::path>& urls);

}  // namespace mf::io::detail
