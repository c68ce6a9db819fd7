// minifloat/checkpoint_tensors.h: quantized weights as checkpoints store them, found by tensor-name pairs.
//
//   DeepSeek form   W              F8_E4M3 [R, C], or e2m1 packed as F4 [R, C] / U8 or I8 [R, C/2]
//                   W_scale_inv    F32 or F8_E8M0, [ceil(R/Br), ceil(C/Bc)]: one scale per block, multiplied on
//                                  dequantization (fp8-128x128, fp8-32x32, fp8-1x128, mxfp8, and V4's FP4 experts
//                                  with 1x32 ue8m0 scales)
//   NVFP4 form      W              e2m1 packed (F4 / U8), W_scale F8_E4M3 [R, C/16], W_scale_2 F32 [] (ModelOpt)
//
// The block shape is read off the two shapes (the first of 128x128, 32x32, 1x128, 1x32 whose scale grid matches;
// e2m1 data is always 1x32, or 1x16 for NVFP4), so one pair is one QuantizedTensor. Where two block shapes give the
// same grid, they give the same element-to-scale mapping, so the values read are the same either way. Writing goes the other way, with the same names.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "minifloat/quantize.h"
#include "minifloat/safetensors.h"

namespace mf::io {

enum class PairForm : std::uint8_t { deepseek, nvfp4 };

// A quantized weight found in one file: the names of its parts and what they hold.
struct QuantizedPair {
  PairForm form = PairForm::deepseek;
  std::string weight, scale, tensor_scale;  // tensor_scale: "" unless NVFP4
  Scheme scheme;                            // element, block and scale format as stored (rule: the scheme's default)
  std::vector<std::int64_t> shape;          // the logical [R, C]
};

// Every pair among `file`'s tensors: a weight W whose W_scale_inv (or W_scale with W_scale_2) exists. Throws IoError
// (size_mismatch) naming the tensor when a pair's shapes or dtypes fit no scheme.
std::vector<QuantizedPair> find_pairs(const SafetensorsFile& file);

// The pair's tensors read into a QuantizedTensor (bytes copied), checked by mf::validate. Throws IoError.
QuantizedTensor read_pair(const SafetensorsFile& file, const QuantizedPair& pair, Profile profile = Profile::ocp);

// Names and bytes to write for the quantized weight `name` in the pair form its scheme calls for (nvfp4 for a
// two-level scheme, else the DeepSeek form; e2m1 as F4, f32 scales as F32, ue8m0 as F8_E8M0, ue4m3 as F8_E4M3).
struct OwnedTensor {
  std::string name;
  DType dtype;
  std::vector<std::uint64_t> shape;
  std::vector<std::byte> data;
  TensorView view() const { return {name, dtype, shape, data}; }
};
std::vector<OwnedTensor> pair_tensors(const std::string& name, const QuantizedTensor& q);

}  // namespace mf::io
