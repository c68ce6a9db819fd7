// minifloat show X [--formats LIST] [--scale S] [--json]: one number taken apart in several formats.
#include <CLI/CLI.hpp>
#include <cmath>
#include <fmt/format.h>
#include <string>
#include <vector>

#include "common.h"
#include "minifloat/describe.h"
#include "minifloat/describe_json.h"
#include "minifloat/random.h"
#include "minifloat/text.h"

namespace mf::cli {
namespace {

std::string percent(double rel) {
  if (std::isnan(rel)) return "-";
  if (std::isinf(rel)) return "inf";
  return fmt::format("{:.3g}%", rel * 100);
}
std::string error_text(double e) { return std::isnan(e) ? "-" : fmt::format("{:.3g}", e); }

std::string exponent_text(const Description& d) {
  if (d.value_class == ValueClass::nan || d.value_class == ValueClass::inf || d.value_class == ValueClass::zero) {
    return "-";
  }
  return std::to_string(d.fields.unbiased_exponent);
}

}  // namespace

std::string show_text(double x, bool from_bits, const std::vector<const Format*>& formats, double scale,
                      const EncodeOptions& options) {
  std::string s = fmt::format("x = {}", shortest(x));
  if (from_bits) s += fmt::format("  (f32 bits {})", hex_code(f32, encode(f32, static_cast<float>(x))));
  if (scale != 1) s += fmt::format(";  x / {} = {}", shortest(scale), shortest(x / scale));
  s += "\n\n";
  std::vector<std::vector<std::string>> rows;
  rows.push_back({"format", "code", "sign | exponent | mantissa", "e field", "2^e", "class", "stored",
                  scale != 1 ? "value (x scale)" : "value", "abs error", "rel error"});
  std::vector<Description> plain;
  for (const Format* f : formats) {
    const Description d = describe(*f, x, scale, options);
    rows.push_back({std::string(f->name), hex_code(*f, d.code), bit_fields(*f, d.code),
                    std::to_string(d.fields.exponent), exponent_text(d), std::string(class_name(d)),
                    shortest(static_cast<double>(d.stored)), shortest(d.value), error_text(d.abs_error),
                    percent(d.rel_error)});
    if (scale != 1) plain.push_back(describe(*f, x, 1.0, options));
  }
  std::vector<std::size_t> width(rows[0].size(), 0);
  for (const auto& r : rows)
    for (std::size_t i = 0; i < r.size(); ++i) width[i] = std::max(width[i], r[i].size());
  for (const auto& r : rows) {
    std::string line;
    for (std::size_t i = 0; i < r.size(); ++i) line += fmt::format("{:<{}}  ", r[i], width[i]);
    while (!line.empty() && line.back() == ' ') line.pop_back();
    s += line + "\n";
  }
  if (!plain.empty()) {
    s += "\nwithout the scale:\n";
    for (const Description& d : plain) {
      s += fmt::format("  {:<6} stores {} ({}), error {}\n", d.format->name, shortest(d.stored),
                       hex_code(*d.format, d.code), percent(d.rel_error));
    }
  }
  return s;
}

void register_show(CLI::App& app) {
  struct Args {
    std::string x;
    std::string formats = "bf16,f16,e4m3,e5m2,e2m1";
    double scale = 1.0;
    bool json = false;
    CodecFlags codec;
  };
  auto args = std::make_shared<Args>();
  auto* sub = app.add_subcommand("show", "One number in several formats: bits, fields, class, stored value, error");
  sub->add_option("X", args->x, "a decimal number (0.3, -1e-3, inf) or f32 bits (0x3e99999a)")->required();
  sub->add_option("--formats", args->formats, "comma-separated formats, or 'all'")->capture_default_str();
  sub->add_option("--scale", args->scale, "divide by this scale before encoding and multiply after (block scaling)");
  sub->add_flag("--json", args->json, "JSON output (schema in docs/cli.md)");
  add_codec_flags(*sub, args->codec);
  sub->callback([args] {
    const auto parsed = parse_number(args->x);
    if (!parsed) throw UsageError(fmt::format("cannot read '{}' as a number or as f32 bits (0x...)", args->x));
    if (!(args->scale > 0) || !std::isfinite(args->scale)) {
      throw UsageError(fmt::format("--scale must be a positive finite number, not {}", shortest(args->scale)));
    }
    const auto formats = format_list(args->formats);
    EncodeOptions options = encode_options(args->codec);
    options.random_bits = stochastic_bits(args->codec.seed, 0);
    if (!args->json)
      return write_stdout(show_text(parsed->value, parsed->from_f32_bits, formats, args->scale, options));
    write_stdout(describe_json(parsed->value, parsed->from_f32_bits, formats, args->scale, options) + "\n");
  });
}

}  // namespace mf::cli
