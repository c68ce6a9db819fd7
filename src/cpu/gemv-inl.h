// Per-target SIMD code for one activation row (M = 1, a decode step): the weights go straight from their codes
// into the fma, with no panel in between, so each weight byte is read once and touched by a handful of
// instructions. The arithmetic is that of gemm-inl.h's 1 x 16 register tile (and so of the definition): the same
// exact decoded weights, the same lane-strided partial sums, tree and group order.
//
// Included once per Highway target by gemm.cc, after gemm-inl.h; hence the toggle include guard.
#if defined(MINIFLOAT_SRC_CPU_GEMV_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef MINIFLOAT_SRC_CPU_GEMV_INL_H_
#undef MINIFLOAT_SRC_CPU_GEMV_INL_H_
#else
#define MINIFLOAT_SRC_CPU_GEMV_INL_H_
#endif

#include <algorithm>
#include <bit>
#include <cstdint>
#include <limits>
#include <vector>

#include "../ref/gemm_problem.h"
#include "column_queue.h"
#include "hwy/aligned_allocator.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace mf::gemm {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#undef MF_GEMV_GFNI
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3_DL  // AVX3_DL or newer: AVX512-VBMI's byte permute (and GFNI, below)
#define MF_GEMV_GFNI 1
#else
#define MF_GEMV_GFNI 0
#endif

// One weight row as the GEMV reads it: its codes (or bf16 bits) and its scales.
struct WeightRow {
  const std::uint8_t* codes;
  const std::uint16_t* bf16;
  const float* scales;  // e4m3: the row's factors (Problem::e4m3_factor)
  // e2m1: the row's ue8m0 codes (Problem::weight_scale_codes, read through weight_scale_table)
  const std::uint8_t* scale_codes;
  const float* weight_scale_table;            // e2m1: Problem::weight_scale_table
};

template <WeightKind K>
HWY_INLINE WeightRow RowOf(const Problem& p, std::int64_t row) {
  if constexpr (K == WeightKind::bf16) return {nullptr, p.w_bf16 + row * p.k, nullptr, nullptr, nullptr};
  if constexpr (K == WeightKind::e2m1) {
    return {p.codes + row * p.k / 2, nullptr, nullptr, p.weight_scale_codes + row * p.weight_scale_cols,
            p.weight_scale_table.data()};
  }
  const std::int64_t factors = p.weight_scales_inside ? row / p.br * p.weight_scale_cols : 0;
  return {p.codes + row * p.k, nullptr, p.e4m3_factor.data() + factors, nullptr, nullptr};
}

// kL lanes of w[row, k..] exactly as Problem::weight gives them. e4m3: the code, sign-extended, shifted so that
// its fields sit where f32's do (bits 20-26, sign at 31) is the value times 2^-120 (an f32 subnormal for subnormal
// codes, as exact); one product by 2^120 * scale gives value * scale exactly (it is representable); NaN codes are
// put back after.
// kNanCheck = false leaves NaN codes as finite values: for callers that look for them another way.
template <WeightKind K, bool kPerGroup = false, bool kNanCheck = true>
HWY_INLINE VF LoadWeights(const WeightRow& r, std::int64_t k, int shift) {
  const DF df;
  if constexpr (K == WeightKind::bf16) {
    const hn::Rebind<std::uint16_t, DF> d16;
    return hn::BitCast(df, hn::ShiftLeft<16>(hn::PromoteTo(DU(), hn::LoadU(d16, r.bf16 + k))));
  } else if constexpr (K == WeightKind::e4m3) {
    const DI di;
    const hn::Rebind<std::int8_t, DF> d8;
    const auto c = hn::PromoteTo(di, hn::LoadU(d8, reinterpret_cast<const std::int8_t*>(r.codes + k)));
    const auto bits = hn::And(hn::ShiftLeft<20>(c), hn::Set(di, static_cast<std::int32_t>(0x87F00000u)));
    // kPerGroup: the bits as they are (value x 2^-120); the activations carry 2^119 and the group's sum the rest.
    const VF v = kPerGroup ? hn::BitCast(df, bits) : hn::Mul(hn::BitCast(df, bits), hn::Set(df, r.scales[k >> shift]));
    if constexpr (!kNanCheck) return v;
    const auto nan = hn::RebindMask(df, hn::Eq(hn::And(c, hn::Set(di, 0x7F)), hn::Set(di, 0x7F)));
    return hn::IfThenElse(nan, hn::Set(df, std::numeric_limits<float>::quiet_NaN()), v);
  } else {
    // e2m1 on targets narrower than 16 lanes (16-lane ones decode 32 at a time in GemvBlock): value x scale.
    static_assert(K == WeightKind::e2m1);
#if !MF_GEMM_WIDE && HWY_TARGET != HWY_SCALAR
    return hn::Mul(DecodeE2m1Lanes(df, r.codes + k / 2), hn::Set(df, r.weight_scale_table[r.scale_codes[k >> shift]]));
#else
    (void)r, (void)k, (void)shift;
    return hn::Zero(df);
#endif
  }
}

