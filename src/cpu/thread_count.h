// How many threads a call's parallel region runs on: the one rule behind every `threads` argument of the library
// (QuantizeOptions::threads, the GEMMs' and the bulk casts' threads, `minifloat gemm-bench --threads`).
#pragma once

#ifdef _OPENMP
#include <omp.h>
#endif

namespace mf::cpu {

// `requested` threads where it is positive; 0 (or less) means all of them. "All" is OpenMP's count,
// omp_get_max_threads(), not std::thread::hardware_concurrency(): it honours OMP_NUM_THREADS (and, in GNU's libgomp,
// the CPUs the process may run on: taskset), so a user or a test that caps OpenMP caps every call, and it is what an
// OpenMP region without num_threads() would run on anyway. num_threads() itself needs a positive count. A build
// without OpenMP (the WebAssembly page) runs everything on one thread.
inline int thread_count(int requested) {
#ifdef _OPENMP
  return requested > 0 ? requested : omp_get_max_threads();
#else
  (void)requested;
  return 1;
#endif
}

}  // namespace mf::cpu
