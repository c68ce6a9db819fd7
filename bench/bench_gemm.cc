// GEMM throughput: minifloat's bf16, fp8 (fp8-128x128 weights, act_quant activations), mxfp4 and nvfp4 GEMMs beside
// OpenBLAS sgemm (sgemv at M = 1) on the dequantized f32 weights and beside dequantize-then-sgemm, at N = K = 4096 and
// N x K = 7168 x 2048 for M in {1, 2, 4, 8, 16, 32, 128, 512, 2048}; plus this machine's FMA peak and memory read
// bandwidth, measured in the same run. Counters: GFLOP/s (2 M N K per call) and weight GB/s (weight bytes read per
// call). GemmStreamed/...: M = 1 to 16 again, each call on another copy of the weight, so that the weights come from
// memory. GemmIndependent/...: M = 1 as one single-thread call per thread at once: the threaded call's ceiling.
// GemmOutliers/...: the fp8 GEMV on weights with one outlier per 128 x 128 block (e4m3 subnormal codes).
// MF_GEMV_BF16_DOT=0 / 1 turns the e4m3 GEMV's bf16 dot product off / on where the CPU can run it (by default the
// loop faster on the CPU's maker runs: src/cpu/gemm_dispatch.h), to compare the loops; MF_GEMV_F32_FIELDS=0 / 1 the
// AVX2 loop's e4m3 codes through fp16 / into f32 fields.
// GemvSmall/...: M = 1 on one thread on about the Linear shapes of a small LLM (SmolLM2-135M: hidden 576, 640 here:
// whole 128 x 128 blocks; MLP 1536), weights in L2: where a decode step's per-call costs show.
// DotBf16Peak: AVX512-BF16's dot product beside FmaPeak. ReadRows/<threads>/<row bytes>: the read bandwidth's array
// read in the M = 1 GEMV's order (16 rows side by side).
// bench/gemm_report.py runs this with repetitions and prints medians and ratios (the command of each machine kind:
// BENCHMARKS.md#the-current-figures and the sections after it).
// The GEMM library compiles Highway's AVX3_DL target (src/cpu/gemm.cc): make it a name MF_BENCH_TARGET takes.
#define HWY_WANT_AVX3_DL
#include <benchmark/benchmark.h>
#include <hwy/targets.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "bench_target.h"
#include "cpu/gemm_dispatch.h"
#include "gemm_cases.h"

