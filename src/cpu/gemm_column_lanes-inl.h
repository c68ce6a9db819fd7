// Per-target SIMD code for the GEMMs with many activation rows (kColumnLanesFrom) on AVX-512 and AVX2: a register
// tile whose lanes are output columns. It performs exactly the f32 operations of mf::gemm::reference
// (src/ref/gemm_ref.cc), grouped so that the definition's tree costs vertical adds instead of lane shuffles:
//   * kPanelColumns weight rows (16: one vector on AVX-512, two on AVX2) are decoded (as Problem::weight does) and
//     transposed into a panel that holds, per k, those columns' weights as kPanelVectors vectors;
//   * the tile is MR activation rows x kPanelColumns columns; one accumulator vector holds one partial sum p[i]
//     (k = i mod 16) of a vector of outputs, fed one k at a time by a broadcast activation times a panel vector, in
//     increasing k: each lane runs the definition's fma sequence for its output;
//   * the 16 partial sums are not live at once: on AVX-512 the sums p[i] and p[i + 8] are built together, added (the
//     tree's first level) and folded into the later levels as soon as their partners exist, in the order that needs
//     the fewest pending sums; AVX2 builds one at a time in the same order (ColumnTileGroupOneSum). Every add takes
//     the definition's operands in the definition's order.
// gemm-inl.h's 4 x 4 tile keeps K along the lanes instead and spends about 50 shuffles per group and 16 outputs on
// its transposing tree; this tile spends 15 vertical adds per group and 16 outputs (measured in
// docs/benchmark-history.md#sixth-session-the-column-lane-tile-and-weights-streamed-from-memory).
//
// Included once per Highway target by gemm.cc, after gemm-inl.h; hence the toggle include guard.
#if defined(MINIFLOAT_SRC_CPU_GEMM_COLUMN_LANES_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef MINIFLOAT_SRC_CPU_GEMM_COLUMN_LANES_INL_H_
#undef MINIFLOAT_SRC_CPU_GEMM_COLUMN_LANES_INL_H_
#else
#define MINIFLOAT_SRC_CPU_GEMM_COLUMN_LANES_INL_H_
#endif

#include <algorithm>
#include <cstdint>

#include "../ref/gemm_problem.h"
#include "thread_scratch.h"
#include "hwy/cache_control.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace mf::gemm {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#undef MF_GEMM_COLUMN_LANES
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2  // AVX2 or newer
#define MF_GEMM_COLUMN_LANES 1
#else
#define MF_GEMM_COLUMN_LANES 0
#endif

#if MF_GEMM_COLUMN_LANES

// AVX-512: one vector of columns per k (16 columns) x 6 rows, 12 accumulators and 18 pending tree sums of 32
// registers. Each activation then meets one weight vector, so the compiler folds its broadcast into the fma (an
// embedded {1to16} memory operand): on Zen 4 a separate broadcast into a register costs a vector-pipe slot, and
// the 32-column x 4-row tile that shared each broadcast between two fmas ran 15-20% slower in a microbenchmark
// with everything in L1. AVX2 (no embedded broadcast): two vectors (16 columns) x 6 rows, one partial sum at a
// time: 12 accumulators, 2 weight vectors and a broadcast of 16 registers, the shape of OpenBLAS's Haswell sgemm
// kernel; the pending tree sums wait in L1 (ColumnTileGroupOneSum).
constexpr int kPanelVectors = kL == 16 ? 1 : 2;
constexpr std::int64_t kPanelColumns = kPanelVectors * static_cast<std::int64_t>(kL);
constexpr int kColumnTileRows = 6;
// From how many activation rows the column-lane tile takes over from the 4 x 4 one. AVX-512: at M = 8 to 20 the two
// measured within the noise of each other (the panel transpose is then a larger share), from 32 on it is 1.3-2x
// faster. AVX2, where the 4 x 4 tile's 32 accumulators do not fit in the registers: 0.95-1.9x at M = 8 to 16, at
// most even at M = 4 (docs/benchmark-history.md#m--8-and-16-the-gemv-or-the-column-lane-tile-2026-12-03-1650).
constexpr std::int64_t kColumnLanesFrom = kL == 16 ? 16 : 8;
// Activation rows per pass: all of M = 512 in one, so that each weight panel is fetched from memory and decoded once
// per call there rather than once per pass; the running C grows to 512 x 64 B per panel, read in sequence.
constexpr std::int64_t kColumnPass = 512;

