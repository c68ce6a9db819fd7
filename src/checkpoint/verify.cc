// verify: the index against its shards, config.json by its rules, every quantized pair's scales and codes, and
// DeepInfer's FP4-QAT condition (docs/spec.md#fp4-qat) on FP8 routed experts.
#include <algorithm>
#include <bit>
#include <map>
#include <set>
#include <cctype>
#include <cmath>
#include <memory>
#include <optional>
#include <regex>

#include "dialect_pairs.h"
#include "../io/file.h"
#include "minifloat/checkpoint_commands.h"
#include "minifloat/checkpoint_tensors.h"
#include "minifloat/codec.h"
#include "minifloat/recipe.h"
#include "minifloat/remote.h"
#include "parallel.h"
#include "quantization_rule.h"

namespace mf::io {
namespace {

using detail::cat;

bool nan_code(const Format& f, std::uint32_t code) { return std::isnan(decode(f, code)); }

// Scales: finite, and positive over any nonzero code. A zero scale is what an all-zero block quantizes to (NVFP4's
// e4m3 scale of a pruned row, as minifloat's quantizer writes it), so it passes where its block's codes are all zero;
// over a nonzero code it would lose that value, and is an error, as are negative, NaN and infinite scales.
void check_scales(const QuantizedTensor& q, const std::string& name, const std::string& scale_name) {
  const Format& f = *q.scheme.scale_format;
  const std::size_t width = f == mf::f32 ? 4 : 1;
  std::set<std::size_t> zero;
  const auto code_at = [&](std::size_t i) {
    std::uint32_t code = 0;
    for (std::size_t b = 0; b < width; ++b) code |= static_cast<std::uint32_t>(q.scales[i * width + b]) << (8 * b);
    return code;
  };
  const auto refuse = [&](std::size_t i, const char* what) {
    throw VerifyError(
        name, cat("tensor '", scale_name, "': scale ", i, " is ", what, " (", f.name, " code ", code_at(i), ")"));
  };
  for (std::size_t i = 0; i < q.scales.size() / width; ++i) {
    const float v = decode(f, code_at(i));
    if (v == 0) {
      zero.insert(i);
    } else if (!std::isfinite(v) || !(v > 0)) {
      refuse(i, std::isnan(v) ? "NaN" : std::isinf(v) ? "infinite" : "not positive");
    }
  }
  if (q.scheme.tensor_scale && !(std::isfinite(q.tensor_scale) && q.tensor_scale > 0)) {
    throw VerifyError(name, cat("tensor '", name, "': the tensor scale is not finite and positive"));
  }
  if (zero.empty() || q.shape.size() != 2) {
    if (!zero.empty()) refuse(*zero.begin(), "not positive");
    return;
  }
  // The codes' own values (every scale 1): a zero scale over a nonzero one is refused, naming that scale.
  QuantizedTensor unit = q;
  const std::uint32_t one = encode(f, 1.0);
  for (std::size_t i = 0; i < q.scales.size() / width; ++i) {
    for (std::size_t b = 0; b < width; ++b) unit.scales[i * width + b] = static_cast<std::uint8_t>(one >> (8 * b));
  }
  unit.tensor_scale = 1;
  std::vector<float> u(static_cast<std::size_t>(q.count()));
  dequantize(unit, u.data(), 1);
  const auto cols = static_cast<std::uint64_t>(q.shape[1]);
  const auto br = static_cast<std::uint64_t>(q.scheme.block_rows), bc = static_cast<std::uint64_t>(q.scheme.block_cols);
  const auto scale_cols = static_cast<std::uint64_t>(q.scale_shape[1]);
  for (std::size_t k = 0; k < u.size(); ++k) {
    if (u[k] == 0) continue;
    const std::size_t s = (k / cols / br) * scale_cols + (k % cols) / bc;
    if (zero.contains(s)) refuse(s, "not positive");
  }
}

void check_codes(const QuantizedTensor& q, const std::string& name) {
  const Format& f = *q.scheme.element.format;
  if (f.bits() != 8) return;  // e2m1 and the 6-bit formats have no NaN
  for (std::size_t i = 0; i < q.codes.size(); ++i) {
    if (nan_code(f, q.codes[i])) throw VerifyError(name, cat("tensor '", name, "': element ", i, " is NaN"));
  }
}

// The forms with no QuantizedTensor (checkpoint_tensors.h): the same checks on decoded scales and values (a zero
// scale over a nonzero code: an element whose value is 0 where its code's own value is not).
void check_dialect_pair(const SafetensorsFile& file, const QuantizedPair& p) {
  const std::vector<float> scales = detail::pair_scale_values(file, p);
  bool zero = false;
  for (std::size_t i = 0; i < scales.size(); ++i) {
    zero = zero || scales[i] == 0;
    if (!std::isfinite(scales[i]) || scales[i] < 0) {
      const char* what = std::isnan(scales[i]) ? "NaN" : std::isinf(scales[i]) ? "infinite" : "not positive";
      throw VerifyError(p.weight, cat("tensor '", p.scale, "': scale ", i, " is ", what));
    }
  }
  const float second = detail::pair_second_scale(file, p);
  if (!std::isfinite(second) || !(second > 0)) {
    throw VerifyError(p.weight,
                      cat("tensor '", p.tensor_scale, "': the second-level scale is not finite and positive"));
  }
  const std::vector<float> values = dequantize_pair(file, p);
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (std::isnan(values[i])) throw VerifyError(p.weight, cat("tensor '", p.weight, "': element ", i, " is NaN"));
  }
  if (!zero) return;
  const std::vector<float> unit = detail::dequantize_dialect_pair(file, p, true);
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (values[i] == 0 && unit[i] != 0) {
      throw VerifyError(p.weight, cat("tensor '", p.scale, "': the scale of element ", i, " of '", p.weight,
                                      "' is zero, but its code is not: its value is lost"));
    }
  }
}

