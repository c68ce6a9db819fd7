// The rule of what a quantized (or quantized-looking) checkpoint's config and tensors must be for a command to go on
// (quantization_rule.h): one place, called by inspect, verify, dequantize and convert.
#include "quantization_rule.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <set>

#include "../io/file.h"
#include "minifloat/recipe.h"

namespace mf::io::detail {
namespace {

bool is_float(DType t) { return t == DType::F32 || t == DType::BF16 || t == DType::F16 || t == DType::F64; }

bool is_integer(DType t) {
  switch (t) {
    case DType::U8:
    case DType::I8:
    case DType::I16:
    case DType::U16:
    case DType::I32:
    case DType::U32:
    case DType::I64:
    case DType::U64: return true;
    default: return false;
  }
}

// Element and scale formats, and bytes of packed codes: what a plain model parameter is never stored as.
bool quantized_dtype(DType t) {
  switch (t) {
    case DType::F4:
    case DType::F6_E2M3:
    case DType::F6_E3M2:
    case DType::U8:
    case DType::I8:
    case DType::F8_E5M2:
    case DType::F8_E4M3:
    case DType::F8_E8M0: return true;
    default: return false;
  }
}

std::string last_part(const std::string& name) {
  const std::size_t dot = name.rfind('.');
  return dot == std::string::npos ? name : name.substr(dot + 1);
}

std::string module_part(const std::string& name) {
  const std::size_t dot = name.rfind('.');
  return dot == std::string::npos ? std::string() : name.substr(0, dot);
}

// The names the quantizing libraries give their codes and parameters: AutoAWQ and GPTQ (qweight, qzeros, scales,
// g_idx), compressed-tensors (weight_packed, weight_scale, weight_zero_point, weight_global_scale, weight_shape,
// weight_g_idx), bitsandbytes (absmax, quant_map, quant_state, SCB), gpt-oss (*_blocks, *_scales), DeepSeek and
// ModelOpt (*_scale_inv, *_scale, *_scale_2), HQQ (W_q, meta).
bool quantized_name(const std::string& name) {
  static constexpr std::array<const char*, 14> kParts{
      "qweight", "qzeros",    "scales", "g_idx",         "weight_packed",    "weight_shape", "weight_g_idx",
      "absmax",  "quant_map", "SCB",    "nested_absmax", "nested_quant_map", "W_q",          "weight_format"};
  const std::string part = last_part(name);
  if (std::find(kParts.begin(), kParts.end(), part) != kParts.end()) return true;
  for (const char* p : {"*_scale*", "*_blocks", "*_scales", "*global_scale*", "*zero_point*", "*quant_state*"}) {
    if (glob_match(p, name)) return true;
  }
  return false;
}

// A scale's name on a parameter of a known model family, and float: not a quantization scale.
//   DeepSeek V4   hc_attn_scale, hc_ffn_scale, hc_head_scale: the hyper-connection mixers' F32 scales
//   norms         NAME.scale where NAME is a norm (gpt-oss's original checkpoint: block.N.attn.norm.scale)
bool family_parameter(const SafetensorsTensor& t) {
  if (!is_float(t.dtype)) return false;
  const std::string part = last_part(t.name);
  if (part.starts_with("hc_") && part.ends_with("_scale")) return true;
  std::string module = last_part(module_part(t.name));
  std::transform(module.begin(), module.end(), module.begin(), [](unsigned char c) { return std::tolower(c); });
  return part == "scale" && t.shape.size() <= 1 && module.find("norm") != std::string::npos;
}

// An integer tensor beside a quantization parameter of its module (AWQ's qweight beside scales): packed codes.
bool packed_beside_scale(const SafetensorsFile& f, const SafetensorsTensor& t) {
  if (!is_integer(t.dtype)) return false;
  const std::string module = module_part(t.name);
  for (const char* sibling : {"scales", "scale", "weight_scale", "qzeros", "absmax", "SCB"}) {
    const SafetensorsTensor* s = f.find(module.empty() ? std::string(sibling) : module + "." + sibling);
    if (s != nullptr && s != &t) return true;
  }
  return false;
}

std::string shape_of(const SafetensorsTensor& t) {
  std::string s = "[";
  for (std::size_t i = 0; i < t.shape.size(); ++i) s += cat(i == 0 ? "" : ", ", t.shape[i]);
  return s + "]";
}

bool passed(const std::vector<std::string>& patterns, const std::string& name) {
  return std::any_of(patterns.begin(), patterns.end(), [&](const std::string& p) { return glob_match(p, name); });
}

// compressed-tensors' formats whose tensors minifloat reads (dialect_pairs.h): float weights in the FP8 and FP4
// formats, integer weights of 2 to 8 bits packed into I32 words (pack-quantized) or stored as I8 (int-quantized,
// naive-quantized).
bool read_ct_group(const QuantGroup& g) {
  if (g.type.empty()) return true;  // quantizes no weights (activations or KV cache only)
  if (g.format == "dense") return true;
  static constexpr std::array<const char*, 5> kFloat{"float-quantized", "naive-quantized", "mxfp8-quantized",
                                                     "mxfp4-pack-quantized", "nvfp4-pack-quantized"};
  if (g.type == "float") return std::find(kFloat.begin(), kFloat.end(), g.format) != kFloat.end();
  const bool bits = g.num_bits >= 2 && g.num_bits <= 8;
  if (g.format == "pack-quantized") return bits;
  return (g.format == "int-quantized" || g.format == "naive-quantized") && g.num_bits == 8;
}

std::string upper(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::toupper(c); });
  return s;
}

