// convert --format gguf: a Hugging Face Llama checkpoint as one GGUF file, with the tensor names, Q/K row order and
// metadata of llama.cpp's convert_hf_to_gguf (docs/checkpoints.md, "Writing dialects").
#include <algorithm>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <stdexcept>

#include "dialect_pairs.h"
#include "dialect_writer.h"
#include "expert_relayout.h"
#include "file.h"
#include "json_checked.h"
#include "minifloat/checkpoint_tensors.h"
#include "minifloat/gguf.h"
#include "minifloat/pack.h"
#include "minifloat/quantize.h"
#include "parallel.h"
#include "tensor_values.h"

namespace mf::io {
namespace {

namespace fs = std::filesystem;
using detail::cat;
using Json = nlohmann::json;

struct TypeName {
  std::string_view name;
  GgufType type;
};
constexpr TypeName kTypeRecipes[] = {
    {"f32", GgufType::F32}, {"f16", GgufType::F16}, {"bf16", GgufType::BF16}, {"q8_0", GgufType::Q8_0}};

// llama_ftype (llama.h; gguf-py's LlamaFileType): what general.file_type says the weights mostly are.
std::uint32_t file_type(const GgufRecipe& r) {
  if (!r.type) return 38;  // MOSTLY_MXFP4_MOE
  switch (*r.type) {
    case GgufType::F32: return 0;   // ALL_F32
    case GgufType::F16: return 1;   // MOSTLY_F16
    case GgufType::BF16: return 32; // MOSTLY_BF16
    default: return 7;              // MOSTLY_Q8_0
  }
}

// The llama.* hyperparameters llama.cpp reads, from config.json.
struct LlamaConfig {
  std::uint32_t n_layer = 0, n_embd = 0, n_ff = 0, n_head = 0, n_head_kv = 0, n_ctx = 0, n_vocab = 0, head_dim = 0;
  bool explicit_head_dim = false;
  float rope_theta = 10000.0f, rms_eps = 0;
};

[[noreturn]] void unsupported(const fs::path& file, std::string_view what) {
  throw IoError(IoErrc::gguf_unsupported, file, what);
}

std::uint32_t count_field(const Json& c, const char* key, const fs::path& file) {
  const auto it = c.find(key);
  if (it == c.end() || !it->is_number_unsigned() || it->get<std::uint64_t>() == 0 ||
      it->get<std::uint64_t>() > std::numeric_limits<std::uint32_t>::max()) {
    unsupported(file, cat("'", key, "' must be a positive integer below 2^32 (llama.cpp's llama.* metadata holds it)"));
  }
  return static_cast<std::uint32_t>(it->get<std::uint64_t>());
}

float float_field(const Json& c, const char* key, const fs::path& file) {
  const auto it = c.find(key);
  if (it == c.end() || !it->is_number() || !(it->get<double>() > 0)) {
    unsupported(file, cat("'", key, "' must be a positive number"));
  }
  return static_cast<float>(it->get<double>());  // llama.cpp keeps these as f32
}

// Rotary embeddings other than llama's default (llama3, yarn, linear scaling) need metadata and tensors this
// writer does not produce: refused rather than written wrong.
void check_rope(const Json& c, const fs::path& file) {
  for (const char* key : {"rope_scaling", "rope_parameters"}) {
    const auto it = c.find(key);
    if (it == c.end() || it->is_null()) continue;
    if (!it->is_object()) unsupported(file, cat("'", key, "' is not an object"));
    for (const char* type : {"rope_type", "type"}) {
      const auto t = it->find(type);
      if (t != it->end() && !(t->is_string() && t->get<std::string>() == "default")) {
        unsupported(file, cat("'", key, "' has ", type, " ", t->dump(),
                              ": --format gguf writes llama's default rotary embedding only"));
      }
    }
  }
}

// architectures LlamaForCausalLM or model_type llama; refused naming the architecture otherwise.
void check_llama(const Json& c, const fs::path& file) {
  bool llama = c.value("model_type", "") == "llama";
  std::string named = c.contains("model_type") ? c["model_type"].dump() : "none";
  if (const auto a = c.find("architectures"); a != c.end() && a->is_array()) {
    for (const Json& x : *a) llama = llama || (x.is_string() && x.get<std::string>() == "LlamaForCausalLM");
    if (!a->empty()) named = (*a)[0].dump();
  }
  if (!llama) {
    unsupported(file, cat("architecture ", named, ": --format gguf writes Llama checkpoints only (architectures "
                          "LlamaForCausalLM or model_type llama); other models: --format minifloat, "
                          "compressed-tensors, modelopt or transformers-fp8"));
  }
}

// head_dim as config.json gives it, or hidden_size / num_attention_heads; even (rotary pairs).
void read_head_dim(const Json& c, const fs::path& file, LlamaConfig& l) {
  l.explicit_head_dim = c.contains("head_dim") && !c["head_dim"].is_null();
  if (l.explicit_head_dim) {
    l.head_dim = count_field(c, "head_dim", file);
  } else if (l.n_embd % l.n_head != 0) {
    unsupported(file, cat("hidden_size ", l.n_embd, " is not a multiple of num_attention_heads ", l.n_head));
  } else {
    l.head_dim = l.n_embd / l.n_head;
  }
  if (l.head_dim % 2 != 0) unsupported(file, cat("head_dim ", l.head_dim, " is odd: rotary pairs need it even"));
}

LlamaConfig llama_config(const Json& c, const fs::path& file) {
  check_llama(c, file);
  check_rope(c, file);
  LlamaConfig l;
  l.n_layer = count_field(c, "num_hidden_layers", file);
  l.n_embd = count_field(c, "hidden_size", file);
  l.n_ff = count_field(c, "intermediate_size", file);
  l.n_head = count_field(c, "num_attention_heads", file);
  l.n_head_kv = c.contains("num_key_value_heads") && !c["num_key_value_heads"].is_null()
                    ? count_field(c, "num_key_value_heads", file) : l.n_head;
  l.n_ctx = count_field(c, "max_position_embeddings", file);
  l.n_vocab = count_field(c, "vocab_size", file);
  l.rms_eps = float_field(c, "rms_norm_eps", file);
  if (c.contains("rope_theta")) {
    l.rope_theta = float_field(c, "rope_theta", file);
  } else if (c.contains("rope_parameters") && c["rope_parameters"].contains("rope_theta")) {
    l.rope_theta = float_field(c["rope_parameters"], "rope_theta", file);
  }
  read_head_dim(c, file, l);
  return l;
}

// A layer number as Hugging Face writes it (decimal, no leading zero) below n_layer.
bool layer_number(std::string_view digits, std::uint32_t n_layer) {
  return !digits.empty() && digits.size() <= 9 &&
         std::all_of(digits.begin(), digits.end(), [](char ch) { return ch >= '0' && ch <= '9'; }) &&
         (digits.size() == 1 || digits[0] != '0') && std::stoul(std::string(digits)) < n_layer;
}

// llama.cpp's name for a Hugging Face Llama tensor: "" for one it drops (rotary inv_freq buffers); nullopt for one
// it has no name for.
std::optional<std::string> llama_name(std::string_view hf, std::uint32_t n_layer) {
  if (hf.ends_with(".rotary_emb.inv_freq")) return "";
  if (hf == "model.embed_tokens.weight") return "token_embd.weight";
  if (hf == "model.norm.weight") return "output_norm.weight";
  if (hf == "lm_head.weight") return "output.weight";
  constexpr std::string_view prefix = "model.layers.";
  if (!hf.starts_with(prefix)) return std::nullopt;
  hf.remove_prefix(prefix.size());
  const std::size_t dot = hf.find('.');
  const std::string_view digits = hf.substr(0, dot);
  if (dot == std::string_view::npos || !layer_number(digits, n_layer)) return std::nullopt;
  const std::string_view rest = hf.substr(dot + 1);
  const std::size_t last = rest.rfind('.');
  const std::string_view module = rest.substr(0, last), kind = rest.substr(last + 1);
  if (last == std::string_view::npos || (kind != "weight" && kind != "bias")) return std::nullopt;
  static constexpr std::pair<std::string_view, std::string_view> kModules[] = {
      {"self_attn.q_proj", "attn_q"},     {"self_attn.k_proj", "attn_k"},       {"self_attn.v_proj", "attn_v"},
      {"self_attn.o_proj", "attn_output"}, {"mlp.gate_proj", "ffn_gate"},        {"mlp.up_proj", "ffn_up"},
      {"mlp.down_proj", "ffn_down"},      {"input_layernorm", "attn_norm"},     {"post_attention_layernorm", "ffn_norm"},
  };
  for (const auto& [from, to] : kModules) {
    if (module == from) return cat("blk.", digits, ".", to, ".", kind);
  }
  return std::nullopt;
}

GgufType gguf_type_of(DType t) {
  return t == DType::F32 ? GgufType::F32 : t == DType::F16 ? GgufType::F16 : GgufType::BF16;
}

// One output tensor.
struct Planned {
  std::size_t shard;
  const SafetensorsTensor* in;
  GgufTensorSpec spec;
  std::uint32_t rope_heads = 0;    // Q or K: rows permuted in groups of this many heads
  std::optional<Scheme> scheme;    // MXFP4: the recipe's scheme, quantized by minifloat's quantizer
  std::string target;              // for the report
  const QuantizedPair* pair = nullptr;  // MXFP4 already: `in` holds its codes, re-laid out into ggml blocks
};

// The rows of x ([rows, cols]) in llama.cpp's order for Q and K (convert_hf_to_gguf's LlamaModel.permute): within
// each head the rows [first half | second half] of a rotary pair become interleaved, row 2i + j of the head taking
// row j * head_dim / 2 + i.
// A row permutation moves whole rows, so it applies as well to packed codes and block scales (cols: a row's items).
template <class T>
void permute_rope_rows(std::vector<T>& x, std::uint64_t rows, std::uint64_t cols, std::uint32_t heads) {
  const std::uint64_t head = rows / heads, half = head / 2;
  std::vector<T> out(x.size());
  for (std::uint64_t h = 0; h < heads; ++h) {
    for (std::uint64_t i = 0; i < half; ++i) {
      for (std::uint64_t j = 0; j < 2; ++j) {
        const T* from = x.data() + (h * head + j * half + i) * cols;
        std::copy(from, from + cols, out.data() + (h * head + 2 * i + j) * cols);
      }
    }
  }
  x.swap(out);
}

Json read_config(const Checkpoint& c) {
  const std::optional<fs::path> path = c.config_path();
  if (!path) {
    unsupported(c.directory, "no config.json beside the checkpoint: --format gguf takes the model's hyperparameters "
                             "from it");
  }
  const detail::InputFile file(*path);
  const std::vector<std::byte> bytes = file.read(0, file.size(), "config");
  const Json j = detail::parse_json_checked(
      std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()), *path, "config", 64);
  if (!j.is_object()) unsupported(*path, "config.json is not a JSON object");
  return j;
}

// The output tensor named for the Hugging Face tensor `hf` of `shape` (stored in `t`), F32 for now, with its rotary
// row permutation; nullopt for one llama.cpp drops.
std::optional<Planned> place(const SafetensorsFile& f, std::size_t shard, const SafetensorsTensor& t,
                             const std::string& hf, const std::vector<std::uint64_t>& shape, const LlamaConfig& l) {
  const std::optional<std::string> name = llama_name(hf, l.n_layer);
  if (!name) {
    throw IoError(IoErrc::gguf_unsupported, f.path(), hf,
                  cat("no llama.cpp name for it (--format gguf maps model.embed_tokens, model.layers.N.self_attn."
                      "{q,k,v,o}_proj, mlp.{gate,up,down}_proj, input_layernorm, post_attention_layernorm, "
                      "model.norm and lm_head, for N below num_hidden_layers ", l.n_layer, ")"));
  }
  if (name->empty()) return std::nullopt;
  if (shape.empty() || shape.size() > 2 || std::find(shape.begin(), shape.end(), 0) != shape.end()) {
    throw IoError(IoErrc::gguf_unsupported, f.path(), hf, "a Llama tensor is 1-D or 2-D and not empty");
  }
  Planned p{shard, &t, {*name, GgufType::F32, {shape.rbegin(), shape.rend()}}, 0, std::nullopt, "F32"};
  const bool q = name->find(".attn_q.") != std::string::npos, k = name->find(".attn_k.") != std::string::npos;
  if (q || k) {
    p.rope_heads = q ? l.n_head : l.n_head_kv;
    if (shape[0] != std::uint64_t{p.rope_heads} * l.head_dim) {
      throw IoError(IoErrc::gguf_unsupported, f.path(), hf,
                    cat(shape[0], " rows are not ", p.rope_heads, " heads x head_dim ", l.head_dim,
                        " (config.json): the rotary row order cannot be rewritten"));
    }
  }
  return p;
}

// The output tensor for `t`, or nullopt for one llama.cpp drops.
std::optional<Planned> plan_tensor(const SafetensorsFile& f, std::size_t shard, const SafetensorsTensor& t,
                                   const LlamaConfig& l, const GgufRecipe& r) {
  std::optional<Planned> placed = place(f, shard, t, t.name, t.shape, l);
  if (placed && !detail::is_float(t.dtype)) {
    throw IoError(IoErrc::gguf_unsupported, f.path(), t.name,
                  cat(dtype_name(t.dtype), " is not F32, F16 or BF16 and part of no MXFP4 pair: convert takes "
                      "unquantized checkpoints, or MXFP4 ones with --recipe mxfp4 (minifloat dequantize first)"));
  }
  if (!placed || t.shape.size() == 1) return placed;  // norms and biases: F32, as llama.cpp keeps 1-D tensors
  Planned& p = *placed;  // norms and biases: F32, as llama.cpp keeps 1-D tensors
  const std::uint64_t cols = t.shape[1];
  GgufType type = gguf_type_of(t.dtype);
  if (r.type) {
    type = *r.type;
  } else {
    const std::string target = r.recipe->target_for(t.name, 2, true);
    p.scheme = target_scheme(*r.recipe, target);
    if (p.scheme && cols % 32 == 0) {
      type = GgufType::MXFP4;
    } else {
      p.scheme.reset();
      if (target == "bf16") type = GgufType::BF16;
      if (target == "f32") type = GgufType::F32;
    }
  }
  // llama.cpp's convert falls back to F16 for a row that is not whole Q8_0 blocks; so does this.
  if (type == GgufType::Q8_0 && cols % 32 != 0) type = GgufType::F16;
  p.spec.type = type;
  p.target = gguf_type_name(static_cast<std::uint32_t>(type));
  return placed;
}

// A pair already quantized in IN: MXFP4 (any dialect but gpt-oss blocks) whose recipe target is MXFP4 is re-laid out
// into ggml's blocks with its codes and scales unchanged; anything else would need a requantization: refused.
std::optional<Planned> plan_pair(const SafetensorsFile& f, std::size_t shard, const QuantizedPair& pair,
                                 const LlamaConfig& l, const GgufRecipe& r) {
  const std::string target = r.recipe ? r.recipe->target_for(pair.output, 2, true) : r.name;
  const bool fits = r.recipe && detail::is_mxfp4(target_scheme(*r.recipe, target)) && detail::is_mxfp4(detail::held_scheme(pair)) &&
                    pair.form != PairForm::blocks && pair.extras.empty() && pair.output_shape.size() == 2 &&
                    pair.output_shape[1] % 32 == 0;
  if (!fits) {
    throw IoError(IoErrc::gguf_unsupported, f.path(), pair.weight,
                  cat("already quantized (", to_string(pair.form), " pair, ", pair.scheme_name, ") and the target for '",
                      pair.output, "' is ", target, ": --format gguf re-lays out only MXFP4 pairs (minifloat, "
                      "compressed-tensors, ModelOpt, DeepSeek forms) with an MXFP4 recipe; other quantized "
                      "checkpoints: minifloat dequantize first"));
  }
  std::optional<Planned> p = place(f, shard, *f.find(pair.weight), pair.output, pair.output_shape, l);
  if (!p) return p;
  p->spec.type = GgufType::MXFP4;
  p->target = target + " re-laid out";
  p->pair = &pair;
  return p;
}

// OCP-packed e2m1 codes and their ue8m0 scales as ggml MXFP4 blocks.
void ggml_blocks(std::span<const std::uint8_t> codes, std::span<const std::uint8_t> scales,
                 std::vector<std::byte>& bytes) {
  if (std::find(scales.begin(), scales.end(), 0xFF) != scales.end()) {
    throw std::invalid_argument("a block's ue8m0 scale is 0xFF (NaN): ggml reads that byte as 2^127, not NaN");
  }
  bytes.resize(scales.size() * kGgmlBlockBytes);
  ocp_to_ggml_mxfp4(codes, scales, std::span(reinterpret_cast<std::uint8_t*>(bytes.data()), bytes.size()));
}

std::vector<std::uint8_t> copy_bytes(std::span<const std::byte> b) {
  const auto* u = reinterpret_cast<const std::uint8_t*>(b.data());
  return {u, u + b.size()};
}

// The pair's codes and scales, rows permuted for Q and K, as ggml blocks: bytes moved, none changed.
TensorError relayout(const SafetensorsFile& f, const Planned& p, std::vector<std::byte>& bytes) {
  const std::uint64_t rows = p.pair->output_shape[0], cols = p.pair->output_shape[1];
  std::vector<std::uint8_t> codes = copy_bytes(f.bytes(*p.in));
  std::vector<std::uint8_t> scales = copy_bytes(f.bytes(*f.find(p.pair->scale)));
  if (codes.size() != rows * cols / 2 || scales.size() != rows * cols / 32) {
    throw IoError(IoErrc::gguf_unsupported, f.path(), p.pair->weight, "codes or scales are not [R, C/2] and [R, C/32]");
  }
  if (p.rope_heads != 0) {
    permute_rope_rows(codes, rows, cols / 2, p.rope_heads);
    permute_rope_rows(scales, rows, cols / 32, p.rope_heads);
  }
  try {
    ggml_blocks(codes, scales, bytes);
  } catch (const std::invalid_argument& e) {
    throw IoError(IoErrc::gguf_unsupported, f.path(), p.pair->scale, e.what());
  }
  return {p.pair->output, p.target, 0, 0, 0};
}

std::vector<std::pair<std::string, GgufValue>> llama_metadata(const LlamaConfig& l, const GgufRecipe& r,
                                                             const std::string& model_name) {
  using V = GgufValue;
  std::vector<std::pair<std::string, GgufValue>> m{
      {"general.architecture", V::of_string("llama")},
      {"general.type", V::of_string("model")},
      {"general.name", V::of_string(model_name)},
      {"llama.block_count", V::of_u32(l.n_layer)},
      {"llama.context_length", V::of_u32(l.n_ctx)},
      {"llama.embedding_length", V::of_u32(l.n_embd)},
      {"llama.feed_forward_length", V::of_u32(l.n_ff)},
      {"llama.attention.head_count", V::of_u32(l.n_head)},
      {"llama.attention.head_count_kv", V::of_u32(l.n_head_kv)},
      {"llama.rope.freq_base", V::of_f32(l.rope_theta)},
      {"llama.attention.layer_norm_rms_epsilon", V::of_f32(l.rms_eps)},
  };
  if (l.explicit_head_dim) {
    m.emplace_back("llama.attention.key_length", V::of_u32(l.head_dim));
    m.emplace_back("llama.attention.value_length", V::of_u32(l.head_dim));
  }
  m.emplace_back("general.file_type", V::of_u32(file_type(r)));
  m.emplace_back("llama.vocab_size", V::of_u32(l.n_vocab));
  m.emplace_back("llama.rope.dimension_count", V::of_u32(l.head_dim));
  m.emplace_back("general.quantization_version", V::of_u32(2));  // GGML_QNT_VERSION
  m.emplace_back("tokenizer.ggml.model", V::of_string("none"));
  return m;
}

// Tensor p's bytes as planned, and its error row for a lossy type.
std::optional<TensorError> encode(const SafetensorsFile& f, const Planned& p, int threads, std::vector<float>& x,
                                  std::vector<std::byte>& bytes) {
  if (p.pair) return relayout(f, p, bytes);
  const SafetensorsTensor& t = *p.in;
  detail::widen(f, t, x);
  const std::uint64_t rows = t.shape[0], cols = t.shape.size() == 2 ? t.shape[1] : 1;
  if (p.rope_heads != 0) permute_rope_rows(x, rows, cols, p.rope_heads);
  try {
    if (p.scheme) {
      QuantizeOptions o;
      o.threads = threads;
      o.tensor_name = t.name;
      const std::vector<std::int64_t> shape{static_cast<std::int64_t>(rows), static_cast<std::int64_t>(cols)};
      const QuantizedTensor q = quantize(x.data(), shape, *p.scheme, o);
      ggml_blocks(q.codes, q.scales, bytes);  // a 0xFF scale: NaN in the input
    } else {
      bytes = gguf_encode(p.spec.type, x);
    }
  } catch (const std::invalid_argument& e) {
    throw IoError(IoErrc::gguf_unsupported, f.path(), t.name, cat("as ", p.target, ": ", e.what()));
  }
  const bool lossy = p.spec.type == GgufType::Q8_0 || p.spec.type == GgufType::MXFP4 ||
                     (p.spec.type != GgufType::F32 && p.spec.type != gguf_type_of(t.dtype));
  if (!lossy) return std::nullopt;
  const std::vector<float> y = gguf_decode(p.spec.type, bytes);
  return detail::error_of(t.name, p.target, x, y);
}

bool same_file(const fs::path& a, const fs::path& b) {
  std::error_code ec;
  return fs::equivalent(a, b, ec) && !ec;
}

}  // namespace

