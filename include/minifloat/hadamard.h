// minifloat/hadamard.h: the Hadamard rotation used before quantizing (QuaRot, SpinQuant, QuIP#).
//
// rotate(x, count, n) replaces each group of n consecutive values by its Sylvester-ordered Walsh-Hadamard transform
// times n^-1/2, as `fast_hadamard_transform.hadamard_transform(x, scale=n**-0.5)`:
//   y[i] = n^-1/2 * sum_j (-1)^popcount(i & j) * x[j],   0 <= i, j < n.
// The matrix is symmetric and orthogonal, so rotate is its own inverse up to f32 rounding.
//
// Arithmetic (exact order, so that every fast path can be bit-identical to mf::ref::rotate):
//   1. for h = 1, 2, 4, ..., n/2: for every j with (j & h) == 0, with a = x[j] and b = x[j + h] from the previous
//      stage: x[j] = a + b, x[j + h] = a - b (f32 adds, round to nearest even; no FMA, no reassociation);
//   2. x[j] = x[j] * rotate_scale(n), one f32 multiply per value.
// Each stage's values depend only on the previous stage's, so any traversal order gives the same bits. Outputs
// that are NaN are NaN in every implementation, but their sign and payload are unspecified.
// Error, while nothing overflows: each output is within (log2(n) + 2) * 2^-24 * n^-1/2 * sum_j |x[j]| of the exact
// value, and the group's 2-norm error is within (log2(n) + 2) * 2^-24 * ||x||_2 (first order in 2^-24).
//
// Sizes: n is a power of two, 1 <= n <= 4096 (LLM use is 16..4096; 1..8 are accepted for completeness);
// count is a multiple of n. Anything else throws std::invalid_argument naming the offending values.
// mf::rotate uses SIMD for n >= 16 (the best Highway target this CPU supports) and OpenMP threads over groups for
// inputs of 1 MiB or more; its results are bit-identical to mf::ref::rotate for every input.
#pragma once

#include <bit>
#include <cstddef>

namespace mf {

inline constexpr int kMaxRotateSize = 4096;

// n^-1/2 rounded to the nearest f32 (n = 2^k): 2^(-k/2) for even k, and the nearest f32 to sqrt(1/2), which is
// 0x1.6a09e6p-1, times 2^(-(k-1)/2) for odd k (exact scaling, so still the nearest f32). Precondition: valid n.
constexpr float rotate_scale(int n) {
  const int k = std::countr_zero(static_cast<unsigned>(n));
  float s = (k % 2 == 1) ? 0x1.6a09e6p-1f : 1.0f;
  for (int i = 0; i < k / 2; ++i) s *= 0.5f;
  return s;
}

// Throws std::invalid_argument unless n is a power of two in [1, kMaxRotateSize] and count is a multiple of n.
void validate_rotate(std::size_t count, int n);

// In place, over x[0, count): the fast path (SIMD + threads), bit-identical to ref::rotate.
void rotate(float* x, std::size_t count, int n);

namespace ref {
// In place, over x[0, count): plain scalar loops in the order documented above; the definition of the results.
void rotate(float* x, std::size_t count, int n);
}  // namespace ref

}  // namespace mf
