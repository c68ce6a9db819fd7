// minifloat/hf_config.h: a Hugging Face config.json, its quantization_config checked by the rules of the engine that
// will load it, and the precision flags that follow (docs/spec.md#hf-config; docs/spec.md#deepinfer-config for
// DeepInfer's rules).
//
// Two rule sets:
//   deepseek   DeepSeek V3/V4: {"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic",
//              "weight_block_size": [128, 128]}, plus optional "scale_fmt": "ue8m0" (V3.1, V4; absent: f32 scales)
//              and "expert_dtype": "fp4" (FP4 routed experts). No quantization_config at all: a plain model.
//   deepinfer  exactly quant_method "fp8", expert_dtype "fp4", activation_scheme "dynamic", weight_block_size
//              [32, 32], scale_fmt "ue8m0" (fmt, if present, "e4m3"), and model dtype bfloat16.
// A value that differs fails with DeepInfer's text, `Unsupported HF {key}: {value!r}; expected {expected!r}` (values
// written as Python's repr writes them); a missing or unknown key fails naming it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace mf::io {

// The rule sets, one per checkpoint dialect (docs/checkpoints.md, "Dialects"). `detect` picks one from
// quant_method: "fp8" with "fmt" (or DeepInfer's [32, 32] blocks) is DeepSeek's (or DeepInfer's), "fp8" without it
// transformers' FineGrainedFP8, "compressed-tensors", "modelopt" (or an hf_quant_config.json beside config.json),
// "mxfp4" gpt-oss, "minifloat" minifloat's own declaration (the schemes its pairs hold, as convert writes it), "awq"
// (AutoAWQ: version, bits, group_size, zero_point) and "gptq" (AutoGPTQ: bits, group_size, checkpoint_format); any
// other quant_method is `unknown`: nothing is checked, and the commands refuse it (quantization_rule.h).
enum class ConfigRules : std::uint8_t {
  detect,
  deepseek,
  deepinfer,
  transformers_fp8,
  compressed_tensors,
  modelopt,
  gpt_oss,
  minifloat,
  awq,
  gptq,
  unknown
};
// "auto" (or "detect"), "deepseek", "deepinfer", "transformers-fp8", "compressed-tensors", "modelopt", "gpt-oss",
// "minifloat", "awq", "gptq";
// throws std::invalid_argument.
ConfigRules config_rules_named(std::string_view name);
std::string_view to_string(ConfigRules r);

struct QuantizationConfig {
  std::string quant_method = "fp8";
  std::string fmt = "e4m3";  // "" when absent (deepinfer allows that)
  std::string activation_scheme = "dynamic";
  int block_rows = 128, block_cols = 128;  // weight_block_size
  std::string scale_fmt = "ue8m0";         // "" when absent: f32 scales (DeepSeek V3)
  std::string expert_dtype;                // "fp4", or "" when absent
};

// What a loader decides from the config (DeepInfer's flags; the same derivation for DeepSeek's rules):
//   fp8_attn, fp8_mlp  the attention and MLP linears are FP8 (quant_method == "fp8");
//   mxfp8              those FP8 weights' scales are ue8m0 powers of two over blocks 32 wide, so each 1x32 row
//                      piece is an MXFP8 block (DeepInfer's [32, 32]; not DeepSeek's [128, 128]);
//   mxfp4              routed experts are MXFP4 (expert_dtype == "fp4").
struct PrecisionFlags {
  bool fp8_attn = false, fp8_mlp = false, mxfp8 = false, mxfp4 = false;
};

// One of compressed-tensors' config_groups, as far as what its weights are stored as (ModelOpt's MIXED_PRECISION:
// one per quantized layer, its name the module's and its format the layer's quant_algo).
struct QuantGroup {
  std::string name;                  // the group's key ("group_0")
  std::string format;                // the group's format, else the config's ("float-quantized", ...; "" unset)
  std::string type;                  // weights.type: "float" or "int" ("" when the group quantizes no weights)
  int num_bits = 0;                  // weights.num_bits (0 when unset)
  std::vector<std::string> targets;  // compressed-tensors: module names, "re:" regexes, or class names ("Linear")
  int group_size = 0;                // weights.group_size / ModelOpt's group_size (0 when unset)
};