void check_fp4_qat(const SafetensorsFile& file, const SafetensorsTensor& t) {
  const std::span<const std::byte> bytes = file.bytes(t);
  const std::uint64_t cols = t.shape.empty() ? 1 : t.shape.back();
  const auto* codes = reinterpret_cast<const std::uint8_t*>(bytes.data());
  for (std::uint64_t row_start = 0; row_start < bytes.size(); row_start += cols) {
    for (std::uint64_t c = 0; c < cols; c += 32) {
      const std::uint64_t n = std::min<std::uint64_t>(32, cols - c);
      if (!fp4_qat_block({codes + row_start + c, n})) {
        // DeepInfer's assertion text (mlp.py:60), then where.
        throw VerifyError(t.name, cat("Only support FP4-QAT checkpoint: tensor '", t.name, "' block at element ",
                                      row_start + c, " is not e2m1 values times one power of two"));
      }
    }
  }
}

}  // namespace

bool fp4_qat_block(std::span<const std::uint8_t> codes) {
  // Every value v must be e * 2^k with e in the e2m1 grid and one k for the block. Fix k from the largest value:
  // it must be 0.5, 1, 1.5, 2, 3, 4 or 6 times 2^k; try each, as small grids can fit it more than one way.
  float amax = 0;
  for (const std::uint8_t c : codes) {
    const float v = decode(e4m3, c);
    if (std::isnan(v)) return false;
    amax = std::max(amax, std::fabs(v));
  }
  if (amax == 0) return true;
  for (const float top : {0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f}) {
    const float scale = amax / top;
    int exp = 0;
    if (std::frexp(scale, &exp) != 0.5f) continue;  // not a power of two
    bool ok = true;
    for (const std::uint8_t c : codes) {
      const float e = decode(e4m3, c) / scale;  // exact: dividing by a power of two
      if (decode(e2m1, encode(e2m1, e)) != e) {
        ok = false;
        break;
      }
    }
    if (ok) return true;
  }
  return false;
}

// compressed-tensors' "re:" pattern against a module name as Python's re.match does it: from the start, not
// necessarily to the end. A pattern std::regex (ECMAScript) cannot take is a named error.
bool regex_matches(const std::string& entry, const std::string& module) {
  try {
    const std::regex re(entry.substr(3));
    return std::regex_search(module, re, std::regex_constants::match_continuous);
  } catch (const std::regex_error& e) {
    throw VerifyError(
        "", cat("config.json pattern '", entry, "' is not a regular expression minifloat can match (", e.what(), ")"));
  }
}

// A config's list of modules left unquantized (ignore, modules_to_not_convert, exclude_modules) names `module` as a
// glob (gpt-oss, ModelOpt), a prefix of dotted components, or a dotted part of it (transformers matches by
// substring); compressed-tensors' "re:" entries are regular expressions.
bool not_converted(const std::vector<std::string>& list, const std::string& module) {
  for (const std::string& entry : list) {
    if (entry.starts_with("re:")) {
      if (regex_matches(entry, module)) return true;
      continue;
    }
    if (glob_match(entry, module) || glob_match(entry + ".*", module)) return true;
    const std::string dotted = "." + module + ".";
    if (dotted.find("." + entry + ".") != std::string::npos) return true;
  }
  return false;
}

