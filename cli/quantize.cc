// minifloat quantize / minifloat dequantize: tensors in files, block-scaled and back (docs/spec.md#block-scaling,
// docs/spec.md#schemes, docs/spec.md#layout).
#include <CLI/CLI.hpp>
#include <filesystem>
#include <fmt/format.h>
#include <memory>
#include <string>
#include <vector>

#include "checkpoint_cli.h"
#include "common.h"
#include "minifloat/checkpoint_commands.h"
#include "minifloat/quantize.h"
#include "minifloat/tensor_file.h"
#include "minifloat/text.h"

namespace mf::cli {
namespace {

struct QuantizeArgs {
  BlockFlags block;
  std::string tensor;
  std::string in, out;
};

void run_quantize(const QuantizeArgs& a) {
  const Scheme scheme = scheme_from(a.block, a.block.scheme);
  options_from(a.block, "x");  // validate --layout before reading anything
  if (std::filesystem::path(a.out).extension() != ".safetensors") {
    throw UsageError(fmt::format("{}: the output of quantize is a .safetensors file", a.out));
  }
  const std::vector<io::FloatTensor> inputs = io::read_float_tensors(a.in, a.tensor);
  std::vector<io::NamedQuantized> outputs;
  std::string report;
  for (const io::FloatTensor& t : inputs) {
    const QuantizeOptions o = options_from(a.block, t.name);
    outputs.push_back({t.name, quantize(t.values.data(), t.shape, scheme, o)});
    const QuantizedTensor& q = outputs.back().tensor;
    report += fmt::format("{}: [{}] -> {} ({}): {} bytes, {:.4g} bits per value\n", t.name, join_numbers(t.shape),
                          scheme.name, to_string(scheme.rule), q.nbytes(),
                          q.count() ? 8.0 * static_cast<double>(q.nbytes()) / static_cast<double>(q.count()) : 0.0);
  }
  io::write_quantized(a.out, outputs);
  write_stdout(report + fmt::format("wrote {}\n", a.out));
}

struct DequantizeArgs {
  std::string in, out;
  std::string dtype = "f32";
  int threads = 0;
  std::size_t shard_index = 0, shard_count = 1;  // checkpoints only, as for convert
  bool resume = false, merge = false;
  std::vector<std::string> passthrough;  // checkpoints: tensors kept as they are on purpose
};

// DeepSeek-style checkpoints (W + W_scale_inv, NVFP4 W + W_scale + W_scale_2) as a directory, an index, or a
// .safetensors file not written by `minifloat quantize` (whose __metadata__ records minifloat.scheme).
bool is_checkpoint(const std::string& in) {
  const std::filesystem::path p(in);
  if (std::filesystem::is_directory(p) || p.extension() == ".json") return true;
  if (p.extension() != ".safetensors") return false;
  return !io::read_safetensors(p).metadata().contains("minifloat.scheme");
}

void run_dequantize_checkpoint(const DequantizeArgs& a) {
  if (a.merge) {
    io::merge_index(a.in, a.out, nullptr);  // no recipe: config.json loses its quantization_config
    return write_stdout(fmt::format("merged: wrote the index and config.json of {}\n", a.out));
  }
  if (a.shard_count == 0 || a.shard_index >= a.shard_count) {
    throw UsageError("--shard-index must be less than --shard-count");
  }
  io::ConvertOptions o;
  o.threads = a.threads;
  o.job_index = a.shard_index;
  o.job_count = a.shard_count;
  o.resume = a.resume;
  o.passthrough = a.passthrough;
  ProgressBar bar("dequantize");
  o.progress = [&bar](std::uint64_t done, std::uint64_t total) { bar.update(done, total); };
  const io::ConvertReport r = io::dequantize_checkpoint(a.in, a.out, a.dtype == "bf16", o);
  write_stdout(fmt::format("wrote {} ({}): {} shard{}, {} -> {}\n", a.out, a.dtype, r.shards_written,
                           r.shards_written == 1 ? "" : "s", human_bytes(static_cast<double>(r.input_bytes)),
                           human_bytes(static_cast<double>(r.output_bytes))));
}

void run_dequantize(const DequantizeArgs& a) {
  if (is_gguf(a.in)) return write_stdout(dequantize_gguf(a.in, a.out, a.dtype == "bf16"));
  if (is_checkpoint(a.in)) return run_dequantize_checkpoint(a);
  const std::vector<io::NamedQuantized> inputs = io::read_quantized(a.in);
  std::vector<io::FloatTensor> outputs;
  for (const io::NamedQuantized& nq : inputs) {
    io::FloatTensor t{nq.name, nq.tensor.shape, std::vector<float>(static_cast<std::size_t>(nq.tensor.count()))};
    try {
      dequantize(nq.tensor, t.values.data(), a.threads);
    } catch (const std::exception& e) {
      throw UsageError(fmt::format("{}: tensor '{}': {}", a.in, nq.name, e.what()));
    }
    outputs.push_back(std::move(t));
  }
  io::write_float_tensors(a.out, outputs, a.dtype == "bf16");
  write_stdout(
      fmt::format("wrote {} tensor{} to {} ({})\n", outputs.size(), outputs.size() == 1 ? "" : "s", a.out, a.dtype));
}

}  // namespace

void register_quantize(CLI::App& app) {
  auto q = std::make_shared<QuantizeArgs>();
  auto* qs = app.add_subcommand("quantize", "Block-quantize the floating tensors of a .npy or .safetensors file");
  add_block_flags(*qs, q->block, true);
  qs->add_option("--tensor", q->tensor, "only this tensor of a .safetensors input");
  qs->add_option("IN", q->in, ".npy (f32 or f16) or .safetensors (F32, F16, BF16 tensors)")->required();
  qs->add_option("OUT", q->out, ".safetensors: NAME (codes), NAME_scale, NAME_tensor_scale, scheme in metadata")
      ->required();
  qs->callback([q] { run_quantize(*q); });

  auto d = std::make_shared<DequantizeArgs>();
  auto* ds = app.add_subcommand(
      "dequantize", "Dequantize what `minifloat quantize` wrote, or an FP8/FP4 checkpoint (W + W_scale_inv)");
  ds->add_option("IN", d->in,
                 ".safetensors written by minifloat quantize; or a checkpoint: a directory, an index, a .safetensors")
      ->required();
  ds->add_option(
        "OUT", d->out,
        ".safetensors or .npy (single f32 tensor); for a checkpoint: a directory (or .safetensors for one file)")
      ->required();
  ds->add_option("--dtype", d->dtype, "f32 or bf16 (round to nearest even)")
      ->check(CLI::IsMember({"f32", "bf16"}))
      ->capture_default_str();
  ds->add_option("--threads", d->threads,
                 "threads (default: all cores); for a checkpoint, workers over the tensors of all shards");
  ds->add_option("--shard-index", d->shard_index, "checkpoints: this job's index in a job array");
  ds->add_option("--shard-count", d->shard_count, "checkpoints: jobs in the array (job i does shards i, i + N, ...)");
  ds->add_flag("--resume", d->resume, "checkpoints: keep output shards a previous run finished");
  ds->add_flag("--merge", d->merge, "checkpoints, after a job array: write OUT's index and config.json");
  ds->add_option("--passthrough", d->passthrough,
                 "checkpoints: copy tensors whose names match this glob unchanged, even where they look quantized "
                 "(repeatable; each must match a tensor)");
  ds->callback([d] { run_dequantize(*d); });
}

}  // namespace mf::cli
