// minifloat/random.h: reproducible random bits for stochastic rounding.
//
// stochastic_bits(seed, i) is a pure function of (seed, i) (SplitMix64 finalizer), so a stream of values rounded
// stochastically gives the same codes for the same seed however it is split across threads or calls. Elements 2j and
// 2j + 1 take the low and the high half of one 64-bit SplitMix64 output: every bit of that output is as good as any
// other, and one 64-bit hash per two elements halves the multiplies that the bulk casts' vectors spend on them.
#pragma once

#include <cstdint>

namespace mf {

constexpr std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// 32 random bits for element `index` of a stream seeded with `seed`: half of splitmix64(splitmix64(seed) ^ (index / 2)),
// the low half for an even index, the high half for an odd one.
constexpr std::uint32_t stochastic_bits(std::uint64_t seed, std::uint64_t index) {
  return static_cast<std::uint32_t>(splitmix64(splitmix64(seed) ^ (index >> 1)) >> (index & 1) * 32);
}

}  // namespace mf
