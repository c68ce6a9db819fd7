// Per-target SIMD code for block quantization: amax per block, element encode and decode, lane by lane the same
// f32 operations as the scalar rules in minifloat/scale.h (division by the block's divisor, round to nearest even,
// saturation to +-max), so every target is bit-identical to the reference. Partial vectors take the scalar rules.
//
// Encoding rows; the block scales (quantize_scales-inl.h), element codes (quantize_codes-inl.h), input passes
// (quantize_input-inl.h) and dequantization (dequantize-inl.h) are in files of their own, included from here.
//
// Included once per Highway target by quantize.cc through foreach_target.h; hence the toggle include guard.
#if defined(MINIFLOAT_SRC_CPU_QUANTIZE_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef MINIFLOAT_SRC_CPU_QUANTIZE_INL_H_
#undef MINIFLOAT_SRC_CPU_QUANTIZE_INL_H_
#else
#define MINIFLOAT_SRC_CPU_QUANTIZE_INL_H_
#endif

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>

#include "dequantize-inl.h"
#include "hwy/highway.h"
#include "quantize_codes-inl.h"
#include "quantize_input-inl.h"
#include "quantize_element.h"
#include "quantize_scales-inl.h"

HWY_BEFORE_NAMESPACE();
namespace mf::cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// The whole vectors of x[c, c1) divided as `div` says (d > 0 and finite), their codes into out; returns where they
// end. Shared by EncodeBlock (one block, then its scalar tail) and EncodeGroup (a group of whole blocks).
template <bool kNibbles, class Encoder>
HWY_INLINE std::int64_t EncodeVectors(const float* x, std::int64_t c, std::int64_t c1, const Divisor& div,
                                      std::uint8_t* out, const Encoder& encode_lanes) {
  const DF df;
  const auto N = static_cast<std::int64_t>(hn::Lanes(df));
  const auto vd = hn::Set(df, div.d), vr = hn::Set(df, div.r);
  if (div.exact) {
    for (; c + N <= c1; c += N) {
      PrefetchAhead(x + c);
      StoreCodes<kNibbles>(encode_lanes(hn::Mul(hn::LoadU(df, x + c), vr)), out, c);
    }
    return c;
  }
  if constexpr (Encoder::kFindsTies) {
    if (div.r > 0) {
      for (; c + N <= c1; c += N) {
        PrefetchAhead(x + c);
        const auto v = hn::LoadU(df, x + c);
        hn::Mask<DF> near;
        auto codes = encode_lanes(hn::Mul(v, vr), near);
        if (HWY_UNLIKELY(!hn::AllFalse(df, near))) codes = encode_lanes(hn::Div(v, vd));
        StoreCodes<kNibbles>(codes, out, c);
      }
      return c;
    }
  }
  for (; c + N <= c1; c += N) {
    PrefetchAhead(x + c);
    StoreCodes<kNibbles>(encode_lanes(hn::Div(hn::LoadU(df, x + c), vd)), out, c);
  }
  return c;
}

// Codes of x[c0, c1), one block, into out (kNibbles: two per byte; c0 and c1 - c0 even).
template <bool kNibbles, class Encoder>
HWY_INLINE void EncodeBlock(const float* x, std::int64_t c0, std::int64_t c1, const Divisor& div,
                            const QuantizeElement& ec, std::uint8_t* out, const Encoder& encode_lanes) {
  std::int64_t c = c0;
#if HWY_TARGET == HWY_SCALAR
  constexpr bool kVectors = !kNibbles;  // one lane cannot fill a byte: the pairs below do it
#else
  constexpr bool kVectors = true;
#endif
  if (kVectors && div.d > 0) {  // not a zero (signed zeros) or NaN (non-finite) block: those take the scalar rule
    c = EncodeVectors<kNibbles>(x, c0, c1, div, out, encode_lanes);
  }
  const BlockScale bs{0, div.d};
  const auto code = [&](std::int64_t i) {
    return std::isnan(div.d) ? 0u : static_cast<std::uint32_t>(element_code(*ec.scheme, x[i], bs));
  };
  if constexpr (kNibbles) {
    for (; c < c1; c += 2) out[c / 2] = static_cast<std::uint8_t>(code(c) | code(c + 1) << 4);
  } else {
    for (; c < c1; ++c) out[c] = static_cast<std::uint8_t>(code(c));
  }
}

