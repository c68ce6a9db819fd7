// The bulk cast kernels (bulk_dispatch.h) for a build without Highway (the WebAssembly page): the scalar codec, one
// element at a time. Bits are the scalar codec's by construction; only the speed differs from bulk.cc.
#include "bulk_dispatch.h"
#include "minifloat/codec.h"
#include "minifloat/random.h"

namespace mf::cpu {
namespace {

template <class Out>
void encode_each(const ElementCodec& k, const EncodeRun& run, const float* x, std::size_t n, Out* out) {
  EncodeOptions o = k.options;
  for (std::size_t i = 0; i < n; ++i) {
    if (o.rounding == Rounding::stochastic) o.random_bits = stochastic_bits(run.seed, run.first_index + i);
    out[i] = static_cast<Out>(encode(*k.format, x[i], o));
  }
}

template <class In>
void decode_each(const ElementCodec& k, const In* codes, std::size_t n, float* out) {
  for (std::size_t i = 0; i < n; ++i) out[i] = decode(*k.format, codes[i]);
}

}  // namespace

void encode_bytes(const ElementCodec& k, const EncodeRun& run, const float* x, std::size_t n, std::uint8_t* out) {
  encode_each(k, run, x, n, out);
}
void encode_words(const ElementCodec& k, const EncodeRun& run, const float* x, std::size_t n, std::uint16_t* out) {
  encode_each(k, run, x, n, out);
}
void decode_bytes(const ElementCodec& k, const std::uint8_t* codes, std::size_t n, float* out, bool /*stream*/) {
  decode_each(k, codes, n, out);
}
void decode_words(const ElementCodec& k, const std::uint16_t* codes, std::size_t n, float* out, bool /*stream*/) {
  decode_each(k, codes, n, out);
}

}  // namespace mf::cpu
