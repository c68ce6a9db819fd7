// convert --format gguf: a Hugging Face Llama, gpt-oss, Qwen or DeepSeek V3 checkpoint as one GGUF file, with the
// tensor names, row order and metadata of llama.cpp's convert_hf_to_gguf (gguf_models.h; docs/checkpoints.md,
// "Writing dialects").
#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>
#include <set>
#include <stdexcept>
#include <tuple>

#include "../dialect_pairs.h"
#include "../dialect_writer.h"
#include "../expert_relayout.h"
#include "../convert_run.h"
#include "../../io/file.h"
#include "gguf_models.h"
#include "gguf_sources.h"
#include "gguf_stack.h"
#include "gguf_tokenizer.h"
#include "../../io/json_checked.h"
#include "minifloat/checkpoint_tensors.h"
#include "minifloat/gguf.h"
#include "minifloat/gguf_model.h"
#include "minifloat/pack.h"
#include "minifloat/quantize.h"
#include "../parallel.h"
#include "../quantization_rule.h"
#include "../tensor_values.h"

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

GgufType gguf_type_of(DType t) {
  return t == DType::F32 ? GgufType::F32 : t == DType::F16 ? GgufType::F16 : GgufType::BF16;
}

// One output tensor.
struct Planned {
  std::size_t shard;
  const SafetensorsTensor* in;
  GgufTensorSpec spec;
  std::uint32_t rope_heads = 0;              // Q or K: rows permuted in groups of this many heads
  std::optional<Scheme> scheme;              // MXFP4: the recipe's scheme, quantized by minifloat's quantizer
  std::string target;                        // for the report
  const QuantizedPair* pair = nullptr;       // MXFP4 already: `in` holds its codes, re-laid out into ggml blocks
  std::uint32_t stride = 1, offset = 0;      // a split: rows offset, offset + stride, ... of the source's
  std::uint64_t inner = 1;                   // the elements of one such row
  const detail::ExpertMove* move = nullptr;  // per-expert MXFP4 weights gathered into gpt-oss's fused layout
  const QuantizedPair* source = nullptr;     // any other quantized pair, in one pass (gguf_sources.h)
  detail::SourceWay way = detail::SourceWay::dequantize;
  std::optional<float> constant = std::nullopt;  // NVFP4's X.scale / X.input_scale: one f32 value
  std::vector<detail::StackSource> stack{};      // each expert's weight (or pair), stacked into one 3-D tensor
  detail::GgufName split{};                      // its groups: a slice of each group of rows (gguf_models.h)
  bool keep_input = false;                       // the next planned tensor reads the same input
  std::string reported{};                        // the report's name for a stacked tensor
  bool relaid_stack = false;                     // stacked MXFP4 pairs, each expert re-laid out (DeepSeek V4)
  std::uint32_t ids_below = 0;  // > 0: an integer table written as I32, each value below this (V4's tid2eid)
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
    detail::gguf_unsupported(c.directory,
                             "no config.json beside the checkpoint: --format gguf takes the model's "
                             "hyperparameters from it");
  }
  const detail::InputFile file(*path);
  const std::vector<std::byte> bytes = file.read(0, file.size(), "config");
  const Json j = detail::parse_json_checked(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()),
                                            *path, "config", 64);
  if (!j.is_object()) detail::gguf_unsupported(*path, "config.json is not a JSON object");
  return j;
}

// The rotary row permutation of Q and K (Llama's only: gpt-oss keeps the Hugging Face order), checked.
void plan_rope(const SafetensorsFile& f, const std::string& hf, const std::vector<std::uint64_t>& shape,
               const detail::GgufModel& m, Planned& p) {
  const bool q = p.spec.name.find(".attn_q.") != std::string::npos;
  if (m.arch != detail::GgufArch::llama || (!q && p.spec.name.find(".attn_k.") == std::string::npos)) return;
  p.rope_heads = q ? m.n_head : m.n_head_kv;
  if (shape[0] != std::uint64_t{p.rope_heads} * m.head_dim) {
    throw IoError(IoErrc::gguf_unsupported, f.path(), hf,
                  cat(shape[0], " rows are not ", p.rope_heads, " heads x head_dim ", m.head_dim,
                      " (config.json): the rotary row order cannot be rewritten"));
  }
}

// The torch shape of a group split n of `shape` (its rows: every axis but the last), checked.
std::vector<std::uint64_t> group_dims(const SafetensorsFile& f, const std::string& hf,
                                      const std::vector<std::uint64_t>& shape, const detail::GgufName& n) {
  const std::uint64_t cols = shape.back(),
                      rows = std::accumulate(shape.begin(), shape.end() - 1, std::uint64_t{1}, std::multiplies<>());
  if (shape.size() < 2 || rows != std::uint64_t{n.groups} * n.group_rows) {
    throw IoError(IoErrc::gguf_unsupported, f.path(), hf,
                  cat(rows, " rows are not ", n.groups, " groups (heads or experts) of ", n.group_rows,
                      " (config.json): it cannot be split as llama.cpp splits it"));
  }
  return n.transpose ? std::vector<std::uint64_t>{n.groups, cols, n.count}
                     : std::vector<std::uint64_t>{n.groups, n.count, cols};
}

// The output tensors named for the Hugging Face tensor `hf` of `shape` (stored in `t`), F32 for now, with their rows
// (a split's share, Q and K's rotary order); none for one llama.cpp drops.
std::vector<Planned> place(const SafetensorsFile& f, std::size_t shard, const SafetensorsTensor& t,
                           const std::string& hf, const std::vector<std::uint64_t>& shape, const detail::GgufModel& m) {
  const std::optional<std::vector<detail::GgufName>> names = detail::gguf_names(m, hf);
  if (!names) {
    throw IoError(IoErrc::gguf_unsupported, f.path(), hf,
                  cat("no llama.cpp name for it (", detail::gguf_mapped(m), ")"));
  }
  if (shape.empty() || shape.size() > 3 || std::find(shape.begin(), shape.end(), 0) != shape.end()) {
    throw IoError(IoErrc::gguf_unsupported, f.path(), hf, "a GGUF tensor is 1-D, 2-D or 3-D (experts) and not empty");
  }
  std::vector<Planned> out;
  for (const detail::GgufName& n : *names) {
    const std::size_t axis = shape.size() == 3 ? 1 : shape.size() - 1;  // where gpt-oss interleaves gate and up
    std::vector<std::uint64_t> dims = shape;
    if (n.groups != 0) dims = group_dims(f, hf, shape, n);
    if (dims[axis] % n.stride != 0) {
      throw IoError(IoErrc::gguf_unsupported, f.path(), hf, cat(dims[axis], " rows do not split into gate and up"));
    }
    dims[axis] /= n.stride;
    Planned p{shard, &t, {n.name, GgufType::F32, {dims.rbegin(), dims.rend()}}, 0, std::nullopt, "F32"};
    p.stride = n.stride;
    p.offset = n.offset;
    p.inner = std::accumulate(shape.begin() + static_cast<std::ptrdiff_t>(axis) + 1, shape.end(), std::uint64_t{1},
                              std::multiplies<>());
    p.split = n;
    p.keep_input = &n != &names->back();
    plan_rope(f, hf, shape, m, p);
    out.push_back(std::move(p));
  }
  return out;
}

