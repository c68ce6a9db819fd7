// Internal: integer pairs (compressed-tensors pack-quantized, AutoAWQ GEMM, AutoGPTQ v1) written in another of those
// packings with the same numbers: the codes, zero points, scales and group index are read whole and packed again,
// never through floats (docs/checkpoints.md, "Writing dialects": integer pairs re-laid out).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "minifloat/checkpoint_commands.h"
#include "minifloat/checkpoint_tensors.h"
#include "minifloat/safetensors.h"

namespace mf::io::detail {

using IntPacking = QuantizedPair::Packing;

// An integer pair re-laid out: where it goes and the output tensors, in the order they are written.
struct IntRelayout {
  IntPacking to = IntPacking::compressed_tensors;
  std::string tensor;  // the pair's weight, for messages
  int bits = 0;
  std::int64_t group_size = 0;  // columns per group; -1: one group per row (channel)
  bool zero_points = false;     // not symmetric: compressed-tensors writes weight_zero_point (GPTQ's sym false)
  bool act_order = false;       // a group index out of order (GPTQ's desc_act): only GPTQ holds it
  DType scale_dtype = DType::F16;
  std::vector<SafetensorsWriter::Spec> specs;
};

// The packing --format writes integer pairs in (compressed-tensors, awq, gptq), or false for the other formats.
bool int_packing_of(WriteFormat format, IntPacking& to);

// Pair `p` (an integer pair packed in I32 words: pack-quantized, AWQ or GPTQ) planned into packing `to`; throws
// std::invalid_argument naming the tensor and the reason when the target cannot hold its numbers.
IntRelayout plan_int_relayout(const SafetensorsFile& f, const QuantizedPair& p, IntPacking to);

// What a config says of pair `p` (no specs): its width, group size, symmetry (compressed-tensors: no zero points
// stored; AWQ, GPTQ: every zero point 2^(b-1)) and act order.
IntRelayout describe_int_pair(const SafetensorsFile& f, const QuantizedPair& p);

// The planned tensors' bytes, in plan.specs' order.
std::vector<std::vector<std::byte>> int_relayout_tensors(const SafetensorsFile& f, const QuantizedPair& p,
                                                         const IntRelayout& plan);

// Before anything is written: the integer pairs re-laid out into AWQ or GPTQ share one width and group size (the
// format's config has one of each); throws std::invalid_argument naming two that differ.
void check_one_int_config(WriteFormat format, const std::vector<IntRelayout>& planned);

// A recipe with no scheme target: convert writes only the stored pairs (re-laid out) and the other tensors as they
// are, or cast.
bool keeps_only(const Recipe& recipe);

// --format awq / gptq hold integer pairs re-laid out and nothing convert quantizes: a recipe with a scheme target
// is refused, naming it.
void check_int_recipe(const Recipe& recipe, WriteFormat format);

// config.json's quantization_config for AWQ (AutoAWQ's to_transformers_dict) or GPTQ (AutoGPTQ's
// BaseQuantizeConfig, checkpoint_format gptq), read off the written shards. `unquantized`: the float Linear
// modules (AWQ's modules_to_not_convert; null when none).
std::string int_quantization_config(WriteFormat format, const std::vector<std::filesystem::path>& shards,
                                    const std::vector<std::string>& unquantized);

// compressed-tensors' config groups for the pack-quantized modules of the written shards: one per distinct weights
// description (width, group size, symmetry, act order) with its modules; empty when there are none.
struct IntGroup {
  std::string weights_json;  // the QuantizationArgs, as JSON text
  std::vector<std::string> modules;
};
std::vector<IntGroup> ct_int_groups(const std::vector<std::filesystem::path>& shards);

}  // namespace mf::io::detail
