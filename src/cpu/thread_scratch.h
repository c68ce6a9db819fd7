// Aligned f32 scratch that a thread keeps from one call to the next.
#pragma once

#include <cstddef>

#include "hwy/aligned_allocator.h"

namespace mf::gemm {

// A large GEMM's scratch (the activations in the kernel's layout, the running C) is megabytes: allocated per call,
// every page of it was faulted in again and zeroed by the kernel (about 17 MB a call at M = 512, K = 4096, which
// `perf` showed as 3-4% of a 2-thread call;
// docs/benchmark-history.md#m--512-the-activations-as-codes-the-scratch-kept-and-what-bounds-the-tile-2026-12-06).
// Kept per thread (thread_local), it is faulted in once per thread and size; `trim` gives back what a rare huge
// call took, so that it is not held for the thread's life.
class ThreadScratch {
 public:
  // At least n floats, their contents unspecified.
  float* get(std::size_t n) {
    if (n > size_) {
      data_.reset();  // the old block first: both at once would double the peak
      data_ = hwy::AllocateAligned<float>(n);
      size_ = n;
    }
    return data_.get();
  }
  // Frees the buffer when it holds more than `keep` floats.
  void trim(std::size_t keep) {
    if (size_ > keep) data_.reset(), size_ = 0;
  }

 private:
  hwy::AlignedFreeUniquePtr<float[]> data_;
  std::size_t size_ = 0;
};

// What a thread keeps at most between calls: 16 Mi floats (64 MiB), the activations of M = 2048 at K = 8192.
inline constexpr std::size_t kScratchKept = std::size_t{1} << 24;

}  // namespace mf::gemm
