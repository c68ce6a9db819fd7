// The operations of inference (docs/spec.md#layout, docs/spec.md#kv, docs/spec.md#gemm): act_quant, the block-scaled
// GEMMs and linear (minifloat/gemm.h), KV-cache entries and pages (minifloat/kv.h), and block scales in the layouts
// GEMM kernels read (minifloat/scale_layout.h). Each function checks only what keeps memory safe (output sizes) and
// calls the library; the library's GemmError / KvError / ScaleLayoutError (std::invalid_argument) become ValueError
// naming both shapes.
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "bindings.h"
#include "minifloat/bulk.h"
#include "minifloat/gemm.h"
#include "minifloat/kv.h"
#include "minifloat/scale_layout.h"

namespace mf::py {
namespace {

std::vector<std::int64_t> dims_of(const Array& x) {
  std::vector<std::int64_t> shape(x.ndim());
  for (std::size_t i = 0; i < x.ndim(); ++i) shape[i] = static_cast<std::int64_t>(x.shape(i));
  return shape;
}

// A library vector as a 1-D numpy array, without a copy.
template <class T>
nb::ndarray<nb::numpy, T> to_numpy(std::vector<T>&& v) {
  const std::vector<std::size_t> shape{v.size()};
  return mf::py::to_numpy(std::move(v), shape);
}

// Where a GEMM writes: float32 values or uint16 bfloat16 bits, holding exactly `count` values.
GemmOut gemm_out(Array& out, std::int64_t count) {
  if (out.size() != static_cast<std::size_t>(count)) {
    throw std::invalid_argument("out: holds " + std::to_string(out.size()) + " values, the product has " +
                                std::to_string(count));
  }
  if (out.dtype() == nb::dtype<std::uint16_t>()) return GemmOut{nullptr, static_cast<std::uint16_t*>(out.data())};
  return GemmOut{data_as<float>(out, "out"), nullptr};
}

GemmOptions gemm_options(bool accumulate, int threads) {
  GemmOptions o;
  o.accumulate = accumulate;
  o.threads = threads;
  return o;
}

std::int64_t leading(const std::vector<std::int64_t>& shape) {
  std::int64_t rows = 1;
  for (std::size_t i = 0; i + 1 < shape.size(); ++i) rows *= shape[i];
  return rows;
}

// x [rows, k] (float32 values or bfloat16 bits) as float32 [rows, kw] in a buffer of this thread: bf16 widened
// (exactly, by the bulk decode), columns k .. kw zero.
const float* widened_rows(std::uintptr_t x, std::int64_t rows, std::int64_t k, bool x_bf16, std::int64_t kw) {
  thread_local std::vector<float> wide;
  wide.resize(static_cast<std::size_t>(rows * kw));
  const auto n = static_cast<std::size_t>(k);
  for (std::int64_t r = 0; r < rows; ++r) {
    float* dst = wide.data() + r * kw;
    if (x_bf16) {
      decode_bulk(bf16, std::span<const std::uint16_t>(reinterpret_cast<const std::uint16_t*>(x) + r * k, n),
                  std::span<float>(dst, n));
    } else {
      std::memcpy(dst, reinterpret_cast<const float*>(x) + r * k, n * sizeof(float));
    }
    std::fill(dst + k, dst + kw, 0.0f);
  }
  return wide.data();
}

// linear_quantized for minifloat.torch.Linear's forward, on raw addresses: the module holds both tensors (CPU,
// contiguous) for the call, and reading a torch tensor's address costs a fraction of a numpy or DLPack view, which
// is most of a decode step's Python time per Linear. x [rows, K'] holds float32 values or bfloat16 bits (widened
// exactly), with K' the weight's K or short of it by less than one activation block, the missing columns being
// zeros (in_features zero-padded to whole 1x128 blocks); widening and padding go into a buffer of this thread.
// out [rows, N]: float32, or bfloat16 bits.
void linear_raw(std::uintptr_t x, std::int64_t rows, std::int64_t k, bool x_bf16, const QuantizedTensor& w,
                std::uintptr_t out, bool out_bf16, bool accumulate, int threads, bool weight_only) {
  const std::int64_t kw = w.cols();
  if (rows < 0 || k < 1 || k > kw || kw - k >= 128) {
    throw std::invalid_argument("x: [" + std::to_string(rows) + ", " + std::to_string(k) + "] does not fit weight K " +
                                std::to_string(kw));
  }
  Weight weight;
  weight.quantized = &w;
  weight.weight_only = weight_only;
  const GemmOut o = out_bf16 ? GemmOut{nullptr, reinterpret_cast<std::uint16_t*>(out)}
                             : GemmOut{reinterpret_cast<float*>(out), nullptr};
  nb::gil_scoped_release release;
  const float* p = x_bf16 || k != kw ? widened_rows(x, rows, k, x_bf16, kw) : reinterpret_cast<const float*>(x);
  const std::array<std::int64_t, 2> shape{rows, kw};
  linear(p, shape, weight, o, gemm_options(accumulate, threads));
}

void bind_gemm(nb::module_& m) {
  m.def(
      "act_quant",
      [](const Array& x, const std::string& scale, int threads) {
        if (scale != "ue8m0" && scale != "f32")
          throw std::invalid_argument("scale: 'ue8m0' or 'f32', not '" + scale + "'");
        const float* p = data_as<float>(x, "x");
        const std::vector<std::int64_t> shape = dims_of(x);
        nb::gil_scoped_release release;
        return act_quant(p, shape, scale == "f32" ? ActScale::f32 : ActScale::ue8m0, threads);
      },
      nb::arg("x"), nb::arg("scale"), nb::arg("threads"));

  m.def(
      "fp8_gemm",
      [](const QuantizedTensor& a, const QuantizedTensor& w, Array out, bool accumulate, int threads) {
        const GemmOut o = gemm_out(out, a.rows() * w.rows());
        nb::gil_scoped_release release;
        fp8_gemm(a, w, o, gemm_options(accumulate, threads));
      },
      nb::arg("a"), nb::arg("w"), nb::arg("out"), nb::arg("accumulate"), nb::arg("threads"));

  m.def(
      "fp4_gemm",
      [](const QuantizedTensor& a, const QuantizedTensor& w, Array out, bool accumulate, int threads) {
        const GemmOut o = gemm_out(out, a.rows() * w.rows());
        nb::gil_scoped_release release;
        fp4_gemm(a, w, o, gemm_options(accumulate, threads));
      },
      nb::arg("a"), nb::arg("w"), nb::arg("out"), nb::arg("accumulate"), nb::arg("threads"));

  m.def(
      "linear_quantized",
      [](const Array& x, const QuantizedTensor& w, Array out, bool accumulate, int threads, bool weight_only) {
        const float* p = data_as<float>(x, "x");
        const std::vector<std::int64_t> shape = dims_of(x);
        Weight weight;
        weight.quantized = &w;
        weight.weight_only = weight_only;
        const GemmOut o = gemm_out(out, leading(shape) * w.rows());
        nb::gil_scoped_release release;
        linear(p, shape, weight, o, gemm_options(accumulate, threads));
      },
      nb::arg("x"), nb::arg("w"), nb::arg("out"), nb::arg("accumulate"), nb::arg("threads"),
      nb::arg("weight_only") = false);

  // linear_quantized for minifloat.torch.Linear's forward, on raw addresses (linear_raw above).
  m.def("linear_quantized_raw", &linear_raw, nb::arg("x"), nb::arg("rows"), nb::arg("k"), nb::arg("x_bf16"),
        nb::arg("w"), nb::arg("out"), nb::arg("out_bf16"), nb::arg("accumulate"), nb::arg("threads"),
        nb::arg("weight_only") = false);

  // w [N, K] as float32 values or uint16 bfloat16 bits.
  m.def(
      "linear_plain",
      [](const Array& x, const Array& w, Array out, bool accumulate, int threads) {
        const float* p = data_as<float>(x, "x");
        const std::vector<std::int64_t> shape = dims_of(x);
        if (w.ndim() != 2) throw std::invalid_argument("w: a 2-D weight [N, K] is expected");
        Weight weight;
        weight.n = static_cast<std::int64_t>(w.shape(0));
        weight.k = static_cast<std::int64_t>(w.shape(1));
        if (w.dtype() == nb::dtype<std::uint16_t>()) {
          weight.bf16 = static_cast<const std::uint16_t*>(w.data());
        } else {
          weight.f32 = data_as<float>(w, "w");
        }
        const GemmOut o = gemm_out(out, leading(shape) * weight.n);
        nb::gil_scoped_release release;
        linear(p, shape, weight, o, gemm_options(accumulate, threads));
      },
      nb::arg("x"), nb::arg("w"), nb::arg("out"), nb::arg("accumulate"), nb::arg("threads"));
}

KvFormat kv_format_arg(const std::string& name) {
  return for_arg("format", [&] { return kv_format_named(name); });
}

std::span<const std::int64_t> slots_of(const Array& slots) {
  return {data_as<std::int64_t>(slots, "slots"), slots.size()};
}

void bind_kv(nb::module_& m) {
  m.def("kv_format_names", &kv_format_names);
  m.def(
      "kv_format",
      [](const std::string& name) {
        const KvFormat f = kv_format_arg(name);
        const KvLayout L = kv_layout(f);
        nb::dict d;
        d["name"] = std::string(to_string(f));
        d["scheme"] = kv_scheme(f).name;
        d["entry_bytes"] = L.entry_bytes();
        d["quantized_values"] = L.quantized_values;
        d["data_bytes"] = L.data_bytes;
        d["scale_bytes"] = L.scale_bytes;
        d["scale_count"] = L.scale_count;
        d["scale_footer"] = L.scale_footer;
        d["page_align"] = L.page_align;
        return d;
      },
      nb::arg("name"));
  m.def(
      "kv_page_bytes",
      [](const std::string& format, int page_size) { return kv_page_bytes(kv_format_arg(format), page_size); },
      nb::arg("format"), nb::arg("page_size"));

  m.def(
      "kv_encode",
      [](const Array& values, const std::string& format) {
        const KvFormat f = kv_format_arg(format);
        const std::span<const float> v(data_as<float>(values, "values"), values.size());
        std::vector<std::uint8_t> bytes;
        {
          nb::gil_scoped_release release;
          bytes = kv_encode(f, v);
        }
        return to_numpy(std::move(bytes));
      },
      nb::arg("values"), nb::arg("format"));

  m.def(
      "kv_decode",
      [](const Array& entries, const std::string& format) {
        const KvFormat f = kv_format_arg(format);
        const std::span<const std::uint8_t> e(data_as<std::uint8_t>(entries, "entries"), entries.size());
        std::vector<float> values;
        {
          nb::gil_scoped_release release;
          values = kv_decode(f, e);
        }
        return to_numpy(std::move(values));
      },
      nb::arg("entries"), nb::arg("format"));
}

void bind_kv_cache(nb::module_& m) {
  nb::class_<KvCache>(m, "KvCache")
      .def(
          "__init__",
          [](KvCache* self, const std::string& format, int page_size, std::int64_t pages) {
            new (self) KvCache(kv_format_arg(format), page_size, pages);
          },
          nb::arg("format"), nb::arg("page_size"), nb::arg("pages"))
      .def_prop_ro("format", [](const KvCache& c) { return std::string(to_string(c.format())); })
      .def_prop_ro("page_size", &KvCache::page_size)
      .def_prop_ro("pages", &KvCache::pages)
      .def_prop_ro("slots", &KvCache::slots)
      .def_prop_ro("bytes",
                   [](nb::handle self) {
                     const std::span<const std::uint8_t> b = nb::cast<const KvCache&>(self).bytes();
                     return nb::ndarray<nb::numpy, const std::uint8_t, nb::ndim<1>>(b.data(), {b.size()}, self);
                   })
      .def(
          "page",
          [](nb::handle self, std::int64_t p) {
            const std::span<const std::uint8_t> b = nb::cast<const KvCache&>(self).page(p);
            return nb::ndarray<nb::numpy, const std::uint8_t, nb::ndim<1>>(b.data(), {b.size()}, self);
          },
          nb::arg("p"))
      .def(
          "write",
          [](KvCache& c, const Array& values, const Array& slots) {
            const std::span<const float> v(data_as<float>(values, "values"), values.size());
            const std::span<const std::int64_t> s = slots_of(slots);
            nb::gil_scoped_release release;
            c.write(v, s);
          },
          nb::arg("values"), nb::arg("slots"))
      .def(
          "read",
          [](const KvCache& c, const Array& slots) {
            const std::span<const std::int64_t> s = slots_of(slots);
            std::vector<float> values;
            {
              nb::gil_scoped_release release;
              values = c.read(s);
            }
            return to_numpy(std::move(values));
          },
          nb::arg("slots"));
}

ScaleLayout layout_arg(const std::string& name) {
  return for_arg("platform", [&] { return scale_layout_named(name); });
}

void bind_scale_layout(nb::module_& m) {
  m.def("scale_layout_names", &scale_layout_names);
  m.def(
      "packed_scale_shape",
      [](const std::string& platform, const std::vector<std::int64_t>& code_shape) {
        return packed_scale_shape(layout_arg(platform), code_shape);
      },
      nb::arg("platform"), nb::arg("code_shape"));

  // (little-endian bytes, stored shape, element bytes)
  m.def(
      "pack_scales",
      [](const Array& codes, const std::string& platform) {
        const ScaleLayout layout = layout_arg(platform);
        const std::span<const std::uint8_t> c(data_as<std::uint8_t>(codes, "codes"), codes.size());
        const std::vector<std::int64_t> shape = dims_of(codes);
        PackedScales p;
        {
          nb::gil_scoped_release release;
          p = pack_scales(c, shape, layout);
        }
        return std::make_tuple(to_numpy(std::move(p.data)), p.shape, p.element_bytes);
      },
      nb::arg("codes"), nb::arg("platform"));

  // packed: the stored tensor's bytes (little-endian), with its shape and element size as stored.
  m.def(
      "unpack_scales",
      [](const Array& packed, const std::vector<std::int64_t>& packed_shape, int element_bytes,
         const std::string& platform, const std::vector<std::int64_t>& code_shape) {
        PackedScales p;
        p.layout = layout_arg(platform);
        p.shape = packed_shape;
        p.element_bytes = element_bytes;
        const std::uint8_t* b = data_as<std::uint8_t>(packed, "packed");
        p.data.assign(b, b + packed.size());
        std::vector<std::uint8_t> codes;
        {
          nb::gil_scoped_release release;
          codes = unpack_scales(p, code_shape);
        }
        return to_numpy(std::move(codes));
      },
      nb::arg("packed"), nb::arg("packed_shape"), nb::arg("element_bytes"), nb::arg("platform"), nb::arg("code_shape"));
}

}  // namespace

void bind_ops(nb::module_& m) {
  bind_gemm(m);
  bind_kv(m);
  bind_kv_cache(m);
  bind_scale_layout(m);
}

}  // namespace mf::py
