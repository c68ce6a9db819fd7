// libFuzzer target for the GGUF parser and dequantizers (scripts/fuzz.sh builds and runs it). Any input either
// parses into a file whose tensors lie aligned inside its data section with their sizes computed from type and dims,
// or throws IoError; the decodable tensors under 1 MB dequantize to one f32 per element. Anything else (a crash,
// another exception, a sanitizer report, a hang, a huge allocation) is a bug.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <span>

#include "minifloat/gguf.h"

namespace {

void check(const mf::io::GgufFile& f, std::size_t size) {
  using namespace mf::io;
  if (f.data_offset() > size || f.alignment() == 0 || (f.alignment() & (f.alignment() - 1)) != 0) std::abort();
  for (const auto& [key, value] : f.metadata()) {
    if (f.find_metadata(key) != &value) std::abort();
    (void)value.text(4);
  }
  for (const GgufTensor& t : f.tensors()) {
    const std::optional<GgufTypeInfo> info = gguf_type_info(t.type);
    if (!info || f.find(t.name) != &t || t.offset % f.alignment() != 0) std::abort();
    if (t.bytes != t.elements() / info->block_elements * info->block_bytes) std::abort();
    const std::span<const std::byte> b = f.bytes(t);
    volatile std::byte sink{};
    if (!b.empty()) sink = b.back();  // touch the bytes: ASan checks the view is in bounds
    (void)sink;
    if (gguf_can_dequantize(t.type) && t.bytes < (1u << 20)) {
      try {
        if (dequantize_gguf(f, t).size() != t.elements()) std::abort();
      } catch (const IoError&) {
        std::abort();  // a decodable tensor of a parsed file always decodes
      }
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto bytes = std::as_bytes(std::span(data, size));
  try {
    check(mf::io::parse_gguf(bytes, "fuzz.gguf"), size);
  } catch (const mf::io::IoError&) {
  } catch (const std::exception&) {
    std::abort();  // every failure must be a named IoError
  }
  return 0;
}
