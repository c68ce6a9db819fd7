// Bulk casts (minifloat/bulk.h) beside the machine's own limits, in one run: single-thread memcpy (bytes read plus
// written per second), a read-only loop (bytes read per second) and a write-only loop over the same 16 MiB of f32 (4 Mi
// values, past the L2 of every machine here), and over 16 Ki values (64 KiB, in L2: the kernels' own speed, memory
// aside). Counter: bytes/s of input read plus output written (the read-only loop: bytes read). The figures:
// BENCHMARKS.md#the-current-figures; the commands: BENCHMARKS.md#sapphire-rapids-class-xeon-avx-512.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <span>
#include <vector>

#include "bench_target.h"
#include "minifloat/bulk.h"
#include "minifloat/pack.h"

#if defined(__x86_64__)
#include <xmmintrin.h>  // _mm_stream_ps: the write-only loop's streaming stores
#endif

namespace {

constexpr std::size_t kN = std::size_t{1} << 22;

const std::vector<float>& values() {
  static const std::vector<float> x = [] {
    std::vector<float> v(kN);
    std::mt19937 rng(1);
    std::normal_distribution<float> n(0, 2);
    for (float& f : v) f = n(rng);
    return v;
  }();
  return x;
}

// The first state.range(0) values.
std::span<const float> first(const benchmark::State& state) {
  return std::span<const float>(values()).first(static_cast<std::size_t>(state.range(0)));
}

void Memcpy(benchmark::State& state) {
  const std::span<const float> x = first(state);
  std::vector<float> y(x.size());
  for (auto _ : state) {
    std::memcpy(y.data(), x.data(), x.size() * 4);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * x.size() * 8));
}

void ReadOnly(benchmark::State& state) {
  const std::span<const float> x = first(state);
  const auto* u = reinterpret_cast<const std::uint64_t*>(x.data());
  for (auto _ : state) {
    std::uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    for (std::size_t i = 0; i < x.size() / 2; i += 4) s0 ^= u[i], s1 ^= u[i + 1], s2 ^= u[i + 2], s3 ^= u[i + 3];
    benchmark::DoNotOptimize(s0 ^ s1 ^ s2 ^ s3);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * x.size() * 4));
}

// A write-only loop (bytes written per second): the floor of any cast whose output is as large, such as a decode into
// f32, on one thread. On x86 with streaming stores, as the bulk casts write large outputs (no read for ownership).
void WriteOnly(benchmark::State& state) {
  std::vector<float> y(static_cast<std::size_t>(state.range(0)) + 4);
  float* out = y.data() + (0 - reinterpret_cast<std::uintptr_t>(y.data())) % 16 / 4;  // 16-byte aligned
  const std::size_t n = static_cast<std::size_t>(state.range(0));
  float v = 1.0f;
  for (auto _ : state) {
#if defined(__x86_64__)
    const __m128 value = _mm_set1_ps(v);
    for (std::size_t i = 0; i + 4 <= n; i += 4) _mm_stream_ps(out + i, value);
    _mm_sfence();
#else
    std::fill(out, out + n, v);
#endif
    v += 1.0f;
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * n * 4));
}

template <class Code>
void Encode(benchmark::State& state, const mf::Format* f, mf::Rounding rounding) {
  const std::span<const float> x = first(state);
  std::vector<Code> codes(x.size());
  const mf::BulkOptions o{rounding, mf::Overflow::format_default, 7, 1};
  for (auto _ : state) {
    mf::encode_bulk(*f, x, std::span<Code>(codes), o);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * x.size() * (4 + sizeof(Code))));
}

template <class Code>
void Decode(benchmark::State& state, const mf::Format* f) {
  const std::span<const float> x = first(state);
  std::vector<Code> codes(x.size());
  mf::encode_bulk(*f, x, std::span<Code>(codes));
  std::vector<float> y(x.size());
  for (auto _ : state) {
    mf::decode_bulk(*f, std::span<const Code>(codes), y);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * x.size() * (4 + sizeof(Code))));
}

void EncodeBytes(benchmark::State& s, const mf::Format* f, mf::Rounding r) { Encode<std::uint8_t>(s, f, r); }
void EncodeWords(benchmark::State& s, const mf::Format* f, mf::Rounding r) { Encode<std::uint16_t>(s, f, r); }
void DecodeBytes(benchmark::State& s, const mf::Format* f) { Decode<std::uint8_t>(s, f); }
void DecodeWords(benchmark::State& s, const mf::Format* f) { Decode<std::uint16_t>(s, f); }

