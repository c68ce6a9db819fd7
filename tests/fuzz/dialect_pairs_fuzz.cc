// libFuzzer target for the dialect pair forms (scripts/fuzz.sh builds and runs it): a safetensors file whose tensors
// are matched by name as compressed-tensors (pack-quantized words with weight_shape, int-quantized, nvfp4 and mxfp4
// packs), ModelOpt (INT4 two rows per byte, INT8 and FP8 per channel, MXFP4), AutoAWQ, AutoGPTQ and gpt-oss store
// them. Each tensor either matches no form, matches one whose shapes all agree (and then dequantizes to exactly
// R x C finite-or-not values with no read out of bounds), or throws IoError naming it.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

#include "../../src/checkpoint/dialect_pairs.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto bytes = std::as_bytes(std::span(data, size));
  try {
    const mf::io::SafetensorsFile f = mf::io::parse_safetensors(bytes, "fuzz.safetensors");
    for (const mf::io::SafetensorsTensor& t : f.tensors()) {
      try {
        const std::optional<mf::io::QuantizedPair> p = mf::io::detail::match_dialect_pair(f, t);
        if (!p) continue;
        if (p->shape.size() != 2 || p->shape[0] < 0 || p->shape[1] < 0) std::abort();
        // A pair's values are few enough to hold (the fuzzer's inputs are small; so are the shapes that fit them).
        if (static_cast<std::uint64_t>(p->shape[0]) * static_cast<std::uint64_t>(p->shape[1]) > (1u << 24)) continue;
        const std::vector<float> v = mf::io::detail::dequantize_dialect_pair(f, *p);
        if (v.size() != static_cast<std::size_t>(p->shape[0] * p->shape[1])) std::abort();
        (void)mf::io::detail::dequantize_dialect_pair(f, *p, true);
        (void)mf::io::detail::held_scheme(*p);
      } catch (const mf::io::IoError&) {
      }
    }
  } catch (const mf::io::IoError&) {
  }
  return 0;
}
