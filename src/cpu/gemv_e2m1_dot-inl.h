// The e2m1 (mxfp4, nvfp4) GEMV by AVX512-BF16's dot product on AVX3_DL (MF_GEMV_E2M1_DOT): each scale code's values
// as bf16 words (E2m1DotTables), the activations as bf16 pairs in the strided lane order (E2m1DotPairs), and the
// block loop that meets them (BlockSumsE2m1DotBf16). The sums are BlockSumsE2m1's, bit for bit; where a scale keeps
// the dot product from giving them, the group takes the definition's own loop (GemvBlock's redo).
//
// Included once per Highway target through gemv-inl.h; hence the toggle include guard.
#if defined(MINIFLOAT_SRC_CPU_GEMV_E2M1_DOT_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef MINIFLOAT_SRC_CPU_GEMV_E2M1_DOT_INL_H_
#undef MINIFLOAT_SRC_CPU_GEMV_E2M1_DOT_INL_H_
#else
#define MINIFLOAT_SRC_CPU_GEMV_E2M1_DOT_INL_H_
#endif

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "../ref/gemm_problem.h"
#include "gemv_e2m1-inl.h"
#include "gemv_e4m3-inl.h"
#include "gemv_inputs-inl.h"
#include "gemv_loops-inl.h"
#include "gemv_rows-inl.h"
#include "hwy/aligned_allocator.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace mf::gemm {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if MF_GEMV_E2M1_DOT
// What E2m1DotTables says of a scale code: its 16 weights are exact normal bf16 (or ±0, or all NaN for a NaN scale)
// within [2^-110, 2^111) (kScaleExact); only its ±0 weights are (kScaleZerosOnly: a block of ±0 codes still sums
// exactly); or not even those (kScaleNever: an infinite scale).
constexpr std::uint8_t kScaleExact = 0, kScaleZerosOnly = 1, kScaleNever = 2;

// Per scale code, the 16 e2m1 values times its scale as bf16 (the f32 product, as Problem::weight makes it, cut to
// its high half), twice over: 32 words, one line, for a word permute that reads 5 index bits. Beside them, each code's
// kScaleExact and the others. Why the range: an activation (an e4m3 value, |a| in [2^-9, 448], a multiple of 2^-9)
// times a weight whose exponent is at least -110 (a multiple of 2^-117) is a multiple of 2^-126, and so is every sum of
// such, so no product or sum is an f32 denormal, which the dot product would flush; below 2^111 no product (< 2^120) or
// sum of 128 of them reaches f32's largest. Made again, in the thread's GemvBuffers, only when the scales differ.
HWY_INLINE void E2m1DotTables(const Problem& p, GemvBuffers& b) {
  if (b.e2m1_bf16 && std::memcmp(b.e2m1_bf16_of.data(), p.weight_scale_table.data(), sizeof(float) * 256) == 0) return;
  if (!b.e2m1_bf16) b.e2m1_bf16 = hwy::AllocateAligned<std::uint16_t>(256 * 32);
  for (std::size_t code = 0; code < 256; ++code) {
    const float scale = p.weight_scale_table[code];
    std::uint8_t kind = std::isinf(scale) ? kScaleNever : kScaleExact;
    for (std::size_t j = 0; j < 16; ++j) {
      const float w = codec::kE2m1Values[j] * scale;
      const std::uint32_t bits = std::bit_cast<std::uint32_t>(w);
      const float magnitude = std::fabs(w);
      const bool fits =
          std::isnan(w) || w == 0.0f || ((bits & 0xFFFFu) == 0 && magnitude >= 0x1p-110f && magnitude < 0x1p111f);
      if (!fits && kind == kScaleExact) kind = kScaleZerosOnly;
      b.e2m1_bf16[code * 32 + j] = b.e2m1_bf16[code * 32 + 16 + j] = static_cast<std::uint16_t>(bits >> 16);
    }
    b.e2m1_bf16_scale[code] = kind;
  }
  // The longest run of exact codes (ue8m0: 18-235; e4m3: all), which E2m1ScalesExact looks for.
  int first = 0, length = 0;
  for (int code = 0, run = 0; code < 256; ++code) {
    run = b.e2m1_bf16_scale[static_cast<std::size_t>(code)] == kScaleExact ? run + 1 : 0;
    if (run > length) length = run, first = code - run + 1;
  }
  b.e2m1_bf16_exact_first = first;
  b.e2m1_bf16_exact_length = length;
  b.e2m1_bf16_of = p.weight_scale_table;
}

