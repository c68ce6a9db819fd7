// Internal: what make-example-checkpoint's miniatures share (src/checkpoint/model_shapes.cc defines them): each
// architecture's config.json text and the deterministic tensor values, so that a published release in miniature
// (release_examples.cc) starts from the very bf16 model `--arch` writes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "minifloat/checkpoint_commands.h"

namespace mf::io::detail {

// The config.json text of `arch` at size `z` (what write_example_checkpoint writes).
std::string example_config(ExampleArch arch, const ExampleSize& z);

// A hash router's token -> experts table (I64): token t picks experts t, t + 1, ... (mod `experts`).
std::vector<std::byte> i64_table(const ShapedName& t, std::uint64_t experts);

// Deterministic bf16 values of tensor `t` (a 1-D tensor near 1, a matrix normal with std 0.02) from `seed` (its
// index); pinned_amax: every matrix's largest magnitude is 2688 x 2^-16.
std::vector<std::byte> bf16_values(const ShapedName& t, std::uint64_t seed, bool pinned_amax);

}  // namespace mf::io::detail
