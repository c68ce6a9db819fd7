// Internal: the one rule that inspect, verify, dequantize and convert apply to a checkpoint that is, or looks,
// quantized (docs/checkpoints.md, "Never silent"):
//   - a quantization that config.json declares (any quant_method; ModelOpt's hf_quant_config.json) is read in full
//     or refused, naming the method and the first tensor it covers that minifloat does not read;
//   - a tensor whose dtype or name says it is quantized, or a quantization parameter (qweight, qzeros, scales,
//     g_idx, weight_packed, weight_zero_point, weight_global_scale, weight_shape, *_scale*, *_blocks, packed
//     integers beside a scale) and that belongs to no pair minifloat reads is never taken for a plain tensor: it is
//     an error, so nothing copies it as a weight or quantizes it as one;
//   - names that look like scales but are parameters of a known model family (DeepSeek V4's hc_*_scale, a norm's
//     scale) and activation or KV-cache scales are recognised as what they are.
// Every command calls QuantizationRule for each shard before it writes anything.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "minifloat/checkpoint.h"
#include "minifloat/checkpoint_tensors.h"
#include "minifloat/hf_config.h"

namespace mf::io::detail {

// What one tensor is, by the rule.
enum class TensorRole : std::uint8_t {
  plain,             // a model parameter that holds its own values
  pair_part,         // codes, scales, second-level scale or extra of a quantized pair that minifloat reads
  activation_scale,  // input_scale, input_global_scale, k_scale, v_scale, ...: calibration of quantized arithmetic
  model_parameter,   // named like a scale but a parameter of its model family (V4's hc_*_scale, a norm's scale)
  not_understood,    // quantized, or a quantization parameter, by its dtype or name, and in no pair minifloat reads
};

// What the config declares: the method ("" when nothing is declared) and, when minifloat does not read that
// declaration, why not ("" when it does).
struct Declaration {
  std::string method;
  std::string not_read;
  bool gptq_v2 = false;  // AutoGPTQ's checkpoint_format gptq_v2: zero points stored as they are
};
Declaration declaration_of(const std::optional<HfConfig>& config);

// What the pairs' files cannot tell, from the declaration: GPTQ pairs of a gptq_v2 checkpoint read their zero points
// as stored. Every command that reads a pair's numbers calls it after find_pairs.
void read_as_declared(std::vector<QuantizedPair>& pairs, const Declaration& declaration);

// The one num_bits of the config's compressed-tensors pack-quantized integer groups, 0 when there are none or they
// differ: find_pairs' packed_bits for a checkpoint read headers-only.
int declared_packed_bits(const std::optional<HfConfig>& config);

// Float tensors that hold activation or KV-cache scales (static FP8 input scales, k_scale / v_scale).
bool activation_scale(const SafetensorsTensor& t);

// Why a checkpoint is refused: the IoError its command throws.
struct RuleProblem {
  IoErrc code = IoErrc::not_dequantizable;  // not_dequantizable (a tensor), quantization_not_read (the declaration)
  std::filesystem::path file;
  std::string tensor;  // "" for the declaration as a whole
  std::string detail;
  [[noreturn]] void raise() const;
  std::string text() const;  // what raise() throws, as what() gives it
};

// Tensors of one shard that are parts of pairs read in another shard, each with its pair's weight (lent_parts).
using Lent = std::map<std::string, std::string>;

class QuantizationRule {
 public:
  // `where`: the checkpoint (for messages). `passthrough`: globs the user named to copy unchanged on purpose
  // (dequantize --passthrough): those tensors count as plain.
  // `weight_map`: the checkpoint's index (kept by pointer), to name a tensor's partner that the index puts in another
  // shard when they do not pair. A scale whose weight is in another shard is a pair part when shard() or problem()
  // is given it among the parts that pairs of other shards read (lent_parts); every command passes them.
  QuantizationRule(Declaration declaration, std::filesystem::path where, std::vector<std::string> passthrough = {},
                   const std::map<std::string, std::string>* weight_map = nullptr);

  // The role of each tensor of `file` (in file order), given the pairs find_pairs found in it. Throws IoError
  // (not_dequantizable) at the first tensor not understood, naming the file, the tensor, its dtype and shape and
  // the declaration; and (quantization_not_read) at the first quantized tensor of a declaration minifloat does
  // not read.
  // `lent`: tensors of `file` that are parts of pairs read in another shard (lent_parts).
  std::vector<TensorRole> shard(const SafetensorsFile& file, const std::vector<QuantizedPair>& pairs,
                                const Lent* lent = nullptr) const;

  // After every shard: a declaration minifloat does not read is refused even where no tensor looked quantized.
  void finish() const;

  // What shard() and finish() would throw, for a caller that reports instead of refusing (inspect); nullopt when
  // understood. `roles` gets every tensor's role, past the first problem too.
  std::optional<RuleProblem> problem(const SafetensorsFile& file, const std::vector<QuantizedPair>& pairs,
                                     std::vector<TensorRole>& roles, const Lent* lent = nullptr) const;
  std::optional<RuleProblem> finish_problem() const;

  const Declaration& declaration() const { return declaration_; }

 private:
  Declaration declaration_;
  std::filesystem::path where_;
  std::vector<std::string> passthrough_;
  const std::map<std::string, std::string>* weight_map_ = nullptr;
};

// A tensor's partner in the pair forms (a weight's W_scale_inv, W_scale, W_scale_2, X.scale, P.weight_scale; a
// scale's weight) that `weight_map` puts in a shard other than `shard`: {partner, its shard, whether the partner is
// the weight}, or nullopt.
struct Partner {
  std::string name, shard;
  bool is_weight = false;
};
std::optional<Partner> partner_in_other_shard(const std::string& name, const std::filesystem::path& shard,
                                              const std::map<std::string, std::string>& weight_map);

// Borrows into `file` (shard `shard` of `c`, read headers-only or mapped) every tensor of its tensors' modules that
// c's index puts in another shard (SafetensorsFile::borrow), each other shard read as `file` was: find_pairs then
// finds a pair in its weight's shard, with its scale, second-level scale and extras wherever they are. DeepSeek's
// releases split them: vllm-project/compressed-tensors #641.
void borrow_partners(SafetensorsFile& file, const Checkpoint& c, std::size_t shard);

// The tensors of `file` (shard `shard` of `c`) that are parts (scale, second-level scale, extras) of a pair whose
// weight is in another shard: that shard's find_pairs reads them (borrow_partners), and they are written there, with
// the weight, never here as tensors of their own; each with its pair's weight. Empty for a checkpoint with no index.
// The other shards are read as `file` was (headers only or mapped; find_pairs' `packed_bits` for the former).
Lent lent_parts(const SafetensorsFile& file, const Checkpoint& c, std::size_t shard, int packed_bits = 0);

// The checkpoint's declaration (its config.json and hf_quant_config.json, read by `rules`); a config that fails its
// rules is a declaration not read, with the rules' message.
Declaration checkpoint_declaration(const Checkpoint& c, ConfigRules rules = ConfigRules::detect);

// The rule over every shard of `c` (each with its pairs' parts in other shards borrowed, and the parts it lends
// counted as pair parts), then finish(): what convert and dequantize run before they plan anything.
void check_understood(const Checkpoint& c, const std::vector<std::string>& passthrough = {});

}  // namespace mf::io::detail
