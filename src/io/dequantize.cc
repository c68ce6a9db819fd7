// dequantize: a checkpoint's quantized pairs (every dialect minifloat reads) written as plain BF16 or F32 tensors,
// every other float tensor cast to that dtype; a tensor that looks quantized but pairs with nothing is refused,
// unless --passthrough names it. convert_run.cc carries the plan out.
#include <algorithm>
#include <map>
#include <set>

#include "convert_run.h"
#include "file.h"
#include "minifloat/checkpoint_ops.h"
#include "minifloat/checkpoint_tensors.h"
#include "minifloat/recipe.h"
#include "tensor_values.h"

namespace mf::io {
namespace {

namespace fs = std::filesystem;
using detail::cat;
using detail::is_float;
using detail::Planner;
using detail::Step;

}  // namespace

namespace {

// What dequantize may never copy unchanged without being told to: a tensor whose dtype is a quantized element or
// scale format (or packed bytes), or whose name says it is a scale or a quantized part in one of the checkpoint
// dialects (W_scale_inv, W_scale, W_scale_2, weight_global_scale, input_scale, *_blocks, *_scales, weight_packed).
bool looks_quantized(const SafetensorsTensor& t) {
  switch (t.dtype) {
    case DType::F4: case DType::F6_E2M3: case DType::F6_E3M2: case DType::U8: case DType::I8:
    case DType::F8_E5M2: case DType::F8_E4M3: case DType::F8_E8M0: return true;
    default: break;
  }
  for (const char* p : {"*_scale*", "*_blocks", "*global_scale*", "*zero_point*", "*weight_packed"}) {
    if (glob_match(p, t.name)) return true;
  }
  return false;
}

// Activation and KV-cache scales (static FP8 input scales, vLLM's and ModelOpt's k_scale and v_scale): calibration
// results for quantized arithmetic, with no place in a dequantized model, so dequantize leaves them out.
bool activation_scale(const SafetensorsTensor& t) {
  if (!is_float(t.dtype)) return false;
  for (const char* suffix : {".input_scale", ".output_scale", ".k_scale", ".v_scale", ".q_scale", ".input_global_scale"}) {
    if (t.name.ends_with(suffix)) return true;
  }
  return false;
}

bool passed_through(const std::vector<std::string>& patterns, const std::string& name) {
  return std::any_of(patterns.begin(), patterns.end(), [&](const std::string& p) { return glob_match(p, name); });
}

[[noreturn]] void not_dequantizable(const SafetensorsFile& f, const SafetensorsTensor& t) {
  std::string shape;
  for (std::size_t i = 0; i < t.shape.size(); ++i) shape += cat(i == 0 ? "" : ", ", t.shape[i]);
  throw IoError(IoErrc::not_dequantizable, f.path(), t.name,
                cat(dtype_name(t.dtype), " [", shape, "] looks quantized (by its ",
                    is_float(t.dtype) || t.dtype == DType::F64 ? "name" : "dtype",
                    ") but is part of no pair minifloat can dequantize (W with W_scale_inv, or W_scale and "
                    "W_scale_2); nothing was written. --passthrough '",
                    t.name, "' copies it unchanged on purpose"));
}

}  // namespace

ConvertReport dequantize_checkpoint(const fs::path& in, const fs::path& out, bool bf16_out,
                                    const ConvertOptions& options) {
  const Planner plan = [&options, bf16_out](const SafetensorsFile& f, std::vector<QuantizedPair>& pairs) {
    pairs = find_pairs(f);
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
      } else if (activation_scale(t) && !passed_through(options.passthrough, t.name)) {
        continue;
      } else if (passed_through(options.passthrough, t.name)) {
        s.target = "keep";
      } else if (looks_quantized(t)) {
        not_dequantizable(f, t);
      } else if (is_float(t.dtype)) {
        s.target = bf16_out ? "bf16" : "f32";  // every float tensor in the dtype asked for
      }
      steps.push_back(std::move(s));
    }
    return steps;
  };
  return detail::run_plan(in, out, options, plan, bf16_out, nullptr);
}

}  // namespace mf::io
