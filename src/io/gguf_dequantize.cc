// Dequantizing GGUF tensors: the block types minifloat reads (Q8_0, Q4_0, Q4_1, MXFP4) and the float ones, as
// gguf-py's gguf.quants computes them (compiled without fma contraction, like gguf.cc's reading of F16/BF16).
#include <array>
#include <bit>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "file.h"
#include "little_endian.h"
#include "minifloat/codec.h"
#include "minifloat/gguf.h"

namespace mf::io {

using detail::cat;

namespace {

// MXFP4's element values in ggml's doubled form (kvalues_mxfp4: 0, 1, 2, 3, 4, 6, 8, 12, 0, -1, ...): twice the
// e2m1 value, and the code for -0 is a plain 0 there, so it decodes to +0.
constexpr std::array<float, 16> kMxfp4Doubled = [] {
  std::array<float, 16> k{};
  for (std::uint32_t c = 0; c < 16; ++c) {
    const float v = 2.0f * decode(e2m1, c);
    k[c] = v == 0.0f ? 0.0f : v;
  }
  return k;
}();

// ggml_e8m0_to_fp32_half: 2^(e - 128) for every byte. ue8m0 makes 0xFF NaN; ggml keeps it an exponent.
float mxfp4_half_scale(std::byte e) {
  const auto code = static_cast<std::uint32_t>(e);
  return code == 0xFF ? pow2f(127) : 0.5f * decode(ue8m0, code);
}

void dequantize_q8_0(std::span<const std::byte> in, std::span<float> out) {
  for (std::size_t b = 0; b < out.size() / 32; ++b) {
    const std::byte* block = in.data() + b * 34;
    const float d = decode(f16, static_cast<std::uint32_t>(load_le(block, 2)));
    for (std::size_t i = 0; i < 32; ++i) {
      out[b * 32 + i] = static_cast<float>(static_cast<std::int8_t>(block[2 + i])) * d;  // gguf-py: x * d in f32
    }
  }
}

// Q4_0: 18 bytes per 32 elements, f16 d then 16 bytes whose low nibbles are elements 0..15 and high nibbles 16..31;
// each value float(q - 8) * d, one f32 multiplication.
void dequantize_q4_0(std::span<const std::byte> in, std::span<float> out) {
  for (std::size_t b = 0; b < out.size() / 32; ++b) {
    const std::byte* block = in.data() + b * 18;
    const float d = decode(f16, static_cast<std::uint32_t>(load_le(block, 2)));
    for (std::size_t j = 0; j < 16; ++j) {
      const auto q = static_cast<int>(block[2 + j]);
      out[b * 32 + j] = static_cast<float>((q & 15) - 8) * d;
      out[b * 32 + 16 + j] = static_cast<float>((q >> 4) - 8) * d;
    }
  }
}

// Q4_1: 20 bytes per 32 elements, f16 d, f16 m, then 16 bytes of nibbles as in Q4_0; each value d * q + m as gguf-py
// computes it: the product rounded to f32, then the sum (this file is built without fma contraction).
void dequantize_q4_1(std::span<const std::byte> in, std::span<float> out) {
  for (std::size_t b = 0; b < out.size() / 32; ++b) {
    const std::byte* block = in.data() + b * 20;
    const float d = decode(f16, static_cast<std::uint32_t>(load_le(block, 2)));
    const float m = decode(f16, static_cast<std::uint32_t>(load_le(block + 2, 2)));
    for (std::size_t j = 0; j < 16; ++j) {
      const auto q = static_cast<int>(block[4 + j]);
      out[b * 32 + j] = d * static_cast<float>(q & 15) + m;
      out[b * 32 + 16 + j] = d * static_cast<float>(q >> 4) + m;
    }
  }
}

void dequantize_mxfp4(std::span<const std::byte> in, std::span<float> out) {
  for (std::size_t b = 0; b < out.size() / 32; ++b) {
    const std::byte* block = in.data() + b * 17;
    const float d = mxfp4_half_scale(block[0]);
    for (std::size_t j = 0; j < 16; ++j) {
      const auto q = static_cast<std::uint32_t>(block[1 + j]);
      out[b * 32 + j] = d * kMxfp4Doubled[q & 15];
      out[b * 32 + 16 + j] = d * kMxfp4Doubled[q >> 4];
    }
  }
}

}  // namespace

bool gguf_can_dequantize(std::uint32_t type) {
  switch (static_cast<GgufType>(type)) {
    case GgufType::F32:
    case GgufType::F16:
    case GgufType::BF16:
    case GgufType::Q4_0:
    case GgufType::Q4_1:
    case GgufType::Q8_0:
    case GgufType::MXFP4: return true;
    default: return false;
  }
}

std::vector<float> gguf_decode(GgufType type, std::span<const std::byte> in) {
  const auto id = static_cast<std::uint32_t>(type);
  if (!gguf_can_dequantize(id)) {
    throw std::invalid_argument(cat("gguf_decode: cannot decode ", gguf_type_name(id),
                                    " (minifloat decodes F32, F16, BF16, Q4_0, Q4_1, Q8_0 and MXFP4)"));
  }
  const GgufTypeInfo info = *gguf_type_info(id);
  if (in.size() % info.block_bytes != 0) {
    throw std::invalid_argument(
        cat("gguf_decode: ", in.size(), " bytes are not whole ", gguf_type_name(id), " blocks of ", info.block_bytes));
  }
  std::vector<float> out(in.size() / info.block_bytes * info.block_elements);
  switch (type) {
    case GgufType::F32:
      for (std::size_t i = 0; i < out.size(); ++i) {
        out[i] = std::bit_cast<float>(static_cast<std::uint32_t>(load_le(in.data() + 4 * i, 4)));
      }
      break;
    case GgufType::F16:
    case GgufType::BF16: {
      const Format& format = type == GgufType::F16 ? f16 : bf16;
      for (std::size_t i = 0; i < out.size(); ++i) {
        out[i] = decode(format, static_cast<std::uint32_t>(load_le(in.data() + 2 * i, 2)));
      }
      break;
    }
    case GgufType::Q4_0: dequantize_q4_0(in, out); break;
    case GgufType::Q4_1: dequantize_q4_1(in, out); break;
    case GgufType::Q8_0: dequantize_q8_0(in, out); break;
    default: dequantize_mxfp4(in, out); break;
  }
  return out;
}

std::vector<float> dequantize_gguf(const GgufFile& file, const GgufTensor& t) {
  if (!gguf_can_dequantize(t.type)) {
    throw IoError(IoErrc::not_dequantizable, file.path(), t.name,
                  cat("cannot dequantize type ", gguf_type_name(t.type),
                      " (minifloat decodes F32, F16, BF16, Q4_0, Q4_1, Q8_0 and MXFP4)"));
  }
  return gguf_decode(static_cast<GgufType>(t.type), file.bytes(t));
}

}  // namespace mf::io
