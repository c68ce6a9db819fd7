// config.json: quantization_config checked by DeepSeek's or DeepInfer's rules, and the flags that follow.
#include "minifloat/hf_config.h"

#include <algorithm>
#include <array>
#include <nlohmann/json.hpp>
#include <set>
#include <utility>
#include <vector>

#include "file.h"

namespace mf::io {
namespace {

using Json = nlohmann::json;
using detail::cat;
constexpr std::uint64_t kMaxConfigBytes = 16 << 20;  // real configs are a few KB

constexpr std::array<std::string_view, 6> kKnownKeys{"quant_method", "fmt",       "activation_scheme",
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

// The required keys in the order DeepInfer checks them (seed 000), then the optional ones with their one value.
struct Rule {
  std::string_view key;
  Json expected;
  bool required;
};

std::vector<Rule> rules_for(ConfigRules r) {
  if (r == ConfigRules::deepinfer) {
    return {{"quant_method", "fp8", true},     {"expert_dtype", "fp4", true},
            {"activation_scheme", "dynamic", true}, {"weight_block_size", Json::array({32, 32}), true},
            {"scale_fmt", "ue8m0", true},      {"fmt", "e4m3", false}};
  }
  return {{"quant_method", "fp8", true},         {"fmt", "e4m3", true},
          {"activation_scheme", "dynamic", true}, {"weight_block_size", Json::array({128, 128}), true},
          {"scale_fmt", "ue8m0", false},         {"expert_dtype", "fp4", false}};
}

QuantizationConfig check_quantization(const Json& q, ConfigRules rules) {
  if (!q.is_object()) throw HfConfigError(HfErrc::not_object, "HF quantization_config is not an object");
  for (const Rule& rule : rules_for(rules)) {
    const std::string key(rule.key);
    if (!q.contains(key)) {
      if (!rule.required) continue;
      throw HfConfigError(HfErrc::missing_key,
                          cat("Missing HF quantization_config key '", key, "' (", to_string(rules),
                              " rules expect ", repr(rule.expected), ")"));
    }
    if (q.at(key) != rule.expected) unsupported(key, q.at(key), rule.expected);
  }
  for (auto it = q.begin(); it != q.end(); ++it) {
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

ConfigRules detect(const Json& config) {
  if (!config.contains("quantization_config")) return ConfigRules::deepseek;
  const Json& q = config.at("quantization_config");
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

ConfigRules config_rules_named(std::string_view name) {
  if (name == "auto" || name == "detect") return ConfigRules::detect;
  if (name == "deepseek") return ConfigRules::deepseek;
  if (name == "deepinfer") return ConfigRules::deepinfer;
  throw std::invalid_argument(cat("unknown config rules '", name, "' (known: auto, deepseek, deepinfer)"));
}

std::string_view to_string(ConfigRules r) {
  switch (r) {
    case ConfigRules::detect: return "auto";
    case ConfigRules::deepseek: return "deepseek";
    case ConfigRules::deepinfer: return "deepinfer";
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

HfConfig parse_hf_config(std::string_view text, ConfigRules rules) {
  const Json config = parse_object(text);
  HfConfig c;
  c.rules = rules == ConfigRules::detect ? detect(config) : rules;
  for (auto it = config.begin(); it != config.end(); ++it) {
    if (it.value().is_number_integer()) c.numbers[it.key()] = it.value().get<std::int64_t>();
    if (it.value().is_boolean()) c.numbers[it.key()] = it.value().get<bool>() ? 1 : 0;
  }
  if (config.contains("model_type") && config.at("model_type").is_string()) c.model_type = config.at("model_type").get<std::string>();
  for (const char* key : {"torch_dtype", "dtype"}) {
    if (c.dtype.empty() && config.contains(key)) {
      if (!config.at(key).is_string()) throw HfConfigError(HfErrc::bad_type, cat("HF ", key, " is not a string"));
      c.dtype = config.at(key).get<std::string>();
    }
  }
  if (!config.contains("quantization_config")) {
    if (c.rules == ConfigRules::deepinfer) {
      throw HfConfigError(HfErrc::missing_key, "Missing HF quantization_config (deepinfer rules need FP8 with FP4 experts)");
    }
  } else {
    c.quantization = check_quantization(config.at("quantization_config"), c.rules);
  }
  if (c.rules == ConfigRules::deepinfer && c.dtype != "bfloat16") {
    // DeepInfer's config.py:58-59: the model dtype must be BF16.
    if (c.dtype.empty()) throw HfConfigError(HfErrc::missing_key, "Missing HF torch_dtype (expected 'bfloat16')");
    unsupported("torch_dtype", c.dtype, "bfloat16");
  }
  if (c.quantization) {
    const QuantizationConfig& q = *c.quantization;
    const bool fp8 = q.quant_method == "fp8";
    c.flags.fp8_attn = c.flags.fp8_mlp = fp8;
    c.flags.mxfp8 = fp8 && q.scale_fmt == "ue8m0" && q.block_cols == 32;
    c.flags.mxfp4 = q.expert_dtype == "fp4";
  }
  return c;
}

HfConfig read_hf_config(const std::filesystem::path& path, ConfigRules rules) {
  const detail::InputFile in(path);
  if (in.size() > kMaxConfigBytes) {
    throw HfConfigError(HfErrc::invalid_json, cat(path.string(), ": config of ", in.size(), " bytes is too large"));
  }
  const std::vector<std::byte> bytes = in.read(0, in.size(), "config");
  try {
    return parse_hf_config(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()), rules);
  } catch (const HfConfigError& e) {
    throw HfConfigError(e.code, cat(path.string(), ": ", e.what()));
  }
}

std::string hf_config_with_quantization(std::string_view text, const std::optional<QuantizationConfig>& q) {
  parse_object(text);  // the checks and their errors
  // Ordered, so that the rewritten file keeps the original's key order.
  nlohmann::ordered_json config = nlohmann::ordered_json::parse(text);
  if (q) {
    config["quantization_config"] = to_json(*q);
  } else {
    config.erase("quantization_config");
  }
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
