// The GEMM benchmark's cases, shared by bench/bench_gemm.cc (Google Benchmark) and `minifloat gemm-bench`: the
// operands of one shape, each way of computing it (minifloat's bf16, fp8 and mxfp4 GEMMs; OpenBLAS sgemm or sgemv
// on the dequantized f32 weights; dequantize-then-sgemm), weights streamed from memory (WeightRing), and the
// machine's FMA peak and memory read bandwidth.
// OpenBLAS is used here only, never by the library (MF_HAVE_OPENBLAS is set where CMake found it).
#pragma once

#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "minifloat/codec.h"
#include "minifloat/gemm.h"
#include "minifloat/quantize.h"
#include "read_loops.h"

#if MF_HAVE_OPENBLAS
#include <cblas.h>
#endif
#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace mf::bench {

enum class Way { mf_bf16, mf_fp8, mf_mxfp4, blas_f32, deq_fp8_blas, mf_nvfp4, mf_mxfp8 };
inline const char* way_name(Way w) {
  constexpr const char* names[] = {"bf16", "fp8", "mxfp4", "openblas-f32", "dequant-fp8+openblas", "nvfp4", "mxfp8"};
  return names[static_cast<int>(w)];
}
inline bool have_blas() { return MF_HAVE_OPENBLAS != 0; }

// The kernel set OpenBLAS picked at load time (OPENBLAS_CORETYPE overrides it), "" without OpenBLAS.
inline std::string blas_core() {
#if MF_HAVE_OPENBLAS
  return openblas_get_corename();
#else
  return "";
#endif
}

// OpenBLAS's kernel set for this CPU when it fell back to its generic SSE3 kernels ("Prescott") on a CPU that has
// AVX-512 or AVX2, "" otherwise. Debian's 0.3.21 does not recognise some newer CPUs, this build machine's among them:
// a yardstick several times slower than OpenBLAS really is here
// (docs/benchmark-history.md#the-yardstick-openblas-ran-its-generic-kernels).
inline std::string fitting_blas_core() {
#if defined(__x86_64__)
  if (blas_core() != "Prescott") return "";
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl")) {
    return "SkylakeX";
  }
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "Haswell";
#endif
  return "";
}

// OpenBLAS reads OPENBLAS_CORETYPE only when it loads, so a benchmark whose OpenBLAS fell back to its generic
// kernels runs itself again (same arguments, /proc/self) with the fitting kernel set, unless the environment
// already chose one. Returns when nothing needed doing or the re-run could not start; the caller then reports
// blas_core() as it is.
inline void rerun_with_fitting_blas_kernels() {
  const std::string core = fitting_blas_core();
  if (core.empty() || std::getenv("OPENBLAS_CORETYPE") != nullptr) return;
  std::FILE* f = std::fopen("/proc/self/cmdline", "rb");
  if (!f) return;
  std::string all;
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) all.append(buf, n);
  std::fclose(f);
  std::vector<std::string> args;
  for (std::size_t at = 0; at < all.size();) {
    const std::size_t end = all.find('\0', at);
    args.push_back(all.substr(at, end == std::string::npos ? std::string::npos : end - at));
    at = end == std::string::npos ? all.size() : end + 1;
  }
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  setenv("OPENBLAS_CORETYPE", core.c_str(), 1);
  std::fflush(nullptr);
  execv("/proc/self/exe", argv.data());
  unsetenv("OPENBLAS_CORETYPE");  // the re-run did not start: go on, with the generic kernels
}

// One weight [N, K] in every form, and activations [M, K].
struct Operands {
  std::int64_t m = 0, n = 0, k = 0;
  std::vector<float> x;  // activations f32
  std::vector<std::uint16_t> x_bf16;
  QuantizedTensor x_fp8;  // act_quant(x)
  std::vector<std::uint16_t> w_bf16;
  QuantizedTensor w_fp8, w_fp4, w_nvfp4, w_mxfp8;  // fp8-128x128, mxfp4, nvfp4, mxfp8 (e4m3 1x32 ue8m0)
  std::vector<float> w_f32;                        // dequantized fp8 weights: what OpenBLAS multiplies
  std::vector<float> c, deq;                       // outputs, and the dequantize-then-sgemm buffer
};

