// Internal: what convert writes for --format compressed-tensors | modelopt | transformers-fp8 | gpt-oss (the minifloat
// form stays in convert.cc): each quantized weight's tensors, the second-level scale, and the configs.
#pragma once

#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "minifloat/checkpoint_commands.h"
#include "minifloat/safetensors.h"

namespace mf::io::detail {

// The one scheme of a recipe, as the dialects name it.
enum class WrittenKind { nvfp4, mxfp4, mxfp8, fp8_block };

// The kind every scheme target of `recipe` has (compressed-tensors: one of its kinds, each quantized weight written
// as ct_kind_of its scheme); throws std::invalid_argument as check_write_format does.
WrittenKind recipe_kind(const Recipe& recipe, WriteFormat format);

// Throws std::invalid_argument naming the rule when a scheme target of `recipe` has UE5M3 block scales
// (nvfp4-ue5m3), which no --format holds.
void check_no_ue5m3(const Recipe& recipe, WriteFormat format);

// The kind a compressed-tensors checkpoint writes scheme `s` as: its kind_of, and FP8 e4m3 128x128 blocks with ue8m0
// scales as fp8_block (F32 scales, exact for powers of two); nullopt when it has none.
std::optional<WrittenKind> ct_kind_of(const Scheme& s);

// --format deepseek: minifloat's own form (W + W_scale_inv, the recipe's config) with FP4 codes as I8 [R, C/2], as
// transformers' DeepSeek-V4 reads them. The recipe must quantize to FP8 e4m3 128x128 (f32 or ue8m0 scales), with
// mxfp4 experts at most, and carry DeepSeek's quantization_config; std::invalid_argument naming the formats that can
// express it otherwise.
void check_deepseek(const Recipe& recipe);

// Whether DeepSeek's quantization_config `q` says what scheme `s` is: FP8 e4m3 in q's blocks with its scale format
// (ue8m0, or F32 when scale_fmt is absent), or (expert_dtype fp4) e2m1 in 1x32 blocks with ue8m0 scales.
bool deepseek_config_holds(const QuantizationConfig& q, const Scheme& s);

// A weight written in a dialect is a module's: its name ends in ".weight", which the dialects' names (weight_packed,
// weight_scale) and configs (module names in ignore lists) are built from. Throws IoError naming it otherwise.
void check_module_weight(WriteFormat format, const std::filesystem::path& file, const std::string& tensor);

// The output tensors of the quantized weight `name` [rows, cols] in `format` (not minifloat): codes, block scales and
// (nvfp4) the second-level scale, in that order, as many as minifloat's own form has. The shape divides into blocks
// (convert keeps other weights as they are).
std::vector<SafetensorsWriter::Spec> dialect_specs(const std::string& name, WrittenKind kind, WriteFormat format,
                                                   std::uint64_t rows, std::uint64_t cols);

// gpt-oss's MoE experts: X [E, in, out] (transformers' parameter) stored as X_blocks U8 [E, out, in/32, 16] and
// X_scales U8 [E, out, in/32]: each expert transposed, MXFP4 blocks along `in`, element 2i in a byte's low nibble.
std::vector<SafetensorsWriter::Spec> gpt_oss_specs(const std::string& name, std::uint64_t experts, std::uint64_t in,
                                                   std::uint64_t out);

// The f32 stored as nvfp4's second-level scale: ModelOpt's weight_scale_2 is minifloat's tensor scale; compressed-
// tensors' weight_global_scale is its reciprocal, written only when s / g equals s * tensor_scale in f32 for every
// e4m3 scale code s. Throws std::invalid_argument naming `tensor` otherwise.
float second_scale_written(WriteFormat format, float tensor_scale, const std::string& tensor);

// The inverse, for an NVFP4 pair re-laid out of compressed-tensors: the tensor scale t (a multiplier) with s * t ==
// s / g in f32 for every e4m3 scale code s. Throws std::invalid_argument naming `tensor` when there is none.
float tensor_scale_of_global(float global_scale, const std::string& tensor);

// second_scale_written for the tensor scale the quantizer gives `x` (tensor_amax / (448 * 6)), before quantizing.
void check_global_scale(const Scheme& scheme, std::span<const float> x, const std::string& tensor);

// config.json text with quantization_config as `format` writes it for `recipe`. Its lists of modules left unquantized
// are the 2-D float `*.weight` tensors of the output `shards` (lm_head, router gates; embeddings only for ModelOpt,
// which lists them), sorted.
std::string dialect_config(std::string_view config_json, const Recipe& recipe, WriteFormat format,
                           const std::vector<std::filesystem::path>& shards);
// ModelOpt's hf_quant_config.json.
std::string modelopt_hf_quant_config(const Recipe& recipe, const std::vector<std::filesystem::path>& shards);

}  // namespace mf::io::detail