// The codes of one row whose block divisors are known (blocks of more than one row).
struct EncodeRowFn {
  const float* x;
  std::int64_t cols, bc;
  const float* divisors;
  const QuantizeElement& ec;
  std::uint8_t* codes;
  template <class Encoder>
  HWY_INLINE void operator()(const Encoder& e) const {
    for (std::int64_t b = 0, c0 = 0; c0 < cols; ++b, c0 += bc) {
      EncodeBlock<false>(x, c0, std::min(c0 + bc, cols), divisor_of(divisors[b]), ec, codes, e);
    }
  }
};

// One row of 1 x bc blocks in one pass: each block's amax, its scale (the scalar rule), then its codes into `out`:
// one per byte, or two per byte when `nibbles` (4-bit elements, bc and cols even).
struct QuantizeRowFn {
  const float* x;
  std::int64_t cols, bc;
  float tensor_scale;
  const QuantizeElement& ec;
  std::uint8_t* out;
  bool nibbles;
  std::uint32_t* scale_codes;
  float* divisors;

  // MX and DeepSeek scales (ue8m0, floor or rceil, one level) have a power-of-two rule without the general codec;
  // NVFP4's (ue4m3 of amax / max / tensor scale) has its own. Anything else takes block_scale() (also the te
  // profile, whose scale is an f32 product rounded up: te_mx_scale).
  bool power_of_two() const {
    const Scheme& s = *ec.scheme;
    return *s.scale_format == ue8m0 && !s.tensor_scale && (s.rule == ScaleRule::floor || s.rule == ScaleRule::rceil) &&
           s.profile != Profile::ggml && s.profile != Profile::te;
  }
  bool nvfp4() const {
    const Scheme& s = *ec.scheme;
    return s.rule == ScaleRule::e4m3 && *s.scale_format == ue4m3 && s.profile != Profile::deepseek &&
           tensor_scale > 0 && std::isfinite(tensor_scale);
  }
  // NVFP4 with UE5M3 scales: the groups below scale it with the ue5m3 codec (GroupE4m3 takes any unsigned scale
  // codec); a block on its own takes block_scale().
  bool nvfp4_ue5m3() const {
    const Scheme& s = *ec.scheme;
    return s.rule == ScaleRule::e4m3 && *s.scale_format == ue5m3 && s.profile != Profile::deepseek &&
           tensor_scale > 0 && std::isfinite(tensor_scale);
  }
  std::uint32_t floor_bits() const {
    return ec.scheme->profile == Profile::deepseek ? std::bit_cast<std::uint32_t>(kDeepSeekMinAmax) : 0;
  }

  template <class Encoder>
  HWY_INLINE void operator()(const Encoder& e) const {
    if (nibbles) return Run<true>(e);
    Run<false>(e);
  }

