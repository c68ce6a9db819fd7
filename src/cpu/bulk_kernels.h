// Internal: what the bulk cast kernels (bulk-inl.h) share with their dispatch (bulk.cc).
#pragma once

#include <cstddef>
#include <cstdint>

#include "minifloat/codec.h"

namespace mf::cpu {

// One cast's format and options, with the codes the scalar codec gives for the cases the vector steps replace by a
// constant: overflow, zero, and a negative value in an unsigned format (each by sign where it has one).
struct BulkPlan {
  const Format* format;
  EncodeOptions options;
  std::uint32_t overflow_pos, overflow_neg, zero_pos, zero_neg, negative_code;
};

inline BulkPlan bulk_plan(const Format& f, EncodeOptions o) {
  o.random_bits = 0;
  return {&f, o, detail::overflow_code(f, 0, o), detail::overflow_code(f, f.sign_mask(), o), encode(f, 0.0f, o),
          encode(f, -0.0f, o), encode(f, -1.0f, o)};
}

}  // namespace mf::cpu