// The config against the tensors: no pair in a module the config leaves unquantized, and a quantized config holds
// at least one pair.
void check_config_against_pairs(const HfConfig& config, const std::string& weight, const std::string& module) {
  if (not_converted(config.not_converted, module)) {
    throw VerifyError(weight, cat("config.json (", to_string(config.rules), " rules) leaves module '", module,
                                  "' unquantized, but its weight '", weight, "' is quantized"));
  }
}

std::string module_of(const QuantizedPair& p) {
  const std::string& n = p.output;
  if (n.ends_with(".weight")) return n.substr(0, n.size() - 7);
  const std::size_t dot = n.rfind('.');
  return dot == std::string::npos ? n : n.substr(0, dot);
}

// A module's name with every run of digits as '#': layers.3.mlp.down_proj and layers.0.mlp.down_proj are siblings.
std::string sibling_pattern(const std::string& module) {
  std::string out;
  for (std::size_t i = 0; i < module.size(); ++i) {
    if (std::isdigit(static_cast<unsigned char>(module[i]))) {
      out += '#';
      while (i + 1 < module.size() && std::isdigit(static_cast<unsigned char>(module[i + 1]))) ++i;
    } else {
      out += module[i];
    }
  }
  return out;
}

namespace {

// One shard's jobs: one per pair, then one per FP8 routed expert to check against FP4 QAT (none when read
// headers-only: those read the tensors' values).
struct Shard {
  SafetensorsFile file;
  std::vector<QuantizedPair> pairs;
  std::vector<const SafetensorsTensor*> qat;
  std::size_t jobs() const { return file.has_data() ? pairs.size() + qat.size() : 0; }
};

// The config's other direction: a float 2-D weight that the config does not leave unquantized, in a module whose
// siblings (the same name in another layer or expert) are quantized.
struct ConfigCheck {
  std::set<std::string> quantized_siblings;
  std::set<std::string> schemes;                                   // every pair's
  std::vector<std::pair<std::string, std::string>> float_weights;  // tensor, module
  std::set<std::string> quantized_modules;                         // every pair's module
  std::map<std::string, QuantizedPair> modelopt_pairs;             // by module, under ModelOpt's rules
};

// A compressed-tensors target (compressed-tensors' match_name): "re:" a regex, else a module's exact name, or a
// class name ("Linear", "Embedding": no dot, upper-case first), which names alone cannot check: nullopt.
std::optional<bool> target_matches(const std::string& target, const std::string& module) {
  if (target.starts_with("re:")) return regex_matches(target, module);
  if (target.find('.') == std::string::npos && !target.empty() && std::isupper(static_cast<unsigned char>(target[0])))
    return std::nullopt;
  return target == module;
}

// Whether ModelOpt's quant_algo `algo` stores its weights as pair `p` (quant_utils.py to_quantized_weight and
// unified_export_hf.py: NVFP4's variants share its tensors, MXFP4's theirs).
bool modelopt_holds(std::string algo, const QuantizedPair& p) {
  std::transform(algo.begin(), algo.end(), algo.begin(), [](unsigned char c) { return std::toupper(c); });
  const auto named = [&](const char* prefix) { return p.scheme_name.starts_with(prefix); };
  if (algo == "NVFP4" || algo == "W4A16_NVFP4" || algo == "W4A8_NVFP4_FP8" || algo == "NVFP4_AWQ")
    return p.form == PairForm::nvfp4;
  if (algo == "MXFP4" || algo == "W4A8_MXFP4_FP8") return p.form == PairForm::packed;
  // FP8 with F32 scales per tensor, row or 128x128 block (a small tensor's one block reads as one scale), MXFP8 with
  // E8M0 ones (a row of 32 or fewer columns reads as one scale per row).
  if (algo == "FP8" || algo == "FP8_PER_CHANNEL_PER_TOKEN" || algo == "FP8_PB_WO")
    return p.form == PairForm::scaled && named("e4m3-") && p.scheme_name.ends_with("-f32");
  if (algo == "MXFP8") return p.form == PairForm::scaled && p.scheme_name.ends_with("-ue8m0");
  if (algo == "W4A16_AWQ") return p.packing == QuantizedPair::Packing::modelopt_int4;
  if (algo == "W8A16" || algo == "W8A8_SQ_PER_CHANNEL") return named("int8-channel-");
  return false;
}

// ModelOpt's declaration against the pairs: each pair in the form its module's quant_algo stores (the one
// quant_algo, or its quantized_layers entry under MIXED_PRECISION, where every pair's module must have one), and
// every quantized_layers entry with a pair.
void check_modelopt_layers(const HfConfig& config, const ConfigCheck& cc) {
  if (config.rules != ConfigRules::modelopt) return;
  std::map<std::string, std::string> layers;  // module -> quant_algo
  for (const QuantGroup& g : config.groups) layers[g.name] = g.format;
  const bool mixed = !layers.empty();
  for (const auto& [module, pair] : cc.modelopt_pairs) {
    const auto it = layers.find(module);
    if (mixed && it == layers.end()) {
      throw VerifyError(pair.weight, cat("config.json (modelopt rules) is MIXED_PRECISION, but module '", module,
                                         "' has a quantized weight and no quantized_layers entry"));
    }
    const std::string& algo = mixed ? it->second : config.scheme;
    if (!modelopt_holds(algo, pair)) {
      throw VerifyError(pair.weight, cat("config.json (modelopt rules) gives module '", module, "' quant_algo '", algo,
                                         "', but its weight '", pair.weight, "' holds ", pair.scheme_name, " (",
                                         to_string(pair.form), ")"));
    }
  }
  for (const auto& [module, algo] : layers) {
    if (!cc.modelopt_pairs.contains(module)) {
      throw VerifyError("", cat("config.json (modelopt rules) lists quantized layer '", module, "' (", algo,
                                "), but no quantized weight of that module is in the checkpoint"));
    }
  }
}

// compressed-tensors' config_groups against the quantized modules: a group that quantizes weights must target at
// least one of them, and each of them must be targeted by a group (where the targets are names or regexes; a class
// name like "Linear" may target any), and not be ignored (check_config_against_pairs).
void check_config_groups(const HfConfig& config, const ConfigCheck& cc) {
  if (config.rules != ConfigRules::compressed_tensors) return;
  bool every_group_named = true;
  std::set<std::string> targeted;
  for (const QuantGroup& g : config.groups) {
    if (g.type.empty()) continue;  // activations or KV cache only: no weights to find
    bool any = false, named = true;
    for (const std::string& m : cc.quantized_modules) {
      for (const std::string& t : g.targets) {
        const std::optional<bool> hit = target_matches(t, m);
        if (!hit) named = false;
        if (hit.value_or(true)) {
          any = true;
          targeted.insert(m);
        }
      }
    }
    every_group_named = every_group_named && named;
    if (!any && !cc.quantized_modules.empty()) {
      std::string list;
      for (const std::string& t : g.targets) list += cat(list.empty() ? "" : ", ", "'", t, "'");
      throw VerifyError("", cat("config.json (compressed-tensors rules) config group '", g.name, "' (", g.format,
                                ") targets [", list, "], which match none of the ", cc.quantized_modules.size(),
                                " quantized modules (first: '", *cc.quantized_modules.begin(), "')"));
    }
  }
  if (!every_group_named) return;
  for (const std::string& m : cc.quantized_modules) {
    if (!targeted.contains(m)) {
      throw VerifyError("", cat("config.json (compressed-tensors rules) quantizes module '", m,
                                "', but none of its config groups targets it"));
    }
  }
}

// An FP8 pair against the config's weight_block_size (DeepSeek's, DeepInfer's and transformers' FP8 rules): its scale
// grid must be that block's, [ceil(R/Br), ceil(C/Bc)], or one scale for the tensor where the config says null. A V4
// loader that assumed 128x128 on V4.1's 32x32 tiles gave wrong weights with no error (checkpoints-in-the-wild.md,
// 1.6), so a disagreement is named, with the tensor. FP4 experts (e2m1, one scale per 32 along a row) have their own
// block; so do DeepSeek-V4.1's engram tables, FP8 with one scale per 32 along a row ("a different block than the
// 32x32 every other FP8 weight uses", ibid. 1.2).
void check_block_grid(const HfConfig& config, const SafetensorsFile& file, const QuantizedPair& p) {
  if (!config.quantization || (p.form != PairForm::deepseek && p.form != PairForm::deepseek_v4)) return;
  const Format* element = p.scheme.element.format;
  if (element == nullptr || element->bits() != 8) return;
  if (p.block_rows == 1 && p.block_cols == 32 && p.weight.find(".engram.") != std::string::npos) return;
  const QuantizationConfig& q = *config.quantization;
  const SafetensorsTensor* s = file.find(p.scale);
  const auto rows = static_cast<std::uint64_t>(p.shape[0]), cols = static_cast<std::uint64_t>(p.shape[1]);
  const std::string grid =
      s->shape.size() == 2 ? cat("[", s->shape[0], ", ", s->shape[1], "]") : cat("[", s->shape.empty() ? "" : "1", "]");
  const bool per_tensor = p.scheme_name.find("-tensor-") != std::string::npos;
  const std::string what = per_tensor ? std::string("one scale for the tensor")
                                      : cat("the grid of ", p.block_rows, "x", p.block_cols, " blocks");
  if (q.block_rows == 0) {  // transformers' FineGrainedFP8 with weight_block_size null: one scale per tensor
    if (per_tensor) return;
    throw VerifyError(p.weight,
                      cat("config.json (", to_string(config.rules),
                          " rules) gives weight_block_size null "
                          "(one scale per tensor), but tensor '",
                          p.weight, "' [", rows, ", ", cols, "] has scale '", p.scale, "' ", grid, ": ", what));
  }
  const auto br = static_cast<std::uint64_t>(q.block_rows), bc = static_cast<std::uint64_t>(q.block_cols);
  if (!per_tensor && s->shape.size() == 2 && s->shape[0] == (rows + br - 1) / br &&
      s->shape[1] == (cols + bc - 1) / bc) {
    return;
  }
  throw VerifyError(
      p.weight, cat("config.json (", to_string(config.rules), " rules",
                    config.quantization_in_text_config ? ", read from text_config" : "", ") gives weight_block_size [",
                    q.block_rows, ", ", q.block_cols, "], but tensor '", p.weight, "' [", rows, ", ", cols,
                    "] has scale '", p.scale, "' ", grid, ": ", what, ", not the [", (rows + br - 1) / br, ", ",
                    (cols + bc - 1) / bc, "] of ", q.block_rows, "x", q.block_cols, " blocks"));
}

// Shard `file`'s pairs against the config, and its float 2-D weights noted for ConfigCheck.
void check_against_config(const HfConfig& config, const Shard& sh, ConfigCheck& cc) {
  for (const QuantizedPair& p : sh.pairs) {
    check_config_against_pairs(config, p.weight, module_of(p));
    check_block_grid(config, sh.file, p);
    cc.quantized_siblings.insert(sibling_pattern(module_of(p)));
    cc.quantized_modules.insert(module_of(p));
    if (config.rules == ConfigRules::modelopt) cc.modelopt_pairs.emplace(module_of(p), p);
    cc.schemes.insert(p.scheme_name);
  }
  for (const SafetensorsTensor& t : sh.file.tensors()) {
    const bool floating = t.dtype == DType::BF16 || t.dtype == DType::F16 || t.dtype == DType::F32;
    if (floating && t.shape.size() == 2 && t.name.ends_with(".weight")) {
      cc.float_weights.emplace_back(t.name, t.name.substr(0, t.name.size() - 7));
    }
  }
}

std::shared_ptr<Shard> open_shard(const Checkpoint& c, std::size_t s, bool qat, const detail::QuantizationRule& rule,
                                  bool headers_only, int packed_bits) {
  auto sh = std::make_shared<Shard>();
  sh->file = read_shard(c.shard_path(s), headers_only);
  detail::borrow_partners(sh->file, c, s);  // a scale the index puts in another shard: paired here
  sh->pairs = find_pairs(sh->file, packed_bits);
  detail::read_as_declared(sh->pairs, rule.declaration());
  const detail::Lent lent = detail::lent_parts(sh->file, c, s, packed_bits);  // read in their weight's shard
  rule.shard(sh->file, sh->pairs, &lent);  // every tensor understood, and the declaration read
  for (const SafetensorsTensor& t : sh->file.tensors()) {
    if (qat && t.dtype == DType::F8_E4M3 && glob_match("*.experts.*", t.name) && !glob_match("*_scale*", t.name)) {
      sh->qat.push_back(&t);
    }
  }
  return sh;
}

// Job j of a shard: pair j's scales and codes, or (past the pairs) an FP8 expert's values on FP4's grid.
void verify_job(Shard& s, std::size_t j) {
  if (j >= s.pairs.size()) {
    const SafetensorsTensor& t = *s.qat[j - s.pairs.size()];
    check_fp4_qat(s.file, t);
    s.file.release(t);
    return;
  }
  const QuantizedPair& p = s.pairs[j];
  if (p.form == PairForm::deepseek || p.form == PairForm::deepseek_v4 || p.form == PairForm::nvfp4) {
    const QuantizedTensor q = read_pair(s.file, p);
    check_scales(q, p.weight, p.scale);
    check_codes(q, p.weight);
  } else {
    check_dialect_pair(s.file, p);
  }
  if (const SafetensorsTensor* w = s.file.find(p.weight)) s.file.release(*w);
}

// After every shard: a float weight among quantized siblings must be one the config leaves unquantized, and a
// config that announces quantization must have a quantized tensor.
void check_config_whole(const VerifyReport& r, const ConfigCheck& cc) {
  for (const auto& [tensor, module] : cc.float_weights) {
    if (cc.quantized_siblings.contains(sibling_pattern(module)) && !not_converted(r.config->not_converted, module)) {
      throw VerifyError(tensor,
                        cat("config.json (", to_string(r.config->rules), " rules) quantizes the modules like '", module,
                            "', and does not leave it unquantized, but its weight '", tensor, "' is not quantized"));
    }
  }
  if (r.config) check_config_groups(*r.config, cc);
  if (r.config) check_modelopt_layers(*r.config, cc);
  if (r.config && r.config->rules == ConfigRules::minifloat) {
    // minifloat's own declaration lists the schemes its pairs hold: no more, no fewer.
    const std::set<std::string> declared(r.config->schemes.begin(), r.config->schemes.end());
    for (const std::string& s : cc.schemes) {
      if (!declared.contains(s)) {
        throw VerifyError("", cat("config.json (minifloat rules) declares the schemes [", r.config->scheme,
                                  "], but a pair holds ", s));
      }
    }
    for (const std::string& s : declared) {
      if (!cc.schemes.contains(s)) {
        throw VerifyError("", cat("config.json (minifloat rules) declares the scheme ", s, ", but no pair holds it"));
      }
    }
  }
  if (r.config && r.pairs == 0 && !r.config->quant_method.empty() && r.config->rules != ConfigRules::unknown) {
    throw VerifyError("", cat("config.json announces ", to_string(r.config->rules), " quantization (", r.config->scheme,
                              "), but no tensor is quantized"));
  }
}

}  // namespace

