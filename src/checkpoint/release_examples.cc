// make-example-checkpoint --like: published checkpoint families in miniature, laid out as each release stores its
// tensors (names, dtypes, scale grids, config.json), the values being the `--arch` example's bf16 model quantized by
// minifloat into the release's scheme. Each layout follows the sources docs/checkpoints.md ("Published releases in
// miniature") cites; where a source leaves a detail open, the choice is named there.
#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>

#include "../io/file.h"
#include "example_values.h"
#include "release_examples.h"
#include "minifloat/checkpoint_commands.h"
#include "minifloat/codec.h"
#include "minifloat/quantize.h"

namespace mf::io {
namespace {

using detail::cat;
using Json = nlohmann::ordered_json;
using U = std::uint64_t;

// How one tensor of a release is stored.
enum class Kind {
  bf16,          // as the bf16 model holds it
  f32,           // F32 (DeepSeek's hyper-connection mixers, sinks, routing biases)
  i64,           // an integer table (DeepSeek-V4's hash router)
  fp8_e8m0,      // F8_E4M3 with one F8_E8M0 scale per Br x Bc block (DeepSeek-V4: 128x128; V4.1: 32x32; engram 1x32)
  fp8_f32,       // F8_E4M3 with one F32 scale per 128x128 block (DeepSeek-V3)
  fp8_bf16,      // F8_E4M3 with one BF16 scale per 128x128 block (Qwen)
  fp8_tensor,    // F8_E4M3 with one F32 scale for the tensor (FineGrainedFP8, weight_block_size null)
  fp4_i8,        // e2m1 packed two per byte as I8 [R, C/2], one F8_E8M0 scale per 32 along a row (DeepSeek-V4 experts)
  fp8_channel,   // F8_E4M3 with one F32 scale per output row, [R] (ModelOpt FP8_PER_CHANNEL_PER_TOKEN)
  int8_channel,  // I8 with one F32 scale per output row, [R] (ModelOpt W8A16, W8A8_SQ_PER_CHANNEL)
  int4_rows,     // signed int4, two output rows per byte, U8 [R/2, C], one F32 scale per 128 of a row (W4A16_AWQ)
};

struct Planned {
  ShapedName t;
  Kind kind = Kind::bf16;
  int block_rows = 128, block_cols = 128;
};

// The names a release gives a quantized weight's scales.
enum class Naming {
  release,    // X.weight + X.scale (DeepSeek's V4 / V4.1 releases)
  scale_inv,  // W + W_scale_inv (DeepSeek-V3, Qwen, transformers' FineGrainedFP8)
  modelopt,   // W + W_scale (NVIDIA ModelOpt's HF export)
};

struct Release {
  std::string config;
  std::string hf_quant_config;  // ModelOpt's hf_quant_config.json beside config.json ("" for none)
  std::vector<Planned> tensors;
  Naming naming = Naming::scale_inv;
  bool activation_scales = false;  // W's module gets an F32 [] activation_scale (FineGrainedFP8, activation "static")
  bool input_scales = false;       // ModelOpt's static activation scale: an F32 [] M.input_scale
  // ModelOpt's AWQ / SmoothQuant factors, M.pre_quant_scale BF16 [C]: on every linear (SmoothQuant), or (AWQ) only on
  // o_proj and down_proj, the export having folded the others' into the norm before them (fuse_prequant_layernorm).
  enum class Smoothing : std::uint8_t { none, every_linear, unfused } smoothing = Smoothing::none;
  bool second_scale = false;  // W4A8_AWQ's FP8 second level: an F32 [] W_scale_2
};

bool ends_with_any(const std::string& s, std::initializer_list<const char*> suffixes) {
  return std::any_of(suffixes.begin(), suffixes.end(), [&](const char* x) { return s.ends_with(x); });
}

bool contains(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

// ---- DeepSeek-V4 and V4.1 (checkpoints-in-the-wild.md, section 1) ----

// The V4 example's config (the `--arch deepseek-v4` miniature) as JSON.
Json v4_base_config() {
  return Json::parse(detail::example_config(ExampleArch::deepseek_v4, example_size(ExampleArch::deepseek_v4)));
}

// Layer `mtp`'s decoder block of a V4 config grown by one layer (its last), renamed to DeepSeek's MTP prefix mtp.0.,
// plus what an MTP module adds: enorm, hnorm, e_proj, h_proj (FP8), norm, its hyper-connection head and its own
// (tied) embedding and head entries (vllm deepseek_v4_mtp.py). The MTP block has no compressor: the choice of this
// miniature, not read from a release.
std::vector<ShapedName> v4_mtp(Json config, const char* mlp_type, bool hc_head) {
  const U dim = config["hidden_size"], vocab = config["vocab_size"], hc = config["hc_mult"];
  const int layers = config["num_hidden_layers"];
  config["num_hidden_layers"] = layers + 1;
  config["layer_types"].push_back("sliding_attention");
  config["mlp_layer_types"].push_back(mlp_type);
  const std::string from = cat("layers.", layers, "."), to = "mtp.0.";
  std::vector<ShapedName> out;
  for (ShapedName t : model_tensors(parse_hf_config(config.dump()))) {
    if (!t.name.starts_with(from)) continue;
    t.name = to + t.name.substr(from.size());
    out.push_back(std::move(t));
  }
  out.push_back({to + "enorm.weight", {dim}});
  out.push_back({to + "hnorm.weight", {dim}});
  out.push_back({to + "e_proj.weight", {dim, dim}});
  out.push_back({to + "h_proj.weight", {dim, dim}});
  out.push_back({to + "norm.weight", {dim}});
  if (hc_head) {
    out.push_back({to + "hc_head_fn", {hc, hc * dim}});
    out.push_back({to + "hc_head_base", {hc}});
    out.push_back({to + "hc_head_scale", {1}});
  }
  out.push_back({to + "emb.tok_emb.weight", {vocab, dim}});
  out.push_back({to + "head.weight", {vocab, dim}});
  return out;
}

// How V4 stores each tensor (section 1.2): FP8 with E8M0 block scales for the attention projections (wq_a, wq_b,
// wkv, wo_a, wo_b), the indexer's wq_b, the shared experts and MTP's e_proj / h_proj; routed experts FP4 as I8; F32
// for the hyper-connection mixers, attn_sink, the compressors' ape and the routing biases; I64 tid2eid; the rest
// (embeddings, head, norms, compressor wkv / wgate, indexer weights_proj, router weight) BF16.
Planned v4_planned(ShapedName t, int block) {
  Planned p{std::move(t)};
  const std::string& n = p.t.name;
  if (p.t.dtype == DType::I64) {
    p.kind = Kind::i64;
  } else if (contains(n, "hc_") || ends_with_any(n, {".attn_sink", ".ape", ".gate.bias", ".gate.bias_vl"})) {
    p.kind = Kind::f32;
  } else if (contains(n, ".ffn.experts.")) {
    p.kind = Kind::fp4_i8;
    p.block_rows = 1;
    p.block_cols = 32;
  } else if (contains(n, ".engram.embed.")) {
    p.kind = Kind::fp8_e8m0;  // V4.1's engram tables: one scale per 32 along a row (section 1.1)
    p.block_rows = 1;
    p.block_cols = 32;
  } else if (ends_with_any(n, {"attn.wq_a.weight", "attn.wq_b.weight", "attn.wkv.weight", "attn.wo_a.weight",
                               "attn.wo_b.weight", "indexer.wq_b.weight", "e_proj.weight", "h_proj.weight"}) ||
             contains(n, ".ffn.shared_experts.")) {
    p.kind = Kind::fp8_e8m0;
    p.block_rows = p.block_cols = block;
  }
  return p;
}

Release deepseek_v4_release() {
  Json config = v4_base_config();
  config["num_nextn_predict_layers"] = 1;
  config["expert_dtype"] = "fp4";  // V4: at the top level, not inside quantization_config (section 1.1)
  config["quantization_config"] = {{"quant_method", "fp8"},
                                   {"fmt", "e4m3"},
                                   {"activation_scheme", "dynamic"},
                                   {"scale_fmt", "ue8m0"},
                                   {"weight_block_size", {128, 128}}};
  Release r;
  r.naming = Naming::release;
  r.config = config.dump(2) + "\n";
  std::vector<ShapedName> tensors = model_tensors(parse_hf_config(v4_base_config().dump()));
  for (ShapedName& t : v4_mtp(v4_base_config(), "moe", true)) tensors.push_back(std::move(t));
  for (ShapedName& t : tensors) r.tensors.push_back(v4_planned(std::move(t), 128));
  return r;
}

// V4.1 (section 1.1, 1.2 "V4.1 differences"): the V4 names with 32x32 FP8 tiles; no hc_head_*, no compressor ape,
// no indexer compressor; score routing on every layer (no num_hash_layers, so no tid2eid) with a second bias for
// image tokens (gate.bias_vl); an engram table on a layer (FP8 [rows, 256], 1x32 scales). config.json nests the text
// model's parameters, its dtype and its quantization_config (with expert_dtype inside) under text_config. Left out:
// the vision tower, the engram's other tensors and the indexer's wk / k_norm (their dtypes are not known).
Release deepseek_v4_1() {
  Json text = v4_base_config();
  for (const char* key : {"architectures", "model_type", "num_hash_layers"}) text.erase(key);
  text["model_type"] = "deepseek_v41_text";
  Json mlp = Json::array();
  for (int l = 0; l < text["num_hidden_layers"].get<int>(); ++l) mlp.push_back("moe");
  text["mlp_layer_types"] = mlp;
  text["num_nextn_predict_layers"] = 1;
  text["quantization_config"] = {{"quant_method", "fp8"},
                                 {"activation_scheme", "dynamic"},
                                 {"weight_block_size", {32, 32}},
                                 {"scale_fmt", "ue8m0"},
                                 {"expert_dtype", "fp4"}};
  Json config = Json::object();
  config["architectures"] = {"DeepseekV41ForCausalLM"};
  config["model_type"] = "deepseek_v41";
  config["text_config"] = text;
  Release r;
  r.naming = Naming::release;
  r.config = config.dump(2) + "\n";

  Json shapes = v4_base_config();
  shapes["mlp_layer_types"] = mlp;
  std::vector<ShapedName> tensors;
  const U experts = shapes["n_routed_experts"];
  const int layers = shapes["num_hidden_layers"];
  for (ShapedName& t : model_tensors(parse_hf_config(shapes.dump()))) tensors.push_back(std::move(t));
  for (ShapedName& t : v4_mtp(shapes, "moe", false)) tensors.push_back(std::move(t));
  std::vector<ShapedName> kept;
  for (ShapedName& t : tensors) {
    if (contains(t.name, "hc_head_") || t.name.ends_with(".ape") || contains(t.name, ".indexer.compressor.")) continue;
    const bool gate_bias = t.name.ends_with(".ffn.gate.bias");
    const std::string name = t.name;
    kept.push_back(std::move(t));
    if (gate_bias) kept.push_back({name + "_vl", {experts}});
    if (name == cat("layers.", layers - 1, ".ffn_norm.weight")) {
      kept.push_back({cat("layers.", layers - 1, ".engram.embed.weight"), {64, 256}});
    }
  }
  for (ShapedName& t : kept) r.tensors.push_back(v4_planned(std::move(t), 32));
  return r;
}

// ---- DeepSeek-V3 / R1 / Kimi K2-Instruct (section 2) ----

}  // namespace

// A small DeepseekV3ForCausalLM whose linears do not all divide into 128x128 tiles, as V3's kv_a_proj_with_mqa
// ([kv_lora_rank + qk_rope_head_dim, hidden] = [576, 7168]) does not: here [160, 128] (scale [2, 1]), q_b_proj
// [192, 96], the experts' [96, 128] and [128, 96].
nlohmann::ordered_json detail::v3_config() {
  Json j;
  j["architectures"] = {"DeepseekV3ForCausalLM"};
  j["model_type"] = "deepseek_v3";
  j["dtype"] = "bfloat16";
  j["vocab_size"] = 256;
  j["hidden_size"] = 128;
  j["intermediate_size"] = 256;
  j["moe_intermediate_size"] = 96;
  j["num_hidden_layers"] = 2;
  j["num_nextn_predict_layers"] = 1;
  j["num_attention_heads"] = 2;
  j["num_key_value_heads"] = 2;
  j["n_shared_experts"] = 1;
  j["n_routed_experts"] = 4;
  j["num_experts_per_tok"] = 2;
  j["n_group"] = 1;
  j["topk_group"] = 1;
  j["first_k_dense_replace"] = 1;
  j["norm_topk_prob"] = true;
  j["routed_scaling_factor"] = 2.5;
  j["q_lora_rank"] = 96;
  j["kv_lora_rank"] = 128;
  j["qk_nope_head_dim"] = 64;
  j["qk_rope_head_dim"] = 32;
  j["v_head_dim"] = 64;
  j["max_position_embeddings"] = 256;
  j["rms_norm_eps"] = 1e-6;
  j["rope_theta"] = 10000.0;
  j["tie_word_embeddings"] = false;
  j["bos_token_id"] = 0;
  j["eos_token_id"] = 1;
  j["quantization_config"] = {
      {"activation_scheme", "dynamic"}, {"fmt", "e4m3"}, {"quant_method", "fp8"}, {"weight_block_size", {128, 128}}};
  return j;
}

namespace {

// Every linear FP8 with F32 128x128 scales; embeddings, lm_head, norms and the router BF16; the routing bias F32.
// The MTP layer model.layers.L (L = num_hidden_layers) holds a decoder block, enorm, hnorm, eh_proj (FP8 here: whether
// the release quantizes it is not settled in the sources), shared_head.norm and its own copies of embed_tokens and
// shared_head.head (README_WEIGHTS.md).
Release deepseek_v3() {
  Json config = detail::v3_config();
  Release r;
  r.config = config.dump(2) + "\n";
  const int layers = config["num_hidden_layers"];
  const U dim = config["hidden_size"], vocab = config["vocab_size"];
  std::vector<ShapedName> tensors = model_tensors(parse_hf_config(config.dump()));
  Json grown = config;
  grown["num_hidden_layers"] = layers + 1;
  const std::string mtp = cat("model.layers.", layers, ".");
  tensors.push_back({mtp + "embed_tokens.weight", {vocab, dim}});
  tensors.push_back({mtp + "enorm.weight", {dim}});
  tensors.push_back({mtp + "hnorm.weight", {dim}});
  tensors.push_back({mtp + "eh_proj.weight", {dim, 2 * dim}});
  for (ShapedName& t : model_tensors(parse_hf_config(grown.dump()))) {
    if (t.name.starts_with(mtp)) tensors.push_back(std::move(t));
  }
  tensors.push_back({mtp + "shared_head.norm.weight", {dim}});
  tensors.push_back({mtp + "shared_head.head.weight", {vocab, dim}});
  for (ShapedName& t : tensors) {
    Planned p{std::move(t)};
    if (p.t.name.ends_with(".e_score_correction_bias")) p.kind = Kind::f32;
    const std::string& n = p.t.name;
    const bool linear = p.t.shape.size() == 2 && n.ends_with(".weight") && !contains(n, "embed_tokens") &&
                        n != "lm_head.weight" && !ends_with_any(n, {".mlp.gate.weight", "shared_head.head.weight"});
    if (linear) p.kind = Kind::fp8_f32;  // q_a_proj ... o_proj, kv_a_proj_with_mqa, the MLPs and experts, eh_proj
    r.tensors.push_back(std::move(p));
  }
  return r;
}

// ---- Qwen FP8 (section 3) ----

// Qwen3-MoE (the `--arch qwen-moe` miniature) as Qwen's FP8 releases store it: every attention and expert projection
// F8_E4M3 with weight_scale_inv in BF16, [ceil(R/128), ceil(C/128)]; the router, embeddings, lm_head and norms
// BF16.
Release qwen_fp8() {
  Json config = Json::parse(detail::example_config(ExampleArch::qwen_moe, example_size(ExampleArch::qwen_moe)));
  config["quantization_config"] = {
      {"activation_scheme", "dynamic"}, {"fmt", "e4m3"}, {"quant_method", "fp8"}, {"weight_block_size", {128, 128}}};
  Release r;
  r.config = config.dump(2) + "\n";
  for (ShapedName& t : model_tensors(parse_hf_config(config.dump()))) {
    Planned p{std::move(t)};
    if (p.t.name.ends_with("_proj.weight")) p.kind = Kind::fp8_bf16;
    r.tensors.push_back(std::move(p));
  }
  return r;
}

// ---- FineGrainedFP8 per tensor (section 8.2) ----

// Llama (the `--arch llama` miniature) as transformers' FineGrainedFP8 holds it with weight_block_size null and
// static activations, the config Mistral's HF FP8 releases carry: every linear F8_E4M3 with one F32 weight_scale_inv
// [] (FP8Linear's per-tensor parameter) and an F32 activation_scale []; lm_head left unquantized.
Release fp8_per_tensor() {
  Json config = Json::parse(detail::example_config(ExampleArch::llama, example_size(ExampleArch::llama)));
  config["quantization_config"] = {{"activation_scheme", "static"},
                                   {"modules_to_not_convert", {"lm_head"}},
                                   {"quant_method", "fp8"},
                                   {"weight_block_size", nullptr}};
  Release r;
  r.config = config.dump(2) + "\n";
  r.activation_scales = true;
  for (ShapedName& t : model_tensors(parse_hf_config(config.dump()))) {
    Planned p{std::move(t)};
    if (p.t.name.ends_with("_proj.weight")) p.kind = Kind::fp8_tensor;
    r.tensors.push_back(std::move(p));
  }
  return r;
}

// ---- NVIDIA ModelOpt's other exports (section 6.3) ----

// Llama (the `--arch llama` miniature) as ModelOpt's unified HF export writes `quant_algo` (hf_quant_config.json, and
// config.json's quantization_config as convert_hf_quant_config_format gives it): every decoder linear quantized,
// lm_head excluded, embeddings and norms BF16.
Release modelopt_release(const char* algo, Kind kind, int group_size) {
  Json config = Json::parse(detail::example_config(ExampleArch::llama, example_size(ExampleArch::llama)));
  const Json producer = {{"name", "modelopt"}, {"version", "0.47.0"}};
  const Json excluded = {"lm_head", "model.embed_tokens"};
  Json q = {{"quant_algo", algo}, {"kv_cache_quant_algo", nullptr}};
  if (group_size > 0) {  // the AWQ forms (process_layer_quant_config)
    q["group_size"] = group_size;
    q["has_zero_point"] = false;
    q["pre_quant_scale"] = true;
  }
  q["exclude_modules"] = excluded;
  config["quantization_config"] = {
      {"ignore", excluded}, {"quant_algo", algo}, {"producer", producer}, {"quant_method", "modelopt"}};
  Release r;
  r.config = config.dump(2) + "\n";
  r.hf_quant_config = Json{{"producer", producer}, {"quantization", q}}.dump(4) + "\n";
  r.naming = Naming::modelopt;
  for (ShapedName& t : model_tensors(parse_hf_config(config.dump()))) {
    Planned p{std::move(t)};
    if (p.t.name.ends_with("_proj.weight")) p.kind = kind;
    r.tensors.push_back(std::move(p));
  }
  return r;
}

// ---- values ----

std::vector<float> widened(const std::vector<std::byte>& bf16_bytes) {
  std::vector<float> x(bf16_bytes.size() / 2);
  for (std::size_t i = 0; i < x.size(); ++i) {
    std::uint16_t h;
    std::memcpy(&h, bf16_bytes.data() + 2 * i, 2);
    x[i] = std::bit_cast<float>(static_cast<std::uint32_t>(h) << 16);
  }
  return x;
}

using detail::bytes_of;

std::uint8_t e4m3_code(float v) { return static_cast<std::uint8_t>(encode(e4m3, v, {.overflow = Overflow::saturate})); }

using Out = detail::ReleaseTensor;

// Codes and BF16 scales per 128x128 block by the formula Qwen's releases imply: s = amax / 448 rounded to bf16,
// each code e4m3(x / s), saturated (a scale rounded down must not overflow), a zero block scaled by 1.
void qwen_blocks(const std::vector<float>& x, U rows, U cols, std::vector<std::uint8_t>& codes,
                 std::vector<std::uint16_t>& scales) {
  const U sr = (rows + 127) / 128, sc = (cols + 127) / 128;
  codes.resize(rows * cols);
  scales.resize(sr * sc);
  for (U bi = 0; bi < sr; ++bi) {
    for (U bj = 0; bj < sc; ++bj) {
      float amax = 0;
      for (U r = bi * 128; r < std::min(rows, bi * 128 + 128); ++r) {
        for (U c = bj * 128; c < std::min(cols, bj * 128 + 128); ++c) amax = std::max(amax, std::fabs(x[r * cols + c]));
      }
      const auto s_bits = static_cast<std::uint16_t>(encode(bf16, amax > 0 ? amax / 448.0f : 1.0f));
      scales[bi * sc + bj] = s_bits;
      const float s = std::bit_cast<float>(static_cast<std::uint32_t>(s_bits) << 16);
      for (U r = bi * 128; r < std::min(rows, bi * 128 + 128); ++r) {
        for (U c = bj * 128; c < std::min(cols, bj * 128 + 128); ++c)
          codes[r * cols + c] = e4m3_code(x[r * cols + c] / s);
      }
    }
  }
}

// amax / bound of each run of `group` values of a row of x [rows, cols] (a zero run: 1), in f32 as ModelOpt's
// get_scaling_factor computes it (amax.float() / maxbound).
std::vector<float> row_scales(const std::vector<float>& x, U rows, U cols, U group, float bound) {
  std::vector<float> s(rows * (cols / group));
  for (U i = 0; i < s.size(); ++i) {
    float amax = 0;
    const U r = i / (cols / group), g = i % (cols / group);
    for (U c = g * group; c < (g + 1) * group; ++c) amax = std::max(amax, std::fabs(x[r * cols + c]));
    s[i] = amax > 0 ? amax / bound : 1.0f;
  }
  return s;
}

// round(v / s) clamped to [lo, hi], ties to even (torch.round), as ModelOpt's to_quantized_weight.
std::int32_t int_code(float v, float s, int lo, int hi) {
  return std::clamp(static_cast<std::int32_t>(std::nearbyint(v / s)), lo, hi);
}

// ModelOpt's codes of `x` under `kind` (fp8_channel, int8_channel, int4_rows) with their scales.
void modelopt_codes(Kind kind, const std::vector<float>& x, U rows, U cols, std::vector<Out>& out,
                    const std::string& w) {
  if (kind == Kind::int4_rows) {
    const std::vector<float> s = row_scales(x, rows, cols, 128, 7.0f);  // amax / 7 per 128 (INT4_AWQ block 128)
    std::vector<std::uint8_t> packed(rows / 2 * cols);
    for (U r = 0; r < rows; ++r) {
      for (U c = 0; c < cols; ++c) {
        const auto q = static_cast<std::uint8_t>(int_code(x[r * cols + c], s[r * (cols / 128) + c / 128], -8, 7) & 15);
        packed[(r / 2) * cols + c] |= static_cast<std::uint8_t>(r % 2 == 0 ? q : q << 4);  // pack_int4_in_uint8
      }
    }
    out.push_back({w, DType::U8, {rows / 2, cols}, bytes_of(packed)});
    out.push_back({w + "_scale", DType::F32, {rows, cols / 128}, bytes_of(s)});
    return;
  }
  const bool fp8 = kind == Kind::fp8_channel;
  const std::vector<float> s = row_scales(x, rows, cols, cols, fp8 ? 448.0f : 127.0f);
  std::vector<std::uint8_t> codes(rows * cols);
  for (U i = 0; i < codes.size(); ++i) {
    codes[i] = fp8 ? e4m3_code(x[i] / s[i / cols]) : static_cast<std::uint8_t>(int_code(x[i], s[i / cols], -128, 127));
  }
  out.push_back({w, fp8 ? DType::F8_E4M3 : DType::I8, {rows, cols}, bytes_of(codes)});
  out.push_back({w + "_scale", DType::F32, {rows}, bytes_of(s)});
}

// AWQ's smoothing factors of a layer: powers of two in [1/2, 2] (exact to divide by), varying over the columns.
std::vector<float> smoothing_factors(U cols, std::uint64_t seed) {
  std::vector<float> f(cols);
  for (U c = 0; c < cols; ++c) f[c] = std::ldexp(1.0f, static_cast<int>((c * 7 + seed) % 3) - 1);
  return f;
}

// The tensors `p` is written as: itself, or its codes and scales (and activation scale) under the release's names.
std::vector<Out> produce(const Planned& p, std::uint64_t seed, const Release& r, U experts) {
  const ShapedName& t = p.t;
  if (p.kind == Kind::i64) return {{t.name, DType::I64, t.shape, detail::i64_table(t, experts)}};
  const std::vector<std::byte> bf16 = detail::bf16_values(t, seed, false);
  if (p.kind == Kind::bf16) return {{t.name, DType::BF16, t.shape, bf16}};
  const std::vector<float> x = widened(bf16);
  if (p.kind == Kind::f32) return {{t.name, DType::F32, t.shape, bytes_of(x)}};
  const U rows = t.shape[0], cols = t.shape[1];
  const std::string module = t.name.substr(0, t.name.size() - 7);  // less ".weight"
  const std::string scale = r.naming == Naming::release ? module + ".scale" : t.name + "_scale_inv";
  if (r.naming == Naming::modelopt) {
    std::vector<Out> out;
    std::vector<float> y = x;
    const bool smoothed =
        r.smoothing == Release::Smoothing::every_linear ||
        (r.smoothing == Release::Smoothing::unfused && ends_with_any(t.name, {".o_proj.weight", ".down_proj.weight"}));
    if (smoothed) {  // the stored weight is W / pre_quant_scale (exactly: powers of two), the factors BF16
      const std::vector<float> f = smoothing_factors(cols, seed);
      for (U i = 0; i < y.size(); ++i) y[i] /= f[i % cols];
      std::vector<std::uint16_t> fb(cols);
      for (U c = 0; c < cols; ++c) fb[c] = static_cast<std::uint16_t>(std::bit_cast<std::uint32_t>(f[c]) >> 16);
      out.push_back({module + ".pre_quant_scale", DType::BF16, {cols}, bytes_of(fb)});
    }
    modelopt_codes(p.kind, y, rows, cols, out, t.name);
    if (r.second_scale) out.push_back({t.name + "_scale_2", DType::F32, {}, bytes_of(std::vector<float>{0.25f})});
    if (r.input_scales) out.push_back({module + ".input_scale", DType::F32, {}, bytes_of(std::vector<float>{0.0625f})});
    return out;
  }
  const std::vector<std::int64_t> shape{static_cast<std::int64_t>(rows), static_cast<std::int64_t>(cols)};
  QuantizeOptions o;
  o.pad = true;
  o.tensor_name = t.name;
  std::vector<Out> out;
  switch (p.kind) {
    case Kind::fp8_e8m0:
    case Kind::fp8_f32:
    case Kind::fp4_i8: {
      const std::string scheme = p.kind == Kind::fp4_i8 ? "e2m1-1x32-ue8m0-rceil"
                                 : p.kind == Kind::fp8_f32
                                     ? "e4m3-128x128-f32"
                                     : cat("e4m3-", p.block_rows, "x", p.block_cols, "-ue8m0-rceil");
      const QuantizedTensor q = quantize(x.data(), shape, scheme_named(scheme), o);
      const std::vector<U> grid{static_cast<U>(q.scale_shape[0]), static_cast<U>(q.scale_shape[1])};
      if (p.kind == Kind::fp4_i8) {
        out.push_back({t.name, DType::I8, {rows, cols / 2}, bytes_of(q.codes)});  // element 2i in the low nibble
      } else {
        out.push_back({t.name, DType::F8_E4M3, t.shape, bytes_of(q.codes)});
      }
      out.push_back({scale, p.kind == Kind::fp8_f32 ? DType::F32 : DType::F8_E8M0, grid, bytes_of(q.scales)});
      break;
    }
    case Kind::fp8_bf16: {
      std::vector<std::uint8_t> codes;
      std::vector<std::uint16_t> scales;
      qwen_blocks(x, rows, cols, codes, scales);
      out.push_back({t.name, DType::F8_E4M3, t.shape, bytes_of(codes)});
      out.push_back({scale, DType::BF16, {(rows + 127) / 128, (cols + 127) / 128}, bytes_of(scales)});
      break;
    }
    default: {  // fp8_tensor: s = amax / 448, codes e4m3(x / s), as FineGrainedFP8's quantizer (Fp8Quantize)
      float amax = 0;
      for (const float v : x) amax = std::max(amax, std::fabs(v));
      const float s = amax > 0 ? amax / 448.0f : 1.0f;
      std::vector<std::uint8_t> codes(x.size());
      for (std::size_t i = 0; i < x.size(); ++i) codes[i] = e4m3_code(x[i] / s);
      out.push_back({t.name, DType::F8_E4M3, t.shape, bytes_of(codes)});
      out.push_back({scale, DType::F32, {}, bytes_of(std::vector<float>{s})});
      break;
    }
  }
  if (r.activation_scales) {
    // A calibrated static input scale (any positive f32): 2^-4 here.
    out.push_back({module + ".activation_scale", DType::F32, {}, bytes_of(std::vector<float>{0.0625f})});
  }
  return out;
}

Release release_of(ReleaseLike like) {
  switch (like) {
    case ReleaseLike::deepseek_v4_release: return deepseek_v4_release();
    case ReleaseLike::deepseek_v4_1: return deepseek_v4_1();
    case ReleaseLike::deepseek_v3: return deepseek_v3();
    case ReleaseLike::qwen_fp8: return qwen_fp8();
    case ReleaseLike::fp8_per_tensor: return fp8_per_tensor();
    case ReleaseLike::modelopt_fp8_pc_pt: return modelopt_release("FP8_PER_CHANNEL_PER_TOKEN", Kind::fp8_channel, 0);
    case ReleaseLike::modelopt_w4a16_awq: {
      Release r = modelopt_release("W4A16_AWQ", Kind::int4_rows, 128);
      r.smoothing = Release::Smoothing::unfused;
      return r;
    }
    case ReleaseLike::modelopt_w8a16: return modelopt_release("W8A16", Kind::int8_channel, 0);
    case ReleaseLike::modelopt_w8a8_sq: {
      Release r = modelopt_release("W8A8_SQ_PER_CHANNEL", Kind::int8_channel, 0);
      r.smoothing = Release::Smoothing::every_linear;
      r.input_scales = true;
      return r;
    }
    case ReleaseLike::modelopt_w4a8_awq: {
      Release r = modelopt_release("W4A8_AWQ", Kind::int4_rows, 128);
      r.smoothing = Release::Smoothing::unfused;
      r.input_scales = r.second_scale = true;
      return r;
    }
    default: break;  // the word families: release_examples_int.cc
  }
  throw std::invalid_argument("unknown release");
}

constexpr std::array<std::pair<ReleaseLike, std::string_view>, 17> kNames{{
    {ReleaseLike::deepseek_v4_release, "deepseek-v4-release"},
    {ReleaseLike::deepseek_v4_1, "deepseek-v4.1"},
    {ReleaseLike::deepseek_v3, "deepseek-v3"},
    {ReleaseLike::qwen_fp8, "qwen-fp8"},
    {ReleaseLike::fp8_per_tensor, "fp8-per-tensor"},
    {ReleaseLike::modelopt_fp8_pc_pt, "modelopt-fp8-pc-pt"},
    {ReleaseLike::modelopt_w4a16_awq, "modelopt-w4a16-awq"},
    {ReleaseLike::modelopt_w8a16, "modelopt-w8a16"},
    {ReleaseLike::modelopt_w8a8_sq, "modelopt-w8a8-sq"},
    {ReleaseLike::modelopt_w4a8_awq, "modelopt-w4a8-awq"},
    {ReleaseLike::autoawq, "autoawq"},
    {ReleaseLike::gptq, "gptq"},
    {ReleaseLike::gptq_v2, "gptq-v2"},
    {ReleaseLike::compressed_tensors_w4a16, "compressed-tensors-w4a16"},
    {ReleaseLike::compressed_tensors_w4a16_asym, "compressed-tensors-w4a16-asym"},
    {ReleaseLike::kimi_k2_thinking, "kimi-k2-thinking"},
    {ReleaseLike::compressed_tensors_mixed_nvfp4, "compressed-tensors-mixed-nvfp4"},
}};

}  // namespace

ReleaseLike release_like_named(std::string_view name) {
  for (const auto& [like, text] : kNames) {
    if (text == name) return like;
  }
  std::string known;
  for (const auto& [like, text] : kNames) known += cat(known.empty() ? "" : ", ", text);
  throw std::invalid_argument(cat("unknown release '", name, "' (known: ", known, ")"));
}

std::string_view to_string(ReleaseLike like) {
  for (const auto& [l, text] : kNames) {
    if (l == like) return text;
  }
  return "?";
}

std::vector<float> detail::release_values(const ShapedName& t, std::uint64_t seed) {
  return widened(detail::bf16_values(t, seed, false));
}

namespace {

// The files of a release made in this file (Release's tensors quantized by produce()).
detail::ReleaseFiles files_of(ReleaseLike like) {
  if (std::optional<detail::ReleaseFiles> f = detail::word_release(like)) return std::move(*f);
  auto r = std::make_shared<const Release>(release_of(like));
  const U experts = parse_hf_config(r->config).number_or("n_routed_experts", 4);
  detail::ReleaseFiles f{
      r->config, {}, r->tensors.size(), [r, experts](std::size_t i) { return produce(r->tensors[i], i, *r, experts); }};
  if (!r->hf_quant_config.empty()) f.side_files.emplace_back("hf_quant_config.json", r->hf_quant_config);
  return f;
}

}  // namespace

HfConfig write_release_example(const std::filesystem::path& dir, ReleaseLike like, int shards) {
  std::filesystem::create_directories(dir);
  const detail::ReleaseFiles r = files_of(like);
  const HfConfig config = parse_hf_config(r.config);
  const auto n = static_cast<std::size_t>(shards < 1 ? 1 : shards);
  CheckpointIndex index;
  index.total_size = 0;
  // Contiguous runs of tensors per shard, about equal in count; a quantized weight's scales go with it.
  for (std::size_t s = 0; s < n; ++s) {
    const std::size_t begin = r.count * s / n, end = r.count * (s + 1) / n;
    std::vector<Out> outs;
    for (std::size_t i = begin; i < end; ++i) {
      for (Out& o : r.produce(i)) outs.push_back(std::move(o));
    }
    std::vector<TensorView> views;
    const std::string shard = shard_file_name(s, n);
    for (const Out& o : outs) {
      views.push_back({o.name, o.dtype, o.shape, o.data});
      index.weight_map[o.name] = shard;
      *index.total_size += o.data.size();
    }
    write_safetensors(dir / shard, views, {{"format", "pt"}});
  }
  write_index(dir / kIndexFileName, index);
  const std::array<std::span<const std::byte>, 1> pieces{std::as_bytes(std::span(r.config))};
  detail::write_atomically(dir / "config.json", pieces);
  for (const auto& [name, text] : r.side_files) {
    const std::array<std::span<const std::byte>, 1> side{std::as_bytes(std::span(text))};
    detail::write_atomically(dir / name, side);
  }
  return config;
}

}  // namespace mf::io
