// The e4m3 (fp8) GEMV: its weights decoded in registers (LoadE4m3) and its loops: GroupProductsOptimistic (16
// lanes), BlockSumsTables and BlockSumsDotBf16 (AVX3_DL), BlockSumsLanes (AVX2); each row's factor on its group
// sums (ApplyRowFactors), and which problems the block loops take (E4m3Batched). Which loop a target runs, and
// why: gemv_loops-inl.h.
//
// Included once per Highway target through gemv-inl.h; hence the toggle include guard.
#if defined(MINIFLOAT_SRC_CPU_GEMV_E4M3_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef MINIFLOAT_SRC_CPU_GEMV_E4M3_INL_H_
#undef MINIFLOAT_SRC_CPU_GEMV_E4M3_INL_H_
#else
#define MINIFLOAT_SRC_CPU_GEMV_E4M3_INL_H_
#endif

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "../ref/gemm_problem.h"
#include "gemm_dispatch.h"
#include "gemv_loops-inl.h"
#include "gemv_rows-inl.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace mf::gemm {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// How LoadE4m3 decodes e4m3 (MF_GEMV_E4M3_FP16): through fp16 (F16C: AVX2 and newer) to value x 2^-8, never an f32
// subnormal; on narrower targets the fields moved into f32 place, value x 2^-120 (an f32 subnormal for a subnormal
// code, which costs a microcode assist per fma on Intel's cores: docs/gemm.md). With per-group factors the
// activations carry the rest of 2^-1 (kE4m3ActScale), so that every product is a x value / 2 either way.
constexpr float kE4m3ActScale = MF_GEMV_E4M3_FP16 ? 0x1p7f : 0x1p119f;

#if MF_GEMV_E4M3_FP16
// What the fp16 decode (value x 2^-8) of scale column `col` of a row is multiplied by: the scale times 2^8, from the
// row's factor (2^120 x scale) or, for mxfp8's codes read in place (E4m3ScaleCodes), from the code's scale.
HWY_INLINE float E4m3HalfFactor(const WeightRow& r, std::int64_t col) {
  return r.scales != nullptr ? r.scales[col] * 0x1p-112f : r.weight_scale_table[r.scale_codes[col]] * 0x1p8f;
}
#endif

// kL lanes of e4m3 weights w[row, k..] exactly as Problem::weight gives them: through fp16 the value times 2^-8
// (codec::DecodeE4m3Half), or the code, sign-extended, shifted so that its fields sit where f32's do (bits 20-26,
// sign at 31): the value times 2^-120 (an f32 subnormal for subnormal codes, as exact); one product by 2^120 x
// scale times 2^-112 or 1 gives value * scale exactly (it is representable); NaN codes are put back after.
// kNanCheck = false leaves NaN codes as finite values: for callers that look for them another way.
template <bool kPerGroup = false, bool kNanCheck = true>
HWY_INLINE VF LoadE4m3(const WeightRow& r, std::int64_t k, int shift) {
  const DF df;
  const DI di;
  const hn::Rebind<std::int8_t, DF> d8;
#if MF_GEMV_E4M3_FP16
  // kPerGroup: value x 2^-8 as it is; the activations carry 2^7 and the group's sum the rest.
  const VF half = codec::DecodeE4m3Half(df, r.codes + k);
  const VF v = kPerGroup ? half : hn::Mul(half, hn::Set(df, E4m3HalfFactor(r, k >> shift)));
  const auto c = hn::PromoteTo(di, hn::LoadU(d8, reinterpret_cast<const std::int8_t*>(r.codes + k)));
#else
  const auto c = hn::PromoteTo(di, hn::LoadU(d8, reinterpret_cast<const std::int8_t*>(r.codes + k)));
  const auto bits = codec::DecodeE4m3Placed(di, c);
  // kPerGroup: the bits as they are (value x 2^-120); the activations carry 2^119 and the group's sum the rest.
  // (Here only on SSE4 and narrower.)
  const VF v = kPerGroup ? hn::BitCast(df, bits) : hn::Mul(hn::BitCast(df, bits), hn::Set(df, r.scales[k >> shift]));
#endif
  if constexpr (!kNanCheck) return v;
  const auto nan = hn::RebindMask(df, codec::E4m3IsNan(di, c));
  return hn::IfThenElse(nan, hn::Set(df, std::numeric_limits<float>::quiet_NaN()), v);
}