VerifyReport verify_checkpoint(const std::filesystem::path& path, const VerifyOptions& options) {
  if (is_remote(path.string()) && !options.headers_only) {
    throw std::invalid_argument(
        "verify: over HTTP only headers are read: verify --headers-only, or download the checkpoint first");
  }
  VerifyReport r;
  const Checkpoint c = open_checkpoint(path);
  r.summary = check_checkpoint(c, options.headers_only);
  r.headers_only = options.headers_only;
  if (const auto config = c.config_path()) r.config = read_hf_config(*config, options.rules);
  const bool qat = options.fp4_qat || (r.config && r.config->flags.mxfp4);
  const detail::QuantizationRule rule(detail::declaration_of(r.config), c.index_path.value_or(c.directory), {},
                                      &c.index.weight_map);
  // One job per pair, then one per FP8 routed expert, shard after shard: the pool hands them out in that order and
  // reports the first failure in it, so the tensor named is the one a sequential pass would have named.
  std::shared_ptr<Shard> current;
  std::size_t shard = 0, job = 0;
  ConfigCheck cc;
  const int packed_bits = options.headers_only ? detail::declared_packed_bits(r.config) : 0;
  detail::run_in_order(detail::worker_count(options.threads), [&]() -> detail::Job {
    while (!current || job == current->jobs()) {
      if (shard == c.shards.size()) return {};
      current = open_shard(c, shard++, qat, rule, options.headers_only, packed_bits);
      if (r.config) check_against_config(*r.config, *current, cc);
      r.pairs += current->pairs.size();  // counted as handed out: any failure throws the report away
      r.qat_tensors += current->qat.size();
      job = 0;
    }
    return [s = current, j = job++] { verify_job(*s, j); };
  });
  rule.finish();
  check_config_whole(r, cc);
  return r;
}

}  // namespace mf::io