// ModelOpt's quant_algo names as its export writes them (modelopt/torch/export/quant_utils.py
// process_layer_quant_config; FP8_PB_WO comes out lower-case): "" for those whose tensors minifloat reads, else why
// not. Read: NVFP4 and its variants of the same tensors (W4A16_NVFP4 without input_scale, W4A8_NVFP4_FP8 with
// weight_scale_2 = amax / 448, NVFP4_AWQ with pre_quant_scale), FP8 per tensor, per channel
// (FP8_PER_CHANNEL_PER_TOKEN: weight_scale [R]) and per 128x128 block, MXFP8, MXFP4 (and W4A8_MXFP4_FP8, the same
// weights), INT4 (W4A16_AWQ) and INT8 (W8A16, W8A8_SQ_PER_CHANNEL).
std::string modelopt_not_read(const std::string& algo) {
  static constexpr std::array<const char*, 13> kRead{
      "NVFP4", "W4A16_NVFP4", "W4A8_NVFP4_FP8", "NVFP4_AWQ", "FP8",   "FP8_PER_CHANNEL_PER_TOKEN", "FP8_PB_WO",
      "MXFP8", "MXFP4",       "W4A8_MXFP4_FP8", "W4A16_AWQ", "W8A16", "W8A8_SQ_PER_CHANNEL"};
  const std::string a = upper(algo);
  if (std::find(kRead.begin(), kRead.end(), a) != kRead.end()) return "";
  if (a == "W4A8_AWQ") {
    return "is not read by minifloat: its INT4 weight passes through FP8 (a second quantizer whose "
           "weight_scale_2 is amax / 448) before the matmul, a rounding of q x weight_scale / weight_scale_2 that "
           "the engine's kernel defines and the checkpoint does not hold";
  }
  if (a == "NVFP4_SVD") {
    return "is not read by minifloat: SVDQuant's weight is the NVFP4 residual plus a low-rank product of two "
           "more matrices, not a quantized weight alone";
  }
  return "is not one minifloat reads (NVFP4, W4A16_NVFP4, W4A8_NVFP4_FP8, NVFP4_AWQ, FP8, "
         "FP8_PER_CHANNEL_PER_TOKEN, FP8_PB_WO, MXFP8, MXFP4, W4A8_MXFP4_FP8, W4A16_AWQ, W8A16, "
         "W8A8_SQ_PER_CHANNEL; MIXED_PRECISION of those)";
}

}  // namespace

int declared_packed_bits(const std::optional<HfConfig>& config) {
  int bits = 0;
  for (const QuantGroup& g : config ? config->groups : std::vector<QuantGroup>{}) {
    if (g.type != "int" || g.format != "pack-quantized") continue;
    if (bits != 0 && g.num_bits != bits) return 0;
    bits = g.num_bits;
  }
  return bits;
}

bool activation_scale(const SafetensorsTensor& t) {
  if (!is_float(t.dtype)) return false;
  for (const char* suffix : {".input_scale", ".output_scale", ".k_scale", ".v_scale", ".q_scale", ".prob_scale",
                             ".input_global_scale", ".activation_scale"}) {
    if (t.name.ends_with(suffix)) return true;
  }
  return false;
}

