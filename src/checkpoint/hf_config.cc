// config.json: quantization_config checked by DeepSeek's or DeepInfer's rules, and the flags that follow.
#include "minifloat/hf_config.h"

#include <algorithm>
#include <cctype>
#include <array>
#include <nlohmann/json.hpp>
#include <set>
#include <utility>
#include <vector>

#include "../io/byte_source.h"
#include "../io/file.h"
#include "minifloat/remote.h"

namespace mf::io {
namespace {

using Json = nlohmann::json;
using detail::cat;
constexpr std::uint64_t kMaxConfigBytes = 16 << 20;  // real configs are a few KB

constexpr std::array<std::string_view, 6> kKnownKeys{"quant_method",      "fmt",       "activation_scheme",
                                                     "weight_block_size", "scale_fmt", "expert_dtype"};

std::string repr(const Json& v);

std::string repr_string(std::string_view s) {
  // Python prefers single quotes, and switches to double quotes when the text holds ' but not ".
  const char q = s.find('\'') != std::string_view::npos && s.find('"') == std::string_view::npos ? '"' : '\'';
  std::string out(1, q);
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '\\' || c == q) {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (u < 0x20 || u == 0x7f) {
      constexpr char hex[] = "0123456789abcdef";
      out += "\\x";
      out += hex[u >> 4];
      out += hex[u & 15];
    } else {
      out += c;
    }
  }
  return out + q;
}

std::string repr(const Json& v) {
  switch (v.type()) {
    case Json::value_t::string: return repr_string(v.get_ref<const std::string&>());
    case Json::value_t::boolean: return v.get<bool>() ? "True" : "False";
    case Json::value_t::null: return "None";
    case Json::value_t::array: {
      std::string out = "[";
      for (std::size_t i = 0; i < v.size(); ++i) out += cat(i == 0 ? "" : ", ", repr(v[i]));
      return out + "]";
    }
    case Json::value_t::object: {
      std::string out = "{";
      for (auto it = v.begin(); it != v.end(); ++it) {
        out += cat(it == v.begin() ? "" : ", ", repr_string(it.key()), ": ", repr(it.value()));
      }
      return out + "}";
    }
    default: return v.dump();  // numbers print as Python prints them (32, 32.0, 1e+20)
  }
}

[[noreturn]] void unsupported(std::string_view key, const Json& value, const Json& expected) {
  throw HfConfigError(HfErrc::unsupported_value,
                      cat("Unsupported HF ", key, ": ", repr(value), "; expected ", repr(expected)));
}

Json parse_object(std::string_view text) {
  Json json;
  try {
    json = Json::parse(text);
  } catch (const Json::exception& e) {
    throw HfConfigError(HfErrc::invalid_json, cat("config is not valid JSON: ", e.what()));
  }
  if (!json.is_object()) throw HfConfigError(HfErrc::not_object, "config is not a JSON object");
  return json;
}

// The required keys in the order DeepInfer checks them (docs/spec.md#deepinfer-config), then the optional ones with
// their one value.
struct Rule {
  std::string_view key;
  Json expected;
  bool required;
};

std::vector<Rule> rules_for(ConfigRules r) {
  if (r == ConfigRules::deepinfer) {
    return {{"quant_method", "fp8", true},          {"expert_dtype", "fp4", true},
            {"activation_scheme", "dynamic", true}, {"weight_block_size", Json::array({32, 32}), true},
            {"scale_fmt", "ue8m0", true},           {"fmt", "e4m3", false}};
  }
  return {{"quant_method", "fp8", true},          {"fmt", "e4m3", true},
          {"activation_scheme", "dynamic", true}, {"weight_block_size", Json::array({128, 128}), true},
          {"scale_fmt", "ue8m0", false},          {"expert_dtype", "fp4", false}};
}

QuantizationConfig check_quantization(const Json& q, ConfigRules rules) {
  if (!q.is_object()) throw HfConfigError(HfErrc::not_object, "HF quantization_config is not an object");
  for (const Rule& rule : rules_for(rules)) {
    const std::string key(rule.key);
    if (!q.contains(key)) {
      if (!rule.required) continue;
      throw HfConfigError(HfErrc::missing_key, cat("Missing HF quantization_config key '", key, "' (", to_string(rules),
                                                   " rules expect ", repr(rule.expected), ")"));
    }
    if (q.at(key) != rule.expected) unsupported(key, q.at(key), rule.expected);
  }
  for (auto it = q.begin(); it != q.end(); ++it) {
    // Qwen's FP8 checkpoints add the modules they left in bf16 to DeepSeek's form.
    if (rules == ConfigRules::deepseek && it.key() == "modules_to_not_convert") continue;
    if (std::find(kKnownKeys.begin(), kKnownKeys.end(), it.key()) == kKnownKeys.end()) {
      throw HfConfigError(HfErrc::unknown_key,
                          cat("Unknown HF quantization_config key ", repr_string(it.key()),
                              " (known: quant_method, fmt, activation_scheme, weight_block_size, scale_fmt, "
                              "expert_dtype)"));
    }
  }
  // Every value now equals its rule's, so the types are known.
  QuantizationConfig c;
  c.fmt = q.value("fmt", "");
  c.scale_fmt = q.value("scale_fmt", "");
  c.expert_dtype = q.value("expert_dtype", "");
  c.block_rows = q.at("weight_block_size")[0].get<int>();
  c.block_cols = q.at("weight_block_size")[1].get<int>();
  return c;
}

// ---- the other dialects: the keys minifloat reads, checked for type; what else they hold is the library's ----

[[noreturn]] void bad_type(std::string_view dialect, std::string_view key, std::string_view expected, const Json& v) {
  throw HfConfigError(HfErrc::bad_type,
                      cat(dialect, " quantization_config key '", key, "' is ", repr(v), ", not ", expected));
}

std::vector<std::string> string_list(const Json& q, std::string_view dialect, const char* key) {
  std::vector<std::string> out;
  if (!q.contains(key) || q.at(key).is_null()) return out;
  const Json& v = q.at(key);
  if (!v.is_array()) bad_type(dialect, key, "a list of module names", v);
  for (const Json& e : v) {
    if (!e.is_string()) bad_type(dialect, key, "a list of module names", v);
    out.push_back(e.get<std::string>());
  }
  return out;
}

std::string string_or(const Json& q, std::string_view dialect, const char* key, std::string fallback) {
  if (!q.contains(key) || q.at(key).is_null()) return fallback;
  if (!q.at(key).is_string()) bad_type(dialect, key, "a string", q.at(key));
  return q.at(key).get<std::string>();
}

// transformers' FineGrainedFP8Config.to_dict(): every key it writes is known; anything else is a typo.
void check_transformers_fp8_keys(const Json& q) {
  static constexpr std::array<std::string_view, 9> known{"quant_method",
                                                         "activation_scheme",
                                                         "weight_block_size",
                                                         "modules_to_not_convert",
                                                         "modules_to_convert",
                                                         "dequantize",
                                                         "scale_fmt",
                                                         "expert_dtype",
                                                         "fmt"};
  for (auto it = q.begin(); it != q.end(); ++it) {
    if (std::find(known.begin(), known.end(), it.key()) == known.end()) {
      throw HfConfigError(HfErrc::unknown_key, cat("Unknown HF quantization_config key ", repr_string(it.key()),
                                                   " for transformers FP8 (known: quant_method, activation_scheme, "
                                                   "weight_block_size, modules_to_not_convert, modules_to_convert, "
                                                   "dequantize, scale_fmt, expert_dtype, fmt)"));
    }
  }
}

// weight_block_size: two positive integers, or null (0 x 0: one scale per tensor).
void read_weight_block_size(const Json& q, std::string_view d, QuantizationConfig& qc) {
  qc.block_rows = qc.block_cols = 0;
  if (!q.contains("weight_block_size") || q.at("weight_block_size").is_null()) return;
  const Json& b = q.at("weight_block_size");
  if (!b.is_array() || b.size() != 2 || !b[0].is_number_unsigned() || !b[1].is_number_unsigned() ||
      b[0].get<int>() <= 0 || b[1].get<int>() <= 0) {
    bad_type(d, "weight_block_size", "two positive integers, or null", b);
  }
  qc.block_rows = b[0].get<int>();
  qc.block_cols = b[1].get<int>();
}

void check_transformers_fp8(const Json& q, HfConfig& c) {
  constexpr std::string_view d = "transformers FP8";
  check_transformers_fp8_keys(q);
  QuantizationConfig qc;
  qc.fmt = "";
  qc.activation_scheme = string_or(q, d, "activation_scheme", "dynamic");
  if (qc.activation_scheme != "dynamic" && qc.activation_scheme != "static") {
    unsupported("activation_scheme", q.at("activation_scheme"), Json::array({"dynamic", "static"}));
  }
  read_weight_block_size(q, d, qc);
  const std::string scale_fmt = string_or(q, d, "scale_fmt", "float");
  if (scale_fmt != "float" && scale_fmt != "ue8m0")
    unsupported("scale_fmt", q.at("scale_fmt"), Json::array({"float", "ue8m0"}));
  qc.scale_fmt = scale_fmt == "ue8m0" ? "ue8m0" : "";
  if (q.contains("dequantize") && !q.at("dequantize").is_boolean())
    bad_type(d, "dequantize", "true or false", q.at("dequantize"));
  c.not_converted = string_list(q, d, "modules_to_not_convert");
  c.scheme =
      qc.block_rows ? cat("fp8 [", qc.block_rows, ", ", qc.block_cols, "] ", scale_fmt, " scales") : "fp8 per tensor";
  c.quantization = qc;
}

// group_size: a positive integer, or absent / null (0).
int group_size_of(const Json& q, const std::string& where, std::string_view dialect) {
  if (!q.contains("group_size") || q.at("group_size").is_null()) return 0;
  const Json& v = q.at("group_size");
  if (!v.is_number_unsigned() || v.get<std::uint64_t>() > (1u << 30)) {
    bad_type(dialect, cat(where, where.empty() ? "" : ".", "group_size"), "a positive integer", v);
  }
  return v.get<int>();
}

// One of compressed-tensors' config_groups: an object whose targets are names and whose weights are float or int.
void check_compressed_tensors_group(const Json& g, const std::string& where) {
  constexpr std::string_view d = "compressed-tensors";
  if (!g.is_object()) bad_type(d, where, "an object", g);
  if (g.contains("targets")) string_list(g, d, "targets");
  if (!g.contains("weights") || g.at("weights").is_null()) return;
  const Json& w = g.at("weights");
  if (!w.is_object()) bad_type(d, where + ".weights", "an object", w);
  // At most 64: a larger count would not fit the int it is read into.
  if (w.contains("num_bits") && (!w.at("num_bits").is_number_unsigned() || w.at("num_bits").get<std::uint64_t>() > 64))
    bad_type(d, where + ".weights.num_bits", "an integer of 0 to 64", w.at("num_bits"));
  const std::string type = string_or(w, d, "type", "int");
  if (type != "float" && type != "int")
    unsupported(where + ".weights.type", w.at("type"), Json::array({"float", "int"}));
}

// compressed-tensors' QuantizationConfig: config_groups of {targets, weights, input_activations, format}.
void check_compressed_tensors(const Json& q, HfConfig& c) {
  constexpr std::string_view d = "compressed-tensors";
  if (!q.contains("config_groups")) {
    throw HfConfigError(HfErrc::missing_key, "Missing compressed-tensors quantization_config key 'config_groups'");
  }
  const Json& groups = q.at("config_groups");
  if (!groups.is_object()) bad_type(d, "config_groups", "an object of groups", groups);
  std::vector<std::string> formats;
  const std::string top = string_or(q, d, "format", "");
  if (!top.empty()) formats.push_back(top);
  for (auto it = groups.begin(); it != groups.end(); ++it) {
    const Json& g = it.value();
    check_compressed_tensors_group(g, cat("config_groups.", it.key()));
    const std::string f = string_or(g, d, "format", "");
    if (!f.empty() && std::find(formats.begin(), formats.end(), f) == formats.end()) formats.push_back(f);
    QuantGroup group{it.key(), f.empty() ? top : f, "", 0, string_list(g, d, "targets"), 0};
    if (g.contains("weights") && g.at("weights").is_object()) {
      const Json& w = g.at("weights");
      group.type = string_or(w, d, "type", "int");
      group.num_bits = w.contains("num_bits") ? w.at("num_bits").get<int>() : 0;
      group.group_size = group_size_of(w, cat("config_groups.", it.key(), ".weights"), d);
    }
    c.groups.push_back(std::move(group));
  }
  for (const std::string& f : formats) c.scheme += cat(c.scheme.empty() ? "" : ", ", f);
  c.not_converted = string_list(q, d, "ignore");
}

// ModelOpt: quant_method "modelopt" in config.json, or hf_quant_config.json's "quantization" object.
void check_modelopt(const Json& q, HfConfig& c) {
  constexpr std::string_view d = "modelopt";
  if (!q.contains("quant_algo"))
    throw HfConfigError(HfErrc::missing_key, "Missing modelopt quantization key 'quant_algo'");
  c.scheme = string_or(q, d, "quant_algo", "");
  c.not_converted = string_list(q, d, q.contains("exclude_modules") ? "exclude_modules" : "ignore");
  group_size_of(q, "", d);
  // MIXED_PRECISION: each quantized layer's own algorithm, one group per layer.
  if (q.contains("quantized_layers") && !q.at("quantized_layers").is_null()) {
    const Json& layers = q.at("quantized_layers");
    if (!layers.is_object()) bad_type(d, "quantized_layers", "an object of module names", layers);
    for (auto it = layers.begin(); it != layers.end(); ++it) {
      const std::string where = cat("quantized_layers.", it.key());
      if (!it.value().is_object()) bad_type(d, where, "an object", it.value());
      c.groups.push_back({it.key(),
                          string_or(it.value(), d, "quant_algo", ""),
                          "",
                          0,
                          {it.key()},
                          group_size_of(it.value(), where, d)});
    }
  }
}

void check_dialect(const Json& q, HfConfig& c) {
  if (!q.is_object()) throw HfConfigError(HfErrc::not_object, "HF quantization_config is not an object");
  c.quant_method = string_or(q, "HF", "quant_method", "");
  switch (c.rules) {
    case ConfigRules::transformers_fp8: check_transformers_fp8(q, c); break;
    case ConfigRules::compressed_tensors: check_compressed_tensors(q, c); break;
    case ConfigRules::modelopt: check_modelopt(q, c); break;
    case ConfigRules::gpt_oss:
      c.scheme = "mxfp4";
      c.not_converted = string_list(q, "gpt-oss", "modules_to_not_convert");
      break;
    case ConfigRules::awq:
    case ConfigRules::gptq: {
      const bool awq = c.rules == ConfigRules::awq;
      const std::string d = awq ? "AutoAWQ" : "GPTQ";
      const auto integer = [&](const char* key, int fallback) {
        if (!q.contains(key) || q.at(key).is_null()) return fallback;
        if (!q.at(key).is_number_integer() || q.at(key).get<std::int64_t>() < -1 ||
            q.at(key).get<std::int64_t>() > (1 << 30)) {
          bad_type(d, key, "an integer of -1 to 2^30", q.at(key));
        }
        return q.at(key).get<int>();
      };
      QuantGroup g{awq ? "awq" : "gptq",
                   string_or(q, d, awq ? "version" : "checkpoint_format", awq ? "gemm" : "gptq"),
                   "int",
                   integer("bits", 4),
                   {},
                   0};
      if (!awq && q.contains("is_marlin_format") && q.at("is_marlin_format") == true) g.format = "marlin";
      std::transform(g.format.begin(), g.format.end(), g.format.begin(),
                     [](unsigned char ch) { return std::tolower(ch); });
      c.scheme = cat(g.name, " ", g.format, " int", g.num_bits, " group ", integer("group_size", 128));
      c.groups.push_back(std::move(g));
      c.not_converted = string_list(q, d, "modules_to_not_convert");
      break;
    }
    case ConfigRules::minifloat:
      c.schemes = string_list(q, "minifloat", "schemes");
      for (const std::string& s : c.schemes) c.scheme += cat(c.scheme.empty() ? "" : ", ", s);
      c.not_converted = string_list(q, "minifloat", "modules_to_not_convert");
      break;
    default: break;  // unknown: nothing minifloat could check
  }
}

// The config's quantization_config: the top-level one, else one nested under text_config, where a composite
// (text and vision) model keeps its text model's (DeepSeek-V4.1-Flash; Kimi K2.5); nullptr when there is none.
const Json* quantization_of(const Json& config) {
  if (config.contains("quantization_config")) return &config.at("quantization_config");
  if (config.contains("text_config") && config.at("text_config").is_object() &&
      config.at("text_config").contains("quantization_config")) {
    return &config.at("text_config").at("quantization_config");
  }
  return nullptr;
}

ConfigRules detect(const Json& config) {
  if (quantization_of(config) == nullptr) return ConfigRules::deepseek;
  const Json& q = *quantization_of(config);
  if (q.is_object() && q.contains("quant_method") && q.at("quant_method").is_string()) {
    const std::string m = q.at("quant_method").get<std::string>();
    if (m == "compressed-tensors") return ConfigRules::compressed_tensors;
    if (m == "modelopt") return ConfigRules::modelopt;
    if (m == "mxfp4") return ConfigRules::gpt_oss;
    if (m == "minifloat") return ConfigRules::minifloat;
    if (m == "awq") return ConfigRules::awq;
    if (m == "gptq") return ConfigRules::gptq;
    if (m != "fp8") return ConfigRules::unknown;
    const bool deepseek_form =
        q.contains("fmt") || (q.contains("weight_block_size") && q.at("weight_block_size") == Json::array({32, 32}));
    if (!deepseek_form) return ConfigRules::transformers_fp8;
  }
  if (q.is_object() && q.contains("weight_block_size") && q.at("weight_block_size") == Json::array({32, 32})) {
    return ConfigRules::deepinfer;
  }
  return ConfigRules::deepseek;
}

nlohmann::ordered_json to_json(const QuantizationConfig& q) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  j["quant_method"] = q.quant_method;
  if (!q.fmt.empty()) j["fmt"] = q.fmt;
  j["activation_scheme"] = q.activation_scheme;
  j["weight_block_size"] = nlohmann::ordered_json::array({q.block_rows, q.block_cols});
  if (!q.scale_fmt.empty()) j["scale_fmt"] = q.scale_fmt;
  if (!q.expert_dtype.empty()) j["expert_dtype"] = q.expert_dtype;
  return j;
}

}  // namespace