inline Operands make_operands(std::int64_t m, std::int64_t n, std::int64_t k) {
  Operands o;
  o.m = m;
  o.n = n;
  o.k = k;
  std::mt19937 rng(1);
  std::normal_distribution<float> d(0.0f, 1.0f);
  o.x.resize(static_cast<std::size_t>(m * k));
  for (float& v : o.x) v = d(rng);
  std::vector<float> w(static_cast<std::size_t>(n * k));
  for (float& v : w) v = d(rng) * 0.02f;
  const std::vector<std::int64_t> xs{m, k}, ws{n, k};
  o.x_bf16.resize(o.x.size());
  for (std::size_t i = 0; i < o.x.size(); ++i) o.x_bf16[i] = static_cast<std::uint16_t>(encode(bf16, o.x[i]));
  o.x_fp8 = act_quant(o.x.data(), xs);
  o.w_bf16.resize(w.size());
  for (std::size_t i = 0; i < w.size(); ++i) o.w_bf16[i] = static_cast<std::uint16_t>(encode(bf16, w[i]));
  o.w_fp8 = quantize(w.data(), ws, scheme_named("fp8-128x128"));
  o.w_fp4 = quantize(w.data(), ws, scheme_named("mxfp4"));
  o.w_nvfp4 = quantize(w.data(), ws, scheme_named("nvfp4"));
  o.w_mxfp8 = quantize(w.data(), ws, scheme_named("mxfp8"));
  o.w_f32.resize(w.size());
  dequantize(o.w_fp8, o.w_f32.data());
  o.c.resize(static_cast<std::size_t>(m * n));
  o.deq.resize(w.size());
  return o;
}

// Bytes of weight data (codes + scales) each way reads.
inline double weight_bytes(const Operands& o, Way w) {
  switch (w) {
    case Way::mf_bf16: return 2.0 * static_cast<double>(o.w_bf16.size());
    case Way::mf_fp8: return static_cast<double>(o.w_fp8.nbytes());
    case Way::mf_mxfp4: return static_cast<double>(o.w_fp4.nbytes());
    case Way::mf_nvfp4: return static_cast<double>(o.w_nvfp4.nbytes());
    case Way::mf_mxfp8: return static_cast<double>(o.w_mxfp8.nbytes());
    case Way::blas_f32: return 4.0 * static_cast<double>(o.w_f32.size());
    case Way::deq_fp8_blas: return static_cast<double>(o.w_fp8.nbytes());
  }
  return 0;
}

#if MF_HAVE_OPENBLAS
// y = x W^T: sgemv for one row (what a decode step calls), sgemm otherwise.
inline void blas_gemm(const Operands& o, const float* w, float* c) {
  const auto m = static_cast<int>(o.m), n = static_cast<int>(o.n), k = static_cast<int>(o.k);
  if (m == 1) {
    cblas_sgemv(CblasRowMajor, CblasNoTrans, n, k, 1.0f, w, k, o.x.data(), 1, 0.0f, c, 1);
  } else {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, k, 1.0f, o.x.data(), k, w, k, 0.0f, c, n);
  }
}
#endif

// OpenBLAS's worker threads spin for about 2^28 cycles (0.1 s here) after each call, and after the library starts,
// before they sleep (OPENBLAS_THREAD_TIMEOUT): whatever runs in that window shares the cores with them. FmaPeak, the
// first case of a run, measured 291-369 GFLOP/s there against 487-490 alone or with OPENBLAS_THREAD_TIMEOUT=4 on
// the Sapphire Rapids-class Xeon (docs/benchmark-history.md#block-scaled-gemv-and-gemm-2026-12-03-0540). So every
// case and yardstick waits that out before it starts its clock; OpenBLAS's own cases keep its default spinning
// between their calls.
inline void let_openblas_threads_sleep() {
#if MF_HAVE_OPENBLAS
  std::this_thread::sleep_for(std::chrono::milliseconds(250));
#endif
}

inline void set_threads(int threads) {
  omp_set_num_threads(threads);
#if MF_HAVE_OPENBLAS
  openblas_set_num_threads(threads);
#endif
  let_openblas_threads_sleep();
}

// One call of way w on `threads` threads, into c (M x N; o.c when null).
inline void run(Operands& o, Way w, int threads, float* c = nullptr) {
  GemmOptions opt;
  opt.threads = threads;
  if (c == nullptr) c = o.c.data();
  const GemmOut out{c, nullptr};
  switch (w) {
    case Way::mf_bf16: return bf16_gemm(o.x_bf16.data(), o.w_bf16.data(), o.m, o.n, o.k, out, opt);
    case Way::mf_fp8: return fp8_gemm(o.x_fp8, o.w_fp8, out, opt);
    case Way::mf_mxfp4: return fp4_gemm(o.x_fp8, o.w_fp4, out, opt);
    case Way::mf_nvfp4: return fp4_gemm(o.x_fp8, o.w_nvfp4, out, opt);
    case Way::mf_mxfp8: return fp8_gemm(o.x_fp8, o.w_mxfp8, out, opt);
#if MF_HAVE_OPENBLAS
    case Way::blas_f32: return blas_gemm(o, o.w_f32.data(), c);
    case Way::deq_fp8_blas: dequantize(o.w_fp8, o.deq.data(), threads); return blas_gemm(o, o.deq.data(), c);
#else
    default: return;
#endif
  }
}

// ---- weights streamed from memory ----