// LoadE4m3 at k and k + kL, for the loops that look for NaN codes on the side: through fp16 converts the 2 kL codes
// with one shift and mask.
template <bool kPerGroup, bool kNanCheck>
HWY_INLINE void LoadE4m3Pair(const WeightRow& r, std::int64_t k, int shift, VF& w0, VF& w1) {
#if MF_GEMV_E4M3_FP16
  if constexpr (!kNanCheck) {
    const DF df;
    codec::DecodeE4m3Halves(df, r.codes + k, w0, w1);
    if constexpr (!kPerGroup) {
      w0 = hn::Mul(w0, hn::Set(df, E4m3HalfFactor(r, k >> shift)));
      w1 = hn::Mul(w1, hn::Set(df, E4m3HalfFactor(r, (k + static_cast<std::int64_t>(kL)) >> shift)));
    }
    return;
  }
#endif
  w0 = LoadE4m3<kPerGroup, kNanCheck>(r, k, shift);
  w1 = LoadE4m3<kPerGroup, kNanCheck>(r, k + static_cast<std::int64_t>(kL), shift);
}

#if MF_GEMV_E4M3_OPTIMISTIC
using D8 = hn::Repartition<std::uint8_t, DF>;  // a vector of weight codes

// The codes of a line from `line` to `stop` (up to 64) to load; bytes past them load as 0, which is not a NaN code.
HWY_INLINE hn::Mask<D8> LineCodes(std::int64_t line, std::int64_t stop) {
  return hn::FirstN(D8(), static_cast<std::size_t>(stop - line));
}
// Folds a line's codes (`in`: LineCodes) into `seen`, the running minimum of ~code & 0x7F: 0 once a NaN code (0x7F,
// 0xFF) was seen.
HWY_INLINE void SeeCodes(const std::uint8_t* line, hn::Mask<D8> in, hn::Vec<D8>& seen) {
  const D8 d8;
  seen = hn::Min(seen, hn::AndNot(hn::MaskedLoad(in, d8, line), hn::Set(d8, std::uint8_t{0x7F})));
}
HWY_INLINE bool SawNoNan(hn::Vec<D8> seen) { return hn::AllFalse(D8(), hn::Eq(seen, hn::Zero(D8()))); }

// GroupProducts<e4m3, kPerGroup> for 16-lane targets that decodes without the per-vector NaN check and looks for
// NaN codes (0x7F, 0xFF) on the side: two operations per 64 codes (a running byte minimum of ~code & 0x7F, which is
// 0 only for a NaN code), where the check takes three per 16. Returns false if the group holds a NaN code: its sums
// are then wrong and the caller redoes the group with the checked loop, so the bits are the same either way. NaN
// codes are rare in real weights (docs/benchmark-history.md#fifth-session-faster-gemvs-and-a-fair-openblas measures the
// gain).
template <bool kPerGroup>
HWY_INLINE bool GroupProductsOptimistic(const WeightRow (&rows)[kLanes], const float* HWY_RESTRICT a, std::int64_t k0,
                                        std::int64_t end, int shift, VF (&acc)[kLanes][kV]) {
  const DF df;
  auto seen = hn::Set(D8(), std::uint8_t{0x7F});
  for (std::int64_t line = k0; line < end; line += 64) {
    const std::int64_t stop = std::min(end, line + 64);
    const auto in = LineCodes(line, stop);
#pragma GCC unroll 16
    for (int i = 0; i < kLanes; ++i) SeeCodes(rows[i].codes + line, in, seen);
    std::int64_t k = line;
    for (; k + 2 * kLanes <= stop; k += 2 * kLanes) {
      const VF a0 = hn::LoadU(df, a + k), a1 = hn::LoadU(df, a + k + kLanes);
#pragma GCC unroll 16
      for (int i = 0; i < kLanes; ++i) {
        VF w0, w1;
        LoadE4m3Pair<kPerGroup, false>(rows[i], k, shift, w0, w1);
        acc[i][0] = hn::MulAdd(a1, w1, hn::MulAdd(a0, w0, acc[i][0]));
      }
    }
    if (k < stop) {  // a group of 16 values, or one ending in 16
      const VF av = hn::LoadU(df, a + k);
#pragma GCC unroll 16
      for (int i = 0; i < kLanes; ++i) {
        acc[i][0] = hn::MulAdd(av, LoadE4m3<kPerGroup, false>(rows[i], k, shift), acc[i][0]);
      }
    }
  }
  return SawNoNan(seen);
}
#endif  // MF_GEMV_E4M3_OPTIMISTIC

