// minifloat/dtype.h: element types of checkpoint files (the safetensors dtypes) and the error the io layer throws.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>

namespace mf::io {

// The safetensors dtypes, spelled as in the safetensors header. F4 and F6 are packed: a tensor of n of them takes
// n * 4 / 8 or n * 6 / 8 bytes, and its shape counts logical elements.
enum class DType : std::uint8_t {
  BOOL,
  F4,
  F6_E2M3,
  F6_E3M2,
  U8,
  I8,
  F8_E5M2,
  F8_E4M3,
  F8_E8M0,
  I16,
  U16,
  F16,
  BF16,
  I32,
  U32,
  F32,
  F64,
  I64,
  U64
};

struct DTypeInfo {
  DType dtype;
  std::string_view name;  // as in a safetensors header
  int bits;               // bits per element
};

inline constexpr std::array<DTypeInfo, 19> all_dtypes{{
    {DType::BOOL, "BOOL", 8},       {DType::F4, "F4", 4},           {DType::F6_E2M3, "F6_E2M3", 6},
    {DType::F6_E3M2, "F6_E3M2", 6}, {DType::U8, "U8", 8},           {DType::I8, "I8", 8},
    {DType::F8_E5M2, "F8_E5M2", 8}, {DType::F8_E4M3, "F8_E4M3", 8}, {DType::F8_E8M0, "F8_E8M0", 8},
    {DType::I16, "I16", 16},        {DType::U16, "U16", 16},        {DType::F16, "F16", 16},
    {DType::BF16, "BF16", 16},      {DType::I32, "I32", 32},        {DType::U32, "U32", 32},
    {DType::F32, "F32", 32},        {DType::F64, "F64", 64},        {DType::I64, "I64", 64},
    {DType::U64, "U64", 64},
}};

// The table is indexed by the enum: this keeps the two from drifting apart.
constexpr bool dtype_table_in_enum_order() {
  for (std::size_t i = 0; i < all_dtypes.size(); ++i) {
    if (static_cast<std::size_t>(all_dtypes[i].dtype) != i) return false;
  }
  return true;
}
static_assert(dtype_table_in_enum_order());

constexpr std::string_view dtype_name(DType t) { return all_dtypes[static_cast<std::size_t>(t)].name; }
constexpr int dtype_bits(DType t) { return all_dtypes[static_cast<std::size_t>(t)].bits; }

// The dtype spelled `name` in a safetensors header ("F8_E4M3"), or nullopt.
constexpr std::optional<DType> find_dtype(std::string_view name) {
  for (const DTypeInfo& info : all_dtypes) {
    if (info.name == name) return info.dtype;
  }
  return std::nullopt;
}

// Why a size is not a byte count.
enum class SizeError : std::uint8_t { overflow, not_whole_bytes };

// Bytes taken by a tensor of `shape` elements: the product of the dims (left to right, each step checked for 64-bit
// overflow) times the bits per element, which must come to a whole number of bytes.
struct TensorSize {
  std::uint64_t bytes = 0;
  std::optional<SizeError> error;
};
constexpr TensorSize tensor_size(DType t, std::span<const std::uint64_t> shape) {
  constexpr std::uint64_t max = std::numeric_limits<std::uint64_t>::max();
  std::uint64_t elements = 1;
  for (const std::uint64_t dim : shape) {
    if (dim != 0 && elements > max / dim) return {0, SizeError::overflow};
    elements *= dim;
  }
  const auto bits = static_cast<std::uint64_t>(dtype_bits(t));
  if (elements > max / bits) return {0, SizeError::overflow};
  if (elements * bits % 8 != 0) return {0, SizeError::not_whole_bytes};
  return {elements * bits / 8, std::nullopt};
}

// One named error per way a file can be wrong, so that callers and tests can tell failures apart without parsing
// messages. The message says the same in words.
enum class IoErrc : std::uint8_t {
  // any file
  open_failed,      // cannot open or stat the file, or it is not a regular file
  read_failed,      // the OS reported an error while reading
  write_failed,     // creating, writing, syncing or renaming the output failed
  truncated,        // the file ends before what its header announces
  trailing_bytes,   // bytes after the end of the data the header describes
  size_overflow,    // shape x bits per element overflows 64 bits
  not_whole_bytes,  // shape x bits per element is not a whole number of bytes (F4, F6)
  size_mismatch,    // a byte count does not match shape x dtype
  // .npy
  npy_bad_magic,          // not "\x93NUMPY"
  npy_bad_version,        // not 1.0, 2.0 or 3.0
  npy_bad_header,         // the header is not the dict of descr, fortran_order and shape
  npy_unsupported_dtype,  // a descr (or a dtype, when writing) that .npy support here does not cover
  npy_big_endian,         // a ">" descr
  npy_fortran_order,      // fortran_order: True
  // .safetensors
  header_too_large,      // header length over 100,000,000
  header_past_end,       // header length runs past the end of the file
  invalid_json,          // the header is not JSON (or not UTF-8)
  header_not_object,     // the header is JSON but not an object
  duplicate_key,         // a key appears twice in one JSON object
  invalid_metadata,      // __metadata__ is not an object of strings
  invalid_tensor_entry,  // an entry is not {dtype, shape, data_offsets}, or data_offsets is not [begin <= end]
  invalid_name,          // a tensor name that cannot be written (empty, "__metadata__", not UTF-8)
  unknown_dtype,         // a dtype string not in the safetensors list
  invalid_shape,         // shape is not a list of non-negative integers
  offsets_out_of_range,  // data_offsets past the end of the data section
  offsets_gap,           // bytes between two tensors that no tensor covers
  offsets_overlap,       // two tensors share bytes
  // sharded checkpoints (model.safetensors.index.json) and checkpoint directories
  index_not_object,       // the index is JSON but not an object
  index_no_weight_map,    // no "weight_map" object
  index_bad_entry,        // a weight_map value is not a string
  index_bad_total_size,   // metadata.total_size is not a non-negative integer
  index_bad_shard_name,   // a shard name that is empty, absolute, or reaches outside the index's directory
  index_tensor_missing,   // the index puts a tensor in a shard that does not hold it
  index_tensor_unlisted,  // a shard holds a tensor the index does not list there
  index_total_size,       // metadata.total_size differs from the sum of the tensors' bytes
  no_checkpoint,          // a directory with no .safetensors file, or several and no index
  not_dequantizable,      // a tensor that looks quantized (dtype or name) that nothing can dequantize
  quantization_not_read,  // config.json declares a quantization (method, format, algorithm) minifloat does not read
  unmatched_pattern,      // a tensor-name pattern given by the user that matches no tensor
  // .gguf
  gguf_bad_magic,         // not "GGUF"
  gguf_bad_version,       // not version 2 or 3
  gguf_bad_count,         // tensor_count or kv_count larger than the file could hold
  gguf_string_too_long,   // a string length over kGgufMaxString
  gguf_bad_value_type,    // a metadata value (or array element) type that is not one of the 13
  gguf_nesting_too_deep,  // arrays of arrays nested deeper than kGgufMaxNesting
  gguf_empty_key,         // a metadata key of length 0
  gguf_duplicate_key,     // a metadata key given twice
  gguf_bad_alignment,     // general.alignment is not a u32, or not a power of two
  gguf_duplicate_tensor,  // a tensor name given twice
  gguf_bad_dims,          // n_dims over 4, or a dim of 2^63 or more (negative to ggml)
  gguf_unknown_type,      // a tensor type id ggml does not define (so its size cannot be known)
  gguf_bad_row,           // dims[0] is not a multiple of the type's block size
  gguf_misaligned,        // a tensor offset that is not a multiple of the alignment
  gguf_unsupported,       // convert --format gguf: an architecture, config field or tensor it has no mapping for
  gguf_tokenizer,         // convert --format gguf: a tokenizer file it cannot convert as llama.cpp's converter does
                          // (ids past vocab_size, an unknown pre-tokenizer, a SentencePiece model that does not parse)
  gguf_no_tokenizer,      // convert --format gguf: no tokenizer.json or tokenizer.model beside the checkpoint
};

// The io layer's one exception. what() reads "<file>: <detail>" or "<file>: tensor '<name>': <detail>"; `file` and
// `tensor` ("" when none is named) hold the two, for callers that report them apart (the Python package's
// CheckpointError).
struct IoError : std::runtime_error {
  IoError(IoErrc code, const std::filesystem::path& file, std::string_view detail)
      : std::runtime_error(file.string() + ": " + std::string(detail)), code(code), file(file.string()) {}
  IoError(IoErrc code, const std::filesystem::path& file, std::string_view tensor, std::string_view detail)
      : std::runtime_error(file.string() + ": tensor '" + std::string(tensor) + "': " + std::string(detail)),
        code(code),
        file(file.string()),
        tensor(tensor) {}
  IoErrc code;
  std::string file, tensor;
};

}  // namespace mf::io