// The type of the 2-D tensor `name` ([rows, cols]) placed as p: the type recipe's, or the recipe's target (MXFP4
// quantized by minifloat; `keep`: the type a "keep" target writes).
void plan_type(const std::string& name, std::uint64_t cols, GgufType keep, const GgufRecipe& r, Planned& p) {
  GgufType type = keep;
  if (r.type) {
    type = *r.type;
  } else {
    const std::string target = r.recipe->target_for(name, 2, true);
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
}

// A layer's stacked experts (ExpertStacker), appended to `plan`: unquantized weights in the recipe's type, quantized
// pairs as gguf_source_plan decides for all of them at once (each expert dequantized exactly, then the stacked tensor
// encoded in one type).
// relaid: MXFP4 pairs re-laid out into ggml's blocks, codes and scales unchanged (DeepSeek V4's routed experts).
void plan_stacked(detail::StackedTensor s, const GgufRecipe& r, int threads, std::vector<Planned>& plan,
                  bool relaid = false) {
  const detail::StackSource& e = s.experts[0];
  const std::vector<std::uint64_t>& one = e.shape();
  Planned q{e.shard, e.tensor, {s.name, GgufType::F32, {one.rbegin(), one.rend()}}, 0, std::nullopt, "F32"};
  q.spec.dims.push_back(s.experts.size());
  if (relaid) {
    q.spec.type = GgufType::MXFP4;
    q.target = "MXFP4 re-laid out";
    q.relaid_stack = true;
  } else if (e.pair) {
    if (!r.type) {
      throw IoError(IoErrc::gguf_unsupported, e.file->path(), e.pair->weight,
                    cat("already quantized (", e.pair->scheme_name, ") expert of ", s.name,
                        ": --format gguf stacks quantized experts with --recipe f32, f16, bf16 or q8_0"));
    }
    std::vector<detail::PairIn> in;
    for (const detail::StackSource& x : s.experts) in.push_back({x.file, x.pair});
    const detail::SourcePlan sp = detail::gguf_source_plan(in, one[1], detail::SourceUse::stacked, r, threads);
    q.way = sp.way;
    q.spec.type = sp.type;
    q.target = sp.target;
  } else {
    plan_type(q.in->name, q.spec.dims[0], gguf_type_of(q.in->dtype), r, q);
  }
  q.stack = std::move(s.experts);
  q.reported = std::move(s.reported);
  plan.push_back(std::move(q));
}

// DeepSeek V4's unquantized tensor, typed as the converter's tensor_force_quant types it whatever --outtype says: an
// F32 source and every 1-D tensor F32, a 2-D BF16 one BF16, the hash routing table I32.
void plan_v4_tensor(const SafetensorsFile& f, const SafetensorsTensor& t, const detail::GgufModel& m,
                    std::vector<Planned> placed, std::vector<Planned>& plan) {
  for (Planned& p : placed) {
    if (p.split.expert != detail::GgufName::kNoExpert) {
      throw IoError(IoErrc::gguf_unsupported, f.path(), t.name,
                    cat(dtype_name(t.dtype),
                        " routed expert: llama.cpp's converter takes DeepSeek V4's routed "
                        "experts as MXFP4 pairs (I8 codes + F8_E8M0 .scale) only"));
    }
    if (p.spec.name.ends_with(".ffn_gate_tid2eid.weight")) {
      if (t.dtype != DType::I64 && t.dtype != DType::I32) {
        throw IoError(IoErrc::gguf_unsupported, f.path(), t.name,
                      cat(dtype_name(t.dtype), ": the hash routing table is an integer tensor (I64 or I32)"));
      }
      p.spec.type = GgufType::I32;
      p.target = "I32";
      p.ids_below = m.n_expert;
    } else if (t.dtype == DType::F32 || (t.dtype == DType::BF16 && p.spec.dims.size() < 2)) {
      p.spec.type = GgufType::F32;
    } else if (t.dtype == DType::BF16) {
      p.spec.type = GgufType::BF16;
      p.target = "BF16";
    } else {
      throw IoError(IoErrc::gguf_unsupported, f.path(), t.name,
                    cat(dtype_name(t.dtype),
                        ": llama.cpp's converter writes DeepSeek V4's unquantized tensors from BF16 or F32 only "
                        "(and its FP8 and MXFP4 pairs)"));
    }
    plan.push_back(std::move(p));
  }
}

// The output tensors for `t` (none for one llama.cpp drops), appended to `plan`.
void plan_tensor(const SafetensorsFile& f, std::size_t shard, const SafetensorsTensor& t, const detail::GgufModel& m,
                 const GgufRecipe& r, int threads, detail::ExpertStacker& stacker, std::vector<Planned>& plan) {
  std::vector<Planned> placed = place(f, shard, t, t.name, t.shape, m);
  if (m.arch == detail::GgufArch::deepseek4) return plan_v4_tensor(f, t, m, std::move(placed), plan);
  if (!placed.empty() && !detail::is_float(t.dtype)) {
    throw IoError(IoErrc::gguf_unsupported, f.path(), t.name,
                  cat(dtype_name(t.dtype),
                      " is not F32, F16 or BF16 and part of no MXFP4 pair: convert takes "
                      "unquantized checkpoints, or MXFP4 ones with --recipe mxfp4 (minifloat dequantize first)"));
  }
  if (!placed.empty() && t.shape.size() == 3 && m.arch == detail::GgufArch::gpt_oss) {
    throw IoError(IoErrc::gguf_unsupported, f.path(), t.name,
                  cat(dtype_name(t.dtype),
                      " experts, not MXFP4 blocks: --format gguf writes gpt-oss's experts as "
                      "MXFP4 only (minifloat convert --format gpt-oss --recipe mxfp4 first)"));
  }
  for (Planned& p : placed) {
    if (p.split.expert != detail::GgufName::kNoExpert) {
      for (detail::StackedTensor& s :
           stacker.add(p.spec.name, p.split.expert, {shard, &t, nullptr, &f}, t.name, f.path())) {
        plan_stacked(std::move(s), r, threads, plan);
      }
      continue;
    }
    // Norms, biases, 1-D tensors and the MoE router: F32, as llama.cpp keeps them.
    if (p.spec.dims.size() >= 2 && !detail::gguf_keeps_f32(m, p.spec.name)) {
      plan_type(t.name, p.spec.dims[0], gguf_type_of(t.dtype), r, p);
    }
    plan.push_back(std::move(p));
  }
}

// Placed MXFP4 tensors re-laid out from `pair` or `move`, appended to `plan`.
void plan_relaid(std::vector<Planned> placed, const std::string& target, const QuantizedPair* pair,
                 const detail::ExpertMove* move, std::vector<Planned>& plan) {
  for (Planned& p : placed) {
    p.spec.type = GgufType::MXFP4;
    p.target = target + " re-laid out";
    p.pair = pair;
    p.move = move;
    plan.push_back(std::move(p));
  }
}

// gpt-oss's MXFP4 expert blocks X_blocks [E, R, C/32, 16] (transformers' X [E, C, R]): ggml's [E, R, C], whatever
// the recipe, as llama.cpp's convert keeps them MXFP4.
bool gpt_oss_blocks(const QuantizedPair& pair, const detail::GgufModel& m) {
  return m.arch == detail::GgufArch::gpt_oss && pair.form == PairForm::blocks && pair.output_shape.size() == 3 &&
         detail::is_mxfp4(detail::held_scheme(pair)) && pair.extras.empty();
}

// The NVFP4 weight p's per-tensor scales, as llama.cpp's converter writes them after it (X.scale, X.input_scale:
// F32 [1]; none that is exactly 1), appended to `plan`.
void plan_nvfp4_scales(const SafetensorsFile& f, const Planned& weight, std::vector<Planned>& plan) {
  const Planned p = weight;  // a copy: `weight` may be an element of `plan`
  const detail::Nvfp4Scales s = detail::nvfp4_scales(f, *p.source);
  const std::string stem = p.spec.name.substr(0, p.spec.name.size() - std::string_view(".weight").size());
  for (const auto& [suffix, value] : {std::pair{".scale", s.scale}, std::pair{".input_scale", s.input_scale}}) {
    if (!value) continue;
    Planned c{p.shard, p.in, {stem + suffix, GgufType::F32, {1}}, 0, std::nullopt, "F32"};
    c.constant = value;
    plan.push_back(std::move(c));
  }
}

// A quantized pair in one pass (gguf_sources.h), appended to `plan`: with a type recipe, dequantized exactly and
// encoded once as the type (Q8_0 for --fp8-as-q8's FP8), or (--keep-quantized) moved into the GGML type that holds
// it exactly; with an MXFP4 recipe, dequantized exactly and then quantized to its target. An expert's weight goes
// to the stacker (plan_stacked); a split (DeepSeek's kv_b_proj) is dequantized, sliced, then encoded.
void plan_source(const SafetensorsFile& f, std::size_t shard, const QuantizedPair& pair, const detail::GgufModel& m,
                 const GgufRecipe& r, int threads, detail::ExpertStacker& stacker, std::vector<Planned>& plan) {
  for (Planned& p : place(f, shard, *f.find(pair.weight), pair.output, pair.output_shape, m)) {
    if (p.split.expert != detail::GgufName::kNoExpert) {
      const detail::StackSource one{shard, f.find(pair.weight), &pair, &f};
      for (detail::StackedTensor& s : stacker.add(p.spec.name, p.split.expert, one, pair.weight, f.path())) {
        plan_stacked(std::move(s), r, threads, plan);
      }
      continue;
    }
    const bool moved = p.split.groups != 0 || p.stride != 1;
    if (moved && !r.type) {
      throw IoError(IoErrc::gguf_unsupported, f.path(), pair.weight,
                    cat("already quantized (", pair.scheme_name, ") and llama.cpp splits '", pair.output, "' (",
                        p.spec.name, "): --format gguf splits quantized tensors with --recipe f32, f16, bf16 or q8_0"));
    }
    p.source = &pair;
    if (detail::gguf_keeps_f32(m, p.spec.name)) {
      p.target = "F32";
    } else if (r.type) {
      const detail::PairIn in{&f, &pair};
      const detail::SourcePlan s = detail::gguf_source_plan(
          {&in, 1}, p.spec.dims[0], moved ? detail::SourceUse::moved : detail::SourceUse::whole, r, threads);
      p.way = s.way;
      p.spec.type = s.type;
      p.target = s.target;
    } else {
      plan_type(pair.output, pair.output_shape[1], GgufType::F32, r, p);  // keep: the exact values, F32
    }
    const bool scales = p.way == detail::SourceWay::nvfp4;
    plan.push_back(std::move(p));
    if (scales) plan_nvfp4_scales(f, plan.back(), plan);
  }
}

// DeepSeek V4's pair as the converter writes it whatever --outtype says: an FP8 weight dequantized with its 128 x 128
// ue8m0 scales and written Q8_0 (tensor_force_quant; in one pass, as --fp8-as-q8), a routed expert's MXFP4 codes and
// scales stacked per layer and re-laid out into ggml's MXFP4 blocks (repack_mxfp4_blocks: bits moved, none changed).
void plan_v4_pair(const SafetensorsFile& f, std::size_t shard, const QuantizedPair& pair, const detail::GgufModel& m,
                  const GgufRecipe& r, int threads, detail::ExpertStacker& stacker, std::vector<Planned>& plan) {
  const std::vector<Planned> placed = place(f, shard, *f.find(pair.weight), pair.output, pair.output_shape, m);
  if (placed.empty()) return;  // the MTP module's
  if (placed[0].split.expert != detail::GgufName::kNoExpert) {
    if (!detail::is_mxfp4(detail::held_scheme(pair)) || pair.form == PairForm::blocks || !pair.extras.empty() ||
        pair.output_shape.size() != 2 || pair.output_shape[1] % 32 != 0) {
      throw IoError(IoErrc::gguf_unsupported, f.path(), pair.weight,
                    cat("a ", pair.scheme_name,
                        " routed expert: llama.cpp's converter repacks DeepSeek V4's routed "
                        "experts from MXFP4 (I8 codes + F8_E8M0 .scale per 32) only"));
    }
    const detail::StackSource one{shard, f.find(pair.weight), &pair, &f};
    for (detail::StackedTensor& s :
         stacker.add(placed[0].spec.name, placed[0].split.expert, one, pair.weight, f.path())) {
      plan_stacked(std::move(s), r, threads, plan, true);
    }
    return;
  }
  if (!detail::is_fp8_pair(f, pair) || pair.output_shape.size() != 2) {
    throw IoError(IoErrc::gguf_unsupported, f.path(), pair.weight,
                  cat("already quantized (", pair.scheme_name,
                      "): llama.cpp's converter dequantizes DeepSeek V4's FP8 weights (and re-lays out its MXFP4 "
                      "experts) only"));
  }
  const GgufRecipe q8{r.name, GgufType::BF16, std::nullopt, true, false};  // FP8 -> Q8_0, F16 for a partial block
  plan_source(f, shard, pair, m, q8, threads, stacker, plan);
}

// A pair already quantized in IN, appended to `plan`: MXFP4 whose recipe target is MXFP4 (or, --keep-quantized,
// any MXFP4 pair; any dialect; gpt-oss expert blocks whatever the recipe) is re-laid out into ggml's blocks with its
// codes and scales unchanged; any other 2-D pair goes in one pass (plan_source).
void plan_pair(const SafetensorsFile& f, std::size_t shard, const QuantizedPair& pair, const detail::GgufModel& m,
               const GgufRecipe& r, int threads, detail::ExpertStacker& stacker, std::vector<Planned>& plan) {
  if (m.arch == detail::GgufArch::deepseek4) return plan_v4_pair(f, shard, pair, m, r, threads, stacker, plan);
  const bool blocks = gpt_oss_blocks(pair, m);
  const std::string target = blocks ? "mxfp4" : r.recipe ? r.recipe->target_for(pair.output, 2, true) : r.name;
  const bool wanted = r.recipe ? detail::is_mxfp4(target_scheme(*r.recipe, target)) : r.keep_quantized;
  const bool fits = blocks || (wanted && detail::is_mxfp4(detail::held_scheme(pair)) && pair.form != PairForm::blocks &&
                               pair.extras.empty() && pair.output_shape.size() == 2 && pair.output_shape[1] % 32 == 0);
  if (!fits && pair.output_shape.size() == 2) return plan_source(f, shard, pair, m, r, threads, stacker, plan);
  if (!fits) {
    throw IoError(IoErrc::gguf_unsupported, f.path(), pair.weight,
                  cat("already quantized (", to_string(pair.form), " pair, ", pair.scheme_name,
                      ") and the target for '", pair.output, "' is ", target,
                      ": --format gguf takes 3-D quantized tensors only as gpt-oss's MXFP4 experts"));
  }
  const std::vector<std::uint64_t>& o = pair.output_shape;
  const std::vector<std::uint64_t> shape = blocks ? std::vector<std::uint64_t>{o[0], o[2], o[1]} : o;
  plan_relaid(place(f, shard, *f.find(pair.weight), pair.output, shape, m), r.recipe || blocks ? target : "mxfp4",
              &pair, nullptr, plan);
}

// gpt-oss's per-expert MXFP4 weights (any packed dialect), gathered as its fused experts and then planned as they are.
void plan_gather(const SafetensorsFile& f, std::size_t shard, const detail::ExpertMove& move,
                 const detail::GgufModel& m, std::vector<Planned>& plan) {
  const std::vector<std::uint64_t>& o = move.outputs[0].shape;  // [E, C, R]: transformers' fused parameter
  const SafetensorsTensor& first = *f.find(move.sources[0]->weight);
  plan_relaid(place(f, shard, first, move.reported, {o[0], o[2], o[1]}, m), "mxfp4", nullptr, &move, plan);
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

// Rows offset, offset + stride, ... of x, each `inner` items: a split's share (every row for stride 1).
template <class T>
void take_rows(std::vector<T>& x, std::uint64_t inner, std::uint32_t stride, std::uint32_t offset) {
  if (stride == 1) return;
  const std::uint64_t rows = x.size() / inner / stride;
  std::vector<T> out(rows * inner);
  for (std::uint64_t r = 0; r < rows; ++r) {
    const T* from = x.data() + (r * stride + offset) * inner;
    std::copy(from, from + inner, out.data() + r * inner);
  }
  x.swap(out);
}

// The name a report row gives p: the Hugging Face tensor's, and for a split which of it.
std::string reported(const std::string& hf, const Planned& p) {
  if (!p.reported.empty()) return p.reported;
  return p.stride == 1 && p.split.groups == 0 ? hf : cat(hf, " -> ", p.spec.name);
}

// Packed codes and their scales ([R, C/2] and [R, C/32] of the source `hf`), the planned split's rows taken, as ggml
// blocks; the report's row.
TensorReport to_blocks(const SafetensorsFile& f, const Planned& p, std::vector<std::uint8_t>& codes,
                       std::vector<std::uint8_t>& scales, const std::string& hf, std::vector<std::byte>& bytes) {
  take_rows(codes, p.inner / 2, p.stride, p.offset);
  take_rows(scales, p.inner / 32, p.stride, p.offset);
  try {
    ggml_blocks(codes, scales, bytes);
  } catch (const std::invalid_argument& e) {
    throw IoError(IoErrc::gguf_unsupported, f.path(), hf, e.what());
  }
  return {reported(hf, p), p.target, 0, 0, 0};
}

// The pair's codes and scales, rows permuted for Q and K or split for gate and up, as ggml blocks: bytes moved, none
// changed.
// The MXFP4 pair q's codes (`t`, in f) and scales, checked to be [R, C/2] and [R, C/32] for q's [R, C].
void mxfp4_parts(const SafetensorsFile& f, const QuantizedPair& q, const SafetensorsTensor& t,
                 std::vector<std::uint8_t>& codes, std::vector<std::uint8_t>& scales) {
  const auto rows = static_cast<std::uint64_t>(q.shape[0]), cols = static_cast<std::uint64_t>(q.shape[1]);
  codes = copy_bytes(f.bytes(t));
  scales = copy_bytes(f.bytes(*f.find(q.scale)));
  if (codes.size() != rows * cols / 2 || scales.size() != rows * cols / 32) {
    throw IoError(IoErrc::gguf_unsupported, f.path(), q.weight, "codes or scales are not [R, C/2] and [R, C/32]");
  }
}

TensorReport relayout(const SafetensorsFile& f, const Planned& p, std::vector<std::byte>& bytes) {
  const auto rows = static_cast<std::uint64_t>(p.pair->shape[0]), cols = static_cast<std::uint64_t>(p.pair->shape[1]);
  std::vector<std::uint8_t> codes, scales;
  mxfp4_parts(f, *p.pair, *p.in, codes, scales);
  if (p.rope_heads != 0) {
    permute_rope_rows(codes, rows, cols / 2, p.rope_heads);
    permute_rope_rows(scales, rows, cols / 32, p.rope_heads);
  }
  return to_blocks(f, p, codes, scales, p.pair->output, bytes);
}

// Per-expert weights' rows gathered as gpt-oss's fused tensor, then split as planned, as ggml blocks.
TensorReport regather(const SafetensorsFile& f, const Planned& p, std::vector<std::byte>& bytes) {
  std::vector<std::uint8_t> codes, scales;
  detail::move_rows(f, *p.move, p.move->outputs[0], codes, scales);
  return to_blocks(f, p, codes, scales, p.move->reported, bytes);
}

// The integer pair q's values (rows permuted for Q and K: rope_heads) as `type`'s blocks that hold them exactly, as
// planned; std::invalid_argument when they no longer do.
std::vector<std::byte> exact_integer_blocks(const SafetensorsFile& f, const QuantizedPair& q, GgufType type,
                                            std::uint32_t rope_heads, int threads) {
  std::vector<float> u = detail::dequantize_dialect_pair(f, q, true), x = dequantize_pair(f, q, threads);
  if (rope_heads != 0) {
    permute_rope_rows(u, q.output_shape[0], q.output_shape[1], rope_heads);
    permute_rope_rows(x, q.output_shape[0], q.output_shape[1], rope_heads);
  }
  std::optional<std::vector<std::byte>> b = detail::integer_blocks(type, u, x);
  if (!b) throw std::invalid_argument("its values no longer fit the type planned (the file changed?)");
  return std::move(*b);
}

// A source pair moved into the GGML type that holds it (gguf_sources.h), rows permuted for Q and K: NVFP4 codes
// and scale bytes unchanged, or integer codes as Q4_0 / Q4_1 / Q8_0 blocks of the same values.
TensorReport held(const SafetensorsFile& f, const Planned& p, int threads, std::vector<std::byte>& bytes) {
  const QuantizedPair& q = *p.source;
  const std::uint64_t rows = q.output_shape[0], cols = q.output_shape[1];
  try {
    if (p.way == detail::SourceWay::nvfp4) {
      std::vector<std::uint8_t> codes = copy_bytes(f.bytes(*f.find(q.weight)));
      std::vector<std::uint8_t> scales = copy_bytes(f.bytes(*f.find(q.scale)));
      if (codes.size() != rows * cols / 2 || scales.size() != rows * cols / 16) {
        throw std::invalid_argument("codes or scales are not [R, C/2] and [R, C/16]");
      }
      if (p.rope_heads != 0) {
        permute_rope_rows(codes, rows, cols / 2, p.rope_heads);
        permute_rope_rows(scales, rows, cols / 16, p.rope_heads);
      }
      bytes = detail::nvfp4_blocks(codes, scales, cols);
    } else {
      bytes = exact_integer_blocks(f, q, p.spec.type, p.rope_heads, threads);
    }
  } catch (const std::invalid_argument& e) {
    throw IoError(IoErrc::gguf_unsupported, f.path(), q.weight, cat("as ", p.target, ": ", e.what()));
  }
  return {reported(q.output, p), p.target, 0, 0, 0};
}

// A stacked tensor's bytes, expert after expert: every GGML type written here lays its blocks along rows, so the
// experts' encodings one after the other are the stacked tensor's. It holds one expert's f32 values at a time, and
// the stacked tensor's bytes. Its error row for a lossy type (every quantized expert: against its exact values).
std::optional<TensorReport> encode_stacked(const Planned& p, int threads, std::vector<float>& x,
                                           std::vector<std::byte>& bytes) {
  if (p.relaid_stack) {
    bytes.clear();
    for (const detail::StackSource& s : p.stack) {
      std::vector<std::uint8_t> codes, scales;
      mxfp4_parts(*s.file, *s.pair, *s.tensor, codes, scales);
      std::vector<std::byte> one;
      to_blocks(*s.file, p, codes, scales, s.pair->weight, one);
      bytes.insert(bytes.end(), one.begin(), one.end());
    }
    return TensorReport{p.reported, p.target, 0, 0, 0};
  }
  const bool quantized = p.stack[0].pair != nullptr;
  const bool lossy = quantized || p.spec.type == GgufType::Q8_0 ||
                     (p.spec.type != GgufType::F32 && p.spec.type != gguf_type_of(p.in->dtype));
  double se = 0, sx = 0, max_abs = 0, n = 0;
  bytes.clear();
  for (const detail::StackSource& s : p.stack) {
    const SafetensorsFile& f = *s.file;
    std::vector<std::byte> one;
    try {
      if (p.way == detail::SourceWay::integer) {
        one = exact_integer_blocks(f, *s.pair, p.spec.type, 0, threads);
      } else {
        if (quantized) {
          x = dequantize_pair(f, *s.pair, threads);  // exact: each value rounded to f32 once, as the converter does
        } else {
          detail::widen(f, *s.tensor, x);
        }
        one = gguf_encode(p.spec.type, x);
      }
    } catch (const std::invalid_argument& e) {
      throw IoError(IoErrc::gguf_unsupported, f.path(), s.tensor->name, cat("as ", p.target, ": ", e.what()));
    }
    if (lossy && p.way == detail::SourceWay::dequantize) {
      const TensorReport r = detail::error_of(p.reported, p.target, x, gguf_decode(p.spec.type, one));
      se += r.rmse * r.rmse * static_cast<double>(x.size());
      for (float v : x) sx += static_cast<double>(v) * v;
      max_abs = std::max(max_abs, r.max_abs);
      n += static_cast<double>(x.size());
    }
    bytes.insert(bytes.end(), one.begin(), one.end());
  }
  if (p.way == detail::SourceWay::integer) return TensorReport{p.reported, p.target, 0, 0, 0};
  if (!lossy) return std::nullopt;
  return TensorReport{p.reported, p.target, std::sqrt(se / n), max_abs, sx > 0 ? std::sqrt(se / sx) : 0.0};
}

// An I64 or I32 table of ids below `limit` as I32 (the converter's .to(torch.int32); a value that would not survive
// it, or that names no expert, is refused).
void int32_ids(const SafetensorsFile& f, const SafetensorsTensor& t, std::uint32_t limit, std::vector<std::byte>& out) {
  const std::span<const std::byte> in = f.bytes(t);
  const std::size_t width = t.dtype == DType::I64 ? 8 : 4, n = in.size() / width;
  out.resize(n * 4);
  for (std::size_t i = 0; i < n; ++i) {
    std::int64_t v = 0;
    if (width == 8) {
      std::memcpy(&v, in.data() + 8 * i, 8);
    } else {
      std::int32_t w = 0;
      std::memcpy(&w, in.data() + 4 * i, 4);
      v = w;
    }
    if (v < 0 || v >= limit) {
      throw IoError(IoErrc::gguf_unsupported, f.path(), t.name,
                    cat("value ", v, " at ", i, " is not an expert id below n_routed_experts ", limit));
    }
    const auto w = static_cast<std::int32_t>(v);
    std::memcpy(out.data() + 4 * i, &w, 4);
  }
}

// Tensor p's bytes as planned, and its error row for a lossy type (every dequantized pair: its error against the
// exact values).
std::optional<TensorReport> encode(const std::vector<SafetensorsFile>& files, const Planned& p, int threads,
                                   std::vector<float>& x, std::vector<std::byte>& bytes) {
  const SafetensorsFile& f = files[p.shard];
  if (p.constant) {
    bytes.resize(sizeof(float));
    std::memcpy(bytes.data(), &*p.constant, sizeof(float));
    return std::nullopt;
  }
  if (p.pair) return relayout(f, p, bytes);
  if (p.move) return regather(f, p, bytes);
  if (p.ids_below != 0) {
    int32_ids(f, *p.in, p.ids_below, bytes);
    return std::nullopt;
  }
  if (!p.stack.empty()) return encode_stacked(p, threads, x, bytes);
  if (p.source && p.way != detail::SourceWay::dequantize) return held(f, p, threads, bytes);
  const SafetensorsTensor& t = *p.in;
  const std::string& name = p.source ? p.source->output : t.name;
  const std::vector<std::uint64_t>& shape = p.source ? p.source->output_shape : t.shape;
  if (p.source) {
    x = dequantize_pair(f, *p.source, threads);  // exact: each value rounded to f32 once, as the converter does
  } else {
    detail::widen(f, t, x);
  }
  if (p.split.groups != 0) {  // its groups' slices (k_b, v_b)
    detail::take_group_rows(x, p.split.groups, p.split.group_rows, shape.back(), p.split.first, p.split.count,
                            p.split.transpose);
  }
  const std::uint64_t rows = shape[0], cols = shape.size() == 2 ? shape[1] : 1;
  if (p.rope_heads != 0) permute_rope_rows(x, rows, cols, p.rope_heads);
  take_rows(x, p.inner, p.stride, p.offset);  // a split's share: F32 biases only (plan_tensor)
  try {
    if (p.scheme) {
      QuantizeOptions o;
      o.threads = threads;
      o.tensor_name = name;
      const std::vector<std::int64_t> shape{static_cast<std::int64_t>(rows), static_cast<std::int64_t>(cols)};
      const QuantizedTensor q = quantize(x.data(), shape, *p.scheme, o);
      ggml_blocks(q.codes, q.scales, bytes);  // a 0xFF scale: NaN in the input
    } else {
      bytes = gguf_encode(p.spec.type, x);
    }
  } catch (const std::invalid_argument& e) {
    throw IoError(IoErrc::gguf_unsupported, f.path(), name, cat("as ", p.target, ": ", e.what()));
  }
  const bool lossy = p.source || p.spec.type == GgufType::Q8_0 || p.spec.type == GgufType::MXFP4 ||
                     (p.spec.type != GgufType::F32 && p.spec.type != gguf_type_of(t.dtype));
  if (!lossy) return std::nullopt;
  const std::vector<float> y = gguf_decode(p.spec.type, bytes);
  return detail::error_of(reported(name, p), p.target, x, y);
}

bool same_file(const fs::path& a, const fs::path& b) {
  std::error_code ec;
  return fs::equivalent(a, b, ec) && !ec;
}

}  // namespace

bool is_gguf_type_name(std::string_view name) {
  return std::any_of(std::begin(kTypeRecipes), std::end(kTypeRecipes),
                     [name](const TypeName& t) { return t.name == name; });
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
  std::vector<detail::Lent> lent;  // each shard's parts of pairs read in another shard: written with their weight
  std::vector<std::vector<detail::ExpertMove>> gathers;  // gpt-oss: per-expert MXFP4 weights of each shard, fused
};

GgufInput open_inputs(const Checkpoint& c, const fs::path& out, const detail::GgufModel& m, ConvertReport& report) {
  GgufInput in;
  for (std::size_t i = 0; i < c.shards.size(); ++i) {
    if (same_file(out, c.shard_path(i))) throw IoError(IoErrc::write_failed, out, "OUT is an input shard");
    // A weight's scale that the index puts in another shard is borrowed into the weight's shard, as convert to
    // safetensors does: the pair is planned there, in the weight's place (the converter reads every shard's tensors
    // into one dictionary before it pairs them).
    in.files.push_back(detail::open_input_shard(c, i));
    in.lent.push_back(detail::lent_parts(in.files.back(), c, i));
    report.input_bytes += in.files.back().header_size() + in.files.back().data_size();
  }
  in.pairs.resize(in.files.size());
  const detail::Declaration declared = detail::checkpoint_declaration(c);
  for (std::size_t i = 0; i < in.files.size(); ++i) {
    in.pairs[i] = find_pairs(in.files[i]);
    detail::read_as_declared(in.pairs[i], declared);
  }
  in.gathers.resize(in.files.size());
  if (m.arch != detail::GgufArch::gpt_oss) return in;
  for (std::size_t i = 0; i < in.files.size(); ++i) {
    try {
      in.gathers[i] = detail::gather_experts(in.files[i], in.pairs[i]);
    } catch (const std::invalid_argument& e) {
      throw IoError(IoErrc::gguf_unsupported, in.files[i].path(), e.what());
    }
  }
  return in;
}

// Shard i's output tensors, appended to `plan`: a pair's scales and the like go with its codes.
void plan_shard(const GgufInput& in, std::size_t i, const detail::GgufModel& m, const GgufRecipe& recipe, int threads,
                detail::ExpertStacker& stacker, std::vector<Planned>& plan) {
  std::set<std::string> parts;
  std::map<std::string, const QuantizedPair*> by_weight;
  for (const QuantizedPair& q : in.pairs[i]) {
    parts.insert({q.scale, q.tensor_scale});
    parts.insert(q.extras.begin(), q.extras.end());
    by_weight[q.weight] = &q;
  }
  for (const detail::ExpertMove& move : in.gathers[i]) {
    for (const QuantizedPair* q : move.sources) parts.insert(q->weight);
  }
  // By name, as convert_hf_to_gguf reads a shard (gguf-py's SafetensorsLocal sorts them).
  std::vector<const SafetensorsTensor*> by_name;
  for (const SafetensorsTensor& t : in.files[i].tensors()) by_name.push_back(&t);
  std::sort(by_name.begin(), by_name.end(), [](const auto* a, const auto* b) { return a->name < b->name; });
  for (const SafetensorsTensor* t : by_name) {
    if (parts.contains(t->name) || in.lent[i].contains(t->name)) continue;
    const auto pair = by_weight.find(t->name);
    if (pair != by_weight.end()) {
      plan_pair(in.files[i], i, *pair->second, m, recipe, threads, stacker, plan);
    } else {
      plan_tensor(in.files[i], i, *t, m, recipe, threads, stacker, plan);
    }
  }
  for (const detail::ExpertMove& move : in.gathers[i]) plan_gather(in.files[i], i, move, m, plan);
}

// DeepSeek V4: the converter writes the hash layers' routing tables, then each layer's routed experts (gate, down,
// up), before the rest (generate_extra_tensors), and needs every one of them (KeyError otherwise).
void order_v4(std::vector<Planned>& plan, const detail::GgufModel& m, const fs::path& where) {
  const auto rank = [](const Planned& p) -> std::pair<int, int> {
    const std::string& n = p.spec.name;
    static constexpr std::string_view kinds[] = {".ffn_gate_tid2eid.", ".ffn_gate_exps.", ".ffn_down_exps.",
                                                 ".ffn_up_exps."};
    for (int k = 0; k < 4; ++k) {
      if (n.find(kinds[k]) != std::string::npos) return {std::stoi(n.substr(4)), k};
    }
    return {-1, 0};
  };
  const auto key = [&](const Planned& p) {
    const auto [layer, kind] = rank(p);
    return layer < 0 ? std::tuple{2, 0, 0} : std::tuple{kind == 0 ? 0 : 1, layer, kind};
  };
  std::stable_sort(plan.begin(), plan.end(), [&](const Planned& a, const Planned& b) { return key(a) < key(b); });
  std::set<std::string> names;
  for (const Planned& p : plan) names.insert(p.spec.name);
  for (std::uint32_t l = 0; l < m.n_layer; ++l) {
    for (const char* k : {"ffn_gate_tid2eid", "ffn_gate_exps", "ffn_down_exps", "ffn_up_exps"}) {
      const bool needed = std::string_view(k) != "ffn_gate_tid2eid" || l < m.n_hash_layers;
      if (needed && !names.contains(cat("blk.", l, ".", k, ".weight"))) {
        detail::gguf_unsupported(
            where, cat("no tensor for blk.", l, ".", k, ".weight (layers.", l, ".ffn.",
                       k[9] == 't' ? "gate.tid2eid" : "experts", "): llama.cpp's converter needs it for DeepSeek V4"));
      }
    }
  }
}

// The tokenizer's metadata (tokenizer.ggml.model "none" with --no-tokenizer), its token count checked against the
// embedding's rows (llama.cpp's n_vocab is the token count, and token_embd must have that many rows).
std::vector<std::pair<std::string, GgufValue>> tokenizer_metadata(const Checkpoint& c, const Json& config,
                                                                  const detail::GgufModel& m,
                                                                  const std::vector<Planned>& plan,
                                                                  GgufTokenizerMode mode) {
  if (mode == GgufTokenizerMode::none) return {{"tokenizer.ggml.model", GgufValue::of_string("none")}};
  std::optional<detail::GgufTokenizer> tok =
      detail::gguf_tokenizer(c.directory.empty() ? fs::path(".") : c.directory, config, m);
  if (!tok) {
    throw IoError(IoErrc::gguf_no_tokenizer, c.directory.empty() ? fs::path(".") : c.directory,
                  "no tokenizer.json or tokenizer.model beside the checkpoint: llama.cpp loads a GGUF without a "
                  "vocabulary but none of its text tools runs; add the tokenizer files, or pass --no-tokenizer to "
                  "write tokenizer.ggml.model \"none\" on purpose");
  }
  for (const Planned& p : plan) {
    if (p.spec.name == "token_embd.weight" && p.spec.dims.size() == 2 && p.spec.dims[1] != tok->tokens) {
      throw IoError(IoErrc::gguf_tokenizer, tok->file,
                    cat(tok->tokens, " tokens, but token_embd (", p.in->name, ") has ", p.spec.dims[1],
                        " rows: llama.cpp needs one row per token"));
    }
  }
  return std::move(tok->metadata);
}

// llama.cpp cannot load a model without its embeddings and final norm.
void check_needed(const Checkpoint& c, const std::vector<Planned>& plan) {
  std::set<std::string> names;
  for (const Planned& p : plan) names.insert(p.spec.name);
  for (const char* needed : {"token_embd.weight", "output_norm.weight"}) {
    if (!names.contains(needed)) {
      detail::gguf_unsupported(c.index_path.value_or(c.directory),
                               cat("no tensor for ", needed, " (model.embed_tokens.weight / model.norm.weight)"));
    }
  }
}

// The input tensors of p released (their pages may go); their bytes.
std::uint64_t release_inputs(const std::vector<SafetensorsFile>& files, const Planned& p) {
  const SafetensorsFile& f = files[p.shard];
  std::uint64_t bytes = 0;
  for (const detail::StackSource& s : p.stack) {
    for (const SafetensorsTensor* t : {s.tensor, s.pair ? files[s.shard].find(s.pair->scale) : nullptr}) {
      if (t == nullptr) continue;
      files[s.shard].release(*t);
      bytes += t->end - t->begin;
    }
  }
  std::vector<const SafetensorsTensor*> inputs{p.in};
  if (!p.stack.empty()) inputs.clear();
  if (p.pair) inputs.push_back(f.find(p.pair->scale));
  if (p.source) inputs.push_back(f.find(p.source->scale));
  if (p.move) {
    inputs.clear();
    for (const QuantizedPair* q : p.move->sources) inputs.insert(inputs.end(), {f.find(q->weight), f.find(q->scale)});
  }
  for (const SafetensorsTensor* t : inputs) {
    f.release(*t);
    bytes += t->end - t->begin;
  }
  return bytes;
}

// general.file_type: the recipe's, or with --keep-quantized and a float type the quantized type the source kept,
// as llama.cpp's converter says MOSTLY_NVFP4 / MOSTLY_MXFP4_MOE for those sources.
std::uint32_t written_file_type(const GgufRecipe& r, const std::vector<Planned>& plan) {
  if (r.keep_quantized && r.type != GgufType::Q8_0) {
    constexpr std::pair<GgufType, std::uint32_t> kept[] = {
        {GgufType::NVFP4, 39}, {GgufType::MXFP4, 38}, {GgufType::Q4_0, 2}, {GgufType::Q4_1, 3}};
    for (const auto& [type, ftype] : kept) {
      if (std::any_of(plan.begin(), plan.end(), [type](const Planned& p) { return p.spec.type == type; })) return ftype;
    }
  }
  return detail::gguf_file_type(r);
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
    if (std::optional<TensorReport> row = encode(in.files, p, threads, x, bytes)) {
      report.tensors.push_back(std::move(*row));
    }
    writer.write_tensor(k, bytes);
    // The gate of a split (up reads the same tensors next), or a constant (it reads none).
    if (p.keep_input || p.constant) continue;
    done += release_inputs(in.files, p);
    if (options.progress) options.progress(std::min(done, total), total);
  }
}

}  // namespace

