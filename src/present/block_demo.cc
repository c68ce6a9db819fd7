// One block and its shared scale, as `minifloat block` and the page's block panel show it.
#include "minifloat/block_demo.h"

#include <cmath>
#include <nlohmann/json.hpp>

#include "minifloat/codec.h"
#include "minifloat/scale.h"
#include "minifloat/text.h"

namespace mf {
namespace {

// JSON has no NaN or Inf: those become the strings "nan", "inf", "-inf".
nlohmann::json number_json(double x) { return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(shortest(x)); }

// "2^-3" for a ue8m0 code (a power of two is what the scale means); empty otherwise.
std::string power_text(const Format& f, std::uint32_t code) {
  if (!(f == ue8m0) || code == 0xFF) return "";
  return "2^" + std::to_string(static_cast<int>(code) - 127);
}

nlohmann::json part_json(std::span<const float> values, const BlockDemo& r) {
  nlohmann::json j;
  const Scheme& s = r.q.scheme;
  const ElementType& el = s.element;
  j["scales"] = nlohmann::json::array();
  for (std::int64_t b = 0; b < r.q.scale_shape.back(); ++b) {
    const std::uint32_t code = r.q.scale_code(0, b);
    const float v = decode(*s.scale_format, code);
    j["scales"].push_back({{"code", hex_code(*s.scale_format, code)},
                           {"value", std::isfinite(v) ? nlohmann::json(v) : nlohmann::json("nan")},
                           {"text", shortest(v)},
                           {"power", power_text(*s.scale_format, code)}});
  }
  j["tensor_scale"] = s.tensor_scale ? nlohmann::json(r.q.tensor_scale) : nlohmann::json(nullptr);
  j["values"] = nlohmann::json::array();
  for (std::size_t i = 0; i < values.size(); ++i) {
    const double x = values[i], q = r.stored[i];
    const double rel = x == 0 ? (q == 0 ? 0.0 : INFINITY) : std::fabs(x - q) / std::fabs(x);
    j["values"].push_back({{"input", number_json(x)},
                           {"input_text", shortest(values[i])},
                           {"code", r.codes[i]},
                           {"code_hex", el.is_int() ? std::to_string(r.codes[i]) : hex_code(*el.format, r.codes[i])},
                           {"element", shortest(element_value(el, r.codes[i]))},
                           {"stored", number_json(q)},
                           {"stored_text", shortest(r.stored[i])},
                           {"rel_error", number_json(rel)},
                           {"became_zero", x != 0 && q == 0}});
  }
  j["nonzero"] = r.nonzero;
  j["zeroed"] = r.zeroed;
  return j;
}

}  // namespace

BlockDemo block_demo(std::span<const float> values, const Scheme& scheme) {
  QuantizeOptions o;
  o.layout = Layout::unpacked;
  o.pad = true;
  o.tensor_name = "block";
  const std::vector<std::int64_t> shape{static_cast<std::int64_t>(values.size())};
  BlockDemo r{ref::quantize(values.data(), shape, scheme, o), {}, std::vector<float>(values.size()), 0, 0};
  r.codes = r.q.codes;
  ref::dequantize(r.q, r.stored.data());
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (values[i] == 0) continue;
    ++r.nonzero;
    if (r.stored[i] == 0) ++r.zeroed;
  }
  return r;
}

std::vector<float> with_outlier(std::span<const float> values, float outlier) {
  std::vector<float> out(values.begin(), values.end());
  if (out.size() < kBlockDemoMaxValues)
    out.push_back(outlier);
  else
    out.back() = outlier;
  return out;
}

std::string block_demo_json(std::span<const float> values, const Scheme& scheme, const float* outlier, int indent) {
  nlohmann::json j;
  j["scheme"] = scheme.name;
  j["rule"] = to_string(scheme.rule);
  j["block"] = part_json(values, block_demo(values, scheme));
  if (outlier) {
    const std::vector<float> more = with_outlier(values, *outlier);
    j["with_outlier"] = part_json(more, block_demo(more, scheme));
  }
  return j.dump(indent);
}

}  // namespace mf
