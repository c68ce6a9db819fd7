// Hadamard rotation throughput: mf::rotate (SIMD + OpenMP) and mf::ref::rotate, in place over 16 MiB of f32, for
// n in {16, 128, 1024, 4096}, on 1 and 2 threads. Bytes counted: 16 MiB read + 16 MiB written per call.
//
// Yardstick, measured in the same run: an in-place stream over the same 16 MiB (x = -x, the same traffic with no
// arithmetic to speak of) on the same number of threads; `of_stream` is the benchmark's GB/s over the stream's.
// 16 MiB may sit in the last-level cache (servers with hundreds of MiB of L3); the stream then measures that cache,
// still the right yardstick for the same data.
// The reference has no threads of its own; on 2 threads this benchmark hands each thread half the groups.
// Rotating in place again and again is fine: the rotation is orthogonal, so the values stay of the same size.
// Each benchmark runs 5 repetitions and reports mean, median, stddev and cv; quote the median rows.
#include <benchmark/benchmark.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

#include "minifloat/hadamard.h"

namespace {

constexpr std::size_t kBytes = std::size_t{16} << 20;
constexpr std::size_t kCount = kBytes / sizeof(float);
constexpr int kMaxThreads = 2;

std::vector<float>& data() {
  static std::vector<float> v = [] {
    std::vector<float> x(kCount);
    std::mt19937 rng(1);
    std::normal_distribution<float> dist(0.0f, 1.0f);
    for (float& f : x) f = dist(rng);
    return x;
  }();
  return v;
}

// x = -x over the buffer on `threads` threads: one read and one write per value, as rotate does.
void stream(float* x, int threads) {
#pragma omp parallel for num_threads(threads) schedule(static)
  for (std::size_t i = 0; i < kCount; ++i) x[i] = -x[i];
}

// Bytes per second of the stream on 1..kMaxThreads threads: the best of 9 timed passes after a warm-up (the best,
// not the median, so that a busy moment on the machine does not lower the yardstick).
std::vector<double> stream_bytes_per_second() {
  std::vector<double> result(kMaxThreads + 1);
  for (int threads = 1; threads <= kMaxThreads; ++threads) {
    std::vector<double> rates;
    stream(data().data(), threads);
    for (int rep = 0; rep < 9; ++rep) {
      const auto start = std::chrono::steady_clock::now();
      stream(data().data(), threads);
      const std::chrono::duration<double> s = std::chrono::steady_clock::now() - start;
      rates.push_back(2.0 * kBytes / s.count());
    }
    result[threads] = *std::max_element(rates.begin(), rates.end());
  }
  return result;
}

std::vector<double> g_stream;  // filled in main, before any benchmark runs

// GB/s through SetBytesProcessed, and of_stream = this benchmark's bytes per second over the stream's.
void report(benchmark::State& state, int threads, std::chrono::steady_clock::time_point start) {
  const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
  const double bytes = 2.0 * kBytes * static_cast<double>(state.iterations());
  state.SetBytesProcessed(static_cast<std::int64_t>(bytes));
  state.counters["of_stream"] = bytes / elapsed.count() / g_stream[threads];
}

// args: n, threads.
void bench_fast(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0)), threads = static_cast<int>(state.range(1));
  omp_set_num_threads(threads);
  float* x = data().data();
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    mf::rotate(x, kCount, n);
    benchmark::ClobberMemory();
  }
  report(state, threads, start);
}

void bench_ref(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0)), threads = static_cast<int>(state.range(1));
  const std::size_t half = kCount / 2;  // a multiple of every n
  float* x = data().data();
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    if (threads == 1) {
      mf::ref::rotate(x, kCount, n);
    } else {
#pragma omp parallel for num_threads(2)
      for (int t = 0; t < 2; ++t) mf::ref::rotate(x + t * half, half, n);
    }
    benchmark::ClobberMemory();
  }
  report(state, threads, start);
}

void bench_stream(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    stream(data().data(), threads);
    benchmark::ClobberMemory();
  }
  report(state, threads, start);
}

void args(benchmark::internal::Benchmark* b) {
  for (int threads = 1; threads <= kMaxThreads; ++threads) {
    for (int n : {16, 128, 1024, 4096}) b->Args({n, threads});
  }
  b->ArgNames({"n", "threads"})
      ->Repetitions(5)
      ->ReportAggregatesOnly(true)
      ->UseRealTime()
      ->Unit(benchmark::kMillisecond);
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  g_stream = stream_bytes_per_second();
  benchmark::RegisterBenchmark("rotate/fast", bench_fast)->Apply(args);
  benchmark::RegisterBenchmark("rotate/ref", bench_ref)->Apply(args);
  benchmark::RegisterBenchmark("stream", bench_stream)
      ->ArgName("threads")
      ->DenseRange(1, kMaxThreads)
      ->Repetitions(5)
      ->ReportAggregatesOnly(true)
      ->UseRealTime()
      ->Unit(benchmark::kMillisecond);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