namespace {

using mf::bench::Way;

mf::bench::Operands& operands(std::int64_t m, std::int64_t n, std::int64_t k) {
  static std::unique_ptr<mf::bench::Operands> cached;  // one shape at a time: the largest take ~300 MiB
  if (!cached || cached->m != m || cached->n != n || cached->k != k) {
    cached.reset();
    cached = std::make_unique<mf::bench::Operands>(mf::bench::make_operands(m, n, k));
  }
  return *cached;
}

void BM_Gemm(benchmark::State& state, Way way, std::int64_t n, std::int64_t k, int threads) {
  const std::int64_t m = state.range(0);
  mf::bench::Operands& o = operands(m, n, k);
  mf::bench::set_threads(threads);
  for (auto _ : state) {
    mf::bench::run(o, way, threads);
    benchmark::ClobberMemory();
  }
  const double calls = static_cast<double>(state.iterations());
  state.counters["GFLOPs"] = benchmark::Counter(2.0 * m * n * k * calls / 1e9, benchmark::Counter::kIsRate);
  state.counters["wGBs"] =
      benchmark::Counter(mf::bench::weight_bytes(o, way) * calls / 1e9, benchmark::Counter::kIsRate);
}

// linear(): act_quant of the f32 activations and the GEMM, as an inference engine calls it per layer. Beside BM_Gemm
// (activations quantized once, outside the loop), the difference is what act_quant and the call cost.
void BM_Linear(benchmark::State& state, Way way, std::int64_t n, std::int64_t k, int threads) {
  const std::int64_t m = state.range(0);
  mf::bench::Operands& o = operands(m, n, k);
  mf::bench::set_threads(threads);
  mf::Weight w;
  w.quantized = way == Way::mf_fp8 ? &o.w_fp8 : way == Way::mf_mxfp8 ? &o.w_mxfp8 : &o.w_fp4;
  const std::int64_t shape[] = {m, k};
  mf::GemmOptions opt;
  opt.threads = threads;
  for (auto _ : state) {
    mf::linear(o.x.data(), shape, w, mf::GemmOut{o.c.data(), nullptr}, opt);
    benchmark::ClobberMemory();
  }
  const double calls = static_cast<double>(state.iterations());
  state.counters["GFLOPs"] = benchmark::Counter(2.0 * m * n * k * calls / 1e9, benchmark::Counter::kIsRate);
  state.counters["wGBs"] =
      benchmark::Counter(mf::bench::weight_bytes(o, way) * calls / 1e9, benchmark::Counter::kIsRate);
}

// Decode-shaped calls with the weights streamed from memory (WeightRing). BM_Gemm repeats one weight, which then sits
// in the last-level cache (260 MiB here) for every way.
void BM_GemmStreamed(benchmark::State& state, Way way, std::int64_t n, std::int64_t k, int threads) {
  const std::int64_t m = state.range(0);
  mf::bench::Operands& o = operands(m, n, k);
  mf::bench::set_threads(threads);
  mf::bench::WeightRing ring(o, way);
  for (auto _ : state) {
    ring.call([&](mf::bench::Operands& x) { mf::bench::run(x, way, threads); });
    benchmark::ClobberMemory();
  }
  const double calls = static_cast<double>(state.iterations());
  state.counters["GFLOPs"] = benchmark::Counter(2.0 * m * n * k * calls / 1e9, benchmark::Counter::kIsRate);
  state.counters["wGBs"] =
      benchmark::Counter(mf::bench::weight_bytes(o, way) * calls / 1e9, benchmark::Counter::kIsRate);
  state.counters["copies"] = static_cast<double>(ring.copies());
}

// M = 1 as independent single-thread calls, one per thread at once, each into its own output: what the kernels give
// on this machine with no synchronization between threads (no fork, no join, no shared columns), the ceiling for
// BM_Gemm's threaded call. Each thread makes kCalls calls per parallel region, so its start and end are a small
// share. GFLOP/s counts every thread's calls.
void BM_GemmIndependent(benchmark::State& state, Way way, std::int64_t n, std::int64_t k, int threads) {
  constexpr int kCalls = 8;
  const std::int64_t m = state.range(0);
  mf::bench::Operands& o = operands(m, n, k);
  mf::bench::set_threads(1);  // each call on one thread, OpenBLAS's too
  std::vector<std::vector<float>> out(static_cast<std::size_t>(threads),
                                      std::vector<float>(static_cast<std::size_t>(m * n)));
  for (auto _ : state) {
#pragma omp parallel num_threads(threads)
    for (int i = 0; i < kCalls; ++i) {
      mf::bench::run(o, way, 1, out[static_cast<std::size_t>(omp_get_thread_num())].data());
    }
    benchmark::ClobberMemory();
  }
  mf::bench::set_threads(threads);
  const double calls = static_cast<double>(state.iterations()) * kCalls * threads;
  state.counters["GFLOPs"] = benchmark::Counter(2.0 * m * n * k * calls / 1e9, benchmark::Counter::kIsRate);
  state.counters["wGBs"] =
      benchmark::Counter(mf::bench::weight_bytes(o, way) * calls / 1e9, benchmark::Counter::kIsRate);
}

// fp8_gemm at M = 1 on fp8-128x128 weights (normal, sigma 0.02) with one weight per 128 x 128 block set to
// state.range(0) sigma (0: none). Such an outlier raises its block's scale, and the block's smallest weights become
// e4m3 subnormal codes, which the fp8 GEMV decodes into f32 subnormals: exact, but each fma on one takes a microcode
// assist on x86. Counter "subnormal": their share of the codes, in percent.
void BM_GemmOutliers(benchmark::State& state, int threads) {
  const std::int64_t n = 4096, k = 4096, factor = state.range(0);
  std::mt19937 rng(1);
  std::normal_distribution<float> d(0.0f, 0.02f);
  std::vector<float> w(static_cast<std::size_t>(n * k)), x(static_cast<std::size_t>(k));
  for (float& v : w) v = d(rng);
  for (float& v : x) v = d(rng) * 50.0f;
  for (std::int64_t bn = 0; factor > 0 && bn < n; bn += 128) {
    for (std::int64_t bk = 0; bk < k; bk += 128) w[static_cast<std::size_t>((bn + 7) * k + bk + 5)] = 0.02f * factor;
  }
  const mf::QuantizedTensor wq =
      mf::quantize(w.data(), std::vector<std::int64_t>{n, k}, mf::scheme_named("fp8-128x128"));
  const mf::QuantizedTensor xq = mf::act_quant(x.data(), std::vector<std::int64_t>{1, k});
  std::int64_t subnormal = 0;
  for (const std::uint8_t c : wq.codes) subnormal += (c & 0x78) == 0 && (c & 0x07) != 0;
  std::vector<float> c(static_cast<std::size_t>(n));
  mf::GemmOptions opt;
  opt.threads = threads;
  mf::bench::set_threads(threads);
  for (auto _ : state) {
    mf::fp8_gemm(xq, wq, mf::GemmOut{c.data(), nullptr}, opt);
    benchmark::ClobberMemory();
  }
  state.counters["GFLOPs"] =
      benchmark::Counter(2.0 * n * k * static_cast<double>(state.iterations()) / 1e9, benchmark::Counter::kIsRate);
  state.counters["subnormal"] = 100.0 * static_cast<double>(subnormal) / static_cast<double>(wq.codes.size());
}

void BM_FmaPeak(benchmark::State& state) {
  mf::bench::let_openblas_threads_sleep();
  double g = 0;
  for (auto _ : state) g = mf::bench::fma_peak_gflops(static_cast<int>(state.range(0)));
  state.counters["GFLOPs"] = g;
}

void BM_DotBf16Peak(benchmark::State& state) {
  mf::bench::let_openblas_threads_sleep();
  double g = 0;
  for (auto _ : state) g = mf::bench::dot_bf16_peak_gflops(static_cast<int>(state.range(0)));
  state.counters["GFLOPs"] = g;
}

// ReadRows/<threads>/<row bytes>: 16 rows side by side (mf::bench::read_rows_gbs).
void BM_ReadRows(benchmark::State& state) {
  mf::bench::let_openblas_threads_sleep();
  double g = 0;
  for (auto _ : state) {
    g = mf::bench::read_rows_gbs(static_cast<int>(state.range(0)), 16, static_cast<std::size_t>(state.range(1)));
  }
  state.counters["GBs"] = g;
}

void BM_ReadBandwidth(benchmark::State& state) {
  mf::bench::let_openblas_threads_sleep();
  double g = 0;
  for (auto _ : state) g = mf::bench::read_bandwidth_gbs(static_cast<int>(state.range(0)));
  state.counters["GBs"] = g;
}

// "Family/way/NnxKk/threads:t", the names gemm_report.py parses.
std::string case_name(const char* family, Way w, std::int64_t n, std::int64_t k, int threads) {
  return std::string(family) + "/" + mf::bench::way_name(w) + "/N" + std::to_string(n) + "xK" + std::to_string(k) +
         "/threads:" + std::to_string(threads);
}
bool available(Way w) { return mf::bench::have_blas() || (w != Way::blas_f32 && w != Way::deq_fp8_blas); }

// Gemm, GemmStreamed, Linear and GemmIndependent at the two large shapes.
void register_large_shapes(int threads) {
  const std::pair<std::int64_t, std::int64_t> shapes[] = {{4096, 4096}, {7168, 2048}};
  // nvfp4: mxfp4's kernels with a scale table per 16 weights in the GEMV.
  // mxfp8: fp8_gemm on e4m3 1x32 ue8m0 weights, beside fp8-128x128 on the same shape.
  const Way all[] = {Way::mf_bf16,  Way::mf_fp8,   Way::mf_mxfp4,    Way::mf_nvfp4,
                     Way::mf_mxfp8, Way::blas_f32, Way::deq_fp8_blas};
  const Way direct[] = {Way::mf_bf16, Way::mf_fp8, Way::mf_mxfp8, Way::mf_mxfp4, Way::mf_nvfp4, Way::blas_f32};
  for (const auto& [n, k] : shapes) {
    for (const std::int64_t m : {1, 2, 4, 8, 16, 32, 128, 512, 2048}) {
      for (const Way w : all) {
        if (!available(w)) continue;
        // A call from M = 128 on lasts 10 ms to a second: 0.2 s timed two or three of them, too few on a shared VM.
        benchmark::RegisterBenchmark(case_name("Gemm", w, n, k, threads).c_str(), BM_Gemm, w, n, k, threads)
            ->Arg(m)
            ->UseRealTime()
            ->MinTime(m >= 128 ? 1.0 : 0.2)
            ->Unit(benchmark::kMillisecond);
      }
    }
  }
  for (const auto& [n, k] : shapes) {
    for (const std::int64_t m : {1, 2, 4, 8, 16}) {  // decode steps: one token, or a few sequences' at once
      for (const Way w : direct) {
        if (!available(w)) continue;
        benchmark::RegisterBenchmark(case_name("GemmStreamed", w, n, k, threads).c_str(), BM_GemmStreamed, w, n, k,
                                     threads)
            ->Arg(m)
            ->UseRealTime()
            ->MinTime(0.2)
            ->Unit(benchmark::kMillisecond);
      }
    }
  }
  for (const auto& [n, k] : shapes) {
    for (const Way w : {Way::mf_fp8, Way::mf_mxfp8, Way::mf_mxfp4}) {
      benchmark::RegisterBenchmark(case_name("Linear", w, n, k, threads).c_str(), BM_Linear, w, n, k, threads)
          ->Arg(1)
          ->Arg(8)
          ->UseRealTime()
          ->MinTime(0.2)
          ->Unit(benchmark::kMillisecond);
    }
  }
  for (const auto& [n, k] : shapes) {
    for (const Way w : direct) {
      if (!available(w)) continue;
      benchmark::RegisterBenchmark(case_name("GemmIndependent", w, n, k, threads).c_str(), BM_GemmIndependent, w, n, k,
                                   threads)
          ->Arg(1)
          ->UseRealTime()
          ->MinTime(0.2)
          ->Unit(benchmark::kMillisecond);
    }
  }
}

// GemvSmall (one thread, a small LLM's shapes) and GemmOutliers.
void register_decode_cases(int threads) {
  const std::pair<std::int64_t, std::int64_t> small[] = {{640, 640}, {1536, 640}, {640, 1536}};
  for (const auto& [n, k] : small) {
    for (const Way w : {Way::mf_bf16, Way::mf_fp8, Way::mf_mxfp8, Way::mf_mxfp4, Way::mf_nvfp4, Way::blas_f32}) {
      if (!available(w)) continue;
      benchmark::RegisterBenchmark(case_name("GemvSmall", w, n, k, 1).c_str(), BM_Gemm, w, n, k, 1)
          ->Arg(1)
          ->UseRealTime()
          ->MinTime(0.2)
          ->Unit(benchmark::kMicrosecond);
    }
  }
  for (const int t : {1, threads}) {
    const std::string name = "GemmOutliers/fp8/N4096xK4096/threads:" + std::to_string(t);
    benchmark::RegisterBenchmark(name.c_str(), BM_GemmOutliers, t)
        ->Arg(0)
        ->Arg(10)
        ->Arg(30)
        ->Arg(100)
        ->UseRealTime()
        ->MinTime(0.2)
        ->Unit(benchmark::kMillisecond);
    if (threads == 1) break;
  }
}

}  // namespace

