// src/io/http.h in a build without libcurl: every remote location is refused, saying why.
#include "file.h"
#include "http.h"

namespace mf::io::detail {
namespace {

[[noreturn]] void refuse(const std::string& url) {
  throw IoError(IoErrc::open_failed, url,
                "minifloat was built without HTTP support (libcurl was not found at build time, or MINIFLOAT_HTTP "
                "was OFF: install libcurl4-openssl-dev and rebuild); download the files and give their local path");
}

}  // namespace

std::uint64_t http_size(const std::string& url) { refuse(url); }
std::vector<std::byte> http_read(const std::string& url, std::uint64_t, std::uint64_t, std::string_view) {
  refuse(url);
}
std::optional<std::vector<std::byte>> http_read_whole(const std::string& url, std::uint64_t, std::string_view) {
  refuse(url);
}
RemoteStats http_stats() { return {}; }
void http_begin_session() {}
bool http_built() { return false; }

}  // namespace mf::io::detail