Declaration declaration_of(const std::optional<HfConfig>& config) {
  Declaration d;
  if (!config || config->quant_method.empty()) return d;
  const HfConfig& c = *config;
  d.method = c.quant_method;
  switch (c.rules) {
    case ConfigRules::deepseek:
    case ConfigRules::deepinfer:
    case ConfigRules::transformers_fp8:
    case ConfigRules::gpt_oss:
    case ConfigRules::minifloat: return d;
    case ConfigRules::awq:
    case ConfigRules::gptq: {
      // AutoAWQ's GEMM layout with 4-bit codes; AutoGPTQ's own layouts of 2 to 8 bits (checkpoint_format gptq: zeros
      // stored - 1; gptq_v2: as they are, the same words otherwise). Other versions (AWQ's gemv, gemv_fast, marlin;
      // GPTQ's marlin) pack otherwise.
      const QuantGroup& g = c.groups.front();
      const bool awq = c.rules == ConfigRules::awq;
      d.gptq_v2 = !awq && g.format == "gptq_v2";
      if (awq ? g.format == "gemm" && g.num_bits == 4
              : (g.format == "gptq" || g.format == "gptq_v2") && g.num_bits >= 2 && g.num_bits <= 8) {
        return d;
      }
      d.not_read = cat("its ", awq ? "version" : "checkpoint_format", " '", g.format, "' with ", g.num_bits,
                       "-bit codes is not a layout minifloat reads (",
                       awq ? "AutoAWQ's gemm, 4 bits" : "AutoGPTQ's gptq or gptq_v2, 2 to 8 bits", ")");
      return d;
    }
    case ConfigRules::compressed_tensors:
      for (const QuantGroup& g : c.groups) {
        if (!read_ct_group(g)) {
          d.not_read = cat("its config group '", g.name, "' stores ", g.type, g.num_bits ? cat(g.num_bits) : "",
                           " weights as '", g.format.empty() ? "(no format)" : g.format,
                           "', which minifloat does not read (it reads float-quantized, naive-quantized and "
                           "mxfp8-quantized FP8, mxfp4-pack-quantized and nvfp4-pack-quantized, pack-quantized "
                           "integers of 2 to 8 bits, and int-quantized int8)");
          return d;
        }
      }
      return d;
    case ConfigRules::modelopt: {
      // MIXED_PRECISION: every layer's own algorithm (quantized_layers) must be one minifloat reads.
      if (upper(c.scheme) == "MIXED_PRECISION" && !c.groups.empty()) {
        for (const QuantGroup& g : c.groups) {
          if (const std::string why = modelopt_not_read(g.format); !why.empty()) {
            d.not_read = cat("its quantized layer '", g.name, "' has quant_algo '", g.format, "', which ", why);
            return d;
          }
        }
        return d;
      }
      if (const std::string why = modelopt_not_read(c.scheme); !why.empty())
        d.not_read = cat("its quant_algo '", c.scheme, "' ", why);
      return d;
    }
    default: break;
  }
  // FBGEMM's per-row FP8 is the scaled pair form (weight F8_E4M3 with weight_scale F32 [R, 1]).
  if (c.quant_method == "fbgemm_fp8") return d;
  d.not_read = "minifloat does not read this quantization method yet";
  return d;
}

void read_as_declared(std::vector<QuantizedPair>& pairs, const Declaration& declaration) {
  for (QuantizedPair& p : pairs) p.gptq_v2 = declaration.gptq_v2 && p.packing == QuantizedPair::Packing::gptq;
}

Declaration checkpoint_declaration(const Checkpoint& c, ConfigRules rules) {
  const std::optional<std::filesystem::path> path = c.config_path();
  if (!path) return {};
  try {
    return declaration_of(read_hf_config(*path, rules));
  } catch (const HfConfigError& e) {
    // A config that fails its own rules declares something minifloat cannot take as read.
    return {"(as config.json states it)", e.what()};
  }
}

QuantizationRule::QuantizationRule(Declaration declaration, std::filesystem::path where,
                                   std::vector<std::string> passthrough,
                                   const std::map<std::string, std::string>* weight_map)
    : declaration_(std::move(declaration)),
      where_(std::move(where)),
      passthrough_(std::move(passthrough)),
      weight_map_(weight_map) {}

