// Internal: the fast Hadamard rotation's entry point, called by the public mf::rotate (src/ops/rotate.cc).
#pragma once

#include <cstddef>

namespace mf::cpu {

// Rotates `groups` consecutive groups of `len` values in place on the dispatched SIMD target, bit-identical to
// mf::ref::rotate. len is a power of two of at least 16 (one AVX-512 vector).
void rotate_groups(float* x, std::size_t groups, std::size_t len);

}  // namespace mf::cpu
