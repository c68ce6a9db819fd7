// inspect: what a checkpoint holds, tensor by tensor, with the schemes read off tensor pairs and optional statistics.
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
    case DType::F32: add_stats(info, b.size() / 4, [&](std::size_t i) { return std::bit_cast<float>(bits_at(i, 4)); }); break;
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

// What each part of a pair is ("weight of SCHEME", "scale of W", ...), each pair counted under its scheme.
std::map<std::string, std::string> pair_roles(Shard& sh, std::map<std::string, int>& schemes) {
  std::map<std::string, std::string> roles;
  for (const QuantizedPair& p : sh.pairs) {
    roles[p.weight] = cat("weight of ", p.scheme_name);
    roles[p.scale] = cat("scale of ", p.weight);
    if (!p.tensor_scale.empty()) roles[p.tensor_scale] = cat("tensor scale of ", p.weight);
    for (const std::string& e : p.extras) {
      const char* what = e.ends_with("zero_point") ? "zero point of " : e.ends_with("g_idx") ? "column groups of "
                         : e.ends_with("weight_shape") ? "shape of " : "activation scale of ";
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
                                  std::deque<TensorInfo>& rows, const detail::QuantizationRule& rule) {
  const Checkpoint& c = r.checkpoint;
  auto sh = std::make_shared<Shard>();
  sh->f = read_safetensors(c.shard_path(s));
  sh->pairs = find_pairs(sh->f);
  std::vector<detail::TensorRole> rule_roles;
  if (std::optional<detail::RuleProblem> p = rule.problem(sh->f, sh->pairs, rule_roles); p && r.not_understood.empty()) {
    r.not_understood = p->text();
  }
  const std::map<std::string, std::string> roles = pair_roles(*sh, schemes);
  std::size_t k = 0;
  for (const SafetensorsTensor& t : sh->f.tensors()) {
    TensorInfo& info = rows.emplace_back(
        TensorInfo{t.name, c.shards[s], t.dtype, t.shape, t.end - t.begin, "", 0, {}, {}, {}, {}, 0});
    const auto role = roles.find(t.name);
    if (role != roles.end()) info.role = role->second;
    if (role == roles.end()) info.role = rule_role(rule_roles[k]);
    const bool not_understood = rule_roles[k++] == detail::TensorRole::not_understood;
    const bool overhead = role != roles.end() && !role->second.starts_with("weight");
    info.params = overhead ? 0 : elements(t.shape);
    const auto it = sh->by_weight.find(t.name);
    if (it != sh->by_weight.end()) info.params = static_cast<std::uint64_t>(it->second->shape[0] * it->second->shape[1]);
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

InspectReport inspect_checkpoint(const std::filesystem::path& path, bool stats, ConfigRules rules, int threads) {
  InspectReport r{open_checkpoint(path), {}, 0, 0, std::nullopt, "", ""};
  const Checkpoint& c = r.checkpoint;
  if (const auto config = c.config_path()) r.config = read_hf_config(*config, rules);
  const detail::QuantizationRule rule(detail::declaration_of(r.config), c.index_path.value_or(c.directory));
  std::map<std::string, int> schemes;
  // The table is built shard by shard as the pool asks for work; each --stats job fills its own row.
  std::deque<TensorInfo> rows;
  std::shared_ptr<Shard> current;
  std::size_t shard = 0, job = 0;
  detail::run_in_order(stats ? detail::worker_count(threads) : 1, [&]() -> detail::Job {
    while (!current || job == current->jobs.size()) {
      if (shard == c.shards.size()) return {};
      current = open_shard(r, shard++, stats, schemes, rows, rule);
      job = 0;
    }
    return [sh = current, j = job++] { shard_stats(*sh, j); };
  });
  r.tensors.assign(std::make_move_iterator(rows.begin()), std::make_move_iterator(rows.end()));
  for (const auto& [name, count] : schemes) {
    r.scheme_summary += cat(r.scheme_summary.empty() ? "" : ", ", name, " x ", count);
  }
  if (r.scheme_summary.empty()) r.scheme_summary = "none";
  if (const std::optional<detail::RuleProblem> p = rule.finish_problem(); p && r.not_understood.empty()) {
    r.not_understood = p->text();
  }
  return r;
}

}  // namespace mf::io