namespace {

// A weight's scales in the pair forms (W_scale_inv; W_scale and W_scale_2; V4's X.scale; P.weight_scale).
std::vector<std::string> scale_names(const std::string& name) {
  std::vector<std::string> out{name + "_scale_inv", name + "_scale", name + "_scale_2"};
  if (name.ends_with(".weight")) out.push_back(name.substr(0, name.size() - 7) + ".scale");
  if (name.ends_with(".weight_packed")) out.push_back(name.substr(0, name.size() - 7) + "_scale");
  return out;
}

// A scale's weight, by the same names.
std::vector<std::string> weight_names(const std::string& name) {
  std::vector<std::string> out;
  const auto stem = [&](std::string_view suffix) { return name.substr(0, name.size() - suffix.size()); };
  if (name.ends_with("_scale_inv")) out.push_back(stem("_scale_inv"));
  if (name.ends_with("_scale_2")) out.push_back(stem("_scale_2"));
  if (name.ends_with(".scale")) out.push_back(stem(".scale") + ".weight");
  if (name.ends_with(".weight_scale")) out.push_back(stem("_scale") + "_packed");
  if (name.ends_with("_scale")) out.push_back(stem("_scale"));
  return out;
}

}  // namespace

std::optional<Partner> partner_in_other_shard(const std::string& name, const std::filesystem::path& shard,
                                              const std::map<std::string, std::string>& weight_map) {
  for (const bool weight : {false, true}) {
    for (const std::string& p : weight ? weight_names(name) : scale_names(name)) {
      const auto it = weight_map.find(p);
      if (it != weight_map.end() && it->second != shard.filename().string()) return Partner{p, it->second, weight};
    }
  }
  return std::nullopt;
}

namespace {

// Calls f(name, its shard) for each tensor that c's index puts in a shard other than `shard` and in the module of a
// tensor of `file` (its name less the last part): where a pair's parts are (W_scale_inv, X.scale,
// weight_global_scale, input_scale, qzeros, g_idx, pre_quant_scale, _scales). A range of the sorted index per module,
// not a pass over the index per shard (163 shards of 208,215 tensors).
template <class F>
void for_each_sibling_elsewhere(const SafetensorsFile& file, const Checkpoint& c, std::size_t shard, F&& f) {
  std::set<std::string> modules;
  for (const SafetensorsTensor& t : file.tensors()) modules.insert(module_part(t.name));
  modules.erase("");
  for (const std::string& m : modules) {
    const std::string prefix = m + ".";
    for (auto it = c.index.weight_map.lower_bound(prefix);
         it != c.index.weight_map.end() && it->first.starts_with(prefix); ++it) {
      if (it->second != c.shards[shard] && it->first.find('.', prefix.size()) == std::string::npos) {
        f(it->first, it->second);
      }
    }
  }
}

}  // namespace

void borrow_partners(SafetensorsFile& file, const Checkpoint& c, std::size_t shard) {
  std::map<std::string, std::shared_ptr<const SafetensorsFile>> others;
  std::vector<std::pair<std::string, std::string>> siblings;
  for_each_sibling_elsewhere(
      file, c, shard, [&](const std::string& name, const std::string& where) { siblings.emplace_back(name, where); });
  for (const auto& [name, where] : siblings) {
    std::shared_ptr<const SafetensorsFile>& other = others[where];
    if (!other) other = std::make_shared<const SafetensorsFile>(read_shard(c.directory / where, !file.has_data()));
    file.borrow(other, name);  // a name the index lists but the shard lacks: check_checkpoint names it
  }
}

Lent lent_parts(const SafetensorsFile& file, const Checkpoint& c, std::size_t shard, int packed_bits) {
  std::set<std::string> others;
  for_each_sibling_elsewhere(file, c, shard,
                             [&](const std::string&, const std::string& where) { others.insert(where); });
  Lent lent;
  for (std::size_t j = 0; j < c.shards.size(); ++j) {
    if (!others.contains(c.shards[j])) continue;
    SafetensorsFile f = read_shard(c.shard_path(j), !file.has_data());
    borrow_partners(f, c, j);
    for (const QuantizedPair& p : find_pairs(f, packed_bits)) {
      std::vector<std::string> parts = p.extras;
      parts.push_back(p.scale);
      if (!p.tensor_scale.empty()) parts.push_back(p.tensor_scale);
      for (const std::string& part : parts) {
        const auto it = c.index.weight_map.find(part);
        if (it != c.index.weight_map.end() && it->second == c.shards[shard]) lent[part] = p.weight;
      }
    }
  }
  return lent;
}

namespace {

std::string partner_text(const std::optional<Partner>& p) {
  if (!p) return "";
  return cat(" (its partner '", p->name, "' is in shard ", p->shard,
             ": the index puts a weight and its scale in different shards, and they do not pair there)");
}

}  // namespace

