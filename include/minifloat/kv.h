// minifloat/kv.h: KV-cache entries, one token of 512 values, and a paged cache of them (docs/spec.md#kv).
//
// Six entry formats. Each stores a token's quantized values as codes then scales (the block quantizer's own
// output, mf::quantize, per token), so an entry decodes with the scheme alone.
//
//   fp4-e4m3-16 (default)  288 bytes = 256 bytes of e2m1 (value 2i in the low nibble of byte i) + 32 ue4m3 scales,
//                          one per 16 values: scheme fp4-e4m3-16, S = ue4m3(RNE(amax / 6)), no tensor scale.
//   mxfp8                  528 bytes = 512 bytes of e4m3 + 16 ue8m0 scales, one per 32 values: scheme mxfp8 with
//                          the deepseek profile (S = 2^ceil(log2(max(amax, 1e-4) / 448)), as act_quant).
//   v4-mixed               584 bytes = 448 bytes of e4m3 (the non-RoPE dims 0..447) + 128 bytes of bf16 (the 64
//                          RoPE dims 448..511, little-endian, RNE) + 7 ue8m0 scales, one per 64 values (deepseek
//                          profile: V4's act_quant(kv[..., :-rd], 64, ...)) + 1 zero byte of padding.
//   v4-nvfp4               384 bytes = 224 bytes of e2m1 (dims 0..447, value 2i in the low nibble of byte i) + 128
//                          bytes of bf16 (RoPE dims 448..511) + 28 ue4m3 scales, one per 16 values (S =
//                          ue4m3(RNE(amax / 6)), no tensor scale, as fp4-e4m3-16) + 4 zero bytes of padding.
//   mxfp6-e3m2, mxfp6-e2m3 400 bytes = 384 bytes of e3m2 / e2m3 (four values in 3 bytes, value i at bits 6i.. of the
//                          little-endian 24-bit group: the packed layout of docs/spec.md#packing) + 16 ue8m0 scales,
//                          one per 32 values (OCP MX floor rule).
//
// Sources: the 288/528-byte entries are FlashMLA's V4.1 KV formats (csrc/cuda_kernels/kv_cache_format.h: "[raw
// data, 1-byte scales]", 512 B e4m3 + 16 B ue8m0 and 256 B e2m1 + 32 B e4m3) and DeepInfer's KV cache
// (docs/spec.md#deepinfer-kv); the 584-byte entry is FlashMLA's MODEL1_FP8Sparse layout for DeepSeek V4
// (tests/quant.py: 448 e4m3 + 64 bf16, then 7 e8m0 scales + 1 pad byte per token). Known differences, in blocks of tiny
// values only (docs/kv.md): a V4.1 port (vllm-gaudi) clamps the FP4 cache's amax to 6 * 2^-9, so a block with
// amax <= 6 * 2^-10 keeps scale 0x01 there, where here its scale rounds to 0 and its values to signed zeros (as
// fp4-e4m3-16 does everywhere); FlashMLA's MODEL1 test helper clamps the v4-mixed scale (amax / 448), not amax, to
// 1e-4. The 384-byte entry is FlashInfer's DeepSeek-V4 NVFP4 sparse-MLA cache (flashinfer/mla, _BYTES_PER_TOKEN
// 384: 352 data bytes then 32 scale bytes per token, scales from nvfp4_kv_quantize with global scale 1). The MXFP6
// entries are minifloat's: the mxfp8 entry's [codes, scales] with OCP MXFP6 elements.
//
// Pages. A cache is a run of pages of `page_size` token slots; slot s is token s % page_size of page s / page_size.
//   fp4-e4m3-16, mxfp8, mxfp6-*: a page is page_size whole entries back to back (FlashMLA V4.1: scales inline).
//   v4-mixed: a page holds page_size data rows of 576 bytes (e4m3 then bf16), then page_size scale rows of 8 bytes,
//             and is padded to a multiple of 576 bytes (FlashMLA MODEL1: the scales as a footer of the page, so the
//             576-byte rows stay 16-byte aligned for TMA). One entry alone is a 1-slot page without the padding.
//   v4-nvfp4: page_size data rows of 352 bytes, then page_size scale rows of 32 bytes, no padding (FlashInfer).
#pragma once

#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "minifloat/error_report.h"
#include "minifloat/scheme.h"

