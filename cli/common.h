// Shared pieces of the minifloat command: errors, option parsing, registration of subcommands.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "minifloat/codec.h"
#include "minifloat/format.h"
#include "minifloat/quantize.h"
#include "minifloat/scheme.h"

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

// --overflow and --rounding values ("default", "saturate"; "nearest_even", "toward_zero", "stochastic").
struct CodecFlags {
  std::string overflow = "default";
  std::string rounding = "nearest_even";
  unsigned long long seed = 0;
};
void add_codec_flags(CLI::App& sub, CodecFlags& flags);
EncodeOptions encode_options(const CodecFlags& flags);  // random_bits left 0; see stochastic_bits()

// --scheme, --rule, --profile, --layout, --rotate, --pad, --threads, --nonfinite for the block-scaling commands.
struct BlockFlags {
  std::string scheme;
  std::string rule;
  std::string profile;
  std::string layout = "packed";
  int rotate = 0;
  bool pad = false;
  int threads = 0;
  std::string nonfinite = "nan";
};
// with_layout: add --layout (quantize only); the scheme option is required when scheme_required.
// tensor_options: also --rotate, --pad, --threads and --nonfinite (not for one block of values).
void add_block_flags(CLI::App& sub, BlockFlags& flags, bool with_layout, bool scheme_required = true,
                     bool tensor_options = true);
// The scheme named `name` with --rule and --profile applied; UsageError for anything unknown or unfit.
Scheme scheme_from(const BlockFlags& flags, const std::string& name);
QuantizeOptions options_from(const BlockFlags& flags, const std::string& tensor_name);

// Each subcommand file registers itself.
void register_formats(CLI::App& app);
void register_show(CLI::App& app);
void register_filters(CLI::App& app);  // encode and decode
void register_tour(CLI::App& app);
void register_quantize(CLI::App& app);  // quantize and dequantize
void register_error(CLI::App& app);
void register_block(CLI::App& app);
void register_kv(CLI::App& app);
void register_pack_scales(CLI::App& app);  // pack-scales and unpack-scales
void register_gemm(CLI::App& app);         // gemm-error and gemm-bench
void register_serve(CLI::App& app);
void register_plot(CLI::App& app);

// Text pieces the tour reuses.
std::string block_text(const std::vector<float>& values, const Scheme& scheme, const float* outlier);
// The FP4 experiment (docs/spec.md#fp4-experiment): randn x 3 on 128 x 128, mxfp4 with rceil scales; mean |x - q| /
// mean |x| per seed.
double fp4_experiment(std::uint64_t seed);
// The tour's GEMM section (gemm.cc).
std::string gemm_tour_text();

// Text pieces the tour reuses.
std::string formats_table_text();
std::string show_text(double x, bool from_bits, const std::vector<const Format*>& formats, double scale,
                      const EncodeOptions& options);

// Write all of `text` to stdout; a closed pipe or full disk is an error (exit 2), not a silent truncation.
void write_stdout(std::string_view text);

}  // namespace mf::cli