// One group's products for the 16 rows: acc[i][v] += a x w over [k0, end), lane-strided.
template <WeightKind K, bool kPerGroup>
HWY_INLINE void GroupProducts(const WeightRow (&rows)[kLanes], const float* HWY_RESTRICT a, std::int64_t k0,
                              std::int64_t end, int shift, VF (&acc)[kLanes][kV]) {
  const DF df;
  for (std::int64_t k = k0; k < end; k += kLanes) {
#pragma GCC unroll 16
    for (std::size_t v = 0; v < kV; ++v) {
      const std::int64_t at = k + static_cast<std::int64_t>(v * kL);
      const VF av = hn::LoadU(df, a + at);
#pragma GCC unroll 16
      for (int i = 0; i < kLanes; ++i) {
        acc[i][v] = hn::MulAdd(av, LoadWeights<K, kPerGroup>(rows[i], at, shift), acc[i][v]);
      }
    }
  }
}

#if MF_GEMM_WIDE
using D8 = hn::Repartition<std::uint8_t, DF>;  // a vector of weight codes

// Folds `count` codes of a line, up to 64 (bytes past them load as 0, which is not a NaN code), into `seen`, the running
// minimum of ~code & 0x7F: 0 once a NaN code (0x7F, 0xFF) was seen.
HWY_INLINE void SeeCodes(const std::uint8_t* line, std::int64_t count, hn::Vec<D8>& seen) {
  const D8 d8;
  const auto in = hn::FirstN(d8, static_cast<std::size_t>(std::min<std::int64_t>(count, 64)));
  seen = hn::Min(seen, hn::AndNot(hn::MaskedLoad(in, d8, line), hn::Set(d8, std::uint8_t{0x7F})));
}
HWY_INLINE bool SawNoNan(hn::Vec<D8> seen) { return hn::AllFalse(D8(), hn::Eq(seen, hn::Zero(D8()))); }

// GroupProducts<e4m3, kPerGroup> for 16-lane targets that decodes without the per-vector NaN check and looks for
// NaN codes (0x7F, 0xFF) on the side: two operations per 64 codes (a running byte minimum of ~code & 0x7F, which is
// 0 only for a NaN code), where the check takes three per 16. Returns false if the group holds a NaN code: its sums
// are then wrong and the caller redoes the group with the checked loop, so the bits are the same either way. NaN
// codes are rare in real weights (docs/benchmark-history.md measures the gain).
template <bool kPerGroup>
HWY_INLINE bool GroupProductsOptimistic(const WeightRow (&rows)[kLanes], const float* HWY_RESTRICT a,
                                        std::int64_t k0, std::int64_t end, int shift, VF (&acc)[kLanes][kV]) {
  const DF df;
  auto seen = hn::Set(D8(), std::uint8_t{0x7F});
  for (std::int64_t line = k0; line < end; line += 64) {
    const std::int64_t stop = std::min(end, line + 64);
#pragma GCC unroll 16
    for (int i = 0; i < kLanes; ++i) SeeCodes(rows[i].codes + line, stop - line, seen);
    for (std::int64_t k = line; k < stop; k += kLanes) {
      const VF av = hn::LoadU(df, a + k);
#pragma GCC unroll 16
      for (int i = 0; i < kLanes; ++i) {
        acc[i][0] = hn::MulAdd(av, LoadWeights<WeightKind::e4m3, kPerGroup, false>(rows[i], k, shift), acc[i][0]);
      }
    }
  }
  return SawNoNan(seen);
}

