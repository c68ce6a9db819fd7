// Blocks of output columns handed to threads in small chunks, whichever thread asks next.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>

namespace mf::gemm {

// A decode-shaped call lasts about a millisecond, and a sleeping OpenMP worker can take tens of microseconds to
// wake (longer on a busy machine): with a fixed half of the columns each, the call waits for the late thread. From
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

 private:
  std::int64_t blocks_, chunk_;
  std::atomic<std::int64_t> next_{0};
};

}  // namespace mf::gemm
