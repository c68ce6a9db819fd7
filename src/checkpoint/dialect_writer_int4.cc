// The configs of integer pairs re-laid out (int4_relayout.h), read off the written shards: AutoAWQ's
// to_transformers_dict, AutoGPTQ's BaseQuantizeConfig (checkpoint_format gptq) and compressed-tensors' pack-quantized
// config groups.
#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "../io/file.h"
#include "int4_relayout.h"

namespace mf::io::detail {
namespace {

using Json = nlohmann::ordered_json;

// Each integer pair of the written shards as its config describes it (describe_int_pair), with its module.
std::vector<std::pair<std::string, IntRelayout>> written_int_pairs(const std::vector<std::filesystem::path>& shards) {
  std::vector<std::pair<std::string, IntRelayout>> out;
  for (const std::filesystem::path& path : shards) {
    const SafetensorsFile f = read_safetensors(path);
    for (const QuantizedPair& p : find_pairs(f)) {
      if (p.form != PairForm::integer || f.find(p.weight)->dtype != DType::I32) continue;
      out.emplace_back(p.output.substr(0, p.output.size() - 7), describe_int_pair(f, p));
    }
  }
  return out;
}

// As compressed-tensors 0.20 writes QuantizationArgs: sorted keys, no actorder (act-order pairs are not written).
Json ct_int_weights(const IntRelayout& r) {
  const bool channel = r.group_size < 0;
  return {{"dynamic", false},
          {"group_size", channel ? Json(nullptr) : Json(r.group_size)},
          {"num_bits", r.bits},
          {"strategy", channel ? "channel" : "group"},
          {"symmetric", !r.zero_points},
          {"type", "int"}};
}

}  // namespace

std::string int_quantization_config(WriteFormat format, const std::vector<std::filesystem::path>& shards,
                                    const std::vector<std::string>& unquantized) {
  const auto pairs = written_int_pairs(shards);
  if (pairs.empty()) {
    throw std::invalid_argument(cat("--format ", to_string(format), ": the written shards hold no integer pair"));
  }
  std::vector<IntRelayout> planned;
  bool sym = true, act_order = false;
  for (const auto& [module, r] : pairs) {
    planned.push_back(r);
    sym = sym && !r.zero_points;
    act_order = act_order || r.act_order;
  }
  check_one_int_config(format, planned);
  const IntRelayout& first = planned.front();
  Json q;
  if (format == WriteFormat::awq) {
    q = {{"quant_method", "awq"},
         {"zero_point", true},  // qzeros are always stored and always subtracted
         {"group_size", first.group_size},
         {"bits", first.bits},
         {"version", "gemm"},
         {"modules_to_not_convert", unquantized.empty() ? Json(nullptr) : Json(unquantized)}};
  } else {
    q = {{"bits", first.bits}, {"group_size", first.group_size}, {"desc_act", act_order},
         {"sym", sym},         {"quant_method", "gptq"},         {"checkpoint_format", "gptq"}};
  }
  return q.dump();
}

std::vector<IntGroup> ct_int_groups(const std::vector<std::filesystem::path>& shards) {
  std::map<std::string, std::vector<std::string>> by_args;  // sorted: the same groups whatever the shards' order
  for (const auto& [module, r] : written_int_pairs(shards)) by_args[ct_int_weights(r).dump()].push_back(module);
  std::vector<IntGroup> out;
  for (auto& [args, modules] : by_args) {
    std::sort(modules.begin(), modules.end());
    out.push_back({args, std::move(modules)});
  }
  return out;
}

}  // namespace mf::io::detail
