// The mxfp8 GEMV (e4m3 in 1x32 blocks with ue8m0 scales, E4m3ScaleCodes): on AVX3_DL the scale codes are read in
// place, one byte per 32 weights, and each scale goes into the bf16 exponents of the activations its block meets in
// AVX512-BF16's dot product (BlockSumsDotBf16Codes), or multiplies the table decode's f32 values
// (BlockSumsTables<kCodes>). A group with a scale out of the range where that is exact (kLeastScaleCode), or with a
// NaN code in a line the loops skip, takes the definition's own loop (GroupSumsOfDefinition). The definition is fp8's
// (minifloat/gemm.h): the scale inside the weight, value x 2^e.
//
// Included once per Highway target through gemv-inl.h; hence the toggle include guard.
#if defined(MINIFLOAT_SRC_CPU_GEMV_MXFP8_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef MINIFLOAT_SRC_CPU_GEMV_MXFP8_INL_H_
#undef MINIFLOAT_SRC_CPU_GEMV_MXFP8_INL_H_
#else
#define MINIFLOAT_SRC_CPU_GEMV_MXFP8_INL_H_
#endif

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "../ref/gemm_problem.h"
#include "gemv_e4m3-inl.h"
#include "gemv_loops-inl.h"
#include "gemv_rows-inl.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace mf::gemm {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// One group's 16 sums into red (lane bitrev4(i) for row n0 + i; kStrided, the e2m1 GEMV's: StridedTreeLane(i)) in the
// definition's loop, as gemm_ref.cc writes it: for the blocks and groups the vector loops leave (a NaN code, a scale
// out of range).
template <bool kStrided = false>
HWY_INLINE void GroupSumsOfDefinition(const Problem& p, const float* HWY_RESTRICT a, std::int64_t n0, std::int64_t k0,
                                      std::int64_t end, float* HWY_RESTRICT red) {
  for (int i = 0; i < kLanes; ++i) {
    const std::int64_t row = std::min(n0 + i, p.n - 1);
    float partial[kLanes] = {};
    for (std::int64_t k = k0; k < end; ++k) partial[k % kLanes] = std::fma(a[k], p.weight(row, k), partial[k % kLanes]);
    red[kStrided ? StridedTreeLane(i) : bitrev4(i)] = tree_sum(partial);
  }
}

#if MF_GEMV_E4M3_TABLES
// Per ue8m0 code c, (c - 127) x 2^7 in both 16-bit halves: added to a nonzero bf16, the scale's exponent added to its
// exponent field (bits 14:7). A dword, so that a broadcast of it from memory is a load alone.
struct Bf16ExponentSteps {
  std::uint32_t step[256] = {};
  constexpr Bf16ExponentSteps() {
    for (int c = 0; c < 256; ++c) {
      const auto half = static_cast<std::uint32_t>(static_cast<std::uint16_t>((c - 127) * 128));
      step[c] = ScaleCodeOutOfRange(static_cast<std::uint8_t>(c)) ? 0 : half | half << 16;
    }
  }
};
inline constexpr Bf16ExponentSteps kBf16ExponentSteps{};

// Which words of 32 activation pairs take a scale's exponent: those neither ±0 (which stay zero) nor NaN (which stays
// NaN).
HWY_INLINE __mmask32 ScalableWords(__m512i a) {
  const __m512i magnitude = _mm512_and_si512(a, _mm512_set1_epi16(0x7FFF));
  return _mm512_mask_cmple_epu16_mask(_mm512_test_epi16_mask(magnitude, magnitude), magnitude,
                                      _mm512_set1_epi16(0x7F80));
}

