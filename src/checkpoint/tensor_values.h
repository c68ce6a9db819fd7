// Internal: float tensors of a safetensors file widened to f32, and a tensor's quantization error: shared by
// convert's writers (safetensors and GGUF).
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "minifloat/checkpoint_commands.h"
#include "minifloat/codec.h"
#include "minifloat/safetensors.h"

namespace mf::io::detail {

inline bool is_float(DType t) { return t == DType::F32 || t == DType::F16 || t == DType::BF16; }

// Exact widening of an F32, F16 or BF16 tensor into `out` (resized); bf16 and f32 take the direct bit paths (the
// generic decode is the slow part of a convert otherwise).
inline void widen(const SafetensorsFile& f, const SafetensorsTensor& t, std::vector<float>& out) {
  const std::span<const std::byte> b = f.bytes(t);
  out.resize(b.size() / (t.dtype == DType::F32 ? 4 : 2));
  if (t.dtype == DType::F32) {
    std::memcpy(out.data(), b.data(), b.size());
  } else if (t.dtype == DType::BF16) {
    for (std::size_t i = 0; i < out.size(); ++i) {
      std::uint16_t h = 0;
      std::memcpy(&h, b.data() + 2 * i, 2);
      out[i] = std::bit_cast<float>(static_cast<std::uint32_t>(h) << 16);
    }
  } else {
    for (std::size_t i = 0; i < out.size(); ++i) {
      std::uint16_t h = 0;
      std::memcpy(&h, b.data() + 2 * i, 2);
      out[i] = decode(f16, h);
    }
  }
}

// Four independent partial sums, so the loop is not one long dependency chain (a third of a convert otherwise).
inline TensorReport error_of(const std::string& name, const std::string& target, const std::vector<float>& x,
                             const std::vector<float>& y) {
  double se[4] = {0, 0, 0, 0}, sx[4] = {0, 0, 0, 0};
  float max_abs = 0;
  std::size_t i = 0;
  for (; i + 4 <= x.size(); i += 4) {
    for (std::size_t k = 0; k < 4; ++k) {
      const float d = y[i + k] - x[i + k];  // exact enough: |d| is one rounding step of a narrow format
      se[k] += static_cast<double>(d) * d;
      sx[k] += static_cast<double>(x[i + k]) * x[i + k];
      max_abs = std::max(max_abs, std::fabs(d));
    }
  }
  for (; i < x.size(); ++i) {
    const float d = y[i] - x[i];
    se[0] += static_cast<double>(d) * d;
    sx[0] += static_cast<double>(x[i]) * x[i];
    max_abs = std::max(max_abs, std::fabs(d));
  }
  const double e = se[0] + se[1] + se[2] + se[3], s = sx[0] + sx[1] + sx[2] + sx[3];
  const double n = x.empty() ? 1.0 : static_cast<double>(x.size());
  return {name, target, std::sqrt(e / n), max_abs, s > 0 ? std::sqrt(e / s) : 0.0};
}

}  // namespace mf::io::detail