// The last-level cache in bytes, from the C library (cpuid); 256 MiB when it cannot tell.
inline double llc_bytes() {
  const long s = sysconf(_SC_LEVEL3_CACHE_SIZE);
  return s > 0 ? static_cast<double>(s) : 256.0 * (1 << 20);
}

// A decode step over a model larger than the cache reads every weight from memory once; repeating one weight, as a
// benchmark loop does, reads it from the last-level cache instead. WeightRing holds enough copies of one way's
// weight to fill twice the last-level cache and gives each call the next one, so that no call finds its weight
// cached.
class WeightRing {
 public:
  WeightRing(Operands& o, Way way) : o_(o), way_(way) {
    const double copies = std::max(2.0, std::ceil(2 * llc_bytes() / weight_bytes(o, way)));
    ring_.resize(static_cast<std::size_t>(copies));
    for (Operands& r : ring_) move<false>(o_, r);
  }
  std::size_t copies() const { return ring_.size(); }
  // One call of run() on the next copy (swapped in and out: nothing is copied while it runs).
  template <class Run>
  void call(Run&& run) {
    move<true>(o_, ring_[next_]);
    run(o_);
    move<true>(o_, ring_[next_]);
    next_ = (next_ + 1) % ring_.size();
  }

 private:
  template <bool kSwap>
  void move(Operands& from, Operands& to) const {
    const auto one = [](auto& a, auto& b) {
      if constexpr (kSwap)
        std::swap(a, b);
      else
        b = a;
    };
    switch (way_) {
      case Way::mf_bf16: return one(from.w_bf16, to.w_bf16);
      case Way::mf_fp8:
      case Way::deq_fp8_blas: return one(from.w_fp8, to.w_fp8);
      case Way::mf_mxfp4: return one(from.w_fp4, to.w_fp4);
      case Way::mf_nvfp4: return one(from.w_nvfp4, to.w_nvfp4);
      case Way::mf_mxfp8: return one(from.w_mxfp8, to.w_mxfp8);
      case Way::blas_f32: return one(from.w_f32, to.w_f32);
    }
  }

  Operands& o_;
  Way way_;
  std::vector<Operands> ring_;
  std::size_t next_ = 0;
};

// ---- the machine ----

#if defined(__x86_64__)
// Lane 0 of the chains' sum: what keeps a peak loop's work from being optimized away.
__attribute__((target("avx512f"))) inline float first_lane_of_sum(const __m512 (&acc)[12]) {
  __m512 s = acc[0];
  for (int i = 1; i < 12; ++i) s = _mm512_add_ps(s, acc[i]);
  return _mm512_cvtss_f32(s);
}

// Twelve independent chains of 16-lane fmas: enough in flight to fill two FMA ports of 4-cycle latency.
__attribute__((target("avx512f"))) inline float fma_loop_512(std::int64_t iters) {
  __m512 acc[12];
  for (int i = 0; i < 12; ++i) acc[i] = _mm512_set1_ps(static_cast<float>(i));
  const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
  for (std::int64_t it = 0; it < iters; ++it) {
    for (auto& v : acc) v = _mm512_fmadd_ps(v, a, b);
  }
  return first_lane_of_sum(acc);
}
__attribute__((target("avx2,fma"))) inline float fma_loop_256(std::int64_t iters) {
  __m256 acc[12];
  for (int i = 0; i < 12; ++i) acc[i] = _mm256_set1_ps(static_cast<float>(i));
  const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
  for (std::int64_t it = 0; it < iters; ++it) {
    for (auto& v : acc) v = _mm256_fmadd_ps(v, a, b);
  }
  float out[8];
  __m256 s = acc[0];
  for (int i = 1; i < 12; ++i) s = _mm256_add_ps(s, acc[i]);
  _mm256_storeu_ps(out, s);
  return out[0];
}
#endif

