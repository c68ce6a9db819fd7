// MF_BENCH_TARGET=AVX2 (or another Highway target's name, as hwy::TargetName spells it): run the dispatched kernels
// as a CPU without the better targets would, on this one. For the benchmarks' main(), before any kernel runs.
#pragma once

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
      hwy::SetSupportedTargetsForTest(t);
      return true;
    }
  }
  std::fprintf(stderr, "%s: MF_BENCH_TARGET=%s is not a compiled and supported Highway target\n", program, want);
  return false;
}

}  // namespace mf::bench
