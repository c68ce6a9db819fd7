// dequantize: a checkpoint's quantized pairs (every dialect minifloat reads) written as plain BF16 or F32 tensors,
// every other float tensor cast to that dtype. run_plan applies the quantization rule first (quantization_rule.h): a
// tensor that looks quantized but pairs with nothing is refused, unless --passthrough names it, and so is a
// declaration minifloat does not read. convert_run.cc carries the plan out.
#include <algorithm>
#include <map>
#include <set>

#include "convert_run.h"
#include "../io/file.h"
#include "minifloat/checkpoint_commands.h"
#include "minifloat/checkpoint_tensors.h"
#include "minifloat/recipe.h"
#include "quantization_rule.h"
#include "tensor_values.h"

namespace mf::io {
namespace {

namespace fs = std::filesystem;
using detail::cat;
using detail::is_float;
using detail::Planner;
using detail::Step;

bool passed_through(const std::vector<std::string>& patterns, const std::string& name) {
  return std::any_of(patterns.begin(), patterns.end(), [&](const std::string& p) { return glob_match(p, name); });
}

}  // namespace

namespace detail {

Planner dequantize_planner(const Declaration& declared, const std::vector<std::string>& passthrough, bool bf16_out) {
  return [passthrough, bf16_out, declared](const SafetensorsFile& f, std::vector<QuantizedPair>& pairs) {
    pairs = find_pairs(f);
    detail::read_as_declared(pairs, declared);
    std::set<std::string> parts;
    std::map<std::string, const QuantizedPair*> by_weight;
    for (const QuantizedPair& p : pairs) {
      parts.insert(p.scale);
      if (!p.tensor_scale.empty()) parts.insert(p.tensor_scale);
      parts.insert(p.extras.begin(), p.extras.end());  // input_scale and the like: no place in a plain model
      by_weight[p.weight] = &p;
    }
    std::vector<Step> steps;
    for (const SafetensorsTensor& t : f.tensors()) {
      if (parts.contains(t.name)) continue;
      Step s{&t, "keep", std::nullopt};
      if (const auto it = by_weight.find(t.name); it != by_weight.end()) {
        s.pair = it->second;
        s.target = "dequantize";
      } else if (passed_through(passthrough, t.name)) {
        s.target = "keep";
      } else if (detail::activation_scale(t)) {
        continue;  // calibration of quantized arithmetic: no place in a plain model
      } else if (is_float(t.dtype)) {
        s.target = bf16_out ? "bf16" : "f32";  // every float tensor in the dtype asked for
      }
      steps.push_back(std::move(s));
    }
    return steps;
  };
}

}  // namespace detail

ConvertReport dequantize_checkpoint(const fs::path& in, const fs::path& out, bool bf16_out,
                                    const ConvertOptions& options) {
  const Planner plan =
      detail::dequantize_planner(detail::checkpoint_declaration(open_checkpoint(in)), options.passthrough, bf16_out);
  return detail::run_plan(in, out, options, plan, bf16_out, nullptr);
}

}  // namespace mf::io
