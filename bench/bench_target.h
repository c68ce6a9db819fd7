// MF_BENCH_TARGET=AVX2 (or another Highway target's name, as hwy::TargetName spells it): run the dispatched kernels
// as a CPU whose best target that is would, on this one: that target and the older ones stay (a lower value is a
// newer target), so code compiled without the named target (AVX3_DL is compiled for the GEMMs only) takes the best
// older one, as on such a CPU. For the benchmarks' main(), before any kernel runs.
#pragma once

#include <benchmark/benchmark.h>
#include <hwy/targets.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace mf::bench {

// False (after a message naming it) when MF_BENCH_TARGET names no compiled target this CPU supports.
inline bool restrict_target(const char* program) {
  const char* want = std::getenv("MF_BENCH_TARGET");
  if (!want || !*want) return true;
  for (const std::int64_t t : hwy::SupportedAndGeneratedTargets()) {
    if (std::string(hwy::TargetName(t)) == want) {
      hwy::SetSupportedTargetsForTest(hwy::SupportedTargets() & ~(t - 1));
      return true;
    }
  }
  std::fprintf(stderr, "%s: MF_BENCH_TARGET=%s is not a compiled and supported Highway target\n", program, want);
  return false;
}

// A benchmark program's main(): MF_BENCH_TARGET applied, the best target the kernels will take named in the
// context ("highway_target"), then every registered benchmark.
inline int run_benchmarks(int argc, char** argv, const char* program) {
  benchmark::Initialize(&argc, argv);
  if (!restrict_target(program)) return 2;
  const std::int64_t targets = hwy::SupportedTargets() & HWY_TARGETS;
  benchmark::AddCustomContext("highway_target", hwy::TargetName(targets & -targets));  // the best: lowest bit
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

}  // namespace mf::bench
