// GGUF files as checkpoints: dequantized into a safetensors file, and verified value by value.
#include <cmath>
#include <cstring>

#include "../../io/file.h"
#include "minifloat/bulk.h"
#include "minifloat/checkpoint_commands.h"
#include "minifloat/codec.h"
#include "minifloat/gguf.h"
#include "minifloat/gguf_model.h"

namespace mf::io {
namespace {

using detail::cat;

std::string dims_text(const GgufTensor& t) {
  std::string s;
  for (const std::uint64_t d : t.shape()) s += cat(s.empty() ? "" : ", ", d);
  return "[" + s + "]";
}

}  // namespace

GgufDequantizeReport dequantize_gguf_file(const std::filesystem::path& in, const std::filesystem::path& out,
                                          bool bf16) {
  const GgufFile f = read_gguf(in);
  std::error_code ec;
  if (std::filesystem::exists(out, ec) && std::filesystem::equivalent(in, out, ec)) {
    throw IoError(IoErrc::write_failed, out, "OUT is the input file: it would be overwritten");
  }
  // Every tensor checked before anything is written: a type this library cannot decode is an error, never a copy.
  std::vector<SafetensorsWriter::Spec> specs;
  for (const GgufTensor& t : f.tensors()) {
    if (!gguf_can_dequantize(t.type)) {
      throw IoError(IoErrc::not_dequantizable, in, t.name,
                    cat(gguf_type_name(t.type), " ", dims_text(t),
                        " is a GGUF type minifloat lists but does not decode "
                        "(it decodes F32, F16, BF16, Q4_0, Q4_1, Q8_0 and MXFP4); nothing was written"));
    }
    specs.push_back({t.name, bf16 ? DType::BF16 : DType::F32, t.shape()});
  }
  GgufDequantizeReport r;
  SafetensorsWriter w(out, specs, {{"minifloat.source", "gguf"}});
  for (std::size_t k = 0; k < f.tensors().size(); ++k) {
    const std::vector<float> v = dequantize_gguf(f, f.tensors()[k]);
    r.input_bytes += f.tensors()[k].bytes;
    if (bf16) {
      std::vector<std::uint16_t> h(v.size());
      encode_bulk(mf::bf16, v, std::span<std::uint16_t>(h));  // encode(bf16, x) per element
      w.write_tensor(k, std::as_bytes(std::span(h)));
    } else {
      w.write_tensor(k, std::as_bytes(std::span(v)));
    }
  }
  w.commit();
  r.tensors = specs.size();
  r.output_bytes = w.bytes_total();
  return r;
}

GgufVerifyReport verify_gguf(const std::filesystem::path& path) {
  const GgufFile f = read_gguf(path);
  GgufVerifyReport r;
  r.tensors = f.tensors().size();
  for (const GgufTensor& t : f.tensors()) {
    if (!gguf_can_dequantize(t.type)) continue;
    ++r.decoded;
    const std::vector<float> v = dequantize_gguf(f, t);
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (!std::isfinite(v[i])) {
        throw VerifyError(t.name, cat("tensor '", t.name, "' (", gguf_type_name(t.type), "): element ", i, " is ",
                                      std::isnan(v[i]) ? "NaN" : "infinite"));
      }
    }
  }
  return r;
}

}  // namespace mf::io