constexpr std::array<ConfigRules, 10> kNamedRules{ConfigRules::detect,
                                                  ConfigRules::deepseek,
                                                  ConfigRules::deepinfer,
                                                  ConfigRules::transformers_fp8,
                                                  ConfigRules::compressed_tensors,
                                                  ConfigRules::modelopt,
                                                  ConfigRules::gpt_oss,
                                                  ConfigRules::minifloat,
                                                  ConfigRules::awq,
                                                  ConfigRules::gptq};

ConfigRules config_rules_named(std::string_view name) {
  if (name == "detect") return ConfigRules::detect;
  for (const ConfigRules r : kNamedRules) {
    if (to_string(r) == name) return r;
  }
  throw std::invalid_argument(cat("unknown config rules '", name,
                                  "' (known: auto, deepseek, deepinfer, "
                                  "transformers-fp8, compressed-tensors, modelopt, gpt-oss, minifloat, awq, gptq)"));
}

std::string_view to_string(ConfigRules r) {
  switch (r) {
    case ConfigRules::detect: return "auto";
    case ConfigRules::deepseek: return "deepseek";
    case ConfigRules::deepinfer: return "deepinfer";
    case ConfigRules::transformers_fp8: return "transformers-fp8";
    case ConfigRules::compressed_tensors: return "compressed-tensors";
    case ConfigRules::modelopt: return "modelopt";
    case ConfigRules::gpt_oss: return "gpt-oss";
    case ConfigRules::minifloat: return "minifloat";
    case ConfigRules::awq: return "awq";
    case ConfigRules::gptq: return "gptq";
    case ConfigRules::unknown: return "unknown";
  }
  return "?";
}

