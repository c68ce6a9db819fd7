// minifloat serve [--port P] [--root DIR]: the converter page (web/, built by scripts/build-web.sh) on
// http://127.0.0.1:P/. A tiny HTTP/1.1 static file server on POSIX sockets: GET and HEAD, one request per
// connection, files under the root only, with the content types a browser needs (application/wasm for
// WebAssembly.instantiateStreaming). It binds to the loopback address only: it is a viewer, not a web server.
#include <CLI/CLI.hpp>
#include <arpa/inet.h>
#include <csignal>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <memory>
#include <netinet/in.h>
#include <sstream>
#include <string>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "common.h"

#ifndef MF_WEB_SITE_DIR
#define MF_WEB_SITE_DIR "build-web/site"
#endif

namespace mf::cli {
namespace {

namespace fs = std::filesystem;

std::string_view content_type(const fs::path& p) {
  const std::string ext = p.extension().string();
  if (ext == ".html") return "text/html; charset=utf-8";
  if (ext == ".js") return "text/javascript; charset=utf-8";
  if (ext == ".css") return "text/css; charset=utf-8";
  if (ext == ".wasm") return "application/wasm";
  if (ext == ".svg") return "image/svg+xml";
  if (ext == ".json") return "application/json";
  if (ext == ".png") return "image/png";
  return "application/octet-stream";
}

void send_all(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n <= 0) return;  // the client went away: nothing to do
    data.remove_prefix(static_cast<std::size_t>(n));
  }
}

void respond(int fd, int status, std::string_view reason, std::string_view type, const std::string& body, bool head) {
  send_all(fd, fmt::format("HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nCache-Control: no-store\r\n"
                           "X-Content-Type-Options: nosniff\r\nConnection: close\r\n\r\n",
                           status, reason, type, body.size()));
  if (!head) send_all(fd, body);
}

// The file a request path names, or empty: only plain names under root ("..", backslashes, NUL, "%" and a
// leading dot are refused rather than decoded; the page's own files need none of them).
fs::path resolve(const fs::path& root, std::string target) {
  target = target.substr(0, target.find_first_of("?#"));
  if (target.empty() || target[0] != '/') return {};
  if (target.back() == '/') target += "index.html";
  if (target.find("..") != std::string::npos || target.find_first_of("\\%\0", 0, 3) != std::string::npos ||
      target.find("/.") != std::string::npos) {
    return {};
  }
  const fs::path p = root / target.substr(1);
  std::error_code ec;
  return fs::is_regular_file(p, ec) ? p : fs::path{};
}

void handle(int fd, const fs::path& root) {
  std::string request;
  char buf[4096];
  while (request.find("\r\n\r\n") == std::string::npos && request.size() < 16384) {
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return;
    request.append(buf, static_cast<std::size_t>(n));
  }
  std::istringstream line(request.substr(0, request.find("\r\n")));
  std::string method, target, version;
  line >> method >> target >> version;
  const bool head = method == "HEAD";
  if (method != "GET" && !head)
    return respond(fd, 405, "Method Not Allowed", "text/plain", "GET or HEAD only\n", false);
  if (version.rfind("HTTP/1.", 0) != 0) return respond(fd, 400, "Bad Request", "text/plain", "bad request\n", head);
  const fs::path file = resolve(root, target);
  if (file.empty()) return respond(fd, 404, "Not Found", "text/plain", "not found\n", head);
  std::ifstream in(file, std::ios::binary);
  std::ostringstream body;
  body << in.rdbuf();
  respond(fd, 200, "OK", content_type(file), body.str(), head);
}

int listen_on(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw UsageError("cannot create a socket");
  const int yes = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(fd, 16) != 0) {
    ::close(fd);
    throw UsageError(fmt::format("cannot listen on 127.0.0.1:{} (in use? try --port 0 for a free one)", port));
  }
  return fd;
}

int bound_port(int fd) {
  sockaddr_in addr{};
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  return ntohs(addr.sin_port);
}

}  // namespace

void register_serve(CLI::App& app) {
  struct Args {
    int port = 8000;
    std::string root = MF_WEB_SITE_DIR;
  };
  auto a = std::make_shared<Args>();
  auto* sub = app.add_subcommand("serve", "Serve the interactive number-format converter page on 127.0.0.1");
  sub->add_option("--port", a->port, "TCP port (0: any free port)")->check(CLI::Range(0, 65535))->capture_default_str();
  sub->add_option("--root", a->root, "the built page (scripts/build-web.sh writes it)")->capture_default_str();
  sub->callback([a] {
    const fs::path root = a->root;
    std::error_code ec;
    if (!fs::is_regular_file(root / "index.html", ec) || !fs::is_regular_file(root / "minifloat.wasm", ec)) {
      throw UsageError(
          fmt::format("the page is not built in {}: run scripts/build-web.sh (it needs emscripten: "
                      "scripts/install-deps.sh --web)",
                      root.string()));
    }
    const int server = listen_on(a->port);
    write_stdout(
        fmt::format("serving the converter page at http://127.0.0.1:{}/ (Ctrl-C stops)\n", bound_port(server)));
    const timeval timeout{5, 0};  // a client that stalls mid-request cannot hold the one-at-a-time loop for long
    for (;;) {
      const int fd = ::accept(server, nullptr, nullptr);
      if (fd < 0) continue;
      ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
      ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
      handle(fd, root);
      ::close(fd);
    }
  });
}

}  // namespace mf::cli
