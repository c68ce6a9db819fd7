// minifloat/random.h: reproducible random bits for stochastic rounding.
//
// stochastic_bits(seed, i) is a pure function of (seed, i), so a stream of values rounded stochastically gives the
// same codes for the same seed however it is split across threads or calls. Each element's 32 bits are a 32-bit
// integer hash of its index (Wellons' "lowbias32", two multiply-xorshift rounds), keyed by splitmix64(seed): the low
// half of the key is added to the index, the high half (with the index's high 32 bits) is mixed in between the two
// rounds. Within one seed and one 2^32-element stretch of indices the hash is a bijection, so no two elements share
// their bits; seeds enter through SplitMix64, so nearby seeds give unrelated streams. A vector of 32-bit lanes computes
// it with two 32-bit multiplies per lane, which every SIMD target has (a 64-bit hash costs AVX2 three multiplies per
// 64-bit product).
#pragma once

#include <cstdint>

namespace mf {

constexpr std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// The key of a stream: the seed's SplitMix64 output (computed once per stream, not per element).
constexpr std::uint64_t stochastic_key(std::uint64_t seed) { return splitmix64(seed); }

// The value mixed in between the two rounds for indices whose high 32 bits are `index_high`.
constexpr std::uint32_t stochastic_middle(std::uint64_t key, std::uint32_t index_high) {
  return static_cast<std::uint32_t>(key >> 32) ^ (index_high * 0x9E3779B9u);
}

// The hash itself, given the index's low 32 bits plus the key's low half (mod 2^32), and stochastic_middle.
constexpr std::uint32_t stochastic_hash(std::uint32_t x, std::uint32_t middle) {
  x ^= x >> 16;
  x *= 0x7FEB352Du;
  x ^= middle;
  x ^= x >> 15;
  x *= 0x846CA68Bu;
  return x ^ (x >> 16);
}

// 32 random bits for element `index` of the stream whose key is `key` (stochastic_key(seed)).
constexpr std::uint32_t stochastic_bits_keyed(std::uint64_t key, std::uint64_t index) {
  return stochastic_hash(static_cast<std::uint32_t>(index) + static_cast<std::uint32_t>(key),
                         stochastic_middle(key, static_cast<std::uint32_t>(index >> 32)));
}

// 32 random bits for element `index` of a stream seeded with `seed`.
constexpr std::uint32_t stochastic_bits(std::uint64_t seed, std::uint64_t index) {
  return stochastic_bits_keyed(stochastic_key(seed), index);
}

}  // namespace mf
