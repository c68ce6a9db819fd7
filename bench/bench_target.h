// MF_BENCH_TARGET=AVX2 (or another Highway target's name, as hwy::TargetName spells it): run the dispatched kernels
// as a CPU whose best target that is would, on this one: that target and the older ones stay (a lower value is a
// newer target), so code compiled without the named target (AVX3_DL is compiled for the GEMMs only) takes the best
// older one, as on such a CPU. For the benchmarks' main(), before any kernel runs.
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
      hwy::SetSupportedTargetsForTest(hwy::SupportedTargets() & ~(t - 1));
      return true;
    }
  }
  std::fprintf(stderr, "%s: MF_BENCH_TARGET=%s is not a compiled and supported Highway target\n", program, want);
  return false;
}

}  // namespace mf::bench