#if MF_GEMV_E4M3_TABLES
// The sums of every group of a 16-row block (GemvBlock) on AVX3_DL, for e4m3 weights whose groups are whole lines of 64
// codes: the codes decoded by table to their f32 values (codec::DecodeE4m3x64), which are never f32 subnormals, into
// one fma per weight in the definition's order. The GFNI decode this replaced gave value x 2^-120, an f32 subnormal for
// each subnormal code, and Intel's cores take a microcode assist for every fma that reads one: on the Sapphire
// Rapids-class Xeon a GEMV whose 128 x 128 blocks each held a 100-sigma outlier (0.42% subnormal codes) ran at a third
// of the Gaussian speed (docs/gemm.md). This loop's speed does not depend on the values, and NaN codes decode to NaN
// and reach their sums as in the definition, so no look on the side. kPerGroup: `a` is the activation row halved
// (exact) and each row's factor goes on the group sum as for the other loops (a/2 x value is a x 2^119 x value x
// 2^-120, so the sums are theirs bit for bit); otherwise `a` is the row as it is and each 32-value block's weights are
// multiplied by their power-of-two scale (the row's factor times 2^-120: value x scale, exact, the definition's weight;
// scale blocks at least 32 wide, GemvInputsOf). Lines wholly past `live` (zero activations) are only looked through for
// NaN codes: redo[g] = 1 where one was seen (the caller redoes the group with the checked loop). For kBatch activation
// rows at once (a[b]), each decoded vector meeting every one (kGemvPassRows weight rows at a time): sums[16 (b x groups
// + g) + bitrev4(i)] holds group g of weight row i for activation row b, and redo[b x groups + g] its flag (`live` is
// the batch's: batches skip different lines, so each row keeps its own). group % 64 == 0, k % group == 0.
// kCodes (mxfp8, E4m3ScaleCodes): the rows' scales are ue8m0 codes, each 32-value block's weights multiplied by the
// code's scale from the table, the product Problem::weight makes.
template <bool kPerGroup, int kBatch, bool kCodes = false>
HWY_NOINLINE void BlockSumsTables(const WeightRow (&rows)[kLanes], const float* const* HWY_RESTRICT a, std::int64_t k,
                                  std::int64_t group, std::int64_t live, int shift, float* HWY_RESTRICT sums,
                                  std::uint8_t* HWY_RESTRICT redo) {
  const DF df;
  const auto whole = LineCodes(0, 64);
  constexpr int kRows = kGemvPassRows<kBatch>;
  const std::int64_t groups = k / group;
  for (std::int64_t k0 = 0, g = 0; k0 < k; k0 += group, ++g) {
    auto seen = hn::Set(D8(), std::uint8_t{0x7F});
    bool huge = false;
    VF acc[kBatch][kLanes][kV];
    for (int pass = 0; pass < kLanes; pass += kRows) {  // their pointers and sums stay in registers
      const std::uint8_t* codes[kRows];
      for (int i = 0; i < kRows; ++i) codes[i] = rows[pass + i].codes;
      VF sum[kBatch][kRows];
      for (auto& b : sum) {
        for (VF& v : b) v = hn::Zero(df);
      }
      for (std::int64_t line = k0; line < k0 + group; line += 64) {
        if (line >= live) {
          for (int i = 0; i < kRows; ++i) SeeCodes(codes[i] + line, whole, seen);
          if constexpr (kCodes) {  // 0 x Inf, 0 x NaN: a scale that can overflow a weight, or NaN (gemv_mxfp8-inl.h)
            for (int i = 0; i < kRows; ++i) {
              const std::uint8_t* scales = rows[pass + i].scale_codes;
              huge |= ScaleCodeHuge(scales[line >> shift]) || ScaleCodeHuge(scales[(line >> shift) + 1]);
            }
          }
          continue;
        }
        VF av[4];  // one activation row's line, held in registers (kBatch = 1)
        if constexpr (kBatch == 1) {
          for (int j = 0; j < 4; ++j) av[j] = hn::LoadU(df, a[0] + line + 16 * j);
        }
#pragma GCC unroll 8
        for (int i = 0; i < kRows; ++i) {
          PrefetchRowAhead(codes[i], line, kE4m3PrefetchAhead, rows[pass + i].bytes);
          VF w0, w1, w2, w3;
          codec::DecodeE4m3x64(codes[i] + line, w0, w1, w2, w3);
          if constexpr (kCodes) {
            const std::uint8_t* scales = rows[pass + i].scale_codes;
            const float* table = rows[pass + i].weight_scale_table;
            const VF first = hn::Set(df, table[scales[line >> shift]]);
            const VF second = hn::Set(df, table[scales[(line + 32) >> shift]]);
            w0 = hn::Mul(w0, first), w1 = hn::Mul(w1, first), w2 = hn::Mul(w2, second), w3 = hn::Mul(w3, second);
          } else if constexpr (!kPerGroup) {
            const float* factors = rows[pass + i].scales;
            const VF first = hn::Set(df, factors[line >> shift] * 0x1p-120f);
            const VF second = hn::Set(df, factors[(line + 32) >> shift] * 0x1p-120f);
            w0 = hn::Mul(w0, first), w1 = hn::Mul(w1, first), w2 = hn::Mul(w2, second), w3 = hn::Mul(w3, second);
          }
          if constexpr (kBatch == 1) {
            sum[0][i] = hn::MulAdd(av[1], w1, hn::MulAdd(av[0], w0, sum[0][i]));
            sum[0][i] = hn::MulAdd(av[3], w3, hn::MulAdd(av[2], w2, sum[0][i]));
          } else {
#pragma GCC unroll 4
            for (int b = 0; b < kBatch; ++b) {
              const float* ab = a[b] + line;
              sum[b][i] = hn::MulAdd(hn::LoadU(df, ab + 16), w1, hn::MulAdd(hn::LoadU(df, ab), w0, sum[b][i]));
              sum[b][i] = hn::MulAdd(hn::LoadU(df, ab + 48), w3, hn::MulAdd(hn::LoadU(df, ab + 32), w2, sum[b][i]));
            }
          }
        }
      }
      for (int b = 0; b < kBatch; ++b) {
        for (int i = 0; i < kRows; ++i) acc[b][pass + i][0] = sum[b][i];
      }
    }
    for (int b = 0; b < kBatch; ++b) hn::StoreU(ReduceTile(df, acc[b]), df, sums + kLanes * (b * groups + g));
    const std::uint8_t nan_skipped = huge || !SawNoNan(seen);
    for (int b = 0; b < kBatch; ++b) redo[b * groups + g] = nan_skipped;
  }
}

