// The dialects convert writes besides its own (docs/checkpoints.md, "Writing dialects"). The bytes of codes and scales
// are minifloat's own in every dialect (the same packing and scale codes); only names, dtypes, shapes, compressed-
// tensors' reciprocal global scale and the configs differ. Configs are written as the libraries write them:
// compressed-tensors 0.20 (ModelCompressor.update_config), ModelOpt 0.47 (export_hf_checkpoint), transformers 5.23
// (FineGrainedFP8Config.to_dict).
#include "dialect_writer.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>

#include "../io/file.h"
#include "int4_relayout.h"
#include "minifloat/codec.h"
#include "minifloat/scale.h"

namespace mf::io {
namespace {

using Json = nlohmann::ordered_json;
using detail::cat;
using detail::WrittenKind;

constexpr WriteFormat kFormats[] = {
    WriteFormat::minifloat, WriteFormat::compressed_tensors, WriteFormat::modelopt, WriteFormat::transformers_fp8,
    WriteFormat::gpt_oss,   WriteFormat::deepseek,           WriteFormat::gguf,     WriteFormat::awq,
    WriteFormat::gptq};

bool element_is(const Scheme& s, const Format& f) { return s.element.format != nullptr && *s.element.format == f; }

// One E8M0 scale per 32 elements of a row, no second level (MX).
bool mx_blocks(const Scheme& s) {
  return s.block_rows == 1 && s.block_cols == 32 && *s.scale_format == ue8m0 && !s.tensor_scale;
}

bool nvfp4_blocks(const Scheme& s) {
  return element_is(s, e2m1) && s.block_rows == 1 && s.block_cols == 16 && *s.scale_format == ue4m3 && s.tensor_scale;
}

// FP8 e4m3 in 128x128 blocks with one scale each (F32 or E8M0), as DeepSeek's checkpoints.
bool fp8_128x128(const Scheme& s) {
  return element_is(s, e4m3) && s.block_rows == 128 && s.block_cols == 128 && !s.tensor_scale &&
         (*s.scale_format == f32 || *s.scale_format == ue8m0);
}

std::optional<WrittenKind> kind_of(const Scheme& s) {
  if (nvfp4_blocks(s)) return WrittenKind::nvfp4;
  if (mx_blocks(s) && element_is(s, e2m1)) return WrittenKind::mxfp4;
  if (mx_blocks(s) && element_is(s, e4m3)) return WrittenKind::mxfp8;
  if (fp8_128x128(s) && *s.scale_format == f32) return WrittenKind::fp8_block;
  return std::nullopt;
}

bool expresses(WriteFormat f, WrittenKind k) {
  switch (f) {
    case WriteFormat::minifloat:
    case WriteFormat::compressed_tensors: return true;
    case WriteFormat::modelopt: return k != WrittenKind::fp8_block;
    case WriteFormat::transformers_fp8: return k == WrittenKind::fp8_block || k == WrittenKind::mxfp8;
    case WriteFormat::gpt_oss: return k == WrittenKind::mxfp4;
    case WriteFormat::deepseek: return k == WrittenKind::fp8_block;  // V4's FP8 + FP4 mix: check_deepseek
    case WriteFormat::gguf: return k == WrittenKind::mxfp4;          // ggml's MXFP4 (GGUF's float types: gguf_recipe)
    case WriteFormat::awq:
    case WriteFormat::gptq: return false;  // integer pairs re-laid out only (int4_relayout.h)
  }
  return false;
}

// The kinds of the recipe's scheme targets; nullopt in the set for a scheme no dialect here names.
std::set<std::optional<WrittenKind>> kinds_of(const Recipe& r) {
  std::set<std::optional<WrittenKind>> kinds;
  for (const RecipeRule& rule : r.rules) {
    if (const std::optional<Scheme> s = target_scheme(r, rule.target)) kinds.insert(kind_of(*s));
  }
  return kinds;
}

// compressed-tensors' kind of every scheme target, or nullopt when one has none (its config groups hold several
// schemes in one checkpoint).
std::optional<std::set<WrittenKind>> ct_kinds(const Recipe& r) {
  std::set<WrittenKind> kinds;
  for (const RecipeRule& rule : r.rules) {
    const std::optional<Scheme> s = target_scheme(r, rule.target);
    if (!s) continue;
    const std::optional<WrittenKind> k = detail::ct_kind_of(*s);
    if (!k) return std::nullopt;
    kinds.insert(*k);
  }
  return kinds;
}

std::string g9(float x) {
  char b[32];
  std::snprintf(b, sizeof b, "%.9g", static_cast<double>(x));
  return b;
}

Json ct_weights(WrittenKind k) {
  if (k == WrittenKind::fp8_block) {
    // No scale_dtype, as compressed-tensors writes it; the F32 scales its decompressor takes as they are (its own are
    // the model dtype, BF16, which cannot hold minifloat's f32 scales).
    return {{"block_structure", {128, 128}}, {"dynamic", false},  {"group_size", nullptr}, {"num_bits", 8},
            {"strategy", "block"},           {"symmetric", true}, {"type", "float"}};
  }
  const bool nv = k == WrittenKind::nvfp4;
  return {{"dynamic", false},
          {"group_size", nv ? 16 : 32},
          {"num_bits", k == WrittenKind::mxfp8 ? 8 : 4},
          {"scale_dtype", nv ? "torch.float8_e4m3fn" : "torch.uint8"},
          {"strategy", nv ? "tensor_group" : "group"},
          {"symmetric", true},
          {"type", "float"}};
}

const char* ct_format(WrittenKind k) {
  switch (k) {
    case WrittenKind::nvfp4: return "nvfp4-pack-quantized";
    case WrittenKind::mxfp4: return "mxfp4-pack-quantized";
    case WrittenKind::mxfp8: return "mxfp8-quantized";
    case WrittenKind::fp8_block: return "float-quantized";
  }
  return "";
}

// Weights only (the A16 presets: NVFP4A16, MXFP4A16, MXFP8A16), since convert calibrates no activations; fp8-block
// is DeepSeek V3's W8A8 with dynamic per-token-group activations, FP8_BLOCK's preset (no activation tensors).
Json ct_group(WrittenKind k, const Json& targets) {
  Json input = nullptr;
  if (k == WrittenKind::fp8_block) {
    input = {{"dynamic", true},     {"group_size", 128}, {"num_bits", 8},
             {"strategy", "group"}, {"symmetric", true}, {"type", "float"}};
  }
  return {{"format", ct_format(k)},
          {"input_activations", input},
          {"output_activations", nullptr},
          {"targets", targets},
          {"weights", ct_weights(k)}};
}

// The quantized modules of each kind, sorted. One kind: one group targeting every Linear (as compressed-tensors'
// presets write it). Several (DeepSeek-V4's FP8 blocks with MXFP4 experts): the kind of most modules targets Linear,
// the others list their modules by name, which compressed-tensors matches first (exact names before regexes before
// class names); each group names its own format and the top level says "mixed-precision", as
// QuantizationConfig.from_pretrained writes it for several formats.
// Integer pairs re-laid out (pack-quantized) are groups of their own, by name, or targeting Linear when alone.
Json compressed_tensors_config(const std::map<WrittenKind, std::vector<std::string>>& modules,
                               const std::vector<detail::IntGroup>& ints, const std::vector<std::string>& ignore) {
  Json groups = Json::object();
  std::string format = "pack-quantized";
  if (!modules.empty()) {
    WrittenKind most = modules.begin()->first;
    for (const auto& [k, names] : modules) most = names.size() > modules.at(most).size() ? k : most;
    for (const auto& [k, names] : modules) {
      groups[cat("group_", groups.size())] = ct_group(k, k == most ? Json::array({"Linear"}) : Json(names));
    }
    format = ct_format(most);
  }
  const bool linear = modules.empty() && ints.size() == 1;
  for (const detail::IntGroup& g : ints) {
    groups[cat("group_", groups.size())] = {{"format", "pack-quantized"},
                                            {"input_activations", nullptr},
                                            {"output_activations", nullptr},
                                            {"targets", linear ? Json::array({"Linear"}) : Json(g.modules)},
                                            {"weights", Json::parse(g.weights_json)}};
  }
  if (groups.size() > 1) format = "mixed-precision";
  return {{"config_groups", groups},
          {"format", format},
          {"global_compression_ratio", nullptr},
          {"ignore", ignore},
          {"kv_cache_scheme", nullptr},
          {"moe_sparsity_config", nullptr},
          {"quant_method", "compressed-tensors"},
          {"quantization_status", "compressed"},
          {"sparsity_config", Json::object()},
          {"transform_config", Json::object()},
          {"version", "0.20.0"}};
}

// The quantized modules of compressed-tensors shards by kind, read off their tensors: P.weight_packed (with
// P.weight_global_scale: nvfp4), or an F8 P.weight with a U8 (mxfp8) or F32 (fp8 blocks) P.weight_scale.
std::map<WrittenKind, std::vector<std::string>> ct_modules(const std::vector<std::filesystem::path>& shards) {
  std::map<WrittenKind, std::vector<std::string>> out;
  for (const std::filesystem::path& p : shards) {
    const SafetensorsFile f = read_safetensors(p);
    for (const SafetensorsTensor& t : f.tensors()) {
      if (t.name.ends_with(".weight_packed") && t.dtype != DType::I32) {  // I32: integers (ct_int_groups)
        const std::string m = t.name.substr(0, t.name.size() - 14);
        out[f.find(m + ".weight_global_scale") ? WrittenKind::nvfp4 : WrittenKind::mxfp4].push_back(m);
      } else if (t.name.ends_with(".weight") && t.dtype == DType::F8_E4M3) {
        const std::string m = t.name.substr(0, t.name.size() - 7);
        const SafetensorsTensor* s = f.find(m + ".weight_scale");
        if (s != nullptr) out[s->dtype == DType::U8 ? WrittenKind::mxfp8 : WrittenKind::fp8_block].push_back(m);
      }
    }
  }
  for (auto& [k, names] : out) std::sort(names.begin(), names.end());
  return out;
}

const char* modelopt_algo(WrittenKind k) {
  return k == WrittenKind::nvfp4 ? "NVFP4" : k == WrittenKind::mxfp8 ? "MXFP8" : "mxfp4";
}

Json modelopt_producer() { return {{"name", "modelopt"}, {"version", "0.47.0"}}; }

// convert_hf_quant_config_format's form: config_groups for NVFP4 only (weights: no input_scale is written).
Json modelopt_config(WrittenKind k, const std::vector<std::string>& ignore) {
  Json q = Json::object();
  if (k == WrittenKind::nvfp4) {
    const Json weights = {{"dynamic", false}, {"num_bits", 4}, {"type", "float"}, {"group_size", 16}};
    q["config_groups"] = {{"group_0", {{"weights", weights}, {"targets", Json::array({"Linear"})}}}};
  }
  q["ignore"] = ignore;
  q["quant_algo"] = modelopt_algo(k);
  q["producer"] = modelopt_producer();
  q["quant_method"] = "modelopt";
  return q;
}

Json transformers_fp8_config(WrittenKind k, const std::vector<std::string>& ignore) {
  const bool mx = k == WrittenKind::mxfp8;
  return {{"quant_method", "fp8"},
          {"modules_to_not_convert", ignore},
          {"modules_to_convert", nullptr},
          {"activation_scheme", "dynamic"},
          {"weight_block_size", mx ? Json{1, 32} : Json{128, 128}},
          {"dequantize", false},
          {"scale_fmt", mx ? "ue8m0" : "float"},
          {"expert_dtype", "fp8"}};
}

// gpt-oss's own list (openai/gpt-oss-20b's config.json): everything but the MoE experts stays BF16.
Json gpt_oss_config() {
  return {{"modules_to_not_convert",
           {"model.layers.*.self_attn", "model.layers.*.mlp.router", "model.embed_tokens", "lm_head"}},
          {"quant_method", "mxfp4"}};
}

std::vector<std::string> unquantized_modules(const std::vector<std::filesystem::path>& shards) {
  std::vector<std::string> names;
  for (const std::filesystem::path& p : shards) {
    const SafetensorsFile f = read_safetensors(p);
    for (const SafetensorsTensor& t : f.tensors()) {
      const bool floating = t.dtype == DType::F32 || t.dtype == DType::F16 || t.dtype == DType::BF16;
      if (floating && t.shape.size() == 2 && t.name.ends_with(".weight")) {
        names.push_back(t.name.substr(0, t.name.size() - 7));
      }
    }
  }
  std::sort(names.begin(), names.end());  // as ModelOpt lists them, whatever the shards' order
  return names;
}

// Embeddings are no Linear: only ModelOpt lists them (its exclude_modules names every module it left alone).
std::vector<std::string> listed(WriteFormat f, const std::vector<std::string>& unquantized) {
  std::vector<std::string> out;
  for (const std::string& m : unquantized) {
    if (f == WriteFormat::modelopt || m.find("embed") == std::string::npos) out.push_back(m);
  }
  return out;
}

}  // namespace

WriteFormat write_format_named(std::string_view name) {
  for (const WriteFormat f : kFormats) {
    if (to_string(f) == name) return f;
  }
  throw std::invalid_argument(
      cat("unknown --format '", name,
          "' (known: minifloat, compressed-tensors, modelopt, transformers-fp8, gpt-oss, deepseek, gguf, awq, "
          "gptq)"));
}

std::string_view to_string(WriteFormat f) {
  switch (f) {
    case WriteFormat::minifloat: return "minifloat";
    case WriteFormat::compressed_tensors: return "compressed-tensors";
    case WriteFormat::modelopt: return "modelopt";
    case WriteFormat::transformers_fp8: return "transformers-fp8";
    case WriteFormat::gpt_oss: return "gpt-oss";
    case WriteFormat::deepseek: return "deepseek";
    case WriteFormat::gguf: return "gguf";
    case WriteFormat::awq: return "awq";
    case WriteFormat::gptq: return "gptq";
  }
  return "?";
}

void check_write_format(const Recipe& recipe, WriteFormat format) {
  detail::check_no_ue5m3(recipe, format);
  if (format == WriteFormat::deepseek) {
    detail::check_deepseek(recipe);
  } else if (format == WriteFormat::awq || format == WriteFormat::gptq) {
    detail::check_int_recipe(recipe, format);
  } else if (format == WriteFormat::compressed_tensors && detail::keeps_only(recipe)) {
    return;  // the stored pairs re-laid out, nothing quantized (int4_relayout.h)
  } else if (format != WriteFormat::minifloat) {
    detail::recipe_kind(recipe, format);
  }
}

namespace detail {

bool deepseek_expresses(const Recipe& r);

// No dialect holds UE5M3 block scales (nvfp4-ue5m3): ModelOpt 0.47.0's hf_quant_config and compressed-tensors
// 0.20.0's quantization_config have no field that says the scales are UE5M3, and safetensors no dtype for them, so a
// reader would take the bytes for E4M3 or E8M0 scales; minifloat's own form tells scales apart by their dtype alone.
void check_no_ue5m3(const Recipe& r, WriteFormat format) {
  for (const RecipeRule& rule : r.rules) {
    const std::optional<Scheme> s = target_scheme(r, rule.target);
    if (!s || !(*s->scale_format == ue5m3)) continue;
    throw std::invalid_argument(
        cat("recipe ", r.name, " cannot be written as --format ", to_string(format), ": rule '", rule.pattern,
            "' targets ", s->name,
            ", whose UE5M3 block scales no checkpoint dialect holds (ModelOpt and "
            "compressed-tensors have no UE5M3 scale field, safetensors no UE5M3 dtype); `minifloat quantize "
            "--scheme ",
            s->name, "` writes a .safetensors of its own (scales as U8 codes, the scheme in __metadata__)"));
  }
}

// "minifloat, ..." for a recipe: the formats whose forms hold every scheme target.
std::string formats_that_can(const Recipe& r, const std::set<std::optional<WrittenKind>>& kinds) {
  if (keeps_only(r)) return "minifloat, compressed-tensors, awq, gptq";  // the stored pairs re-laid out
  std::string can = "minifloat";
  if (kinds.size() == 1 && *kinds.begin()) {
    for (const WriteFormat f : kFormats) {
      if (f != WriteFormat::minifloat && expresses(f, **kinds.begin())) can += cat(", ", to_string(f));
    }
    return can;
  }
  if (const auto ct = ct_kinds(r); ct && !ct->empty()) can += ", compressed-tensors";  // several schemes, ue8m0 FP8
  if (deepseek_expresses(r)) {  // V4's FP8 blocks with FP4 experts: one checkpoint, two schemes
    can += r.hf_quantization->block_rows == 32 ? ", deepseek (on DeepSeek's bare names: V4.1's release form)"
                                               : ", deepseek";
  }
  return can;
}

WrittenKind recipe_kind(const Recipe& r, WriteFormat format) {
  check_no_ue5m3(r, format);  // before "no form there": say why (convert to GGUF comes here, not check_write_format)
  const std::set<std::optional<WrittenKind>> kinds = kinds_of(r);
  if (format == WriteFormat::compressed_tensors) {
    if (const auto ct = ct_kinds(r); ct && !ct->empty()) return *ct->begin();  // each weight: its own (ct_kind_of)
  }
  if (kinds.size() == 1 && *kinds.begin() && expresses(format, **kinds.begin())) return **kinds.begin();
  const char* why = kinds.empty()      ? "it quantizes nothing"
                    : kinds.size() > 1 ? "it mixes schemes (one scheme per checkpoint in these dialects)"
                    : !*kinds.begin()  ? "its scheme has no form there"
                                       : "that format has no form for its scheme";
  throw std::invalid_argument(cat("recipe ", r.name, " cannot be written as --format ", to_string(format), ": ", why,
                                  "; formats that can express it: ", formats_that_can(r, kinds)));
}

// FP8 e4m3 128x128 (F32 or ue8m0 scales) or, V4.1's, 32x32 (ue8m0), MXFP4 at most besides, with DeepSeek's
// quantization_config of that block.
bool deepseek_expresses(const Recipe& r) {
  const std::optional<QuantizationConfig>& q = r.hf_quantization;
  if (!q || q->block_rows != q->block_cols || (q->block_rows != 128 && q->block_rows != 32)) return false;
  bool fp8 = false, other = false;
  for (const RecipeRule& rule : r.rules) {
    const std::optional<Scheme> s = target_scheme(r, rule.target);
    if (!s) continue;
    const bool block = q->block_rows == 128 ? fp8_128x128(*s) : element_is(*s, e4m3) && deepseek_config_holds(*q, *s);
    fp8 = fp8 || block;
    other = other || !(block || kind_of(*s) == WrittenKind::mxfp4);
  }
  return fp8 && !other;
}

void check_deepseek(const Recipe& r) {
  if (deepseek_expresses(r)) return;
  std::string can = "minifloat";
  const std::set<std::optional<WrittenKind>> kinds = kinds_of(r);
  if (kinds.size() == 1 && *kinds.begin()) {
    for (const WriteFormat f : kFormats) {
      if (f != WriteFormat::minifloat && f != WriteFormat::deepseek && expresses(f, **kinds.begin())) {
        can += cat(", ", to_string(f));
      }
    }
  }
  throw std::invalid_argument(
      cat("recipe ", r.name,
          " cannot be written as --format deepseek: DeepSeek's checkpoints are FP8 e4m3 with "
          "128x128 block scales (V3: fp8-block; V4: deepseek-v4, with MXFP4 experts) or, in V4.1's release form, "
          "32x32 (deepinfer), and the config that says so; formats that can express it: ",
          can));
}

bool deepseek_config_holds(const QuantizationConfig& q, const Scheme& s) {
  if (s.tensor_scale) return false;
  if (*s.element.format == e4m3) {
    return s.block_rows == q.block_rows && s.block_cols == q.block_cols &&
           *s.scale_format == (q.scale_fmt == "ue8m0" ? ue8m0 : f32);
  }
  return *s.element.format == e2m1 && q.expert_dtype == "fp4" && s.block_rows == 1 && s.block_cols == 32 &&
         *s.scale_format == ue8m0;
}

std::optional<WrittenKind> ct_kind_of(const Scheme& s) {
  if (fp8_128x128(s)) return WrittenKind::fp8_block;  // ue8m0 scales written as F32: powers of two, exact
  return kind_of(s);
}

void check_module_weight(WriteFormat format, const std::filesystem::path& file, const std::string& tensor) {
  if (tensor.ends_with(".weight")) return;
  throw IoError(IoErrc::invalid_name, file, tensor,
                cat("--format ", to_string(format),
                    " writes module weights only (NAME.weight); this tensor would "
                    "be quantized by the recipe: add a rule keeping it, or use --format minifloat"));
}

std::vector<SafetensorsWriter::Spec> dialect_specs(const std::string& name, WrittenKind kind, WriteFormat format,
                                                   std::uint64_t rows, std::uint64_t cols) {
  const bool ct = format == WriteFormat::compressed_tensors;
  const std::string scale = name + (format == WriteFormat::transformers_fp8 ? "_scale_inv" : "_scale");
  switch (kind) {
    case WrittenKind::nvfp4:
      if (ct) {
        return {{name + "_packed", DType::U8, {rows, cols / 2}},
                {scale, DType::F8_E4M3, {rows, cols / 16}},
                {name + "_global_scale", DType::F32, {1}}};
      }
      return {{name, DType::U8, {rows, cols / 2}},
              {scale, DType::F8_E4M3, {rows, cols / 16}},
              {name + "_scale_2", DType::F32, {}}};
    case WrittenKind::mxfp4:
      return {{ct ? name + "_packed" : name, DType::U8, {rows, cols / 2}}, {scale, DType::U8, {rows, cols / 32}}};
    case WrittenKind::mxfp8:
      return {{name, DType::F8_E4M3, {rows, cols}},
              {scale, format == WriteFormat::transformers_fp8 ? DType::F8_E8M0 : DType::U8, {rows, cols / 32}}};
    case WrittenKind::fp8_block:
      return {{name, DType::F8_E4M3, {rows, cols}}, {scale, DType::F32, {rows / 128, cols / 128}}};
  }
  return {};
}

std::vector<SafetensorsWriter::Spec> gpt_oss_specs(const std::string& name, std::uint64_t experts, std::uint64_t in,
                                                   std::uint64_t out) {
  return {{name + "_blocks", DType::U8, {experts, out, in / 32, 16}},
          {name + "_scales", DType::U8, {experts, out, in / 32}}};
}

namespace {
// The first e4m3 scale code s with s / g != s * t in f32 (compressed-tensors divides, minifloat multiplies), or -1.
int first_inexact_code(float g, float t) {
  for (std::uint32_t c = 0; c < 256; ++c) {
    const float s = decode(e4m3, c);
    if (!std::isnan(s) && std::bit_cast<std::uint32_t>(s / g) != std::bit_cast<std::uint32_t>(s * t)) {
      return static_cast<int>(c);
    }
  }
  return -1;
}
}  // namespace

float second_scale_written(WriteFormat format, float t, const std::string& tensor) {
  if (format != WriteFormat::compressed_tensors) return t;
  const float g = 1.0f / t;
  if (const int c = first_inexact_code(g, t); c >= 0) {
    throw std::invalid_argument(
        cat("tensor '", tensor, "': compressed-tensors' weight_global_scale 1 / ", g9(t), " = ", g9(g),
            " does not reproduce minifloat's nvfp4 scales exactly (scale code ", c,
            ": s / g != s * tensor_scale "
            "in f32; exact when tensor_amax / 2688 is a power of two); --format modelopt or minifloat store the "
            "tensor scale itself"));
  }
  return g;
}

float tensor_scale_of_global(float g, const std::string& tensor) {
  const float t = 1.0f / g;
  if (const int c = first_inexact_code(g, t); c >= 0) {
    throw std::invalid_argument(cat("tensor '", tensor, "': compressed-tensors' weight_global_scale ", g9(g),
                                    " has no tensor scale that "
                                    "reproduces its values exactly (scale code ",
                                    c,
                                    ": s / g != s * (1 / g) in f32), so it cannot be "
                                    "re-laid out losslessly into a format that multiplies; nothing was written"));
  }
  return t;
}

void check_global_scale(const Scheme& scheme, std::span<const float> x, const std::string& tensor) {
  float amax = 0;
  for (const float v : x) amax = std::isfinite(v) ? std::max(amax, std::fabs(v)) : amax;
  second_scale_written(WriteFormat::compressed_tensors, tensor_scale_for(scheme, amax), tensor);
}

std::string dialect_config(std::string_view text, const Recipe& recipe, WriteFormat f,
                           const std::vector<std::filesystem::path>& shards) {
  Json config = Json::parse(text);
  if (!config.is_object()) throw std::invalid_argument("config.json is not a JSON object");
  const std::vector<std::string> ignore = listed(f, unquantized_modules(shards));
  if (f == WriteFormat::awq || f == WriteFormat::gptq) {
    config["quantization_config"] = Json::parse(detail::int_quantization_config(f, shards, ignore));
    return config.dump(2) + "\n";
  }
  if (f == WriteFormat::compressed_tensors) {
    std::map<WrittenKind, std::vector<std::string>> modules = ct_modules(shards);
    const std::vector<detail::IntGroup> ints = detail::ct_int_groups(shards);
    // a job array's merge with nothing quantized: the recipe's kind
    if (modules.empty() && ints.empty()) modules[recipe_kind(recipe, f)] = {};
    config["quantization_config"] = compressed_tensors_config(modules, ints, ignore);
    return config.dump(2) + "\n";
  }
  const WrittenKind k = recipe_kind(recipe, f);
  if (f == WriteFormat::gpt_oss) {
    config["quantization_config"] = gpt_oss_config();
  } else {
    config["quantization_config"] =
        f == WriteFormat::modelopt ? modelopt_config(k, ignore) : transformers_fp8_config(k, ignore);
  }
  return config.dump(2) + "\n";
}

std::string modelopt_hf_quant_config(const Recipe& recipe, const std::vector<std::filesystem::path>& shards) {
  const WrittenKind k = recipe_kind(recipe, WriteFormat::modelopt);
  Json q = {{"quant_algo", modelopt_algo(k)}, {"kv_cache_quant_algo", nullptr}};
  if (k != WrittenKind::mxfp4) q["group_size"] = k == WrittenKind::nvfp4 ? 16 : 32;
  q["exclude_modules"] = listed(WriteFormat::modelopt, unquantized_modules(shards));
  return Json{{"producer", modelopt_producer()}, {"quantization", q}}.dump(4);
}

}  // namespace detail
}  // namespace mf::io
