// The e2m1 (mxfp4, nvfp4) GEMV: its weights decoded in registers (LoadE2m1), its block loops (BlockSumsE2m1: 16 lanes
// in the strided lane order, or AVX2's), and what they read: the activations in that order (StridedActivations)
// and each scale code's table of values (E2m1Tables). Which loop a target runs, and why: gemv_loops-inl.h.
//
// Included once per Highway target through gemv-inl.h; hence the toggle include guard.
#if defined(MINIFLOAT_SRC_CPU_GEMV_E2M1_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef MINIFLOAT_SRC_CPU_GEMV_E2M1_INL_H_
#undef MINIFLOAT_SRC_CPU_GEMV_E2M1_INL_H_
#else
#define MINIFLOAT_SRC_CPU_GEMV_E2M1_INL_H_
#endif

#include <cstdint>
#include <cstring>
#include <vector>

#include "../ref/gemm_problem.h"
#include "gemv_inputs-inl.h"
#include "gemv_loops-inl.h"
#include "gemv_rows-inl.h"
#include "hwy/aligned_allocator.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace mf::gemm {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Floats per scale code in the e2m1 GEMV's tables (E2m1Tables): AVX2 decodes by codec::E2m1x8Table's eight, the
// 16-lane targets by the 16 e2m1 values times the scale.
constexpr std::size_t kE2m1TableSize = MF_GEMV_E2M1_TABLE8 ? 8 : 16;

// kL lanes of e2m1 weights w[row, k..] exactly as Problem::weight gives them (MF_GEMV_E2M1_LANES): value x scale.
// The 16-lane targets and AVX2 decode in BlockSumsE2m1 instead.
HWY_INLINE VF LoadE2m1(const WeightRow& r, std::int64_t k, int shift) {
  const DF df;
#if MF_GEMV_E2M1_LANES
  const float scale = r.weight_scale_table[r.scale_codes[k >> shift]];
  return hn::Mul(codec::DecodeE2m1Lanes(df, r.codes + k / 2), hn::Set(df, scale));
#else
  (void)r, (void)k, (void)shift;
  return hn::Zero(df);
#endif
}

