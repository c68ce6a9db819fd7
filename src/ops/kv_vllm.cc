// vLLM's NVFP4 KV cache: the block quantizer per head vector with the caller's tensor scale, and where each
// vector's codes and scales sit in vLLM's [K_data | K_scale | V_data | V_scale] page.
#include "minifloat/kv_vllm.h"

#include <array>
#include <cmath>
#include <cstring>

#include "enum_names.h"
#include "minifloat/quantize.h"
#include "minifloat/text.h"

namespace mf {
namespace {

constexpr std::array<std::string_view, 2> kNames{"vllm-nvfp4", "vllm-nvfp4-4over6"};

void check_head_dim(int head_dim) {
  if (head_dim < 16 || head_dim % 16 != 0) {
    throw KvError("vLLM NVFP4 KV: head_dim " + std::to_string(head_dim) +
                  " is not a positive multiple of 16 (one e4m3 scale per 16 values)");
  }
}

void check_scale(float scale, std::string_view what) {
  if (!(scale > 0) || !std::isfinite(scale)) {
    throw KvError("vLLM NVFP4 KV: " + std::string(what) + " = " + shortest(scale) +
                  " is not a finite per-tensor scale > 0");
  }
}

// Vectors of head_dim values in `values`, or KvError.
std::int64_t whole_vectors(std::size_t values, int head_dim, std::string_view what) {
  if (values % static_cast<std::size_t>(head_dim) != 0) {
    throw KvError("vLLM NVFP4 KV " + std::string(what) + ": " + std::to_string(values) +
                  " floats are not whole vectors of head_dim " + std::to_string(head_dim));
  }
  return static_cast<std::int64_t>(values / static_cast<std::size_t>(head_dim));
}

// n x head_dim values through the block quantizer, with `scale` as the tensor scale.
QuantizedTensor quantize_vectors(VllmKvFormat f, int head_dim, std::span<const float> values, float scale,
                                 std::string_view what) {
  const std::int64_t n = whole_vectors(values.size(), head_dim, what);
  QuantizeOptions o;
  o.tensor_scale = scale;
  o.tensor_name = std::string(what);
  const std::vector<std::int64_t> shape{n, head_dim};
  return quantize(values.data(), shape, vllm_kv_scheme(f), o);
}

// An empty n x head_dim QuantizedTensor for the codes and scales gathered from entries or pages.
QuantizedTensor empty_vectors(VllmKvFormat f, int head_dim, std::int64_t n, float scale) {
  QuantizedTensor q;
  q.shape = {n, head_dim};
  q.scheme = vllm_kv_scheme(f);
  q.scale_shape = {n, head_dim / 16};
  q.tensor_scale = scale;
  q.codes.resize(static_cast<std::size_t>(n * head_dim / 2));
  q.scales.resize(static_cast<std::size_t>(n * head_dim / 16));
  return q;
}

// Byte offsets of one vector's codes and of its scale s in a page buffer.
struct PageMap {
  VllmKvPages p;
  std::int64_t data_bytes, scale_bytes, side_bytes, page_bytes;

  explicit PageMap(const VllmKvPages& pages)
      : p(pages),
        data_bytes(pages.head_dim / 2),
        scale_bytes(pages.head_dim / 16),
        side_bytes(std::int64_t{pages.num_kv_heads} * pages.block_size * (data_bytes + scale_bytes)),
        page_bytes(2 * side_bytes) {}

