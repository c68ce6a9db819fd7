// minifloat block v1,v2,... --scheme S [--outlier V]: one block of up to 32 values with its shared scale, and what
// an outlier does to the small values (seed 000's demonstration).
#include <CLI/CLI.hpp>
#include <cmath>
#include <fmt/format.h>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common.h"
#include "minifloat/quantize.h"
#include "minifloat/scale.h"
#include "minifloat/text.h"

namespace mf::cli {
namespace {

constexpr std::size_t kMaxValues = 32;

struct BlockResult {
  QuantizedTensor q;
  std::vector<std::uint8_t> codes;  // one per value
  std::vector<float> stored;        // dequantized values
  int zeroed = 0, nonzero = 0;
};

BlockResult run_block(const std::vector<float>& values, const Scheme& scheme) {
  QuantizeOptions o;
  o.layout = Layout::unpacked;
  o.pad = true;
  o.tensor_name = "block";
  const std::vector<std::int64_t> shape{static_cast<std::int64_t>(values.size())};
  BlockResult r{quantize(values.data(), shape, scheme, o), {}, std::vector<float>(values.size()), 0, 0};
  r.codes = r.q.codes;
  dequantize(r.q, r.stored.data());
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (values[i] == 0) continue;
    ++r.nonzero;
    if (r.stored[i] == 0) ++r.zeroed;
  }
  return r;
}

std::vector<float> with_outlier(std::vector<float> values, float outlier) {
  if (values.size() < kMaxValues) values.push_back(outlier);
  else values.back() = outlier;
  return values;
}

std::string scale_line(const BlockResult& r, std::int64_t b) {
  const Scheme& s = r.q.scheme;
  const std::uint32_t code = r.q.scale_code(0, b);
  std::string line = fmt::format("block {}: scale {} {} = {}", b, s.scale_format->name, hex_code(*s.scale_format, code),
                                 shortest(static_cast<double>(decode(*s.scale_format, code))));
  if (*s.scale_format == ue8m0 && code != 0xFF) line += fmt::format(" = 2^{}", static_cast<int>(code) - 127);
  if (s.tensor_scale) line += fmt::format(", times the tensor scale {}", shortest(static_cast<double>(r.q.tensor_scale)));
  return line + "\n";
}

std::string table(const std::vector<float>& values, const BlockResult& r) {
  const ElementType& el = r.q.scheme.element;
  std::string s;
  for (std::int64_t b = 0; b < r.q.scale_shape.back(); ++b) s += scale_line(r, b);
  s += fmt::format("\n{:>3}  {:>12}  {:>6}  {:>8}  {:>12}  {:>9}\n", "i", "value", "code", "element", "stored",
                   "rel error");
  for (std::size_t i = 0; i < values.size(); ++i) {
    const double x = values[i], q = r.stored[i];
    const std::string rel = x == 0 ? "-" : fmt::format("{:.3g}%", 100 * std::fabs(x - q) / std::fabs(x));
    const std::string code = el.is_int() ? fmt::format("{}", r.codes[i]) : hex_code(*el.format, r.codes[i]);
    s += fmt::format("{:>3}  {:>12}  {:>6}  {:>8}  {:>12}  {:>9}{}\n", i, shortest(values[i]), code,
                     shortest(static_cast<double>(element_value(el, r.codes[i]))), shortest(q), rel,
                     (x != 0 && q == 0) ? "  <- became 0" : "");
  }
  return s;
}

nlohmann::json block_json(const std::vector<float>& values, const BlockResult& r) {
  nlohmann::json j;
  const Scheme& s = r.q.scheme;
  for (std::int64_t b = 0; b < r.q.scale_shape.back(); ++b) {
    const std::uint32_t code = r.q.scale_code(0, b);
    const float v = decode(*s.scale_format, code);
    j["scales"].push_back({{"code", hex_code(*s.scale_format, code)},
                           {"value", std::isfinite(v) ? nlohmann::json(v) : nlohmann::json("nan")}});
  }
  j["tensor_scale"] = s.tensor_scale ? nlohmann::json(r.q.tensor_scale) : nlohmann::json(nullptr);
  for (std::size_t i = 0; i < values.size(); ++i) {
    const auto num = [](double x) { return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(shortest(x)); };
    j["values"].push_back({{"input", num(values[i])}, {"code", r.codes[i]}, {"stored", num(r.stored[i])}});
  }
  j["nonzero"] = r.nonzero;
  j["zeroed"] = r.zeroed;
  return j;
}

}  // namespace

std::string block_text(const std::vector<float>& values, const Scheme& scheme, const float* outlier) {
  const BlockResult plain = run_block(values, scheme);
  if (!outlier) {
    return table(values, plain) +
           fmt::format("\n{} of {} nonzero values became 0\n", plain.zeroed, plain.nonzero);
  }
  const std::vector<float> more = with_outlier(values, *outlier);
  const BlockResult r = run_block(more, scheme);
  return table(more, r) + fmt::format("\nwithout the outlier: {} of {} nonzero values became 0\n"
                                      "with the outlier {}:  {} of {} nonzero values became 0\n",
                                      plain.zeroed, plain.nonzero, shortest(*outlier), r.zeroed, r.nonzero);
}

void register_block(CLI::App& app) {
  struct Args {
    std::string values;
    BlockFlags block;
    std::string outlier;
    bool json = false;
  };
  auto a = std::make_shared<Args>();
  auto* sub = app.add_subcommand("block", "One block of up to 32 values: the shared scale, each code, what became 0");
  sub->add_option("VALUES", a->values, "comma-separated values, e.g. 0.1,-0.25,0.3")->required();
  add_block_flags(*sub, a->block, false, false, false);
  a->block.scheme = "mxfp4";
  sub->add_option("--outlier", a->outlier, "add this value (or replace the 32nd) and compare the zeros");
  sub->add_flag("--json", a->json, "JSON output");
  sub->callback([a] {
    std::vector<float> values;
    std::string_view rest = a->values;
    for (std::size_t i = 1; !rest.empty(); ++i) {
      const std::size_t comma = rest.find(',');
      const std::string_view item = rest.substr(0, comma);
      const auto v = parse_decimal(item);
      if (!v) throw UsageError(fmt::format("value {}: cannot read '{}' as a number", i, item));
      values.push_back(static_cast<float>(*v));
      rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    }
    if (values.empty() || values.size() > kMaxValues) {
      throw UsageError(fmt::format("give 1 to {} values, not {}", kMaxValues, values.size()));
    }
    const Scheme scheme = scheme_from(a->block, a->block.scheme);
    std::optional<float> outlier;
    if (!a->outlier.empty()) {
      const auto v = parse_decimal(a->outlier);
      if (!v) throw UsageError(fmt::format("--outlier: cannot read '{}' as a number", a->outlier));
      outlier = static_cast<float>(*v);
    }
    if (!a->json) return write_stdout(block_text(values, scheme, outlier ? &*outlier : nullptr));
    nlohmann::json j;
    j["scheme"] = scheme.name;
    j["block"] = block_json(values, run_block(values, scheme));
    if (outlier) {
      const auto more = with_outlier(values, *outlier);
      j["with_outlier"] = block_json(more, run_block(more, scheme));
    }
    write_stdout(j.dump(2) + "\n");
  });
}

}  // namespace mf::cli
