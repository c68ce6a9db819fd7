// mf::rotate, the public Hadamard rotation: argument checks, the reference for small groups, and OpenMP over groups
// around the SIMD kernel (src/cpu/hadamard_dispatch.h).
#include <omp.h>

#include <algorithm>
#include <cstddef>

#include "../cpu/hadamard_dispatch.h"
#include "minifloat/hadamard.h"

namespace mf {
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
    if (begin < end) cpu::rotate_groups(x + begin * len, end - begin, len);
  }
}

}  // namespace mf