  template <bool kNibbles, class Encoder>
  HWY_INLINE void Run(const Encoder& e) const {
    const bool pow2 = power_of_two(), e4m3 = nvfp4();
    const PowerOfTwoFast p(*ec.scheme);
    std::int64_t b = 0, c0 = 0;
#if HWY_TARGET != HWY_SCALAR
    const bool wide = nvfp4_ue5m3();
    if ((pow2 || e4m3 || wide) && bc % static_cast<std::int64_t>(kGroup) == 0) {
      const DU du;
      const auto floor = hn::Set(du, floor_bits());
      HWY_ALIGN std::uint32_t group_codes[kGroup];
      HWY_ALIGN float group_divisors[kGroup], reciprocals[kGroup];
      const ElementCodec& scale_codec = wide ? kUe5m3Codec : kUe4m3Codec;
      const SaturatingGrid<DF> scale_grid(scale_codec);
      // Groups of kGroup whole blocks, and the row's last whole blocks as a group of fewer (a row of fewer than
      // kGroup blocks, or one that is not a multiple of them: K = 1024 or 7168 on AVX-512); a partial last block
      // goes on its own below.
      const auto next_group_blocks = [&] {
        return static_cast<std::size_t>(std::min<std::int64_t>(static_cast<std::int64_t>(kGroup), (cols - c0) / bc));
      };
      for (std::size_t count; (count = next_group_blocks()) > 0;
           b += static_cast<std::int64_t>(count), c0 += static_cast<std::int64_t>(count) * bc) {
        auto m = GroupMaxAbsBits(x + c0, bc, count);
        m = hn::IfThenElse(hn::Lt(m, hn::Set(du, 0x7F800000u)), hn::Max(m, floor), m);
        const bool done = pow2 ? GroupPowerOfTwo(m, p, group_codes, group_divisors, reciprocals)
                               : GroupE4m3(m, ec.max, tensor_scale, min_e4m3_scale(*ec.scheme), scale_codec, scale_grid,
                                           group_codes, group_divisors, reciprocals);
        if (done) {
          std::copy_n(group_codes, count, scale_codes + b);
          std::copy_n(group_divisors, count, divisors + b);
        }
        if (done && (pow2 || Encoder::kFindsTies)) {
          EncodeGroup<kNibbles>(c0, count, group_divisors, reciprocals, pow2, e);
          continue;
        }
        for (std::size_t i = 0; i < count; ++i) {
          const std::int64_t bi = b + static_cast<std::int64_t>(i), ci = c0 + static_cast<std::int64_t>(i) * bc;
          if (!done) {
            Block<kNibbles>(bi, ci, pow2, e4m3, p, e);
          } else {
            EncodeBlock<kNibbles>(x, ci, ci + bc, Divisor{divisors[bi], reciprocals[i], pow2}, ec, out, e);
          }
        }
      }
    }
#endif
    for (; c0 < cols; ++b, c0 += bc) Block<kNibbles>(b, c0, pow2, e4m3, p, e);
  }

#if HWY_TARGET != HWY_SCALAR
  // The codes of a group (`count` whole blocks from column c0, all scaled by the vector rules): EncodeBlock without
  // its per-block checks and scalar tail. reciprocals[i]: 2^-k (exact) or RN(1 / divisor), 0 where that is not a
  // normal float (division then). When a block is a power-of-two number of vectors and the group a multiple of four
  // vectors, the group is one flat loop over its vectors (each reads its block's reciprocal): GCC keeps the encoder's
  // constants in registers across a flat loop, where a loop per block made it materialize them again for every block.
  template <bool kNibbles, class Encoder>
  HWY_INLINE void EncodeGroup(std::int64_t c0, std::size_t count, const float* group_divisors, const float* reciprocals,
                              bool exact, const Encoder& e) const {
    const DF df;
    constexpr auto N = static_cast<std::int64_t>(kGroup);
    const std::int64_t vectors_per_block = bc / N, n = static_cast<std::int64_t>(count) * bc;
    const bool flat = std::has_single_bit(static_cast<std::uint64_t>(vectors_per_block)) && n % (4 * N) == 0 &&
                      (exact || hn::AllTrue(df, hn::Lt(hn::Zero(df), hn::LoadU(df, reciprocals))));
    if (flat) {
      const int shift = std::countr_zero(static_cast<std::uint64_t>(vectors_per_block));
      const float* xs = x + c0;
      const std::int64_t group_bytes = n * static_cast<std::int64_t>(sizeof(float));
      // Four vectors a step, stored together.
      if (exact) {
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
        if constexpr (Encoder::kFindsTies) {
          if (e.table_fits) return EncodeGroupByTable<kNibbles>(c0, n, shift, reciprocals, e.table);
        }
#endif
        const auto encode = [&](std::int64_t c) HWY_ATTR __attribute__((always_inline)) {
          PrefetchAhead(xs + c);
          PrefetchNextGroup(xs + c, group_bytes);
          return e(hn::Mul(hn::LoadU(df, xs + c), hn::Set(df, reciprocals[(c / N) >> shift])));
        };
        for (std::int64_t c = 0; c < n; c += 4 * N) {
          StoreCodes4<kNibbles>(encode(c), encode(c + N), encode(c + 2 * N), encode(c + 3 * N), out, c0 + c);
        }
        return;
      }
      if constexpr (Encoder::kFindsTies) {
        const auto encode = [&](std::int64_t c) HWY_ATTR __attribute__((always_inline)) {
          PrefetchAhead(xs + c);
          PrefetchNextGroup(xs + c, group_bytes);
          const std::int64_t i = (c / N) >> shift;
          const auto v = hn::LoadU(df, xs + c);
          hn::Mask<DF> near;
          auto codes = e(hn::Mul(v, hn::Set(df, reciprocals[i])), near);
          if (HWY_UNLIKELY(!hn::AllFalse(df, near))) codes = e(hn::Div(v, hn::Set(df, group_divisors[i])));
          return codes;
        };
        for (std::int64_t c = 0; c < n; c += 4 * N) {
          StoreCodes4<kNibbles>(encode(c), encode(c + N), encode(c + 2 * N), encode(c + 3 * N), out, c0 + c);
        }
        return;
      }
    }
    for (std::size_t i = 0; i < count; ++i) {
      const std::int64_t ci = c0 + static_cast<std::int64_t>(i) * bc;
      EncodeVectors<kNibbles>(x, ci, ci + bc, Divisor{group_divisors[i], reciprocals[i], exact}, out, e);
    }
  }
#endif

#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
  // EncodeGroup's flat loop over quotients by powers of two, with the table encoder (n, shift: as there).
  template <bool kNibbles>
  HWY_INLINE void EncodeGroupByTable(std::int64_t c0, std::int64_t n, int shift, const float* reciprocals,
                                     const SaturatingTable<DF>& t) const {
    const DF df;
    constexpr auto N = static_cast<std::int64_t>(kGroup);
    const float* xs = x + c0;
    const std::int64_t group_bytes = n * static_cast<std::int64_t>(sizeof(float));
    const auto quotient = [&](std::int64_t c) HWY_ATTR __attribute__((always_inline)) {
      PrefetchAhead(xs + c);
      PrefetchNextGroup(xs + c, group_bytes);
      return hn::Mul(hn::LoadU(df, xs + c), hn::Set(df, reciprocals[(c / N) >> shift]));
    };
    const auto encode = [&](std::int64_t c) HWY_ATTR __attribute__((always_inline)) {
      return EncodeSaturatingByTable(t, quotient(c));
    };
    for (std::int64_t c = 0; c < n; c += 4 * N) {
      StoreCodes4<kNibbles>(encode(c), encode(c + N), encode(c + 2 * N), encode(c + 3 * N), out, c0 + c);
    }
  }
#endif

