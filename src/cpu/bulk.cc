// Bulk casts: threads over chunks, the SIMD element encoder (bulk-inl.h) dispatched to this CPU's best target, and
// decode by a table of every code's value (the scalar codec's, computed once per call).
#include <omp.h>

#include <algorithm>
#include <array>
#include <bit>
#include <stdexcept>
#include <string>
#include <vector>

#include "bulk_kernels.h"
#include "minifloat/bulk.h"
#include "minifloat/random.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "../src/cpu/bulk.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "bulk-inl.h"

#if HWY_ONCE
namespace mf {
namespace cpu {
HWY_EXPORT(EncodeBytes);
HWY_EXPORT(EncodeWords);
}  // namespace cpu

namespace {

constexpr std::size_t kChunk = std::size_t{1} << 16;  // elements per thread's piece, and per stochastic bit buffer

int thread_count(int requested, std::size_t n) {
  if (n < 2 * kChunk) return 1;
  return requested > 0 ? requested : omp_get_max_threads();
}

void check(const Format& f, std::size_t n, std::size_t m, int code_bits, const char* what) {
  if (n != m) {
    throw std::invalid_argument(std::string(what) + ": " + std::to_string(n) + " values but " + std::to_string(m) +
                                " codes");
  }
  const bool fits = code_bits == 8 ? f.bits() <= 8 : f.bits() == 16;
  if (!fits) {
    throw std::invalid_argument(std::string(what) + ": " + std::string(f.name) + " has " + std::to_string(f.bits()) +
                                "-bit codes, not " + (code_bits == 8 ? "8 bits or fewer" : "16 bits"));
  }
}

template <class Out, class Kernel>
void encode_chunks(const Format& f, std::span<const float> x, std::span<Out> codes, const BulkOptions& o,
                   Kernel kernel) {
  const cpu::BulkPlan plan = cpu::bulk_plan(f, {o.rounding, o.overflow, 0});
  const std::size_t n = x.size(), chunks = (n + kChunk - 1) / kChunk;
  const bool stochastic = o.rounding == Rounding::stochastic;
#pragma omp parallel num_threads(thread_count(o.threads, n))
  {
    std::vector<std::uint32_t> random(stochastic ? kChunk : 0);
#pragma omp for schedule(static)
    for (std::size_t c = 0; c < chunks; ++c) {
      const std::size_t begin = c * kChunk, len = std::min(kChunk, n - begin);
      if (stochastic) {
        for (std::size_t i = 0; i < len; ++i) random[i] = stochastic_bits(o.seed, o.first_index + begin + i);
      }
      kernel(plan, x.data() + begin, len, stochastic ? random.data() : nullptr, codes.data() + begin);
    }
  }
}

template <class In>
void decode_table(const Format& f, std::span<const In> codes, std::span<float> x, int threads) {
  std::vector<float> table(f.code_count());
  for (std::uint32_t c = 0; c < table.size(); ++c) table[c] = decode(f, c);
  const In mask = static_cast<In>(f.code_count() - 1);
  const std::size_t n = codes.size();
#pragma omp parallel for num_threads(thread_count(threads, n)) schedule(static)
  for (std::size_t i = 0; i < n; ++i) x[i] = table[codes[i] & mask];
}

}  // namespace

void encode_bulk(const Format& f, std::span<const float> x, std::span<std::uint8_t> codes, const BulkOptions& o) {
  check(f, x.size(), codes.size(), 8, "encode_bulk");
  encode_chunks(f, x, codes, o, HWY_DYNAMIC_DISPATCH(cpu::EncodeBytes));
}

void encode_bulk(const Format& f, std::span<const float> x, std::span<std::uint16_t> codes, const BulkOptions& o) {
  check(f, x.size(), codes.size(), 16, "encode_bulk");
  encode_chunks(f, x, codes, o, HWY_DYNAMIC_DISPATCH(cpu::EncodeWords));
}

void decode_bulk(const Format& f, std::span<const std::uint8_t> codes, std::span<float> x, int threads) {
  check(f, x.size(), codes.size(), 8, "decode_bulk");
  decode_table(f, codes, x, threads);
}

void decode_bulk(const Format& f, std::span<const std::uint16_t> codes, std::span<float> x, int threads) {
  check(f, x.size(), codes.size(), 16, "decode_bulk");
  if (f == bf16) {  // the upper half of an f32: no table needed
    const std::size_t n = codes.size();
#pragma omp parallel for num_threads(thread_count(threads, n)) schedule(static)
    for (std::size_t i = 0; i < n; ++i) x[i] = std::bit_cast<float>(static_cast<std::uint32_t>(codes[i]) << 16);
    return;
  }
  decode_table(f, codes, x, threads);
}

}  // namespace mf
#endif  // HWY_ONCE
