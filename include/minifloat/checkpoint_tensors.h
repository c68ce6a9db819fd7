// minifloat/checkpoint_tensors.h: quantized weights as checkpoints store them, found by tensor-name pairs.
//
//   DeepSeek form   W              F8_E4M3 [R, C], or e2m1 packed as F4 [R, C] / U8 or I8 [R, C/2]
//                   W_scale_inv    F32 or F8_E8M0, [ceil(R/Br), ceil(C/Bc)]: one scale per block, multiplied on
//                                  dequantization (fp8-128x128, fp8-32x32, fp8-1x128, mxfp8, and V4's FP4 experts
//                                  with 1x32 ue8m0 scales); BF16 or F16 (Qwen's FP8 releases: widened to f32
//                                  exactly); or one F32 / BF16 / F16 value, [] or [1] (transformers' FineGrainedFP8
//                                  with weight_block_size null: one scale for the FP8 tensor)
//   DeepSeek-V4     X.weight       F8_E4M3 [R, C], or e2m1 packed as I8 / U8 [R, C/2] (routed experts)
//   release form    X.scale        F8_E8M0 (F32 in V4-Flash-Base) [ceil(R/B), ceil(C/B)], B = 128 (V4) or 32 (V4.1);
//                                  experts F8_E8M0 [R, C/32]: DeepSeek's released V4 checkpoints, the DeepSeek form
//                                  under its bare names (a float X.scale beside a float X.weight is no pair)
//   NVFP4 form      W              e2m1 packed (F4 / U8), W_scale F8_E4M3 [R, C/16], W_scale_2 F32 [] (ModelOpt)
//
// The block shape is read off the two shapes (the first of 128x128, 32x32, 1x128, 1x32 whose scale grid matches;
// e2m1 data is always 1x32, or 1x16 for NVFP4), so one pair is one QuantizedTensor. Where two block shapes give the
// same grid, they give the same element-to-scale mapping, so the values read are the same either way. Writing goes the
// other way, with the same names.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "minifloat/quantize.h"
#include "minifloat/safetensors.h"

