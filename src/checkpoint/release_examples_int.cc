// make-example-checkpoint --like for the releases stored as integer words (AutoAWQ GEMM, AutoGPTQ v1, GPTQModel's
// gptq_v2, compressed-tensors pack-quantized, Kimi K2-Thinking) and compressed-tensors' mixed FP8 / NVFP4: the
// `--arch` example's bf16 model quantized by each library's own rounding rule (named at each), laid out under the
// release's names, dtypes, shapes and config.json (docs/checkpoints.md, "Published releases in miniature").
#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <memory>
#include <nlohmann/json.hpp>

#include "example_values.h"
#include "minifloat/codec.h"
#include "release_examples.h"

namespace mf::io::detail {
namespace {

using Json = nlohmann::ordered_json;
using U = std::uint64_t;

// How one tensor of such a release is stored.
enum class Form : std::uint8_t {
  plain,     // as the model holds it (BF16; F16 in the AutoAWQ / AutoGPTQ releases, which save an F16 model)
  awq,       // AutoAWQ GEMM: qweight I32 [C, R/8], qzeros I32 [C/G, R/8], scales F16 [C/G, R]
  gptq,      // AutoGPTQ: qweight I32 [C/8, R], qzeros I32 [C/G, R/8], scales F16 [C/G, R], g_idx I32 [C]
  packed,    // compressed-tensors pack-quantized: weight_packed I32 [R, C/8], weight_scale BF16 [R, C/G], ...
  fp8_rows,  // compressed-tensors float-quantized, channel: weight F8_E4M3 [R, C], weight_scale BF16 [R, 1]
  nvfp4,     // compressed-tensors nvfp4-pack-quantized: weight_packed U8 [R, C/2], weight_scale F8_E4M3 [R, C/16]
};

struct Plan {
  std::string config;
  std::vector<std::pair<std::string, std::string>> side_files;
  bool f16 = false;        // the float tensors in F16
  int group = 128;         // columns per scale
  bool symmetric = true;   // no zero point (AWQ always has one)
  bool gptq_v2 = false;    // GPTQ zeros stored as they are, not zero - 1
  bool act_order = false;  // GPTQ's desc_act: the columns' groups in a permuted order
  std::vector<std::pair<ShapedName, Form>> tensors;
};

Json llama_config() { return Json::parse(example_config(ExampleArch::llama, example_size(ExampleArch::llama))); }

// A float tensor stored as F16 (encode rounds to nearest even), BF16 (the model's own bytes) or F32.
ReleaseTensor plain(const ShapedName& t, const std::vector<float>& x, bool f16_out) {
  if (t.dtype == DType::F32) return {t.name, DType::F32, t.shape, bytes_of(x)};  // DeepSeek's routing bias
  if (!f16_out) {
    std::vector<std::uint16_t> b(x.size());
    for (std::size_t i = 0; i < x.size(); ++i)
      b[i] = static_cast<std::uint16_t>(std::bit_cast<std::uint32_t>(x[i]) >> 16);
    return {t.name, DType::BF16, t.shape, bytes_of(b)};
  }
  std::vector<std::uint16_t> h(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) h[i] = static_cast<std::uint16_t>(encode(f16, x[i]));
  return {t.name, DType::F16, t.shape, bytes_of(h)};
}

// A scale rounded to the dtype it is stored in: F16 (AutoAWQ, AutoGPTQ) or BF16 (compressed-tensors: the model's).
float stored_scale(float s, bool f16_scale, std::uint16_t& code) {
  code = static_cast<std::uint16_t>(encode(f16_scale ? f16 : bf16, s));
  return decode(f16_scale ? f16 : bf16, code);
}

// Unsigned b-bit fields `v` packed LSB first, `per` = 32 / b to a word, along a run of `n` values starting at
// `first` with stride `step`: AutoGPTQ's and compressed-tensors' pack order (value j of a word at bit b j).
std::uint32_t word_of(const std::vector<std::int32_t>& v, U first, U step, U n, int bits) {
  std::uint32_t w = 0;
  for (U j = 0; j < n; ++j) w |= static_cast<std::uint32_t>(v[first + j * step]) << (bits * j);
  return w;
}

// Integer codes of x [R, C] per (row, group) with F16 / BF16 scales and zero points, by the library's rule:
//   symmetric (AutoGPTQ sym, compressed-tensors symmetric): AutoGPTQ s = 2 amax / 15, zero 8; compressed-tensors
//     s = amax / 7.5 (calculate_qparams: amax / ((qmax - qmin) / 2)), zero 8 in the unsigned form;
//   asymmetric (AutoAWQ, AutoGPTQ, compressed-tensors): s = (max - min) / 15 over the range widened to hold 0
//     (AutoAWQ: over the group's own min and max), zero = round(-min / s) clamped to [0, 15];
// code = clamp(round(x / s) + zero, 0, 15); round half to even (torch.round). Codes, zeros: unsigned, [R, C] and
// [R, G]; scales [R, G] as stored.
struct IntCodes {
  std::vector<std::int32_t> q, zero;
  std::vector<std::uint16_t> scale;
};
IntCodes int4_codes(const std::vector<float>& x, U rows, U cols, const std::vector<U>& group_of, U groups,
                    bool symmetric, bool ct, bool awq, bool f16_scale) {
  IntCodes c;
  c.q.resize(rows * cols);
  c.zero.resize(rows * groups);
  c.scale.resize(rows * groups);
  std::vector<float> lo(rows * groups, 0), hi(rows * groups, 0);
  std::vector<bool> seen(rows * groups, false);
  for (U r = 0; r < rows; ++r) {
    for (U k = 0; k < cols; ++k) {
      const U i = r * groups + group_of[k];
      const float v = x[r * cols + k];
      lo[i] = seen[i] || !awq ? std::min(lo[i], v) : v;
      hi[i] = seen[i] || !awq ? std::max(hi[i], v) : v;
      seen[i] = true;
    }
  }
  std::vector<float> s(rows * groups);
  for (U i = 0; i < rows * groups; ++i) {
    float raw = 0;
    if (symmetric) {
      const float amax = std::max(std::fabs(lo[i]), std::fabs(hi[i]));
      raw = amax == 0 ? 1.0f : ct ? amax / 7.5f : 2 * amax / 15;
    } else {
      raw = hi[i] > lo[i] ? (hi[i] - lo[i]) / 15 : 1.0f;
    }
    s[i] = stored_scale(raw, f16_scale, c.scale[i]);
    c.zero[i] = symmetric ? 8 : std::clamp(static_cast<std::int32_t>(std::nearbyint(-lo[i] / s[i])), 0, 15);
  }
  for (U r = 0; r < rows; ++r) {
    for (U k = 0; k < cols; ++k) {
      const U i = r * groups + group_of[k];
      const auto q = static_cast<std::int32_t>(std::nearbyint(x[r * cols + k] / s[i]));
      c.q[r * cols + k] = std::clamp(q + c.zero[i], 0, 15);
    }
  }
  return c;
}

// AutoAWQ's order of 8 outputs in a word: output 8 col + order[i] at nibble i (awq/utils/packing_utils.py).
constexpr std::array<U, 8> kAwqOrder{0, 2, 4, 6, 1, 3, 5, 7};

std::vector<ReleaseTensor> awq_tensors(const std::string& m, const IntCodes& c, U rows, U cols, U groups) {
  std::vector<std::uint32_t> qw(cols * rows / 8), qz(groups * rows / 8);
  for (U k = 0; k < cols; ++k) {
    for (U col = 0; col < rows / 8; ++col) {
      for (U i = 0; i < 8; ++i)
        qw[k * rows / 8 + col] |= static_cast<std::uint32_t>(c.q[(col * 8 + kAwqOrder[i]) * cols + k]) << (4 * i);
    }
  }
  for (U g = 0; g < groups; ++g) {
    for (U col = 0; col < rows / 8; ++col) {
      for (U i = 0; i < 8; ++i)
        qz[g * rows / 8 + col] |= static_cast<std::uint32_t>(c.zero[(col * 8 + kAwqOrder[i]) * groups + g]) << (4 * i);
    }
  }
  std::vector<std::uint16_t> sc(groups * rows);
  for (U r = 0; r < rows; ++r) {
    for (U g = 0; g < groups; ++g) sc[g * rows + r] = c.scale[r * groups + g];
  }
  return {{m + ".qweight", DType::I32, {cols, rows / 8}, bytes_of(qw)},
          {m + ".qzeros", DType::I32, {groups, rows / 8}, bytes_of(qz)},
          {m + ".scales", DType::F16, {groups, rows}, bytes_of(sc)}};
}

// AutoGPTQ (qlinear_cuda_old.py pack): qweight down the inputs, qzeros along the outputs (v1: zero - 1), g_idx.
std::vector<ReleaseTensor> gptq_tensors(const std::string& m, const IntCodes& c, U rows, U cols, U groups,
                                        const std::vector<U>& group_of, bool v2) {
  std::vector<std::int32_t> qt(cols * rows);  // [C, R]
  for (U r = 0; r < rows; ++r) {
    for (U k = 0; k < cols; ++k) qt[k * rows + r] = c.q[r * cols + k];
  }
  std::vector<std::uint32_t> qw(cols / 8 * rows), qz(groups * rows / 8);
  for (U w = 0; w < cols / 8; ++w) {
    for (U r = 0; r < rows; ++r) qw[w * rows + r] = word_of(qt, w * 8 * rows + r, rows, 8, 4);
  }
  std::vector<std::int32_t> zt(groups * rows);  // [G, R], as stored
  std::vector<std::uint16_t> sc(groups * rows);
  for (U r = 0; r < rows; ++r) {
    for (U g = 0; g < groups; ++g) {
      zt[g * rows + r] = (c.zero[r * groups + g] - (v2 ? 0 : 1)) & 15;
      sc[g * rows + r] = c.scale[r * groups + g];
    }
  }
  for (U g = 0; g < groups; ++g) {
    for (U w = 0; w < rows / 8; ++w) qz[g * rows / 8 + w] = word_of(zt, g * rows + w * 8, 1, 8, 4);
  }
  std::vector<std::int32_t> gi(cols);
  for (U k = 0; k < cols; ++k) gi[k] = static_cast<std::int32_t>(group_of[k]);
  return {{m + ".qweight", DType::I32, {cols / 8, rows}, bytes_of(qw)},
          {m + ".qzeros", DType::I32, {groups, rows / 8}, bytes_of(qz)},
          {m + ".scales", DType::F16, {groups, rows}, bytes_of(sc)},
          {m + ".g_idx", DType::I32, {cols}, bytes_of(gi)}};
}

// compressed-tensors pack-quantized (pack_to_int32): codes along the rows, zero points down the columns of [R, G];
// both stored as the unsigned q (signed value + 8); weight_shape I64 [2].
std::vector<ReleaseTensor> packed_tensors(const std::string& m, const IntCodes& c, U rows, U cols, U groups,
                                          bool symmetric) {
  std::vector<std::uint32_t> wp(rows * cols / 8);
  for (U r = 0; r < rows; ++r) {
    for (U w = 0; w < cols / 8; ++w) wp[r * cols / 8 + w] = word_of(c.q, r * cols + w * 8, 1, 8, 4);
  }
  std::vector<ReleaseTensor> out{{m + ".weight_packed", DType::I32, {rows, cols / 8}, bytes_of(wp)},
                                 {m + ".weight_scale", DType::BF16, {rows, groups}, bytes_of(c.scale)}};
  if (!symmetric) {
    std::vector<std::uint32_t> zp(rows / 8 * groups);
    for (U w = 0; w < rows / 8; ++w) {
      for (U g = 0; g < groups; ++g) zp[w * groups + g] = word_of(c.zero, w * 8 * groups + g, groups, 8, 4);
    }
    out.push_back({m + ".weight_zero_point", DType::I32, {rows / 8, groups}, bytes_of(zp)});
  }
  out.push_back(
      {m + ".weight_shape",
       DType::I64,
       {2},
       bytes_of(std::vector<std::int64_t>{static_cast<std::int64_t>(rows), static_cast<std::int64_t>(cols)})});
  return out;
}

std::uint8_t e4m3_of(float v) { return static_cast<std::uint8_t>(encode(e4m3, v, {.overflow = Overflow::saturate})); }

// compressed-tensors float-quantized, channel: s = amax / 448 of each row in BF16 (the model's dtype), codes
// e4m3(x / s) saturated.
std::vector<ReleaseTensor> fp8_row_tensors(const ShapedName& t, const std::vector<float>& x, U rows, U cols) {
  std::vector<std::uint8_t> codes(rows * cols);
  std::vector<std::uint16_t> sc(rows);
  for (U r = 0; r < rows; ++r) {
    float amax = 0;
    for (U k = 0; k < cols; ++k) amax = std::max(amax, std::fabs(x[r * cols + k]));
    const float s = stored_scale(amax > 0 ? amax / 448 : 1.0f, false, sc[r]);
    for (U k = 0; k < cols; ++k) codes[r * cols + k] = e4m3_of(x[r * cols + k] / s);
  }
  return {{t.name, DType::F8_E4M3, t.shape, bytes_of(codes)},
          {t.name + "_scale", DType::BF16, {rows, 1}, bytes_of(sc)}};
}

// compressed-tensors nvfp4-pack-quantized (NVFP4: tensor_group, 16): global scale gs = 448 x 6 / amax (F32), block
// scale e4m3(amax_block / 6 x gs), code e2m1(x x gs / scale) (value: code x scale / gs); element 2i in the low nibble;
// the W4A4 scheme's input_global_scale F32 [1] beside it (a calibrated constant here).
std::vector<ReleaseTensor> nvfp4_tensors(const std::string& m, const std::vector<float>& x, U rows, U cols) {
  float amax = 0;
  for (const float v : x) amax = std::max(amax, std::fabs(v));
  const float gs = amax > 0 ? 448.0f * 6.0f / amax : 1.0f;
  std::vector<std::uint8_t> packed(rows * cols / 2), sc(rows * cols / 16);
  for (U r = 0; r < rows; ++r) {
    for (U b = 0; b < cols / 16; ++b) {
      float bmax = 0;
      for (U k = b * 16; k < b * 16 + 16; ++k) bmax = std::max(bmax, std::fabs(x[r * cols + k]));
      sc[r * cols / 16 + b] = e4m3_of(bmax / 6 * gs);
      const float s = decode(e4m3, sc[r * cols / 16 + b]);
      for (U k = b * 16; k < b * 16 + 16; ++k) {
        const auto code = static_cast<std::uint8_t>(
            s > 0 ? encode(e2m1, x[r * cols + k] * gs / s, {.overflow = Overflow::saturate}) : 0);
        packed[(r * cols + k) / 2] |= static_cast<std::uint8_t>(k % 2 == 0 ? code : code << 4);
      }
    }
  }
  return {{m + ".weight_packed", DType::U8, {rows, cols / 2}, bytes_of(packed)},
          {m + ".weight_scale", DType::F8_E4M3, {rows, cols / 16}, bytes_of(sc)},
          {m + ".weight_global_scale", DType::F32, {1}, bytes_of(std::vector<float>{gs})},
          {m + ".input_global_scale", DType::F32, {1}, bytes_of(std::vector<float>{1024.0f})}};
}

// GPTQ's act order (desc_act): columns quantized in a permuted order, group j / G for the j-th; g_idx[perm[j]].
// The permutation (37 j + 11 mod C, C a power of two) stands in for the Hessian's order.
std::vector<U> groups_of_columns(U cols, U group, bool act_order) {
  std::vector<U> g(cols);
  for (U j = 0; j < cols; ++j) g[act_order ? (37 * j + 11) % cols : j] = j / group;
  return g;
}

std::vector<ReleaseTensor> produce(const Plan& p, std::size_t i) {
  const auto& [t, form] = p.tensors[i];
  const std::vector<float> x = release_values(t, i);
  if (form == Form::plain) return {plain(t, x, p.f16)};
  const U rows = t.shape[0], cols = t.shape[1];
  const std::string m = t.name.substr(0, t.name.size() - 7);  // less ".weight"
  if (form == Form::fp8_rows) return fp8_row_tensors(t, x, rows, cols);
  if (form == Form::nvfp4) return nvfp4_tensors(m, x, rows, cols);
  const U group = static_cast<U>(p.group), groups = cols / group;
  const std::vector<U> group_of = groups_of_columns(cols, group, p.act_order);
  const bool ct = form == Form::packed;
  const IntCodes c = int4_codes(x, rows, cols, group_of, groups, p.symmetric, ct, form == Form::awq, !ct);
  if (form == Form::awq) return awq_tensors(m, c, rows, cols, groups);
  if (form == Form::gptq) return gptq_tensors(m, c, rows, cols, groups, group_of, p.gptq_v2);
  return packed_tensors(m, c, rows, cols, groups, p.symmetric);
}

// ---- configs ----

// The float model saved in F16, as AutoAWQ and AutoGPTQ save theirs.
Json f16_llama() {
  Json c = llama_config();
  c.erase("dtype");
  c["torch_dtype"] = "float16";
  return c;
}

// Every decoder linear of the Llama miniature in `form`; the rest (embeddings, norms, lm_head) plain.
void llama_tensors(Plan& p, const Json& config, Form form) {
  for (ShapedName& t : model_tensors(parse_hf_config(config.dump()))) {
    const bool linear = t.name.ends_with("_proj.weight");
    p.tensors.emplace_back(std::move(t), linear ? form : Form::plain);
  }
}

// AutoAWQ (awq/models/_config.py to_transformers_dict): GEMM, 4 bits, group 128, zero point.
Plan autoawq() {
  Plan p;
  p.f16 = true;
  p.symmetric = false;
  Json c = f16_llama();
  c["quantization_config"] = {{"quant_method", "awq"}, {"zero_point", true},
                              {"group_size", 128},     {"bits", 4},
                              {"version", "gemm"},     {"modules_to_not_convert", nullptr}};
  p.config = c.dump(2) + "\n";
  llama_tensors(p, c, Form::awq);
  return p;
}

// AutoGPTQ (auto_gptq/quantization/config.py BaseQuantizeConfig.to_dict, in config.json and quantize_config.json):
// 4 bits, group 128, desc_act, sym; GPTQModel's gptq_v2 (its QuantizeConfig: checkpoint_format gptq_v2, here
// asymmetric, in order).
Plan gptq(bool v2) {
  Plan p;
  p.f16 = true;
  p.symmetric = !v2;
  p.act_order = !v2;
  p.gptq_v2 = v2;
  Json q = {{"bits", 4},
            {"group_size", 128},
            {"damp_percent", 0.01},
            {"desc_act", !v2},
            {"static_groups", false},
            {"sym", !v2},
            {"true_sequential", true},
            {"model_name_or_path", nullptr},
            {"model_file_base_name", "model"},
            {"quant_method", "gptq"},
            {"checkpoint_format", v2 ? "gptq_v2" : "gptq"}};
  if (v2) {
    q.erase("model_name_or_path");
    q.erase("model_file_base_name");
    q["lm_head"] = false;
    q["pack_dtype"] = "int32";
    q["meta"] = {{"quantizer", {"gptqmodel:2.2.0"}}, {"uri", "https://github.com/modelcloud/gptqmodel"}};
  }
  Json c = f16_llama();
  c["quantization_config"] = q;
  p.config = c.dump(2) + "\n";
  p.side_files.emplace_back("quantize_config.json", q.dump(2) + "\n");
  llama_tensors(p, c, Form::gptq);
  return p;
}

// compressed-tensors' QuantizationArgs as llm-compressor writes them into config.json.
Json ct_args(int bits, const char* type, bool symmetric, const char* strategy, Json group_size, Json dynamic,
             const char* observer) {
  return {{"actorder", nullptr},
          {"block_structure", nullptr},
          {"dynamic", dynamic},
          {"group_size", group_size},
          {"num_bits", bits},
          {"observer", observer ? Json(observer) : Json(nullptr)},
          {"observer_kwargs", Json::object()},
          {"strategy", strategy},
          {"symmetric", symmetric},
          {"type", type}};
}

Json ct_config(Json groups, const char* format, Json ignore) {
  return {{"config_groups", std::move(groups)},  {"format", format},           {"global_compression_ratio", nullptr},
          {"ignore", std::move(ignore)},         {"kv_cache_scheme", nullptr}, {"quant_method", "compressed-tensors"},
          {"quantization_status", "compressed"}, {"version", "0.12.2"}};
}

Json ct_group(Json targets, Json weights, Json inputs, const char* format) {
  Json g = {{"input_activations", std::move(inputs)},
            {"output_activations", nullptr},
            {"targets", std::move(targets)},
            {"weights", std::move(weights)}};
  if (format != nullptr) g["format"] = format;
  return g;
}

// llm-compressor's W4A16 / W4A16_ASYM presets (quant_scheme.py): int4, group 128, BF16 scales, lm_head ignored.
Plan ct_w4a16(bool symmetric) {
  Plan p;
  p.symmetric = symmetric;
  Json c = llama_config();
  const Json w = ct_args(4, "int", symmetric, "group", 128, false, "minmax");
  c["quantization_config"] =
      ct_config({{"group_0", ct_group({"Linear"}, w, nullptr, "pack-quantized")}}, "pack-quantized", {"lm_head"});
  p.config = c.dump(2) + "\n";
  llama_tensors(p, c, Form::packed);
  return p;
}

// Kimi K2-Thinking (checkpoints-in-the-wild.md section 4.1): the DeepSeek-V3 architecture, routed experts INT4
// pack-quantized, symmetric, group 32, BF16 scales; attention, shared experts, dense MLPs and lm_head BF16 (the
// ignore list); no MTP layer (K2 has none).
Plan kimi_k2_thinking() {
  Plan p;
  p.group = 32;
  Json c = v3_config();
  c.erase("quantization_config");
  c["num_nextn_predict_layers"] = 0;
  c["model_type"] = "kimi_k2";
  const Json w = ct_args(4, "int", true, "group", 32, false, "minmax");
  c["quantization_config"] =
      ct_config({{"group_0", ct_group({"Linear"}, w, nullptr, nullptr)}}, "pack-quantized",
                {"lm_head", "re:.*self_attn.*", "re:.*shared_experts.*", "re:.*mlp\\.(gate|up|gate_up|down)_proj.*"});
  p.config = c.dump(2) + "\n";
  Json shapes = c;
  shapes["model_type"] = "deepseek_v3";  // the architecture model_tensors knows
  for (ShapedName& t : model_tensors(parse_hf_config(shapes.dump()))) {
    const bool expert = t.name.find(".mlp.experts.") != std::string::npos && t.name.ends_with("_proj.weight");
    if (t.name.ends_with(".e_score_correction_bias")) t.dtype = DType::F32;
    p.tensors.emplace_back(std::move(t), expert ? Form::packed : Form::plain);
  }
  return p;
}

// compressed-tensors mixed-precision as NVIDIA's and Unsloth's NVFP4 releases (section 5.7): group_0 FP8
// float-quantized per channel (dynamic per-token activations) on the attention projections and lm_head, group_1
// NVFP4 (W4A4, tensor_group 16) on the MLP projections.
Plan ct_mixed_nvfp4() {
  Plan p;
  Json c = llama_config();
  const Json fp8_in = ct_args(8, "float", true, "token", nullptr, true, nullptr);
  const Json fp8_w = ct_args(8, "float", true, "channel", nullptr, false, "minmax");
  const Json fp4_in = ct_args(4, "float", true, "tensor_group", 16, "local", "minmax");
  const Json fp4_w = ct_args(4, "float", true, "tensor_group", 16, false, "minmax");
  c["quantization_config"] = ct_config(
      {{"group_0", ct_group({"re:.*self_attn\\.(q|k|v|o)_proj$", "lm_head"}, fp8_w, fp8_in, "float-quantized")},
       {"group_1", ct_group({"re:.*mlp\\.(gate|up|down)_proj$"}, fp4_w, fp4_in, "nvfp4-pack-quantized")}},
      "mixed-precision", Json::array());
  p.config = c.dump(2) + "\n";
  for (ShapedName& t : model_tensors(parse_hf_config(c.dump()))) {
    const bool attention = t.name.find(".self_attn.") != std::string::npos || t.name == "lm_head.weight";
    const Form form = t.name.find(".mlp.") != std::string::npos ? Form::nvfp4
                      : attention                               ? Form::fp8_rows
                                                                : Form::plain;
    p.tensors.emplace_back(std::move(t), form);
  }
  return p;
}

std::optional<Plan> plan_of(ReleaseLike like) {
  switch (like) {
    case ReleaseLike::autoawq: return autoawq();
    case ReleaseLike::gptq: return gptq(false);
    case ReleaseLike::gptq_v2: return gptq(true);
    case ReleaseLike::compressed_tensors_w4a16: return ct_w4a16(true);
    case ReleaseLike::compressed_tensors_w4a16_asym: return ct_w4a16(false);
    case ReleaseLike::kimi_k2_thinking: return kimi_k2_thinking();
    case ReleaseLike::compressed_tensors_mixed_nvfp4: return ct_mixed_nvfp4();
    default: return std::nullopt;
  }
}

}  // namespace

std::optional<ReleaseFiles> word_release(ReleaseLike like) {
  std::optional<Plan> plan = plan_of(like);
  if (!plan) return std::nullopt;
  auto p = std::make_shared<const Plan>(std::move(*plan));
  return ReleaseFiles{p->config, p->side_files, p->tensors.size(), [p](std::size_t i) { return produce(*p, i); }};
}

}  // namespace mf::io::detail
