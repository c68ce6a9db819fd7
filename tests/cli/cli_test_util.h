// Helpers of the `minifloat` command tests (cli_test.cc, cli_codec_test.cc): output lines, and the one shape of
// every user error.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "run_cli.h"

namespace mf::test {

inline std::vector<std::string> lines(std::string_view text) {
  std::vector<std::string> out;
  while (!text.empty()) {
    const std::size_t nl = text.find('\n');
    out.emplace_back(text.substr(0, nl));
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
  }
  return out;
}

inline std::string joined(const std::vector<std::string>& items) {
  std::string s;
  for (const auto& i : items) s += i + "\n";
  return s;
}

inline std::string hex(std::uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%x", v);
  return buf;
}

// The row of `show` output for a format: the line that starts with its name.
inline std::string row(const std::string& out, std::string_view format) {
  for (const auto& l : lines(out)) {
    if (l.rfind(std::string(format) + " ", 0) == 0) return l;
  }
  return "";
}

// Each of `parts` occurs in `text`.
inline void expect_contains(const std::string& text, std::initializer_list<std::string_view> parts) {
  for (const std::string_view p : parts) EXPECT_NE(text.find(p), std::string::npos) << "'" << p << "' not in: " << text;
}

// Every user error: exit 2, nothing on stdout, exactly one line on stderr, naming `detail`.
inline void expect_usage_error(const Result& r, std::string_view detail) {
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err.rfind("minifloat: error:", 0), 0u) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_EQ(r.err.back(), '\n');
  EXPECT_NE(r.err.find(detail), std::string::npos) << "'" << detail << "' not in: " << r.err;
}

}  // namespace mf::test
