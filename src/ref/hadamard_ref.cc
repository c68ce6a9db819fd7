// The scalar reference Hadamard rotation: the definition that every fast path is tested against bit for bit.
#include <cstddef>
#include <stdexcept>
#include <string>

#include "minifloat/hadamard.h"

namespace mf {

namespace ref {

void rotate(float* x, std::size_t count, int n) {
  validate_rotate(count, n);
  const auto len = static_cast<std::size_t>(n);
  const float scale = rotate_scale(n);
  for (float* g = x; g != x + count; g += len) {
    for (std::size_t h = 1; h < len; h *= 2) {
      for (std::size_t i = 0; i < len; i += 2 * h) {
        for (std::size_t j = i; j < i + h; ++j) {
          const float a = g[j], b = g[j + h];
          g[j] = a + b;
          g[j + h] = a - b;
        }
      }
    }
    for (std::size_t j = 0; j < len; ++j) g[j] *= scale;
  }
}

}  // namespace ref
}  // namespace mf
