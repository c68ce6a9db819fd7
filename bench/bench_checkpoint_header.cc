// How the work of opening a checkpoint grows with its tensor count: parsing and checking a safetensors header (the
// offset tiling among the checks), pairing weights with their scales, looking tensors up by name, and the whole of
// `inspect` and `verify`. A DeepSeek-V3 checkpoint holds over 90,000 tensors; a hostile file can hold millions, so
// each step must stay O(n log n). Google Benchmark fits the growth (the `_BigO` rows) from 1k to 200k tensors.
//
// Half the tensors are FP8 weights [1, 128], half their F32 `_scale_inv` [1, 1]: the smallest real pairs, so the
// header, not the data, is what is measured. The figures and the command:
// BENCHMARKS.md#sapphire-rapids-class-xeon-avx-512.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "minifloat/checkpoint_commands.h"
#include "minifloat/checkpoint_tensors.h"
#include "minifloat/safetensors.h"

namespace {

constexpr std::uint64_t kWeightShape[] = {1, 128}, kScaleShape[] = {1, 1};

namespace fs = std::filesystem;
using mf::io::DType;

// n tensors (n / 2 pairs) in one safetensors file's bytes, names in the order a real checkpoint lists them.
std::vector<std::byte> checkpoint_bytes(std::int64_t n) {
  std::vector<mf::io::TensorView> views;
  static const std::vector<std::byte> codes(128, std::byte{0x38}),
      scale{std::byte{0}, std::byte{0}, std::byte{0x80}, std::byte{0x3f}};  // 1.0f
  std::vector<std::string> names;
  names.reserve(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n / 2; ++i) {
    const std::string w = "model.layers." + std::to_string(i / 768) + ".mlp.experts." + std::to_string(i % 768 / 3) +
                          ".proj" + std::to_string(i % 3) + ".weight";
    names.push_back(w);
    names.push_back(w + "_scale_inv");
  }
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i % 2 == 0) {
      views.push_back({names[i], DType::F8_E4M3, kWeightShape, codes});
    } else {
      views.push_back({names[i], DType::F32, kScaleShape, scale});
    }
  }
  const fs::path tmp = fs::temp_directory_path() / ("mf_bench_header_" + std::to_string(n) + ".safetensors");
  mf::io::write_safetensors(tmp, views);
  const mf::io::SafetensorsFile f = mf::io::read_safetensors(tmp);
  std::vector<std::byte> all(f.header_size() + f.data_size());
  std::FILE* in = std::fopen(tmp.c_str(), "rb");
  const std::size_t got = std::fread(all.data(), 1, all.size(), in);
  std::fclose(in);
  fs::remove(tmp);
  if (got != all.size()) throw std::runtime_error("short read");
  return all;
}

// The file on disk, for the commands that open a path; kept for the whole run.
fs::path checkpoint_file(std::int64_t n) {
  const fs::path dir = fs::temp_directory_path() / ("mf_bench_header_" + std::to_string(n));
  const fs::path file = dir / "model.safetensors";
  if (!fs::exists(file)) {
    fs::create_directories(dir);
    const std::vector<std::byte> bytes = checkpoint_bytes(n);
    std::FILE* out = std::fopen(file.c_str(), "wb");
    std::fwrite(bytes.data(), 1, bytes.size(), out);
    std::fclose(out);
  }
  return file;
}

void Parse(benchmark::State& state) {
  const std::vector<std::byte> bytes = checkpoint_bytes(state.range(0));
  for (auto _ : state) {
    benchmark::DoNotOptimize(mf::io::parse_safetensors(bytes, "bench.safetensors"));
  }
  state.SetComplexityN(state.range(0));
  state.counters["header_MB"] = static_cast<double>(bytes.size()) / 1e6;
}

void FindPairs(benchmark::State& state) {
  const mf::io::SafetensorsFile f = mf::io::parse_safetensors(checkpoint_bytes(state.range(0)), "bench.safetensors");
  for (auto _ : state) benchmark::DoNotOptimize(mf::io::find_pairs(f));
  state.SetComplexityN(state.range(0));
}

void Inspect(benchmark::State& state) {
  const fs::path file = checkpoint_file(state.range(0));
  for (auto _ : state) {
    benchmark::DoNotOptimize(mf::io::inspect_checkpoint(file, false, mf::io::ConfigRules::detect, 1));
  }
  state.SetComplexityN(state.range(0));
}

void Verify(benchmark::State& state) {
  const fs::path file = checkpoint_file(state.range(0));
  mf::io::VerifyOptions options;
  options.threads = 1;
  for (auto _ : state) benchmark::DoNotOptimize(mf::io::verify_checkpoint(file, options));
  state.SetComplexityN(state.range(0));
}

void Sizes(benchmark::internal::Benchmark* b) {
  for (const std::int64_t n : {1000, 5000, 10000, 20000, 50000, 100000, 200000}) b->Arg(n);
  b->Unit(benchmark::kMillisecond)->Complexity(benchmark::oNLogN);
}

BENCHMARK(Parse)->Apply(Sizes);
BENCHMARK(FindPairs)->Apply(Sizes);
BENCHMARK(Inspect)->Apply(Sizes);
BENCHMARK(Verify)->Apply(Sizes);

}  // namespace

BENCHMARK_MAIN();
