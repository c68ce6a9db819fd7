// The pieces of minifloat._core, one file per area of the API. Each file only converts arguments and calls the
// library: no number is computed here. To add an area, add a file with a bind_ function and call it in module.cc.
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <cstddef>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "minifloat/format.h"

namespace mf::py {

namespace nb = nanobind;

// A C-contiguous CPU array of any dtype: the Python layer (minifloat/__init__.py) makes arrays contiguous and
// checks dtypes first, so these types only guard against misuse of the private module.
using Array = nb::ndarray<nb::device::cpu, nb::c_contig>;

// The format called `name`; ValueError listing the known names otherwise.
const Format& format_arg(const std::string& name);

// Throws TypeError unless a has element type T (naming `what`); returns its data.
template <class T>
T* data_as(const Array& a, const char* what) {
  if (a.dtype() != nb::dtype<T>()) throw nb::type_error((std::string(what) + ": unexpected dtype").c_str());
  return static_cast<T*>(a.data());
}

// fn(), with a std::invalid_argument from it prefixed by the Python argument it came from ("rule: unknown ...").
template <class Fn>
auto for_arg(const char* arg, Fn&& fn) {
  try {
    return fn();
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string(arg) + ": " + e.what());
  }
}

// A library vector handed to numpy without a copy, shaped: the array owns it through a capsule.
template <class T>
nb::ndarray<nb::numpy, T> to_numpy(std::vector<T>&& v, const std::vector<std::size_t>& shape) {
  auto* owned = new std::vector<T>(std::move(v));
  nb::capsule owner(owned, [](void* p) noexcept { delete static_cast<std::vector<T>*>(p); });
  return {owned->data(), shape.size(), shape.data(), owner};
}

void bind_formats(nb::module_& m);     // formats(), schemes(): metadata
void bind_codec(nb::module_& m);       // encode, decode, pack, unpack
void bind_quantize(nb::module_& m);    // quantize, dequantize, fake_quantize, error_report, rotate
void bind_ops(nb::module_& m);         // act_quant, fp8_gemm, fp4_gemm, linear, kv_encode/decode, KvCache, pack_scales
void bind_kv_vllm(nb::module_& m);     // vllm_kv_encode/decode, vllm_kv_write_pages/read_pages: vLLM's NVFP4 KV cache
void bind_checkpoint(nb::module_& m);  // checkpoint_shards, merge_index, recipe_targets, gguf_tensors, ...
void bind_checkpoint_commands(nb::module_& m);  // inspect, verify, dequantize, memory, convert; CheckpointError
void bind_checkpoint_reader(nb::module_& m);    // CheckpointReader (minifloat.open)

}  // namespace mf::py
