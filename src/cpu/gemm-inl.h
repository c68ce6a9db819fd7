// Per-target SIMD code for the GEMMs. It performs exactly the f32 operations of mf::gemm::reference
// (src/ref/gemm_ref.cc), grouped for SIMD:
//   * weights are decoded (exactly, as Problem::weight does) into a 16-row f32 panel that stays in L1;
//   * a register tile of MR activation rows x NR weight rows (MR * NR = 16 outputs) keeps, per output, the 16
//     lane-strided partial sums of the definition as one 16-lane accumulator (V = 16 / lanes vectors on narrower
//     targets): lane i sees k = i mod 16 in increasing k, as the definition's p[i] does;
//   * at the end of each group the 16 accumulators are reduced in the definition's tree. On 16-lane targets this is
//     one batched transpose-and-add whose lane l ends up holding output bitrev4(l); narrower targets store the
//     partial sums and add them in scalar, writing the same lanes. The running C keeps that lane order.
// Products are exact for e4m3 and e2m1 weights, so MulAdd (an fma or not) gives the definition's fma; bf16 and f32
// weights take this code only on targets with a native fma (gemm.cc checks).
//
// Included once per Highway target by gemm.cc through foreach_target.h; hence the toggle include guard.
#if defined(MINIFLOAT_SRC_CPU_GEMM_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef MINIFLOAT_SRC_CPU_GEMM_INL_H_
#undef MINIFLOAT_SRC_CPU_GEMM_INL_H_
#else
#define MINIFLOAT_SRC_CPU_GEMM_INL_H_
#endif

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "../ref/gemm_problem.h"
#include "element_codec-inl.h"
#include "hwy/highway.h"
#include "minifloat/codec.h"