bool is_gguf_type_name(std::string_view name) {
  return std::any_of(std::begin(kTypeRecipes), std::end(kTypeRecipes), [name](const TypeName& t) { return t.name == name; });
}

GgufRecipe gguf_recipe(const std::string& name) {
  for (const TypeName& t : kTypeRecipes) {
    if (t.name == name) return {name, t.type, std::nullopt};
  }
  Recipe recipe = load_recipe(name);
  detail::recipe_kind(recipe, WriteFormat::gguf);  // mxfp4 only; names the formats that can express the rest
  return {recipe.name, std::nullopt, std::move(recipe)};
}

namespace {

// The input's shards, opened, and the quantized pairs of each (fixed before plans point into them).
struct GgufInput {
  std::vector<SafetensorsFile> files;
  std::vector<std::vector<QuantizedPair>> pairs;
};

GgufInput open_inputs(const Checkpoint& c, const fs::path& out, ConvertReport& report) {
  GgufInput in;
  for (std::size_t i = 0; i < c.shards.size(); ++i) {
    if (same_file(out, c.shard_path(i))) throw IoError(IoErrc::write_failed, out, "OUT is an input shard");
    in.files.push_back(read_safetensors(c.shard_path(i)));
    report.input_bytes += in.files.back().header_size() + in.files.back().data_size();
  }
  in.pairs.resize(in.files.size());
  for (std::size_t i = 0; i < in.files.size(); ++i) in.pairs[i] = find_pairs(in.files[i]);
  return in;
}

// Shard i's output tensors, appended to `plan`: a pair's scales and the like go with its codes.
void plan_shard(const GgufInput& in, std::size_t i, const LlamaConfig& l, const GgufRecipe& recipe,
                std::vector<Planned>& plan) {
  std::set<std::string> parts;
  std::map<std::string, const QuantizedPair*> by_weight;
  for (const QuantizedPair& q : in.pairs[i]) {
    parts.insert({q.scale, q.tensor_scale});
    parts.insert(q.extras.begin(), q.extras.end());
    by_weight[q.weight] = &q;
  }
  for (const SafetensorsTensor& t : in.files[i].tensors()) {
    if (parts.contains(t.name)) continue;
    const auto pair = by_weight.find(t.name);
    if (std::optional<Planned> p = pair != by_weight.end() ? plan_pair(in.files[i], i, *pair->second, l, recipe)
                                                           : plan_tensor(in.files[i], i, t, l, recipe)) {
      plan.push_back(std::move(*p));
    }
  }
}

// llama.cpp cannot load a model without its embeddings and final norm.
void check_needed(const Checkpoint& c, const std::vector<Planned>& plan) {
  std::set<std::string> names;
  for (const Planned& p : plan) names.insert(p.spec.name);
  for (const char* needed : {"token_embd.weight", "output_norm.weight"}) {
    if (!names.contains(needed)) {
      unsupported(c.index_path.value_or(c.directory),
                  cat("no tensor for ", needed, " (model.embed_tokens.weight / model.norm.weight)"));
    }
  }
}

// Each planned tensor encoded and written in order, one at a time with all threads on it.
void write_planned(GgufInput& in, const std::vector<Planned>& plan, const ConvertOptions& options, GgufWriter& writer,
                   ConvertReport& report) {
  const int threads = detail::worker_count(options.threads);
  std::vector<float> x;
  std::vector<std::byte> bytes;
  std::uint64_t done = 0;
  const std::uint64_t total = report.input_bytes;
  for (std::size_t k = 0; k < plan.size(); ++k) {
    const Planned& p = plan[k];
    SafetensorsFile& f = in.files[p.shard];
    if (std::optional<TensorError> row = encode(f, p, threads, x, bytes)) report.tensors.push_back(std::move(*row));
    writer.write_tensor(k, bytes);
    f.release(*p.in);
    done += p.in->end - p.in->begin;
    if (p.pair) {
      const SafetensorsTensor& scale = *f.find(p.pair->scale);
      f.release(scale);
      done += scale.end - scale.begin;
    }
    if (options.progress) options.progress(std::min(done, total), total);
  }
}

}  // namespace

