#include "minifloat/pack.h"

#include <algorithm>
#include <cassert>
#include <stdexcept>
#include <string>

namespace mf {

std::size_t packed_size(std::size_t count, int bits) {
  switch (bits) {
    case 4: return (count + 1) / 2;
    case 6: return (count + 3) / 4 * 3;
    case 8: return count;
  }
  throw std::invalid_argument("cannot pack " + std::to_string(bits) + "-bit codes");
}

void pack_codes(std::span<const std::uint8_t> codes, int bits, std::span<std::uint8_t> out) {
  assert(out.size() == packed_size(codes.size(), bits));
  const std::size_t n = codes.size();
  if (bits == 8) {
    std::copy(codes.begin(), codes.end(), out.begin());
  } else if (bits == 4) {
    const std::size_t pairs = n / 2;  // a branch-free loop the compiler vectorizes, then the odd last code
    const std::uint8_t* c = codes.data();
    std::uint8_t* o = out.data();
    for (std::size_t i = 0; i < pairs; ++i) o[i] = static_cast<std::uint8_t>((c[2 * i] & 0xF) | (c[2 * i + 1] << 4));
    if (n % 2) o[pairs] = c[n - 1] & 0xF;
  } else {
    const auto put = [&](std::size_t g, std::uint32_t word) {
      for (int b = 0; b < 3; ++b) out[3 * g + b] = static_cast<std::uint8_t>(word >> (8 * b));
    };
    const std::uint8_t* c = codes.data();
    const std::size_t full = n / 4;  // whole groups without bounds checks, then the partial one
    for (std::size_t g = 0; g < full; ++g, c += 4) {
      put(g, (c[0] & 0x3Fu) | (c[1] & 0x3Fu) << 6 | (c[2] & 0x3Fu) << 12 | (c[3] & 0x3Fu) << 18);
    }
    if (n % 4) {
      std::uint32_t word = 0;
      for (std::size_t k = 0; k < n % 4; ++k) word |= static_cast<std::uint32_t>(c[k] & 0x3F) << (6 * k);
      put(full, word);
    }
  }
}

void unpack_codes(std::span<const std::uint8_t> packed, int bits, std::span<std::uint8_t> codes) {
  assert(packed.size() >= packed_size(codes.size(), bits));
  const std::size_t n = codes.size();
  if (bits == 8) {
    std::copy(packed.begin(), packed.begin() + static_cast<std::ptrdiff_t>(n), codes.begin());
  } else if (bits == 4) {
    const std::uint8_t* p = packed.data();
    std::uint8_t* c = codes.data();
    for (std::size_t i = 0; i < n / 2; ++i) {
      c[2 * i] = p[i] & 0xF;
      c[2 * i + 1] = static_cast<std::uint8_t>(p[i] >> 4);
    }
    if (n % 2) c[n - 1] = p[n / 2] & 0xF;
  } else {
    const std::uint8_t* p = packed.data();
    std::uint8_t* c = codes.data();
    const auto word = [&] { return p[0] | p[1] << 8 | static_cast<std::uint32_t>(p[2]) << 16; };
    for (std::size_t g = 0; g < n / 4; ++g, p += 3, c += 4) {  // whole groups, then the partial one
      const std::uint32_t w = word();
      for (int k = 0; k < 4; ++k) c[k] = (w >> (6 * k)) & 0x3F;
    }
    if (n % 4) {
      const std::uint32_t w = word();
      for (std::size_t k = 0; k < n % 4; ++k) c[k] = (w >> (6 * k)) & 0x3F;
    }
  }
}

void ocp_to_ggml_mxfp4(std::span<const std::uint8_t> packed_codes, std::span<const std::uint8_t> scales,
                       std::span<std::uint8_t> ggml_blocks) {
  const std::size_t blocks = scales.size();
  assert(packed_codes.size() == blocks * 16 && ggml_blocks.size() == blocks * kGgmlBlockBytes);
  for (std::size_t b = 0; b < blocks; ++b) {
    const std::uint8_t* in = packed_codes.data() + 16 * b;  // element e at byte e/2, nibble e%2
    std::uint8_t* out = ggml_blocks.data() + kGgmlBlockBytes * b;
    out[0] = scales[b];
    for (int j = 0; j < 16; ++j) {
      const int lo = (in[j / 2] >> (4 * (j % 2))) & 0xF;
      const int hi = (in[(j + 16) / 2] >> (4 * (j % 2))) & 0xF;
      out[1 + j] = static_cast<std::uint8_t>(lo | hi << 4);
    }
  }
}

void ggml_to_ocp_mxfp4(std::span<const std::uint8_t> ggml_blocks, std::span<std::uint8_t> packed_codes,
                       std::span<std::uint8_t> scales) {
  const std::size_t blocks = scales.size();
  assert(packed_codes.size() == blocks * 16 && ggml_blocks.size() == blocks * kGgmlBlockBytes);
  for (std::size_t b = 0; b < blocks; ++b) {
    const std::uint8_t* in = ggml_blocks.data() + kGgmlBlockBytes * b;
    std::uint8_t* out = packed_codes.data() + 16 * b;
    scales[b] = in[0];
    std::fill(out, out + 16, 0);
    for (int j = 0; j < 16; ++j) {
      out[j / 2] |= static_cast<std::uint8_t>((in[1 + j] & 0xF) << (4 * (j % 2)));
      out[(j + 16) / 2] |= static_cast<std::uint8_t>((in[1 + j] >> 4) << (4 * (j % 2)));
    }
  }
}

}  // namespace mf