// The other value types and packed codes (e4m3 and FP4 / FP6), beside the f32 casts above.
// f64 input: `exact` holds f32 values widened (the SIMD path), otherwise values with f64 bits below f32's (the scalar
// codec, element by element).
void EncodeF64(benchmark::State& state, bool exact) {
  const std::span<const float> x = first(state);
  std::vector<double> d(x.begin(), x.end());
  if (!exact) {
    for (double& v : d) v += v * 0x1p-30;
  }
  std::vector<std::uint8_t> codes(x.size());
  for (auto _ : state) {
    mf::encode_bulk(mf::e4m3, std::span<const double>(d), std::span<std::uint8_t>(codes));
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * x.size() * 9));
}

void EncodeFromBf16(benchmark::State& state) {
  const std::span<const float> x = first(state);
  std::vector<std::uint16_t> h(x.size());
  std::vector<std::uint8_t> codes(x.size());
  mf::encode_bulk(mf::bf16, x, std::span<std::uint16_t>(h));
  for (auto _ : state) {
    mf::encode_bulk(mf::e4m3, mf::bf16, std::span<const std::uint16_t>(h), std::span<std::uint8_t>(codes));
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * x.size() * 3));
}

template <class Out>
void DecodeInto(benchmark::State& state) {
  const std::span<const float> x = first(state);
  std::vector<std::uint8_t> codes(x.size());
  mf::encode_bulk(mf::e4m3, x, std::span<std::uint8_t>(codes));
  std::vector<Out> y(x.size());
  for (auto _ : state) {
    if constexpr (sizeof(Out) == 2) {
      mf::decode_bulk(mf::e4m3, std::span<const std::uint8_t>(codes), mf::bf16, std::span<std::uint16_t>(y));
    } else {
      mf::decode_bulk(mf::e4m3, std::span<const std::uint8_t>(codes), std::span<double>(y));
    }
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * x.size() * (1 + sizeof(Out))));
}

void EncodePacked(benchmark::State& state, const mf::Format* f) {
  const std::span<const float> x = first(state);
  std::vector<std::uint8_t> packed(mf::packed_size(x.size(), f->bits()));
  for (auto _ : state) {
    mf::encode_bulk_packed(*f, x, packed);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * (x.size() * 4 + packed.size())));
}

void DecodePacked(benchmark::State& state, const mf::Format* f) {
  const std::span<const float> x = first(state);
  std::vector<std::uint8_t> packed(mf::packed_size(x.size(), f->bits()));
  mf::encode_bulk_packed(*f, x, packed);
  std::vector<float> y(x.size());
  for (auto _ : state) {
    mf::decode_bulk_packed(*f, packed, y);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * (x.size() * 4 + packed.size())));
}

constexpr std::int64_t kInCache = std::int64_t{1} << 14;
#define MF_SIZES ->Arg(static_cast<std::int64_t>(kN))->Arg(kInCache)->Unit(benchmark::kMicrosecond)
BENCHMARK(Memcpy) MF_SIZES;
BENCHMARK(ReadOnly) MF_SIZES;
BENCHMARK(WriteOnly) MF_SIZES;
#define MF_BULK(fmt, Width)                                                                        \
  BENCHMARK_CAPTURE(Encode##Width, fmt, &mf::fmt, mf::Rounding::nearest_even) MF_SIZES;            \
  BENCHMARK_CAPTURE(Encode##Width, fmt##_stochastic, &mf::fmt, mf::Rounding::stochastic) MF_SIZES; \
  BENCHMARK_CAPTURE(Decode##Width, fmt, &mf::fmt) MF_SIZES;
MF_BULK(e4m3, Bytes)
MF_BULK(e5m2, Bytes)
MF_BULK(e3m2, Bytes)
MF_BULK(e2m3, Bytes)
MF_BULK(e2m1, Bytes)
MF_BULK(ue8m0, Bytes)
MF_BULK(bf16, Words)
MF_BULK(f16, Words)
BENCHMARK_CAPTURE(EncodeF64, e4m3_f32_values, true) MF_SIZES;
BENCHMARK_CAPTURE(EncodeF64, e4m3_f64_values, false) MF_SIZES;
BENCHMARK(EncodeFromBf16) MF_SIZES;
BENCHMARK_TEMPLATE(DecodeInto, double) MF_SIZES;
BENCHMARK_TEMPLATE(DecodeInto, std::uint16_t) MF_SIZES;
BENCHMARK_CAPTURE(EncodePacked, e2m1, &mf::e2m1) MF_SIZES;
BENCHMARK_CAPTURE(EncodePacked, e2m3, &mf::e2m3) MF_SIZES;
BENCHMARK_CAPTURE(DecodePacked, e2m1, &mf::e2m1) MF_SIZES;
BENCHMARK_CAPTURE(DecodePacked, e2m3, &mf::e2m3) MF_SIZES;

}  // namespace

int main(int argc, char** argv) { return mf::bench::run_benchmarks(argc, argv, "bench_bulk"); }