#if MF_GEMV_GFNI
// GroupProductsOptimistic with a decode of 32 codes in three operations instead of six, on Highway's AVX3_DL target
// and newer (Ice Lake and Zen 4 on). The f32 bits that LoadWeights
// makes of a code c are two bytes: byte 3 holds c's sign and exponent bits 6..4 (in bits 7 and 2..0), byte 2 c's bits
// 3..0 (in bits 7..4), bytes 1 and 0 are zero. One affine transform over GF(2) (a bit matrix per 8 bytes) turns 32
// codes, loaded into both halves of a vector, into their byte 3 (low half) and byte 2 (high half); one byte permute
// per 16 codes then puts each code's two bytes in place and zeroes the rest. The same bits in the same fmas, so the
// same sums. Rows go 8 at a time, so that their pointers stay in registers. (end - k0) % 32 == 0.
// The byte permutes' indices: lane L of the first 16 codes takes byte 3 from transformed byte L and byte 2 from
// byte 32 + L; of the second 16, from 16 + L and 48 + L. Built once, at compile time.
struct GfniIndex {
  alignas(64) std::uint8_t bytes[2][64] = {};
  constexpr GfniIndex() {
    for (int h = 0; h < 2; ++h) {
      for (int lane = 0; lane < 16; ++lane) {
        bytes[h][4 * lane + 2] = static_cast<std::uint8_t>(32 + 16 * h + lane);
        bytes[h][4 * lane + 3] = static_cast<std::uint8_t>(16 * h + lane);
      }
    }
  }
};
inline constexpr GfniIndex kGfniIndex{};

// Highway 1.0.3's AVX3_DL neither names GFNI in its target string nor checks for it at run time (later versions do
// both). Every CPU with AVX3_DL's extensions has GFNI (Ice Lake, Tiger Lake, Sapphire Rapids, Zen 4), but one without
// it would fault on vgf2p8affineqb: checked once, so such a CPU takes GroupProductsOptimistic.
HWY_INLINE bool CpuHasGfni() {
  static const bool has = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("gfni") && __builtin_cpu_supports("avx512vbmi");
  }();
  return has;
}

// The f32 bits of 32 e4m3 codes as LoadWeights makes them (value x 2^-120): w0 codes 0-15, w1 16-31.
// Raw intrinsics: Highway 1.0.3 has no GF(2) affine transform, no cross-block byte permute (its TableLookupBytes
// stays within 128-bit blocks) and no load that broadcasts 32 bytes to both halves. The target attribute adds GFNI
// to AVX3_DL's (CpuHasGfni says why).
HWY_INLINE __attribute__((target(HWY_TARGET_STR ",gfni"))) void DecodeE4m3x32Gfni(const std::uint8_t* codes,
                                                                                    VF& w0, VF& w1) {
  // Matrix row 7 - i selects the code bits that make result bit i: byte 3 takes bits 7, 6, 5, 4 into bits 7, 2, 1,
  // 0 (low half), byte 2 takes bits 3..0 into 7..4 (high half).
  const __m512i matrix = _mm512_set_epi64(0x0000000001020408, 0x0000000001020408, 0x0000000001020408,
                                          0x0000000001020408, 0x1020400000000080, 0x1020400000000080,
                                          0x1020400000000080, 0x1020400000000080);
  const __mmask64 high_bytes = 0xCCCCCCCCCCCCCCCCull;  // bytes 2 and 3 of every lane
  const __m256i c = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(codes));
  const __m512i t = _mm512_gf2p8affine_epi64_epi8(_mm512_broadcast_i64x4(c), matrix, 0);
  w0 = hn::BitCast(DF(), hn::Vec<DU>{_mm512_maskz_permutexvar_epi8(high_bytes, hn::Load(D8(), kGfniIndex.bytes[0]).raw, t)});
  w1 = hn::BitCast(DF(), hn::Vec<DU>{_mm512_maskz_permutexvar_epi8(high_bytes, hn::Load(D8(), kGfniIndex.bytes[1]).raw, t)});
}

