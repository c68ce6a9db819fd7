// convert: a recipe (and --format) turned into a plan for each shard: which tensors are quantized into which scheme
// and written under which dialect's names, which quantized pairs of IN are re-laid out losslessly (or refused), and
// which are kept; convert_run.cc carries the plan out.
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include "convert_run.h"
#include "deepseek_release.h"
#include "dialect_pairs.h"
#include "dialect_writer.h"
#include "expert_relayout.h"
#include "int4_relayout.h"
#include "lossless_convert.h"
#include "quantization_rule.h"
#include "../io/file.h"
#include "minifloat/checkpoint_commands.h"
#include "minifloat/checkpoint_tensors.h"
#include "tensor_values.h"

namespace mf::io {
namespace {

namespace fs = std::filesystem;
using detail::cat;
using detail::is_float;
using detail::Planner;
using detail::ScaleRecode;
using detail::Step;
using detail::widen;

// A scheme target the packed layout cannot hold whole-byte rows for (odd e2m1 rows) stays as it is.
bool fits(const Scheme& s, std::uint64_t cols) {
  const int bits = s.element.bits();
  return bits == 8 || (bits == 4 && cols % 2 == 0) || (bits == 6 && cols % 4 == 0);
}

// The name a dialect writes scheme `s` under: the recipe's one kind, or (compressed-tensors, whose config groups hold
// several) the scheme's own.
std::optional<detail::WrittenKind> step_kind(WriteFormat format, std::optional<detail::WrittenKind> kind,
                                             const Scheme& s) {
  return format == WriteFormat::compressed_tensors ? detail::ct_kind_of(s) : kind;
}

// In a dialect, a weight whose shape does not divide into blocks stays as it is (and is listed as unquantized): the
// readers have no rule for minifloat's padded last block (transformers infers the block size from the scale grid).
void set_dialect(Step& s, WriteFormat format, std::optional<detail::WrittenKind> kind, const SafetensorsFile& f) {
  if (format == WriteFormat::deepseek) s.format = format;  // minifloat's form, FP4 codes as I8
  if (!s.scheme || format == WriteFormat::minifloat || format == WriteFormat::deepseek) return;
  if (s.in->shape[0] % static_cast<std::uint64_t>(s.scheme->block_rows) != 0 ||
      s.in->shape[1] % static_cast<std::uint64_t>(s.scheme->block_cols) != 0) {
    s.scheme.reset();
    s.target = "keep";
    return;
  }
  detail::check_module_weight(format, f.path(), s.in->name);
  s.dialect = step_kind(format, kind, *s.scheme);
  s.format = format;
}

// gpt-oss quantizes the MoE experts only: the 3-D transformers parameters mlp.experts.gate_up_proj [E, H, 2I]
// (gate and up interleaved along the last dim, as gpt-oss keeps them) and mlp.experts.down_proj [E, I, H], with the
// scheme the recipe gives that name; every other tensor stays as it is (modules_to_not_convert lists them).
bool gpt_oss_expert(const SafetensorsTensor& t) {
  return t.shape.size() == 3 && is_float(t.dtype) &&
         (t.name.ends_with(".mlp.experts.gate_up_proj") || t.name.ends_with(".mlp.experts.down_proj"));
}

Step gpt_oss_step(const SafetensorsTensor& t, const Recipe& recipe, std::optional<detail::WrittenKind> kind,
                  const SafetensorsFile& f) {
  Step s{&t, "keep", std::nullopt};
  if (!gpt_oss_expert(t)) return s;
  const std::string target = recipe.target_for(t.name, 2, true);
  s.scheme = target_scheme(recipe, target);
  if (!s.scheme) return s;
  if (t.shape[1] % 32 != 0) {
    throw IoError(IoErrc::invalid_shape, f.path(), t.name,
                  cat("--format gpt-oss: the input dim ", t.shape[1],
                      " is not whole MXFP4 blocks of 32 (transformers' "
                      "loader expects every expert quantized)"));
  }
  s.target = target;
  s.dialect = kind;
  s.format = WriteFormat::gpt_oss;
  s.experts = true;
  return s;
}

// compressed-tensors' nvfp4 global scale is checked for every tensor before anything is written.
void check_global_scales(const fs::path& in, const ConvertOptions& o, const Planner& plan) {
  const Checkpoint c = open_checkpoint(in);
  std::vector<float> x;
  for (std::size_t i = 0; i < c.shards.size(); ++i) {
    if (!shard_is_mine(i, o.job_index, o.job_count)) continue;
    const SafetensorsFile f = detail::open_input_shard(c, i);
    std::vector<QuantizedPair> pairs;
    for (const Step& s : detail::plan_shard(c, i, f, plan, pairs)) {
      // a re-laid-out pair was checked when planned, a cast one by check_casts
      if (!s.scheme || !s.scheme->tensor_scale || s.relayout || s.cast) continue;
      if (s.pair) {
        x = dequantize_pair(f, *s.pair);  // requantized: its exact values
      } else {
        widen(f, *s.in, x);
      }
      detail::check_global_scale(*s.scheme, x, s.pair ? s.pair->output : s.in->name);
      f.release(*s.in);
    }
  }
}

[[noreturn]] void refuse_pair(const SafetensorsFile& f, const QuantizedPair& p, const std::string& target,
                              WriteFormat format) {
  if (format == WriteFormat::gpt_oss && p.form != PairForm::blocks && !detail::expert_weight(p.output)) {
    throw std::invalid_argument(
        cat(f.path().string(), ": tensor '", p.weight, "' is already quantized (", to_string(p.form), " pair, ",
            p.scheme_name,
            ") but is no MoE expert: --format gpt-oss quantizes only experts (every other weight "
            "unquantized, as gpt-oss's modules_to_not_convert says), so it has no place there; dequantize it first "
            "(minifloat dequantize), or write it as minifloat, compressed-tensors, modelopt or deepseek; nothing was "
            "written"));
  }
  throw std::invalid_argument(
      cat(f.path().string(), ": tensor '", p.weight, "' is already quantized (", to_string(p.form), " pair, ",
          p.scheme_name, ") and the recipe's target for '", p.output, "' is ", target, ": --format ", to_string(format),
          " cannot hold it as it is (convert re-lays out MXFP4, including gpt-oss's expert blocks "
          "and per-expert weights, MXFP8, NVFP4 and FP8 blocks with F32 or power-of-two scales, in whole blocks; "
          "gpt-oss's expert blocks go to MXFP4 only; integer pairs packed in words go to compressed-tensors, awq and "
          "gptq), and never copies it under names the format does not read; "
          "give it a scheme target, or bf16 / f32 to dequantize it; nothing was written"));
}

// A step writing `move`'s outputs in `format` (the format's names checked for each per-expert weight).
Step move_step(const SafetensorsFile& f, const QuantizedPair& first, const std::string& target, const Scheme& want,
               detail::ExpertMove move, WriteFormat format, std::optional<detail::WrittenKind> kind) {
  Step s{f.find(first.weight), target, want, &first};
  s.relayout = true;
  s.format = format;
  if (format != WriteFormat::minifloat && format != WriteFormat::deepseek && format != WriteFormat::gpt_oss) {
    for (const detail::MovedTensor& t : move.outputs) detail::check_module_weight(format, f.path(), t.name);
    s.dialect = step_kind(format, kind, want);
  }
  s.move = std::make_shared<const detail::ExpertMove>(std::move(move));
  return s;
}

// gpt-oss's MXFP4 experts (a blocks pair) whose target is MXFP4: kept as they are for --format gpt-oss, else split
// into each expert's weights in the format's MXFP4 form; any other target would be a requantization: refused.
Step plan_blocks(const SafetensorsFile& f, const QuantizedPair& p, const Recipe& recipe, WriteFormat format,
                 std::optional<detail::WrittenKind> kind) {
  const std::string target = recipe.target_for(p.output, 2, true);
  const std::optional<Scheme> want = target_scheme(recipe, target);
  if (!detail::is_mxfp4(want) || !p.extras.empty()) refuse_pair(f, p, target, format);
  return move_step(f, p, target, *want, detail::split_experts(f, p, format == WriteFormat::gpt_oss), format, kind);
}

// --format gpt-oss: each layer's per-expert MXFP4 weights gathered into gpt-oss's fused blocks, one step per fused
// tensor (at its first source's place); `moved`: every source tensor but those first ones.
std::vector<Step> plan_gathers(const SafetensorsFile& f, const std::vector<QuantizedPair>& pairs, const Recipe& recipe,
                               std::set<std::string>& moved) {
  std::vector<Step> steps;
  for (detail::ExpertMove& m : detail::gather_experts(f, pairs)) {
    const std::string target = recipe.target_for(m.reported, 2, true);
    const std::optional<Scheme> want = target_scheme(recipe, target);
    for (const QuantizedPair* p : m.sources) {
      if (!detail::is_mxfp4(want) || !p->extras.empty()) refuse_pair(f, *p, target, WriteFormat::gpt_oss);
      moved.insert({p->weight, p->scale});
    }
    moved.erase(m.sources[0]->weight);
    const QuantizedPair& first = *m.sources[0];
    steps.push_back(move_step(f, first, target, *want, std::move(m), WriteFormat::gpt_oss, std::nullopt));
  }
  return steps;
}

// The recipe's scheme and a pair's: alike when only where the block scales are kept (F32 or E8M0) may differ.
bool alike(const std::optional<Scheme>& want, const std::optional<Scheme>& held) {
  return want && held && want->element.format == held->element.format && !want->element.is_int() &&
         want->block_rows == held->block_rows && want->block_cols == held->block_cols &&
         want->tensor_scale == held->tensor_scale;
}

// Alike and with the very scale bytes the target writes (E8M0; NVFP4's e4m3 with a second level; F32 stored as F32).
bool same_scales(const Scheme& want, const Scheme& held, DType stored) {
  return want.scale_format == held.scale_format &&
         (want.scale_format == &ue8m0 || (want.scale_format == &ue4m3 && want.tensor_scale) ||
          (want.scale_format == &f32 && stored == DType::F32));
}

// Alike FP8 block scales the target keeps the other way: F32 to E8M0 or back, BF16 / F16 to F32 (recode_scales).
ScaleRecode recode_between(const Scheme& want, const Scheme& held, DType stored) {
  if (want.tensor_scale) return ScaleRecode::none;
  if (want.scale_format == &f32 && held.scale_format == &f32 && (stored == DType::BF16 || stored == DType::F16)) {
    return ScaleRecode::widen;
  }
  if (want.scale_format == &ue8m0 && held.scale_format == &f32 && stored == DType::F32) return ScaleRecode::to_ue8m0;
  if (want.scale_format == &f32 && held.scale_format == &ue8m0 && (stored == DType::F8_E8M0 || stored == DType::U8)) {
    return ScaleRecode::to_f32;
  }
  return ScaleRecode::none;
}

// The second-level scale as `format` stores it: compressed-tensors' divisor, or a multiplier (ModelOpt, minifloat),
// converted only where that is exact.
float second_level(const SafetensorsFile& f, const QuantizedPair& p, WriteFormat format) {
  const float stored = detail::pair_second_scale(f, p);
  if (p.form == PairForm::packed_global && format == WriteFormat::compressed_tensors) return stored;
  const float t = p.form == PairForm::packed_global ? detail::tensor_scale_of_global(stored, p.weight) : stored;
  return format == WriteFormat::minifloat ? t : detail::second_scale_written(format, t, p.output);
}

bool whole_blocks(const QuantizedPair& p, const Scheme& s) {
  return p.output_shape.size() == 2 && p.output_shape[0] % static_cast<std::uint64_t>(s.block_rows) == 0 &&
         p.output_shape[1] % static_cast<std::uint64_t>(s.block_cols) == 0;
}

// Pair `p` re-laid out as `want` in `format` (its scales recoded, its second level converted, where exact).
Step relaid_step(const SafetensorsFile& f, const QuantizedPair& p, const std::string& target, const Scheme& want,
                 ScaleRecode recode, WriteFormat format, std::optional<detail::WrittenKind> kind) {
  const std::optional<detail::WrittenKind> dialect =
      format == WriteFormat::minifloat ? std::nullopt : step_kind(format, kind, want);
  // compressed-tensors keeps FP8 block scales as F32: ue8m0 ones go over exactly.
  if (dialect == detail::WrittenKind::fp8_block && want.scale_format == &ue8m0) recode = ScaleRecode::to_f32;
  if (recode != ScaleRecode::none)
    detail::recode_scales(f, p, recode, target);  // refused here, before anything is written
  Step s{f.find(p.weight), target, want, &p};
  s.relayout = true;
  s.recode = recode;
  if (want.tensor_scale) s.second = second_level(f, p, format);
  if (format != WriteFormat::minifloat) {
    detail::check_module_weight(format, f.path(), p.output);
    s.dialect = dialect;
    s.format = format;
  }
  return s;
}

// Pair `p` dequantized exactly (each value code x scale, one rounding to f32) and quantized into `want`, or written
// as plain `target` ("bf16", "f32"): what convert does with a pair whose target is another scheme, or no scheme.
Step requantized_step(const SafetensorsFile& f, const QuantizedPair& p, const std::string& target,
                      const std::optional<Scheme>& want, WriteFormat format, std::optional<detail::WrittenKind> kind) {
  Step s{f.find(p.weight), target, want, &p};
  if (!want) return s;
  if (p.output_shape.size() != 2 || !fits(*want, p.output_shape[1])) {
    throw std::invalid_argument(cat(f.path().string(), ": tensor '", p.weight, "' (", to_string(p.form), " pair, ",
                                    p.scheme_name, ") cannot be requantized as ", target, ": its shape has no whole ",
                                    want->element.bits(), "-bit rows of that scheme; nothing was written"));
  }
  if (format != WriteFormat::minifloat && format != WriteFormat::deepseek) {
    if (p.output_shape[0] % static_cast<std::uint64_t>(want->block_rows) != 0 ||
        p.output_shape[1] % static_cast<std::uint64_t>(want->block_cols) != 0) {
      throw std::invalid_argument(cat(f.path().string(), ": tensor '", p.weight, "' cannot be requantized as ", target,
                                      " in --format ", to_string(format),
                                      ": its shape is not whole blocks, which "
                                      "that format's readers need; nothing was written"));
    }
    detail::check_module_weight(format, f.path(), p.output);
    s.dialect = step_kind(format, kind, *want);
  }
  if (format == WriteFormat::deepseek) s.format = format;
  if (s.dialect) s.format = format;
  return s;
}

// An integer pair kept ("keep") in a format that packs integers (compressed-tensors, awq, gptq): re-laid out with
// its numbers (int4_relayout.h). Into awq or gptq, any other pair is refused: they hold nothing else.
std::optional<Step> int_pair_step(const SafetensorsFile& f, const QuantizedPair& p, const Recipe& recipe,
                                  WriteFormat format) {
  detail::IntPacking to{};
  if (!detail::int_packing_of(format, to)) return std::nullopt;
  const std::string target = recipe.target_for(p.output, 2, true);
  const bool packed_int = p.form == PairForm::integer && f.find(p.weight)->dtype == DType::I32;
  if (packed_int && target == "keep") {
    detail::check_module_weight(format, f.path(), p.output);
    Step s{f.find(p.weight), target, std::nullopt, &p};
    s.format = format;
    s.int_relayout = std::make_shared<const detail::IntRelayout>(detail::plan_int_relayout(f, p, to));
    return s;
  }
  if (format == WriteFormat::compressed_tensors) return std::nullopt;
  if (target == "bf16" || target == "f32") return Step{f.find(p.weight), target, std::nullopt, &p};  // dequantized
  throw std::invalid_argument(cat(f.path().string(), ": tensor '", p.weight, "' (", to_string(p.form), " pair, ",
                                  p.scheme_name, ", target ", target, "): --format ", to_string(format),
                                  " holds integer pairs packed in words (compressed-tensors pack-quantized, AutoAWQ, "
                                  "AutoGPTQ) kept as they are, and nothing else; give it bf16 / f32 to dequantize it, "
                                  "or write it as minifloat or compressed-tensors; nothing was written"));
}

// --lossless: a pair whose target is another scheme is cast into it (checked castable here, its blocks before
// anything is written: check_casts); f32 dequantizes it exactly (bf16 would round: refused in plan_pair).
Step lossless_step(const SafetensorsFile& f, const QuantizedPair& p, const std::string& target,
                   const std::optional<Scheme>& want, WriteFormat format, std::optional<detail::WrittenKind> kind) {
  if (want) detail::check_castable(f, p, *want, target);
  Step s = requantized_step(f, p, target, want, format, kind);
  s.cast = want.has_value();
  return s;
}

// A pair already in IN, by its target:
//   - the very scheme it holds ("keep" counts as that): its codes and block scales are the bytes the format writes
//     (MXFP4 and MXFP8 with one E8M0 scale per 32 elements; NVFP4's e4m3 scales per 16; FP8 blocks with F32 scales
//     stored as F32, or F32 <-> E8M0 where exact), so it is re-laid out under the format's names with no detour
//     through floats, or (minifloat's own forms written as minifloat's) kept as it is; NVFP4's second level goes over
//     as the format stores it, only where that is exact;
//   - another scheme: dequantized exactly first, then quantized into it (requantized_step); its activation scales
//     describe the old scheme and are left out;
//   - bf16 or f32: dequantized into that dtype.
// With --lossless, another scheme is reached by a lossless cast instead (lossless_step), and bf16 is refused.
// What a format cannot hold (gpt-oss's non-expert weights, a re-layout its names do not fit) is refused before
// anything is written.
std::optional<Step> plan_pair(const SafetensorsFile& f, const QuantizedPair& p, const Recipe& recipe,
                              WriteFormat format, std::optional<detail::WrittenKind> kind, bool lossless) {
  if (lossless && recipe.target_for(p.output, 2, true) == "bf16") {
    detail::refuse_rounding(f, p.weight, f.find(p.weight)->dtype, "bf16", true);  // integer pairs too
  }
  if (std::optional<Step> s = int_pair_step(f, p, recipe, format)) return s;
  if (p.form == PairForm::blocks) return plan_blocks(f, p, recipe, format, kind);
  const std::string target = recipe.target_for(p.output, 2, true);
  const std::optional<Scheme> held = detail::held_scheme(p);
  const bool keep = target == "keep";
  const std::optional<Scheme> want = keep ? held : target_scheme(recipe, target);
  const DType stored = f.find(p.scale)->dtype;
  const bool is_alike = alike(want, held);
  const ScaleRecode recode = is_alike ? recode_between(*want, *held, stored) : ScaleRecode::none;
  // minifloat's own forms (a scale stored as one value, [] or [1], is not: its grid is [1, 1] there).
  const bool own = (p.form == PairForm::deepseek && f.find(p.scale)->shape.size() == 2) || p.form == PairForm::nvfp4;
  const bool bytes_fit = is_alike && (same_scales(*want, *held, stored) || recode != ScaleRecode::none);
  // minifloat's own forms stay as they are in minifloat's output when they hold the target's bytes.
  if (format == WriteFormat::minifloat && own && bytes_fit && recode == ScaleRecode::none) return std::nullopt;
  if (format == WriteFormat::gpt_oss) refuse_pair(f, p, target, format);  // experts are gathered in plan_gathers
  // DeepSeek's config says what every pair of its output is (check_deepseek holds the recipe's schemes to it).
  if (format == WriteFormat::deepseek && keep &&
      !(held && recipe.hf_quantization && detail::deepseek_config_holds(*recipe.hf_quantization, *held))) {
    refuse_pair(f, p, target, format);
  }
  if (bytes_fit && whole_blocks(p, *want))
    return relaid_step(f, p, keep ? held->name : target, *want, recode, format, kind);
  if (keep) refuse_pair(f, p, target, format);
  if (lossless) return lossless_step(f, p, target, want, format, kind);
  return requantized_step(f, p, target, want, format, kind);
}

// The scheme name every quantized tensor gets in `format` (nullopt for minifloat's and DeepSeek's own forms), after
// refusing a recipe the format cannot express, before anything is read.
std::optional<detail::WrittenKind> written_kind(const Recipe& recipe, WriteFormat format) {
  if (format == WriteFormat::gguf) {
    throw std::invalid_argument("convert_checkpoint writes safetensors checkpoints: GGUF is convert_to_gguf's");
  }
  if (format == WriteFormat::deepseek) detail::check_deepseek(recipe);
  if (format == WriteFormat::deepseek || format == WriteFormat::minifloat) return std::nullopt;
  if (format == WriteFormat::awq || format == WriteFormat::gptq) {
    detail::check_int_recipe(recipe, format);
    return std::nullopt;
  }
  if (format == WriteFormat::compressed_tensors && detail::keeps_only(recipe)) return std::nullopt;
  return detail::recipe_kind(recipe, format);
}

// Whether `t` is one of f's own tensors, not one borrowed from another shard (borrow_partners).
bool own(const SafetensorsFile& f, const SafetensorsTensor& t) {
  const std::vector<SafetensorsTensor>& all = f.tensors();
  return !std::less<>()(&t, all.data()) && std::less<>()(&t, all.data() + all.size());
}

// One shard's plan under a recipe and format.
class RecipePlan {
 public:
  RecipePlan(const Recipe& recipe, WriteFormat format, std::optional<detail::WrittenKind> kind, bool release,
             detail::Declaration declared, bool lossless)
      : recipe_(recipe),
        format_(format),
        kind_(kind),
        release_(release),
        declared_(std::move(declared)),
        lossless_(lossless) {}

