// The SIMD tests' one way to run a check on every Highway target this build compiled and this CPU runs: dispatch is
// pinned to each target in turn (as Highway's own tests do) and restored afterwards.
#pragma once

#include <cstdint>
#include <functional>

#include "hwy/highway.h"
#include "hwy/targets.h"

namespace mf::test {

inline void for_each_target(const std::function<void(std::int64_t)>& fn) {
  struct Restore {
    ~Restore() { hwy::SetSupportedTargetsForTest(0); }
  } restore;
  for (const std::int64_t t : hwy::SupportedAndGeneratedTargets()) {
    hwy::SetSupportedTargetsForTest(t);
    fn(t);
  }
}

}  // namespace mf::test
