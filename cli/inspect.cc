// minifloat inspect: a checkpoint's tensors, dtypes, shapes, detected schemes, bytes and bits per parameter.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <memory>

#include "checkpoint_cli.h"
#include "common.h"
#include "remote.h"
#include "minifloat/checkpoint_commands.h"
#include "minifloat/checkpoint_json.h"
#include "minifloat/remote.h"
#include "minifloat/text.h"

namespace mf::cli {
namespace {

struct InspectArgs {
  std::string path, rules = "auto";
  bool stats = false, json = false, headers_only = false;
  int threads = 0;
};

std::string flags_text(const io::HfConfig& c) {
  return fmt::format("fp8_attn={} fp8_mlp={} mxfp8={} mxfp4={}", c.flags.fp8_attn, c.flags.fp8_mlp, c.flags.mxfp8,
                     c.flags.mxfp4);
}

// What config.json says: the dialect whose rules it passed, its scheme and what it leaves unquantized.
std::string config_text(const io::HfConfig& c) {
  const std::string dtype = c.dtype.empty() ? "unset" : c.dtype;
  if (c.rules == io::ConfigRules::unknown) {
    return fmt::format(
        "config.json: quant_method '{}' is a dialect minifloat does not know: the tensors above are "
        "listed as stored; dtype {}\n",
        c.quant_method, dtype);
  }
  std::string out =
      fmt::format("config.json: valid under {} rules; dtype {}; {}\n", io::to_string(c.rules), dtype, flags_text(c));
  if (!c.scheme.empty()) {
    std::string left;
    for (const std::string& m : c.not_converted) left += fmt::format("{}{}", left.empty() ? "" : ", ", m);
    out += fmt::format("quantization: {} ({}){}\n", io::to_string(c.rules), c.scheme,
                       left.empty() ? "" : "; not converted: " + left);
  }
  return out;
}

std::string as_text(const io::InspectReport& r) {
  std::string out;
  for (const io::TensorInfo& t : r.tensors) {
    out += fmt::format("{:<52} {:<8} {:<16} {:>12}  {}", t.name, io::dtype_name(t.dtype), shape_text(t.shape), t.bytes,
                       t.role);
    if (t.min) out += fmt::format("  min {:.4g} max {:.4g} mean {:.4g} rms {:.4g}", *t.min, *t.max, *t.mean, *t.rms);
    if (t.nonfinite) out += fmt::format("  nonfinite {}", t.nonfinite);
    out += "\n";
  }
  out += fmt::format("{} tensors in {} shard{}; {} parameters, {} ({:.4g} bits per parameter)\n", r.tensors.size(),
                     r.checkpoint.shards.size(), r.checkpoint.shards.size() == 1 ? "" : "s", r.params,
                     human_bytes(static_cast<double>(r.bytes)),
                     r.params ? 8.0 * static_cast<double>(r.bytes) / static_cast<double>(r.params) : 0.0);
  out += fmt::format("schemes (from tensor pairs): {}\n", r.scheme_summary);
  if (!r.family.empty()) out += fmt::format("family: {}\n", r.family);
  if (r.config) out += config_text(*r.config);
  return out;
}

}  // namespace

void register_inspect(CLI::App& app) {
  auto a = std::make_shared<InspectArgs>();
  auto* s = app.add_subcommand("inspect", "List a checkpoint's tensors, schemes and bytes; check its config.json");
  s->add_option("PATH", a->path,
                "a .safetensors file, model.safetensors.index.json, a directory, a .gguf file, or the URL of "
                "an index or .safetensors file, or hf://ORG/REPO[@REVISION] (headers only)")
      ->required();
  s->add_flag("--stats", a->stats, "per-tensor min, max, mean, rms (quantized pairs dequantized)");
  s->add_flag("--json", a->json, "machine-readable output");
  s->add_flag("--headers-only", a->headers_only,
              "read only the index, config.json and each shard's header: no tensor data (not with --stats)");
  s->add_option("--threads", a->threads, "worker threads for --stats (default: all cores)");
  s->add_option("--config-rules", a->rules,
                "the rules config.json must pass: auto (by its quant_method), deepseek, deepinfer, "
                "transformers-fp8, compressed-tensors, modelopt, gpt-oss, minifloat")
      ->check(CLI::IsMember(config_rule_names()))
      ->capture_default_str();
  s->callback([a] {
    if (is_gguf(a->path)) {
      write_stdout(inspect_gguf(a->path, a->json));
      return report_remote(a->path);
    }
    if (a->stats && a->headers_only)
      throw UsageError("inspect: --stats reads the tensors' values; --headers-only does not");
    if (io::is_remote(a->path) && a->stats)
      throw UsageError("inspect: --stats reads the tensors' values, which are not read over HTTP; download first");
    // A URL is inspected as --headers-only is (inspect_checkpoint sees to it).
    const io::InspectReport r =
        io::inspect_checkpoint(a->path, a->stats, io::config_rules_named(a->rules), a->threads, a->headers_only);
    write_stdout(a->json ? io::inspect_json(r) : as_text(r));
    report_remote(a->path);
    // Listed, but what the other commands refuse: exit 2 with their message (docs/checkpoints.md, "Never silent").
    if (!r.not_understood.empty()) throw UsageError(r.not_understood);
  });
}

}  // namespace mf::cli
