// The Hadamard rotation's parameters (hadamard.h): which group sizes n a rotation over `count` values takes. Checked
// where a quantized tensor is validated (blocking.cc) and where a rotation runs (src/ref, src/ops), so it lives here,
// in the layer both sit below.
#include <bit>
#include <cstddef>
#include <stdexcept>
#include <string>

#include "minifloat/hadamard.h"

namespace mf {

void validate_rotate(std::size_t count, int n) {
  if (n < 1 || n > kMaxRotateSize || !std::has_single_bit(static_cast<unsigned>(n))) {
    throw std::invalid_argument("rotate: n = " + std::to_string(n) + " is not a power of two in [1, " +
                                std::to_string(kMaxRotateSize) + "]");
  }
  if (count % static_cast<std::size_t>(n) != 0) {
    throw std::invalid_argument("rotate: count = " + std::to_string(count) +
                                " is not a multiple of n = " + std::to_string(n));
  }
}

}  // namespace mf
