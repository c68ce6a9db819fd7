// Per-target SIMD code for block quantization: amax per block, element encode and decode, lane by lane the same
// f32 operations as the scalar rules in minifloat/scale.h (division by the block's divisor, round to nearest even,
// saturation to +-max), so every target is bit-identical to the reference. Partial vectors take the scalar rules.
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

#include "hwy/highway.h"
#include "quantize_kernels.h"

HWY_BEFORE_NAMESPACE();
namespace mf::cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::ScalableTag<float>;
using DU = hn::RebindToUnsigned<DF>;
using DI = hn::RebindToSigned<DF>;
using D8 = hn::Rebind<std::uint8_t, DF>;

// y (finite, already divided by the block's divisor) -> codes in u32 lanes: RNE, saturated to +-max, sign kept.
HWY_INLINE hn::Vec<DU> EncodeFloatLanes(hn::Vec<DF> y, const ElementCodec& ec) {
  const DF df;
  const DU du;
  const int m = ec.mantissa_bits, drop = 23 - m;
  const auto bits = hn::BitCast(du, y);
  const auto sign = hn::And(bits, hn::Set(du, 0x80000000u));
  const auto a = hn::Min(hn::Abs(y), hn::Set(df, ec.max));
  // Below the smallest normal: the subnormal grid, quantum 2^(1 - bias - m); scaling by a power of two is exact.
  const int emin = 1 - ec.bias;
  const auto sub = hn::BitCast(du, hn::NearestInt(hn::Mul(a, hn::Set(df, pow2f(m - emin)))));
  // Normal: round the f32 mantissa to m bits (ties to even) and rebias the exponent.
  const auto ab = hn::BitCast(du, a);
  const auto odd = hn::And(hn::ShiftRightSame(ab, drop), hn::Set(du, 1u));
  const auto rounded = hn::Add(ab, hn::Add(hn::Set(du, (1u << (drop - 1)) - 1), odd));
  const auto normal = hn::Sub(hn::ShiftRightSame(rounded, drop),
                              hn::Set(du, static_cast<std::uint32_t>(127 - ec.bias) << m));
  const auto code = hn::IfThenElse(hn::RebindMask(du, hn::Lt(a, hn::Set(df, pow2f(emin)))), sub, normal);
  return hn::Or(code, hn::ShiftRightSame(sign, 31 - (ec.exponent_bits + m)));
}

// Symmetric integers: round(y) to nearest even, clamped to +-max, two's complement in `bits` bits.
HWY_INLINE hn::Vec<DU> EncodeIntLanes(hn::Vec<DF> y, const ElementCodec& ec) {
  const DF df;
  const DU du;
  const auto m = hn::Set(df, ec.max);
  const auto q = hn::NearestInt(hn::Min(hn::Max(y, hn::Neg(m)), m));
  return hn::And(hn::BitCast(du, q), hn::Set(du, (1u << ec.bits) - 1));
}

// codes in u32 lanes -> element values, exactly as decode() / element_value().
HWY_INLINE hn::Vec<DF> DecodeLanes(hn::Vec<DU> c, const ElementCodec& ec) {
  const DF df;
  const DU du;
  const DI di;
  if (ec.is_int) {
    const int shift = 32 - ec.bits;
    return hn::ConvertTo(df, hn::ShiftRightSame(hn::ShiftLeftSame(hn::BitCast(di, c), shift), shift));
  }
  const int m = ec.mantissa_bits, em = ec.exponent_bits + m;
  const auto mag = hn::And(c, hn::Set(du, (1u << em) - 1));
  const auto sign = hn::ShiftLeftSame(hn::ShiftRightSame(c, em), 31);
  const auto field = hn::ShiftRightSame(mag, m);
  const auto normal = hn::BitCast(df, hn::Add(hn::ShiftLeftSame(mag, 23 - m),
                                              hn::Set(du, static_cast<std::uint32_t>(127 - ec.bias) << 23)));
  const auto sub = hn::Mul(hn::ConvertTo(df, hn::BitCast(di, mag)), hn::Set(df, pow2f(1 - ec.bias - m)));
  auto v = hn::IfThenElse(hn::RebindMask(df, hn::Eq(field, hn::Zero(du))), sub, normal);
  const std::uint32_t all_ones = (1u << ec.exponent_bits) - 1;
  if (ec.specials == Specials::ieee) {
    const auto top = hn::RebindMask(df, hn::Eq(field, hn::Set(du, all_ones)));
    const auto is_inf = hn::RebindMask(df, hn::Eq(mag, hn::Set(du, all_ones << m)));
    const auto special = hn::IfThenElse(is_inf, hn::Set(df, INFINITY), hn::BitCast(df, hn::Set(du, 0x7FC00000u)));
    v = hn::IfThenElse(top, special, v);
  } else if (ec.specials == Specials::nan_only) {
    const auto is_nan = hn::RebindMask(df, hn::Eq(mag, hn::Set(du, (1u << em) - 1)));
    v = hn::IfThenElse(is_nan, hn::BitCast(df, hn::Set(du, 0x7FC00000u)), v);
  }
  return hn::BitCast(df, hn::Or(hn::BitCast(du, v), sign));
}