int main(int argc, char** argv) {
  mf::bench::rerun_with_fitting_blas_kernels();  // before anything is printed or timed
  benchmark::Initialize(&argc, argv);
  if (!mf::bench::restrict_target("bench_gemm")) return 2;  // MF_BENCH_TARGET=AVX2: as an AVX2 CPU would
  if (mf::bench::have_blas()) benchmark::AddCustomContext("openblas_core", mf::bench::blas_core());
  // MF_GEMV_BF16_DOT=0 / 1: the e4m3 GEMV's table loop / bf16 dot product on a CPU that can run both;
  // MF_GEMV_F32_FIELDS=0 / 1: its AVX2 loop through fp16 / with f32 fields.
  const auto choose = [](const char* variable, void (*choose_loop)(mf::gemm::GemvChoice)) {
    const char* value = std::getenv(variable);
    if (value != nullptr && std::string(value) == "0") choose_loop(mf::gemm::GemvChoice::never);
    if (value != nullptr && std::string(value) == "1") choose_loop(mf::gemm::GemvChoice::always);
  };
  choose("MF_GEMV_BF16_DOT", mf::gemm::choose_gemv_e4m3_bf16_dot);
  choose("MF_GEMV_F32_FIELDS", mf::gemm::choose_gemv_e4m3_f32_fields);
  benchmark::AddCustomContext(
      "e4m3_gemv", std::string(mf::gemm::gemv_e4m3_decode()) + (mf::gemm::gemv_e4m3_bf16_dot() ? " + bf16 dot" : "") +
                       (mf::gemm::gemv_e4m3_f32_fields_available()
                            ? (mf::gemm::gemv_e4m3_f32_fields_chosen() ? " + f32 fields" : " + fp16")
                            : ""));
  const int threads = omp_get_max_threads();
  benchmark::RegisterBenchmark("FmaPeak", BM_FmaPeak)->Arg(threads)->Iterations(1)->UseRealTime();
  benchmark::RegisterBenchmark("ReadBandwidth", BM_ReadBandwidth)->Arg(threads)->Iterations(1)->UseRealTime();
  benchmark::RegisterBenchmark("DotBf16Peak", BM_DotBf16Peak)->Arg(threads)->Iterations(1)->UseRealTime();
  for (const std::int64_t row_bytes : {1024, 2048, 4096}) {  // mxfp4 at K = 2048 and 4096, fp8 at K = 4096
    benchmark::RegisterBenchmark("ReadRows", BM_ReadRows)->Args({threads, row_bytes})->Iterations(1)->UseRealTime();
  }
  register_large_shapes(threads);
  register_decode_cases(threads);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
}
