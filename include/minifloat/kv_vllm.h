// minifloat/kv_vllm.h: vLLM's NVFP4 KV cache (kv_cache_dtype "nvfp4" and "nvfp4_4over6"): one entry per token and
// KV head, a vector of head_dim values, with a per-tensor (per layer) f32 scale that the caller supplies (vLLM's
// k_scale / v_scale, 1 when the checkpoint has none) (docs/kv.md#vllm-nvfp4).
//
// An entry is head_dim / 2 bytes of e2m1 (value 2i in the low nibble of byte i) then head_dim / 16 ue4m3 block
// scales, one per 16 values: the block quantizer's output for scheme nvfp4 (rule e4m3: S = ue4m3(RNE(amax / 6 /
// scale))) or nvfp4-4over6 (rule 4over6: amax / 6 or amax / 4, whichever block has the smaller squared error,
// ties to 6) with the caller's scale as the tensor scale. A value decodes as e2m1 * S * scale.
//
// Pages. vLLM's page (one layer's block of block_size token slots) is [K_data | K_scale | V_data | V_scale]
// (csrc/libtorch_stable/nvfp4_kv_cache_kernels.cu), each region head-major (HND, the layout vLLM uses on SM100):
//   K_data   at h * block_size * D/2 + t * D/2           (head h, token t of the page), D/2 bytes
//   K_scale  at H * block_size * D/2 + h * block_size * D/16 + t * D/16, D/16 bytes
//   V_data, V_scale the same, after the K side's H * block_size * (D/2 + D/16) bytes.
// K scales are linear; V scales are linear, or (swizzle_v_scales: SM100's trtllm-gen reader) scale s of token t
// sits at row (t/4)*4 + s/(D/64), column (s % (D/64))*4 + t%4 of the head's [block_size, D/16] scale matrix.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "minifloat/kv.h"
#include "minifloat/scheme.h"

namespace mf {

enum class VllmKvFormat : std::uint8_t { nvfp4, nvfp4_4over6 };

// "vllm-nvfp4", "vllm-nvfp4-4over6"; vllm_kv_format_named throws std::invalid_argument listing them.
VllmKvFormat vllm_kv_format_named(std::string_view name);
std::string_view to_string(VllmKvFormat f);
std::vector<std::string> vllm_kv_format_names();
// The block scheme: nvfp4 or nvfp4-4over6.
Scheme vllm_kv_scheme(VllmKvFormat f);

// Bytes of one entry: head_dim / 2 + head_dim / 16 (vLLM's full_dim). Throws KvError unless head_dim is a positive
// multiple of 16.
int vllm_kv_entry_bytes(int head_dim);

// Entries back to back, one per head vector: values holds n x head_dim floats. `scale` is the per-tensor scale
// (> 0, finite; KvError otherwise, as for head_dim not a multiple of 16).
std::vector<std::uint8_t> vllm_kv_encode(VllmKvFormat f, int head_dim, std::span<const float> values, float scale);
// The inverse: entries.size() must be whole entries; returns n x head_dim floats.
std::vector<float> vllm_kv_decode(VllmKvFormat f, int head_dim, std::span<const std::uint8_t> entries, float scale);

// One layer's paged cache geometry.
struct VllmKvPages {
  int head_dim = 128;
  int num_kv_heads = 1;
  int block_size = 16;           // token slots per page
  bool swizzle_v_scales = true;  // SM100 (trtllm-gen); false: linear V scales as on SM120 (FlashInfer FA2)
};

// Bytes of one page: 2 * num_kv_heads * block_size * (head_dim / 2 + head_dim / 16). Throws KvError for a bad
// geometry (head_dim not a multiple of 16; with swizzled V scales, head_dim not a multiple of 64 or block_size not
// a multiple of 4).
std::int64_t vllm_kv_page_bytes(const VllmKvPages& p);

// Writes tokens into a caller's buffer of whole pages (reshape_and_cache_flash): key and value hold tokens x
// num_kv_heads x head_dim floats; token t goes to slot slots[t] (page slots[t] / block_size, token slots[t] %
// block_size of it). Other slots are left as they are. Throws KvError for sizes that do not fit, slots outside the
// buffer, and a k_scale or v_scale that is not finite and > 0.
void write_vllm_kv_pages(VllmKvFormat f, const VllmKvPages& p, std::span<std::uint8_t> pages,
                         std::span<const float> key, std::span<const float> value, std::span<const std::int64_t> slots,
                         float k_scale, float v_scale);
// Decodes the tokens at `slots` into key and value (slots.size() x num_kv_heads x head_dim floats each).
void read_vllm_kv_pages(VllmKvFormat f, const VllmKvPages& p, std::span<const std::uint8_t> pages,
                        std::span<const std::int64_t> slots, float k_scale, float v_scale, std::span<float> key,
                        std::span<float> value);

// What a format costs on `values` (n x head_dim) with tensor scale `scale`: bytes per head vector against bf16's
// 2 * head_dim, and the round trip's error (kv_error_stats).
struct VllmKvReport {
  VllmKvFormat format = VllmKvFormat::nvfp4;
  int head_dim = 0;
  std::int64_t vectors = 0;
  int bytes_per_vector = 0;
  double compression = 0;  // bf16 bytes / format bytes
  ErrorStats error;
};
VllmKvReport vllm_kv_report(VllmKvFormat f, int head_dim, std::span<const float> values, float scale);

}  // namespace mf
