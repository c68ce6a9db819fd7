// minifloat memory: parameters and bytes per precision class of a model under a recipe (the accounting of
// docs/spec.md#v4-memory).
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <memory>

#include "checkpoint_cli.h"
#include "common.h"
#include "remote.h"
#include "minifloat/checkpoint_commands.h"

namespace mf::cli {

void register_memory(CLI::App& app) {
  struct Args {
    std::string config, recipe = "deepseek-v4";
  };
  auto a = std::make_shared<Args>();
  auto* s = app.add_subcommand("memory", "Parameters and bytes per precision class of a config under a recipe");
  s->add_option("--config", a->config, "config.json of the model: a path, a URL, or hf://ORG/REPO[@REVISION]")
      ->required();
  s->add_option("--recipe", a->recipe, "recipe name or .json file")->capture_default_str();
  s->callback([a] {
    const io::HfConfig config = io::read_hf_config(a->config, io::ConfigRules::detect);
    const io::Recipe recipe = io::load_recipe(a->recipe);
    io::MemoryReport r;
    try {
      r = io::memory_report(config, recipe);
    } catch (const io::HfConfigError& e) {
      throw UsageError(fmt::format("{}: {}", a->config, e.what()));
    }
    std::string out = fmt::format("{:<26} {:>8} {:>18} {:>14} {:>14} {:>11}\n", "precision", "tensors", "parameters",
                                  "data", "scales", "bytes/param");
    for (const io::MemoryClass& c : r.classes) {
      out +=
          fmt::format("{:<26} {:>8} {:>18} {:>14} {:>14} {:>11.6f}\n", c.target, c.tensors, c.params,
                      human_bytes(static_cast<double>(c.data_bytes)), human_bytes(static_cast<double>(c.scale_bytes)),
                      static_cast<double>(c.data_bytes + c.scale_bytes) / static_cast<double>(c.params));
    }
    out += fmt::format("total: {} parameters ({:.4g} B), {} ({:.2f} GiB), {:.4f} bytes per parameter\n", r.params,
                       static_cast<double>(r.params) / 1e9, human_bytes(static_cast<double>(r.bytes)),
                       static_cast<double>(r.bytes) / (1ull << 30),
                       static_cast<double>(r.bytes) / static_cast<double>(r.params));
    write_stdout(out);
    report_remote(a->config);
  });
}

}  // namespace mf::cli