#if MF_GEMM_WIDE
// dst[c * ldd + r] = src[r * lds + c] for r, c < 16: pairs of rows interleaved by 32 then 64 bits, then 128-bit
// blocks gathered.
// Raw intrinsics here and in the AVX2 version: Highway 1.0.3 has no two-source shuffle of 128-bit blocks
// (vshuff32x4) or of lanes by an immediate (vshufps), the steps of this fixed transpose.
HWY_INLINE void TransposeLanes(const float* HWY_RESTRICT src, std::size_t lds, float* HWY_RESTRICT dst,
                               std::size_t ldd) {
  __m512 r[16], t[16];
  for (std::size_t i = 0; i < 16; ++i) r[i] = _mm512_loadu_ps(src + i * lds);
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);      // rows i, i+1: columns 0, 1 of each 128-bit block
    t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);  // columns 2, 3
  }
  for (int b = 0; b < 16; b += 4) {  // r[b + c]: rows b..b+3, columns c, c+4, c+8, c+12 (one per block)
    const auto lo = [](__m512 x, __m512 y) {
      return _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(x), _mm512_castps_pd(y)));
    };
    const auto hi = [](__m512 x, __m512 y) {
      return _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(x), _mm512_castps_pd(y)));
    };
    r[b] = lo(t[b], t[b + 2]);
    r[b + 1] = hi(t[b], t[b + 2]);
    r[b + 2] = lo(t[b + 1], t[b + 3]);
    r[b + 3] = hi(t[b + 1], t[b + 3]);
  }
  for (int c = 0; c < 4; ++c) {
    const __m512 even01 = _mm512_shuffle_f32x4(r[c], r[4 + c], _MM_SHUFFLE(2, 0, 2, 0));
    const __m512 even23 = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], _MM_SHUFFLE(2, 0, 2, 0));
    const __m512 odd01 = _mm512_shuffle_f32x4(r[c], r[4 + c], _MM_SHUFFLE(3, 1, 3, 1));
    const __m512 odd23 = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], _MM_SHUFFLE(3, 1, 3, 1));
    _mm512_storeu_ps(dst + c * ldd, _mm512_shuffle_f32x4(even01, even23, _MM_SHUFFLE(2, 0, 2, 0)));
    _mm512_storeu_ps(dst + (c + 8) * ldd, _mm512_shuffle_f32x4(even01, even23, _MM_SHUFFLE(3, 1, 3, 1)));
    _mm512_storeu_ps(dst + (c + 4) * ldd, _mm512_shuffle_f32x4(odd01, odd23, _MM_SHUFFLE(2, 0, 2, 0)));
    _mm512_storeu_ps(dst + (c + 12) * ldd, _mm512_shuffle_f32x4(odd01, odd23, _MM_SHUFFLE(3, 1, 3, 1)));
  }
}
#else
// The same for r, c < 8 (AVX2): pairs of rows interleaved by 32 bits, then 64, then 128-bit halves gathered.
HWY_INLINE void TransposeLanes(const float* HWY_RESTRICT src, std::size_t lds, float* HWY_RESTRICT dst,
                               std::size_t ldd) {
  __m256 r[8], t[8];
  for (std::size_t i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(src + i * lds);
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);      // rows i, i+1: columns 0, 1 (4, 5)
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);  // columns 2, 3 (6, 7)
  }
  for (int b = 0; b < 8; b += 4) {  // r[b + c]: rows b..b+3, column c (and c + 4 in the upper half)
    r[b] = _mm256_shuffle_ps(t[b], t[b + 2], _MM_SHUFFLE(1, 0, 1, 0));
    r[b + 1] = _mm256_shuffle_ps(t[b], t[b + 2], _MM_SHUFFLE(3, 2, 3, 2));
    r[b + 2] = _mm256_shuffle_ps(t[b + 1], t[b + 3], _MM_SHUFFLE(1, 0, 1, 0));
    r[b + 3] = _mm256_shuffle_ps(t[b + 1], t[b + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  for (int c = 0; c < 4; ++c) {
    _mm256_storeu_ps(dst + c * ldd, _mm256_permute2f128_ps(r[c], r[4 + c], 0x20));
    _mm256_storeu_ps(dst + (c + 4) * ldd, _mm256_permute2f128_ps(r[c], r[4 + c], 0x31));
  }
}
#endif

// panel[k * kPanelColumns + j] = w[n0 + j, k0 + k] for k < len (a multiple of 16), as DecodePanel gives them (0
// past K and N); `rows` is kPanelColumns x len of scratch.
HWY_INLINE void DecodeColumnPanel(const Problem& p, std::int64_t n0, std::int64_t k0, std::int64_t len,
                                  float* HWY_RESTRICT rows, float* HWY_RESTRICT panel) {
  constexpr auto kB = static_cast<std::int64_t>(kL);  // TransposeLanes' block
  for (std::int64_t h = 0; h < kPanelColumns; h += kLanes) DecodePanel(p, n0 + h, k0, len, len, rows + h * len);
  for (std::int64_t h = 0; h < kPanelColumns; h += kB) {
    for (std::int64_t k = 0; k < len; k += kB) {
      TransposeLanes(rows + h * len + k, static_cast<std::size_t>(len), panel + k * kPanelColumns + h, kPanelColumns);
    }
  }
}

// Asks for the weight bytes of DecodeColumnPanel(p, n0, k0, len) ahead of time: a panel's kPanelColumns short row
// pieces, each a new stream, are too short for the hardware prefetchers, and the decode otherwise waits for them.
HWY_INLINE void PrefetchColumnPanel(const Problem& p, std::int64_t n0, std::int64_t k0, std::int64_t len) {
  const std::int64_t end = std::min(p.k, k0 + len);
  for (std::int64_t row = n0; row < std::min(p.n, n0 + kPanelColumns); ++row) {
    const std::uint8_t* first = nullptr;
    const std::uint8_t* last = nullptr;
    const std::size_t i = static_cast<std::size_t>(row * p.k);
    switch (p.kind) {
      case WeightKind::e4m3: first = p.codes + i + k0, last = p.codes + i + end; break;
      case WeightKind::e2m1: first = p.codes + (i + k0) / 2, last = p.codes + (i + end) / 2; break;
      case WeightKind::bf16:
        first = reinterpret_cast<const std::uint8_t*>(p.w_bf16 + i + k0);
        last = reinterpret_cast<const std::uint8_t*>(p.w_bf16 + i + end);
        break;
      case WeightKind::f32:
        first = reinterpret_cast<const std::uint8_t*>(p.w_f32 + i + k0);
        last = reinterpret_cast<const std::uint8_t*>(p.w_f32 + i + end);
        break;
    }
    for (const std::uint8_t* line = first; line < last; line += 64) hwy::Prefetch(line);
  }
}

// One group for MR activation rows (a, stride lda) x the panel's columns on AVX-512, `chain` values per partial sum
// (kChain when it is not 0: a whole group of 128 has 8, and the loops unrolled in full ran 3-7% faster at M = 512 on
// one AVX-512 thread of the Sapphire Rapids-class Xeon): sums[mi][v] lane j = the group's tree sum for (row mi,
// column kL v + j).
template <int MR, int kChain = 0>
HWY_INLINE void ColumnTileGroup(const float* HWY_RESTRICT a, std::size_t lda, const float* HWY_RESTRICT panel,
                                std::int64_t runtime_chain, VF (&sums)[MR][kPanelVectors]) {
  const std::int64_t chain = kChain != 0 ? kChain : runtime_chain;
  const DF df;
  constexpr int kV = kPanelVectors;
  // Pairs (p[i], p[i + 8]) -> q[i]; q[0] q[4] -> r[0], q[2] q[6] -> r[2], then r[0] + r[2]; likewise r[1], r[3].
  constexpr int kOrder[8] = {0, 4, 2, 6, 1, 5, 3, 7};
  VF q_first[MR][kV], r_first[MR][kV], left[MR][kV];  // q[i] awaiting q[i + 4]; r[0] or r[1] awaiting r[2], r[3]
#pragma GCC unroll 8
  for (int step = 0; step < 8; ++step) {
    const std::int64_t i = kOrder[step];
    VF x[MR][kV], y[MR][kV];  // p[i], p[i + 8]
    for (int mi = 0; mi < MR; ++mi) {
      for (int v = 0; v < kV; ++v) x[mi][v] = y[mi][v] = hn::Zero(df);
    }
#pragma GCC unroll 8
    for (std::int64_t j = 0; j < chain; ++j) {
      const std::int64_t k = i + kLanes * j;
      VF wx[kV], wy[kV];  // the panel at k and k + 8
      for (int v = 0; v < kV; ++v) {
        wx[v] = hn::Load(df, panel + k * kPanelColumns + v * kL);
        wy[v] = hn::Load(df, panel + (k + 8) * kPanelColumns + v * kL);
      }
#pragma GCC unroll 8
      for (int mi = 0; mi < MR; ++mi) {
        for (int v = 0; v < kV; ++v) {
          x[mi][v] = hn::MulAdd(hn::Set(df, a[mi * lda + k]), wx[v], x[mi][v]);
          y[mi][v] = hn::MulAdd(hn::Set(df, a[mi * lda + k + 8]), wy[v], y[mi][v]);
        }
      }
    }
    for (int mi = 0; mi < MR; ++mi) {
      for (int v = 0; v < kV; ++v) {
        const VF q = hn::Add(x[mi][v], y[mi][v]);  // q[i] = p[i] + p[i + 8]
        if (step % 2 == 0) {
          q_first[mi][v] = q;
          continue;
        }
        const VF r = hn::Add(q_first[mi][v], q);  // r[i - 4] = q[i - 4] + q[i]
        if (step == 1 || step == 5) {
          r_first[mi][v] = r;
        } else if (step == 3) {
          left[mi][v] = hn::Add(r_first[mi][v], r);  // r[0] + r[2]
        } else {
          sums[mi][v] = hn::Add(left[mi][v], hn::Add(r_first[mi][v], r));  // (r[0] + r[2]) + (r[1] + r[3])
        }
      }
    }
  }
}

#if !MF_GEMM_WIDE
// The chain of partial sum p[i] (k = i, i + 16, ... for `chain` values) for MR rows x the panel's two vectors, from
// +0 in increasing k.
template <int MR, int kChain>
HWY_INLINE void ColumnChain(const float* HWY_RESTRICT a, std::size_t lda, const float* HWY_RESTRICT panel,
                            std::int64_t i, std::int64_t runtime_chain, VF (&p)[MR][kPanelVectors]) {
  const DF df;
  const std::int64_t chain = kChain != 0 ? kChain : runtime_chain;
  for (int mi = 0; mi < MR; ++mi) {
    for (int v = 0; v < kPanelVectors; ++v) p[mi][v] = hn::Zero(df);
  }
#pragma GCC unroll 8
  for (std::int64_t j = 0; j < chain; ++j) {
    const std::int64_t k = i + kLanes * j;
    VF w[kPanelVectors];
    for (int v = 0; v < kPanelVectors; ++v) w[v] = hn::Load(df, panel + k * kPanelColumns + v * kL);
    for (int mi = 0; mi < MR; ++mi) {
      const VF b = hn::Set(df, a[mi * lda + k]);
      for (int v = 0; v < kPanelVectors; ++v) p[mi][v] = hn::MulAdd(b, w[v], p[mi][v]);
    }
  }
}

// ColumnTileGroup for AVX2's 16 registers: one partial sum at a time, 6 rows x 16 columns (12 chains); the sums that
// wait for their partners in the tree (p[i] for p[i + 8], then q, r and r[0] + r[2] as in ColumnTileGroup, in the
// same order and with the same operands) are kept in `held`, which the compiler leaves in L1: one load or store per
// chain of 8 fmas. The 2 x 16 tile that built p[i] and p[i + 8] together loaded a weight vector or a broadcast per
// fma; this one loads 8 per 12 fmas.
template <int MR, int kChain = 0>
HWY_INLINE void ColumnTileGroupOneSum(const float* HWY_RESTRICT a, std::size_t lda, const float* HWY_RESTRICT panel,
                                      std::int64_t runtime_chain, VF (&sums)[MR][kPanelVectors]) {
  constexpr int kV = kPanelVectors;
  constexpr int kOrder[8] = {0, 4, 2, 6, 1, 5, 3, 7};
  enum { kX, kQ, kR, kLeft };  // p[i]; q[i] awaiting q[i + 4]; r[0] or r[1]; r[0] + r[2]
  alignas(32) float held[4][MR][kV][kL];
  const DF df;
#pragma GCC unroll 1
  for (int step = 0; step < 8; ++step) {
    const std::int64_t i = kOrder[step];
    VF p[MR][kV];
    ColumnChain<MR, kChain>(a, lda, panel, i, runtime_chain, p);
    for (int mi = 0; mi < MR; ++mi) {
      for (int v = 0; v < kV; ++v) hn::Store(p[mi][v], df, held[kX][mi][v]);
    }
    ColumnChain<MR, kChain>(a, lda, panel, i + 8, runtime_chain, p);
    for (int mi = 0; mi < MR; ++mi) {
      for (int v = 0; v < kV; ++v) {
        const VF q = hn::Add(hn::Load(df, held[kX][mi][v]), p[mi][v]);  // q[i] = p[i] + p[i + 8]
        if (step % 2 == 0) {
          hn::Store(q, df, held[kQ][mi][v]);
          continue;
        }
        const VF r = hn::Add(hn::Load(df, held[kQ][mi][v]), q);  // r[i - 4] = q[i - 4] + q[i]
        if (step == 1 || step == 5) {
          hn::Store(r, df, held[kR][mi][v]);
        } else if (step == 3) {
          hn::Store(hn::Add(hn::Load(df, held[kR][mi][v]), r), df, held[kLeft][mi][v]);  // r[0] + r[2]
        } else {  // (r[0] + r[2]) + (r[1] + r[3])
          sums[mi][v] = hn::Add(hn::Load(df, held[kLeft][mi][v]), hn::Add(hn::Load(df, held[kR][mi][v]), r));
        }
      }
    }
  }
}
#endif

// What one thread's column-lane call keeps: the decoded panel, the pass's packed activations, the running C.
struct ColumnPass {
  const Problem* p;
  std::int64_t m0, m1;         // the pass's rows (m1 - m0 <= kColumnPass)
  const float* pass_a;         // [m1 - m0][p->group]: the pass's activations for the current group (group-major a)
  const float* panel;          // [len][kPanelColumns]: the current group's decoded panel
  const float* weight_scales;  // [kPanelColumns]: the panel's weight scales for the group (1 when inside w)
  float* cs;                   // [m1 - m0][kPanelColumns]: the panel's running C for the pass
};

// Rows [m, m + MR) of the pass for group g: their tree sums, then C + (activation scale * weight scale) * sum, the
// definition's roundings.
template <int MR>
HWY_INLINE void ColumnTileRows(const ColumnPass& w, std::int64_t m, std::int64_t g, std::int64_t len) {
  const DF df;
  const Problem& p = *w.p;
  const float* a = w.pass_a + (m - w.m0) * p.group;
  VF sums[MR][kPanelVectors];
#if MF_GEMM_WIDE
  if (len == 8 * kLanes) {
    ColumnTileGroup<MR, 8>(a, static_cast<std::size_t>(p.group), w.panel, 8, sums);
  } else {
    ColumnTileGroup<MR>(a, static_cast<std::size_t>(p.group), w.panel, len / kLanes, sums);
  }
#else
  if (len == 8 * kLanes) {
    ColumnTileGroupOneSum<MR, 8>(a, static_cast<std::size_t>(p.group), w.panel, 8, sums);
  } else {
    ColumnTileGroupOneSum<MR>(a, static_cast<std::size_t>(p.group), w.panel, len / kLanes, sums);
  }
#endif
  for (int mi = 0; mi < MR; ++mi) {
    const VF act_scales = hn::Set(df, p.activation_scale(std::min(m + mi, p.m - 1), g));
    float* c = w.cs + (m - w.m0 + mi) * kPanelColumns;
    for (int v = 0; v < kPanelVectors; ++v) {
      const VF s = hn::Mul(act_scales, hn::Load(df, w.weight_scales + v * kL));
      hn::Store(hn::Add(hn::Load(df, c + v * kL), hn::Mul(s, sums[mi][v])), df, c + v * kL);
    }
  }
}

// Every row of the pass for group g: tiles of kColumnTileRows, then the rest (a multiple of 2: passes are whole
// numbers of 4 rows) in smaller ones.
HWY_INLINE void ColumnPassRows(const ColumnPass& w, std::int64_t g, std::int64_t len) {
  std::int64_t m = w.m0;
  for (; m + kColumnTileRows <= w.m1; m += kColumnTileRows) ColumnTileRows<kColumnTileRows>(w, m, g, len);
  if constexpr (kColumnTileRows > 4) {
    if (m + 4 <= w.m1) ColumnTileRows<4>(w, m, g, len), m += 4;
  }
  if constexpr (kColumnTileRows > 2) {
    if (m + 2 <= w.m1) ColumnTileRows<2>(w, m, g, len);
  }
}

// Writes rows [m0, m1) of columns [n0, n0 + cols) from the running C (panel stride `panel_stride`), via `row`.
HWY_INLINE void FinishColumnRows(const Problem& p, std::int64_t m0, std::int64_t m1, std::int64_t n0, std::int64_t cols,
                                 std::int64_t panel_stride, const float* cs, float* row) {
  const std::int64_t panels = (cols + kPanelColumns - 1) / kPanelColumns;
  for (std::int64_t m = m0; m < std::min(m1, p.m); ++m) {
    for (std::int64_t pb = 0; pb < panels; ++pb) {
      std::copy_n(cs + pb * panel_stride + (m - m0) * kPanelColumns, kPanelColumns, row + pb * kPanelColumns);
    }
    finish(p, m, n0, cols, row);
  }
}

// C[:, n0, n0 + 16 * nblocks) for every row with the column-lane tile (columns past N are dropped). a: the
// activations group-major, [groups][mp][p.group] (PackGroups), so that a group's rows are one contiguous run that
// stays in L2 across the panels (rows K apart would map onto a few L2 sets and evict each other) and is packed once
// per call rather than once per thread or chunk. mp: a multiple of 4 (2 on AVX2), and of kMc when larger. Per pass
// of up to kColumnPass rows, group by group: a group's panel is decoded once and meets every row of the pass while it
// sits in L1. The running C is kept panel by panel (pass rows x kPanelColumns each), so that a panel's rows read it
// in one sequential run.
void ColumnLanes(const Problem& p, const float* a, std::int64_t mp, std::int64_t n0, std::int64_t nblocks) {
  const std::int64_t mc = std::min(mp, kColumnPass);
  const std::int64_t panels = (nblocks * kLanes + kPanelColumns - 1) / kPanelColumns;
  const std::int64_t groups = (p.k + p.group - 1) / p.group;
  const auto group_len = static_cast<std::size_t>(p.group);
  // The thread's scratch, kept between calls (a chunk's running C is a megabyte at M = 512).
  static thread_local ThreadScratch scratch[4];
  float* const rows = scratch[0].get(kPanelColumns * group_len);
  float* const panel = scratch[1].get(kPanelColumns * group_len);
  float* const cs = scratch[2].get(static_cast<std::size_t>(panels * mc * kPanelColumns));
  float* const row = scratch[3].get(static_cast<std::size_t>(panels * kPanelColumns));
  alignas(64) float weight_scales[kPanelColumns];
  ColumnPass w{&p, 0, 0, nullptr, panel, weight_scales, nullptr};
  for (std::int64_t m0 = 0; m0 < mp; m0 += mc) {
    w.m0 = m0, w.m1 = std::min(mp, m0 + mc);
    std::fill(cs, cs + panels * mc * kPanelColumns, 0.0f);
    for (std::int64_t g = 0; g < groups; ++g) {
      const std::int64_t kg = g * p.group, len = (std::min(p.k, kg + p.group) - kg + kLanes - 1) / kLanes * kLanes;
      w.pass_a = a + (g * mp + m0) * p.group;
      for (std::int64_t pb = 0; pb < panels; ++pb) {
        const std::int64_t col0 = n0 + pb * kPanelColumns;
        DecodeColumnPanel(p, col0, kg, len, rows, panel);
        if (pb + 1 < panels) {
          PrefetchColumnPanel(p, col0 + kPanelColumns, kg, len);
        } else if (g + 1 < groups) {
          PrefetchColumnPanel(p, n0, kg + p.group, len);
        }
        for (std::int64_t j = 0; j < kPanelColumns; ++j) {
          weight_scales[j] = p.weight_group_scale(std::min(col0 + j, p.n - 1), g);
        }
        w.cs = cs + pb * mc * kPanelColumns;
        ColumnPassRows(w, g, len);
      }
    }
    FinishColumnRows(p, w.m0, w.m1, n0, std::min(p.n - n0, nblocks * kLanes), mc * kPanelColumns, cs, row);
  }
  for (ThreadScratch& s : scratch) s.trim(kScratchKept);
}

#endif  // MF_GEMM_COLUMN_LANES

}  // namespace HWY_NAMESPACE
}  // namespace mf::gemm
HWY_AFTER_NAMESPACE();

#endif  // include guard
