#include "common.h"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <fmt/format.h>

#include "minifloat/text.h"

namespace mf::cli {

std::string known_format_names() {
  std::string names;
  for (const Format* f : all_formats) {
    if (!names.empty()) names += ", ";
    names += f->name;
  }
  return names;
}

const Format& format_named(std::string_view name) {
  if (const Format* f = find_format(name)) return *f;
  throw UsageError(fmt::format("unknown format '{}' (known: {})", name, known_format_names()));
}

std::vector<const Format*> format_list(std::string_view list) {
  if (list == "all") return {all_formats.begin(), all_formats.end()};
  std::vector<const Format*> out;
  if (!list.empty() && (list.back() == ',' || list.front() == ',')) {
    throw UsageError("--formats has an empty entry (give names separated by commas, or 'all')");
  }
  while (!list.empty()) {
    const std::size_t comma = list.find(',');
    const std::string_view name = list.substr(0, comma);
    if (name.empty()) throw UsageError("--formats has an empty entry (give names separated by commas, or 'all')");
    out.push_back(&format_named(name));
    list = comma == std::string_view::npos ? std::string_view{} : list.substr(comma + 1);
  }
  if (out.empty()) throw UsageError("--formats is empty (give names separated by commas, or 'all')");
  return out;
}

void add_codec_flags(CLI::App& sub, CodecFlags& flags) {
  sub.add_option("--overflow", flags.overflow,
                 "default: what the format does (Inf, NaN or saturate, as ml_dtypes); saturate: clip to +-max; "
                 "clamp: clip at both ends of the range; nan_outside_range: NaN outside it (ONNX Cast saturate=1/0)")
      ->check(CLI::IsMember({"default", "saturate", "clamp", "nan_outside_range"}))
      ->capture_default_str();
  sub.add_option("--rounding", flags.rounding,
                 "nearest_even, toward_zero, stochastic, away_from_zero (magnitude up) or nearest_away (ties away)")
      ->check(CLI::IsMember({"nearest_even", "toward_zero", "stochastic", "away_from_zero", "nearest_away"}))
      ->capture_default_str();
  sub.add_option("--seed", flags.seed, "seed of the random bits for --rounding stochastic (reproducible)")
      ->capture_default_str();
}

EncodeOptions encode_options(const CodecFlags& flags) {
  EncodeOptions o;
  o.overflow = overflow_named(flags.overflow);
  o.rounding = rounding_named(flags.rounding);
  return o;
}

void add_block_flags(CLI::App& sub, BlockFlags& flags, bool with_layout, bool scheme_required, bool tensor_options) {
  std::string names;
  for (const std::string& n : scheme_names()) {
    if (!names.empty()) names += ", ";
    names += n;
  }
  auto* s = sub.add_option(
      "--scheme", flags.scheme,
      "block scheme: " + names + ", or ELEMENT-BLOCK[-SCALE[-RULE]] (e2m1-1x32-ue8m0-rceil, int4-1x128)");
  if (scheme_required) s->required();
  sub.add_option("--rule", flags.rule,
                 "scale rule: floor, rceil, even, f32, e4m3, mse, 4over6 (default: the scheme's)");
  sub.add_option("--profile", flags.profile, "compatibility profile: ocp, deepseek, torchao, te, ggml");
  if (with_layout)
    sub.add_option("--layout", flags.layout, "codes layout: packed, unpacked, ggml")->capture_default_str();
  if (!tensor_options) return;
  sub.add_option("--rotate", flags.rotate,
                 "Hadamard rotation over groups of N values before quantizing (a power of two up to 4096)");
  sub.add_flag("--pad", flags.pad, "allow partial edge blocks (shapes that are not a multiple of the block)");
  sub.add_option("--threads", flags.threads, "threads (default: all cores)");
  sub.add_option("--nonfinite", flags.nonfinite, "NaN/Inf in a block: nan (the block's scale is NaN) or error")
      ->check(CLI::IsMember({"nan", "error"}))
      ->capture_default_str();
}

Scheme scheme_from(const BlockFlags& flags, const std::string& name) {
  try {
    Scheme s = scheme_named(name);
    if (!flags.rule.empty()) s = with_rule(s, scale_rule_named(flags.rule));
    if (!flags.profile.empty()) s = with_profile(s, profile_named(flags.profile));
    return s;
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
}

QuantizeOptions options_from(const BlockFlags& flags, const std::string& tensor_name) {
  QuantizeOptions o;
  try {
    o.layout = layout_named(flags.layout);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  o.rotate = flags.rotate;
  o.pad = flags.pad;
  o.threads = flags.threads;
  o.nonfinite = flags.nonfinite == "error" ? NonFinite::error : NonFinite::nan;
  o.tensor_name = tensor_name;
  return o;
}

void write_stdout(std::string_view text) {
  if (std::fwrite(text.data(), 1, text.size(), stdout) != text.size() || std::fflush(stdout) != 0) {
    throw UsageError("cannot write to standard output");
  }
}

}  // namespace mf::cli
