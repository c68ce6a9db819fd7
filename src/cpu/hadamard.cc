// mf::rotate: argument checks, OpenMP over groups, and Highway dispatch; the SIMD code is in hadamard-inl.h.
#include <omp.h>

#include <algorithm>
#include <cstddef>

#include "minifloat/hadamard.h"

// foreach_target.h re-includes this file once per target. The path is found through the include/ directory, the
// only one CMake gives this target (a project-root include directory would allow "src/cpu/hadamard.cc").
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "../src/cpu/hadamard.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "hadamard-inl.h"

#if HWY_ONCE
namespace mf {

HWY_EXPORT(RotateGroups);

namespace {
// Smaller groups are rare and shorter than an AVX-512 vector: they take the reference loops.
constexpr int kMinSimdSize = 16;
// Below this, starting threads costs more than it saves.
constexpr std::size_t kParallelBytes = std::size_t{1} << 20;
}  // namespace

void rotate(float* x, std::size_t count, int n) {
  validate_rotate(count, n);
  if (n < kMinSimdSize) return ref::rotate(x, count, n);
  const auto len = static_cast<std::size_t>(n);
  const std::size_t groups = count / len;
#pragma omp parallel if (count * sizeof(float) >= kParallelBytes)
  {
    // One contiguous range of whole groups per thread, so one dispatch per thread.
    const auto threads = static_cast<std::size_t>(omp_get_num_threads());
    const auto t = static_cast<std::size_t>(omp_get_thread_num());
    const std::size_t begin = groups / threads * t + std::min(t, groups % threads);
    const std::size_t end = begin + groups / threads + (t < groups % threads ? 1 : 0);
    if (begin < end) HWY_DYNAMIC_DISPATCH(RotateGroups)(x + begin * len, end - begin, len);
  }
}

}  // namespace mf
#endif  // HWY_ONCE
