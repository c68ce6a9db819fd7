// inspect --json's text (checkpoint_json.h), for the command and the Python package alike.
#include "minifloat/checkpoint_json.h"

#include <nlohmann/json.hpp>

namespace mf::io {

std::string inspect_json(const InspectReport& r) {
  nlohmann::ordered_json j;
  j["shards"] = r.checkpoint.shards;
  j["params"] = r.params;
  j["bytes"] = r.bytes;
  j["bits_per_param"] = r.params ? 8.0 * static_cast<double>(r.bytes) / static_cast<double>(r.params) : 0.0;
  j["schemes"] = r.scheme_summary;
  j["family"] = r.family;
  j["not_understood"] = r.not_understood;
  if (r.config) {
    j["config"] = {{"rules", std::string(to_string(r.config->rules))},
                   {"quant_method", r.config->quant_method},
                   {"scheme", r.config->scheme},
                   {"not_converted", r.config->not_converted},
                   {"dtype", r.config->dtype},
                   {"fp8_attn", r.config->flags.fp8_attn},
                   {"fp8_mlp", r.config->flags.fp8_mlp},
                   {"mxfp8", r.config->flags.mxfp8},
                   {"mxfp4", r.config->flags.mxfp4}};
  }
  nlohmann::ordered_json tensors = nlohmann::ordered_json::array();
  for (const TensorInfo& t : r.tensors) {
    nlohmann::ordered_json e{{"name", t.name},   {"shard", t.shard}, {"dtype", std::string(dtype_name(t.dtype))},
                             {"shape", t.shape}, {"bytes", t.bytes}, {"params", t.params},
                             {"role", t.role}};
    if (t.min)
      e["stats"] = {{"min", *t.min}, {"max", *t.max}, {"mean", *t.mean}, {"rms", *t.rms}, {"nonfinite", t.nonfinite}};
    tensors.push_back(std::move(e));
  }
  j["tensors"] = std::move(tensors);
  return j.dump(2) + "\n";
}

std::string inspect_gguf_json(const GgufFile& f) {
  std::uint64_t params = 0, bytes = 0;
  for (const GgufTensor& t : f.tensors()) {
    params += t.elements();
    bytes += t.bytes;
  }
  const double bits = params ? 8.0 * static_cast<double>(bytes) / static_cast<double>(params) : 0.0;
  nlohmann::ordered_json j{{"format", "gguf"}, {"version", f.version()}, {"alignment", f.alignment()},
                           {"params", params}, {"bytes", bytes},         {"bits_per_param", bits}};
  nlohmann::ordered_json meta = nlohmann::ordered_json::object(), tensors = nlohmann::ordered_json::array();
  for (const auto& [key, value] : f.metadata()) meta[key] = value.text();
  for (const GgufTensor& t : f.tensors()) {
    tensors.push_back({{"name", t.name},
                       {"type", gguf_type_name(t.type)},
                       {"shape", t.shape()},
                       {"bytes", t.bytes},
                       {"decodable", gguf_can_dequantize(t.type)}});
  }
  j["metadata"] = std::move(meta);
  j["tensors"] = std::move(tensors);
  return j.dump(2) + "\n";
}

}  // namespace mf::io
