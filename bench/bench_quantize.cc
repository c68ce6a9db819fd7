// Block quantization throughput: every scheme, f32 and bf16 input, 1 and 2 threads, against this machine's memcpy
// measured in the same run. Bytes per second count bytes read plus bytes written. bench/quantize_report.py runs
// this with repetitions and prints medians and the ratios to memcpy (the command:
// BENCHMARKS.md#sapphire-rapids-class-xeon-avx-512).
//
// The machine is shared and its speed drifts by 2x between runs a minute apart, so every iteration also times a
// single-thread memcpy of the input's size right before the kernel: the counter `vs_memcpy` is the kernel's GB/s
// over that interleaved memcpy's GB/s, per thread (`per_thread_vs_memcpy`), immune to the drift.
#include <benchmark/benchmark.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "bench_target.h"
#include "read_loops.h"
#include "minifloat/codec.h"
#include "minifloat/gemm.h"
#include "minifloat/quantize.h"

namespace {

// 2048 x 4096 = 8 Mi values: 32 MiB of f32, past the L2 caches but inside a large L3. MF_BENCH_ROWS=32768 makes it
// 512 MiB, past any L3, so that memcpy and the kernels both stream from DRAM.
const std::int64_t kRows = [] {
  const char* rows = std::getenv("MF_BENCH_ROWS");
  return rows ? std::max<std::int64_t>(1, std::atoll(rows)) : 2048;
}();
constexpr std::int64_t kCols = 4096;
const std::int64_t kCount = kRows * kCols;

const std::vector<float>& input_f32() {
  static const std::vector<float> x = [] {
    std::vector<float> v(kCount);
    std::mt19937 rng(42);
    std::normal_distribution<float> d(0.0f, 1.0f);
    for (auto& e : v) e = d(rng);
    return v;
  }();
  return x;
}

// input_f32's values at a 64-byte boundary, as a framework's tensors are allocated: a large std::vector's data sits
// 16 bytes past a page boundary, so every 64-byte load of it spans two cache lines (act_quant 5-8% slower there, a
// read loop of 512-bit loads about half as fast in L2).
const float* aligned_input_f32() {
  static std::vector<float> storage(kCount + 16);
  static const float* const x = [] {
    float* p = storage.data() + (64 - reinterpret_cast<std::uintptr_t>(storage.data()) % 64) % 64 / sizeof(float);
    std::copy(input_f32().begin(), input_f32().end(), p);
    return p;
  }();
  return x;
}

const std::vector<std::uint16_t>& input_bf16() {
  static const std::vector<std::uint16_t> x = [] {
    std::vector<std::uint16_t> v(kCount);
    for (std::int64_t i = 0; i < kCount; ++i) v[i] = static_cast<std::uint16_t>(mf::encode(mf::bf16, input_f32()[i]));
    return v;
  }();
  return x;
}

using Clock = std::chrono::steady_clock;

// This thread's CPU time in seconds: on a loaded machine, a one-thread kernel's own cost without the time it waited
// for a core (counter `cpu_us`, per iteration; with 2 threads it counts the calling thread only).
double thread_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

// One single-thread memcpy of the f32 input's size (read + write), timed; buffers kept between calls.
double memcpy_seconds() {
  static std::vector<char> src(kCount * sizeof(float), 1), dst(kCount * sizeof(float), 0);
  const auto t0 = Clock::now();
  std::memcpy(dst.data(), src.data(), src.size());
  benchmark::ClobberMemory();
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Runs kernel() once per iteration with a memcpy timed beside it; the iteration's time is the kernel's alone.
template <class Kernel>
void timed_beside_memcpy(benchmark::State& state, std::size_t kernel_bytes, int threads, const Kernel& kernel) {
  double copy = 0, work = 0, cpu = 0;
  for (auto _ : state) {
    copy += memcpy_seconds();
    const double c0 = thread_cpu_seconds();
    const auto t0 = Clock::now();
    kernel();
    const double t = std::chrono::duration<double>(Clock::now() - t0).count();
    cpu += thread_cpu_seconds() - c0;
    work += t;
    state.SetIterationTime(t);
  }
  state.counters["cpu_us"] = 1e6 * cpu / static_cast<double>(state.iterations());
  const double copy_gbps = 2.0 * kCount * sizeof(float) * static_cast<double>(state.iterations()) / copy / 1e9;
  const double kernel_gbps = static_cast<double>(kernel_bytes) * static_cast<double>(state.iterations()) / work / 1e9;
  state.counters["memcpy_GBps"] = copy_gbps;
  state.counters["vs_memcpy"] = kernel_gbps / copy_gbps;
  state.counters["per_thread_vs_memcpy"] = kernel_gbps / copy_gbps / threads;
}

void BM_Memcpy(benchmark::State& state) {
  const std::size_t bytes = kCount * sizeof(float);
  std::vector<char> src(bytes, 1), dst(bytes, 0);
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), bytes);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * 2 * bytes));
}