namespace mf::io {

// How a pair's parts are named and what its scales mean (docs/checkpoints.md, "Dialects"):
//   deepseek      W + W_scale_inv: one scale per block, multiplied (DeepSeek V3/V4, transformers FineGrainedFP8,
//                 Qwen's FP8 with BF16 / F16 scales; per tensor: one scale)
//   deepseek_v4   X.weight + X.scale: the same, under the names of DeepSeek's released V4 / V4.1 checkpoints
//   nvfp4         W + W_scale (F8_E4M3, 1x16) + W_scale_2 (F32 []): code * scale * scale_2 (NVIDIA ModelOpt)
//   scaled        W + W_scale, one scale per block (the block read off the two shapes: the whole tensor, a row, a
//                 128x128 tile, 32 or 16 columns), multiplied; F32, BF16, F16, F8_E4M3 or E8M0 (F8_E8M0 or U8) scales
//                 (compressed-tensors float-quantized, naive-quantized and mxfp8-quantized; ModelOpt FP8 and MXFP8)
//   packed        P.weight_packed (U8 [R, C/2], element 2i in the low nibble) + P.weight_scale (E8M0 as U8, 1x32):
//                 compressed-tensors mxfp4-pack-quantized; dequantized as P.weight
//   packed_global P.weight_packed + P.weight_scale (F8_E4M3, 1x16) + P.weight_global_scale (F32 [1]): code *
//                 (scale / global_scale), compressed-tensors nvfp4-pack-quantized; dequantized as P.weight
//   blocks        X_blocks (U8 [..., R, C/32, 16]) + X_scales (U8 [..., R, C/32], E8M0): gpt-oss MXFP4 experts;
//                 dequantized as X [..., R, C]
//   integer       integer codes with a float scale per group or channel, (q - zero point) x scale:
//                 compressed-tensors pack-quantized (P.weight_packed I32 [R, ceil(C x b / 32)], b-bit codes stored
//                 as q + 2^(b-1) from bit c x b of the row; P.weight_scale BF16/F16/F32 [R, G] or [R, 1];
//                 P.weight_shape [2]; optional P.weight_zero_point I32 packed the same way along the rows, and
//                 P.weight_g_idx I32 [C], the group of each column) and int-quantized (W I8 [R, C] + W_scale, an
//                 optional W_zero_point I8 [R, G]); AutoAWQ's GEMM layout (M.qweight I32 [C, R/8], 4-bit codes in
//                 AWQ's interleaved nibble order, M.qzeros I32 [C/G, R/8] the same way, M.scales F16 [C/G, R]:
//                 W[n, k] = (q - z) x s, transposed) and AutoGPTQ's (M.qweight I32 [C x b / 32, R] packed along the
//                 inputs, M.qzeros I32 [C/G, R x b / 32] stored as zero - 1, M.scales F16 [C/G, R], M.g_idx I32 [C]);
//                 dequantized as M.weight [R, C]; ModelOpt's INT4 (W4A16_AWQ: W U8 [R/2, C], two output rows per
//                 byte, the even row in the low nibble, signed two's-complement nibbles; W_scale F32/BF16/F16
//                 [R, C/G]: W[r, c] = q x s[r, c / G]) and INT8 (W8A16, W8A8_SQ_PER_CHANNEL: W I8 [R, C] with W_scale
//                 [R], one scale per output row)
//
// Any form may carry ModelOpt's M.pre_quant_scale [C] (AWQ and SmoothQuant smoothing, which the engine multiplies
// into the activations): the plain weight is then W[r, c] x pre_quant_scale[c], each product rounded once to f32.
enum class PairForm : std::uint8_t { deepseek, nvfp4, scaled, packed, packed_global, blocks, integer, deepseek_v4 };
std::string_view to_string(PairForm f);

// A quantized weight found in one file: the names of its parts and what they hold.
struct QuantizedPair {
  PairForm form = PairForm::deepseek;
  std::string weight, scale, tensor_scale;  // tensor_scale: the second-level scale (W_scale_2, weight_global_scale)
  std::string output;                       // the dequantized tensor's name (weight, less _packed / _blocks)
  std::vector<std::string> extras;          // parts with no place in a dequantized model (input_scale, zero
                                            // points, group index, weight_shape, ...)
  std::string zero_point, group_index;      // integer form: its zero points and column groups ("" when absent)
  int bits = 0;                             // integer form: bits per code
  enum class Packing : std::uint8_t {
    compressed_tensors,
    awq,
    gptq,
    modelopt_int4
  } packing = Packing::compressed_tensors;
  bool gptq_v2 = false;                     // gptq packing: zero points stored as they are (AutoGPTQ's
                                            // checkpoint_format gptq_v2; v1 stores zero - 1); the file alone cannot
                                            // tell, the config's declaration sets it (read_as_declared)
  std::string pre_quant_scale;              // ModelOpt's smoothing factors over the input columns ("" when absent)
  Scheme scheme;                            // deepseek, deepseek_v4 and nvfp4 forms: element, block and scale
                                            // format (BF16 / F16 scales: f32, the values they widen to exactly; one
                                            // scale for the tensor: a block of the whole [R, C])
  std::string scheme_name;                  // every form: e.g. e4m3-1x128-f32, e2m1-1x16-e4m3-global, e4m3-128x128-bf16
                                            // (BF16-stored block scales), e4m3-tensor-f32 (one scale per tensor)
  std::vector<std::int64_t> shape;          // the logical [R, C] (blocks: R counts the rows of every leading dim)
  std::vector<std::uint64_t> output_shape;  // the dequantized tensor's shape
  int block_rows = 0, block_cols = 0;       // the scale block
};

// Every pair among `file`'s tensors: a weight W whose W_scale_inv (or W_scale with W_scale_2) exists, or an F8_E4M3 /
// I8 / U8 X.weight whose X.scale exists (DeepSeek-V4's release names). Throws IoError (size_mismatch) naming the
// tensor when a pair's shapes or dtypes fit no scheme. Reads no tensor data but compressed-tensors' weight_shape (and
// group index) values; of a file read headers-only (read_safetensors_header) it reads none, and a pack-quantized
// pair's columns are 32 x words / packed_bits (config.json's num_bits; 0: such a pair is an IoError naming it).
std::vector<QuantizedPair> find_pairs(const SafetensorsFile& file, int packed_bits = 0);

// The pair's tensors read into a QuantizedTensor (bytes copied; BF16 / F16 scales widened to f32), checked by
// mf::validate: deepseek, deepseek_v4 and nvfp4 forms only (the others have no QuantizedTensor: two-level
// divisions, transposed blocks). Throws IoError.
QuantizedTensor read_pair(const SafetensorsFile& file, const QuantizedPair& pair, Profile profile = Profile::ocp);

// The pair's values as f32 in output_shape's order, every form: code times scale (times or divided by the second
// level, in the order docs/checkpoints.md gives for each dialect), each product exact before the one rounding to f32.
// Throws IoError naming the tensor when its bytes do not fit.
std::vector<float> dequantize_pair(const SafetensorsFile& file, const QuantizedPair& pair, int threads = 1);

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