template <bool kPerGroup>
HWY_NOINLINE __attribute__((target(HWY_TARGET_STR ",gfni"))) bool GroupProductsGfni(
    const WeightRow (&rows)[kLanes], const float* HWY_RESTRICT a, std::int64_t k0, std::int64_t end, int shift,
    VF (&acc)[kLanes][kV]) {
  const DF df;
  auto seen = hn::Set(D8(), std::uint8_t{0x7F});
  const auto weights = [&](VF w, std::int64_t k, int i) {
    if constexpr (kPerGroup) return w;
    return hn::Mul(w, hn::Set(df, rows[i].scales[k >> shift]));
  };
  for (int half = 0; half < kLanes; half += 8) {
    const std::uint8_t* codes[8];
    for (int i = 0; i < 8; ++i) codes[i] = rows[half + i].codes;
    VF sums[8];
    for (int i = 0; i < 8; ++i) sums[i] = acc[half + i][0];
    for (std::int64_t line = k0; line < end; line += 64) {
      const std::int64_t stop = std::min(end, line + 64);
#pragma GCC unroll 8
      for (int i = 0; i < 8; ++i) {
        SeeCodes(codes[i] + line, stop - line, seen);
        // The row 512 bytes on, into L2: the 16 row streams of a block are slow (128 bytes per group) and short (K
        // bytes), which the hardware prefetchers follow late when the weights come from memory
        // (docs/benchmark-history.md). An address past the weights is never read, and its prefetch does not fault.
        // Raw: hwy::Prefetch asks for L1 only.
        _mm_prefetch(reinterpret_cast<const char*>(reinterpret_cast<std::uintptr_t>(codes[i]) + line + 512),
                     _MM_HINT_T1);
      }
      for (std::int64_t k = line; k < stop; k += 32) {
        const VF a0 = hn::LoadU(df, a + k), a1 = hn::LoadU(df, a + k + 16);
#pragma GCC unroll 8
        for (int i = 0; i < 8; ++i) {
          VF w0, w1;
          DecodeE4m3x32Gfni(codes[i] + k, w0, w1);
          sums[i] = hn::MulAdd(a1, weights(w1, k + 16, half + i), hn::MulAdd(a0, weights(w0, k, half + i), sums[i]));
        }
      }
    }
    for (int i = 0; i < 8; ++i) acc[half + i][0] = sums[i];
  }
  return SawNoNan(seen);
}
#endif  // MF_GEMV_GFNI
#endif  // MF_GEMM_WIDE