// One plain read of the f32 input (a wrapping sum of its bits: the compiler vectorizes it even for the SSE2 baseline
// this file is built for; no prefetch hints): this machine's
// streaming read rate in the same run, the floor under any pass that reads the input, such as a two-level scheme's
// amax pass. Split into contiguous per-thread ranges like the quantize kernels' rows.
void BM_ReadInput(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  const auto* bits = reinterpret_cast<const std::uint32_t*>(input_f32().data());
  std::uint32_t result = 0;
  timed_beside_memcpy(state, kCount * sizeof(float), threads, [&] {
    std::uint32_t sum = 0;
#pragma omp parallel for num_threads(threads) reduction(+ : sum) schedule(static)
    for (std::int64_t i = 0; i < kCount; ++i) sum += bits[i];
    result = sum;
    benchmark::DoNotOptimize(result);
  });
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * kCount * sizeof(float)));
}

// given_amax: a two-level scheme told the tensor's amax (QuantizeOptions::tensor_amax), as an engine with delayed
// scaling or calibration does, instead of finding it in a first pass.
void BM_Quantize(benchmark::State& state, const std::string& scheme_name, bool bf16_input, bool given_amax) {
  const mf::Scheme scheme = mf::scheme_named(scheme_name);
  mf::QuantizeOptions o;
  o.threads = static_cast<int>(state.range(0));
  if (given_amax) {
    for (const float v : input_f32()) o.tensor_amax = std::max(o.tensor_amax, std::abs(v));
  }
  const std::vector<std::int64_t> shape{kRows, kCols};
  // One output reused across iterations, as an engine reuses its buffers: page faults are not quantization.
  mf::QuantizedTensor q;
  const auto run = [&] {
    if (bf16_input) {
      mf::quantize(input_bf16().data(), mf::InputType::bf16, shape, scheme, o, q);
    } else {
      mf::quantize(input_f32().data(), shape, scheme, o, q);
    }
    benchmark::DoNotOptimize(q.codes.data());
  };
  run();  // sizes q, so the bytes are known before timing
  const std::size_t out_bytes = q.nbytes();
  const std::size_t in_bytes = kCount * (bf16_input ? 2 : 4);
  timed_beside_memcpy(state, in_bytes + out_bytes, o.threads, run);
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * (in_bytes + out_bytes)));
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * kCount));
}

void BM_Dequantize(benchmark::State& state, const std::string& scheme_name) {
  const mf::Scheme scheme = mf::scheme_named(scheme_name);
  const std::vector<std::int64_t> shape{kRows, kCols};
  const mf::QuantizedTensor q = mf::quantize(input_f32().data(), shape, scheme);
  // 64-byte aligned, as torch's and most engines' allocators give (malloc's large blocks sit 16 bytes past a page).
  const std::unique_ptr<float, decltype(&std::free)> out(
      static_cast<float*>(std::aligned_alloc(64, kCount * sizeof(float))), &std::free);
  std::memset(out.get(), 0, kCount * sizeof(float));  // page faults before timing, not in the first iteration
  const int threads = static_cast<int>(state.range(0));
  timed_beside_memcpy(state, q.nbytes() + kCount * sizeof(float), threads, [&] {
    mf::dequantize(q, out.get(), threads);
    benchmark::ClobberMemory();
  });
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * (q.nbytes() + kCount * sizeof(float))));
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * kCount));
}

