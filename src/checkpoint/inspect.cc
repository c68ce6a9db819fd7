// inspect: what a checkpoint holds, tensor by tensor, with the schemes read off tensor pairs and optional statistics.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <deque>
#include <iterator>
#include <map>
#include <memory>
#include <utility>

#include "../io/file.h"
#include "minifloat/checkpoint_commands.h"
#include "minifloat/checkpoint_tensors.h"
#include "minifloat/codec.h"
#include "minifloat/remote.h"
#include "parallel.h"
#include "quantization_rule.h"

namespace mf::io {
namespace {

using detail::cat;

std::uint64_t elements(const std::vector<std::uint64_t>& shape) {
  std::uint64_t n = 1;
  for (const std::uint64_t d : shape) n *= d;
  return n;
}

template <class Get>
void add_stats(TensorInfo& info, std::size_t n, Get get) {
  double lo = INFINITY, hi = -INFINITY, sum = 0, sq = 0;
  std::uint64_t finite = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double v = get(i);
    if (!std::isfinite(v)) {
      ++info.nonfinite;
      continue;
    }
    lo = std::min(lo, v);
    hi = std::max(hi, v);
    sum += v;
    sq += v * v;
    ++finite;
  }
  if (finite == 0) return;
  info.min = lo;
  info.max = hi;
  info.mean = sum / static_cast<double>(finite);
  info.rms = std::sqrt(sq / static_cast<double>(finite));
}

void plain_stats(TensorInfo& info, const SafetensorsFile& f, const SafetensorsTensor& t) {
  const std::span<const std::byte> b = f.bytes(t);
  const auto bits_at = [&](std::size_t i, std::size_t width) {
    std::uint32_t v = 0;
    std::memcpy(&v, b.data() + i * width, width);
    return v;
  };
  switch (t.dtype) {
    case DType::F32:
      add_stats(info, b.size() / 4, [&](std::size_t i) { return std::bit_cast<float>(bits_at(i, 4)); });
      break;
    case DType::BF16: add_stats(info, b.size() / 2, [&](std::size_t i) { return decode(bf16, bits_at(i, 2)); }); break;
    case DType::F16: add_stats(info, b.size() / 2, [&](std::size_t i) { return decode(f16, bits_at(i, 2)); }); break;
    case DType::F8_E4M3: add_stats(info, b.size(), [&](std::size_t i) { return decode(e4m3, bits_at(i, 1)); }); break;
    case DType::F8_E5M2: add_stats(info, b.size(), [&](std::size_t i) { return decode(e5m2, bits_at(i, 1)); }); break;
    case DType::F8_E8M0: add_stats(info, b.size(), [&](std::size_t i) { return decode(ue8m0, bits_at(i, 1)); }); break;
    default: break;
  }
}

// One shard's share of the table: the rows that want statistics, and its pairs by weight.
struct Shard {
  SafetensorsFile f;
  std::vector<QuantizedPair> pairs;
  std::vector<std::pair<TensorInfo*, const SafetensorsTensor*>> jobs;  // rows that want statistics
  std::map<std::string, const QuantizedPair*> by_weight;
};

// What the pairs of a checkpoint show of the family that published it (the forms of
// docs/checkpoints.md, "Dialects"), gathered shard by shard.
struct FamilyEvidence {
  std::map<std::string, int> release;  // DeepSeek-V4's X.weight + X.scale pairs, by "fp8 BrxBc SCALE" / "fp4 experts"
  int half_scales = 0;                 // W_scale_inv in BF16 or F16 (Qwen's FP8 releases)
  std::string half_dtype;
  int per_tensor = 0;  // one W_scale_inv value per FP8 tensor (FineGrainedFP8, weight_block_size null)
  int f32_blocks = 0;  // W_scale_inv F32 over 128x128 blocks (DeepSeek-V3's form)
  int other = 0;       // every other pair
};

void note_family(FamilyEvidence& e, const SafetensorsFile& f, const QuantizedPair& p) {
  const DType stored = f.find(p.scale)->dtype;
  const bool fp4 = p.scheme.element.format == &e2m1;
  if (p.form == PairForm::deepseek_v4) {
    ++e.release[fp4 ? cat("FP4 experts (", dtype_name(f.find(p.weight)->dtype), " [R, C/2], ", p.block_rows, "x",
                          p.block_cols, " ", dtype_name(stored), " scales)")
                    : cat("FP8 ", p.block_rows, "x", p.block_cols, " blocks with ", dtype_name(stored), " scales")];
  } else if (p.form == PairForm::deepseek && p.scheme_name.find("-tensor-") != std::string::npos) {
    ++e.per_tensor;
  } else if (p.form == PairForm::deepseek && (stored == DType::BF16 || stored == DType::F16)) {
    ++e.half_scales;
    e.half_dtype = dtype_name(stored);
  } else if (p.form == PairForm::deepseek && stored == DType::F32 && p.block_rows == 128 && p.block_cols == 128) {
    ++e.f32_blocks;
  } else {
    ++e.other;
  }
}

// The family, as far as the forms of its pairs (and its config) tell it apart; "" when they do not.
std::string family_text(const FamilyEvidence& e, const std::optional<HfConfig>& config) {
  if (!e.release.empty()) {
    const bool v41 = (config && config->model_type == "deepseek_v41") ||
                     std::any_of(e.release.begin(), e.release.end(),
                                 [](const auto& kv) { return kv.first.starts_with("FP8 32x32"); });
    const bool base = std::any_of(e.release.begin(), e.release.end(),
                                  [](const auto& kv) { return kv.first.find("F32 scales") != std::string::npos; });
    std::string parts;
    for (const auto& [what, n] : e.release) parts += cat(parts.empty() ? "" : ", ", what, " x ", n);
    return cat(v41    ? "DeepSeek-V4.1"
               : base ? "DeepSeek-V4-Flash-Base"
                      : "DeepSeek-V4",
               " as released (X.weight + X.scale): ", parts);
  }
  if (e.half_scales && e.other == 0) {
    return cat("Qwen FP8 release (W + W_scale_inv with ", e.half_dtype, " block scales) x ", e.half_scales);
  }
  if (e.per_tensor && e.other == 0 && e.half_scales == 0 && e.f32_blocks == 0) {
    return cat("transformers FineGrainedFP8 per tensor (weight_block_size null: one W_scale_inv per FP8 tensor) x ",
               e.per_tensor);
  }
  if (e.f32_blocks && e.other == 0 && config && config->rules == ConfigRules::deepseek) {
    return cat("DeepSeek-V3 / R1 / V3.1 FP8 (also Kimi K2-Instruct; W + W_scale_inv F32, 128x128 blocks) x ",
               e.f32_blocks);
  }
  // The other dialects are named by the config that declares them (its scheme: compressed-tensors' format,
  // ModelOpt's quant_algo), every pair being in a form that dialect writes.
  const bool only_other = e.other && e.half_scales == 0 && e.per_tensor == 0 && e.f32_blocks == 0;
  if (!only_other || !config) return "";
  switch (config->rules) {
    case ConfigRules::compressed_tensors: return cat("compressed-tensors ", config->scheme, " x ", e.other);
    case ConfigRules::modelopt: return cat("NVIDIA ModelOpt ", config->scheme, " x ", e.other);
    case ConfigRules::gpt_oss: return cat("gpt-oss MXFP4 experts (X_blocks + X_scales) x ", e.other);
    case ConfigRules::awq: return cat("AutoAWQ (qweight + qzeros + scales) x ", e.other);
    case ConfigRules::gptq: return cat("AutoGPTQ (qweight + qzeros + scales) x ", e.other);
    default: return "";
  }
}

// What each part of a pair is ("weight of SCHEME (FORM)", "scale of W", ...), each pair counted under its scheme.
std::map<std::string, std::string> pair_roles(Shard& sh, std::map<std::string, int>& schemes) {
  std::map<std::string, std::string> roles;
  for (const QuantizedPair& p : sh.pairs) {
    roles[p.weight] = cat("weight of ", p.scheme_name, " (", to_string(p.form), ")");
    roles[p.scale] = cat("scale of ", p.weight);
    if (!p.tensor_scale.empty()) roles[p.tensor_scale] = cat("tensor scale of ", p.weight);
    for (const std::string& e : p.extras) {
      const char* what = e.ends_with("zero_point")     ? "zero point of "
                         : e.ends_with("g_idx")        ? "column groups of "
                         : e.ends_with("weight_shape") ? "shape of "
                         : e == p.pre_quant_scale      ? "smoothing (folded into the weight) of "
                                                       : "activation scale of ";
      roles[e] = cat(what, p.weight);
    }
    sh.by_weight[p.weight] = &p;
    ++schemes[p.scheme_name];
  }
  return roles;
}

// Shard s read, its rows appended (a deque: rows already handed to a job stay where they are) and counted in `r`.
// The role the quantization rule gives a tensor that is no part of a pair ("" for a plain one).
std::string rule_role(detail::TensorRole r) {
  switch (r) {
    case detail::TensorRole::activation_scale: return "activation scale";
    case detail::TensorRole::model_parameter: return "model parameter (named like a scale)";
    case detail::TensorRole::not_understood: return "not understood: quantized (by its dtype or name), in no pair";
    default: return "";
  }
}

std::shared_ptr<Shard> open_shard(InspectReport& r, std::size_t s, bool stats, std::map<std::string, int>& schemes,
                                  std::deque<TensorInfo>& rows, const detail::QuantizationRule& rule,
                                  FamilyEvidence& family, bool headers_only) {
  const Checkpoint& c = r.checkpoint;
  auto sh = std::make_shared<Shard>();
  sh->f = read_shard(c.shard_path(s), headers_only);
  detail::borrow_partners(sh->f, c, s);
  const int packed_bits = headers_only ? detail::declared_packed_bits(r.config) : 0;
  sh->pairs = find_pairs(sh->f, packed_bits);
  detail::read_as_declared(sh->pairs, rule.declaration());
  for (const QuantizedPair& p : sh->pairs) note_family(family, sh->f, p);
  const detail::Lent lent = detail::lent_parts(sh->f, c, s, packed_bits);
  std::vector<detail::TensorRole> rule_roles;
  if (std::optional<detail::RuleProblem> p = rule.problem(sh->f, sh->pairs, rule_roles, &lent);
      p && r.not_understood.empty()) {
    r.not_understood = p->text();
  }
  const std::map<std::string, std::string> roles = pair_roles(*sh, schemes);
  std::size_t k = 0;
  for (const SafetensorsTensor& t : sh->f.tensors()) {
    TensorInfo& info =
        rows.emplace_back(TensorInfo{t.name, c.shards[s], t.dtype, t.shape, t.end - t.begin, "", 0, {}, {}, {}, {}, 0});
    const auto role = roles.find(t.name);
    if (role != roles.end()) info.role = role->second;
    if (role == roles.end()) info.role = rule_role(rule_roles[k]);
    // A scale whose weight is in another shard: its pair is read there, with the scale borrowed.
    const auto lent_to = role == roles.end() ? lent.find(t.name) : lent.end();
    const bool away = lent_to != lent.end();
    if (away)
      info.role = cat("scale of ", lent_to->second, " (paired in ", c.index.weight_map.at(lent_to->second), ")");
    const bool not_understood = rule_roles[k++] == detail::TensorRole::not_understood;
    const bool overhead = (role != roles.end() && !role->second.starts_with("weight")) || away;
    info.params = overhead ? 0 : elements(t.shape);
    const auto it = sh->by_weight.find(t.name);
    if (it != sh->by_weight.end())
      info.params = static_cast<std::uint64_t>(it->second->shape[0] * it->second->shape[1]);
    if (stats && !not_understood && (it != sh->by_weight.end() || !overhead)) sh->jobs.emplace_back(&info, &t);
    r.params += info.params;
    r.bytes += info.bytes;
  }
  return sh;
}

// Statistics of job j's tensor: a pair's dequantized values, or a plain tensor's.
void shard_stats(Shard& sh, std::size_t j) {
  auto [info, t] = sh.jobs[j];
  if (const auto it = sh.by_weight.find(t->name); it != sh.by_weight.end()) {
    const std::vector<float> y = dequantize_pair(sh.f, *it->second, 1);  // the pool's workers are the parallelism
    add_stats(*info, y.size(), [&](std::size_t i) { return y[i]; });
  } else {
    plain_stats(*info, sh.f, *t);
  }
  sh.f.release(*t);
}

}  // namespace