// Whether every scale code of the 16 rows (scale_cols each) lies in the run of `length` exact codes from `first`
// (E2m1DotTables), so that BlockSumsE2m1DotBf16 need not look at any: 64 codes per compare.
HWY_INLINE bool E2m1ScalesExact(const WeightRow (&rows)[kLanes], std::int64_t scale_cols, int first, int length) {
  if (length == 0) return false;
  const __m512i low = _mm512_set1_epi8(static_cast<char>(first));
  const __m512i most = _mm512_set1_epi8(static_cast<char>(length - 1));
  __mmask64 out = 0;
  for (int i = 0; i < kLanes; ++i) {
    const std::uint8_t* codes = rows[i].scale_codes;
    for (std::int64_t c = 0; c < scale_cols; c += 64) {
      const __mmask64 in = scale_cols - c >= 64 ? ~__mmask64{0} : (__mmask64{1} << (scale_cols - c)) - 1;
      const __m512i v = _mm512_maskz_loadu_epi8(in, codes + c);
      out |= _mm512_mask_cmpgt_epu8_mask(in, _mm512_sub_epi8(v, low), most);
    }
  }
  return out == 0;
}

// The strided activation row (StridedActivations) as BlockSumsE2m1DotBf16 reads it: Bf16PairsOf, so that lane l of a
// 32-value step holds the activations of k = c + q and c + 16 + q (q = l / 2 for even l, 8 + l / 2 for odd), in that
// order. False where that loop does not run: no such CPU, not chosen, or an activation that is no e4m3 value (the
// weight-only form's f32 and bf16 activations).
HWY_INLINE bool E2m1DotPairs(const Problem& p, const float* strided, std::vector<std::uint16_t>& pairs) {
  if (!gemv_e4m3_bf16_dot_chosen() || !CpuDotBf16RoundsTwice()) return false;
  return Bf16PairsOf(strided, p.k, 1.0f, 0x1p-9f, 448.0f, pairs);
}

// Whether any of `bytes` e2m1 codes at `codes` has a nonzero magnitude (a block the zeros_only rule does not cover).
HWY_INLINE bool NonzeroMagnitudes(const std::uint8_t* codes, int bytes) {
  std::uint64_t word, any = 0;
  for (int at = 0; at < bytes; at += 8) std::memcpy(&word, codes + at, 8), any |= word;
  return (any & 0x7777777777777777ull) != 0;
}

// The byte permute of step s (32 weights, bytes 16s .. 16s + 15 of a row's 64-byte group) from the group's bytes (index
// 0-63) and the same shifted right by 4 (64-127): word 2l + 1 of dword l takes the byte whose low nibble is weight q of
// the step, word 2l that of weight 16 + q (q = l / 2 for even l, 8 + l / 2 for odd: the strided lane order), so
// that the dot product multiplies weight q first, as the definition's fmas do.
struct E2m1DotPermutes {
  alignas(64) std::uint8_t index[4][64] = {};
  constexpr E2m1DotPermutes() {
    for (int s = 0; s < 4; ++s) {
      for (int l = 0; l < 16; ++l) {
        const int q = l % 2 ? 8 + l / 2 : l / 2;
        const int half = q % 2 ? 64 : 0;  // the high nibble: from the shifted copy
        const auto first = static_cast<std::uint8_t>(half + 16 * s + q / 2);
        const auto second = static_cast<std::uint8_t>(half + 16 * s + 8 + q / 2);
        index[s][4 * l] = index[s][4 * l + 1] = second;
        index[s][4 * l + 2] = index[s][4 * l + 3] = first;
      }
    }
  }
};
inline constexpr E2m1DotPermutes kE2m1DotPermutes{};