// act_quant (per-token e4m3 1 x 128, ue8m0 scales: what linear() runs on its activations) on M tokens of 4096
// values, each iteration beside a read-only pass over the same input (four 64-bit XOR chains, as bench_bulk's
// ReadOnly; the input then sits in the same cache level for both): `vs_read_only` is act_quant's input bytes per
// second over the read-only loop's, both on `threads` threads; `cpu_vs_read_only` the same in the calling thread's
// CPU time, steadier on a loaded machine (one thread only); `vs_wide_read` the same against a read loop of the widest
// loads (read_loops.h), which the scalar loop's own instructions hold to about half of what L1 and L2 deliver.
// ActQuant/M:.../threads:1/K:...: the same on rows of K values, a small or large LLM's hidden sizes (640, 1024,
// 7168: rows that are not a whole number of 16-block groups).
void BM_ActQuant(benchmark::State& state) {
  const std::int64_t m = state.range(0), cols = state.range(2), n = m * cols;
  const int threads = static_cast<int>(state.range(1));
  const float* x = aligned_input_f32();
  const auto* u = reinterpret_cast<const std::uint64_t*>(x);
  const std::vector<std::int64_t> shape{m, cols};
  mf::QuantizedTensor q;
  mf::act_quant(x, shape, mf::ActScale::ue8m0, threads, q);  // sizes q before timing
  double read = 0, wide = 0, work = 0, cpu = 0, read_cpu = 0;
  for (auto _ : state) {
    const double r0 = thread_cpu_seconds();
    auto t0 = Clock::now();
    std::uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
#pragma omp parallel for num_threads(threads) reduction(^ : s0, s1, s2, s3) schedule(static)
    for (std::int64_t i = 0; i < n / 2; i += 4) s0 ^= u[i], s1 ^= u[i + 1], s2 ^= u[i + 2], s3 ^= u[i + 3];
    benchmark::DoNotOptimize(s0 ^ s1 ^ s2 ^ s3);
    read += std::chrono::duration<double>(Clock::now() - t0).count();
    read_cpu += thread_cpu_seconds() - r0;
    t0 = Clock::now();
    std::uint64_t w = 0;
#pragma omp parallel num_threads(threads) reduction(^ : w)
    {  // the same input in 32-word chunks per thread, read with the widest loads
      const std::int64_t chunks = n / 64, t = omp_get_thread_num(), count = omp_get_num_threads();
      const std::int64_t begin = chunks * t / count * 32, end = chunks * (t + 1) / count * 32;
      w ^= mf::bench::xor_words(u + begin, static_cast<std::size_t>(end - begin));
    }
    benchmark::DoNotOptimize(w);
    wide += std::chrono::duration<double>(Clock::now() - t0).count();
    const double c0 = thread_cpu_seconds();
    t0 = Clock::now();
    mf::act_quant(x, shape, mf::ActScale::ue8m0, threads, q);
    benchmark::DoNotOptimize(q.codes.data());
    const double t = std::chrono::duration<double>(Clock::now() - t0).count();
    cpu += thread_cpu_seconds() - c0;
    work += t;
    state.SetIterationTime(t);
  }
  state.counters["vs_read_only"] = read / work;
  state.counters["vs_wide_read"] = wide / work;  // against 512-bit (or 256-bit) loads: the cache's or memory's limit
  state.counters["cpu_vs_read_only"] = read_cpu / cpu;  // the same ratio in this thread's CPU time (1 thread)
  state.counters["cpu_us"] = 1e6 * cpu / static_cast<double>(state.iterations());
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * n * sizeof(float)));
}

const int kRegistered = [] {
  benchmark::RegisterBenchmark("Memcpy", BM_Memcpy)->UseRealTime()->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("ReadInput/f32", BM_ReadInput)
      ->Arg(1)
      ->Arg(2)
      ->ArgName("threads")
      ->UseManualTime()
      ->Unit(benchmark::kMillisecond);
  for (const std::string& s : mf::scheme_names()) {
    for (const bool bf16 : {false, true}) {
      benchmark::RegisterBenchmark(("Quantize/" + s + (bf16 ? "/bf16" : "/f32")).c_str(), BM_Quantize, s, bf16, false)
          ->Arg(1)
          ->Arg(2)
          ->ArgName("threads")
          ->UseManualTime()
          ->Unit(benchmark::kMillisecond);
    }
    if (mf::scheme_named(s).tensor_scale) {
      benchmark::RegisterBenchmark(("Quantize/" + s + "/f32-given-amax").c_str(), BM_Quantize, s, false, true)
          ->Arg(1)
          ->Arg(2)
          ->ArgName("threads")
          ->UseManualTime()
          ->Unit(benchmark::kMillisecond);
    }
    benchmark::RegisterBenchmark(("Dequantize/" + s).c_str(), BM_Dequantize, s)
        ->Arg(1)
        ->Arg(2)
        ->ArgName("threads")
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond);
  }
  benchmark::RegisterBenchmark("ActQuant", BM_ActQuant)
      ->ArgsProduct({{1, 8, 64, 512, 2048}, {1, 2}, {kCols}})
      ->ArgNames({"M", "threads", "K"})
      ->UseManualTime()
      ->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("ActQuant", BM_ActQuant)
      ->ArgsProduct({{1, 64}, {1}, {640, 1024, 7168}})
      ->ArgNames({"M", "threads", "K"})
      ->UseManualTime()
      ->Unit(benchmark::kMicrosecond);
  return 0;
}();

}  // namespace

int main(int argc, char** argv) { return mf::bench::run_benchmarks(argc, argv, "bench_quantize"); }