// AVX512-BF16's dot product (vdpbf16ps) adds to f32 lane i the product of bf16 words 2i + 1, rounded, then that of
// words 2i, rounded: two fmas, as Intel's manual writes it, with denormal inputs and outputs read and written as zero.
// A CPU may round the two products' sum once instead; this checks, once, on 4096 lanes of random normal inputs
// whose sums round differently in the two ways, that this one rounds twice in that order (Zen 4 does), and the
// e4m3 GEMV uses the instruction only then (and only while tests and benchmarks allow it: gemm_dispatch.h).
HWY_NOINLINE __attribute__((target(HWY_TARGET_STR ",avx512bf16"))) bool DotBf16ProbeMatches() {
  std::uint32_t state = 12345;
  const auto next = [&state] { return state = state * 1664525u + 1013904223u; };
  const auto bf16 = [&] {  // sign, exponent in [2^-17, 2^12], 7 random mantissa bits
    const std::uint32_t r = next();
    return static_cast<std::uint16_t>((r >> 31) << 15 | (110 + (r >> 8) % 30) << 7 | (r & 0x7F));
  };
  const auto widen = [](std::uint16_t b) { return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16); };
  for (int round = 0; round < 256; ++round) {
    alignas(64) std::uint16_t x[32], y[32];
    alignas(64) float acc[16], out[16];
    for (int i = 0; i < 32; ++i) x[i] = bf16(), y[i] = bf16();
    for (float& v : acc) v = std::ldexp(static_cast<float>(next() >> 8), -static_cast<int>(next() % 40));
    _mm512_store_ps(
        out, _mm512_dpbf16_ps(_mm512_load_ps(acc), (__m512bh)_mm512_load_si512(x), (__m512bh)_mm512_load_si512(y)));
    for (int i = 0; i < 16; ++i) {
      const float twice =
          std::fma(widen(x[2 * i]), widen(y[2 * i]), std::fma(widen(x[2 * i + 1]), widen(y[2 * i + 1]), acc[i]));
      if (std::bit_cast<std::uint32_t>(out[i]) != std::bit_cast<std::uint32_t>(twice)) return false;
    }
  }
  return true;
}
HWY_INLINE bool CpuDotBf16RoundsTwice() {
  static const bool has = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512bf16") && DotBf16ProbeMatches();
  }();
  return has;
}