HWY_BEFORE_NAMESPACE();
namespace mf::gemm {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
namespace codec = mf::cpu::HWY_NAMESPACE;  // the element codec and its per-format decodes (element_codec-inl.h)

using DF = hn::CappedTag<float, kLanes>;
using VF = hn::Vec<DF>;
using DU = hn::RebindToUnsigned<DF>;
using DI = hn::RebindToSigned<DF>;
constexpr std::size_t kL = hn::MaxLanes(DF());
constexpr std::size_t kV = kLanes / kL;  // vectors per 16 partial sums
#undef MF_GEMM_WIDE
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3  // AVX-512 or newer (a lower value is a newer target)
#define MF_GEMM_WIDE 1                      // 16 f32 lanes: batched reduction and table decoding of e2m1
#else
#define MF_GEMM_WIDE 0
#endif

constexpr int bitrev4(int x) { return ((x & 1) << 3) | ((x & 2) << 1) | ((x & 4) >> 1) | ((x & 8) >> 3); }
// Where ReduceTileStrided leaves output o: bits 1 and 3 swapped.
constexpr int StridedTreeLane(int o) { return (o & 5) | ((o & 2) << 2) | ((o & 8) >> 2); }

// ---- weight decoding: dst[0, len) = w[row, k0 + i], 0 past K or N; len a multiple of 16 ----

HWY_INLINE void DecodeE4m3Row(const Problem& p, std::int64_t row, std::int64_t k0, std::int64_t len, float* dst) {
  const DF df;
  const DU du;
  const hn::Rebind<std::uint8_t, DF> d8;
  const std::uint8_t* codes = p.codes + row * p.k;
  const float* scales = p.weight_scales_inside ? p.weight_scales.data() + row / p.br * p.weight_scale_cols : nullptr;
  // A scale block is a whole number of vectors (its width is a multiple of 16); one scale per block.
  for (std::int64_t i = 0; i < len;) {
    const std::int64_t end = std::min(len, ((k0 + i) / p.bc + 1) * p.bc - k0);
    const VF scale = hn::Set(df, scales ? scales[(k0 + i) / p.bc] : 1.0f);
    for (; i < end; i += static_cast<std::int64_t>(kL)) {
      const VF v = codec::DecodeE4m3(df, hn::PromoteTo(du, hn::LoadU(d8, codes + k0 + i)));
      hn::StoreU(scales ? hn::Mul(v, scale) : v, df, dst + i);
    }
  }
}

HWY_INLINE void DecodeE2m1Row(const Problem& p, std::int64_t row, std::int64_t k0, std::int64_t len, float* dst) {
  const std::uint8_t* codes = p.codes + row * (p.k / 2);
  // One scale per 1x32 (mxfp4) or 1x16 (nvfp4) block: each decoded vector of 16 (8 on AVX2) lies in one.
  const float* scales = p.weight_scales.data() + row * p.weight_scale_cols;
#if MF_GEMM_WIDE
  const DF df;
  for (std::int64_t i = 0; i < len; i += 16) {
    const std::int64_t k = k0 + i;
    hn::StoreU(hn::Mul(codec::DecodeE2m1x16(codes + k / 2), hn::Set(df, scales[k / p.bc])), df, dst + i);
  }
#elif HWY_TARGET != HWY_SCALAR
  const DF df;
  for (std::int64_t i = 0; i < len; i += static_cast<std::int64_t>(kL)) {
    const std::int64_t k = k0 + i;
    hn::StoreU(hn::Mul(codec::DecodeE2m1Lanes(df, codes + k / 2), hn::Set(df, scales[k / p.bc])), df, dst + i);
  }
#else
  for (std::int64_t i = 0; i < len; ++i) {
    const std::int64_t k = k0 + i;
    dst[i] = codec::kE2m1Values[(codes[k / 2] >> (4 * (k % 2))) & 0xF] * scales[k / p.bc];
  }
#endif
}

HWY_INLINE void DecodePlainRow(const Problem& p, std::int64_t row, std::int64_t k0, std::int64_t len, float* dst) {
  const DF df;
  const DU du;
  const hn::Rebind<std::uint16_t, DF> d16;
  const std::int64_t whole = std::max<std::int64_t>(0, std::min(len, (p.k - k0) / kLanes * kLanes));
  const std::size_t base = static_cast<std::size_t>(row * p.k + k0);
  for (std::int64_t i = 0; i < whole; i += static_cast<std::int64_t>(kL)) {
    const VF v = p.w_bf16 ? hn::BitCast(df, hn::ShiftLeft<16>(hn::PromoteTo(du, hn::LoadU(d16, p.w_bf16 + base + i))))
                          : hn::LoadU(df, p.w_f32 + base + i);
    hn::StoreU(v, df, dst + i);
  }
  for (std::int64_t i = whole; i < len; ++i) dst[i] = k0 + i < p.k ? p.weight(row, k0 + i) : 0.0f;
}

// Rows past N decode to zeros (their outputs are dropped); so do columns past K (an fma with 0 * 0 leaves a
// partial sum unchanged: it is never -0, since it starts at +0).
HWY_INLINE void DecodePanel(const Problem& p, std::int64_t n0, std::int64_t k0, std::int64_t len, std::int64_t ld,
                            float* panel) {
  for (int r = 0; r < kLanes; ++r) {
    float* dst = panel + r * ld;
    const std::int64_t row = n0 + r;
    if (row >= p.n) {
      std::fill(dst, dst + len, 0.0f);
    } else if (p.kind == WeightKind::e4m3) {
      DecodeE4m3Row(p, row, k0, len, dst);
    } else if (p.kind == WeightKind::e2m1) {
      DecodeE2m1Row(p, row, k0, len, dst);
    } else {
      DecodePlainRow(p, row, k0, len, dst);
    }
  }
}

// ---- the tree over the 16 partial sums of 16 outputs ----

#if MF_GEMM_WIDE
// One level of the batched tree: pairs (x[2j], x[2j+1]) -> y[j] holding the level's sums of both.
HWY_INLINE VF Halves(DF df, VF x, VF y) {  // lanes i and i + 8
  return hn::Add(hn::ConcatLowerLower(df, y, x), hn::ConcatUpperUpper(df, y, x));
}
HWY_INLINE VF Quarters(DF df, VF x, VF y) {  // lanes i and i + 4: 128-bit blocks 0+1 and 2+3
  alignas(64) static constexpr std::int32_t kSwap[16] = {4, 5, 6, 7, 0, 1, 2, 3, 12, 13, 14, 15, 8, 9, 10, 11};
  const VF a = hn::OddEvenBlocks(y, x);                                                        // x.b0 y.b1 x.b2 y.b3
  const VF b = hn::TableLookupLanes(hn::OddEvenBlocks(x, y), hn::SetTableIndices(df, kSwap));  // x.b1 y.b0 ...
  return hn::Add(a, b);
}
HWY_INLINE VF Pairs(DF df, VF x, VF y) {  // lanes i and i + 2 within each block
  const hn::Repartition<std::uint64_t, DF> d64;
  const auto x64 = hn::BitCast(d64, x), y64 = hn::BitCast(d64, y);
  return hn::Add(hn::BitCast(df, hn::InterleaveLower(d64, x64, y64)),
                 hn::BitCast(df, hn::InterleaveUpper(d64, x64, y64)));
}
HWY_INLINE VF Neighbours(VF x, VF y) {  // lanes i and i + 1
  return hn::Add(hn::OddEven(hn::Shuffle2301(y), x), hn::OddEven(y, hn::Shuffle2301(x)));
}

// acc[o][0] -> one vector, output o in lane bitrev4(o).
HWY_INLINE VF ReduceTile(DF df, const VF (&acc)[kLanes][kV]) {
  VF h[8], q[4], r[2];
  for (int j = 0; j < 8; ++j) h[j] = Halves(df, acc[2 * j][0], acc[2 * j + 1][0]);
  for (int j = 0; j < 4; ++j) q[j] = Quarters(df, h[2 * j], h[2 * j + 1]);
  for (int j = 0; j < 2; ++j) r[j] = Pairs(df, q[2 * j], q[2 * j + 1]);
  return Neighbours(r[0], r[1]);
}

// The same tree for accumulators in the e2m1 GEMV's strided lane order (lane 2q: p[q], lane 2q + 1: p[8 + q]):
// there p[i] and p[i + 8] are neighbours, q[i] and q[i + 4] 8 lanes apart, r[i] and r[i + 2] 4 apart, so the levels
// run Neighbours, Halves, Quarters, Pairs. Output o ends in lane StridedTreeLane(o).
HWY_INLINE VF ReduceTileStrided(DF df, const VF (&acc)[kLanes][kV]) {
  VF n[8], h[4], q[2];
  for (int j = 0; j < 8; ++j) n[j] = Neighbours(acc[2 * j][0], acc[2 * j + 1][0]);
  for (int j = 0; j < 4; ++j) h[j] = Halves(df, n[2 * j], n[2 * j + 1]);
  for (int j = 0; j < 2; ++j) q[j] = Quarters(df, h[2 * j], h[2 * j + 1]);
  return Pairs(df, q[0], q[1]);
}
#endif

#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2 && !MF_GEMM_WIDE
// The tree for 16 outputs at once on AVX2 (acc[o][0]: p[0..7], acc[o][1]: p[8..15]), each level on several outputs
// per instruction: q = p[i] + p[i + 8] (one add per output); r[i] = q[i] + q[i + 4] for two outputs per add (their
// 128-bit halves gathered by two permutes); (r[0] + r[2], r[1] + r[3]) for four, then their sum for eight (lanes
// gathered by two shuffles each). The definition's adds (each sum's two operands, and a + b is b + a bit for bit),
// 58 vector operations where a scalar tree per output took 240 adds and the partial sums' round trip through memory.
// The outputs are paired so that vector h lands in red[8h ..] in bitrev4 order: lanes 0-7 hold outputs 0, 8, 4, 12,
// 2, 10, 6, 14 (and one more each for h = 1).
// Raw intrinsics: Highway 1.0.3 has no two-source shuffle of 128-bit halves or of lanes by an immediate.
HWY_INLINE void ReduceAvx2(const VF (&acc)[kLanes][kV], float* HWY_RESTRICT red) {
  __m256 q[kLanes];
  for (int o = 0; o < kLanes; ++o) q[o] = _mm256_add_ps(acc[o][0].raw, acc[o][1].raw);
  const auto halves = [&q](int a, int b) {  // [r of a | r of b]
    return _mm256_add_ps(_mm256_permute2f128_ps(q[a], q[b], 0x20), _mm256_permute2f128_ps(q[a], q[b], 0x31));
  };
  const auto pairs = [](__m256 ab, __m256 cd) {  // [u0 u1 of a, u0 u1 of c | the same of b, d]
    return _mm256_add_ps(_mm256_shuffle_ps(ab, cd, _MM_SHUFFLE(1, 0, 1, 0)),
                         _mm256_shuffle_ps(ab, cd, _MM_SHUFFLE(3, 2, 3, 2)));
  };
  const auto neighbours = [](__m256 abcd, __m256 efgh) {  // [a c e g | b d f h]
    return _mm256_add_ps(_mm256_shuffle_ps(abcd, efgh, _MM_SHUFFLE(2, 0, 2, 0)),
                         _mm256_shuffle_ps(abcd, efgh, _MM_SHUFFLE(3, 1, 3, 1)));
  };
  for (int h = 0; h < 2; ++h) {
    const __m256 low = pairs(halves(h, 2 + h), halves(8 + h, 10 + h));
    const __m256 high = pairs(halves(4 + h, 6 + h), halves(12 + h, 14 + h));
    _mm256_storeu_ps(red + 8 * h, neighbours(low, high));
  }
}
#endif

// Writes the 16 group sums to red[bitrev4(o)].
HWY_INLINE void Reduce(DF df, const VF (&acc)[kLanes][kV], float* HWY_RESTRICT red) {
#if MF_GEMM_WIDE
  hn::StoreU(ReduceTile(df, acc), df, red);
#elif HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2
  (void)df;
  ReduceAvx2(acc, red);
#else
  alignas(64) float partial[kLanes][kLanes];
  for (int o = 0; o < kLanes; ++o) {
    for (std::size_t v = 0; v < kV; ++v) hn::StoreU(acc[o][v], df, &partial[o][v * kL]);
  }
  for (int o = 0; o < kLanes; ++o) red[bitrev4(o)] = tree_sum(partial[o]);
#endif
}

// ---- the register tile ----

// One group of `len` (a multiple of 16) values for MR activation rows (a, stride lda) x NR panel rows (b, stride
// ldb): red[bitrev4(mi * NR + ni)] = the group's sum for (mi, ni).
template <int MR, int NR>
HWY_INLINE void TileGroup(const float* HWY_RESTRICT a, std::size_t lda, const float* HWY_RESTRICT b, std::size_t ldb,
                          std::size_t len, float* HWY_RESTRICT red) {
  static_assert(MR * NR == kLanes);
  const DF df;
  VF acc[kLanes][kV];
  for (auto& o : acc) {
    for (auto& v : o) v = hn::Zero(df);
  }
  for (std::size_t k = 0; k < len; k += kLanes) {
#pragma GCC unroll 16
    for (std::size_t v = 0; v < kV; ++v) {
      const std::size_t at = k + v * kL;
      VF av[MR];
      for (int mi = 0; mi < MR; ++mi) av[mi] = hn::LoadU(df, a + mi * lda + at);
#pragma GCC unroll 16
      for (int ni = 0; ni < NR; ++ni) {
        const VF bv = hn::LoadU(df, b + ni * ldb + at);
        for (int mi = 0; mi < MR; ++mi) acc[mi * NR + ni][v] = hn::MulAdd(av[mi], bv, acc[mi * NR + ni][v]);
      }
    }
  }
  Reduce(df, acc, red);
}

// c[0, 16) = c + s * red, a rounded product then a rounded sum, as the definition.
HWY_INLINE void ScaleAdd(float* HWY_RESTRICT c, const float* HWY_RESTRICT s, const float* HWY_RESTRICT red) {
  const DF df;
  for (std::size_t i = 0; i < kLanes; i += kL) {
    hn::StoreU(hn::Add(hn::LoadU(df, c + i), hn::Mul(hn::LoadU(df, s + i), hn::LoadU(df, red + i))), df, c + i);
  }
}

// ---- the loops: cache blocks of the panel (16 weight rows x kKc) and of activation rows ----

// Panel columns. Large M: 16 rows x 256 f32 = 16 KiB, in L1 beside the activation tiles. Small M: up to 4096, so
// that each weight row is read as one long run (which the hardware prefetcher follows) into a panel in L2.
constexpr std::int64_t kKcLarge = 256, kKcSmall = 4096;
constexpr std::int64_t kMc = 256;  // activation rows per pass when M is large: 256 x 256 f32 = 256 KiB, in L2

struct Pass {
  const Problem* p;
  const float* a;  // [mp][lda] activations, rows and columns padded with zeros
  std::size_t lda;
  std::int64_t n0, nblocks;  // this thread's columns: blocks of 16 from n0
  float* cs;                 // running C per (m tile, n block) of this pass: 16 / NR tiles of 16 lanes
  std::int64_t m_base;       // the pass's first row
  const float* panel;        // 16 x kc decoded weights of block nb, columns k0..
  std::int64_t kc;           // the panel's row stride
};

// Group scales for the 16 outputs of a tile (lane order), rows and columns clamped to the real ones.
template <int MR, int NR>
HWY_INLINE void FillScales(const Problem& p, std::int64_t row0, std::int64_t col0, std::int64_t g, float* s) {
  for (int o = 0; o < kLanes; ++o) {
    const std::int64_t row = std::min(row0 + o / NR, p.m - 1), col = std::min(col0 + o % NR, p.n - 1);
    s[bitrev4(o)] = p.group_scale(row, col, g);
  }
}

// The same when the scale depends on the row only (weight scales inside w, or none): one look-up per row.
template <int MR, int NR>
HWY_INLINE void FillRowScales(const Problem& p, std::int64_t row0, std::int64_t g, float* s) {
  float per_row[MR];
  for (int mi = 0; mi < MR; ++mi) per_row[mi] = p.group_scale(std::min(row0 + mi, p.m - 1), 0, g);
  for (int o = 0; o < kLanes; ++o) s[bitrev4(o)] = per_row[o / NR];
}

// Adds panel columns [k0, k0 + klen) of block nb to C for activation rows [m0, m1) (multiples of MR).
template <int MR, int NR>
void BlockPass(const Pass& w, std::int64_t nb, std::int64_t m0, std::int64_t m1, std::int64_t k0, std::int64_t klen) {
  const Problem& p = *w.p;
  const bool per_row = p.weight_scales.empty() || p.weight_scales_inside;  // scales depend on the activation row only
  const std::int64_t col0 = w.n0 + nb * kLanes;
  const std::int64_t groups = (p.k + p.group - 1) / p.group;
  const std::int64_t g0 = k0 / p.group, g1 = std::min((k0 + klen + p.group - 1) / p.group, groups);
  alignas(64) float red[kLanes], s[kLanes];
  for (std::int64_t m = m0; m < m1; m += MR) {
    float* cs = w.cs + (((m - w.m_base) / MR) * w.nblocks + nb) * (kLanes / NR) * kLanes;
    for (std::int64_t g = g0; g < g1; ++g) {
      const std::int64_t kg = g * p.group, len = (std::min(p.k, kg + p.group) - kg + kLanes - 1) / kLanes * kLanes;
      if (per_row) FillRowScales<MR, NR>(p, m, g, s);
      for (int nt = 0; nt < kLanes / NR; ++nt) {
        TileGroup<MR, NR>(w.a + m * w.lda + kg, w.lda, w.panel + nt * NR * w.kc + (kg - k0), w.kc,
                          static_cast<std::size_t>(len), red);
        if (!per_row) FillScales<MR, NR>(p, m, col0 + nt * NR, g, s);
        ScaleAdd(cs + nt * kLanes, s, red);
      }
    }
  }
}

// Writes rows [m0, m1) of this thread's columns from the running C.
template <int MR, int NR>
void FinishRows(const Pass& w, std::int64_t m0, std::int64_t m1, float* row_buf) {
  const Problem& p = *w.p;
  const std::int64_t cols = std::min(p.n - w.n0, w.nblocks * kLanes);
  for (std::int64_t m = m0; m < std::min(m1, p.m); ++m) {
    const float* tile_row = w.cs + ((m - w.m_base) / MR) * w.nblocks * (kLanes / NR) * kLanes;
    for (std::int64_t c = 0; c < cols; ++c) {
      const int ni = static_cast<int>(c % kLanes);
      const int o = static_cast<int>(m % MR) * NR + ni % NR;
      row_buf[c] = tile_row[((c / kLanes) * (kLanes / NR) + ni / NR) * kLanes + bitrev4(o)];
    }
    finish(p, m, w.n0, cols, row_buf);
  }
}

// C[:, n0, n0 + 16 * nblocks) for every row (columns past N are dropped). mp: a's rows, a multiple of kMc or of
// MR. Small M: each weight block is decoded once and meets every row. Large M: rows go in passes of kMc, and the
// panel is decoded once per pass.
template <int MR, int NR>
void Columns(const Problem& p, const float* a, std::size_t lda, std::int64_t mp, std::int64_t n0,
             std::int64_t nblocks) {
  const std::int64_t mc = std::min(mp, kMc);
  const std::int64_t kp = static_cast<std::int64_t>(lda);
  const std::int64_t kc = mp <= kMc ? std::min(kKcSmall, (kp + kKcLarge - 1) / kKcLarge * kKcLarge) : kKcLarge;
  std::vector<float> panel(static_cast<std::size_t>(kLanes * kc)), row_buf(static_cast<std::size_t>(nblocks * kLanes));
  std::vector<float> cs(static_cast<std::size_t>(mc / MR * nblocks * (kLanes / NR) * kLanes));
  Pass w{&p, a, lda, n0, nblocks, cs.data(), 0, panel.data(), kc};
  for (std::int64_t m0 = 0; m0 < mp; m0 += mc) {
    std::fill(cs.begin(), cs.end(), 0.0f);
    w.m_base = m0;
    const std::int64_t m1 = std::min(mp, m0 + mc);
    for (std::int64_t outer = 0; outer < (mp <= kMc ? nblocks : (kp + kc - 1) / kc); ++outer) {
      for (std::int64_t inner = 0; inner < (mp <= kMc ? (kp + kc - 1) / kc : nblocks); ++inner) {
        const std::int64_t nb = mp <= kMc ? outer : inner, k0 = (mp <= kMc ? inner : outer) * kc;
        const std::int64_t klen = std::min(kc, kp - k0);
        DecodePanel(p, n0 + nb * kLanes, k0, klen, kc, panel.data());
        BlockPass<MR, NR>(w, nb, m0, m1, k0, klen);
      }
    }
    FinishRows<MR, NR>(w, m0, m1, row_buf.data());
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace mf::gemm
HWY_AFTER_NAMESPACE();

#endif  // include guard
