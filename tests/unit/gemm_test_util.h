// What the GEMM unit tests share: random inputs and the message of a GemmError.
#pragma once

#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "minifloat/gemm.h"

namespace mf::test {

// n normal values from `seed`; with outliers, about 1% of them 500x larger.
inline std::vector<float> random_values(std::int64_t n, std::uint32_t seed, bool outliers = false) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<float> unit(0.0f, 1.0f);
  std::vector<float> x(static_cast<std::size_t>(n));
  for (float& v : x) v = normal(rng) * (outliers && unit(rng) < 0.01f ? 500.0f : 1.0f);
  return x;
}

// What fn's GemmError says, or "(no error)".
inline std::string message_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const mf::GemmError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace mf::test
