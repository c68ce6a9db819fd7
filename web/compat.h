// Forced into every file of the WebAssembly build (scripts/build-web.sh, -include). Debian 12's emscripten 3.1.6
// ships a libc++ without std::bit_cast and without the floating-point std::to_chars / std::from_chars, which the
// library uses (the constexpr codec; shortest() and parse_decimal() in src/formats/text.cc). This header supplies
// them so the library compiles unchanged:
//   bit_cast    clang's builtin, the same operation;
//   to_chars    the shortest digits that read back to the same value (%.*e searched from 1 digit up), written in
//               fixed or scientific notation, whichever is shorter, fixed on a tie, as the standard specifies;
//   from_chars  musl's strtod (correctly rounded); callers here pass no sign, blank or hex prefix.
// The WebAssembly-against-native test (tests/web) checks the page's numbers against the native build.
#pragma once

#include <bit>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <system_error>
#include <version>

#ifndef __cpp_lib_bit_cast
namespace std {
template <class To, class From>
constexpr To bit_cast(const From& from) noexcept {
  return __builtin_bit_cast(To, from);
}
}  // namespace std
#endif

namespace mf_compat {

// The shortest decimal of x that reads back to x through `back` (strtof or strtod), in to_chars' notation.
template <class T, class Back>
std::string shortest_text(T x, Back back, int max_digits) {
  if (std::isinf(x)) return x < 0 ? "-inf" : "inf";
  if (x == 0) return std::signbit(x) ? "-0" : "0";
  char buf[64];
  int p = 1;
  for (; p < max_digits; ++p) {
    std::snprintf(buf, sizeof buf, "%.*e", p - 1, static_cast<double>(x));
    if (back(buf) == x) break;
  }
  std::snprintf(buf, sizeof buf, "%.*e", p - 1, static_cast<double>(x));
  // buf is "-d.ddde+XX": split into sign, digits and exponent.
  const std::string s = buf;
  const bool negative = s[0] == '-';
  const std::size_t e = s.find('e');
  std::string digits;
  for (std::size_t i = negative ? 1 : 0; i < e; ++i)
    if (s[i] != '.') digits += s[i];
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
  const int exp10 = std::atoi(s.c_str() + e + 1);
  const int n = static_cast<int>(digits.size());
  std::string sci = digits.substr(0, 1) + (n > 1 ? "." + digits.substr(1) : "") + (exp10 < 0 ? "e-" : "e+");
  const int a = exp10 < 0 ? -exp10 : exp10;
  sci += (a < 10 ? "0" : "") + std::to_string(a);
  std::string fixed;
  if (exp10 < 0)
    fixed = "0." + std::string(static_cast<std::size_t>(-exp10 - 1), '0') + digits;
  else if (exp10 + 1 >= n)
    fixed = digits + std::string(static_cast<std::size_t>(exp10 + 1 - n), '0');
  else
    fixed = digits.substr(0, static_cast<std::size_t>(exp10 + 1)) + "." +
            digits.substr(static_cast<std::size_t>(exp10 + 1));
  return (negative ? "-" : "") + (fixed.size() <= sci.size() ? fixed : sci);
}

inline std::to_chars_result put(char* first, char* last, const std::string& s) {
  if (static_cast<std::size_t>(last - first) < s.size()) return {last, std::errc::value_too_large};
  std::memcpy(first, s.data(), s.size());
  return {first + s.size(), std::errc()};
}

}  // namespace mf_compat

namespace std {
inline to_chars_result to_chars(char* first, char* last, float x) {
  return mf_compat::put(first, last,
                        mf_compat::shortest_text(
                            x, [](const char* s) { return std::strtof(s, nullptr); }, 9));
}
inline to_chars_result to_chars(char* first, char* last, double x) {
  return mf_compat::put(first, last,
                        mf_compat::shortest_text(
                            x, [](const char* s) { return std::strtod(s, nullptr); }, 17));
}
inline from_chars_result from_chars(const char* first, const char* last, double& value) {
  const std::string text(first, last);
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str()) return {first, errc::invalid_argument};
  const char* stop = first + (end - text.c_str());
  if (errno == ERANGE) return {stop, errc::result_out_of_range};
  value = v;
  return {stop, errc()};
}
}  // namespace std
