// HTTP range reads with libcurl (src/io/http.h). Every request is a Range request; a file's bytes are kept as the
// prefix read so far, so the 8-byte length and then the header cost one request each and a second reader of the same
// header none.
#include <curl/curl.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "file.h"
#include "http.h"

namespace mf::io::detail {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int kMaxRedirects = 10;
constexpr std::uint64_t kFirstBytes = 8;            // a safetensors file's header length
constexpr std::uint64_t kFirstWhole = 1 << 16;      // of a small file read whole (config.json, an index)
constexpr std::uint64_t kErrorBodyLimit = 1 << 16;  // of an error page, kept for nothing: only bounded

// ---- settings from the environment ----

double env_number(const char* name, double fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  char* end = nullptr;
  const double d = std::strtod(v, &end);
  return end != v && *end == '\0' && d >= 0 ? d : fallback;
}

std::string trim(std::string s) {
  const auto space = [](unsigned char c) { return std::isspace(c) != 0; };
  while (!s.empty() && space(static_cast<unsigned char>(s.back()))) s.pop_back();
  std::size_t i = 0;
  while (i < s.size() && space(static_cast<unsigned char>(s[i]))) ++i;
  return s.substr(i);
}

// The Hub's token: HF_TOKEN, else the file `huggingface-cli login` writes ($HF_HOME/token, default
// ~/.cache/huggingface/token).
std::string hub_token() {
  if (const char* t = std::getenv("HF_TOKEN"); t != nullptr && *t != '\0') return trim(t);
  std::filesystem::path file;
  if (const char* home = std::getenv("HF_HOME"); home != nullptr && *home != '\0') {
    file = std::filesystem::path(home) / "token";
  } else if (const char* h = std::getenv("HOME"); h != nullptr && *h != '\0') {
    file = std::filesystem::path(h) / ".cache" / "huggingface" / "token";
  } else {
    return "";
  }
  std::ifstream in(file);
  std::string token;
  std::getline(in, token);
  return trim(token);
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// "scheme://host[:port]", lowercased: where the token may go.
std::string origin(std::string_view url) {
  const std::size_t scheme = url.find("://");
  if (scheme == std::string_view::npos) return "";
  const std::size_t end = url.find_first_of("/?#", scheme + 3);
  return lower(std::string(url.substr(0, end)));
}

// The Hub's: where the token may go.
std::string endpoint_origin() {
  const char* endpoint = std::getenv("HF_ENDPOINT");
  return origin(endpoint != nullptr && *endpoint != '\0' ? endpoint : "https://huggingface.co");
}

// A server's text (a header, a URL) as messages show it: printable, at most 400 characters, and a URL without its
// query, which on a CDN holds a signature.
std::string shown(std::string_view text) {
  std::string out(text.substr(0, std::min<std::size_t>(text.find('?'), 400)));
  for (char& c : out) {
    if (!std::isprint(static_cast<unsigned char>(c))) c = '?';
  }
  return out;
}

// ---- the session: counters, the time bound, the cache ----

struct Entry {
  std::mutex mutex;       // one request at a time per file
  std::string final_url;  // where the last redirect led (reused: one redirect per file, not per read)
  std::optional<std::uint64_t> total;
  std::string etag;  // of the first reply: a later reply with another is a file that changed
  std::vector<std::byte> prefix;
};

struct Session {
  std::mutex mutex;
  std::map<std::string, std::shared_ptr<Entry>> files;
  // "{endpoint}/ORG/REPO/resolve/BRANCH/" -> "{endpoint}/ORG/REPO/resolve/COMMIT/": the commit the Hub's first answer
  // named (X-Repo-Commit), so that every later file comes from it even if the branch moves meanwhile.
  std::map<std::string, std::string> pinned;
  std::atomic<std::uint64_t> bytes_read{0}, bytes_total{0}, files_sized{0}, requests{0};
  Clock::time_point deadline{};
  bool started = false;
  double timeout_s = 120;
};

Session& session() {
  static Session s;
  return s;
}

void start_locked(Session& s) {
  s.timeout_s = env_number("MINIFLOAT_HTTP_TIMEOUT", 120);
  s.deadline = Clock::now() + std::chrono::milliseconds(static_cast<std::int64_t>(s.timeout_s * 1000));
  s.started = true;
}

Clock::time_point deadline() {
  Session& s = session();
  const std::lock_guard lock(s.mutex);
  if (!s.started) start_locked(s);
  return s.deadline;
}

std::shared_ptr<Entry> entry(const std::string& url) {
  Session& s = session();
  const std::lock_guard lock(s.mutex);
  std::shared_ptr<Entry>& e = s.files[url];
  if (!e) e = std::make_shared<Entry>();
  return e;
}

void init_curl() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

// ---- one request ----

struct Reply {
  CURLcode code = CURLE_OK;
  long status = 0;
  std::string content_range, etag, location, repo_commit;
  std::vector<std::byte> body;
  bool range_ignored = false, too_large = false;
  std::uint64_t limit = 0;        // of a 206's body: the range asked for
  std::uint64_t whole_limit = 0;  // of a 200's body (a small file sent whole); 0: a 200 is a server ignoring Range
  CURL* curl = nullptr;
};

std::size_t on_header(char* data, std::size_t size, std::size_t n, void* user) {
  auto& r = *static_cast<Reply*>(user);
  const std::string line(data, size * n);
  if (line.starts_with("HTTP/")) {  // a new reply (after a 100 Continue): forget the last one's headers
    r.content_range.clear();
    r.etag.clear();
    r.location.clear();
  }
  const std::size_t colon = line.find(':');
  if (colon != std::string::npos) {
    const std::string key = lower(line.substr(0, colon));
    const std::string value = trim(line.substr(colon + 1));
    if (key == "content-range") r.content_range = value;
    if (key == "etag") r.etag = value;
    if (key == "location") r.location = value;
    if (key == "x-repo-commit") r.repo_commit = value;
  }
  return size * n;
}

std::size_t on_body(char* data, std::size_t size, std::size_t n, void* user) {
  auto& r = *static_cast<Reply*>(user);
  const std::size_t bytes = size * n;
  session().bytes_read += bytes;
  long status = 0;
  curl_easy_getinfo(r.curl, CURLINFO_RESPONSE_CODE, &status);
  if (status == 200 && r.whole_limit == 0) {  // the whole file is coming: stop at its first bytes
    r.range_ignored = true;
    return 0;
  }
  const std::uint64_t limit = status == 206 ? r.limit : status == 200 ? r.whole_limit : kErrorBodyLimit;
  if (r.body.size() + bytes > limit) {
    r.too_large = true;
    return 0;
  }
  if (status == 200 || status == 206) {
    const auto* p = reinterpret_cast<const std::byte*>(data);
    r.body.insert(r.body.end(), p, p + bytes);
  }
  return bytes;
}

struct CurlHandle {
  CURL* p = curl_easy_init();
  curl_slist* headers = nullptr;
  ~CurlHandle() {
    curl_slist_free_all(headers);
    curl_easy_cleanup(p);
  }
};

// GET `url` with Range: bytes=begin-last, no redirect followed, within the time left.
Reply get(const std::string& url, std::uint64_t begin, std::uint64_t last, std::uint64_t whole_limit,
          Clock::time_point until, const std::filesystem::path& name) {
  init_curl();
  CurlHandle h;
  if (h.p == nullptr) throw IoError(IoErrc::read_failed, name, "libcurl could not start a request");
  Reply r;
  r.curl = h.p;
  r.limit = last - begin + 1;
  r.whole_limit = whole_limit;
  const std::string range = cat("Range: bytes=", begin, "-", last);
  h.headers = curl_slist_append(h.headers, range.c_str());
  // The token only to the endpoint's own host: never across a redirect to a CDN or anywhere else.
  if (origin(url) == endpoint_origin()) {
    if (const std::string token = hub_token(); !token.empty()) {
      h.headers = curl_slist_append(h.headers, cat("Authorization: Bearer ", token).c_str());
    }
  }
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now()).count();
  curl_easy_setopt(h.p, CURLOPT_URL, url.c_str());
  curl_easy_setopt(h.p, CURLOPT_HTTPHEADER, h.headers);
  curl_easy_setopt(h.p, CURLOPT_FOLLOWLOCATION, 0L);
#if LIBCURL_VERSION_NUM >= 0x075500
  curl_easy_setopt(h.p, CURLOPT_PROTOCOLS_STR, "http,https");
#else
  curl_easy_setopt(h.p, CURLOPT_PROTOCOLS, static_cast<long>(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
  curl_easy_setopt(h.p, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h.p, CURLOPT_TIMEOUT_MS, static_cast<long>(std::max<std::int64_t>(left, 1)));
  curl_easy_setopt(h.p, CURLOPT_USERAGENT, "minifloat");
  curl_easy_setopt(h.p, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(h.p, CURLOPT_HEADERDATA, &r);
  curl_easy_setopt(h.p, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(h.p, CURLOPT_WRITEDATA, &r);
  ++session().requests;
  r.code = curl_easy_perform(h.p);
  curl_easy_getinfo(h.p, CURLINFO_RESPONSE_CODE, &r.status);
  if (char* to = nullptr; curl_easy_getinfo(h.p, CURLINFO_REDIRECT_URL, &to) == CURLE_OK && to != nullptr) {
    r.location = to;  // Location resolved against the request's URL
  }
  r.curl = nullptr;
  return r;
}

bool redirect(long status) { return status == 301 || status == 302 || status == 303 || status == 307 || status == 308; }

bool transient(const Reply& r) {
  if (r.code == CURLE_OK) return r.status >= 500 || r.status == 429;
  return r.code == CURLE_COULDNT_CONNECT || r.code == CURLE_RECV_ERROR || r.code == CURLE_SEND_ERROR ||
         r.code == CURLE_GOT_NOTHING || r.code == CURLE_PARTIAL_FILE;
}

// "{endpoint}/ORG/REPO/resolve/REVISION/" of a Hub URL, or "".
std::string resolve_prefix(const std::string& url) {
  if (origin(url) != endpoint_origin()) return "";
  const std::size_t at = url.find("/resolve/");
  const std::size_t end = at == std::string::npos ? at : url.find('/', at + 9);
  return end == std::string::npos ? "" : url.substr(0, end + 1);
}

// `url` on the commit its branch was pinned to, if it was.
std::string pinned_url(const std::string& url) {
  const std::string prefix = resolve_prefix(url);
  if (prefix.empty()) return url;
  Session& s = session();
  const std::lock_guard lock(s.mutex);
  const auto it = s.pinned.find(prefix);
  return it == s.pinned.end() ? url : it->second + url.substr(prefix.size());
}

// The Hub named the commit `url`'s revision is at: pin the revision to it for the rest of the session.
void pin(const std::string& url, const std::string& commit) {
  const std::string prefix = resolve_prefix(url);
  if (prefix.empty() || commit.empty() || commit.find_first_of("/?#% ") != std::string::npos) return;
  const std::string to = prefix.substr(0, prefix.rfind('/', prefix.size() - 2) + 1) + commit + "/";
  if (to == prefix) return;
  Session& s = session();
  const std::lock_guard lock(s.mutex);
  s.pinned.emplace(prefix, to);
}

// "bytes a-b/total" or "bytes */total".
struct ContentRange {
  std::optional<std::uint64_t> first, last;
  std::uint64_t total = 0;
};

std::optional<ContentRange> parse_content_range(std::string_view text) {
  if (!text.starts_with("bytes ")) return std::nullopt;
  text.remove_prefix(6);
  const std::size_t slash = text.find('/');
  if (slash == std::string_view::npos) return std::nullopt;
  const auto number = [](std::string_view s) -> std::optional<std::uint64_t> {
    if (s.empty() || s.size() > 19 || s.find_first_not_of("0123456789") != std::string_view::npos) return std::nullopt;
    return std::stoull(std::string(s));
  };
  ContentRange cr;
  const std::optional<std::uint64_t> total = number(text.substr(slash + 1));
  if (!total) return std::nullopt;
  cr.total = *total;
  const std::string_view span = text.substr(0, slash);
  if (span == "*") return cr;
  const std::size_t dash = span.find('-');
  if (dash == std::string_view::npos) return std::nullopt;
  cr.first = number(span.substr(0, dash));
  cr.last = number(span.substr(dash + 1));
  if (!cr.first || !cr.last || *cr.first > *cr.last || *cr.last >= cr.total) return std::nullopt;
  return cr;
}

// What a fetch gives: the bytes from `begin` (fewer when the file ends first) and the file's size.
struct Got {
  std::vector<std::byte> bytes;
  std::uint64_t total = 0;
  bool missing = false;  // HTTP 404
};

// bytes=begin-last of e's file, redirects followed (at most kMaxRedirects), transient failures retried
// (MINIFLOAT_HTTP_RETRIES, default 3) with a growing pause, all inside the session's time bound.
Got fetch(const std::string& url, Entry& e, std::uint64_t begin, std::uint64_t last, std::uint64_t whole_limit) {
  const std::filesystem::path name = shown(url);
  const Clock::time_point until = deadline();
  const int retries = static_cast<int>(env_number("MINIFLOAT_HTTP_RETRIES", 3));
  const auto timed_out = [&] {
    return IoError(IoErrc::read_failed, name,
                   cat("no answer within the time bound of ", static_cast<std::int64_t>(session().timeout_s),
                       " s (MINIFLOAT_HTTP_TIMEOUT)"));
  };
  std::string last_problem;
  for (int attempt = 0;; ++attempt) {
    if (attempt > 0) {
      if (attempt > retries) {
        throw IoError(last_problem.starts_with("truncated") ? IoErrc::truncated : IoErrc::read_failed, name,
                      cat(last_problem, " (", attempt, " attempts)"));
      }
      const auto pause = std::chrono::milliseconds(200 << std::min(attempt - 1, 5));
      if (Clock::now() + pause >= until) throw timed_out();
      std::this_thread::sleep_for(pause);
    }
    std::string at = e.final_url.empty() ? pinned_url(url) : e.final_url;
    std::string commit;
    Reply r;
    for (int hops = 0;; ++hops) {
      if (Clock::now() >= until) throw timed_out();
      r = get(at, begin, last, whole_limit, until, name);
      if (commit.empty()) commit = r.repo_commit;
      if (r.code != CURLE_OK || !redirect(r.status)) break;
      if (hops == kMaxRedirects) {
        throw IoError(IoErrc::read_failed, name,
                      cat("more than ", kMaxRedirects, " redirects (a loop?), the last to ", shown(r.location)));
      }
      if (r.location.empty()) {
        throw IoError(IoErrc::read_failed, name, cat("HTTP ", r.status, " redirect with no Location"));
      }
      at = r.location;
    }
    if (r.range_ignored) {
      throw IoError(IoErrc::read_failed, name,
                    "the server ignored the Range request and sent the whole file (HTTP 200); minifloat reads only "
                    "headers over HTTP and stopped");
    }
    if (r.too_large && r.status == 200) {
      throw IoError(IoErrc::header_too_large, name, cat("the file is over the limit of ", whole_limit, " bytes"));
    }
    if (r.too_large && r.status == 206) {
      throw IoError(IoErrc::read_failed, name,
                    cat("the server sent more than the ", last - begin + 1, " bytes asked for"));
    }
    if (r.code == CURLE_OPERATION_TIMEDOUT) throw timed_out();
    if (transient(r)) {
      last_problem = r.code == CURLE_PARTIAL_FILE ? cat("truncated reply: the body ended before its Content-Length")
                     : r.code != CURLE_OK         ? cat("request failed: ", curl_easy_strerror(r.code))
                                                  : cat("HTTP ", r.status);
      continue;
    }
    if (r.code != CURLE_OK)
      throw IoError(IoErrc::read_failed, name, cat("request failed: ", curl_easy_strerror(r.code)));
    if (r.status == 404 || r.status == 410) return {{}, 0, true};
    if (r.status == 401 || r.status == 403) {
      throw IoError(IoErrc::read_failed, name,
                    cat("HTTP ", r.status,
                        ": not authorized (a gated or private repository needs a token: HF_TOKEN "
                        "or $HF_HOME/token)"));
    }
    Got got;
    if (r.status == 416) {  // the range starts at or past the end: only the size comes back
      const std::optional<ContentRange> cr = parse_content_range(r.content_range);
      if (!cr || cr->first) {
        throw IoError(IoErrc::read_failed, name,
                      cat("HTTP 416 without a \"bytes */size\" Content-Range (got '", shown(r.content_range), "')"));
      }
      got.total = cr->total;
    } else if (r.status == 206) {
      const std::optional<ContentRange> cr = parse_content_range(r.content_range);
      const std::uint64_t want_last = cr ? std::min(last, cr->total - 1) : 0;
      if (!cr || !cr->first || *cr->first != begin || *cr->last != want_last) {
        throw IoError(IoErrc::read_failed, name,
                      cat("Content-Range '", shown(r.content_range), "' does not answer the request for bytes ", begin,
                          "-", last));
      }
      if (r.body.size() != *cr->last - *cr->first + 1) {
        throw IoError(IoErrc::read_failed, name,
                      cat("the body holds ", r.body.size(), " bytes, its Content-Range '", shown(r.content_range), "' ",
                          *cr->last - *cr->first + 1));
      }
      got.total = cr->total;
      got.bytes = std::move(r.body);
    } else if (r.status == 200 && whole_limit != 0) {
      got.total = r.body.size();
      got.bytes = std::move(r.body);
    } else {
      throw IoError(IoErrc::read_failed, name, cat("HTTP ", r.status));
    }
    if (!e.etag.empty() && !r.etag.empty() && r.etag != e.etag) {
      throw IoError(IoErrc::read_failed, name,
                    cat("the file changed between two reads (ETag ", shown(e.etag), ", then ", shown(r.etag), ")"));
    }
    if (e.total && *e.total != got.total) {
      throw IoError(IoErrc::read_failed, name,
                    cat("the file changed between two reads (", *e.total, " bytes, then ", got.total, ")"));
    }
    if (e.etag.empty()) e.etag = r.etag;
    if (!e.total) {
      e.total = got.total;
      session().bytes_total += got.total;
      ++session().files_sized;
    }
    e.final_url = at;
    pin(url, commit);
    return got;
  }
}

// Extends e's prefix to `end` bytes (or the file's end).
void extend(const std::string& url, Entry& e, std::uint64_t end) {
  if (e.total) end = std::min(end, *e.total);
  if (e.prefix.size() >= end && e.total) return;
  const std::uint64_t begin = e.prefix.size();
  Got got = fetch(url, e, begin, std::max(end, begin + 1) - 1, 0);
  if (got.missing) throw IoError(IoErrc::open_failed, shown(url), "HTTP 404: no such file");
  e.prefix.insert(e.prefix.end(), got.bytes.begin(), got.bytes.end());
}

}  // namespace

std::uint64_t http_size(const std::string& url) {
  const std::shared_ptr<Entry> e = entry(url);
  const std::lock_guard lock(e->mutex);
  if (!e->total) extend(url, *e, kFirstBytes);
  return *e->total;
}

std::vector<std::byte> http_read(const std::string& url, std::uint64_t offset, std::uint64_t count,
                                 std::string_view what) {
  const std::shared_ptr<Entry> e = entry(url);
  const std::lock_guard lock(e->mutex);
  if (!e->total) extend(url, *e, kFirstBytes);
  // As InputFile::require words it for a local file.
  if (offset > *e->total || count > *e->total - offset) {
    throw IoError(IoErrc::truncated, shown(url),
                  cat("file ends in the ", what, " (needs ", offset, " + ", count, " bytes, has ", *e->total, ")"));
  }
  if (count == 0) return {};
  extend(url, *e, offset + count);
  const auto from = e->prefix.begin() + static_cast<std::ptrdiff_t>(offset);
  return {from, from + static_cast<std::ptrdiff_t>(count)};
}

std::optional<std::vector<std::byte>> http_read_whole(const std::string& url, std::uint64_t limit,
                                                      std::string_view what) {
  const std::shared_ptr<Entry> e = entry(url);
  const std::lock_guard lock(e->mutex);
  if (!e->total) {
    // Its first bytes: a file over the limit is known by its size, and refused before more is read.
    Got got = fetch(url, *e, 0, std::min<std::uint64_t>(limit, kFirstWhole) - 1, limit);
    if (got.missing) return std::nullopt;
    e->prefix = std::move(got.bytes);
  }
  if (*e->total > limit) {
    throw IoError(IoErrc::header_too_large, shown(url),
                  cat(what, " of ", *e->total, " bytes is over the limit of ", limit));
  }
  if (e->prefix.size() < *e->total) extend(url, *e, *e->total);
  return e->prefix;
}

RemoteStats http_stats() {
  const Session& s = session();
  return {s.bytes_read, s.bytes_total, s.files_sized, s.requests};
}

void http_begin_session() {
  Session& s = session();
  const std::lock_guard lock(s.mutex);
  s.files.clear();
  s.pinned.clear();
  s.bytes_read = 0;
  s.bytes_total = 0;
  s.files_sized = 0;
  s.requests = 0;
  start_locked(s);
}

bool http_built() { return true; }

}  // namespace mf::io::detail
