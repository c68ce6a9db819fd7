// Per-target passes over a quantizer's input: prefetching ahead, the largest |x| of a block and of a tensor, and
// bf16 / f16 input widened to f32.
//
// Included once per Highway target through quantize-inl.h (foreach_target.h); hence the toggle include guard.
#if defined(MINIFLOAT_SRC_CPU_QUANTIZE_INPUT_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef MINIFLOAT_SRC_CPU_QUANTIZE_INPUT_INL_H_
#undef MINIFLOAT_SRC_CPU_QUANTIZE_INPUT_INL_H_
#else
#define MINIFLOAT_SRC_CPU_QUANTIZE_INPUT_INL_H_
#endif

#include <algorithm>
#include <bit>
#include <cstdint>

#include "hwy/highway.h"
#include "minifloat/codec.h"

HWY_BEFORE_NAMESPACE();
namespace mf::cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::ScalableTag<float>;
using DU = hn::RebindToUnsigned<DF>;
using DI = hn::RebindToSigned<DF>;
using D8 = hn::Rebind<std::uint8_t, DF>;

// Single-thread streaming from DRAM is bound by how many line fills are in flight, and a kernel doing some 15 vector
// operations per line lets its out-of-order window run only a few lines ahead: the kernels ran well below their
// in-cache speed from DRAM. One prefetch per line, 16 KiB ahead, into L2 (the L1 fill buffers stay free for the loads)
// lets the work overlap the memory traffic (mxfp8 from DRAM: 39% -> 47% of memcpy,
// docs/benchmark-history.md#fourth-session-reading-ahead-into-l2-codes-stored-64-at-a-time). Issued in the
// loops that read x, one per vector, never as a burst: a burst of prefetches stalls on full fill buffers. The address
// is formed as an integer: it may lie past the end of x, where a prefetch is a no-op.
inline constexpr std::uintptr_t kPrefetchBytes = 16384;
HWY_INLINE void PrefetchAhead(const void* p) {
  __builtin_prefetch(reinterpret_cast<const void*>(reinterpret_cast<std::uintptr_t>(p) + kPrefetchBytes), 0, 1);
}
// The same place in the next group, into L1, from the group loops' encode pass: the next group's largest-magnitude
// pass then reads L1 rather than L2 (act_quant 11-12% faster with its input in L2, 3-4% from DRAM:
// docs/benchmark-history.md#act_quant-against-a-read-only-loop-2026-12-02-2230).
HWY_INLINE void PrefetchNextGroup(const void* p, std::int64_t group_bytes) {
  __builtin_prefetch(
      reinterpret_cast<const void*>(reinterpret_cast<std::uintptr_t>(p) + static_cast<std::uintptr_t>(group_bytes)), 0,
      3);
}

// The largest |x| bit pattern over x[c0, c1).
HWY_INLINE std::uint32_t MaxAbsBits(const float* x, std::int64_t c0, std::int64_t c1) {
  const DF df;
  const DU du;
  const auto N = static_cast<std::int64_t>(hn::Lanes(df));
  auto acc = hn::Zero(du);
  std::int64_t c = c0;
  for (; c + N <= c1; c += N) acc = hn::Max(acc, hn::BitCast(du, hn::Abs(hn::LoadU(df, x + c))));
  std::uint32_t m = c > c0 ? hn::GetLane(hn::MaxOfLanes(du, acc)) : 0;
  for (; c < c1; ++c) m = std::max(m, std::bit_cast<std::uint32_t>(x[c]) & 0x7FFFFFFFu);
  return m;
}

// max |x| over the finite values of x[0, n).
float FiniteAmax(const float* x, std::int64_t n) {
  const DF df;
  const DU du;
  const auto N = static_cast<std::int64_t>(hn::Lanes(df));
  // Two operations a vector (|x| bits, max); a NaN or Inf seen on the way sends the slice to the masked loop.
  auto acc = hn::Zero(du);
  std::int64_t i = 0;
  for (; i + N <= n; i += N) {
    PrefetchAhead(x + i);
    acc = hn::Max(acc, hn::BitCast(du, hn::Abs(hn::LoadU(df, x + i))));
  }
  std::uint32_t m = i > 0 ? hn::GetLane(hn::MaxOfLanes(du, acc)) : 0;
  if (m >= 0x7F800000u) {
    const auto inf = hn::Set(du, 0x7F800000u);
    acc = hn::Zero(du);
    for (std::int64_t j = 0; j < i; j += N) {
      const auto a = hn::BitCast(du, hn::Abs(hn::LoadU(df, x + j)));
      acc = hn::Max(acc, hn::IfThenElseZero(hn::Lt(a, inf), a));
    }
    m = hn::GetLane(hn::MaxOfLanes(du, acc));
  }
  for (; i < n; ++i) {
    const std::uint32_t a = std::bit_cast<std::uint32_t>(x[i]) & 0x7FFFFFFFu;
    if (a < 0x7F800000u) m = std::max(m, a);
  }
  return std::bit_cast<float>(m);
}

// bf16 / f16 bits to f32 (exact).
void WidenBf16(const std::uint16_t* in, std::int64_t n, float* out) {
  const DF df;
  const DU du;
  const hn::Rebind<std::uint16_t, DF> d16;
  const auto N = static_cast<std::int64_t>(hn::Lanes(df));
  std::int64_t i = 0;
  for (; i + N <= n; i += N) {
    PrefetchAhead(in + i);
    hn::StoreU(hn::BitCast(df, hn::ShiftLeft<16>(hn::PromoteTo(du, hn::LoadU(d16, in + i)))), df, out + i);
  }
  for (; i < n; ++i) out[i] = std::bit_cast<float>(static_cast<std::uint32_t>(in[i]) << 16);
}

void WidenF16(const std::uint16_t* in, std::int64_t n, float* out) {
  const DF df;
  const hn::Rebind<hwy::float16_t, DF> dh;
  const auto N = static_cast<std::int64_t>(hn::Lanes(df));
  std::int64_t i = 0;
  // F16C's exact conversion on AVX2 and up. Highway 1.0.3's emulation on older targets mishandles f16 subnormals
  // (QuantizeSimd.Bf16AndF16Inputs fails with it): the scalar codec there.
#if HWY_TARGET <= HWY_AVX2
  for (; i + N <= n; i += N) {
    PrefetchAhead(in + i);
    hn::StoreU(hn::PromoteTo(df, hn::LoadU(dh, reinterpret_cast<const hwy::float16_t*>(in + i))), df, out + i);
  }
#else
  (void)dh;
  (void)N;
#endif
  for (; i < n; ++i) out[i] = decode(f16, in[i]);
}

}  // namespace HWY_NAMESPACE
}  // namespace mf::cpu
HWY_AFTER_NAMESPACE();

#endif  // include guard
