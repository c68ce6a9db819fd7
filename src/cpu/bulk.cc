// The bulk cast kernels (bulk_dispatch.h) on the SIMD element codec: bulk-inl.h compiled once per Highway target,
// each call dispatched to this CPU's best. The bulk casts themselves, which call them, are src/ops/bulk.cc.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "../src/cpu/bulk.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "hwy/cache_control.h"
#include "bulk-inl.h"

#if HWY_ONCE
namespace mf::cpu {

HWY_EXPORT(EncodeBytes);
HWY_EXPORT(EncodeWords);
HWY_EXPORT(DecodeBytes);
HWY_EXPORT(DecodeWords);

void encode_bytes(const ElementCodec& k, const EncodeRun& run, const float* x, std::size_t n, std::uint8_t* out) {
  HWY_DYNAMIC_DISPATCH(EncodeBytes)(k, run, x, n, out);
  if (run.stream_out) hwy::FlushStream();
}
void encode_words(const ElementCodec& k, const EncodeRun& run, const float* x, std::size_t n, std::uint16_t* out) {
  HWY_DYNAMIC_DISPATCH(EncodeWords)(k, run, x, n, out);
  if (run.stream_out) hwy::FlushStream();
}
void decode_bytes(const ElementCodec& k, const std::uint8_t* codes, std::size_t n, float* out, bool stream) {
  HWY_DYNAMIC_DISPATCH(DecodeBytes)(k, codes, n, out, stream);
  if (stream) hwy::FlushStream();  // the streamed lines visible before the cast returns (or another thread reads)
}
void decode_words(const ElementCodec& k, const std::uint16_t* codes, std::size_t n, float* out, bool stream) {
  HWY_DYNAMIC_DISPATCH(DecodeWords)(k, codes, n, out, stream);
  if (stream) hwy::FlushStream();  // the streamed lines visible before the cast returns (or another thread reads)
}

}  // namespace mf::cpu
#endif  // HWY_ONCE
