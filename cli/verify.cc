// minifloat verify: index and shards consistent, config.json valid, scales finite, FP8 experts FP4-QAT when asked.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <memory>

#include "checkpoint_cli.h"
#include "common.h"
#include "remote.h"
#include "minifloat/checkpoint_commands.h"
#include "minifloat/remote.h"

namespace mf::cli {

void register_verify(CLI::App& app) {
  struct Args {
    std::string path, rules = "auto";
    bool fp4_qat = false, headers_only = false;
    int threads = 0;
  };
  auto a = std::make_shared<Args>();
  auto* s = app.add_subcommand("verify", "Check a checkpoint: index vs shards, config.json, scales, FP4-QAT experts");
  s->add_option("PATH", a->path,
                "a .safetensors file, model.safetensors.index.json, a directory, a .gguf file, or (with "
                "--headers-only) a URL or hf://ORG/REPO[@REVISION]")
      ->required();
  s->add_option("--config-rules", a->rules,
                "auto (by its quant_method), deepseek, deepinfer, transformers-fp8, compressed-tensors, modelopt, "
                "gpt-oss, minifloat")
      ->check(CLI::IsMember(config_rule_names()))
      ->capture_default_str();
  s->add_flag("--fp4-qat", a->fp4_qat, "require FP8 routed experts to be FP4 values times powers of two");
  s->add_option("--threads", a->threads, "worker threads over the tensors of all shards (default: all cores)");
  s->add_flag("--headers-only", a->headers_only,
              "check names, dtypes and shapes against the index and config.json without reading tensor data "
              "(no scale, code or FP4-QAT check)");
  s->callback([a] {
    if (is_gguf(a->path)) return write_stdout(verify_gguf(a->path));
    if (io::is_remote(a->path) && !a->headers_only)
      throw UsageError("verify: over HTTP only headers are read: add --headers-only, or download the checkpoint");
    io::VerifyOptions o;
    o.rules = io::config_rules_named(a->rules);
    o.fp4_qat = a->fp4_qat;
    o.threads = a->threads;
    o.headers_only = a->headers_only;
    try {
      const io::VerifyReport r = io::verify_checkpoint(a->path, o);
      write_stdout(fmt::format("ok: {} tensors, {} quantized pairs, {}{}\n", r.summary.tensors, r.pairs,
                               r.headers_only ? std::string("headers only (scales, codes and FP4-QAT not read)")
                                              : fmt::format("{} FP4-QAT tensors checked", r.qat_tensors),
                               r.config
                                   ? fmt::format("; config.json valid under {} rules", io::to_string(r.config->rules))
                                   : std::string("; no config.json")));
      report_remote(a->path);
    } catch (const io::VerifyError& e) {
      throw UsageError(fmt::format("verify failed at tensor '{}': {}", e.tensor, e.what()));
    } catch (const io::HfConfigError& e) {
      throw UsageError(e.what());
    }
  });
}

}  // namespace mf::cli
