// Internal: --format deepseek in DeepSeek's release form (V4 / V4-Flash-Base / V4.1 as published: bare names,
// `X.weight` + `X.scale`, the release's config.json), chosen when the input is in DeepSeek's bare names
// (docs/checkpoints.md, "DeepSeek").
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "convert_run.h"
#include "minifloat/checkpoint.h"
#include "minifloat/checkpoint_commands.h"

namespace mf::io::detail {

// Whether `c` names its tensors as DeepSeek's releases do (`embed.weight`, `head.weight`, `layers.N.*`, `mtp.M.*`)
// rather than as Hugging Face's (`model.layers.N.*`, `lm_head.weight`).
bool deepseek_release_names(const Checkpoint& c);

// --format deepseek for checkpoint `c`: whether it is written in the release form (bare names) or V3's spelling
// (W + W_scale_inv, Hugging Face names). Throws std::invalid_argument, before anything is written, for a recipe
// whose form needs the other names (32x32 blocks are V4.1's, a release form only).
bool deepseek_release_form(const Checkpoint& c, const Recipe& recipe);

// The release's scale name of quantized weight `weight` (X.weight -> X.scale).
std::string release_scale_name(const std::string& weight);

// Marks the quantized steps of shard `f` to be written in the release form, after checking each can be: a module
// weight (X.weight), FP4 only for routed experts (`.ffn.experts.`: DeepSeek's model.py and vLLM give only those the
// FP4 layout, every other `.scale` is an FP8 block scale there). Throws IoError naming the file and tensor otherwise.
void mark_release_steps(const SafetensorsFile& f, std::vector<Step>& steps);

// config.json as the release carries it for `recipe`: V4 (128x128) `quantization_config {quant_method, fmt,
// activation_scheme, scale_fmt, weight_block_size}` with `expert_dtype` at the top level ("fp4"; "fp8" for F32
// scales, V4-Flash-Base's); V4.1 (32x32) `{quant_method, activation_scheme, weight_block_size, scale_fmt,
// expert_dtype}` under `text_config` where the input keeps its text model there, else at the top level.
std::string deepseek_release_config(std::string_view config_json, const Recipe& recipe);

}  // namespace mf::io::detail
