// Helpers shared by the .npy and safetensors tests: a scratch directory, raw bytes, and running real Python.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "minifloat/dtype.h"

namespace mf::io::testing {

namespace fs = std::filesystem;
using Bytes = std::vector<std::byte>;

// A fresh directory, removed with everything in it at the end of the test.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "mf_io_test_XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  fs::path operator/(std::string_view name) const { return path_ / name; }
  const fs::path& path() const { return path_; }
  // Names of everything in the directory (to show that no temporary file was left behind).
  std::vector<std::string> entries() const {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(path_)) names.push_back(e.path().filename().string());
    return names;
  }

 private:
  fs::path path_;
};

// Text from strings and numbers (GCC 12 gives a false -Wrestrict on "literal" + std::string).
template <class... Parts>
std::string str(const Parts&... parts) {
  std::ostringstream out;
  (out << ... << parts);
  return out.str();
}

inline Bytes to_bytes(std::string_view s) {
  Bytes out(s.size());
  std::memcpy(out.data(), s.data(), s.size());
  return out;
}

inline std::string to_string(std::span<const std::byte> b) {
  return std::string(reinterpret_cast<const char*>(b.data()), b.size());
}

inline void write_file(const fs::path& path, std::string_view contents) {
  std::ofstream out(path, std::ios::binary);
  out.write(contents.data(), static_cast<std::streamsize>(contents.size()));
  if (!out) throw std::runtime_error(str("cannot write ", path.string()));
}

inline std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// `bytes` as a little-endian unsigned integer of `width` bytes.
inline std::string le(std::uint64_t value, int width) {
  std::string out;
  for (int i = 0; i < width; ++i) out += static_cast<char>(value >> (8 * i) & 0xff);
  return out;
}

// Distinct, deterministic bytes (a simple LCG), so that a misplaced byte shows.
inline Bytes pattern_bytes(std::size_t n, std::uint32_t seed) {
  Bytes out(n);
  std::uint32_t x = seed * 2654435761u + 1;
  for (auto& b : out) {
    x = x * 1664525u + 1013904223u;
    b = static_cast<std::byte>(x >> 24);
  }
  return out;
}

// Runs `f`, expecting an IoError with `code` whose message contains `part`.
template <class F>
void expect_io_error(F&& f, IoErrc code, std::string_view part) {
  try {
    f();
    ADD_FAILURE() << "expected an IoError containing \"" << part << "\"";
  } catch (const IoError& e) {
    EXPECT_EQ(static_cast<int>(e.code), static_cast<int>(code)) << e.what();
    EXPECT_NE(std::string_view(e.what()).find(part), std::string_view::npos)
        << "message: " << e.what() << "\nexpected to contain: " << part;
  }
}

// ---- Python: the interpreter CMake was configured with (MINIFLOAT_TEST_PYTHON), never one from PATH ----

// Compiled in by tests/CMakeLists.txt, so no environment variable or PATH search can swap in the system Python.
#ifndef MF_TEST_PYTHON
#error "MF_TEST_PYTHON must name the tests' Python interpreter (tests/CMakeLists.txt sets it)"
#endif
inline std::string python() { return MF_TEST_PYTHON; }

// Why the configured interpreter cannot run, or "" when it exists and is executable.
inline std::string python_missing() {
  const std::string p = python();
  if (p.empty() || !fs::path(p).is_absolute()) {
    return str("the tests' Python interpreter is '", p,
               "', not an absolute path: configure with "
               "-DMINIFLOAT_TEST_PYTHON=/abs/path/to/python (./test uses .venv/bin/python)");
  }
  if (::access(p.c_str(), X_OK) != 0) {
    return str("the tests' Python interpreter '", p,
               "' does not exist or cannot run: run ./test (it creates .venv "
               "and installs tests/requirements.txt), or configure with -DMINIFLOAT_TEST_PYTHON=/abs/path/to/python");
  }
  return "";
}

struct RunResult {
  int status = -1;  // exit status, or -1 when the command could not run
  std::string output;
};

// Runs `python script args` (stderr merged into stdout).
inline RunResult run_python(const fs::path& script, const std::string& args) {
  const std::string command = str("'", python(), "' '", script.string(), "' ", args, " 2>&1");
  RunResult r;
  if (std::string why = python_missing(); !why.empty()) {
    r.output = std::move(why);
    return r;
  }
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return r;
  char buffer[4096];
  std::size_t n = 0;
  while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) r.output.append(buffer, n);
  const int raw = ::pclose(pipe);
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  return r;
}

// Fails (never skips) when the interpreter is missing or `module` cannot be imported, saying what to do.
inline ::testing::AssertionResult python_has(const TempDir& dir, std::string_view module, std::string_view pip_name) {
  if (const std::string why = python_missing(); !why.empty()) return ::testing::AssertionFailure() << why;
  const fs::path probe = dir / "probe_module.py";
  write_file(probe, str("import ", module, "\n"));
  const RunResult r = run_python(probe, "");
  if (r.status == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "Python module '" << module << "' is missing for " << python()
                                       << " (the tests' interpreter, MINIFLOAT_TEST_PYTHON): pip install " << pip_name
                                       << " into it, or run ./test\n"
                                       << r.output;
}

}  // namespace mf::io::testing
