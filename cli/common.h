// Shared pieces of the minifloat command: errors, option parsing, registration of subcommands.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "minifloat/codec.h"
#include "minifloat/format.h"

namespace CLI {
class App;
}

namespace mf::cli {

// A user error: printed as one line "minifloat: error: <what>", exit code 2.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The format named `name`, or a UsageError listing the known names.
const Format& format_named(std::string_view name);
// "bf16,e4m3" or "all" -> formats; a UsageError names the unknown one.
std::vector<const Format*> format_list(std::string_view list);
std::string known_format_names();

// --overflow and --rounding values ("default"/"standard", "saturate"; "nearest_even", "toward_zero", "stochastic").
struct CodecFlags {
  std::string overflow = "default";
  std::string rounding = "nearest_even";
  unsigned long long seed = 0;
};
void add_codec_flags(CLI::App& sub, CodecFlags& flags);
EncodeOptions encode_options(const CodecFlags& flags);  // random_bits left 0; see stochastic_bits()

// Each subcommand file registers itself.
void register_formats(CLI::App& app);
void register_show(CLI::App& app);
void register_filters(CLI::App& app);  // encode and decode
void register_tour(CLI::App& app);

// Text pieces the tour reuses.
std::string formats_table_text();
std::string show_text(double x, bool from_bits, const std::vector<const Format*>& formats, double scale,
                      const EncodeOptions& options);

// Write all of `text` to stdout; a closed pipe or full disk is an error (exit 2), not a silent truncation.
void write_stdout(std::string_view text);

}  // namespace mf::cli
