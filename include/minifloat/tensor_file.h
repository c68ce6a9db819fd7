// minifloat/tensor_file.h: tensors in files for the block-scaling tools. Floating tensors in (.npy or .safetensors),
// quantized tensors out and back (.safetensors with the scheme recorded in __metadata__).
//
// A quantized tensor NAME is stored as
//   NAME               the codes: F8_E4M3 / F8_E5M2 / F6_E3M2 / F6_E2M3 / F4 / I8 with the logical shape, or U8 bytes
//                      (int4, the unpacked and ggml layouts, or packed codes that do not fill whole bytes);
//   NAME_scale         the block scales: F8_E8M0 (ue8m0), F8_E4M3 (ue4m3) or F32, shape [rows, ceil(cols/Bc)] or
//                      [ceil(rows/Br), ceil(cols/Bc)] (absent for the ggml layout, whose blocks hold their scales);
//   NAME_tensor_scale  F32, shape [], for two-level schemes (NVFP4);
// and __metadata__ records minifloat.scheme, .rule, .profile, .layout, .rotate and minifloat.shape.NAME.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "minifloat/quantize.h"

namespace mf::io {

struct FloatTensor {
  std::string name;
  std::vector<std::int64_t> shape;
  std::vector<float> values;  // widened exactly from f16 / bf16
};

// The floating tensors of a .npy file (one, named "x": f32 or f16) or a .safetensors file (every F32, F16 and BF16
// tensor, or only `only` when not empty). Throws IoError naming the file (and the tensor).
std::vector<FloatTensor> read_float_tensors(const std::filesystem::path& path, const std::string& only = "");

struct NamedQuantized {
  std::string name;
  QuantizedTensor tensor;
};

// All or nothing (temporary file, fsync, rename). Every tensor must share one scheme, profile, layout and rotation.
void write_quantized(const std::filesystem::path& path, const std::vector<NamedQuantized>& tensors);
// What write_quantized wrote. Throws IoError if the metadata or a tensor is missing or inconsistent.
std::vector<NamedQuantized> read_quantized(const std::filesystem::path& path);

// Plain tensors out: F32, or BF16 (RNE) when bf16 is set; .safetensors, or .npy (F32 only, exactly one tensor).
void write_float_tensors(const std::filesystem::path& path, const std::vector<FloatTensor>& tensors, bool bf16);

}  // namespace mf::io