InspectReport inspect_checkpoint(const std::filesystem::path& path, bool stats, ConfigRules rules, int threads,
                                 bool headers_only) {
  if (stats && headers_only)
    throw std::invalid_argument("inspect: --stats reads the tensors' values; --headers-only does not");
  // Over HTTP only headers are read: a URL is inspected as --headers-only is.
  if (stats && is_remote(path.string()))
    throw std::invalid_argument("inspect: --stats reads the tensors' values, which are not read over HTTP");
  headers_only = headers_only || is_remote(path.string());
  InspectReport r{open_checkpoint(path), {}, 0, 0, std::nullopt, "", "", ""};
  const Checkpoint& c = r.checkpoint;
  if (const auto config = c.config_path()) r.config = read_hf_config(*config, rules);
  const detail::QuantizationRule rule(detail::declaration_of(r.config), c.index_path.value_or(c.directory), {},
                                      &c.index.weight_map);
  std::map<std::string, int> schemes;
  FamilyEvidence family;
  // The table is built shard by shard as the pool asks for work; each --stats job fills its own row.
  std::deque<TensorInfo> rows;
  std::shared_ptr<Shard> current;
  std::size_t shard = 0, job = 0;
  detail::run_in_order(stats ? detail::worker_count(threads) : 1, [&]() -> detail::Job {
    while (!current || job == current->jobs.size()) {
      if (shard == c.shards.size()) return {};
      current = open_shard(r, shard++, stats, schemes, rows, rule, family, headers_only);
      job = 0;
    }
    return [sh = current, j = job++] { shard_stats(*sh, j); };
  });
  r.tensors.assign(std::make_move_iterator(rows.begin()), std::make_move_iterator(rows.end()));
  for (const auto& [name, count] : schemes) {
    r.scheme_summary += cat(r.scheme_summary.empty() ? "" : ", ", name, " x ", count);
  }
  if (r.scheme_summary.empty()) r.scheme_summary = "none";
  r.family = family_text(family, r.config);
  if (const std::optional<detail::RuleProblem> p = rule.finish_problem(); p && r.not_understood.empty()) {
    r.not_understood = p->text();
  }
  return r;
}

}  // namespace mf::io