// BlockSumsDotBf16 for mxfp8 (E4m3ScaleCodes): the codes decoded as fp8's (codec::DecodeE4m3x64Bf16Pairs: lane i of
// w0 holds codes i and 16 + i of the line, of w1 codes 32 + i and 48 + i, so w0 and w1 each lie in one scale block)
// and each block's scale 2^e put into the activations the block meets, by adding e to their bf16 exponents (one
// masked add per 32 pairs and weight row; into the weights it took a test and an add per 32 codes). a x 2^e is a
// normal bf16 and (a x 2^e) x value = a x (value x 2^e) exactly, the definition's product, for every scale in
// kLeastScaleCode's range, so every step is one of the definition's fmas in its order and each group's tree sum is the
// definition's, bit for bit, with no factor after. `pairs`: the activations as they are (DotBf16Pairs). NaN codes
// decode to NaN and reach the sums as in the definition; redo[g] = 1 where a line past `live` (only looked through)
// holds one, or a scale is out of that range where it matters. Arguments and layout as BlockSumsDotBf16's.
template <int kBatch>
HWY_NOINLINE __attribute__((target(HWY_TARGET_STR ",avx512bf16"))) void BlockSumsDotBf16Codes(
    const WeightRow (&rows)[kLanes], const std::uint16_t* const* HWY_RESTRICT pairs, std::int64_t k, std::int64_t group,
    std::int64_t live, float* HWY_RESTRICT sums, std::uint8_t* HWY_RESTRICT redo) {
  const DF df;
  const auto whole = LineCodes(0, 64);
  constexpr int kRows = kBatch == 1 ? kLanes : kGemvPassRows<kBatch>;
  const std::int64_t groups = k / group;
  const std::uint32_t* steps = kBf16ExponentSteps.step;
  for (std::int64_t k0 = 0, g = 0; k0 < k; k0 += group, ++g) {
    auto seen = hn::Set(D8(), std::uint8_t{0x7F});
    bool lost = false;  // a scale the loop cannot apply exactly
    VF acc[kBatch][kLanes][kV];
    for (int pass = 0; pass < kLanes; pass += kRows) {
      const std::uint8_t* codes[kRows];
      const std::uint8_t* scales[kRows];
      for (int i = 0; i < kRows; ++i) codes[i] = rows[pass + i].codes, scales[i] = rows[pass + i].scale_codes;
      __m512 dots[kBatch][kRows];
      for (auto& b : dots) {
        for (__m512& d : b) d = _mm512_setzero_ps();
      }
      for (std::int64_t line = k0; line < k0 + group; line += 64) {
        if (line >= live) {
          for (int i = 0; i < kRows; ++i) {
            SeeCodes(codes[i] + line, whole, seen);
            lost |= ScaleCodeHuge(scales[i][line >> 5]) || ScaleCodeHuge(scales[i][(line >> 5) + 1]);
          }
          continue;
        }
        __m512i a0[kBatch], a1[kBatch];
        __mmask32 m0[kBatch], m1[kBatch];
        for (int b = 0; b < kBatch; ++b) {
          a0[b] = _mm512_loadu_si512(pairs[b] + line), a1[b] = _mm512_loadu_si512(pairs[b] + line + 32);
          m0[b] = ScalableWords(a0[b]), m1[b] = ScalableWords(a1[b]);
        }
#pragma GCC unroll 16
        for (int i = 0; i < kRows; ++i) {
          PrefetchRowAhead(codes[i], line, kE4m3PrefetchAhead, rows[pass + i].bytes);
          __m512i w0, w1;
          codec::DecodeE4m3x64Bf16Pairs(codes[i] + line, w0, w1);
          const std::uint8_t c0 = scales[i][line >> 5], c1 = scales[i][(line >> 5) + 1];
          const __m512i e0 = _mm512_set1_epi32(static_cast<int>(steps[c0]));
          const __m512i e1 = _mm512_set1_epi32(static_cast<int>(steps[c1]));
          if (HWY_UNLIKELY(ScaleCodeOutOfRange(c0) || ScaleCodeOutOfRange(c1))) {  // exact only for blocks of zeros
            const __m512i magnitude = _mm512_set1_epi16(0x7FFF);
            lost |= c0 == 0xFF || c1 == 0xFF || (ScaleCodeOutOfRange(c0) && _mm512_test_epi16_mask(w0, magnitude)) ||
                    (ScaleCodeOutOfRange(c1) && _mm512_test_epi16_mask(w1, magnitude));
          }
#pragma GCC unroll 4
          for (int b = 0; b < kBatch; ++b) {
            const __m512bh s0 = (__m512bh)_mm512_mask_add_epi16(a0[b], m0[b], a0[b], e0);
            const __m512bh s1 = (__m512bh)_mm512_mask_add_epi16(a1[b], m1[b], a1[b], e1);
            dots[b][i] = _mm512_dpbf16_ps(_mm512_dpbf16_ps(dots[b][i], (__m512bh)w0, s0), (__m512bh)w1, s1);
          }
        }
      }
      for (int b = 0; b < kBatch; ++b) {
        for (int i = 0; i < kRows; ++i) acc[b][pass + i][0] = VF{dots[b][i]};
      }
    }
    for (int b = 0; b < kBatch; ++b) hn::StoreU(ReduceTile(df, acc[b]), df, sums + kLanes * (b * groups + g));
    const std::uint8_t again = lost || !SawNoNan(seen);
    for (int b = 0; b < kBatch; ++b) redo[b * groups + g] = again;
  }
}
#endif  // MF_GEMV_E4M3_TABLES

}  // namespace HWY_NAMESPACE
}  // namespace mf::gemm
HWY_AFTER_NAMESPACE();

#endif  // include guard
