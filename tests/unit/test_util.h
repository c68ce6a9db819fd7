// Small helpers shared by the unit tests.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace mf::test {

// "0x1f": how mismatches print codes and bit patterns.
inline std::string hex(std::uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace mf::test
