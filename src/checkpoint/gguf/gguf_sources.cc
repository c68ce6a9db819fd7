// Quantized checkpoints into GGUF in one pass: the GGML type of each quantized pair (gguf_sources.h), NVFP4 re-laid
// out into ggml's block_nvfp4 with its codes and scale bytes unchanged, and integer codes written as Q4_0 / Q4_1 /
// Q8_0 blocks only where those hold the source's values bit for bit.
#include "gguf_sources.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "../../io/file.h"
#include "../dialect_pairs.h"
#include "../tensor_values.h"
#include "minifloat/codec.h"

namespace mf::io::detail {
namespace {

// A float as the shortest text that reads back as it, for messages.
std::string num(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.9g", v);
  return b;
}

std::string hex_byte(std::uint8_t v) {
  char b[8];
  std::snprintf(b, sizeof b, "0x%02X", v);
  return b;
}

std::uint64_t count(const std::vector<std::uint64_t>& s) {
  std::uint64_t n = 1;
  for (std::uint64_t d : s) n *= d;
  return n;
}

// The f16 value of d when f16 holds it exactly.
std::optional<std::uint16_t> exact_f16(double d) {
  const auto h = static_cast<std::uint16_t>(encode(f16, d));
  if (static_cast<double>(decode(f16, h)) != d || std::isnan(d)) return std::nullopt;
  return h;
}

bool same_bits(float a, float b) { return std::bit_cast<std::uint32_t>(a) == std::bit_cast<std::uint32_t>(b); }

void put_f16(std::byte* out, std::uint16_t h) { std::memcpy(out, &h, 2); }

// One block of 32: its scale d (f16) read off the values, x[i] / u[i] for the first u[i] != 0; 0 when all are 0.
std::optional<std::uint16_t> block_scale(std::span<const float> u, std::span<const float> x) {
  for (std::size_t i = 0; i < u.size(); ++i) {
    if (u[i] != 0) return exact_f16(static_cast<double>(x[i]) / u[i]);
  }
  return std::uint16_t{0};
}

// Q4_0 (d, then nibbles q = u + 8: values 0..15 low, 16..31 high) and Q8_0 (d, then int8 u): value u x d in f32.
bool scaled_block(GgufType type, std::span<const float> u, std::span<const float> x, std::byte* out) {
  const int lo = type == GgufType::Q4_0 ? -8 : -128, hi = type == GgufType::Q4_0 ? 7 : 127;
  const std::optional<std::uint16_t> h = block_scale(u, x);
  if (!h) return false;
  const float d = decode(f16, *h);
  for (std::size_t i = 0; i < 32; ++i) {
    if (u[i] < lo || u[i] > hi || u[i] != std::trunc(u[i]) || !same_bits(u[i] * d, x[i])) return false;
  }
  put_f16(out, *h);
  for (std::size_t i = 0; i < 32; ++i) {
    const auto q = static_cast<int>(u[i]);
    if (type == GgufType::Q8_0) {
      out[2 + i] = static_cast<std::byte>(static_cast<std::int8_t>(q));
    } else if (i < 16) {
      out[2 + i] = static_cast<std::byte>(q + 8);
    } else {
      out[2 + i - 16] |= static_cast<std::byte>((q + 8) << 4);
    }
  }
  return true;
}

// Q4_1: d, m, then nibbles q = u - min(u); value d x q + m in f32, the product rounded before the sum (gguf-py).
bool offset_block(std::span<const float> u, std::span<const float> x, std::byte* out) {
  const float umin = *std::min_element(u.begin(), u.end()), umax = *std::max_element(u.begin(), u.end());
  if (umax - umin > 15) return false;
  const std::optional<std::uint16_t> hd = block_scale(u, x);
  if (!hd) return false;
  const float d = decode(f16, *hd);
  // m: the smallest value's offset, u_min x d (exact in f16, or no Q4_1 form).
  const std::optional<std::uint16_t> hm = exact_f16(static_cast<double>(umin) * d);
  if (!hm) return false;
  const float m = decode(f16, *hm);
  for (std::size_t i = 0; i < 32; ++i) {
    if (u[i] != std::trunc(u[i])) return false;
    const float p = d * (u[i] - umin);  // exact: an integer below 16 times an f16
    if (!same_bits(p + m, x[i])) return false;
  }
  put_f16(out, *hd);
  put_f16(out + 2, *hm);
  for (std::size_t i = 0; i < 16; ++i) {
    out[4 + i] = static_cast<std::byte>(static_cast<int>(u[i] - umin) | static_cast<int>(u[i + 16] - umin) << 4);
  }
  return true;
}

// The E4M3 scale bytes of an NVFP4 pair that occur in it, for the second-level check; throws IoError naming the
// scale tensor for a byte ggml's UE4M3 cannot hold.
std::array<bool, 256> used_scale_bytes(const SafetensorsFile& f, const QuantizedPair& p) {
  const SafetensorsTensor* s = f.find(p.scale);
  std::array<bool, 256> used{};
  const std::span<const std::byte> b = f.bytes(*s);
  for (std::size_t i = 0; i < b.size(); ++i) {
    const auto v = static_cast<std::uint8_t>(b[i]);
    if (v & 0x80) {
      throw IoError(IoErrc::gguf_unsupported, f.path(), p.scale,
                    cat("block scale ", i, " (byte ", hex_byte(v),
                        ") has its sign bit set: ggml's NVFP4 scale is unsigned E4M3 (llama.cpp's converter "
                        "clears the bit, changing the block's values); convert without --keep-quantized"));
    }
    if (v == 0x7F) {
      throw IoError(IoErrc::gguf_unsupported, f.path(), p.scale,
                    cat("block scale ", i, " is 0x7F, E4M3's NaN: ggml's NVFP4 reads that byte as 0"));
    }
    used[v] = true;
  }
  return used;
}

// A one-value F32 / BF16 / F16 tensor's value.
float scalar(const SafetensorsFile& f, const std::string& name) {
  const SafetensorsTensor* t = f.find(name);
  std::vector<float> v;
  if (t == nullptr || !is_float(t->dtype) || count(t->shape) != 1) {
    throw IoError(IoErrc::gguf_unsupported, f.path(), name, "not one F32, BF16 or F16 value");
  }
  widen(f, *t, v);
  return v[0];
}

// compressed-tensors' divisor g as the multiplier the converter writes, 1 / g rounded to f32, checked exact for
// `what`: the weight's scales d (each value code x (d / g) in f32, as compressed-tensors computes it, against
// ggml's code x d x (1 / g)), or for the input scale, 1 / g itself.
float reciprocal(const SafetensorsFile& f, const std::string& name, const std::array<bool, 256>* used) {
  const float g = scalar(f, name);
  const float r = 1.0f / g;
  if (used == nullptr) {
    if (static_cast<double>(r) * g != 1.0) {
      throw IoError(
          IoErrc::gguf_unsupported, f.path(), name,
          cat("input global scale ", num(g), ": its reciprocal (llama.cpp's X.input_scale) is not exact in f32 (",
              num(r), "); convert without --keep-quantized"));
    }
    return r;
  }
  for (std::uint32_t b = 1; b < 0x7F; ++b) {
    if (!(*used)[b]) continue;
    const float d = decode(e4m3, b);
    if (static_cast<double>(d / g) != static_cast<double>(d) * r) {
      throw IoError(IoErrc::gguf_unsupported, f.path(), name,
                    cat("global scale ", num(g), ": the block scale ", num(d), " / ", num(g), " is ", num(d / g),
                        " in f32, but GGML's NVFP4 computes ", num(d), " x ", num(r),
                        " (1 / global scale, the X.scale llama.cpp multiplies by): not the same value; convert "
                        "without --keep-quantized (dequantized exactly, then encoded as the recipe's type)"));
    }
  }
  return r;
}

// v unless it is exactly 1 (the converter writes no scale tensor then); IoError naming `name` for NaN or Inf.
std::optional<float> unless_one(const SafetensorsFile& f, const std::string& name, float v) {
  if (!std::isfinite(v)) throw IoError(IoErrc::gguf_unsupported, f.path(), name, cat("per-tensor scale ", num(v)));
  return v == 1.0f ? std::nullopt : std::optional<float>(v);
}

// The pair's input scale tensor (ModelOpt's input_scale, compressed-tensors' input_global_scale), or "".
std::string input_scale_of(const QuantizedPair& p) {
  for (const std::string& e : p.extras) {
    if (e.ends_with(".input_scale") || e.ends_with(".input_global_scale")) return e;
  }
  return "";
}

}  // namespace

bool is_fp8_pair(const SafetensorsFile& f, const QuantizedPair& p) {
  const SafetensorsTensor* w = f.find(p.weight);
  return w != nullptr && (w->dtype == DType::F8_E4M3 || w->dtype == DType::F8_E5M2);
}

bool is_nvfp4_pair(const QuantizedPair& p) {
  return (p.form == PairForm::nvfp4 || p.form == PairForm::packed_global) && p.output_shape.size() == 2;
}

std::vector<std::byte> nvfp4_blocks(std::span<const std::uint8_t> codes, std::span<const std::uint8_t> scales,
                                    std::uint64_t cols) {
  if (cols % 64 != 0) {
    throw std::invalid_argument(cat("a row of ", cols,
                                    " values is not whole 64-value NVFP4 blocks (ggml's "
                                    "block_nvfp4; llama.cpp's converter drops the rest of the row)"));
  }
  const std::uint64_t rows = codes.size() * 2 / cols, supers = cols / 64;
  std::vector<std::byte> out(rows * supers * 36);
  for (std::uint64_t r = 0; r < rows; ++r) {
    for (std::uint64_t k = 0; k < supers; ++k) {
      std::byte* o = out.data() + (r * supers + k) * 36;
      for (std::uint64_t j = 0; j < 4; ++j) {
        const std::uint8_t s = scales[r * (cols / 16) + k * 4 + j];
        if ((s & 0x80) != 0 || s == 0x7F) {
          throw std::invalid_argument(cat("block scale byte ", hex_byte(s), ": ggml's UE4M3 holds no sign and no NaN"));
        }
        o[j] = static_cast<std::byte>(s);
        const std::uint8_t* c = codes.data() + r * (cols / 2) + k * 32 + j * 8;  // this sub-block's 16 codes
        auto code = [c](std::uint64_t e) { return (c[e / 2] >> (4 * (e % 2))) & 15; };
        for (std::uint64_t b = 0; b < 8; ++b) {
          o[4 + j * 8 + b] = static_cast<std::byte>(code(b) | code(b + 8) << 4);
        }
      }
    }
  }
  return out;
}

Nvfp4Scales nvfp4_scales(const SafetensorsFile& f, const QuantizedPair& p) {
  const std::array<bool, 256> used = used_scale_bytes(f, p);
  Nvfp4Scales out;
  const std::string input = input_scale_of(p);
  if (p.form == PairForm::packed_global) {
    out.scale = unless_one(f, p.tensor_scale, reciprocal(f, p.tensor_scale, &used));
    if (!input.empty()) out.input_scale = unless_one(f, input, reciprocal(f, input, nullptr));
  } else {
    out.scale = unless_one(f, p.tensor_scale, pair_second_scale(f, p));
    if (!input.empty()) out.input_scale = unless_one(f, input, scalar(f, input));
  }
  return out;
}

std::optional<std::vector<std::byte>> integer_blocks(GgufType type, std::span<const float> u,
                                                     std::span<const float> x) {
  const std::size_t bytes = type == GgufType::Q4_0 ? 18 : type == GgufType::Q4_1 ? 20 : 34;
  if (u.size() != x.size() || x.size() % 32 != 0) return std::nullopt;
  std::vector<std::byte> out(x.size() / 32 * bytes);
  for (std::size_t b = 0; b < x.size() / 32; ++b) {
    const std::span<const float> ub = u.subspan(b * 32, 32), xb = x.subspan(b * 32, 32);
    std::byte* o = out.data() + b * bytes;
    if (!(type == GgufType::Q4_1 ? offset_block(ub, xb, o) : scaled_block(type, ub, xb, o))) return std::nullopt;
  }
  return out;
}

SourcePlan gguf_source_plan(std::span<const PairIn> in, std::uint64_t cols, SourceUse use, const GgufRecipe& r,
                            int threads) {
  const QuantizedPair& first = *in[0].pair;
  // One NVFP4 tensor has one per-tensor scale (X.scale): experts, each with its own, are dequantized instead.
  if (r.keep_quantized && use == SourceUse::whole && is_nvfp4_pair(first)) {
    if (cols % 64 != 0) {
      throw IoError(IoErrc::gguf_unsupported, in[0].file->path(), first.weight,
                    cat("NVFP4 rows of ", cols,
                        " values: ggml's block_nvfp4 holds whole 64-value blocks (llama.cpp's converter drops the "
                        "rest of each row); convert without --keep-quantized"));
    }
    return {SourceWay::nvfp4, GgufType::NVFP4, "NVFP4 re-laid out"};
  }
  const auto all = [&in](auto test) { return std::all_of(in.begin(), in.end(), test); };
  if (r.keep_quantized && use != SourceUse::moved && cols % 32 == 0 &&
      all([](const PairIn& p) { return p.pair->form == PairForm::integer; })) {
    for (GgufType t : {GgufType::Q4_0, GgufType::Q4_1, GgufType::Q8_0}) {
      const bool fits = all([&](const PairIn& p) {
        const std::vector<float> u = dequantize_dialect_pair(*p.file, *p.pair, true);
        return integer_blocks(t, u, dequantize_pair(*p.file, *p.pair, threads)).has_value();
      });
      if (fits) return {SourceWay::integer, t, cat(gguf_type_name(static_cast<std::uint32_t>(t)), " exact")};
    }
  }
  GgufType type = *r.type;
  std::string why;
  if (r.fp8_as_q8 && all([](const PairIn& p) { return is_fp8_pair(*p.file, *p.pair); })) {
    type = GgufType::Q8_0;
    why = " (fp8-as-q8)";
  }
  // llama.cpp's convert falls back to F16 for a row that is not whole Q8_0 blocks.
  if (type == GgufType::Q8_0 && cols % 32 != 0) type = GgufType::F16;
  return {SourceWay::dequantize, type, cat(gguf_type_name(static_cast<std::uint32_t>(type)), why)};
}

}  // namespace mf::io::detail
