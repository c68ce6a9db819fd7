// minifloat/checkpoint_reader.h: a checkpoint's logical tensors read one at a time, in place: the tensors `minifloat
// dequantize` writes, with the same values, without writing them. For the Python package's minifloat.open.
//
// A safetensors checkpoint (a directory, an index or one file) is listed by dequantize's own plan: every quantized
// pair of every dialect minifloat reads is one tensor under its dequantized name (W, P.weight, X less _blocks),
// every other tensor is itself, and the pairs' parts (scales, zero points, weight_shape, ...) and activation scales
// are not listed. A checkpoint dequantize refuses is refused here, at open, with the same IoError. A .gguf file is
// listed tensor by tensor under its own names; a type minifloat does not decode is an IoError when read. A
// .safetensors file written by `minifloat quantize` (minifloat.scheme in its __metadata__) is read whole
// (read_quantized), its tensors dequantized as dequantize does.
//
// The shards stay mapped (read-only, nothing read until asked); each read touches only its tensor's bytes and
// releases their pages after, so memory holds the tensors being read and no more. Reads are const and safe from
// several threads at once.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "minifloat/dtype.h"
#include "minifloat/quantize.h"

namespace mf::io {

struct LogicalTensor {
  std::string name;     // as dequantize writes it
  std::string file;     // the shard (or .gguf) file name that holds its weight
  std::string dialect;  // a pair's form (PairForm's enumerator: "deepseek", "nvfp4", "integer", ...), "plain", "gguf",
                        // or "quantize" (a `minifloat quantize` file)
  std::string form;     // a pair's parts as to_string(PairForm) names them ("W + W_scale + W_scale_2"), else ""
  std::string scheme;   // a pair's scheme_name, a GGUF tensor's type name, "" for a plain tensor
  std::vector<std::string> stored;   // the stored tensors it is read from: the weight first, then its parts
  std::vector<std::uint64_t> shape;  // the logical (dequantized) shape
  std::string stored_dtype;          // the weight's stored dtype (safetensors' name, or the GGUF type's)
  std::uint64_t bytes = 0;           // the stored bytes of every part
  bool kept = false;  // not float and no pair (an integer table, a --passthrough-like tensor): read only as stored
  DType kept_dtype = DType::U8;  // kept: its dtype
};

class CheckpointReader {
 public:
  // `path`: a .safetensors file, an index, a directory, or a .gguf file. Throws IoError (or HfConfigError) as
  // dequantize does for a checkpoint it refuses.
  explicit CheckpointReader(const std::filesystem::path& path);
  ~CheckpointReader();
  CheckpointReader(CheckpointReader&&) noexcept;
  CheckpointReader& operator=(CheckpointReader&&) noexcept;

  bool is_gguf() const;
  // In checkpoint order (shard order, then data order), as dequantize writes them.
  const std::vector<LogicalTensor>& tensors() const;
  // nullptr when there is none of that name.
  const LogicalTensor* find(std::string_view name) const;
  // The safetensors shards' __metadata__ (the first shard's entry for a key the shards disagree on), or the GGUF
  // file's metadata as inspect --json shows it (GgufValue::text: strings quoted, arrays to 8 elements).
  std::map<std::string, std::string> metadata() const;

  // The tensor's values as f32 in its shape's order: bit for bit what `minifloat dequantize --dtype f32` writes.
  // Throws IoError naming the tensor when it is kept (not float: read it with stored()) or its bytes do not decode,
  // std::out_of_range when there is no tensor of that name.
  std::vector<float> values(std::string_view name, int threads = 1) const;
  // The values rounded once to `format` (bf16: what `dequantize --dtype bf16` writes; f16), nearest even.
  std::vector<std::uint16_t> values16(std::string_view name, const Format& format, int threads = 1) const;
  // A kept tensor's bytes as stored; IoError for any other.
  std::vector<std::byte> stored(std::string_view name) const;
  // A pair's codes and scales as stored, in a QuantizedTensor (read_pair): the deepseek, deepseek_v4 and nvfp4
  // forms, and a `minifloat quantize` file's tensors; IoError naming the tensor and its dialect for the forms with
  // no QuantizedTensor and for plain tensors.
  QuantizedTensor quantized(std::string_view name) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace mf::io
