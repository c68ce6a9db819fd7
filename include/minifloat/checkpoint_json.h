// minifloat/checkpoint_json.h: a checkpoint's inspect report as JSON text. It is what `minifloat inspect --json`
// prints and what the Python package's minifloat.inspect returns (parsed), so the two cannot disagree.
#pragma once

#include <string>

#include "minifloat/checkpoint_commands.h"
#include "minifloat/gguf.h"

namespace mf::io {

// {shards, params, bytes, bits_per_param, schemes, family, not_understood, config?: {rules, quant_method, scheme,
//  not_converted, dtype, fp8_attn, fp8_mlp, mxfp8, mxfp4}, tensors: [{name, shard, dtype, shape, bytes, params, role,
//  stats?: {min, max, mean, rms, nonfinite}}]}, indented by 2, with a final newline.
std::string inspect_json(const InspectReport& report);

// A GGUF file's: {format: "gguf", version, alignment, params, bytes, bits_per_param, metadata: {key: text},
//  tensors: [{name, type, shape, bytes, decodable}]}, indented by 2, with a final newline.
std::string inspect_gguf_json(const GgufFile& file);

}  // namespace mf::io