std::int64_t HfConfig::number(const std::string& key) const {
  const auto it = numbers.find(key);
  if (it == numbers.end()) throw HfConfigError(HfErrc::missing_key, cat("Missing HF config key '", key, "'"));
  return it->second;
}

std::int64_t HfConfig::number_or(const std::string& key, std::int64_t fallback) const {
  const auto it = numbers.find(key);
  return it == numbers.end() ? fallback : it->second;
}

namespace {

// ModelOpt's announcement beside config.json stands in for a missing quantization_config.
void merge_hf_quant_config(Json& config, ConfigRules rules, std::string_view hf_quant_config) {
  if (hf_quant_config.empty() || config.contains("quantization_config") ||
      (rules != ConfigRules::detect && rules != ConfigRules::modelopt)) {
    return;
  }
  const Json mo = parse_object(hf_quant_config);
  if (!mo.contains("quantization") || !mo.at("quantization").is_object()) {
    throw HfConfigError(HfErrc::missing_key, "hf_quant_config.json has no 'quantization' object");
  }
  config["quantization_config"] = mo.at("quantization");
  config["quantization_config"]["quant_method"] = "modelopt";
}

// The model's own keys: integers and booleans (as numbers), lists of strings, model_type, torch_dtype or dtype.
void read_model_keys(const Json& config, HfConfig& c) {
  for (auto it = config.begin(); it != config.end(); ++it) {
    if (it.value().is_number_integer()) c.numbers[it.key()] = it.value().get<std::int64_t>();
    if (it.value().is_boolean()) c.numbers[it.key()] = it.value().get<bool>() ? 1 : 0;
    if (it.value().is_array() &&
        std::all_of(it.value().begin(), it.value().end(), [](const Json& v) { return v.is_string(); })) {
      c.string_lists[it.key()] = it.value().get<std::vector<std::string>>();
    }
  }
  if (config.contains("model_type") && config.at("model_type").is_string())
    c.model_type = config.at("model_type").get<std::string>();
  // The model's dtype: top level, else the text model's of a composite config (text_config).
  const bool nested = config.contains("text_config") && config.at("text_config").is_object();
  for (const Json* where : {&config, nested ? &config.at("text_config") : nullptr}) {
    for (const char* key : {"torch_dtype", "dtype"}) {
      if (where == nullptr || !c.dtype.empty() || !where->contains(key) || where->at(key).is_null()) continue;
      if (!where->at(key).is_string()) throw HfConfigError(HfErrc::bad_type, cat("HF ", key, " is not a string"));
      c.dtype = where->at(key).get<std::string>();
    }
  }
}

// quantization_config under the rules chosen: DeepSeek's (and DeepInfer's, which requires it) or a dialect's.
void read_quantization(const Json& config, HfConfig& c) {
  const Json* q = quantization_of(config);
  if (q == nullptr) {
    if (c.rules == ConfigRules::deepinfer) {
      throw HfConfigError(HfErrc::missing_key,
                          "Missing HF quantization_config (deepinfer rules need FP8 with FP4 experts)");
    }
    return;
  }
  c.quantization_in_text_config = !config.contains("quantization_config");
  if (c.rules != ConfigRules::deepseek && c.rules != ConfigRules::deepinfer) {
    check_dialect(*q, c);
    return;
  }
  c.quantization = check_quantization(*q, c.rules);
  c.not_converted = string_list(*q, "DeepSeek", "modules_to_not_convert");
  c.quant_method = c.quantization->quant_method;
  c.scheme = cat("fp8 [", c.quantization->block_rows, ", ", c.quantization->block_cols, "]",
                 c.quantization->expert_dtype == "fp4" ? ", fp4 experts" : "");
}

void set_flags(HfConfig& c) {
  if (!c.quantization) return;
  const QuantizationConfig& q = *c.quantization;  // deepseek, deepinfer, transformers-fp8
  const bool fp8 = q.quant_method == "fp8";
  c.flags.fp8_attn = c.flags.fp8_mlp = fp8;
  c.flags.mxfp8 = fp8 && q.scale_fmt == "ue8m0" && q.block_cols == 32;
  c.flags.mxfp4 = q.expert_dtype == "fp4";
}

}  // namespace