#if MF_GEMV_E2M1_TABLE8
// The sums of every group of a 16-row block of e2m1 weights on AVX2, for kBatch activation rows at once: 32 weights
// per row and step, which share one scale (fp4_problem takes 1x32 blocks only) and so one table (E2m1Tables; one
// look-up where two per 16 weights was 5-10% slower in L2 on the AVX2 target: codec::DecodeE2m1x8Table), each
// decoded vector meeting every row of the batch, and the tree (ReduceAvx2) once per group per row. kBlock16
// (nvfp4's 1x16 blocks): a table for each half of the 32.
// sums[16 (b x groups + g) + bitrev4(i)]: group g of weight row i for activation row b.
template <int kBatch, bool kBlock16>
HWY_NOINLINE void BlockSumsE2m1(const WeightRow (&rows)[kLanes], const float* const* HWY_RESTRICT a, std::int64_t k,
                                int shift, const float* HWY_RESTRICT e2m1_tables, float* HWY_RESTRICT sums) {
  (void)e2m1_tables;  // in each row (BlockRows)
  const DF df;
  constexpr int kRows = kGemvPassRows8<kBatch>;
  const std::int64_t groups = k / kActBlock;
  for (std::int64_t k0 = 0, g = 0; k0 < k; k0 += kActBlock, ++g) {
    VF acc[kBatch][kLanes][kV];
    for (int pass = 0; pass < kLanes; pass += kRows) {
      VF s[kRows][kBatch][2];
      for (auto& r : s) {
        for (auto& v : r) v[0] = v[1] = hn::Zero(df);
      }
      for (std::int64_t kk = k0; kk < k0 + kActBlock; kk += 2 * kLanes) {
        VF av[4];  // one activation row's 32 values, loaded once for the four weight rows (kBatch = 1)
        if constexpr (kBatch == 1) {
          for (int q = 0; q < 4; ++q) av[q] = hn::LoadU(df, a[0] + kk + 8 * q);
        }
#pragma GCC unroll 4
        for (int j = 0; j < kRows; ++j) {
          const WeightRow& r = rows[pass + j];
          const float* table = r.e2m1_tables + kE2m1TableSize * r.scale_codes[kk >> shift];
          const float* table1 = kBlock16 ? r.e2m1_tables + kE2m1TableSize * r.scale_codes[(kk + 16) >> shift] : table;
          const std::uint8_t* codes = r.codes + kk / 2;
          if (kk == k0) PrefetchRowAhead(r.codes, kk / 2, kPrefetchAhead8, r.bytes);
#pragma GCC unroll 4
          for (int q = 0; q < 4; ++q) {
            const VF w = codec::DecodeE2m1x8Table(codes + 4 * q, q < 2 ? table : table1);
            if constexpr (kBatch == 1) {
              s[j][0][q % 2] = hn::MulAdd(av[q], w, s[j][0][q % 2]);
            } else {
#pragma GCC unroll 4
              for (int b = 0; b < kBatch; ++b) {
                s[j][b][q % 2] = hn::MulAdd(hn::LoadU(df, a[b] + kk + 8 * q), w, s[j][b][q % 2]);
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
  }
}
#endif  // MF_GEMV_E2M1_TABLE8

#if MF_GEMV_E2M1_STRIDED
// The sums of every group of a 16-row block of e2m1 weights on 16-lane targets, for kBatch activation rows at once
// (a[b]: row b in the strided lane order, StridedActivations): one 1x32 block per step, two 8-byte loads and the
// block's scaled table per weight row, decoded once for all kBatch rows (codec::DecodeE2m1x32Strided), so that
// accumulator lane 2q sums k = q mod 16 and lane 2q + 1 k = 8 + q mod 16, each in increasing k: the definition's
// sequences, summed by the tree in that order (ReduceTileStrided). A group is 128 weights (K is a multiple of the
// activation block) and goes weight row by row: each row's pointers are read once per group rather than once per 32
// weights (16 rows' pointers do not fit in the integer registers). One row's group sum lands in
// sums[16 (b x groups + g) + StridedTreeLane(i)]. kBlock16 (nvfp4's 1x16 blocks): w0 and w1 each from their own
// block's table (the decode's unused halves are dead code).
template <int kBatch, bool kBlock16>
HWY_NOINLINE void BlockSumsE2m1(const WeightRow (&rows)[kLanes], const float* const* HWY_RESTRICT a, std::int64_t k,
                                int shift, const float* HWY_RESTRICT e2m1_tables, float* HWY_RESTRICT sums) {
  const DF df;
  const std::int64_t groups = k / kActBlock;
  for (std::int64_t k0 = 0, g = 0; k0 < k; k0 += kActBlock, ++g) {
    VF acc[kBatch][kLanes][kV];
    VF av[8];  // one activation row's group, held in registers (kBatch = 1)
    if constexpr (kBatch == 1) {
      for (int j = 0; j < 8; ++j) av[j] = hn::LoadU(df, a[0] + k0 + j * kLanes);
    }
#pragma GCC unroll 16
    for (int i = 0; i < kLanes; ++i) {
      const std::uint8_t* codes = rows[i].codes + k0 / 2;
      const std::uint8_t* scale_codes = rows[i].scale_codes;
      PrefetchRowAhead(rows[i].codes, k0 / 2, kPrefetchAhead16, rows[i].bytes);  // 4 groups on
      VF sum[kBatch];
      for (VF& v : sum) v = hn::Zero(df);
#pragma GCC unroll 4
      for (int step = 0; step < 4; ++step) {
        VF w0, w1;
        const float* table = e2m1_tables + kE2m1TableSize * scale_codes[(k0 + 32 * step) >> shift];
        if constexpr (kBlock16) {
          VF unused;
          const float* table1 = e2m1_tables + kE2m1TableSize * scale_codes[(k0 + 32 * step + 16) >> shift];
          codec::DecodeE2m1x32Strided(codes + 16 * step, table, w0, unused);
          codec::DecodeE2m1x32Strided(codes + 16 * step, table1, unused, w1);
        } else {
          codec::DecodeE2m1x32Strided(codes + 16 * step, table, w0, w1);
        }
        if constexpr (kBatch == 1) {
          sum[0] = hn::MulAdd(av[2 * step + 1], w1, hn::MulAdd(av[2 * step], w0, sum[0]));
        } else {
#pragma GCC unroll 4
          for (int b = 0; b < kBatch; ++b) {
            const float* ab = a[b] + k0 + 32 * step;
            sum[b] = hn::MulAdd(hn::LoadU(df, ab + 16), w1, hn::MulAdd(hn::LoadU(df, ab), w0, sum[b]));
          }
        }
      }
      for (int b = 0; b < kBatch; ++b) acc[b][i][0] = sum[b];
    }
    for (int b = 0; b < kBatch; ++b) hn::StoreU(ReduceTileStrided(df, acc[b]), df, sums + kLanes * (b * groups + g));
  }
}

// The e2m1 GEMV's activations on 16-lane targets, in the strided lane order (GroupSumsE2m1Strided).
HWY_INLINE const float* StridedActivations(const Problem& p, const float* a, std::vector<float>& strided) {
  strided.resize(static_cast<std::size_t>(p.k));
  for (std::int64_t k = 0; k < p.k; k += kLanes) {
    for (int q = 0; q < 8; ++q) {
      strided[static_cast<std::size_t>(k + 2 * q)] = a[k + q];
      strided[static_cast<std::size_t>(k + 2 * q + 1)] = a[k + 8 + q];
    }
  }
  return strided.data();
}
#endif  // MF_GEMV_E2M1_STRIDED

// Each scale code's table for the e2m1 GEMV's table decodes (16-lane targets and AVX2), in the thread's GemvBuffers,
// made again only when the scales differ: the 16 e2m1 values times its scale (256 x 16 values, 16 KiB: L1); on AVX2
// codec::E2m1x8Table's eight (8 KiB).
HWY_INLINE const float* E2m1Tables(const Problem& p, GemvBuffers& b) {
  if (!b.e2m1_tables || std::memcmp(b.e2m1_tables_of.data(), p.weight_scale_table.data(), sizeof(float) * 256) != 0) {
    if (!b.e2m1_tables) b.e2m1_tables = hwy::AllocateAligned<float>(256 * 16);
    for (std::size_t code = 0; code < 256; ++code) {
#if MF_GEMV_E2M1_TABLE8
      codec::E2m1x8Table(p.weight_scale_table[code], b.e2m1_tables.get() + code * kE2m1TableSize);
#else
      for (std::size_t j = 0; j < kE2m1TableSize; ++j) {
        b.e2m1_tables[code * kE2m1TableSize + j] = codec::kE2m1Values[j] * p.weight_scale_table[code];
      }
#endif
    }
    b.e2m1_tables_of = p.weight_scale_table;
  }
  return b.e2m1_tables.get();
}

}  // namespace HWY_NAMESPACE
}  // namespace mf::gemm
HWY_AFTER_NAMESPACE();

#endif  // include guard
