// Locations: local paths, URLs and hf:// names, and the byte source over each (src/io/byte_source.h).
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <exception>
#include <thread>

#include "byte_source.h"
#include "file.h"
#include "http.h"
#include "little_endian.h"
#include "minifloat/remote.h"
#include "minifloat/safetensors.h"

namespace mf::io {
namespace detail {
namespace {

constexpr int kParallelFetches = 8;  // requests in flight while prefetching headers

class LocalSource final : public ByteSource {
 public:
  explicit LocalSource(const std::filesystem::path& path) : in_(path) {}
  std::uint64_t size() const override { return in_.size(); }
  std::vector<std::byte> read(std::uint64_t offset, std::uint64_t count, std::string_view what) const override {
    return in_.read(offset, count, what);
  }

 private:
  InputFile in_;
};

class RemoteSource final : public ByteSource {
 public:
  explicit RemoteSource(std::string url) : url_(std::move(url)) {}
  std::uint64_t size() const override { return http_size(url_); }
  std::vector<std::byte> read(std::uint64_t offset, std::uint64_t count, std::string_view what) const override {
    return http_read(url_, offset, count, what);
  }

 private:
  std::string url_;
};

// One safetensors header into the HTTP cache: its length, then (when the length is one the reader will accept) the
// header. A length it refuses is left for the reader to name.
void prefetch_header(const std::string& url) {
  const std::uint64_t size = http_size(url);
  if (size < 8) return;
  const std::vector<std::byte> length = http_read(url, 0, 8, "header length");
  const std::uint64_t n = load_le(length.data(), 8);
  if (n <= kMaxSafetensorsHeader && n <= size - 8) http_read(url, 0, 8 + n, "header");
}

}  // namespace

bool is_url(const std::filesystem::path& path) {
  const std::string& s = path.native();
  return s.starts_with("http://") || s.starts_with("https://");
}

std::unique_ptr<ByteSource> open_source(const std::filesystem::path& path) {
  if (is_url(path)) return std::make_unique<RemoteSource>(path.string());
  return std::make_unique<LocalSource>(path);
}

std::optional<std::vector<std::byte>> read_small_file(const std::filesystem::path& path, std::uint64_t limit,
                                                      std::string_view what) {
  if (is_url(path)) return http_read_whole(path.string(), limit, what);
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return std::nullopt;
  const InputFile in(path);
  if (in.size() > limit) {
    throw IoError(IoErrc::header_too_large, path, cat(what, " of ", in.size(), " bytes is over the limit of ", limit));
  }
  return in.read(0, in.size(), what);
}

void prefetch_safetensors_headers(const std::vector<std::filesystem::path>& urls) {
  std::vector<std::exception_ptr> errors(urls.size());
  std::atomic<std::size_t> next{0};
  const auto work = [&] {
    for (std::size_t i; (i = next++) < urls.size();) {
      try {
        prefetch_header(urls[i].string());
      } catch (...) {
        errors[i] = std::current_exception();
      }
    }
  };
  std::vector<std::thread> threads;
  const std::size_t n = std::min<std::size_t>(kParallelFetches, urls.size());
  for (std::size_t t = 1; t < n; ++t) threads.emplace_back(work);
  work();
  for (std::thread& t : threads) t.join();
  for (const std::exception_ptr& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

}  // namespace detail

bool is_remote(std::string_view location) {
  return location.starts_with("http://") || location.starts_with("https://") || location.starts_with("hf://");
}

bool http_available() { return detail::http_built(); }

std::string resolve_hf(std::string_view location) {
  if (!location.starts_with("hf://")) return std::string(location);
  const auto bad = [&](std::string_view why) {
    return IoError(IoErrc::open_failed, std::string(location),
                   detail::cat("not hf://ORG/REPO[@REVISION][/PATH]: ", why));
  };
  std::string_view rest = location.substr(5);
  const std::size_t slash = rest.find('/');
  if (slash == std::string_view::npos || slash == 0) throw bad("no ORG/");
  const std::string_view org = rest.substr(0, slash);
  rest.remove_prefix(slash + 1);
  const std::size_t repo_end = std::min(rest.find('@'), rest.find('/'));
  const std::string_view repo = rest.substr(0, repo_end);
  if (repo.empty()) throw bad("no REPO");
  rest.remove_prefix(std::min(repo_end, rest.size()));
  std::string_view revision = "main";
  if (rest.starts_with("@")) {
    rest.remove_prefix(1);
    revision = rest.substr(0, rest.find('/'));
    if (revision.empty()) throw bad("an empty REVISION after @");
    rest.remove_prefix(revision.size());
  }
  for (const std::string_view part : {org, repo, revision}) {
    if (part == "." || part == ".." || part.find_first_of("?#%\\ ") != std::string_view::npos) {
      throw bad(detail::cat("'", part, "' is not a name"));
    }
  }
  std::string endpoint = "https://huggingface.co";
  if (const char* e = std::getenv("HF_ENDPOINT"); e != nullptr && *e != '\0') endpoint = e;
  while (endpoint.ends_with('/')) endpoint.pop_back();
  std::string path(rest);  // "" or "/PATH"
  while (path.ends_with('/')) path.pop_back();
  return detail::cat(endpoint, "/", org, "/", repo, "/resolve/", revision, path);
}

RemoteStats remote_stats() { return detail::http_stats(); }

void begin_remote_session() { detail::http_begin_session(); }

}  // namespace mf::io
