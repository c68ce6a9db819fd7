// Little-endian integers from bytes, whatever the host's order (GGUF and safetensors store little-endian).
#pragma once

#include <cstddef>
#include <cstdint>

namespace mf::io {

// The unsigned integer in the `width` (at most 8) bytes at p, least significant first.
inline std::uint64_t load_le(const std::byte* p, std::size_t width) {
  std::uint64_t v = 0;
  for (std::size_t i = width; i-- > 0;) v = v << 8 | static_cast<std::uint64_t>(p[i]);
  return v;
}

}  // namespace mf::io