// The sums of every group of a 16-row block (GemvBlock), multiplied with AVX512-BF16's dot product where
// CpuDotBf16RoundsTwice(), for e4m3 weights with per-group factors: the codes become their exact values as bf16
// (DecodeE4m3x64Bf16Pairs), `pairs` holds the activations times 2^-1 as bf16 in the same pairs (DotBf16Pairs), and each
// dot product adds, to lane i, the products of k and then k + 16 (k = i mod 16), each rounded: the fmas of the
// definition in its order. Every input is a normal bf16 (|a| / 2 and |value| in [2^-10, 448]) and every product and sum
// a multiple of 2^-19 below 2^24, so the instruction's flush of denormals never acts, and each group's tree sum is
// GroupSums' (a x value / 2) bit for bit. 32 products per instruction where the fma makes 16, and 8 operations per 64
// weights where BlockSumsTables takes 14 (with its fmas); the tree runs in registers, group after group, with no call
// in between. NaN codes decode to NaN and reach the sums as in the definition; only lines wholly past `live` (zero
// activations) are skipped and looked through for NaN codes: redo[g] = 1 where one was seen (the caller redoes the
// group with the checked loop). For kBatch activation rows at once (pairs[b]) as BlockSumsTables: sums[16 (b x groups +
// g) + bitrev4(i)], redo[b x groups + g]. group % 64 == 0, k % group == 0.
template <int kBatch>
HWY_NOINLINE __attribute__((target(HWY_TARGET_STR ",avx512bf16"))) void BlockSumsDotBf16(
    const WeightRow (&rows)[kLanes], const std::uint16_t* const* HWY_RESTRICT pairs, std::int64_t k, std::int64_t group,
    std::int64_t live, float* HWY_RESTRICT sums, std::uint8_t* HWY_RESTRICT redo) {
  const DF df;
  const auto whole = LineCodes(0, 64);
  constexpr int kRows = kGemvPassRows<kBatch>;
  const std::int64_t groups = k / group;
  for (std::int64_t k0 = 0, g = 0; k0 < k; k0 += group, ++g) {
    auto seen = hn::Set(D8(), std::uint8_t{0x7F});
    VF acc[kBatch][kLanes][kV];
    for (int pass = 0; pass < kLanes; pass += kRows) {
      const std::uint8_t* codes[kRows];
      for (int i = 0; i < kRows; ++i) codes[i] = rows[pass + i].codes;
      __m512 dots[kBatch][kRows];
      for (auto& b : dots) {
        for (__m512& d : b) d = _mm512_setzero_ps();
      }
      for (std::int64_t line = k0; line < k0 + group; line += 64) {
        if (line >= live) {
          for (int i = 0; i < kRows; ++i) SeeCodes(codes[i] + line, whole, seen);
          continue;
        }
#pragma GCC unroll 8
        for (int i = 0; i < kRows; ++i) {
          PrefetchRowAhead(codes[i], line, kE4m3PrefetchAhead, rows[pass + i].bytes);
          __m512i w0, w1;
          codec::DecodeE4m3x64Bf16Pairs(codes[i] + line, w0, w1);
#pragma GCC unroll 4
          for (int b = 0; b < kBatch; ++b) {
            const __m512bh a0 = (__m512bh)_mm512_loadu_si512(pairs[b] + line);
            const __m512bh a1 = (__m512bh)_mm512_loadu_si512(pairs[b] + line + 32);
            dots[b][i] = _mm512_dpbf16_ps(_mm512_dpbf16_ps(dots[b][i], (__m512bh)w0, a0), (__m512bh)w1, a1);
          }
        }
      }
      for (int b = 0; b < kBatch; ++b) {
        for (int i = 0; i < kRows; ++i) acc[b][pass + i][0] = VF{dots[b][i]};
      }
    }
    for (int b = 0; b < kBatch; ++b) hn::StoreU(ReduceTile(df, acc[b]), df, sums + kLanes * (b * groups + g));
    const std::uint8_t nan_skipped = !SawNoNan(seen);
    for (int b = 0; b < kBatch; ++b) redo[b * groups + g] = nan_skipped;
  }
}