void BlockMaxAbsBits(const float* x, std::int64_t cols, std::int64_t bc, std::uint32_t* block_max_bits) {
  const DF df;
  const DU du;
  const auto N = static_cast<std::int64_t>(hn::Lanes(df));
  for (std::int64_t b = 0, c0 = 0; c0 < cols; ++b, c0 += bc) {
    const std::int64_t c1 = std::min(c0 + bc, cols);
    auto acc = hn::Zero(du);
    std::int64_t c = c0;
    for (; c + N <= c1; c += N) acc = hn::Max(acc, hn::BitCast(du, hn::Abs(hn::LoadU(df, x + c))));
    std::uint32_t m = hn::GetLane(hn::MaxOfLanes(du, acc));
    for (; c < c1; ++c) m = std::max(m, std::bit_cast<std::uint32_t>(x[c]) & 0x7FFFFFFFu);
    block_max_bits[b] = std::max(block_max_bits[b], m);
  }
}

void EncodeRow(const float* x, std::int64_t cols, std::int64_t bc, const float* divisors, const ElementCodec& ec,
               std::uint8_t* codes) {
  const DF df;
  const DI di;
  const D8 d8;
  const auto N = static_cast<std::int64_t>(hn::Lanes(df));
  for (std::int64_t b = 0, c0 = 0; c0 < cols; ++b, c0 += bc) {
    const std::int64_t c1 = std::min(c0 + bc, cols);
    const float d = divisors[b];
    std::int64_t c = c0;
    if (d > 0) {  // not a zero (signed zeros) or NaN (non-finite) block: those take the scalar rule below
      const auto vd = hn::Set(df, d);
      for (; c + N <= c1; c += N) {
        const auto y = hn::Div(hn::LoadU(df, x + c), vd);
        const auto code = ec.is_int ? EncodeIntLanes(y, ec) : EncodeFloatLanes(y, ec);
        hn::StoreU(hn::DemoteTo(d8, hn::BitCast(di, code)), d8, codes + c);
      }
    }
    const BlockScale bs{0, d};
    for (; c < c1; ++c) codes[c] = std::isnan(d) ? 0 : static_cast<std::uint8_t>(element_code(*ec.scheme, x[c], bs));
  }
}

void DecodeRow(const std::uint8_t* codes, std::int64_t cols, std::int64_t bc, const float* divisors,
               const ElementCodec& ec, float* out) {
  const DF df;
  const DU du;
  const D8 d8;
  const auto N = static_cast<std::int64_t>(hn::Lanes(df));
  for (std::int64_t b = 0, c0 = 0; c0 < cols; ++b, c0 += bc) {
    const std::int64_t c1 = std::min(c0 + bc, cols);
    const auto vd = hn::Set(df, divisors[b]);
    std::int64_t c = c0;
    for (; c + N <= c1; c += N) {
      const auto v = DecodeLanes(hn::PromoteTo(du, hn::LoadU(d8, codes + c)), ec);
      hn::StoreU(hn::Mul(v, vd), df, out + c);
    }
    for (; c < c1; ++c) out[c] = element_value(ec.scheme->element, codes[c]) * divisors[b];
  }
}

float FiniteAmax(const float* x, std::int64_t n) {
  const DF df;
  const DU du;
  const auto N = static_cast<std::int64_t>(hn::Lanes(df));
  const auto inf = hn::Set(du, 0x7F800000u);
  auto acc = hn::Zero(du);
  std::int64_t i = 0;
  for (; i + N <= n; i += N) {
    const auto a = hn::BitCast(du, hn::Abs(hn::LoadU(df, x + i)));
    acc = hn::Max(acc, hn::IfThenElseZero(hn::Lt(a, inf), a));
  }
  std::uint32_t m = hn::GetLane(hn::MaxOfLanes(du, acc));
  for (; i < n; ++i) {
    const std::uint32_t a = std::bit_cast<std::uint32_t>(x[i]) & 0x7FFFFFFFu;
    if (a < 0x7F800000u) m = std::max(m, a);
  }
  return std::bit_cast<float>(m);
}

void WidenBf16(const std::uint16_t* in, std::int64_t n, float* out) {
  const DF df;
  const DU du;
  const hn::Rebind<std::uint16_t, DF> d16;
  const auto N = static_cast<std::int64_t>(hn::Lanes(df));
  std::int64_t i = 0;
  for (; i + N <= n; i += N) {
    hn::StoreU(hn::BitCast(df, hn::ShiftLeft<16>(hn::PromoteTo(du, hn::LoadU(d16, in + i)))), df, out + i);
  }
  for (; i < n; ++i) out[i] = std::bit_cast<float>(static_cast<std::uint32_t>(in[i]) << 16);
}

void WidenF16(const std::uint16_t* in, std::int64_t n, float* out) {
  for (std::int64_t i = 0; i < n; ++i) out[i] = decode(f16, in[i]);  // exact; f16 input is not a hot path
}

}  // namespace HWY_NAMESPACE
}  // namespace mf::cpu
HWY_AFTER_NAMESPACE();

#endif  // include guard
