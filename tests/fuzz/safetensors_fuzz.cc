// libFuzzer target for the safetensors parser (scripts/fuzz.sh builds and runs it). Any input either parses into a
// file whose tensors tile its data section exactly, or throws IoError; anything else (a crash, another exception, a
// sanitizer report, a hang) is a bug.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

#include "minifloat/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto bytes = std::as_bytes(std::span(data, size));
  try {
    const mf::io::SafetensorsFile f = mf::io::parse_safetensors(bytes, "fuzz.safetensors");
    std::uint64_t covered = 0;
    for (const mf::io::SafetensorsTensor& t : f.tensors()) {
      const mf::io::TensorSize want = mf::io::tensor_size(t.dtype, t.shape);
      if (t.begin != covered || want.error || t.end - t.begin != want.bytes) std::abort();
      const std::span<const std::byte> b = f.bytes(t);
      volatile std::byte sink{};
      if (!b.empty()) sink = b.back();  // touch the bytes: ASan checks the view is in bounds
      (void)sink;
      covered = t.end;
    }
    if (covered != f.data_size() || f.header_size() + f.data_size() != size) std::abort();
  } catch (const mf::io::IoError&) {
  }
  return 0;
}