// f32 FMA peak in GFLOP/s (2 flops per lane per fma) over `threads` threads, one timed run.
inline double fma_peak_gflops(int threads, std::int64_t iters = 20'000'000) {
#if defined(__x86_64__)
  const bool wide = __builtin_cpu_supports("avx512f");
  const int lanes = wide ? 16 : 8;
  volatile float sink = 0;
  const auto t0 = std::chrono::steady_clock::now();
#pragma omp parallel num_threads(threads)
  {
    const float r = wide ? fma_loop_512(iters) : fma_loop_256(iters);
    if (r == 12345.0f) sink = r;
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  (void)sink;
  return 2.0 * lanes * 12 * static_cast<double>(iters) * threads / s / 1e9;
#else
  (void)threads;
  (void)iters;
  return 0;
#endif
}

#if defined(__x86_64__)
// Twelve independent chains of `vdpbf16ps` (AVX512-BF16): 32 bf16 products a step each, as the e4m3 GEMV's dot
// product loop issues them.
__attribute__((target("avx512f,avx512bf16"))) inline float dot_bf16_loop_512(std::int64_t iters) {
  __m512 acc[12];
  for (int i = 0; i < 12; ++i) acc[i] = _mm512_set1_ps(static_cast<float>(i));
  const __m512bh a = _mm512_cvtne2ps_pbh(_mm512_set1_ps(1e-3f), _mm512_set1_ps(1e-3f));
  for (std::int64_t it = 0; it < iters; ++it) {
    for (auto& v : acc) v = _mm512_dpbf16_ps(v, a, a);
  }
  return first_lane_of_sum(acc);
}
#endif

// The bf16 dot product's peak in GFLOP/s (2 flops per product, 32 products per instruction) over `threads` threads,
// one timed run; 0 without AVX512-BF16. Beside fma_peak_gflops it says what a bf16 product costs against an f32 fma
// on this CPU (the e4m3 GEMV chooses between two loops: docs/gemm.md).
inline double dot_bf16_peak_gflops(int threads, std::int64_t iters = 10'000'000) {
#if defined(__x86_64__)
  if (!__builtin_cpu_supports("avx512bf16")) return 0;
  volatile float sink = 0;
  const auto t0 = std::chrono::steady_clock::now();
#pragma omp parallel num_threads(threads)
  {
    const float r = dot_bf16_loop_512(iters);
    if (r == 12345.0f) sink = r;
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  (void)sink;
  return 2.0 * 32 * 12 * static_cast<double>(iters) * threads / s / 1e9;
#else
  (void)threads;
  (void)iters;
  return 0;
#endif
}

// The array read_bandwidth_gbs and read_rows_gbs read: twice the last-level cache, at least 256 MiB, touched once
// here (no page faults in the timed loops).
inline std::vector<std::uint64_t>& bandwidth_array() {
  static std::vector<std::uint64_t> data(
      static_cast<std::size_t>(std::max(256.0 * (1 << 20), 2 * llc_bytes()) / sizeof(std::uint64_t)) / 256 * 256, 1);
  return data;
}

// XOR of one word of every 64-byte line in blocks of `rows` rows of row_words words, each row's next line in turn:
// the order in which the M = 1 GEMV reads its weights (16 rows at a time), without its arithmetic. A load per line
// fetches the line; more would fill the out-of-order window with loads of a few lines and measure that window
// rather than the memory.
inline std::uint64_t xor_rows(const std::uint64_t* data, std::size_t n, std::size_t rows, std::size_t row_words) {
  std::uint64_t x = 0;
  for (std::size_t block = 0; block + rows * row_words <= n; block += rows * row_words) {
    for (std::size_t w = 0; w < row_words; w += 8) {
      for (std::size_t r = 0; r < rows; ++r) x ^= data[block + r * row_words + w];
    }
  }
  return x;
}

// Memory read bandwidth in GB/s over `threads` threads reading the GEMV's way: blocks of `rows` rows of row_bytes
// bytes, side by side (read_bandwidth_gbs reads the same array in sequence).
inline double read_rows_gbs(int threads, std::size_t rows, std::size_t row_bytes) {
  std::vector<std::uint64_t>& data = bandwidth_array();
  const std::size_t block = rows * row_bytes / sizeof(std::uint64_t), blocks = data.size() / block;
  std::uint64_t x = 0;
  const auto t0 = std::chrono::steady_clock::now();
#pragma omp parallel num_threads(threads) reduction(^ : x)
  {
    const std::size_t t = omp_get_thread_num(), count = omp_get_num_threads();
    const std::size_t begin = blocks * t / count * block, end = blocks * (t + 1) / count * block;
    x ^= xor_rows(data.data() + begin, end - begin, rows, row_bytes / sizeof(std::uint64_t));
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (x == 42) data[0] = 2;  // keeps the loop
  return static_cast<double>(blocks * block * sizeof(std::uint64_t)) / s / 1e9;
}

// Memory read bandwidth in GB/s: `threads` threads reading an array of twice the last-level cache (at least 256
// MiB) with wide loads, one timed run.
inline double read_bandwidth_gbs(int threads) {
  std::vector<std::uint64_t>& data = bandwidth_array();
  std::uint64_t x = 0;
  const auto t0 = std::chrono::steady_clock::now();
#pragma omp parallel num_threads(threads) reduction(^ : x)
  {
    const std::size_t chunks = data.size() / 32, t = omp_get_thread_num(), count = omp_get_num_threads();
    const std::size_t begin = chunks * t / count * 32, end = chunks * (t + 1) / count * 32;
    x ^= xor_words(data.data() + begin, end - begin);
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (x == 42) data[0] = 2;  // keeps the loop
  return static_cast<double>(data.size() * sizeof(std::uint64_t)) / s / 1e9;
}

}  // namespace mf::bench
