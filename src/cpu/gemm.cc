// The fast GEMMs: operands checked into a Problem (src/ref/gemm_problem.cc), activations padded where the tiles need it
// (packed group-major for the column-lane tile), then OpenMP threads over blocks of 16 weight rows (from a queue; fixed
// shares only for the 4 x 4 tile above 256 rows), each running the per-target kernels of gemv-inl.h (M < 16 where it is
// batched, else 8; 12 on AVX2), gemm-inl.h and gemm_column_lanes-inl.h. Weights are read once per pass of activation
// rows (once in all for M <= 256, and for M <= 512 with the column-lane tile), so decode-shaped calls stream the packed
// weights once.

// Highway compiles its AVX3_DL target (AVX-512 with VBMI: Ice Lake and Zen 4 on) only where asked: here, for the e4m3
// GEMV's table decode and bf16 dot product (gemv_e4m3-inl.h). Other kernels gain nothing from it, so their files
// leave it out (compile time).
#define HWY_WANT_AVX3_DL
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <vector>

#include "../ref/gemm_problem.h"
#include "column_queue.h"
#include "gemm_dispatch.h"
#include "thread_count.h"
#include "thread_scratch.h"
#include "minifloat/gemm.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "../src/cpu/gemm.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "gemm-inl.h"
#include "gemm_column_lanes-inl.h"
#include "gemv-inl.h"

