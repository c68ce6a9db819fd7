// src/checkpoint/parallel.h (private): the worker pool behind convert, dequantize, verify and inspect --stats, which
// run the tensors of all their shards at once while still failing the way a sequential loop would.
#pragma once

#include <algorithm>
#include <cstddef>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "../cpu/thread_count.h"

namespace mf::io::detail {

// `threads` workers, 0 (or less) meaning all: the library's one rule (src/cpu/thread_count.h).
inline int worker_count(int threads) { return cpu::thread_count(threads); }

// A job, or an empty function when no job is left.
using Job = std::function<void()>;

// Runs the jobs `next` hands out on `workers` threads, the caller's thread being one of them (so workers = 1 is a
// plain loop on the caller's thread). `next` is called under a lock: it may keep a plain cursor, open files and plan
// work, and it hands out jobs in the order a sequential loop would run them. Each worker holds one job at a time, so
// at most `workers` jobs (tensors) are in flight.
//
// Failure: once a job (or `next`) throws, no further job is handed out; jobs already running finish; then the
// exception of the earliest failed job in hand-out order is rethrown. Every job before a failed one had already been
// handed out, so that is exactly the error the sequential loop would have stopped at, whatever the timing.
inline void run_in_order(int workers, const std::function<Job()>& next) {
  std::mutex mutex;
  std::size_t handed_out = 0;
  bool stop = false;
  std::size_t failed_at = 0;
  std::exception_ptr failure;
  const auto fail = [&](std::size_t position, std::exception_ptr e) {  // under `mutex`
    stop = true;
    if (!failure || position < failed_at) {
      failure = std::move(e);
      failed_at = position;
    }
  };
  const auto work = [&] {
    for (;;) {
      Job job;
      std::size_t position = 0;
      {
        const std::lock_guard lock(mutex);
        if (stop) return;
        position = handed_out++;
        try {
          job = next();
        } catch (...) {
          fail(position, std::current_exception());
          return;
        }
        if (!job) {
          stop = true;  // the list is done: the other workers end when their job is
          return;
        }
      }
      try {
        job();
      } catch (...) {
        const std::lock_guard lock(mutex);
        fail(position, std::current_exception());
        return;
      }
    }
  };
  std::vector<std::thread> pool;
  pool.reserve(static_cast<std::size_t>(std::max(0, workers - 1)));
  try {
    for (int i = 1; i < workers; ++i) pool.emplace_back(work);
  } catch (...) {  // no thread could be started: the ones that were, and this one, still do all the work
  }
  work();
  for (std::thread& t : pool) t.join();
  if (failure) std::rethrow_exception(failure);
}

}  // namespace mf::io::detail