// C[0, n0 .. n0 + 16) into c (lane order of the 1 x 16 tile: column n0 + i in lane bitrev4(i); e2m1 on 16-lane
// targets: in lane StridedTreeLane(i)).
// kPerGroup (e4m3, Problem::e4m3_per_group): `a` is the activation row times 2^119 and each row's factor
// (2^120 x scale) is applied to its group sum, times 2^-119, instead of to every weight: one multiply less per 16
// weights. Every product a 2^119 x value 2^-120 is the definition's product a x value x scale times 2^-1 / scale, a
// power of two, and stays normal (|a|, |value| in [2^-9, 448], scale in [2^-100, 2^7]); so does every partial and
// tree sum (multiples of 2^-19, below 2^24), and scaling by a power of two commutes with each of their roundings: the
// group sum times 2 x scale is the definition's group sum, bit for bit.
// e2m1: `a` is the activation row in the strided lane order (DecodeE2m1x32Strided) and e2m1_tables holds, per
// scale code, the 16 e2m1 values times its scale.
template <WeightKind K, bool kPerGroup = false>
void GemvBlock(const Problem& p, const float* HWY_RESTRICT a, std::int64_t n0, float* HWY_RESTRICT c,
               const float* HWY_RESTRICT e2m1_tables = nullptr) {
  (void)e2m1_tables;  // read only where e2m1 rows are decoded (16-lane targets)
  const DF df;
  // k >> shift is the scale column (GemvFits: a power-of-two block width); 62 keeps one factor for f32 scales.
  const int shift =
      K == WeightKind::e4m3 && !p.weight_scales_inside ? 62 : std::countr_zero(static_cast<unsigned>(p.bc));
  WeightRow rows[kLanes];
  for (int i = 0; i < kLanes; ++i) rows[i] = RowOf<K>(p, std::min(n0 + i, p.n - 1));  // rows past N: dropped
  alignas(64) float red[kLanes], s[kLanes];
  const std::int64_t groups = (p.k + p.group - 1) / p.group;
#if MF_GEMV_GFNI
  const bool gfni = K == WeightKind::e4m3 && CpuHasGfni();
#endif
  for (std::int64_t g = 0; g < groups; ++g) {
    VF acc[kLanes][kV];
    for (auto& o : acc) {
      for (auto& v : o) v = hn::Zero(df);
    }
    const std::int64_t end = std::min(p.k, (g + 1) * p.group);
#if MF_GEMM_WIDE
    if constexpr (K == WeightKind::e2m1) {
      // One 1x32 block per step: two 8-byte loads and the block's scaled table per row, in the strided lane order
      // (`a` is permuted to match), so that accumulator lane 2q sums k = q mod 16 and lane 2q + 1 k = 8 + q mod 16,
      // each in increasing k: the definition's sequences, summed by the tree in that order.
      for (std::int64_t k = g * p.group; k < end; k += 32) {
        const VF a0 = hn::LoadU(df, a + k), a1 = hn::LoadU(df, a + k + kLanes);
#pragma GCC unroll 16
        for (int i = 0; i < kLanes; ++i) {
          VF w0, w1;
          DecodeE2m1x32Strided(rows[i].codes + k / 2, e2m1_tables + 16 * rows[i].scale_codes[k >> shift], w0, w1);
          acc[i][0] = hn::MulAdd(a1, w1, hn::MulAdd(a0, w0, acc[i][0]));
        }
      }
      hn::StoreU(ReduceTileStrided(df, acc), df, red);
    } else  // NOLINT(readability/braces)
#endif
    {
      bool done = false;
#if MF_GEMM_WIDE
      if constexpr (K == WeightKind::e4m3) {
#if MF_GEMV_GFNI
        if (gfni && (end - g * p.group) % 32 == 0) {  // always, for weights with 32- or 128-wide blocks
          done = GroupProductsGfni<kPerGroup>(rows, a, g * p.group, end, shift, acc);
        } else  // NOLINT(readability/braces)
#endif
        {
          done = GroupProductsOptimistic<kPerGroup>(rows, a, g * p.group, end, shift, acc);
        }
      }
#endif
      if (!done) {
        for (auto& o : acc) {  // again, after an optimistic pass that met a NaN code
          for (auto& v : o) v = hn::Zero(df);
        }
        GroupProducts<K, kPerGroup>(rows, a, g * p.group, end, shift, acc);
      }
      Reduce(df, acc, red);
    }
    if constexpr (kPerGroup) {
      const std::int64_t column = (g * p.group) >> shift;
      if (rows[0].scales == rows[kLanes - 1].scales) {  // one scale block row (fp8-128x128): one factor, one multiply
        const float f = rows[0].scales[column] * 0x1p-119f;
        for (std::size_t i = 0; i < kLanes; i += kL) {
          hn::Store(hn::Mul(hn::Load(df, red + i), hn::Set(df, f)), df, red + i);
        }
      } else {
        for (int i = 0; i < kLanes; ++i) red[bitrev4(i)] *= rows[i].scales[column] * 0x1p-119f;
      }
    }
    // One factor for the whole row: act_scales[0, group] (or 1).
    if (p.weight_scales.empty() || p.weight_scales_inside) {
      std::fill(s, s + kLanes, p.group_scale(0, n0, g));
    } else {
      FillScales<1, kLanes>(p, 0, n0, g, s);
    }
    ScaleAdd(c, s, red);
  }
}

