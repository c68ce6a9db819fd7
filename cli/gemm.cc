// minifloat gemm-error: how far fp8_gemm, fp4_gemm and the bf16 GEMM land from an f64 product, on random and
// outlier-heavy inputs. minifloat gemm-bench: the GEMM benchmark table on this machine (its figures:
// BENCHMARKS.md#the-current-figures).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <fmt/format.h>
#include <random>
#include <string>
#include <vector>

#include "common.h"
#include "../bench/gemm_cases.h"
#include "../src/cpu/thread_count.h"
#include "minifloat/codec.h"
#include "minifloat/gemm.h"
#include "minifloat/quantize.h"

namespace mf::cli {
namespace {

// ---- gemm-error ----

struct ErrorArgs {
  std::int64_t m = 32, n = 512, k = 2048;
  unsigned long long seed = 1;
};

// Normal values, or normal values of which 1% are 100 times larger (activation outliers).
std::vector<float> draw(std::int64_t count, bool outliers, std::mt19937_64& rng) {
  std::normal_distribution<double> d(0, 1);
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<float> x(static_cast<std::size_t>(count));
  for (float& v : x) v = static_cast<float>(d(rng) * (outliers && u(rng) < 0.01 ? 100.0 : 1.0));
  return x;
}

std::vector<double> f64_product(const std::vector<double>& a, const std::vector<double>& w, std::int64_t m,
                                std::int64_t n, std::int64_t k) {
  std::vector<double> c(static_cast<std::size_t>(m * n), 0.0);
  for (std::int64_t i = 0; i < m; ++i) {
    for (std::int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (std::int64_t l = 0; l < k; ++l) s += a[i * k + l] * w[j * k + l];
      c[i * n + j] = s;
    }
  }
  return c;
}

// ||c - e||_2 / ||e||_2
double relative_error(const std::vector<float>& c, const std::vector<double>& e) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < c.size(); ++i) {
    num += (c[i] - e[i]) * (c[i] - e[i]);
    den += e[i] * e[i];
  }
  return std::sqrt(num / den);
}

std::vector<double> dequantized(const QuantizedTensor& q) {
  std::vector<float> f(static_cast<std::size_t>(q.count()));
  dequantize(q, f.data());
  return {f.begin(), f.end()};
}

std::vector<double> widened(const std::vector<std::uint16_t>& b) {
  std::vector<double> d(b.size());
  for (std::size_t i = 0; i < b.size(); ++i) d[i] = decode(bf16, b[i]);
  return d;
}

// One table row: total error against f64 x W^T, and the accumulation's own share against f64 of the dequantized
// operands.
std::string error_row(const std::string& input, const ErrorArgs& a, bool outliers, std::mt19937_64& rng) {
  const std::vector<float> x = draw(a.m * a.k, outliers, rng), w = draw(a.n * a.k, false, rng);
  const std::vector<double> exact = f64_product({x.begin(), x.end()}, {w.begin(), w.end()}, a.m, a.n, a.k);
  const std::vector<std::int64_t> xs{a.m, a.k}, ws{a.n, a.k};
  const QuantizedTensor xq = act_quant(x.data(), xs);
  std::vector<float> c(static_cast<std::size_t>(a.m * a.n));
  std::string row = fmt::format("| {} |", input);
  for (const char* scheme : {"fp8-128x128", "fp8-32x32", "mxfp4"}) {
    const QuantizedTensor wq = quantize(w.data(), ws, scheme_named(scheme));
    scheme == std::string("mxfp4") ? fp4_gemm(xq, wq, GemmOut{c.data(), nullptr})
                                   : fp8_gemm(xq, wq, GemmOut{c.data(), nullptr});
    const double accumulation = relative_error(c, f64_product(dequantized(xq), dequantized(wq), a.m, a.n, a.k));
    row += fmt::format(" {:.3e} ({:.1e}) |", relative_error(c, exact), accumulation);
  }
  std::vector<std::uint16_t> xb(x.size()), wb(w.size());
  for (std::size_t i = 0; i < x.size(); ++i) xb[i] = static_cast<std::uint16_t>(encode(bf16, x[i]));
  for (std::size_t i = 0; i < w.size(); ++i) wb[i] = static_cast<std::uint16_t>(encode(bf16, w[i]));
  bf16_gemm(xb.data(), wb.data(), a.m, a.n, a.k, GemmOut{c.data(), nullptr});
  const double accumulation = relative_error(c, f64_product(widened(xb), widened(wb), a.m, a.n, a.k));
  return row + fmt::format(" {:.3e} ({:.1e}) |\n", relative_error(c, exact), accumulation);
}

