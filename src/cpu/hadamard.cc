// The fast Hadamard rotation's Highway dispatch; the SIMD code is in hadamard-inl.h.
#include "hadamard_dispatch.h"

// foreach_target.h re-includes this file once per target. The path is found through the include/ directory, the
// only one CMake gives this target (a project-root include directory would allow "src/cpu/hadamard.cc").
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "../src/cpu/hadamard.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "hadamard-inl.h"

#if HWY_ONCE
namespace mf {

HWY_EXPORT(RotateGroups);

namespace cpu {
void rotate_groups(float* x, std::size_t groups, std::size_t len) {
  HWY_DYNAMIC_DISPATCH(RotateGroups)(x, groups, len);
}

}  // namespace cpu
}  // namespace mf
#endif  // HWY_ONCE