  // Block b (columns c0 .. c0 + bc, cut at cols) on its own. Not inlined: the groups above are the hot path, and
  // one copy per encoder and sink keeps the compile (sanitizer builds above all) and the code size in bounds.
  template <bool kNibbles, class Encoder>
  HWY_NOINLINE void Block(std::int64_t b, std::int64_t c0, bool pow2, bool e4m3, const PowerOfTwoFast& p,
                          const Encoder& e) const {
    const std::int64_t c1 = std::min(c0 + bc, cols);
    std::uint32_t m = MaxAbsBits(x, c0, c1);
    if (m < 0x7F800000u) m = std::max(m, floor_bits());
    if (pow2 && m >= 0x00800000u && m < 0x7F800000u) {
      const int k = p.exponent(m);
      scale_codes[b] = static_cast<std::uint32_t>(k + 127);
      divisors[b] = pow2f(k);
      EncodeBlock<kNibbles>(x, c0, c1, Divisor{divisors[b], pow2f(-k), true}, ec, out, e);
      return;
    }
    const Scheme& s = *ec.scheme;
    const bool nonfinite = m >= 0x7F800000u;
    const BlockScale bs = (e4m3 && !nonfinite)
                              ? e4m3_scale_fast(std::bit_cast<float>(m), ec.max, tensor_scale, min_e4m3_scale(s))
                              : block_scale(s, nonfinite ? 0.0f : std::bit_cast<float>(m), nonfinite, tensor_scale);
    scale_codes[b] = bs.code;
    divisors[b] = bs.divisor;
    EncodeBlock<kNibbles>(x, c0, c1, divisor_of(bs.divisor), ec, out, e);
  }
};

// Codes of one row, one per byte; divisors[b] is block b's divisor (0: signed zeros; NaN: codes 0).
void EncodeRow(const float* x, std::int64_t cols, std::int64_t bc, const float* divisors, const QuantizeElement& ec,
               std::uint8_t* codes) {
  WithEncoder(ec, EncodeRowFn{x, cols, bc, divisors, ec, codes});
}

// One row of 1 x bc blocks in one pass: scale codes and divisors per block (block_scale), codes into `out`: one
// per byte, or with `nibbles` (4-bit elements, bc and cols even) two per byte, the even column in the low nibble.
void QuantizeRow(const float* x, std::int64_t cols, std::int64_t bc, float tensor_scale, const QuantizeElement& ec,
                 std::uint8_t* out, bool nibbles, std::uint32_t* scale_codes, float* divisors) {
  WithEncoder(ec, QuantizeRowFn{x, cols, bc, tensor_scale, ec, out, nibbles, scale_codes, divisors});
}

}  // namespace HWY_NAMESPACE
}  // namespace mf::cpu
HWY_AFTER_NAMESPACE();

#endif  // include guard