std::string gemm_error_text(const ErrorArgs& a) {
  if (a.m < 1 || a.n < 1 || a.k < 128 || a.k % 128 != 0) {
    throw UsageError(
        fmt::format("--m and --n must be positive and --k a positive multiple of 128 (got {}, {}, {})", a.m, a.n, a.k));
  }
  std::mt19937_64 rng(a.seed);
  std::string s = fmt::format(
      "Relative error ||C - C64|| / ||C64|| of C = x W^T, M = {}, N = {}, K = {}: x from act_quant (fp8-1x128, "
      "ue8m0), W normal;\nin parentheses the accumulation's own share (against f64 of the dequantized operands).\n\n",
      a.m, a.n, a.k);
  s += "| input x | fp8_gemm, W fp8-128x128 | fp8_gemm, W fp8-32x32 | fp4_gemm, W mxfp4 | bf16 GEMM |\n";
  s += "|---|---|---|---|---|\n";
  s += error_row("normal", a, false, rng);
  s += error_row("normal, 1% outliers x100", a, true, rng);
  return s;
}

// ---- gemm-bench ----

struct BenchArgs {
  int threads = 0;
  int reps = 5;
  std::string ms = "1,8,32,128,512,2048";
  bool quick = false;
};

// The median time of `reps` calls of one way, after a warm-up call (page faults, thread start); with `ring`, each
// call on the next copy of the weight (weights streamed from memory).
double median_ms(mf::bench::Operands& o, mf::bench::Way w, int threads, int reps,
                 mf::bench::WeightRing* ring = nullptr) {
  const auto call = [&] {
    if (ring)
      ring->call([&](mf::bench::Operands& x) { mf::bench::run(x, w, threads); });
    else
      mf::bench::run(o, w, threads);
  };
  std::vector<double> t;
  call();
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    call();
    t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

std::vector<std::int64_t> m_list(const std::string& text) {
  std::vector<std::int64_t> ms;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    try {
      ms.push_back(std::stoll(text.substr(start, comma - start)));
    } catch (const std::exception&) {
      throw UsageError(fmt::format("--m '{}' is not a list of row counts like 1,8,512", text));
    }
    if (ms.back() < 1) throw UsageError(fmt::format("--m '{}': row counts must be positive", text));
    start = comma + 1;
  }
  return ms;
}

// The run's header: threads, repetitions, this machine's FMA peak and read bandwidth, the OpenBLAS kernels.
void print_bench_header(int threads, int reps) {
  fmt::print("threads: {} (minifloat and OpenBLAS alike); median of {} runs\n", threads, reps);
  fmt::print("FMA peak: {:.1f} GFLOP/s; memory read bandwidth: {:.1f} GB/s\n\n", mf::bench::fma_peak_gflops(threads),
             mf::bench::read_bandwidth_gbs(threads));
  if (!mf::bench::have_blas()) fmt::print("(built without OpenBLAS: its columns are empty)\n\n");
  if (mf::bench::have_blas()) {
    const char* chosen = std::getenv("OPENBLAS_CORETYPE");
    fmt::print("OpenBLAS kernels: {}{}\n\n", mf::bench::blas_core(),
               chosen ? fmt::format(" (OPENBLAS_CORETYPE={})", chosen) : std::string());
  }
}

// One table row: every way's GFLOP/s at m x n x k, the ratios to OpenBLAS and the weight GB/s. streamed: each call
// on another copy of the weight, dequant+OpenBLAS left out.
void print_bench_row(std::int64_t m, std::int64_t n, std::int64_t k, bool streamed, int threads, int reps) {
  using mf::bench::Way;
  mf::bench::Operands o = mf::bench::make_operands(m, n, k);
  const double flop = 2.0 * static_cast<double>(m * n * k);
  double gflops[5] = {}, ms_of[5] = {};
  for (const Way w : {Way::mf_bf16, Way::mf_fp8, Way::mf_mxfp4, Way::blas_f32, Way::deq_fp8_blas}) {
    const int i = static_cast<int>(w);
    if ((!mf::bench::have_blas() && i >= 3) || (streamed && w == Way::deq_fp8_blas)) continue;
    std::optional<mf::bench::WeightRing> ring;
    if (streamed) ring.emplace(o, w);
    ms_of[i] = median_ms(o, w, threads, reps, ring ? &*ring : nullptr);
    gflops[i] = flop / ms_of[i] / 1e6;
  }
  const auto ratio = [&](int i) { return gflops[3] > 0 ? fmt::format("{:.2f}", gflops[i] / gflops[3]) : "-"; };
  const auto cell = [&](int i) { return gflops[i] > 0 ? fmt::format("{:.1f}", gflops[i]) : "-"; };
  fmt::print("| {}x{} | {} | {} | {} | {} | {} | {} | {} | {} | {:.1f} | {:.1f} |\n", n, k, m, cell(0), cell(1),
             cell(2), cell(3), cell(4), ratio(1), ratio(2), mf::bench::weight_bytes(o, Way::mf_fp8) / ms_of[1] / 1e6,
             mf::bench::weight_bytes(o, Way::mf_mxfp4) / ms_of[2] / 1e6);
  std::fflush(stdout);
}