  std::vector<Step> operator()(const SafetensorsFile& f, std::vector<QuantizedPair>& pairs) const {
    pairs = find_pairs(f);
    detail::read_as_declared(pairs, declared_);
    Pairs planned;
    plan_pairs(f, pairs, planned);
    std::vector<Step> steps;
    for (const SafetensorsTensor& t : f.tensors()) {
      if (planned.moved.contains(t.name)) continue;  // written with its codes (or another expert's)
      if (const auto it = planned.relaid.find(t.name); it != planned.relaid.end()) {
        steps.push_back(it->second);
      } else {
        steps.push_back(tensor_step(f, t, planned.parts.contains(t.name)));
      }
      // A kept pair's parts that the index puts in another shard: written here, with their weight.
      if (const auto it = planned.borrowed.find(t.name); it != planned.borrowed.end()) {
        for (const SafetensorsTensor* part : it->second) steps.push_back(tensor_step(f, *part, true));
      }
    }
    if (release_) detail::mark_release_steps(f, steps);
    return steps;
  }

 private:
  struct Pairs {
    std::set<std::string> parts;         // scales of pairs kept as they are: data of their weight, never weights
    std::set<std::string> moved;         // written by the step of another tensor
    std::map<std::string, Step> relaid;  // by the (first) pair's weight
    std::map<std::string, std::vector<const SafetensorsTensor*>> borrowed;  // kept pairs' parts, by weight
  };