HfConfig parse_hf_config(std::string_view text, ConfigRules rules, std::string_view hf_quant_config) {
  Json config = parse_object(text);
  merge_hf_quant_config(config, rules, hf_quant_config);
  HfConfig c;
  c.rules = rules == ConfigRules::detect ? detect(config) : rules;
  read_model_keys(config, c);
  read_quantization(config, c);
  if (c.rules == ConfigRules::deepinfer && c.dtype != "bfloat16") {
    // DeepInfer's config.py:58-59: the model dtype must be BF16.
    if (c.dtype.empty()) throw HfConfigError(HfErrc::missing_key, "Missing HF torch_dtype (expected 'bfloat16')");
    unsupported("torch_dtype", c.dtype, "bfloat16");
  }
  set_flags(c);
  return c;
}

HfConfig read_hf_config(const std::filesystem::path& given, ConfigRules rules) {
  // hf://ORG/REPO names the repository: its config.json.
  std::filesystem::path path = resolve_hf(given.string());
  if (given.string().starts_with("hf://") && path.extension() != ".json") path /= "config.json";
  // Local or over HTTP (src/io/byte_source.h); a config that is not there is the reader's error, as before.
  const auto small = [](const std::filesystem::path& p, std::string_view what) {
    try {
      return detail::read_small_file(p, kMaxConfigBytes, what);
    } catch (const IoError& e) {
      if (e.code != IoErrc::header_too_large) throw;
      throw HfConfigError(HfErrc::invalid_json, e.what());
    }
  };
  const std::optional<std::vector<std::byte>> config = small(path, "config");
  if (!config) {
    throw IoError(IoErrc::open_failed, path,
                  detail::is_url(path) ? "HTTP 404: no such file" : "no such file (or not a regular file)");
  }
  const std::vector<std::byte>& bytes = *config;
  const std::vector<std::byte> mo =
      small(path.parent_path() / "hf_quant_config.json", "hf_quant_config").value_or(std::vector<std::byte>{});
  try {
    return parse_hf_config(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()), rules,
                           std::string_view(reinterpret_cast<const char*>(mo.data()), mo.size()));
  } catch (const HfConfigError& e) {
    throw HfConfigError(e.code, cat(path.string(), ": ", e.what()));
  }
}