void gemm_bench(const BenchArgs& a) {
  mf::bench::rerun_with_fitting_blas_kernels();  // before anything is printed (the header names the kernels)
  const int threads = mf::cpu::thread_count(a.threads);
  if (a.reps < 1) throw UsageError("--reps must be positive");
  const std::vector<std::int64_t> ms = m_list(a.quick ? "1,8,128" : a.ms);
  mf::bench::set_threads(threads);
  print_bench_header(threads, a.reps);
  // streamed: decode shapes only (M <= 16), each call on another copy of the weight; dequant+OpenBLAS is left out.
  for (const bool streamed : {false, true}) {
    if (streamed && std::none_of(ms.begin(), ms.end(), [](std::int64_t m) { return m <= 16; })) break;
    fmt::print(
        "{}| N x K | M | bf16 | fp8 | mxfp4 | OpenBLAS f32 | dequant+OpenBLAS | fp8 / OpenBLAS "
        "| mxfp4 / OpenBLAS | fp8 weight GB/s | mxfp4 weight GB/s |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|\n",
        streamed ? "\nWeights streamed from memory (each call on another copy of the weight, twice the "
                   "last-level cache in all), as a decode step over a model larger than the cache reads "
                   "them:\n\n"
                 : "Weights as the loop repeats them (in the last-level cache, where they fit):\n\n");
    for (const auto& [n, k] : {std::pair<std::int64_t, std::int64_t>{4096, 4096}, {7168, 2048}}) {
      for (const std::int64_t m : ms) {
        if (!(streamed && m > 16)) print_bench_row(m, n, k, streamed, threads, a.reps);
      }
    }
  }
  fmt::print(
      "\nGFLOP/s = 2 M N K / time. OpenBLAS: sgemv at M = 1, sgemm otherwise, on the dequantized fp8 weights "
      "in f32.\nfp8: fp8_gemm with fp8-128x128 weights; mxfp4: fp4_gemm; both take act_quant'ed activations "
      "(act_quant not timed).\n");
}

}  // namespace

std::string gemm_tour_text() {
  ErrorArgs a;
  a.m = 4;
  a.n = 256;
  a.k = 1024;
  std::mt19937_64 rng(7);
  std::string s =
      "Inference multiplies activations x by weights W (y = x W^T) with both in 8 bits or fewer. DeepSeek's recipe:\n"
      "act_quant gives each token's 128 values one E4M3 block and one UE8M0 scale; W is E4M3 in 128 x 128 (or\n"
      "32 x 32) blocks, or MXFP4. Each 128-long slice of K is summed in f32 (16 partial sums, then a fixed tree),\n"
      "scaled by the two block scales and added to the total: DeepGEMM's two-level accumulation. Relative error\n"
      "against f64 for M = 4, N = 256, K = 1024 (in parentheses the f32 summation's own share):\n\n";
  s += "| input x | fp8, W 128x128 | fp8, W 32x32 | fp4, W mxfp4 | bf16 |\n|---|---|---|---|---|\n";
  s += error_row("normal", a, false, rng);
  return s + "\n(try: minifloat gemm-error; minifloat gemm-bench --quick)\n\n";
}

void register_gemm(CLI::App& app) {
  auto* err = app.add_subcommand("gemm-error", "Relative error of fp8_gemm, fp4_gemm and bf16 GEMM against f64");
  auto e = std::make_shared<ErrorArgs>();
  err->add_option("--m", e->m, "Activation rows M")->capture_default_str();
  err->add_option("--n", e->n, "Weight rows N")->capture_default_str();
  err->add_option("--k", e->k, "Inner dimension K (a multiple of 128)")->capture_default_str();
  err->add_option("--seed", e->seed, "Random seed")->capture_default_str();
  err->callback([e] { write_stdout(gemm_error_text(*e)); });

  auto* bench = app.add_subcommand(
      "gemm-bench", "GEMM throughput beside OpenBLAS on this machine (its table: BENCHMARKS.md#the-current-figures)");
  auto b = std::make_shared<BenchArgs>();
  bench->add_option("--threads", b->threads, "Threads for minifloat and OpenBLAS (0: all cores)")
      ->capture_default_str();
  bench->add_option("--reps", b->reps, "Timed runs per cell (the median is printed)")->capture_default_str();
  bench->add_option("--m", b->ms, "Activation row counts M")->capture_default_str();
  bench->add_flag("--quick", b->quick, "Only M = 1, 8, 128");
  bench->callback([b] { gemm_bench(*b); });
}

}  // namespace mf::cli