// a[0, k) (k a multiple of 32) times `factor` into the dot product's pairs: for each 32 values from c, dword i holds
// a[c + i] x factor in its high word (word c + 2i + 1, which the dot product multiplies first) and a[c + 16 + i] x
// factor in its low one, as bf16 (NaN: a quiet NaN). False, with pairs unfinished, where a value times `factor` is no
// bf16, is nonzero below `least` in magnitude or above `greatest`: where the dot product could flush a denormal or
// round where the fma does not.
HWY_INLINE bool Bf16PairsOf(const float* a, std::int64_t k, float factor, float least, float greatest,
                            std::vector<std::uint16_t>& pairs) {
  // 16 pairs at a time (a decode step's small calls spent a tenth of their time here, scalar).
  const __m512 times = _mm512_set1_ps(factor), low = _mm512_set1_ps(least), high = _mm512_set1_ps(greatest);
  const auto word_of = [&](const float* at, __m512i& bits) {  // false: not a normal bf16 in range, 0 or NaN
    const __m512 v = _mm512_mul_ps(_mm512_loadu_ps(at), times);
    const __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    const __m512 magnitude = _mm512_abs_ps(v);
    const __mmask16 tiny =
        _mm512_cmp_ps_mask(magnitude, low, _CMP_LT_OQ) & _mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_NEQ_OQ);
    const __mmask16 huge = _mm512_cmp_ps_mask(magnitude, high, _CMP_GT_OQ);
    const __mmask16 not_bf16 = _mm512_test_epi32_mask(_mm512_castps_si512(v), _mm512_set1_epi32(0xFFFF));
    bits = _mm512_mask_mov_epi32(_mm512_castps_si512(v), nan, _mm512_set1_epi32(0x7FC00000));
    return ((tiny | huge | not_bf16) & static_cast<__mmask16>(~nan)) == 0;
  };
  pairs.resize(static_cast<std::size_t>(k));
  for (std::int64_t c = 0; c < k; c += 32) {
    __m512i first, second;
    if (!word_of(a + c, first) || !word_of(a + c + 16, second)) return false;
    const __m512i dwords = _mm512_or_si512(_mm512_and_si512(first, _mm512_set1_epi32(static_cast<int>(0xFFFF0000u))),
                                           _mm512_srli_epi32(second, 16));
    _mm512_storeu_si512(pairs.data() + c, dwords);
  }
  return true;
}

// The activation row as BlockSumsDotBf16 reads it (Bf16PairsOf): a / 2; for BlockSumsDotBf16Codes (mxfp8, whose scales
// go into the weights) a itself. False where that path does not run: no such CPU, not allowed, other weights, groups
// not whole lines, or an activation that is no e4m3 value (never from act_quant).
HWY_INLINE bool DotBf16Pairs(const Problem& p, const float* a, std::vector<std::uint16_t>& pairs) {
  const bool codes = E4m3ScaleCodes(p);
  if (p.kind != WeightKind::e4m3 || !(p.e4m3_per_group || codes) || p.group % 64 != 0 || p.k % p.group != 0 ||
      !gemv_e4m3_bf16_dot_chosen() || !CpuDotBf16RoundsTwice()) {
    return false;
  }
  return Bf16PairsOf(a, p.k, codes ? 1.0f : 0.5f, codes ? 0x1p-9f : 0x1p-10f, HUGE_VALF, pairs);
}
#endif  // MF_GEMV_E4M3_TABLES

#if MF_GEMV_E4M3_LANES_BLOCKS
// AVX2: 16 e4m3 codes -> their two vectors of weights. kFields: the fields moved into f32 place, value x 2^-120
// (codec::DecodeE4m3Placed: an f32 subnormal for a subnormal code): per 8 codes a sign-extending load, a shift and an
// and, which Zen 3 runs in 1.4 cycles with the fma where the fp16 route (codec::DecodeE4m3Halves, value x 2^-8) takes
// 2 (docs/benchmark-history.md#the-avx2-fp8-gemv-block-by-block-and-its-two-decodes-2026-12-03-1555-1640). NaN codes
// come out finite either way.
template <bool kFields>
HWY_INLINE void DecodeE4m3Pair(const std::uint8_t* codes, VF& w0, VF& w1) {
  const DF df;
  if constexpr (kFields) {
    const DI di;
    const hn::Rebind<std::int8_t, DF> d8;
    const auto* c = reinterpret_cast<const std::int8_t*>(codes);
    w0 = hn::BitCast(df, codec::DecodeE4m3Placed(di, hn::PromoteTo(di, hn::LoadU(d8, c))));
    w1 = hn::BitCast(df, codec::DecodeE4m3Placed(di, hn::PromoteTo(di, hn::LoadU(d8, c + 8))));
  } else {
    codec::DecodeE4m3Halves(df, codes, w0, w1);
  }
}

