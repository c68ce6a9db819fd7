// inspect: what a checkpoint holds, tensor by tensor, with the schemes read off tensor pairs and optional statistics.
#include <cmath>
#include <cstring>
#include <map>

#include "file.h"
#include "minifloat/checkpoint_ops.h"
#include "minifloat/checkpoint_tensors.h"
#include "minifloat/codec.h"

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

}  // namespace

InspectReport inspect_checkpoint(const std::filesystem::path& path, bool stats, ConfigRules rules) {
  InspectReport r{open_checkpoint(path), {}, 0, 0, std::nullopt, ""};
  const Checkpoint& c = r.checkpoint;
  if (const auto config = c.config_path()) r.config = read_hf_config(*config, rules);
  std::map<std::string, int> schemes;
  for (std::size_t s = 0; s < c.shards.size(); ++s) {
    const SafetensorsFile f = read_safetensors(c.shard_path(s));
    std::map<std::string, std::string> roles;
    std::map<std::string, const QuantizedPair*> by_weight;
    const std::vector<QuantizedPair> pairs = find_pairs(f);
    for (const QuantizedPair& p : pairs) {
      roles[p.weight] = cat("weight of ", p.scheme.name);
      roles[p.scale] = cat("scale of ", p.weight);
      if (!p.tensor_scale.empty()) roles[p.tensor_scale] = cat("tensor scale of ", p.weight);
      by_weight[p.weight] = &p;
      ++schemes[p.scheme.name];
    }
    for (const SafetensorsTensor& t : f.tensors()) {
      TensorInfo info{t.name, c.shards[s], t.dtype, t.shape, t.end - t.begin, "", 0, {}, {}, {}, {}, 0};
      const auto role = roles.find(t.name);
      if (role != roles.end()) info.role = role->second;
      const bool overhead = role != roles.end() && !role->second.starts_with("weight");
      info.params = overhead ? 0 : elements(t.shape);
      if (const auto it = by_weight.find(t.name); it != by_weight.end()) {
        info.params = static_cast<std::uint64_t>(it->second->shape[0] * it->second->shape[1]);
        if (stats) {
          const QuantizedTensor q = read_pair(f, *it->second);
          std::vector<float> y(static_cast<std::size_t>(q.count()));
          dequantize(q, y.data());
          add_stats(info, y.size(), [&](std::size_t i) { return y[i]; });
        }
      } else if (stats && !overhead) {
        plain_stats(info, f, t);
      }
      r.params += info.params;
      r.bytes += info.bytes;
      r.tensors.push_back(std::move(info));
    }
  }
  for (const auto& [name, count] : schemes) {
    r.scheme_summary += cat(r.scheme_summary.empty() ? "" : ", ", name, " x ", count);
  }
  if (r.scheme_summary.empty()) r.scheme_summary = "none";
  return r;
}

}  // namespace mf::io