struct HfConfig {
  ConfigRules rules = ConfigRules::deepseek;       // the rule set applied (detect picks one)
  std::string model_type;                          // "" when absent
  std::string dtype;                               // torch_dtype (or the newer "dtype"); "" when absent
  std::optional<QuantizationConfig> quantization;  // deepseek, deepinfer and transformers-fp8 rules
  std::string quant_method;                        // as written; "" without a quantization_config
  // quantization_config was read from text_config (a composite model's text config: DeepSeek-V4.1-Flash), there
  // being none at the top level, where it is otherwise read.
  bool quantization_in_text_config = false;
  std::string scheme;  // the dialect's name for its scheme: compressed-tensors' format, ModelOpt's quant_algo, ...
  std::vector<std::string> not_converted;  // ignore / modules_to_not_convert / exclude_modules, as written
  std::vector<QuantGroup> groups;          // compressed-tensors' config_groups, in order; AWQ's and GPTQ's one
                                           // (format: AWQ's version, GPTQ's checkpoint_format)
  std::vector<std::string> schemes;        // minifloat's own declaration: the schemes its pairs hold
  PrecisionFlags flags;
  // The integer fields of the top level (hidden_size, num_hidden_layers, n_routed_experts, ...), for `memory`.
  std::map<std::string, std::int64_t> numbers;
  // The top-level arrays of strings (layer_types, mlp_layer_types, architectures), for model_tensors.
  std::map<std::string, std::vector<std::string>> string_lists;

  // numbers[key], or a HfConfigError (missing_key) naming it.
  std::int64_t number(const std::string& key) const;
  std::int64_t number_or(const std::string& key, std::int64_t fallback) const;
};

enum class HfErrc : std::uint8_t {
  invalid_json,       // not JSON
  not_object,         // config.json or quantization_config is not an object
  missing_key,        // a required key is absent (quantization_config under deepinfer rules, one of its keys)
  unknown_key,        // quantization_config has a key neither rule set knows
  bad_type,           // a value of the wrong JSON type (weight_block_size not two integers, ...)
  unsupported_value,  // Unsupported HF {key}: {value!r}; expected {expected!r}
};

struct HfConfigError : std::invalid_argument {
  HfConfigError(HfErrc code, const std::string& what) : std::invalid_argument(what), code(code) {}
  HfErrc code;
};

// Parses and checks config.json text by `rules` (detect: see ConfigRules). `hf_quant_config`, when not empty, is
// ModelOpt's hf_quant_config.json: it announces the scheme where config.json has no quantization_config.
HfConfig parse_hf_config(std::string_view json, ConfigRules rules = ConfigRules::detect,
                         std::string_view hf_quant_config = {});
// The same for a file (and the hf_quant_config.json beside it); errors are prefixed with the file's path. Throws
// IoError if it cannot be read.
HfConfig read_hf_config(const std::filesystem::path& path, ConfigRules rules = ConfigRules::detect);

// config.json text with quantization_config replaced by `q` (removed when nullopt) and everything else kept, as
// indented JSON; one nested under text_config is removed (the top-level one says what the output holds). For convert
// and dequantize. Throws HfConfigError if `json` is not an object.
std::string hf_config_with_quantization(std::string_view json, const std::optional<QuantizationConfig>& q);

// config.json text with quantization_config set to minifloat's own declaration, {"quant_method": "minifloat",
// "schemes": [...]}: the schemes its quantized pairs hold, as find_pairs names them (convert writes it where no other
// dialect's config says what minifloat's form holds; verify holds the pairs against it).
std::string hf_config_with_minifloat_schemes(std::string_view json, const std::vector<std::string>& schemes);

// config.json text without a quantization_config nested under text_config (the other dialects' configs are written
// at the top level over this). Throws HfConfigError if `json` is not an object.
std::string hf_config_unnested(std::string_view json);

// Python's repr of a JSON value ('fp8', [32, 32], True, None): how DeepInfer's messages print values.
std::string python_repr_of_json(std::string_view json);

}  // namespace mf::io