// The sums of every group of a 16-row block (GemvBlock) on AVX2, for e4m3 weights with per-group factors whose groups
// are whole lines of 64 codes, for kBatch activation rows at once (a[b]): kGemvPassRows8 weight rows at a time (their
// 8 accumulators stay in registers), each decoded vector meeting every activation row, one fma per weight and row in
// the definition's order, and the tree (ReduceAvx2) once per group and row. Each row's line is asked into L2 and looked
// through for NaN codes in the pass that multiplies it (running unsigned and signed byte maxima, which reach 0xFF or
// 0x7F only where a NaN code was seen: two operations per 32 codes), where GroupProducts' separate loops over the
// group for both took a third of the time with the weights in L2 on Zen 3. `a` is the activation row times 2^119
// (kFields) or 2^7 (fp16), so that every product is a x value / 2 as in GroupSums, bit for bit. Lines wholly past
// `live` (zero activations) are only looked through. redo[g] = 1 where group g holds a NaN code (the caller redoes it
// with the checked loop). sums[16 (b x groups + g) + bitrev4(i)]: group g of weight row i for activation row b;
// redo[b x groups + g]. group % 64 == 0, k % group == 0.
// kCodes (mxfp8's codes read in place, E4m3ScaleCodes; fp16, not kFields): each 16 weights' fp16 decode times their
// 32-value block's factor (E4m3HalfFactor: value x scale, Problem::weight's, exactly), and `a` the activation row as it
// is: the definition's fmas themselves; a NaN scale code in a line past `live` redoes its group too.
template <bool kFields, int kBatch, bool kCodes = false>
HWY_NOINLINE void BlockSumsLanes(const WeightRow (&rows)[kLanes], const float* const* HWY_RESTRICT a, std::int64_t k,
                                 std::int64_t group, std::int64_t live, float* HWY_RESTRICT sums,
                                 std::uint8_t* HWY_RESTRICT redo) {
  const DF df;
  const hn::Full256<std::uint8_t> du8;
  const hn::Full256<std::int8_t> di8;
  constexpr int kRows = kGemvPassRows8<kBatch>;
  const std::int64_t groups = k / group;
  for (std::int64_t k0 = 0, g = 0; k0 < k; k0 += group, ++g) {
    auto seen_u = hn::Zero(du8);
    auto seen_s = hn::Set(di8, std::int8_t{-128});
    bool nan_scale = false;  // kCodes: a NaN scale in a line only looked through (0 x NaN is NaN)
    VF acc[kBatch][kLanes][kV];
    for (int pass = 0; pass < kLanes; pass += kRows) {
      const std::uint8_t* codes[kRows];
      for (int j = 0; j < kRows; ++j) codes[j] = rows[pass + j].codes;
      VF s[kRows][kBatch][2];
      for (auto& r : s) {
        for (auto& v : r) v[0] = v[1] = hn::Zero(df);
      }
      for (std::int64_t line = k0; line < k0 + group; line += 64) {
#pragma GCC unroll 4
        for (int j = 0; j < kRows; ++j) {
          const std::uint8_t* at = codes[j] + line;
          if (line < live) PrefetchRowAhead(codes[j], line, kPrefetchAhead8, rows[pass + j].bytes);
          seen_u = hn::Max(seen_u, hn::Max(hn::LoadU(du8, at), hn::LoadU(du8, at + 32)));
          const auto* signed_at = reinterpret_cast<const std::int8_t*>(at);
          seen_s = hn::Max(seen_s, hn::Max(hn::LoadU(di8, signed_at), hn::LoadU(di8, signed_at + 32)));
        }
        if (line >= live) {
          if constexpr (kCodes) {
            for (int j = 0; j < kRows; ++j) {
              const std::uint8_t* scale_codes = rows[pass + j].scale_codes + (line >> 5);
              nan_scale |= scale_codes[0] == 0xFF || scale_codes[1] == 0xFF;
            }
          }
          continue;
        }
#pragma GCC unroll 4
        for (std::int64_t step = 0; step < 64; step += kLanes) {
          if constexpr (kBatch == 1) {  // the activations loaded once per step for the four rows
            const VF a0 = hn::LoadU(df, a[0] + line + step), a1 = hn::LoadU(df, a[0] + line + step + 8);
#pragma GCC unroll 4
            for (int j = 0; j < kRows; ++j) {
              VF w0, w1;
              DecodeE4m3Pair<kFields>(codes[j] + line + step, w0, w1);
              if constexpr (kCodes) {
                const VF factor = hn::Set(df, E4m3HalfFactor(rows[pass + j], (line + step) >> 5));
                w0 = hn::Mul(w0, factor), w1 = hn::Mul(w1, factor);
              }
              s[j][0][0] = hn::MulAdd(a0, w0, s[j][0][0]);
              s[j][0][1] = hn::MulAdd(a1, w1, s[j][0][1]);
            }
          } else {
#pragma GCC unroll 4
            for (int j = 0; j < kRows; ++j) {
              VF w0, w1;
              DecodeE4m3Pair<kFields>(codes[j] + line + step, w0, w1);
              if constexpr (kCodes) {
                const VF factor = hn::Set(df, E4m3HalfFactor(rows[pass + j], (line + step) >> 5));
                w0 = hn::Mul(w0, factor), w1 = hn::Mul(w1, factor);
              }
#pragma GCC unroll 4
              for (int b = 0; b < kBatch; ++b) {
                s[j][b][0] = hn::MulAdd(hn::LoadU(df, a[b] + line + step), w0, s[j][b][0]);
                s[j][b][1] = hn::MulAdd(hn::LoadU(df, a[b] + line + step + 8), w1, s[j][b][1]);
              }
            }
          }
        }
      }
      for (int j = 0; j < kRows; ++j) {
        for (int b = 0; b < kBatch; ++b) acc[b][pass + j][0] = s[j][b][0], acc[b][pass + j][1] = s[j][b][1];
      }
    }
    for (int b = 0; b < kBatch; ++b) ReduceAvx2(acc[b], sums + kLanes * (b * groups + g));
    const std::uint8_t nan_seen = nan_scale || !hn::AllFalse(du8, hn::Eq(seen_u, hn::Set(du8, std::uint8_t{0xFF}))) ||
                                  !hn::AllFalse(di8, hn::Eq(seen_s, hn::Set(di8, std::int8_t{0x7F})));
    for (int b = 0; b < kBatch; ++b) redo[b * groups + g] = nan_seen;
  }
}
#endif  // MF_GEMV_E4M3_LANES_BLOCKS

