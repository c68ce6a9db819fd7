// vLLM's NVFP4 KV cache (minifloat/kv_vllm.h): entries of one head vector, and vLLM's [K_data | K_scale | V_data |
// V_scale] pages in a caller's uint8 buffer. The library's KvError (std::invalid_argument) becomes ValueError.
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "bindings.h"
#include "minifloat/kv_vllm.h"

namespace mf::py {
namespace {

VllmKvFormat vllm_format_arg(const std::string& name) {
  return for_arg("format", [&] { return vllm_kv_format_named(name); });
}

VllmKvPages pages_arg(int head_dim, int num_kv_heads, int block_size, bool swizzle_v_scales) {
  return {head_dim, num_kv_heads, block_size, swizzle_v_scales};
}

std::span<const float> floats(const Array& a, const char* what) { return {data_as<float>(a, what), a.size()}; }

}  // namespace

void bind_kv_vllm(nb::module_& m) {
  m.def("vllm_kv_format_names", &vllm_kv_format_names);
  m.def(
      "vllm_kv_entry_bytes", [](int head_dim) { return vllm_kv_entry_bytes(head_dim); }, nb::arg("head_dim"));
  m.def(
      "vllm_kv_page_bytes",
      [](int head_dim, int num_kv_heads, int block_size, bool swizzle_v_scales) {
        return vllm_kv_page_bytes(pages_arg(head_dim, num_kv_heads, block_size, swizzle_v_scales));
      },
      nb::arg("head_dim"), nb::arg("num_kv_heads"), nb::arg("block_size"), nb::arg("swizzle_v_scales"));
  m.def(
      "vllm_kv_encode",
      [](const Array& values, const std::string& format, int head_dim, float scale) {
        const VllmKvFormat f = vllm_format_arg(format);
        const std::span<const float> v = floats(values, "values");
        std::vector<std::uint8_t> bytes;
        {
          nb::gil_scoped_release release;
          bytes = vllm_kv_encode(f, head_dim, v, scale);
        }
        const std::size_t n = bytes.size();
        return to_numpy(std::move(bytes), {n});
      },
      nb::arg("values"), nb::arg("format"), nb::arg("head_dim"), nb::arg("scale"));
  m.def(
      "vllm_kv_decode",
      [](const Array& entries, const std::string& format, int head_dim, float scale) {
        const VllmKvFormat f = vllm_format_arg(format);
        const std::span<const std::uint8_t> e(data_as<std::uint8_t>(entries, "entries"), entries.size());
        std::vector<float> values;
        {
          nb::gil_scoped_release release;
          values = vllm_kv_decode(f, head_dim, e, scale);
        }
        const std::size_t n = values.size();
        return to_numpy(std::move(values), {n});
      },
      nb::arg("entries"), nb::arg("format"), nb::arg("head_dim"), nb::arg("scale"));
  m.def(
      "vllm_kv_write_pages",
      [](Array& pages, const Array& key, const Array& value, const Array& slots, float k_scale, float v_scale,
         const std::string& format, int head_dim, int num_kv_heads, int block_size, bool swizzle_v_scales) {
        const VllmKvFormat f = vllm_format_arg(format);
        const std::span<std::uint8_t> buffer(data_as<std::uint8_t>(pages, "pages"), pages.size());
        const std::span<const std::int64_t> s(data_as<std::int64_t>(slots, "slots"), slots.size());
        const std::span<const float> k = floats(key, "key"), v = floats(value, "value");
        nb::gil_scoped_release release;
        write_vllm_kv_pages(f, pages_arg(head_dim, num_kv_heads, block_size, swizzle_v_scales), buffer, k, v, s,
                            k_scale, v_scale);
      },
      nb::arg("pages"), nb::arg("key"), nb::arg("value"), nb::arg("slots"), nb::arg("k_scale"), nb::arg("v_scale"),
      nb::arg("format"), nb::arg("head_dim"), nb::arg("num_kv_heads"), nb::arg("block_size"),
      nb::arg("swizzle_v_scales"));
  m.def(
      "vllm_kv_read_pages",
      [](const Array& pages, const Array& slots, float k_scale, float v_scale, const std::string& format, int head_dim,
         int num_kv_heads, int block_size, bool swizzle_v_scales) {
        const VllmKvFormat f = vllm_format_arg(format);
        const std::span<const std::uint8_t> buffer(data_as<std::uint8_t>(pages, "pages"), pages.size());
        const std::span<const std::int64_t> s(data_as<std::int64_t>(slots, "slots"), slots.size());
        const std::size_t n = slots.size() * static_cast<std::size_t>(std::max(num_kv_heads, 0)) *
                              static_cast<std::size_t>(std::max(head_dim, 0));
        std::vector<float> key(n), value(n);
        {
          nb::gil_scoped_release release;
          read_vllm_kv_pages(f, pages_arg(head_dim, num_kv_heads, block_size, swizzle_v_scales), buffer, s, k_scale,
                             v_scale, key, value);
        }
        return std::make_tuple(to_numpy(std::move(key), {n}), to_numpy(std::move(value), {n}));
      },
      nb::arg("pages"), nb::arg("slots"), nb::arg("k_scale"), nb::arg("v_scale"), nb::arg("format"),
      nb::arg("head_dim"), nb::arg("num_kv_heads"), nb::arg("block_size"), nb::arg("swizzle_v_scales"));
}

}  // namespace mf::py
