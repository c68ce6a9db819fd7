// Internal: what the bulk cast kernels (bulk-inl.h) share with their dispatch (bulk.cc).
#pragma once

#include <cstdint>

#include "element_codec.h"

namespace mf::cpu {

// One call's stochastic stream and floating-point environment.
struct EncodeRun {
  std::uint64_t seed;         // element i rounds with stochastic_bits(seed, first_index + i)
  std::uint64_t first_index;
  bool float_rounding_is_nearest;  // the CPU rounds f32 arithmetic to nearest: EncodeNearest's f32 step is exact
};

}  // namespace mf::cpu
