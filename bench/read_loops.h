// Read-only loops that the memory, not the core, limits: the yardsticks bench_gemm (ReadBandwidth) and
// bench_quantize (act_quant's `vs_wide_read`) measure beside their kernels.
#ifndef MINIFLOAT_BENCH_READ_LOOPS_H_
#define MINIFLOAT_BENCH_READ_LOOPS_H_

#include <cstddef>
#include <cstdint>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace mf::bench {

#if defined(__x86_64__)
// XOR of data[0, n) (n a multiple of 32 words) with four 512-bit (or 256-bit) loads per step: a read loop that the
// memory, not the core, limits (a compiler's baseline SSE2 loop reached 60-70% of it here).
__attribute__((target("avx512f"))) inline std::uint64_t xor_512(const std::uint64_t* data, std::size_t n) {
  __m512i a = _mm512_setzero_si512(), b = a, c = a, d = a;
  for (std::size_t i = 0; i < n; i += 32) {
    a = _mm512_xor_si512(a, _mm512_loadu_si512(data + i));
    b = _mm512_xor_si512(b, _mm512_loadu_si512(data + i + 8));
    c = _mm512_xor_si512(c, _mm512_loadu_si512(data + i + 16));
    d = _mm512_xor_si512(d, _mm512_loadu_si512(data + i + 24));
  }
  std::uint64_t words[8], x = 0;
  _mm512_storeu_si512(words, _mm512_xor_si512(_mm512_xor_si512(a, b), _mm512_xor_si512(c, d)));
  for (const std::uint64_t w : words) x ^= w;
  return x;
}
__attribute__((target("avx2"))) inline std::uint64_t xor_256(const std::uint64_t* data, std::size_t n) {
  __m256i a = _mm256_setzero_si256(), b = a, c = a, d = a;
  for (std::size_t i = 0; i < n; i += 32) {
    a = _mm256_xor_si256(a, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(data + i)));
    b = _mm256_xor_si256(b, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(data + i + 8)));
    c = _mm256_xor_si256(c, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(data + i + 16)));
    d = _mm256_xor_si256(d, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(data + i + 24)));
  }
  const __m256i x = _mm256_xor_si256(_mm256_xor_si256(a, b), _mm256_xor_si256(c, d));
  return static_cast<std::uint64_t>(_mm256_extract_epi64(x, 0) ^ _mm256_extract_epi64(x, 3));
}
#endif

inline std::uint64_t xor_words(const std::uint64_t* data, std::size_t n) {
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx512f")) return xor_512(data, n);
  if (__builtin_cpu_supports("avx2")) return xor_256(data, n);
#endif
  std::uint64_t x = 0;
  for (std::size_t i = 0; i < n; ++i) x ^= data[i];
  return x;
}

}  // namespace mf::bench

#endif  // MINIFLOAT_BENCH_READ_LOOPS_H_