  void plan_pairs(const SafetensorsFile& f, const std::vector<QuantizedPair>& pairs, Pairs& out) const {
    if (format_ == WriteFormat::gpt_oss) {
      for (Step& s : plan_gathers(f, pairs, recipe_, out.moved)) out.relaid.emplace(s.in->name, std::move(s));
    }
    for (const QuantizedPair& p : pairs) {
      if (out.relaid.contains(p.weight) || out.moved.contains(p.weight)) continue;  // gathered
      if (std::optional<Step> s = plan_pair(f, p, recipe_, format_, kind_, lossless_)) {
        out.relaid.emplace(p.weight, std::move(*s));
        out.moved.insert({p.scale, p.tensor_scale});
        out.moved.insert(p.extras.begin(), p.extras.end());  // requantized or dequantized: they held the old scheme
        continue;
      }
      out.parts.insert({p.scale, p.tensor_scale});
      out.parts.insert(p.extras.begin(), p.extras.end());
      std::vector<std::string> names = p.extras;
      names.insert(names.begin(), {p.scale, p.tensor_scale});
      for (const std::string& n : names) {
        if (const SafetensorsTensor* t = n.empty() ? nullptr : f.find(n); t != nullptr && !own(f, *t)) {
          out.borrowed[p.weight].push_back(t);
        }
      }
    }
  }