void RuleProblem::raise() const {
  if (tensor.empty()) throw IoError(code, file, detail);
  throw IoError(code, file, tensor, detail);
}

std::string RuleProblem::text() const {
  try {
    raise();
  } catch (const IoError& e) {
    return e.what();
  }
}

std::optional<RuleProblem> QuantizationRule::problem(const SafetensorsFile& file,
                                                     const std::vector<QuantizedPair>& pairs,
                                                     std::vector<TensorRole>& roles, const Lent* lent) const {
  std::set<std::string> parts;
  if (lent) {
    for (const auto& [part, weight] : *lent) parts.insert(part);
  }
  for (const QuantizedPair& p : pairs) {
    parts.insert({p.weight, p.scale});
    if (!p.tensor_scale.empty()) parts.insert(p.tensor_scale);
    parts.insert(p.extras.begin(), p.extras.end());
  }
  std::optional<RuleProblem> first;
  roles.clear();
  for (const SafetensorsTensor& t : file.tensors()) {
    TensorRole r = TensorRole::plain;
    if (parts.contains(t.name)) {
      r = TensorRole::pair_part;
    } else if (passed(passthrough_, t.name)) {
      r = TensorRole::plain;
    } else if (activation_scale(t)) {
      r = TensorRole::activation_scale;
    } else if (family_parameter(t)) {
      r = TensorRole::model_parameter;
    } else if (quantized_dtype(t.dtype) || quantized_name(t.name) || packed_beside_scale(file, t)) {
      r = TensorRole::not_understood;
    }
    std::optional<Partner> elsewhere;
    if (r == TensorRole::not_understood && weight_map_) {
      elsewhere = partner_in_other_shard(t.name, file.path(), *weight_map_);
    }
    roles.push_back(r);
    if (first) continue;
    if (!declaration_.not_read.empty() && (r == TensorRole::pair_part || r == TensorRole::not_understood)) {
      first =
          RuleProblem{IoErrc::quantization_not_read, where_, "",
                      cat("config.json declares quantization '", declaration_.method, "', and ", declaration_.not_read,
                          "; the first tensor it covers: '", t.name, "' (", dtype_name(t.dtype), " ", shape_of(t),
                          ") in ", file.path().string(), "; nothing was written")};
    } else if (r == TensorRole::not_understood) {
      const std::string declared = declaration_.method.empty()
                                       ? std::string("config.json declares no quantization")
                                       : cat("config.json declares quantization '", declaration_.method, "'");
      first = RuleProblem{IoErrc::not_dequantizable, file.path(), t.name,
                          cat(dtype_name(t.dtype), " ", shape_of(t), " looks quantized (by its ",
                              quantized_dtype(t.dtype) ? "dtype" : "name", ") but is part of no pair minifloat reads",
                              partner_text(elsewhere), " (", declared,
                              "): a quantized tensor or "
                              "quantization parameter is never copied as a weight nor quantized as one, so nothing "
                              "was written. dequantize --passthrough '",
                              t.name, "' copies it unchanged on purpose")};
    }
  }
  return first;
}

std::vector<TensorRole> QuantizationRule::shard(const SafetensorsFile& file, const std::vector<QuantizedPair>& pairs,
                                                const Lent* lent) const {
  std::vector<TensorRole> roles;
  if (const std::optional<RuleProblem> p = problem(file, pairs, roles, lent)) p->raise();
  return roles;
}

std::optional<RuleProblem> QuantizationRule::finish_problem() const {
  if (declaration_.not_read.empty()) return std::nullopt;
  return RuleProblem{IoErrc::quantization_not_read, where_, "",
                     cat("config.json declares quantization '", declaration_.method, "', and ", declaration_.not_read,
                         " (no tensor holds it in a form minifloat reads); nothing was "
                         "written")};
}

void QuantizationRule::finish() const {
  if (const std::optional<RuleProblem> p = finish_problem()) p->raise();
}

void check_understood(const Checkpoint& c, const std::vector<std::string>& passthrough) {
  const QuantizationRule rule(checkpoint_declaration(c), c.index_path.value_or(c.directory), passthrough,
                              &c.index.weight_map);
  for (std::size_t i = 0; i < c.shards.size(); ++i) {
    SafetensorsFile f = read_safetensors(c.shard_path(i));
    borrow_partners(f, c, i);
    const Lent lent = lent_parts(f, c, i);
    rule.shard(f, find_pairs(f), &lent);
  }
  rule.finish();
}

}  // namespace mf::io::detail
