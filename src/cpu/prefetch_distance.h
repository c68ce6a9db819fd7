// How far ahead of the 16-lane e4m3 GEMV loops their weight rows are asked into L2, by the CPU's maker: one value
// for every Highway target, read once at start-up (gemv_rows-inl.h uses it).
#ifndef MINIFLOAT_SRC_CPU_PREFETCH_DISTANCE_H_
#define MINIFLOAT_SRC_CPU_PREFETCH_DISTANCE_H_

#include <cstdint>

namespace mf::gemm {

// 256 bytes, as measured on the Sapphire Rapids-class Xeon (gemv_rows-inl.h); 768 on AMD. On the Zen 4 EPYC, with
// the weights streamed on 2 threads, 768 read fp8 and mxfp8 weights 1.1-1.3x as fast as 256, 512 between them
// (docs/benchmark-history.md#prefetch-distance-and-the-e2m1-rows-on-zen-4-2026-12-07).
inline std::int64_t E4m3PrefetchAheadOfCpu() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();  // this runs among the static initializers, perhaps before libgcc's own
  return __builtin_cpu_is("amd") ? 768 : 256;
#else
  return 256;
#endif
}
inline const std::int64_t kE4m3PrefetchAhead = E4m3PrefetchAheadOfCpu();

}  // namespace mf::gemm

#endif  // MINIFLOAT_SRC_CPU_PREFETCH_DISTANCE_H_
