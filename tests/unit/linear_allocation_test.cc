// linear() in a decode loop allocates nothing once its buffers have grown (docs/gemm.md): every operator new of
// this program is counted, and calls after the first few, at shapes no larger than theirs, must make none. A test
// program of its own, since it replaces the global operator new and delete.
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <cstdlib>
#include <new>
#include <random>
#include <string>
#include <vector>

#include "minifloat/gemm.h"
#include "minifloat/quantize.h"

namespace {
std::atomic<long> allocations{0};
}  // namespace

// The replacements pair malloc with free themselves; inlined into the test's own new and delete, GCC's sanitizer
// build would see a free of what `new` returned and warn.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

void* operator new(std::size_t size) {
  allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t size) { return operator new(size); }
void* operator new(std::size_t size, std::align_val_t align) {
  allocations.fetch_add(1, std::memory_order_relaxed);
  const auto a = static_cast<std::size_t>(align);
  if (void* p = std::aligned_alloc(a, (size + a - 1) / a * a)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t size, std::align_val_t align) { return operator new(size, align); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }

namespace {

using Shape = std::vector<std::int64_t>;

std::vector<float> gaussian(std::int64_t count, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> v(static_cast<std::size_t>(count));
  for (float& x : v) x = normal(rng);
  return v;
}

// Allocations made by `calls` calls of linear at each M of `rows` (largest first: the buffers grow to it in the
// warm-up), after one warm-up round.
long allocations_in_decode_loop(const char* scheme, int threads, std::initializer_list<std::int64_t> rows) {
  const std::int64_t n = 512, k = 1024;
  const std::vector<float> wv = gaussian(n * k, 1), x = gaussian(16 * k, 2);
  const mf::QuantizedTensor q = mf::quantize(wv.data(), Shape{n, k}, mf::scheme_named(scheme));
  mf::Weight w;
  w.quantized = &q;
  std::vector<float> y(static_cast<std::size_t>(16 * n));
  mf::GemmOptions o;
  o.threads = threads;
  const auto call = [&](std::int64_t m) {  // the shape in an array: a vector would be an allocation of the test's
    const std::array<std::int64_t, 2> shape{m, k};
    mf::linear(x.data(), shape, w, mf::GemmOut{y.data(), nullptr}, o);
  };
  for (const std::int64_t m : rows) call(m);
  const long before = allocations.load();
  for (int step = 0; step < 5; ++step) {
    for (const std::int64_t m : rows) call(m);
  }
  return allocations.load() - before;
}

TEST(LinearAllocation, CountsThisProgramsAllocations) {  // the counter itself: a test that can fail
  const long before = allocations.load();
  auto* v = new std::vector<float>(100);
  delete v;
  EXPECT_EQ(allocations.load() - before, 2);
}

TEST(LinearAllocation, DecodeLoopAllocatesNothing) {
  for (const char* scheme : {"fp8-128x128", "fp8-1x128", "mxfp8", "mxfp4", "nvfp4"}) {
    for (const int threads : {1, 2}) {
      EXPECT_EQ(allocations_in_decode_loop(scheme, threads, {8, 4, 1}), 0) << scheme << ", " << threads << " threads";
      EXPECT_EQ(allocations_in_decode_loop(scheme, threads, {16, 1}), 0) << scheme << ", " << threads << " threads";
    }
  }
}

}  // namespace
