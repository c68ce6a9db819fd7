// Internal: the engine convert and dequantize share. A plan (one Step per input tensor or quantized pair, made by
// the command's Planner for each shard) is checked whole before anything is written, then carried out by a pool of
// workers: each output shard filled in place in a temporary file and renamed whole when its last tensor is in; the
// index and config.json written last (merge_index).
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "dialect_writer.h"
#include "expert_relayout.h"
#include "int4_relayout.h"
#include "minifloat/checkpoint_commands.h"
#include "minifloat/checkpoint_tensors.h"
#include "quantization_rule.h"

namespace mf::io::detail {

// How a re-laid-out pair's block scales change: not at all, between F32 and E8M0, or from BF16 / F16 (Qwen's FP8
// releases) widened to F32 (recode_scales).
enum class ScaleRecode { none, to_ue8m0, to_f32, widen };

// One entry of a plan: one input tensor (or pair, or MoE experts) and the output tensors it becomes, in order.
struct Step {
  const SafetensorsTensor* in;
  std::string target;            // keep, bf16, f32, a scheme name, or "dequantize"
  std::optional<Scheme> scheme;  // quantize into
  const QuantizedPair* pair = nullptr;
  std::optional<detail::WrittenKind> dialect = std::nullopt;  // --format other than minifloat: its name of the scheme
  WriteFormat format = WriteFormat::minifloat;
  bool experts = false;   // gpt-oss: a 3-D MoE expert tensor [E, in, out], quantized as [E x out, in]
  bool relayout = false;  // `pair` holds `scheme`'s codes and scales already: copied under the format's names
  bool release = false;   // --format deepseek for DeepSeek's bare names: X.weight + X.scale (deepseek_release.h)
  bool cast = false;      // convert --lossless: `pair` cast into `scheme` (lossless_cast.h), not requantized
  float second = 0;       // relayout, two-level schemes: the second-level scale as the format stores it
  ScaleRecode recode = ScaleRecode::none;  // relayout: the block scales rewritten exactly into the target's format
  std::shared_ptr<const detail::ExpertMove> move =
      nullptr;  // relayout of MoE experts to or from gpt-oss's fused blocks
  std::shared_ptr<const detail::IntRelayout> int_relayout = nullptr;  // `pair`, an integer one, in another packing
};

using Planner = std::function<std::vector<Step>(const SafetensorsFile&, std::vector<QuantizedPair>&)>;

// dequantize's plan (dequantize.cc): every pair, read as `declared` says, to its plain weight (target "dequantize"),
// every other float tensor to bf16 or f32, a tensor that `passthrough` names or that is not float kept as stored,
// activation scales and the pairs' parts left out. The checkpoint reader (checkpoint_reader.h) lists a checkpoint's
// logical tensors by the same plan, so that it reads what dequantize writes.
Planner dequantize_planner(const Declaration& declared, const std::vector<std::string>& passthrough, bool bf16_out);

// Shard `i` of `c`, mapped, with the parts of its pairs that the index puts in other shards borrowed
// (borrow_partners): a weight and its scale in different shards are planned, read and written in the weight's shard.
SafetensorsFile open_input_shard(const Checkpoint& c, std::size_t i);

// `plan`'s steps for shard `i` (`f`, from open_input_shard), less the tensors it lends to pairs of other shards
// (lent_parts): those are written with their weight, and copying or casting them here would write a scale as if it
// were a plain tensor.
std::vector<Step> plan_shard(const Checkpoint& c, std::size_t i, const SafetensorsFile& f, const Planner& plan,
                             std::vector<QuantizedPair>& pairs);

// Applies the quantization rule to every shard (quantization_rule.h: a declaration or tensor minifloat does not read
// is refused), runs the command's own `checks`, plans every shard of this job (refusing before anything is written:
// see run_plan in convert_run.cc), writes them, and (one job) merges the index and config.json. `recipe`: convert's,
// or nullptr for dequantize.
ConvertReport run_plan(const std::filesystem::path& in, const std::filesystem::path& out, const ConvertOptions& o,
                       const Planner& plan, bool bf16_out, const Recipe* recipe,
                       const std::function<void()>& checks = {});

// FP8 block scales of pair `p` rewritten exactly from F32 to E8M0 or back, or from BF16 / F16 to F32; throws
// std::invalid_argument naming the first scale that has no exact form (`target`: the recipe's target, for the
// message).
std::vector<std::byte> recode_scales(const SafetensorsFile& f, const QuantizedPair& p, ScaleRecode how,
                                     const std::string& target);

// E8M0 scale bytes as F32 values 2^(code - 127), exact (2^-127 is an f32 subnormal); empty, with `nan_at` the index,
// when one is the NaN code 0xFF.
std::vector<std::byte> e8m0_as_f32(std::span<const std::byte> in, std::size_t& nan_at);

}  // namespace mf::io::detail
