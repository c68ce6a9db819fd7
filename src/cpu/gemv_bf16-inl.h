// The bf16 GEMV's weights: a vector of them widened to f32 (LoadBf16).
//
// Included once per Highway target through gemv-inl.h; hence the toggle include guard.
#if defined(MINIFLOAT_SRC_CPU_GEMV_BF16_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef MINIFLOAT_SRC_CPU_GEMV_BF16_INL_H_
#undef MINIFLOAT_SRC_CPU_GEMV_BF16_INL_H_
#else
#define MINIFLOAT_SRC_CPU_GEMV_BF16_INL_H_
#endif

#include <cstdint>

#include "gemv_rows-inl.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace mf::gemm {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// kL lanes of bf16 weights w[row, k..] as f32, exactly: the bits widened by a shift. bf16 has no loop of its own: its
// rows go through the shared group loop (GroupProducts, gemv_blocks-inl.h) on every target (gemv_loops-inl.h).
HWY_INLINE VF LoadBf16(const WeightRow& r, std::int64_t k) {
  const DF df;
  const hn::Rebind<std::uint16_t, DF> d16;
  return hn::BitCast(df, hn::ShiftLeft<16>(hn::PromoteTo(DU(), hn::LoadU(d16, r.bf16 + k))));
}

}  // namespace HWY_NAMESPACE
}  // namespace mf::gemm
HWY_AFTER_NAMESPACE();

#endif  // include guard