// A quantization_config nested under text_config removed: what is written sets (or removes) the top-level one.
void drop_nested_quantization(nlohmann::ordered_json& config) {
  if (config.contains("text_config") && config["text_config"].is_object())
    config["text_config"].erase("quantization_config");
}

std::string hf_config_unnested(std::string_view text) {
  parse_object(text);
  nlohmann::ordered_json config = nlohmann::ordered_json::parse(text);
  drop_nested_quantization(config);
  return config.dump(2) + "\n";
}

std::string hf_config_with_quantization(std::string_view text, const std::optional<QuantizationConfig>& q) {
  parse_object(text);  // the checks and their errors
  // Ordered, so that the rewritten file keeps the original's key order.
  nlohmann::ordered_json config = nlohmann::ordered_json::parse(text);
  drop_nested_quantization(config);
  if (q) {
    config["quantization_config"] = to_json(*q);
  } else {
    config.erase("quantization_config");
  }
  return config.dump(2) + "\n";
}

std::string hf_config_with_minifloat_schemes(std::string_view text, const std::vector<std::string>& schemes) {
  parse_object(text);
  nlohmann::ordered_json config = nlohmann::ordered_json::parse(text);
  drop_nested_quantization(config);
  nlohmann::ordered_json q = nlohmann::ordered_json::object();
  q["quant_method"] = "minifloat";
  q["schemes"] = schemes;
  config["quantization_config"] = std::move(q);
  return config.dump(2) + "\n";
}

std::string python_repr_of_json(std::string_view json) {
  try {
    return repr(Json::parse(json));
  } catch (const Json::exception& e) {
    throw HfConfigError(HfErrc::invalid_json, cat("not valid JSON: ", e.what()));
  }
}

}  // namespace mf::io
