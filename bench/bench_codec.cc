// Scalar codec throughput: encode from f32 and decode to f32, for every format, in values per second.
//
// Each benchmark walks a 64 Ki-value array (random f32 inputs spread log-uniformly over the format's range, or
// random codes) and writes the results to a second array, the way a caller would use the scalar codec in a loop.
// memcpy of the same number of values (at 4, 2 and 1 bytes each) runs in the same process as the yardstick.
// The format is a template argument, as in user code (`mf::encode(mf::e4m3, x)`), so the compiler sees constants.
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "minifloat/codec.h"
#include "minifloat/format.h"

namespace {

constexpr std::size_t kValues = 64 * 1024;

// The unsigned integer type a code of `f` is stored in.
template <const mf::Format& F>
using Storage = std::conditional_t<F.storage_bytes() == 1, std::uint8_t,
                                   std::conditional_t<F.storage_bytes() == 2, std::uint16_t, std::uint32_t>>;

// Log-uniform magnitudes from the smallest subnormal (or normal) to max finite; random sign where the format has one.
std::vector<float> inputs(const mf::Format& f, std::uint32_t seed) {
  std::mt19937 rng(seed);
  const float lo = f.has_subnormals() ? f.min_subnormal() : f.min_normal();
  std::uniform_real_distribution<double> log2_mag(std::log2(static_cast<double>(lo)),
                                                  std::log2(static_cast<double>(f.max_finite())));
  std::bernoulli_distribution negative(0.5);
  std::vector<float> v(kValues);
  for (float& x : v) {
    x = static_cast<float>(std::exp2(log2_mag(rng)));
    if (f.is_signed() && negative(rng)) x = -x;
  }
  return v;
}

template <const mf::Format& F>
std::vector<Storage<F>> codes(std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<Storage<F>> v(kValues);
  for (auto& c : v) c = static_cast<Storage<F>>(rng() & (F.code_count() - 1));
  return v;
}

template <const mf::Format& F>
void encode_bench(benchmark::State& state) {
  const std::vector<float> in = inputs(F, 1);
  std::vector<Storage<F>> out(kValues);
  for (auto _ : state) {
    for (std::size_t i = 0; i < kValues; ++i) out[i] = static_cast<Storage<F>>(mf::encode(F, in[i]));
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * kValues));
  state.SetBytesProcessed(
      static_cast<std::int64_t>(state.iterations() * kValues * (sizeof(float) + sizeof(Storage<F>))));
}

template <const mf::Format& F>
void decode_bench(benchmark::State& state) {
  const std::vector<Storage<F>> in = codes<F>(2);
  std::vector<float> out(kValues);
  for (auto _ : state) {
    for (std::size_t i = 0; i < kValues; ++i) out[i] = mf::decode(F, in[i]);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * kValues));
  state.SetBytesProcessed(
      static_cast<std::int64_t>(state.iterations() * kValues * (sizeof(float) + sizeof(Storage<F>))));
}

// The same number of values copied at state.range(0) bytes each: what moving the data alone costs.
void memcpy_bench(benchmark::State& state) {
  const auto bytes = static_cast<std::size_t>(state.range(0)) * kValues;
  std::vector<unsigned char> in(bytes, 0x5a), out(bytes);
  for (auto _ : state) {
    benchmark::DoNotOptimize(in.data());
    std::memcpy(out.data(), in.data(), bytes);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * kValues));
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * bytes));
}

template <const mf::Format& F>
void register_format() {
  benchmark::RegisterBenchmark(("encode/" + std::string(F.name)).c_str(), encode_bench<F>);
  benchmark::RegisterBenchmark(("decode/" + std::string(F.name)).c_str(), decode_bench<F>);
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  // One line per format in mf::all_formats' order (a template argument must name the constant itself).
  register_format<mf::f32>();
  register_format<mf::bf16>();
  register_format<mf::f16>();
  register_format<mf::e4m3>();
  register_format<mf::e5m2>();
  register_format<mf::e3m2>();
  register_format<mf::e2m3>();
  register_format<mf::e2m1>();
  register_format<mf::ue8m0>();
  register_format<mf::ue4m3>();
  register_format<mf::e4m3fnuz>();
  register_format<mf::e5m2fnuz>();
  register_format<mf::e4m3b11fnuz>();
  register_format<mf::e3m4>();
  register_format<mf::e4m3ieee>();
  register_format<mf::ue5m3>();
  benchmark::RegisterBenchmark("memcpy/bytes_per_value", memcpy_bench)->Arg(4)->Arg(2)->Arg(1);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
