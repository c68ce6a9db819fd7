// Blocks of output columns handed to threads in small chunks, whichever thread asks next.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>

namespace mf::gemm {

// A decode-shaped call lasts about a millisecond, and a sleeping OpenMP worker can take tens of microseconds to
// wake (longer on a busy machine): with a fixed half of the columns each, the call waited for the late thread. From
// a queue, the thread that starts first takes more. Every column is still computed by one thread in the definition's
// order, so the bits do not depend on who took what.
class ColumnQueue {
 public:
  ColumnQueue(std::int64_t blocks, std::int64_t chunk) : blocks_(blocks), chunk_(chunk) {}
  // Claims the next chunk: sets [begin, end) and returns true, or returns false when none is left.
  bool next(std::int64_t& begin, std::int64_t& end) {
    begin = next_.fetch_add(chunk_, std::memory_order_relaxed);
    end = std::min(blocks_, begin + chunk_);
    return begin < blocks_;
  }
  // Records that a claimed chunk is computed.
  void finished(std::int64_t begin, std::int64_t end) { done_.fetch_add(end - begin, std::memory_order_release); }
  // Waits, spinning, until every block is computed or `limit` has passed. A thread that reaches the end of an OpenMP
  // parallel region before the others sleeps there under OMP_WAIT_POLICY=passive, and the last one's wake-up call
  // reaches it 30-40 microseconds later on the development VM
  // (docs/benchmark-history.md#eighth-session-no-sleep-at-the-end-of-a-call-and-the-kernels-own-ceiling): longer than
  // the other thread's last chunk, which is all this waits for. The limit keeps a thread from spinning long on a
  // machine so busy that the other one is not running.
  void wait_until_done(std::chrono::microseconds limit = std::chrono::microseconds(200)) const {
    const auto stop = std::chrono::steady_clock::now() + limit;
    for (int spins = 0; done_.load(std::memory_order_acquire) < blocks_; ++spins) {
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
      if (spins % 64 == 63 && std::chrono::steady_clock::now() > stop) return;
    }
  }

 private:
  std::int64_t blocks_, chunk_;
  std::atomic<std::int64_t> next_{0}, done_{0};
};

}  // namespace mf::gemm
