// Bulk casts: threads over chunks, the SIMD element codec (element_codec-inl.h, through bulk-inl.h) dispatched to
// this CPU's best target.
#include <omp.h>

#include <cfenv>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "bulk_kernels.h"
#include "minifloat/bulk.h"

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
HWY_EXPORT(DecodeBytes);
HWY_EXPORT(DecodeWords);
}  // namespace cpu

namespace {

constexpr std::size_t kChunk = std::size_t{1} << 16;  // elements per thread's piece

int thread_count(int requested, std::size_t n) {
  if (n < 2 * kChunk) return 1;
  return requested > 0 ? requested : omp_get_max_threads();
}

void check(const Format& f, std::size_t n, std::size_t m, int code_bits, const char* what) {
  if (n != m) {
    throw std::invalid_argument(std::string(what) + ": codes has " + std::to_string(m) + " elements, x has " +
                                std::to_string(n) + " (one code per value)");
  }
  const bool fits = code_bits == 8 ? f.bits() <= 8 : f.bits() == 16;
  if (!fits) {
    throw std::invalid_argument(std::string(what) + ": f: " + std::string(f.name) + " has " +
                                std::to_string(f.bits()) + "-bit codes, codes holds " +
                                (code_bits == 8 ? "8 bits or fewer" : "16 bits"));
  }
}

template <class Out, class Kernel>
void encode_chunks(const Format& f, std::span<const float> x, std::span<Out> codes, const BulkOptions& o,
                   Kernel kernel) {
  const cpu::ElementCodec codec = cpu::element_codec(f, {o.rounding, o.overflow, 0});
  const std::size_t n = x.size(), chunks = (n + kChunk - 1) / kChunk;
  const bool nearest = std::fegetround() == FE_TONEAREST;
  if (thread_count(o.threads, n) == 1) {  // no parallel region: it costs microseconds, a small array's whole cast
    kernel(codec, cpu::EncodeRun{o.seed, o.first_index, nearest}, x.data(), n, codes.data());
    return;
  }
#pragma omp parallel for num_threads(thread_count(o.threads, n)) schedule(static)
  for (std::size_t c = 0; c < chunks; ++c) {
    const std::size_t begin = c * kChunk, len = std::min(kChunk, n - begin);
    kernel(codec, cpu::EncodeRun{o.seed, o.first_index + begin, nearest}, x.data() + begin, len,
           codes.data() + begin);
  }
}

template <class In, class Kernel>
void decode_chunks(const Format& f, std::span<const In> codes, std::span<float> x, int threads, Kernel kernel) {
  const cpu::ElementCodec codec = cpu::element_codec(f);
  const std::size_t n = x.size(), chunks = (n + kChunk - 1) / kChunk;
  if (thread_count(threads, n) == 1) {
    kernel(codec, codes.data(), n, x.data());
    return;
  }
#pragma omp parallel for num_threads(thread_count(threads, n)) schedule(static)
  for (std::size_t c = 0; c < chunks; ++c) {
    const std::size_t begin = c * kChunk, len = std::min(kChunk, n - begin);
    kernel(codec, codes.data() + begin, len, x.data() + begin);
  }
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
  decode_chunks(f, codes, x, threads, HWY_DYNAMIC_DISPATCH(cpu::DecodeBytes));
}

void decode_bulk(const Format& f, std::span<const std::uint16_t> codes, std::span<float> x, int threads) {
  check(f, x.size(), codes.size(), 16, "decode_bulk");
  decode_chunks(f, codes, x, threads, HWY_DYNAMIC_DISPATCH(cpu::DecodeWords));
}

}  // namespace mf
#endif  // HWY_ONCE
