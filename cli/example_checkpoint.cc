// minifloat make-example-checkpoint: a tiny V4-shaped bf16 checkpoint for the tests, the tour and ./run.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <memory>

#include "checkpoint_cli.h"
#include "common.h"
#include "minifloat/checkpoint_ops.h"

namespace mf::cli {

void register_example_checkpoint(CLI::App& app) {
  struct Args {
    std::string dir;
    int shards = 2;
  };
  auto a = std::make_shared<Args>();
  auto* s = app.add_subcommand("make-example-checkpoint",
                               "Write a tiny synthetic V4-shaped bf16 checkpoint (config.json, shards, index)");
  s->add_option("DIR", a->dir, "directory to create")->required();
  s->add_option("--shards", a->shards, "number of shards")->check(CLI::Range(1, 64))->capture_default_str();
  s->callback([a] {
    io::write_example_checkpoint(a->dir, a->shards);
    const io::Checkpoint c = io::open_checkpoint(a->dir);
    write_stdout(fmt::format("wrote {}: {} tensors in {} shards, config.json (deepseek_v4, bfloat16)\n", a->dir,
                             c.index.weight_map.size(), c.shards.size()));
  });
}

}  // namespace mf::cli