ConvertReport convert_to_gguf(const fs::path& in, const fs::path& out, const GgufRecipe& recipe,
                              const ConvertOptions& options, GgufTokenizerMode tokenizer) {
  if (recipe.type.has_value() == recipe.recipe.has_value()) {
    throw std::invalid_argument("convert_to_gguf: a GgufRecipe has a type or a recipe (gguf_recipe makes one)");
  }
  if ((recipe.fp8_as_q8 || recipe.keep_quantized) && !recipe.type) {
    throw std::invalid_argument("--fp8-as-q8 and --keep-quantized go with --recipe f32, f16, bf16 or q8_0");
  }
  if (out.extension() != ".gguf") {
    throw IoError(IoErrc::write_failed, out, "--format gguf writes one file: OUT must be a path ending in .gguf");
  }
  if (detail::is_gguf_input(in)) return detail::requantize_gguf(in, out, recipe, options, tokenizer);
  const Checkpoint c = open_checkpoint(in);
  const Json config = read_config(c);
  const detail::GgufModel m = detail::gguf_model(config, *c.config_path());
  if (recipe.recipe && m.arch != detail::GgufArch::llama && m.arch != detail::GgufArch::gpt_oss) {
    detail::gguf_unsupported(*c.config_path(),
                             cat("--recipe ", recipe.name, ": --format gguf writes ", detail::gguf_arch_name(m.arch),
                                 " with --recipe f32, f16, bf16 or q8_0 (as llama.cpp's --outtype)"));
  }

  // Everything planned and checked before the file is created.
  ConvertReport report;
  GgufInput input = open_inputs(c, out, m, report);
  std::vector<Planned> plan;
  const int threads = detail::worker_count(options.threads);
  detail::ExpertStacker stacker(m.n_expert);
  for (std::size_t i = 0; i < input.files.size(); ++i) plan_shard(input, i, m, recipe, threads, stacker, plan);
  stacker.check_complete(c.index_path.value_or(c.directory));
  if (m.arch == detail::GgufArch::deepseek4) order_v4(plan, m, c.index_path.value_or(c.directory));
  check_needed(c, plan);
  std::vector<std::pair<std::string, GgufValue>> tok = tokenizer_metadata(c, config, m, plan, tokenizer);
  std::vector<GgufTensorSpec> specs;
  for (const Planned& p : plan) specs.push_back(p.spec);
  std::error_code ec;
  const fs::path dir = fs::weakly_canonical(c.directory.empty() ? fs::path(".") : c.directory, ec);
  fs::create_directories(out.parent_path().empty() ? fs::path(".") : out.parent_path());
  // DeepSeek V4: MOSTLY_MXFP4_MOE (38), which the converter writes whatever --outtype says.
  const std::uint32_t file_type = m.arch == detail::GgufArch::deepseek4 ? 38 : written_file_type(recipe, plan);
  std::vector<std::pair<std::string, GgufValue>> metadata =
      detail::gguf_metadata(m, file_type, dir.filename().string());
  metadata.insert(metadata.end(), std::make_move_iterator(tok.begin()), std::make_move_iterator(tok.end()));
  GgufWriter writer(out, std::move(metadata), std::move(specs));
  write_planned(input, plan, options, writer, report);
  writer.commit();
  report.output_bytes = writer.bytes_total();
  report.shards_written = 1;
  return report;
}

}  // namespace mf::io