  // side 0: K, 1: V.
  std::int64_t side_base(std::int64_t slot, int side) const {
    return (slot / p.block_size) * page_bytes + side * side_bytes;
  }
  std::int64_t data(std::int64_t slot, int side, int head) const {
    const std::int64_t t = slot % p.block_size;
    return side_base(slot, side) + (std::int64_t{head} * p.block_size + t) * data_bytes;
  }
  std::int64_t scale(std::int64_t slot, int side, int head, int s) const {
    const std::int64_t t = slot % p.block_size;
    std::int64_t within = t * scale_bytes + s;
    if (side == 1 && p.swizzle_v_scales) {
      // trtllm-gen's 4-token swizzle of the [block_size, D/16] matrix: rows (t/4)*4 .. +3 hold tokens t/4*4 .. +3.
      const std::int64_t group = scale_bytes / 4;
      within = ((t / 4) * 4 + s / group) * scale_bytes + (s % group) * 4 + t % 4;
    }
    return side_base(slot, side) + std::int64_t{p.num_kv_heads} * p.block_size * data_bytes +
           std::int64_t{head} * p.block_size * scale_bytes + within;
  }
};

// Checks a page buffer, the slots and the value count; returns the tokens.
std::int64_t check_pages(const VllmKvPages& p, std::size_t buffer_bytes, std::span<const std::int64_t> slots,
                         std::size_t key_values, std::size_t value_values, std::string_view what) {
  const std::int64_t page = vllm_kv_page_bytes(p);
  if (static_cast<std::int64_t>(buffer_bytes) % page != 0) {
    throw KvError("vLLM NVFP4 KV buffer of " + std::to_string(buffer_bytes) +
                  " bytes is not a whole number of pages of " + std::to_string(page) + " bytes (head_dim " +
                  std::to_string(p.head_dim) + ", " + std::to_string(p.num_kv_heads) + " KV heads, block_size " +
                  std::to_string(p.block_size) + ")");
  }
  const std::int64_t capacity = static_cast<std::int64_t>(buffer_bytes) / page * p.block_size;
  for (const std::int64_t s : slots) {
    if (s < 0 || s >= capacity) {
      throw KvError("vLLM NVFP4 KV slot " + std::to_string(s) + " is outside the buffer's " + std::to_string(capacity) +
                    " slots (" + std::to_string(capacity / p.block_size) + " pages of " + std::to_string(p.block_size) +
                    ")");
    }
  }
  const std::size_t want = slots.size() * static_cast<std::size_t>(p.num_kv_heads) * p.head_dim;
  for (const std::size_t got : {key_values, value_values}) {
    if (got != want) {
      throw KvError("vLLM NVFP4 KV " + std::string(what) + ": " + std::to_string(got) + " floats for " +
                    std::to_string(slots.size()) + " slots; expected [" + std::to_string(slots.size()) + ", " +
                    std::to_string(p.num_kv_heads) + ", " + std::to_string(p.head_dim) + "] = " + std::to_string(want));
    }
  }
  return static_cast<std::int64_t>(slots.size());
}

}  // namespace

VllmKvFormat vllm_kv_format_named(std::string_view name) {
  return detail::enum_named<VllmKvFormat>(kNames, name, "vLLM KV format");
}

std::string_view to_string(VllmKvFormat f) { return kNames[static_cast<std::size_t>(f)]; }

std::vector<std::string> vllm_kv_format_names() { return {kNames.begin(), kNames.end()}; }

Scheme vllm_kv_scheme(VllmKvFormat f) {
  return scheme_named(f == VllmKvFormat::nvfp4_4over6 ? "nvfp4-4over6" : "nvfp4");
}

int vllm_kv_entry_bytes(int head_dim) {
  check_head_dim(head_dim);
  return head_dim / 2 + head_dim / 16;
}

std::vector<std::uint8_t> vllm_kv_encode(VllmKvFormat f, int head_dim, std::span<const float> values, float scale) {
  const int entry = vllm_kv_entry_bytes(head_dim);
  check_scale(scale, "scale");
  const QuantizedTensor q = quantize_vectors(f, head_dim, values, scale, "values");
  const std::int64_t n = q.shape[0], data = head_dim / 2, scales = head_dim / 16;
  std::vector<std::uint8_t> out(static_cast<std::size_t>(n * entry));
  for (std::int64_t v = 0; v < n; ++v) {
    std::memcpy(out.data() + v * entry, q.codes.data() + v * data, static_cast<std::size_t>(data));
    std::memcpy(out.data() + v * entry + data, q.scales.data() + v * scales, static_cast<std::size_t>(scales));
  }
  return out;
}

std::vector<float> vllm_kv_decode(VllmKvFormat f, int head_dim, std::span<const std::uint8_t> entries, float scale) {
  const int entry = vllm_kv_entry_bytes(head_dim);
  check_scale(scale, "scale");
  if (entries.size() % static_cast<std::size_t>(entry) != 0) {
    throw KvError("vLLM NVFP4 KV entries: " + std::to_string(entries.size()) + " bytes are not whole entries of " +
                  std::to_string(entry) + " bytes (head_dim " + std::to_string(head_dim) + ")");
  }
  const std::int64_t n = static_cast<std::int64_t>(entries.size()) / entry, data = head_dim / 2, scales = head_dim / 16;
  QuantizedTensor q = empty_vectors(f, head_dim, n, scale);
  for (std::int64_t v = 0; v < n; ++v) {
    std::memcpy(q.codes.data() + v * data, entries.data() + v * entry, static_cast<std::size_t>(data));
    std::memcpy(q.scales.data() + v * scales, entries.data() + v * entry + data, static_cast<std::size_t>(scales));
  }
  std::vector<float> out(static_cast<std::size_t>(n * head_dim));
  dequantize(q, out.data());
  return out;
}

std::int64_t vllm_kv_page_bytes(const VllmKvPages& p) {
  check_head_dim(p.head_dim);
  if (p.num_kv_heads < 1 || p.block_size < 1) {
    throw KvError("vLLM NVFP4 KV: num_kv_heads (" + std::to_string(p.num_kv_heads) + ") and block_size (" +
                  std::to_string(p.block_size) + ") must be at least 1");
  }
  if (p.swizzle_v_scales && (p.head_dim % 64 != 0 || p.block_size % 4 != 0)) {
    throw KvError(
        "vLLM NVFP4 KV: swizzled V scales (SM100) need head_dim a multiple of 64 and block_size a multiple "
        "of 4, not head_dim " +
        std::to_string(p.head_dim) + " and block_size " + std::to_string(p.block_size));
  }
  return PageMap(p).page_bytes;
}

void write_vllm_kv_pages(VllmKvFormat f, const VllmKvPages& p, std::span<std::uint8_t> pages,
                         std::span<const float> key, std::span<const float> value, std::span<const std::int64_t> slots,
                         float k_scale, float v_scale) {
  const std::int64_t tokens = check_pages(p, pages.size(), slots, key.size(), value.size(), "key/value");
  check_scale(k_scale, "k_scale");
  check_scale(v_scale, "v_scale");
  if (tokens == 0) return;
  const PageMap m(p);
  const std::array<QuantizedTensor, 2> q{quantize_vectors(f, p.head_dim, key, k_scale, "key"),
                                         quantize_vectors(f, p.head_dim, value, v_scale, "value")};
  for (int side = 0; side < 2; ++side) {
    for (std::int64_t t = 0; t < tokens; ++t) {
      const std::int64_t slot = slots[static_cast<std::size_t>(t)];
      for (int h = 0; h < p.num_kv_heads; ++h) {
        const std::int64_t v = t * p.num_kv_heads + h;
        std::memcpy(pages.data() + m.data(slot, side, h), q[side].codes.data() + v * m.data_bytes,
                    static_cast<std::size_t>(m.data_bytes));
        for (int s = 0; s < m.scale_bytes; ++s) {
          pages[static_cast<std::size_t>(m.scale(slot, side, h, s))] = q[side].scales[v * m.scale_bytes + s];
        }
      }
    }
  }
}

void read_vllm_kv_pages(VllmKvFormat f, const VllmKvPages& p, std::span<const std::uint8_t> pages,
                        std::span<const std::int64_t> slots, float k_scale, float v_scale, std::span<float> key,
                        std::span<float> value) {
  const std::int64_t tokens = check_pages(p, pages.size(), slots, key.size(), value.size(), "key/value output");
  check_scale(k_scale, "k_scale");
  check_scale(v_scale, "v_scale");
  if (tokens == 0) return;
  const PageMap m(p);
  const std::array<float, 2> scale{k_scale, v_scale};
  const std::array<std::span<float>, 2> out{key, value};
  for (int side = 0; side < 2; ++side) {
    QuantizedTensor q = empty_vectors(f, p.head_dim, tokens * p.num_kv_heads, scale[side]);
    for (std::int64_t t = 0; t < tokens; ++t) {
      const std::int64_t slot = slots[static_cast<std::size_t>(t)];
      for (int h = 0; h < p.num_kv_heads; ++h) {
        const std::int64_t v = t * p.num_kv_heads + h;
        std::memcpy(q.codes.data() + v * m.data_bytes, pages.data() + m.data(slot, side, h),
                    static_cast<std::size_t>(m.data_bytes));
        for (int s = 0; s < m.scale_bytes; ++s) {
          q.scales[v * m.scale_bytes + s] = pages[static_cast<std::size_t>(m.scale(slot, side, h, s))];
        }
      }
    }
    dequantize(q, out[side].data());
  }
}

VllmKvReport vllm_kv_report(VllmKvFormat f, int head_dim, std::span<const float> values, float scale) {
  VllmKvReport r;
  r.format = f;
  r.head_dim = head_dim;
  r.bytes_per_vector = vllm_kv_entry_bytes(head_dim);
  check_scale(scale, "scale");
  r.compression = 2.0 * head_dim / r.bytes_per_vector;
  const std::vector<float> back = vllm_kv_decode(f, head_dim, vllm_kv_encode(f, head_dim, values, scale), scale);
  r.vectors = static_cast<std::int64_t>(back.size()) / head_dim;
  r.error = kv_error_stats(values, back);
  return r;
}

}  // namespace mf