// The sums of every group of a 16-row block of e2m1 weights by AVX512-BF16's dot product, for kBatch activation rows
// (pairs[b]: E2m1DotPairs) at once: BlockSumsE2m1's sums, bit for bit. Per weight row and group, the 64 code bytes
// are loaded once and shifted right by 4 once; per 32 weights a two-source byte permute (kE2m1DotPermutes) puts each
// weight's nibble in the low bits of its word, a word permute reads its value x scale from the scale code's bf16
// table (E2m1DotTables; nvfp4's two 16-weight blocks: a two-table permute, the second table chosen by bit 5, set in
// the bytes of weights 16-31), and one dot product adds, to lane l, weight q's product and then weight 16 + q's, each
// rounded: the definition's fmas in its order, with no denormal for the instruction to flush (E2m1DotTables' range).
// The tree is ReduceTileStrided's. kChecked (some scale code of the block's rows outside E2m1ScalesExact's run):
// redo[b x groups + g] = 1 where a block's scale code is not exact and its codes are not all ±0 (GemvBlock then takes
// the definition's loop for the group); otherwise 0. sums[16 (b x groups + g) +
// StridedTreeLane(i)]: group g of weight row i for activation row b.
template <int kBatch, bool kBlock16, bool kChecked>
HWY_NOINLINE __attribute__((target(HWY_TARGET_STR ",avx512bf16"))) void BlockSumsE2m1DotBf16(
    const WeightRow (&rows)[kLanes], const std::uint16_t* const* HWY_RESTRICT pairs, std::int64_t k, int shift,
    const std::uint16_t* HWY_RESTRICT tables, const std::uint8_t* HWY_RESTRICT scale_kinds, float* HWY_RESTRICT sums,
    std::uint8_t* HWY_RESTRICT redo) {
  const DF df;
  // One activation row: all 16 weight rows' sums in registers, read by the tree where they are.
  constexpr int kRows = kBatch == 1 ? kLanes : kGemvPassRows<kBatch>;
  const std::int64_t groups = k / kActBlock;
  __m512i permute[4];
  for (int s = 0; s < 4; ++s) permute[s] = _mm512_load_si512(kE2m1DotPermutes.index[s]);
  // nvfp4: the nibbles alone (bits 3:0), and bit 5 in the bytes of weights 16-31 of each step (bytes 8-15 of 16)
  const __m512i nibble = _mm512_set1_epi8(0x0F);
  const __m512i second_half = _mm512_maskz_mov_epi8(0xFF00FF00FF00FF00ull, _mm512_set1_epi8(0x20));
  for (std::int64_t k0 = 0, g = 0; k0 < k; k0 += kActBlock, ++g) {
    bool lost = false;
    VF acc[kBatch][kLanes][kV];
    __m512bh a1[4];  // kBatch = 1: the group's activations, loaded once for its 16 rows
    if constexpr (kBatch == 1) {
      for (int s = 0; s < 4; ++s) a1[s] = (__m512bh)_mm512_loadu_si512(pairs[0] + k0 + 32 * s);
    }
    for (int pass = 0; pass < kLanes; pass += kRows) {
      __m512 dots[kBatch][kRows];
      for (auto& b : dots) {
        for (__m512& d : b) d = _mm512_setzero_ps();
      }
#pragma GCC unroll 16
      for (int i = 0; i < kRows; ++i) {
        const WeightRow& r = rows[pass + i];
        const std::uint8_t* codes = r.codes + k0 / 2;
        PrefetchRowAhead(r.codes, k0 / 2, kPrefetchAhead16, r.bytes);
        __m512i low = _mm512_loadu_si512(codes);
        __m512i high = _mm512_srli_epi64(low, 4);
        if constexpr (kBlock16) {  // (x & 0x0F) | second_half
          low = _mm512_ternarylogic_epi64(low, nibble, second_half, 0xEA);
          high = _mm512_ternarylogic_epi64(high, nibble, second_half, 0xEA);
        }
#pragma GCC unroll 4
        for (int s = 0; s < 4; ++s) {
          const __m512i index = _mm512_permutex2var_epi8(low, permute[s], high);
          __m512i w;
          if constexpr (kBlock16) {
            const std::uint8_t c0 = r.scale_codes[(k0 + 32 * s) >> shift];
            const std::uint8_t c1 = r.scale_codes[(k0 + 32 * s + 16) >> shift];
            if (kChecked && (scale_kinds[c0] | scale_kinds[c1])) {
              lost |= scale_kinds[c0] == kScaleNever || scale_kinds[c1] == kScaleNever ||
                      (scale_kinds[c0] && NonzeroMagnitudes(codes + 16 * s, 8)) ||
                      (scale_kinds[c1] && NonzeroMagnitudes(codes + 16 * s + 8, 8));
            }
            w = _mm512_permutex2var_epi16(_mm512_load_si512(tables + 32 * c0), index,
                                          _mm512_load_si512(tables + 32 * c1));
          } else {
            const std::uint8_t c = r.scale_codes[(k0 + 32 * s) >> shift];
            if (kChecked && scale_kinds[c]) {
              lost |= scale_kinds[c] == kScaleNever || NonzeroMagnitudes(codes + 16 * s, 16);
            }
            w = _mm512_permutexvar_epi16(index, _mm512_load_si512(tables + 32 * c));
          }
#pragma GCC unroll 4
          for (int b = 0; b < kBatch; ++b) {
            if constexpr (kBatch == 1) {
              dots[b][i] = _mm512_dpbf16_ps(dots[b][i], (__m512bh)w, a1[s]);
            } else {
              dots[b][i] =
                  _mm512_dpbf16_ps(dots[b][i], (__m512bh)w, (__m512bh)_mm512_loadu_si512(pairs[b] + k0 + 32 * s));
            }
          }
        }
      }
      for (int b = 0; b < kBatch; ++b) {
        for (int i = 0; i < kRows; ++i) acc[b][pass + i][0] = VF{dots[b][i]};
      }
    }
    for (int b = 0; b < kBatch; ++b) {
      hn::StoreU(ReduceTileStrided(df, acc[b]), df, sums + kLanes * (b * groups + g));
      redo[b * groups + g] = lost;
    }
  }
}
#endif  // MF_GEMV_E2M1_DOT

}  // namespace HWY_NAMESPACE
}  // namespace mf::gemm
HWY_AFTER_NAMESPACE();

#endif  // include guard
