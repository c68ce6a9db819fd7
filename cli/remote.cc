// What a command read over HTTP, on stderr: stdout stays exactly what the same command prints for local files.
#include <fmt/format.h>

#include <cstdio>

#include "remote.h"
#include "minifloat/remote.h"

namespace mf::cli {

void report_remote(const std::string& location) {
  if (!io::is_remote(location)) return;
  const io::RemoteStats s = io::remote_stats();
  const double share =
      s.bytes_total ? 100.0 * static_cast<double>(s.bytes_read) / static_cast<double>(s.bytes_total) : 0.0;
  std::fputs(
      fmt::format("over HTTP: read {} bytes of the {} bytes in {} file{} ({:.4g}%), {} request{}\n", s.bytes_read,
                  s.bytes_total, s.files, s.files == 1 ? "" : "s", share, s.requests, s.requests == 1 ? "" : "s")
          .c_str(),
      stderr);
}

}  // namespace mf::cli
