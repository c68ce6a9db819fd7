// Looking an enum up by its name in a table of names indexed by the enum's value (the KV formats' tables).
#pragma once

#include <array>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>

namespace mf::detail {

// The enumerator whose name is `name`; else std::invalid_argument "unknown WHAT 'name' (known: a, b, ...)".
template <class Enum, std::size_t N>
Enum enum_named(const std::array<std::string_view, N>& names, std::string_view name, std::string_view what) {
  std::string known;
  for (std::size_t i = 0; i < N; ++i) {
    if (names[i] == name) return static_cast<Enum>(i);
    known += i ? ", " : "";
    known += names[i];
  }
  throw std::invalid_argument("unknown " + std::string(what) + " '" + std::string(name) + "' (known: " + known + ")");
}

}  // namespace mf::detail