// e4m3 with per-group factors: each row's factor (2^120 x scale) times 2^-119 on its group sum in red.
HWY_INLINE void ApplyRowFactors(const WeightRow (&rows)[kLanes], std::int64_t column, float* HWY_RESTRICT red) {
  const DF df;
  if (rows[0].scales == rows[kLanes - 1].scales) {  // one scale block row (fp8-128x128): one factor, one multiply
    const float f = rows[0].scales[column] * 0x1p-119f;
    for (std::size_t i = 0; i < kLanes; i += kL) hn::Store(hn::Mul(hn::Load(df, red + i), hn::Set(df, f)), df, red + i);
  } else {
    for (int i = 0; i < kLanes; ++i) red[bitrev4(i)] *= rows[i].scales[column] * 0x1p-119f;
  }
}

// Which decode the e4m3 GEMV runs on this target and CPU (gemm_dispatch.h).
HWY_INLINE const char* GemvE4m3Decode() {
#if MF_GEMV_E4M3_TABLES
  return "tables";
#endif
  return MF_GEMV_E4M3_OPTIMISTIC ? "avx512" : "lanes";
}

// e4m3 whose groups are whole 64-code lines (every 128x128, 1x128 and ue8m0 32x32 scheme): on AVX3_DL every group
// of a block is summed at once (BlockSumsInputs).
HWY_INLINE bool E4m3WholeLines(const Problem& p) {
  return p.kind == WeightKind::e4m3 && p.group % 64 == 0 && p.k % p.group == 0 && (p.e4m3_per_group || p.bc >= 32);
}

// The e4m3 weights whose block sums BlockSumsOfRows makes: in whole lines on AVX3_DL, and with per-group factors or
// mxfp8's codes too on AVX2 (BlockSumsLanes).
HWY_INLINE bool E4m3Batched(const Problem& p) {
  return E4m3WholeLines(p) &&
         (MF_GEMV_E4M3_TABLES || (MF_GEMV_E4M3_LANES_BLOCKS && (p.e4m3_per_group || E4m3ScaleCodes(p))));
}

}  // namespace HWY_NAMESPACE
}  // namespace mf::gemm
HWY_AFTER_NAMESPACE();

#endif  // include guard