namespace mf {

enum class KvFormat : std::uint8_t { fp4_e4m3_16, mxfp8, v4_mixed, v4_nvfp4, mxfp6_e3m2, mxfp6_e2m3 };

inline constexpr int kKvValues = 512;   // values per entry (one token's latent)
inline constexpr int kKvRopeDims = 64;  // v4-mixed, v4-nvfp4: the last 64 values are RoPE dims, kept in bf16

// A KV format's byte counts.
struct KvLayout {
  int quantized_values;  // values quantized by the block scheme: 512, 512, 448, 448, 512, 512
  int data_bytes;        // codes (+ bf16 RoPE): 256, 512, 576, 352, 384, 384
  int scale_bytes;       // scale codes (+ padding): 32, 16, 8, 32, 16, 16
  int scale_count;       // scale codes: 32, 16, 7, 28, 16, 16
  bool scale_footer;     // scales after all of a page's data rows (v4-*) or right after each token's data
  int page_align;        // a page's byte size is a multiple of this: 576 for v4-mixed, else 1
  constexpr int entry_bytes() const { return data_bytes + scale_bytes; }  // 288, 528, 584, 384, 400, 400
};

KvLayout kv_layout(KvFormat f);
// "fp4-e4m3-16", "mxfp8", "v4-mixed", "v4-nvfp4", "mxfp6-e3m2", "mxfp6-e2m3"; kv_format_named throws
// std::invalid_argument listing them.
KvFormat kv_format_named(std::string_view name);
std::string_view to_string(KvFormat f);
std::vector<std::string> kv_format_names();
// The block scheme of the quantized values.
Scheme kv_scheme(KvFormat f);

// Values or buffers that do not fit: the message names both shapes (or sizes).
struct KvError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

// Bytes of one page of `page_size` slots (page_size >= 1).
std::int64_t kv_page_bytes(KvFormat f, int page_size);

// `tokens` entries, back to back (each as described above): values holds tokens x 512 floats.
std::vector<std::uint8_t> kv_encode(KvFormat f, std::span<const float> values);
// The inverse: entries.size() must be a whole number of entries; returns tokens x 512 floats.
std::vector<float> kv_decode(KvFormat f, std::span<const std::uint8_t> entries);

// A batch of tokens into a preallocated paged buffer (pages.size() a multiple of kv_page_bytes): token t (values
// [512 t, 512 t + 512)) goes to slot slots[t]. Other slots are left as they are. Throws KvError for sizes that do
// not fit and slots past the buffer; repeated slots keep the last token.
void write_kv_pages(KvFormat f, int page_size, std::span<std::uint8_t> pages, std::span<const float> values,
                    std::span<const std::int64_t> slots);
// Decodes the tokens at `slots` into out (slots.size() x 512 floats).
void read_kv_pages(KvFormat f, int page_size, std::span<const std::uint8_t> pages, std::span<const std::int64_t> slots,
                   std::span<float> out);

// A paged cache that owns its buffer (zero-filled: a never-written slot decodes to zeros).
class KvCache {
 public:
  KvCache(KvFormat format, int page_size, std::int64_t pages);
  KvFormat format() const { return format_; }
  int page_size() const { return page_size_; }
  std::int64_t pages() const { return pages_; }
  std::int64_t slots() const { return pages_ * page_size_; }
  std::span<const std::uint8_t> bytes() const { return buffer_; }
  std::span<const std::uint8_t> page(std::int64_t p) const;  // throws KvError for p out of range
  void write(std::span<const float> values, std::span<const std::int64_t> slots) {
    write_kv_pages(format_, page_size_, buffer_, values, slots);
  }
  std::vector<float> read(std::span<const std::int64_t> slots) const;

 private:
  KvFormat format_;
  int page_size_;
  std::int64_t pages_;
  std::vector<std::uint8_t> buffer_;
};

// What a format costs on `values` (tokens x 512): bytes per token against bf16's 1024, and the error of a round
// trip (count, mse, sqnr_db, mean_rel_error, max_rel_error, mean_abs_error_ratio, zeroed_fraction; the RoPE dims
// of v4-mixed and v4-nvfp4 count too, with their bf16 rounding).
struct KvReport {
  KvFormat format = KvFormat::fp4_e4m3_16;
  std::int64_t tokens = 0;
  int bytes_per_token = 0;
  double compression = 0;  // bf16 bytes / format bytes
  ErrorStats error;
};
KvReport kv_report(KvFormat f, std::span<const float> values);
// The error statistics of a round trip: x against back (the same size); non-finite x are counted apart.
ErrorStats kv_error_stats(std::span<const float> x, std::span<const float> back);

}  // namespace mf
