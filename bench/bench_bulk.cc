// Bulk casts (minifloat/bulk.h) beside the machine's own limits, in one run: single-thread memcpy (bytes read plus
// written per second) and a read-only loop (bytes read per second) over the same 16 MiB of f32 (4 Mi values, past
// the L2 of every machine here), and over 16 Ki values (64 KiB, in L2: the kernels' own speed, memory aside).
// Counter: bytes/s of input read plus output written (the read-only loop: bytes read). BENCHMARKS.md has the
// command and the figures.
#include <benchmark/benchmark.h>

#include <cstring>
#include <random>
#include <span>
#include <vector>

#include "minifloat/bulk.h"

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

template <class Code>
void Encode(benchmark::State& state, const mf::Format* f, mf::Rounding rounding) {
  const std::span<const float> x = first(state);
  std::vector<Code> codes(x.size());
  const mf::BulkOptions o{rounding, mf::Overflow::standard, 7, 1};
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

constexpr std::int64_t kInCache = std::int64_t{1} << 14;
#define MF_SIZES ->Arg(static_cast<std::int64_t>(kN))->Arg(kInCache)->Unit(benchmark::kMicrosecond)
BENCHMARK(Memcpy) MF_SIZES;
BENCHMARK(ReadOnly) MF_SIZES;
#define MF_BULK(fmt, Width)                                                                            \
  BENCHMARK_CAPTURE(Encode##Width, fmt, &mf::fmt, mf::Rounding::nearest_even) MF_SIZES;              \
  BENCHMARK_CAPTURE(Encode##Width, fmt##_stochastic, &mf::fmt, mf::Rounding::stochastic) MF_SIZES;   \
  BENCHMARK_CAPTURE(Decode##Width, fmt, &mf::fmt) MF_SIZES;
MF_BULK(e4m3, Bytes)
MF_BULK(e5m2, Bytes)
MF_BULK(e3m2, Bytes)
MF_BULK(e2m3, Bytes)
MF_BULK(e2m1, Bytes)
MF_BULK(ue8m0, Bytes)
MF_BULK(bf16, Words)
MF_BULK(f16, Words)

}  // namespace

BENCHMARK_MAIN();
