// src/io/http.h (private): range reads of one URL, cached as a prefix of the file (headers are prefixes), with
// redirects followed by hand (the token goes only to the Hub endpoint's host), retries and a total time bound.
// http_curl.cc implements it with libcurl; http_none.cc, in a build without libcurl, throws IoError open_failed saying
// so.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "minifloat/remote.h"

namespace mf::io::detail {

// The file's size (the Content-Range total), fetching its first bytes if nothing of it was read yet.
std::uint64_t http_size(const std::string& url);

// Exactly `count` bytes from `offset` (IoError truncated past the end); only what the cache lacks is requested.
std::vector<std::byte> http_read(const std::string& url, std::uint64_t offset, std::uint64_t count,
                                 std::string_view what);

// The whole file when it is at most `limit` bytes (else IoError header_too_large); nullopt on HTTP 404.
std::optional<std::vector<std::byte>> http_read_whole(const std::string& url, std::uint64_t limit,
                                                      std::string_view what);

RemoteStats http_stats();
void http_begin_session();
bool http_built();

}  // namespace mf::io::detail
