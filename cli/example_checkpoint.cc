// minifloat make-example-checkpoint: a tiny bf16 checkpoint (V4-like by default; DeepSeek-V4, Llama or Qwen-MoE in
// miniature with --arch) for the tests, the tour and ./run; or (--like) a published quantized release in miniature,
// laid out as the release stores it (docs/checkpoints.md, "Published releases in miniature").
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <memory>
#include <optional>
#include <vector>

#include "checkpoint_cli.h"
#include "common.h"
#include "minifloat/checkpoint_commands.h"

namespace mf::cli {

void register_example_checkpoint(CLI::App& app) {
  struct Args {
    std::string dir, arch = "v4-like", like;
    int shards = 2;
    std::optional<int> hidden, layers, experts, moe_intermediate, intermediate;
  };
  auto a = std::make_shared<Args>();
  auto* s = app.add_subcommand("make-example-checkpoint",
                               "Write a tiny synthetic bf16 checkpoint (config.json, shards, index): V4-like, or a "
                               "real architecture in miniature (--arch), or a published quantized release (--like)");
  s->add_option("DIR", a->dir, "directory to create")->required();
  auto* like =
      s->add_option("--like", a->like,
                    "a published release's layout in miniature, quantized: deepseek-v4-release (bare names, "
                    "X.scale E8M0, FP4 experts as I8), deepseek-v4.1 (32x32 tiles, config nested under "
                    "text_config), deepseek-v3 (W_scale_inv F32, partial tiles, MTP), qwen-fp8 (W_scale_inv "
                    "BF16), fp8-per-tensor (transformers' FineGrainedFP8, weight_block_size null), "
                    "modelopt-fp8-pc-pt, modelopt-w4a16-awq, modelopt-w8a16, modelopt-w8a8-sq, modelopt-w4a8-awq "
                    "(NVIDIA ModelOpt's exports, with hf_quant_config.json), autoawq (GEMM W4 g128), gptq (AutoGPTQ "
                    "v1, desc_act), gptq-v2 (GPTQModel's gptq_v2), compressed-tensors-w4a16, "
                    "compressed-tensors-w4a16-asym (pack-quantized), kimi-k2-thinking (INT4 routed experts, group "
                    "32), compressed-tensors-mixed-nvfp4 (FP8 per-channel attention, NVFP4 MLP)")
          ->check(
              CLI::IsMember({"deepseek-v4-release", "deepseek-v4.1", "deepseek-v3", "qwen-fp8", "fp8-per-tensor",
                             "modelopt-fp8-pc-pt", "modelopt-w4a16-awq", "modelopt-w8a16", "modelopt-w8a8-sq",
                             "modelopt-w4a8-awq", "autoawq", "gptq", "gptq-v2", "compressed-tensors-w4a16",
                             "compressed-tensors-w4a16-asym", "kimi-k2-thinking", "compressed-tensors-mixed-nvfp4"}));
  auto* arch =
      s->add_option("--arch", a->arch,
                    "v4-like (default: DeepSeek-V4's names, simplified shapes), or deepseek-v4, llama, qwen-moe: "
                    "configs and tensors that load in transformers' DeepseekV4ForCausalLM, LlamaForCausalLM, "
                    "Qwen3MoeForCausalLM")
          ->check(CLI::IsMember({"v4-like", "deepseek-v4", "llama", "qwen-moe"}))
          ->capture_default_str();
  s->add_option("--shards", a->shards, "number of shards")->check(CLI::Range(1, 64))->capture_default_str();
  // Larger sizes for benchmarks (bench/bench_convert.sh); the defaults (each architecture's) are what tests expect.
  std::vector<CLI::Option*> sizes{arch};
  const auto size = [&](CLI::Option* o) { sizes.push_back(o); };
  size(s->add_option("--hidden", a->hidden, "hidden size, a multiple of 32 (default 64; 128 for the other archs)")
           ->check(CLI::Range(32, 16384)));
  size(s->add_option("--layers", a->layers, "layers (default 2)")->check(CLI::Range(1, 256)));
  size(s->add_option("--experts", a->experts, "routed experts per layer (default 4)")->check(CLI::Range(1, 512)));
  size(s->add_option("--moe-intermediate", a->moe_intermediate,
                     "expert width, a multiple of 32 (default 32; 128 for the other archs)")
           ->check(CLI::Range(32, 65536)));
  size(s->add_option("--intermediate", a->intermediate, "Llama's MLP width, a multiple of 32 (default 256)")
           ->check(CLI::Range(32, 65536)));
  for (CLI::Option* o : sizes) like->excludes(o);  // a release's miniature has its one size
  s->callback([a] {
    if (!a->like.empty()) {
      const io::HfConfig config = io::write_release_example(a->dir, io::release_like_named(a->like), a->shards);
      const io::Checkpoint c = io::open_checkpoint(a->dir);
      write_stdout(fmt::format("wrote {}: {} tensors in {} shards, config.json ({}, {}), laid out like {}\n", a->dir,
                               c.index.weight_map.size(), c.shards.size(), config.model_type, config.quant_method,
                               a->like));
      return;
    }
    const io::ExampleArch arch = io::example_arch_named(a->arch);
    io::ExampleSize size = io::example_size(arch);
    size.hidden = a->hidden.value_or(size.hidden);
    size.layers = a->layers.value_or(size.layers);
    size.experts = a->experts.value_or(size.experts);
    size.moe_intermediate = a->moe_intermediate.value_or(size.moe_intermediate);
    size.intermediate = a->intermediate.value_or(size.intermediate);
    if (size.hidden % 32 != 0 || size.moe_intermediate % 32 != 0 || size.intermediate % 32 != 0) {
      throw UsageError("--hidden, --moe-intermediate and --intermediate must be multiples of 32");
    }
    const io::HfConfig config = io::write_example_checkpoint(a->dir, a->shards, size, arch);
    const io::Checkpoint c = io::open_checkpoint(a->dir);
    write_stdout(fmt::format("wrote {}: {} tensors in {} shards, config.json ({}, bfloat16)\n", a->dir,
                             c.index.weight_map.size(), c.shards.size(), config.model_type));
  });
}

}  // namespace mf::cli