// Which decode the e4m3 GEMV runs on this target and CPU (gemm_dispatch.h).
HWY_INLINE const char* GemvE4m3Decode() {
#if MF_GEMV_GFNI
  if (CpuHasGfni()) return "gfni";
#endif
  return MF_GEMM_WIDE ? "avx512" : "lanes";
}

// Whether GemvBlock<kind> runs on this target for p: e2m1 needs its scale codes, bf16 whole vectors along K.
HWY_INLINE bool GemvFits(const Problem& p) {
  switch (p.kind) {
    case WeightKind::e4m3: return !p.e4m3_factor.empty() && std::has_single_bit(static_cast<unsigned>(p.bc));
    case WeightKind::e2m1: return HWY_TARGET != HWY_SCALAR && p.weight_scale_codes != nullptr;
    case WeightKind::bf16: return p.k % kLanes == 0;
    case WeightKind::f32: return false;
  }
  return false;
}

// One activation row: blocks of 16 columns, taken from the queue until it is empty.
HWY_INLINE void GemvColumns(const Problem& p, const float* a, ColumnQueue& queue) {
  const bool wide_e2m1 = MF_GEMM_WIDE && p.kind == WeightKind::e2m1;  // GemvBlock's lane order
  alignas(64) float c[kLanes];
  float row[kLanes];
  std::vector<float> scaled;  // a x 2^119 (exact: |a| <= 448), for the e4m3 GEMV's per-group factors
  if (p.kind == WeightKind::e4m3 && p.e4m3_per_group) {
    scaled.resize(static_cast<std::size_t>(p.k));
    for (std::int64_t k = 0; k < p.k; ++k) scaled[static_cast<std::size_t>(k)] = a[k] * 0x1p119f;
  }
#if MF_GEMM_WIDE
  // e2m1: the activations in the strided lane order, and each scale code's table (256 x 16 values, 16 KiB: L1).
  hwy::AlignedFreeUniquePtr<float[]> strided, tables;
  if (p.kind == WeightKind::e2m1) {
    strided = hwy::AllocateAligned<float>(static_cast<std::size_t>(p.k));
    tables = hwy::AllocateAligned<float>(256 * 16);
    for (std::int64_t k = 0; k < p.k; k += kLanes) {
      for (int q = 0; q < 8; ++q) {
        strided[static_cast<std::size_t>(k + 2 * q)] = a[k + q];
        strided[static_cast<std::size_t>(k + 2 * q + 1)] = a[k + 8 + q];
      }
    }
    for (std::size_t code = 0; code < 256; ++code) {
      for (std::size_t j = 0; j < 16; ++j) tables[code * 16 + j] = kE2m1Values[j] * p.weight_scale_table[code];
    }
  }
#endif
  std::int64_t begin, end;
  while (queue.next(begin, end)) {
    for (std::int64_t col0 = begin * kLanes; col0 < end * kLanes; col0 += kLanes) {
      std::fill(c, c + kLanes, 0.0f);
      if (p.kind == WeightKind::e4m3) {
        if (p.e4m3_per_group) GemvBlock<WeightKind::e4m3, true>(p, scaled.data(), col0, c);
        else GemvBlock<WeightKind::e4m3>(p, a, col0, c);
      }
#if MF_GEMM_WIDE
      if (p.kind == WeightKind::e2m1) GemvBlock<WeightKind::e2m1>(p, strided.get(), col0, c, tables.get());
#elif HWY_TARGET != HWY_SCALAR
      if (p.kind == WeightKind::e2m1) GemvBlock<WeightKind::e2m1>(p, a, col0, c);
#endif
      if (p.kind == WeightKind::bf16) GemvBlock<WeightKind::bf16>(p, a, col0, c);
      for (int i = 0; i < kLanes; ++i) row[i] = c[wide_e2m1 ? StridedTreeLane(i) : bitrev4(i)];
      finish(p, 0, col0, std::min<std::int64_t>(kLanes, p.n - col0), row);
    }
    queue.finished(begin, end);
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace mf::gemm
HWY_AFTER_NAMESPACE();

#endif  // include guard
