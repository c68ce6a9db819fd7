// Per-target dequantization: a row's codes to element values times each block's divisor, exactly as
// scaled_value(element_value(), divisor); the output by non-temporal stores where it is too large for the caches.
//
// Included once per Highway target through quantize-inl.h (foreach_target.h); hence the toggle include guard.
#if defined(MINIFLOAT_SRC_CPU_DEQUANTIZE_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef MINIFLOAT_SRC_CPU_DEQUANTIZE_INL_H_
#undef MINIFLOAT_SRC_CPU_DEQUANTIZE_INL_H_
#else
#define MINIFLOAT_SRC_CPU_DEQUANTIZE_INL_H_
#endif

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "hwy/cache_control.h"
#include "hwy/highway.h"
#include "quantize_codes-inl.h"
#include "quantize_element.h"

HWY_BEFORE_NAMESPACE();
namespace mf::cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

struct DecodeRowFn {
  const std::uint8_t* codes;
  bool nibbles, stream;
  std::int64_t cols, bc;
  const float* divisors;
  const QuantizeElement& ec;
  float* out;
  template <class Decoder>
  HWY_INLINE void operator()(const Decoder& decode_lanes) const {
    if (stream) return nibbles ? Run<true, true>(decode_lanes) : Run<false, true>(decode_lanes);
    if (nibbles) return Run<true, false>(decode_lanes);
    Run<false, false>(decode_lanes);
  }
  template <bool kNibbles, bool kStream, class Decoder>
  HWY_INLINE void Run(const Decoder& decode_lanes) const {
    const DF df;
    const auto N = static_cast<std::int64_t>(hn::Lanes(df));
#if HWY_TARGET == HWY_SCALAR
    constexpr bool kVectors = !kNibbles;
#else
    constexpr bool kVectors = true;
#endif
    // The values of the whole vectors of block b from column c on; returns where they end.
    const auto vectors = [&](std::int64_t b, std::int64_t c, std::int64_t c1) HWY_ATTR __attribute__((always_inline)) {
      if (std::isnan(divisors[b])) return c;  // scaled_value's rule, in the scalar loop below
      const auto vd = hn::Set(df, divisors[b]);
      for (; c + N <= c1; c += N) {
        const auto v = hn::Mul(decode_lanes(LoadCodes<kNibbles>(codes, c)), vd);
        if constexpr (kStream)
          hn::Stream(v, df, out + c);
        else
          hn::StoreU(v, df, out + c);
      }
      return c;
    };
    const std::int64_t blocks = (cols + bc - 1) / bc;
    const bool nan_divisor = std::any_of(divisors, divisors + blocks, [](float x) { return std::isnan(x); });
    if (kVectors && bc % N == 0 && cols % N == 0 && !nan_divisor) {
      // Whole vectors only: a loop without calls, so the decoder's constants stay in registers (the scalar tail's
      // call below makes the compiler keep them in memory and reload them for every vector).
      for (std::int64_t b = 0, c0 = 0; c0 < cols; ++b, c0 += bc) vectors(b, c0, std::min(c0 + bc, cols));
      return;
    }
    const auto code = [&](std::int64_t c) { return kNibbles ? (codes[c / 2] >> (4 * (c % 2))) & 0xF : codes[c]; };
    for (std::int64_t b = 0, c0 = 0; c0 < cols; ++b, c0 += bc) {
      const std::int64_t c1 = std::min(c0 + bc, cols);
      std::int64_t c = kVectors ? vectors(b, c0, c1) : c0;
      for (; c < c1; ++c) {
        out[c] = scaled_value(element_value(ec.scheme->element, static_cast<std::uint32_t>(code(c))), divisors[b]);
      }
    }
  }
};

// Values of one row from its codes: element value * divisor. Codes one per byte, or with `nibbles` (4-bit
// elements, bc and cols even) two per byte, the even column in the low nibble.
// With `stream`, non-temporal stores where out and bc allow whole aligned vectors (else plain ones; the caller
// then calls FlushStreams).
void DecodeRow(const std::uint8_t* codes, bool nibbles, std::int64_t cols, std::int64_t bc, const float* divisors,
               const QuantizeElement& ec, float* out, bool stream) {
  // Non-temporal stores need every vector aligned: out, and each block's start (bc a multiple of the lanes).
  const auto N = static_cast<std::int64_t>(hn::Lanes(DF()));
  stream = stream && bc % N == 0 && reinterpret_cast<std::uintptr_t>(out) % (N * sizeof(float)) == 0;
  WithDecoder(ec, DecodeRowFn{codes, nibbles, stream, cols, bc, divisors, ec, out});
}

// out[0, n) = in[0, n) by non-temporal stores where out is vector-aligned (plain stores for the ends).
void StreamCopy(const float* in, std::int64_t n, float* out) {
  const DF df;
  const auto N = static_cast<std::int64_t>(hn::Lanes(df));
  std::int64_t i = 0;
  for (; i < n && reinterpret_cast<std::uintptr_t>(out + i) % (N * sizeof(float)) != 0; ++i) out[i] = in[i];
  for (; i + N <= n; i += N) hn::Stream(hn::LoadU(df, in + i), df, out + i);
  for (; i < n; ++i) out[i] = in[i];
}

// After this thread's non-temporal stores: makes them visible to other threads.
void FlushStreams() { hwy::FlushStream(); }

}  // namespace HWY_NAMESPACE
}  // namespace mf::cpu
HWY_AFTER_NAMESPACE();

#endif  // include guard
