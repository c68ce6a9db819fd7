#include "common.h"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <fmt/format.h>

namespace mf::cli {

std::string known_format_names() {
  std::string names;
  for (const Format* f : all_formats) names += (names.empty() ? "" : ", ") + std::string(f->name);
  return names;
}

const Format& format_named(std::string_view name) {
  if (const Format* f = find_format(name)) return *f;
  throw UsageError(fmt::format("unknown format '{}' (known: {})", name, known_format_names()));
}

std::vector<const Format*> format_list(std::string_view list) {
  if (list == "all") return {all_formats.begin(), all_formats.end()};
  std::vector<const Format*> out;
  while (!list.empty()) {
    const std::size_t comma = list.find(',');
    const std::string_view name = list.substr(0, comma);
    out.push_back(&format_named(name));
    list = comma == std::string_view::npos ? std::string_view{} : list.substr(comma + 1);
  }
  if (out.empty()) throw UsageError("--formats is empty (give names separated by commas, or 'all')");
  return out;
}

void add_codec_flags(CLI::App& sub, CodecFlags& flags) {
  sub.add_option("--overflow", flags.overflow,
                 "default: what the format does (Inf, NaN or saturate, as ml_dtypes); saturate: clip to +-max")
      ->check(CLI::IsMember({"default", "standard", "saturate"}))
      ->capture_default_str();
  sub.add_option("--rounding", flags.rounding, "nearest_even, toward_zero or stochastic")
      ->check(CLI::IsMember({"nearest_even", "toward_zero", "stochastic"}))
      ->capture_default_str();
  sub.add_option("--seed", flags.seed, "seed of the random bits for --rounding stochastic (reproducible)")
      ->capture_default_str();
}

EncodeOptions encode_options(const CodecFlags& flags) {
  EncodeOptions o;
  o.overflow = flags.overflow == "saturate" ? Overflow::saturate : Overflow::standard;
  o.rounding = flags.rounding == "toward_zero" ? Rounding::toward_zero
               : flags.rounding == "stochastic" ? Rounding::stochastic
                                                : Rounding::nearest_even;
  return o;
}

void write_stdout(std::string_view text) {
  if (std::fwrite(text.data(), 1, text.size(), stdout) != text.size() || std::fflush(stdout) != 0) {
    throw UsageError("cannot write to standard output");
  }
}

}  // namespace mf::cli
