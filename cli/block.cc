// minifloat block v1,v2,... --scheme S [--outlier V]: one block of up to 32 values with its shared scale, and what
// an outlier does to the small values (docs/spec.md#outlier).
#include <CLI/CLI.hpp>
#include <cmath>
#include <fmt/format.h>
#include <memory>
#include <string>
#include <vector>

#include "common.h"
#include "minifloat/block_demo.h"
#include "minifloat/quantize.h"
#include "minifloat/scale.h"
#include "minifloat/text.h"

namespace mf::cli {
namespace {

constexpr std::size_t kMaxValues = kBlockDemoMaxValues;

std::string scale_line(const BlockDemo& r, std::int64_t b) {
  const Scheme& s = r.q.scheme;
  const std::uint32_t code = r.q.scale_code(0, b);
  std::string line = fmt::format("block {}: scale {} {} = {}", b, s.scale_format->name, hex_code(*s.scale_format, code),
                                 shortest(static_cast<double>(decode(*s.scale_format, code))));
  if (*s.scale_format == ue8m0 && code != 0xFF) line += fmt::format(" = 2^{}", static_cast<int>(code) - 127);
  if (s.tensor_scale)
    line += fmt::format(", times the tensor scale {}", shortest(static_cast<double>(r.q.tensor_scale)));
  return line + "\n";
}

std::string table(const std::vector<float>& values, const BlockDemo& r) {
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

}  // namespace

std::string block_text(const std::vector<float>& values, const Scheme& scheme, const float* outlier) {
  const BlockDemo plain = block_demo(values, scheme);
  if (!outlier) {
    return table(values, plain) + fmt::format("\n{} of {} nonzero values became 0\n", plain.zeroed, plain.nonzero);
  }
  const std::vector<float> more = with_outlier(values, *outlier);
  const BlockDemo r = block_demo(more, scheme);
  return table(more, r) + fmt::format(
                              "\nwithout the outlier: {} of {} nonzero values became 0\n"
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
    write_stdout(block_demo_json(values, scheme, outlier ? &*outlier : nullptr) + "\n");
  });
}

}  // namespace mf::cli
