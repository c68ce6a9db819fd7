// A decode step's small calls: mf::linear at M = 1 on SmolLM2-135M's Linear shapes (hidden 576, zero-padded to K = 640
// as minifloat.torch.Linear pads it; MLP 1536; k_proj / v_proj 192 rows), weights in L2, against the time to read
// the same weight bytes (codes and scales) from L2 with wide loads on one thread, the two timed in turns in the same
// case. threads:1 on the thread's CPU clock (a loaded machine's waits for a core left out), threads:2 on the wall
// clock (the second thread's work counts only there). Counters, medians of 31 turns: us (microseconds per call),
// l2_us (per read of the weight's bytes), vs_l2 (their ratio, issue 46's target is 2: what a call costs beyond reading
// its weights once, the kernels' arithmetic and fixed costs), act_quant_us and gemm_us (the call's two parts alone:
// act_quant of the row into a kept tensor, the GEMM on its result), GFLOPs (of the unpadded shape, per second of us).
//   build/bench/bench_linear_small --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
// prints the medians; bench/gemm_report.py does not parse it.
#include <benchmark/benchmark.h>

#include <time.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "minifloat/gemm.h"
#include "minifloat/quantize.h"
#include "read_loops.h"

namespace {

struct Case {
  mf::QuantizedTensor w;
  std::vector<float> x, y;
  std::vector<std::uint64_t> bytes;  // a copy of the weight's codes and scales, for the L2 read
};

Case make_case(const std::string& scheme, std::int64_t n, std::int64_t k, std::int64_t live) {
  std::mt19937 rng(1);
  std::normal_distribution<float> d(0.0f, 1.0f);
  Case c;
  std::vector<float> w(static_cast<std::size_t>(n * k), 0.0f);
  for (std::int64_t r = 0; r < n; ++r) {
    for (std::int64_t i = 0; i < live; ++i) w[static_cast<std::size_t>(r * k + i)] = d(rng) * 0.02f;
  }
  mf::QuantizeOptions o;
  o.pad = true;  // N = 192 and 576 end inside a 128 x 128 block, as minifloat.torch.Linear quantizes them
  c.w = mf::quantize(w.data(), std::vector<std::int64_t>{n, k}, mf::scheme_named(scheme), o);
  c.x.assign(static_cast<std::size_t>(k), 0.0f);
  for (std::int64_t i = 0; i < live; ++i) c.x[static_cast<std::size_t>(i)] = d(rng);
  c.y.resize(static_cast<std::size_t>(n));
  const std::size_t total = c.w.codes.size() + c.w.scales.size();
  c.bytes.assign((total + 255) / 256 * 32, 0);  // whole steps of xor_words (32 words)
  std::memcpy(c.bytes.data(), c.w.codes.data(), c.w.codes.size());
  std::memcpy(reinterpret_cast<std::uint8_t*>(c.bytes.data()) + c.w.codes.size(), c.w.scales.data(), c.w.scales.size());
  return c;
}

// This thread's CPU time in microseconds: the machine these run on is shared, and a thread's CPU time leaves out the
// time it waited for a core (the calls below the work threshold run on the calling thread alone); or the wall clock.
double now_us(bool cpu) {
  timespec t{};
  clock_gettime(cpu ? CLOCK_THREAD_CPUTIME_ID : CLOCK_MONOTONIC, &t);
  return static_cast<double>(t.tv_sec) * 1e6 + static_cast<double>(t.tv_nsec) * 1e-3;
}

double median(std::vector<double> v) {
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

void BM_LinearSmall(benchmark::State& state, std::string scheme, std::int64_t n, std::int64_t k, std::int64_t live,
                    int threads) {
  Case c = make_case(scheme, n, k, live);
  mf::Weight w;
  w.quantized = &c.w;
  const std::int64_t shape[] = {1, k};
  mf::GemmOptions o;
  o.threads = threads;
  const auto call = [&] { mf::linear(c.x.data(), shape, w, mf::GemmOut{c.y.data(), nullptr}, o); };
  // The call's parts, as linear() makes them (ue8m0 activation scales unless the weight's are f32).
  const bool fp4 = c.w.scheme.element.format == &mf::e2m1;
  const mf::ActScale act = !fp4 && *c.w.scheme.scale_format == mf::f32 ? mf::ActScale::f32 : mf::ActScale::ue8m0;
  mf::QuantizedTensor a;
  const auto quantize = [&] { mf::act_quant(c.x.data(), shape, act, threads, a); };
  quantize();
  const auto gemm = [&] {
    const mf::GemmOut out{c.y.data(), nullptr};
    fp4 ? mf::fp4_gemm(a, c.w, out, o) : mf::fp8_gemm(a, c.w, out, o);
  };
  for (auto _ : state) {
    call();
    benchmark::ClobberMemory();
  }
  // In turns: 20 calls, 20 reads of the weight's bytes (in L2 after the calls), 20 of each part.
  const bool cpu = threads == 1;
  std::uint64_t sink = 0;
  const auto timed = [&](const auto& f) {
    const double t0 = now_us(cpu);
    for (int i = 0; i < 20; ++i) f();
    return (now_us(cpu) - t0) / 20;
  };
  std::vector<double> calls, reads, ratios, quantizes, gemms;
  for (int round = 0; round < 31; ++round) {
    const double t_call = timed(call);
    const double t_read = timed([&] { sink ^= mf::bench::xor_words(c.bytes.data(), c.bytes.size()); });
    calls.push_back(t_call), reads.push_back(t_read), ratios.push_back(t_call / t_read);
    quantizes.push_back(timed(quantize));
    gemms.push_back(timed(gemm));
  }
  benchmark::DoNotOptimize(sink);
  state.counters["us"] = median(calls);
  state.counters["l2_us"] = median(reads);
  state.counters["vs_l2"] = median(ratios);
  state.counters["act_quant_us"] = median(quantizes);
  state.counters["gemm_us"] = median(gemms);
  state.counters["GFLOPs"] = 2.0 * static_cast<double>(n * live) / median(calls) / 1e3;
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  // SmolLM2-135M: q_proj / o_proj [576, 576], k_proj / v_proj [192, 576], gate / up [1536, 576] (K padded to 640),
  // down_proj [576, 1536].
  const struct {
    std::int64_t n, k, live;
  } shapes[] = {{192, 640, 576}, {576, 640, 576}, {1536, 640, 576}, {576, 1536, 1536}};
  for (const int threads : {1, 2}) {
    for (const char* scheme : {"fp8-128x128", "mxfp8", "mxfp4"}) {
      for (const auto& s : shapes) {
        const std::string name = std::string("LinearSmall/") + scheme + "/N" + std::to_string(s.n) + "xK" +
                                 std::to_string(s.live) + "/threads:" + std::to_string(threads);
        benchmark::RegisterBenchmark(name.c_str(), BM_LinearSmall, scheme, s.n, s.k, s.live, threads)
            ->UseRealTime()
            ->MinTime(0.2)
            ->Unit(benchmark::kMicrosecond);
      }
    }
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
}