// The per-target entry points: up to 15, 7 or 11 activation rows straight from the codes (gemv-inl.h), or a register
// tile by M over decoded panels: two rows 2 x 8, then 4 x 4 (gemm-inl.h), and from 16 rows on AVX-512 (8 on AVX2) the
// column-lane tile (gemm_column_lanes-inl.h). The tiles take small M only where the GEMV does not fit (f32 weights,
// bf16 with K not a multiple of 16, ...).
HWY_BEFORE_NAMESPACE();
namespace mf::gemm {
namespace HWY_NAMESPACE {

void Gemv(const Problem& p, const float* a, std::size_t lda, ColumnQueue* queue) { GemvColumns(p, a, lda, *queue); }

bool UsesColumnLanes(const Problem& p) {
#if MF_GEMM_COLUMN_LANES
  return p.m >= kColumnLanesFrom;
#else
  (void)p;
  return false;
#endif
}

// a: [mp][lda] rows, or group-major [groups][mp][p.group] where UsesColumnLanes(p).
void ComputeColumns(const Problem& p, const float* a, std::size_t lda, std::int64_t mp, std::int64_t n0,
                    std::int64_t nblocks) {
  if (p.m == 1) return Columns<1, 16>(p, a, lda, mp, n0, nblocks);
  if (p.m == 2) return Columns<2, 8>(p, a, lda, mp, n0, nblocks);
#if MF_GEMM_COLUMN_LANES
  if (UsesColumnLanes(p)) return ColumnLanes(p, a, mp, n0, nblocks);
#endif
  Columns<4, 4>(p, a, lda, mp, n0, nblocks);
}

bool NativeFma() { return HWY_NATIVE_FMA != 0; }
const char* GemvDecode() { return GemvE4m3Decode(); }
bool GemvDotBf16() {
#if MF_GEMV_E4M3_TABLES
  return CpuDotBf16RoundsTwice();
#else
  return false;
#endif
}
bool GemvLanesBlocks() { return MF_GEMV_E4M3_LANES_BLOCKS != 0; }
// M below GemvRowsBelow (15 where the GEMV decodes each weight once for up to 4 rows: fp8 on AVX3_DL, mxfp4 on 16-lane
// targets; else 7; 11 on AVX2, which batches fp8 and mxfp4 too): the GEMV, block of columns by block (GemvColumns). The
// register tiles computed M = 2 to 7 at 0.5-0.9x the GEMV's GFLOP/s at M = 1, so each token of a small batch cost more
// than a lone one; the row-by-row GEMV falls behind the tiles from 8 rows on AVX-512, from 12 on AVX2 (on Zen 3 the
// column-lane tile ran M = 8 at 0.6-0.9x the fp8 and mxfp4 GEMV:
// docs/benchmark-history.md#m--8-and-16-the-gemv-or-the-column-lane-tile-2026-12-03-1650).
bool UsesGemv(const Problem& p) { return p.m < GemvRowsBelow(p) && GemvFits(p); }

}  // namespace HWY_NAMESPACE
}  // namespace mf::gemm
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace mf {
namespace gemm {

HWY_EXPORT(ComputeColumns);
HWY_EXPORT(Gemv);
HWY_EXPORT(NativeFma);
HWY_EXPORT(UsesGemv);
HWY_EXPORT(UsesColumnLanes);

HWY_EXPORT(GemvDecode);
HWY_EXPORT(GemvDotBf16);
HWY_EXPORT(GemvLanesBlocks);

const char* gemv_e4m3_decode() { return HWY_DYNAMIC_DISPATCH(GemvDecode)(); }
bool gemv_e4m3_bf16_dot_available() { return HWY_DYNAMIC_DISPATCH(GemvDotBf16)(); }
bool gemv_e4m3_f32_fields_available() { return HWY_DYNAMIC_DISPATCH(GemvLanesBlocks)(); }
bool gemv_e4m3_bf16_dot() { return gemv_e4m3_bf16_dot_available() && gemv_e4m3_bf16_dot_chosen(); }

namespace {
// Whether this is an AMD CPU: the loops GemvChoice::faster picks were measured faster on the maker's cores.
bool cpu_is_amd() {
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
  static const bool amd = [] {
    __builtin_cpu_init();
    return __builtin_cpu_is("amd");
  }();
  return amd;
#else
  return false;
#endif
}
bool chosen(const std::atomic<GemvChoice>& choice) {
  switch (choice.load(std::memory_order_relaxed)) {
    case GemvChoice::always: return true;
    case GemvChoice::never: return false;
    case GemvChoice::faster: break;
  }
  return cpu_is_amd();
}
std::atomic<GemvChoice> bf16_dot_choice{GemvChoice::faster};
std::atomic<GemvChoice> f32_fields_choice{GemvChoice::faster};
}  // namespace
void choose_gemv_e4m3_bf16_dot(GemvChoice choice) { bf16_dot_choice.store(choice, std::memory_order_relaxed); }
bool gemv_e4m3_bf16_dot_chosen() { return chosen(bf16_dot_choice); }
void choose_gemv_e4m3_f32_fields(GemvChoice choice) { f32_fields_choice.store(choice, std::memory_order_relaxed); }
bool gemv_e4m3_f32_fields_chosen() { return chosen(f32_fields_choice); }

namespace {

// Activations with rows padded to the register tile (4) or the row pass, and K to a multiple of 16, with zeros.
std::vector<float> padded_activations(const Problem& p, std::int64_t mp, std::size_t lda) {
  std::vector<float> a(static_cast<std::size_t>(mp) * lda, 0.0f);
  for (std::int64_t r = 0; r < p.m; ++r) {
    p.activation_values(r, 0, p.k, a.data() + r * lda);
  }
  return a;
}

// The GEMV's activation rows (the problem's own, K apart): chunks of 4 blocks (64 columns, tens of microseconds each
// per row) from a queue.
void gemv_threads(const Problem& p, std::int64_t blocks, int threads, bool parallel) {
  ColumnQueue queue(blocks, 4);
  // act_quant's codes as values (a few rows), in the calling thread's kept scratch: a decode step allocates nothing.
  static thread_local ThreadScratch decoded;
  const float* a = p.a.data();
  if (p.a_codes != nullptr) {
    float* rows = decoded.get(static_cast<std::size_t>(p.m * p.k));
    for (std::int64_t r = 0; r < p.m; ++r) p.activation_values(r, 0, p.k, rows + r * p.k);
    a = rows;
  }
  const auto lda = static_cast<std::size_t>(p.k);
  if (!parallel) return HWY_DYNAMIC_DISPATCH(Gemv)(p, a, lda, &queue);  // no OpenMP region: a decode step's calls
#pragma omp parallel num_threads(threads) if (parallel)
  {
    HWY_DYNAMIC_DISPATCH(Gemv)(p, a, lda, &queue);
    queue.wait_until_done();
  }
}

// Columns are independent, so they come from a queue, in about four chunks per thread (each sets up its own panel
// and running C) of an even number of blocks.
std::int64_t chunk_blocks(std::int64_t blocks, int threads) {
  return std::max<std::int64_t>(2, (blocks + 4 * threads - 1) / (4 * threads) + 1) / 2 * 2;
}

// The calling thread's share of the queue's chunks, until none is left.
void take_chunks(const Problem& p, const float* a, std::size_t lda, std::int64_t mp, ColumnQueue& queue) {
  std::int64_t begin, end;
  while (queue.next(begin, end)) {
    HWY_DYNAMIC_DISPATCH(ComputeColumns)(p, a, lda, mp, begin * kLanes, end - begin);
    queue.finished(begin, end);
  }
  queue.wait_until_done();
}

// One pass of activation rows for the 4 x 4 tile: its columns from a queue.
void queued_columns(const Problem& p, const float* a, std::size_t lda, std::int64_t mp, std::int64_t blocks,
                    int threads) {
  ColumnQueue queue(blocks, chunk_blocks(blocks, threads));
#pragma omp parallel num_threads(threads)
  take_chunks(p, a, lda, mp, queue);
}

// Groups [g0, g1) of the column-lane tile's activations, [groups][mp][p.group]: rows past M and columns past K are
// zeros.
void pack_groups(const Problem& p, std::int64_t mp, std::int64_t g0, std::int64_t g1, float* out) {
  for (std::int64_t g = g0; g < g1; ++g) {
    const std::int64_t kg = g * p.group, len = std::min<std::int64_t>(p.group, p.k - kg);
    for (std::int64_t m = 0; m < mp; ++m) {
      float* dst = out + (g * mp + m) * p.group;
      const std::int64_t n = m < p.m ? len : 0;
      p.activation_values(m, kg, n, dst);
      std::fill(dst + n, dst + p.group, 0.0f);
    }
  }
}

// The column-lane tile (UsesColumnLanes): the threads pack the activations group-major together, once per call,
// then take columns from a queue (every pass of rows runs within a chunk, so a chunk needs no state of another: a
// thread slowed by a neighbour on its core takes fewer chunks instead of holding up the call).
void column_lane_threads(const Problem& p, std::int64_t mp, std::int64_t blocks, int threads, bool parallel) {
  const std::int64_t groups = (p.k + p.group - 1) / p.group;
  static thread_local ThreadScratch packed;
  float* const a = packed.get(static_cast<std::size_t>(groups * mp * p.group));
  ColumnQueue queue(blocks, chunk_blocks(blocks, threads));
#pragma omp parallel num_threads(threads) if (parallel)
  {
    const std::int64_t t = omp_get_thread_num(), count = omp_get_num_threads();
    pack_groups(p, mp, groups * t / count, groups * (t + 1) / count, a);
#pragma omp barrier
    take_chunks(p, a, 0, mp, queue);
  }
  packed.trim(kScratchKept);
}

// Passes of activation rows: each thread keeps a running C for its columns across them, so they are fixed (a queue
// per pass measured 2-7% slower on one thread, from the chunks' repeated set-up).
void fixed_columns(const Problem& p, const float* a, std::size_t lda, std::int64_t mp, std::int64_t blocks, int threads,
                   bool parallel) {
#pragma omp parallel num_threads(threads) if (parallel)
  {
    const std::int64_t t = omp_get_thread_num(), count = omp_get_num_threads();
    const std::int64_t begin = blocks / count * t + std::min(t, blocks % count);
    const std::int64_t end = begin + blocks / count + (t < blocks % count ? 1 : 0);
    if (begin < end) HWY_DYNAMIC_DISPATCH(ComputeColumns)(p, a, lda, mp, begin * kLanes, end - begin);
  }
}

// Rows of the activations the kernels read: whole register tiles (4; M itself up to 2), or row passes above 256.
constexpr std::int64_t kPass = 256;
std::int64_t padded_rows(std::int64_t m) {
  const std::int64_t tile = m <= 2 ? m : 4;
  return m <= kPass ? (m + tile - 1) / tile * tile : (m + kPass - 1) / kPass * kPass;
}

int thread_count(const Problem& p, std::int64_t blocks) {
  return static_cast<int>(std::min<std::int64_t>(cpu::thread_count(p.threads), blocks));
}

}  // namespace

void compute(Problem p) {
  if (p.m == 0 || p.n == 0) return;
  // The panel kernels read f32 weight scales; the GEMV and the reference read mxfp4's codes through their table, and
  // AVX3_DL's GEMV mxfp8's; elsewhere mxfp8's GEMV takes the f32 factors that fp8's has.
  bool gemv = HWY_DYNAMIC_DISPATCH(UsesGemv)(p);
  if (!gemv && p.kind == WeightKind::e4m3 && p.weight_scale_codes != nullptr) {
    p.expand_weight_scales();
    gemv = HWY_DYNAMIC_DISPATCH(UsesGemv)(p);
  }
  if (!gemv) p.expand_weight_scales();
  // bf16 and f32 products can round (or underflow), and huge weight scales can make a product overflow: then only a
  // real fma gives the definition's result.
  if (!HWY_DYNAMIC_DISPATCH(NativeFma)() && !p.products_exact()) return reference(p);
  const std::int64_t mp = padded_rows(p.m);
  const std::int64_t blocks = (p.n + kLanes - 1) / kLanes;
  const int threads = thread_count(p, blocks);
  const bool parallel = threads > 1 && static_cast<double>(p.m) * static_cast<double>(p.n) * p.k > kParallelMacs;
  if (gemv) return gemv_threads(p, blocks, threads, parallel);
  if (HWY_DYNAMIC_DISPATCH(UsesColumnLanes)(p)) return column_lane_threads(p, mp, blocks, threads, parallel);
  const auto lda = static_cast<std::size_t>((p.k + kLanes - 1) / kLanes * kLanes);
  // The problem's own rows serve when they need no padding (M a whole number of tiles or passes, K of vectors) and
  // are f32 or bf16 (act_quant's stay codes: the padded copy decodes them): the copy, made before the threads start,
  // was about 10% of a 2-thread call at M = 2048.
  std::vector<float> padded;
  if (mp != p.m || lda != static_cast<std::size_t>(p.k) || p.a_codes != nullptr) {
    padded = padded_activations(p, mp, lda);
  }
  const float* const a = padded.empty() ? p.a.data() : padded.data();
  if (mp <= kPass && parallel) return queued_columns(p, a, lda, mp, blocks, threads);
  fixed_columns(p, a, lda, mp, blocks, threads, parallel);
}

}  // namespace gemm
}  // namespace mf
#endif  // HWY_ONCE