ConvertReport convert_to_gguf(const fs::path& in, const fs::path& out, const GgufRecipe& recipe,
                              const ConvertOptions& options) {
  if (recipe.type.has_value() == recipe.recipe.has_value()) {
    throw std::invalid_argument("convert_to_gguf: a GgufRecipe has a type or a recipe (gguf_recipe makes one)");
  }
  if (out.extension() != ".gguf") {
    throw IoError(IoErrc::write_failed, out, "--format gguf writes one file: OUT must be a path ending in .gguf");
  }
  const Checkpoint c = open_checkpoint(in);
  const Json config = read_config(c);
  const LlamaConfig l = llama_config(config, *c.config_path());

  // Everything planned and checked before the file is created.
  ConvertReport report;
  GgufInput input = open_inputs(c, out, report);
  std::vector<Planned> plan;
  for (std::size_t i = 0; i < input.files.size(); ++i) plan_shard(input, i, l, recipe, plan);
  check_needed(c, plan);
  std::vector<GgufTensorSpec> specs;
  for (const Planned& p : plan) specs.push_back(p.spec);
  std::error_code ec;
  const fs::path dir = fs::weakly_canonical(c.directory.empty() ? fs::path(".") : c.directory, ec);
  fs::create_directories(out.parent_path().empty() ? fs::path(".") : out.parent_path());
  GgufWriter writer(out, llama_metadata(l, recipe, dir.filename().string()), std::move(specs));
  write_planned(input, plan, options, writer, report);
  writer.commit();
  report.output_bytes = writer.bytes_total();
  report.shards_written = 1;
  return report;
}

}  // namespace mf::io