  Step tensor_step(const SafetensorsFile& f, const SafetensorsTensor& t, bool part) const {
    if (format_ == WriteFormat::gpt_oss) return gpt_oss_step(t, recipe_, kind_, f);
    Step s{&t, part ? "keep" : recipe_.target_for(t.name, t.shape.size(), is_float(t.dtype)), std::nullopt};
    s.scheme = target_scheme(recipe_, s.target);
    if (s.scheme && !fits(*s.scheme, t.shape[1])) {
      s.scheme.reset();
      s.target = "keep";
    }
    set_dialect(s, format_, kind_, f);
    if (lossless_ && (s.scheme || (s.target == "bf16" && t.dtype != DType::BF16))) {
      detail::refuse_rounding(f, t.name, t.dtype, s.target, false);
    }
    return s;
  }

  const Recipe& recipe_;
  const WriteFormat format_;
  const std::optional<detail::WrittenKind> kind_;
  const bool release_;            // --format deepseek on DeepSeek's bare names: the release form
  detail::Declaration declared_;  // what the files cannot tell (GPTQ v2's zero points)
  const bool lossless_;           // --lossless: pairs cast between schemes, nothing rounded
};

// --format gpt-oss: a checkpoint labelled mxfp4 with no expert quantized would load as garbage: refused.
void check_gpt_oss_experts(const fs::path& in, const Planner& plan, const Recipe& recipe) {
  const Checkpoint c = open_checkpoint(in);
  std::size_t experts = 0;
  for (std::size_t i = 0; i < c.shards.size(); ++i) {
    const SafetensorsFile f = detail::open_input_shard(c, i);
    std::vector<QuantizedPair> pairs;
    for (const Step& s : detail::plan_shard(c, i, f, plan, pairs)) experts += s.experts || s.move ? 1 : 0;
  }
  if (experts == 0) {
    throw IoError(IoErrc::unmatched_pattern, c.index_path.value_or(c.directory),
                  cat("--format gpt-oss quantizes MoE experts (3-D *.mlp.experts.gate_up_proj and down_proj, as "
                      "transformers' GptOss model holds them) that recipe ",
                      recipe.name, " quantizes: none found; nothing was written"));
  }
}

// AWQ's and GPTQ's config has one width and group size: every integer pair re-laid out there shares them (a job
// array's job sees only its shards).
void check_int_configs(const fs::path& in, const ConvertOptions& o, const Planner& plan, WriteFormat format) {
  const Checkpoint c = open_checkpoint(in);
  std::vector<detail::IntRelayout> planned;
  for (std::size_t i = 0; i < c.shards.size(); ++i) {
    if (!shard_is_mine(i, o.job_index, o.job_count)) continue;
    const SafetensorsFile f = detail::open_input_shard(c, i);
    std::vector<QuantizedPair> pairs;
    for (const Step& s : detail::plan_shard(c, i, f, plan, pairs)) {
      if (s.int_relayout) planned.push_back(*s.int_relayout);
    }
  }
  detail::check_one_int_config(format, planned);
}

}  // namespace

ConvertReport convert_checkpoint(const fs::path& in, const fs::path& out, const Recipe& recipe,
                                 const ConvertOptions& options) {
  const WriteFormat format = options.format;
  if (options.allow_inexact && !options.lossless) throw std::invalid_argument("--allow-inexact goes with --lossless");
  if (options.lossless && format == WriteFormat::gpt_oss) {
    throw std::invalid_argument(
        "--lossless with --format gpt-oss: gpt-oss quantizes its experts from floats; convert --lossless casts "
        "pairs that are already quantized (MXFP4 -> NVFP4, MXFP4 -> FP8 tiles, FP8 tiles -> MXFP8)");
  }
  const std::optional<detail::WrittenKind> kind = written_kind(recipe, format);  // refused before anything
  const bool release = format == WriteFormat::deepseek && detail::deepseek_release_form(open_checkpoint(in), recipe);
  const Planner plan =
      RecipePlan(recipe, format, kind, release, detail::checkpoint_declaration(open_checkpoint(in)), options.lossless);
  return detail::run_plan(in, out, options, plan, false, &recipe, [&] {
    if (options.lossless) detail::check_casts(in, options, plan);  // every block, before anything is written
    if (format == WriteFormat::compressed_tensors) check_global_scales(in, options, plan);  // nvfp4 targets only
    if (format == WriteFormat::gpt_oss && options.job_count == 1) check_gpt_oss_experts(in, plan, recipe);
    if (format == WriteFormat::awq || format == WriteFormat::gptq) check_int_configs(in, options, plan, format);
  });
}

}  // namespace mf::io
