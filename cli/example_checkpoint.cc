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
    io::ExampleSize size;
  };
  auto a = std::make_shared<Args>();
  auto* s = app.add_subcommand("make-example-checkpoint",
                               "Write a tiny synthetic V4-shaped bf16 checkpoint (config.json, shards, index)");
  s->add_option("DIR", a->dir, "directory to create")->required();
  s->add_option("--shards", a->shards, "number of shards")->check(CLI::Range(1, 64))->capture_default_str();
  // Larger sizes for benchmarks (bench/bench_convert.sh); the defaults are what the tests expect.
  s->add_option("--hidden", a->size.hidden, "hidden size (a multiple of 32)")->check(CLI::Range(32, 16384))
      ->capture_default_str();
  s->add_option("--layers", a->size.layers, "layers")->check(CLI::Range(1, 256))->capture_default_str();
  s->add_option("--experts", a->size.experts, "routed experts per layer")->check(CLI::Range(1, 512))
      ->capture_default_str();
  s->add_option("--moe-intermediate", a->size.moe_intermediate, "expert width (a multiple of 32)")
      ->check(CLI::Range(32, 65536))->capture_default_str();
  s->callback([a] {
    if (a->size.hidden % 32 != 0 || a->size.moe_intermediate % 32 != 0) {
      throw UsageError("--hidden and --moe-intermediate must be multiples of 32");
    }
    io::write_example_checkpoint(a->dir, a->shards, a->size);
    const io::Checkpoint c = io::open_checkpoint(a->dir);
    write_stdout(fmt::format("wrote {}: {} tensors in {} shards, config.json (deepseek_v4, bfloat16)\n", a->dir,
                             c.index.weight_map.size(), c.shards.size()));
  });
}

}  // namespace mf::cli
