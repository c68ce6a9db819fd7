// minifloat convert: bf16 / f16 / f32 checkpoints to quantized ones by a recipe; the shared progress bar.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <fmt/format.h>
#include <memory>
#include <nlohmann/json.hpp>

#include "checkpoint_cli.h"
#include "common.h"
#include "minifloat/checkpoint_commands.h"
#include "minifloat/gguf.h"
#include "minifloat/gguf_model.h"

namespace mf::cli {

std::string human_bytes(double b) {
  const char* units[] = {"B", "kB", "MB", "GB", "TB"};
  int u = 0;
  while (b >= 1000 && u < 4) {
    b /= 1000;
    ++u;
  }
  return fmt::format("{:.{}f} {}", b, u == 0 ? 0 : 2, units[u]);
}

ProgressBar::ProgressBar(std::string label)
    : label_(std::move(label)), enabled_(::isatty(2) == 1), start_(std::chrono::steady_clock::now()), last_(start_) {}

ProgressBar::~ProgressBar() {
  if (drawn_) std::fputc('\n', stderr);
}

void ProgressBar::update(std::uint64_t done, std::uint64_t total) {
  if (!enabled_ || total == 0) return;
  const auto now = std::chrono::steady_clock::now();
  if (done < total && now - last_ < std::chrono::milliseconds(100)) return;  // redraw at most 10 times a second
  last_ = now;
  const double seconds = std::chrono::duration<double>(now - start_).count();
  const double rate = seconds > 0 ? static_cast<double>(done) / seconds : 0;
  const double left = rate > 0 ? static_cast<double>(total - done) / rate : 0;
  constexpr int kWidth = 30;
  const int filled = static_cast<int>(kWidth * static_cast<double>(done) / static_cast<double>(total));
  std::fprintf(stderr, "\r%s [%s%s] %s / %s  %s/s  %d:%02d left ", label_.c_str(), std::string(filled, '#').c_str(),
               std::string(kWidth - filled, '.').c_str(), human_bytes(static_cast<double>(done)).c_str(),
               human_bytes(static_cast<double>(total)).c_str(), human_bytes(rate).c_str(), static_cast<int>(left) / 60,
               static_cast<int>(left) % 60);
  std::fflush(stderr);
  drawn_ = true;
}

namespace {

struct ConvertArgs {
  std::string in, out, recipe, format = "minifloat";
  std::size_t shard_index = 0, shard_count = 1;
  bool resume = false, merge = false, no_tokenizer = false, fp8_as_q8 = false, keep_quantized = false;
  bool lossless = false, allow_inexact = false, json = false;
  int threads = 0;
};

std::string error_table(const io::ConvertReport& r) {
  std::string out =
      fmt::format("{:<56} {:<24} {:>11} {:>11} {:>9}\n", "tensor", "target", "rmse", "max |err|", "rel rmse");
  for (const io::TensorReport& e : r.tensors) {
    out += fmt::format("{:<56} {:<24} {:>11.4g} {:>11.4g} {:>8.3f}%\n", e.name, e.target, e.rmse, e.max_abs,
                       100 * e.rel_rmse);
  }
  return out;
}

// convert --lossless: each cast tensor's blocks carried exactly and not (with --allow-inexact), and its errors.
std::string cast_table(const io::ConvertReport& r) {
  std::string out;
  for (const io::TensorReport& e : r.tensors) {
    if (e.blocks == 0) continue;
    if (out.empty()) {
      out = fmt::format("{:<56} {:>10} {:>10} {:>10} {:>11} {:>11}\n", "lossless cast", "blocks", "exact", "inexact",
                        "max |err|", "max rel");
    }
    out += fmt::format("{:<56} {:>10} {:>10} {:>10} {:>11.4g} {:>11.4g}\n", e.name, e.blocks,
                       e.blocks - e.inexact_blocks, e.inexact_blocks, e.max_abs, e.max_rel);
  }
  return out;
}

std::string report_json(const io::ConvertReport& r) {
  nlohmann::ordered_json j;
  nlohmann::ordered_json tensors = nlohmann::ordered_json::array();
  for (const io::TensorReport& e : r.tensors) {
    nlohmann::ordered_json t{
        {"name", e.name}, {"target", e.target}, {"rmse", e.rmse}, {"max_abs", e.max_abs}, {"rel_rmse", e.rel_rmse}};
    if (e.blocks > 0) {
      t["blocks"] = e.blocks;
      t["exact_blocks"] = e.blocks - e.inexact_blocks;
      t["inexact_blocks"] = e.inexact_blocks;
      t["max_rel"] = e.max_rel;
    }
    tensors.push_back(std::move(t));
  }
  j["tensors"] = std::move(tensors);
  j["input_bytes"] = r.input_bytes;
  j["output_bytes"] = r.output_bytes;
  j["shards_written"] = r.shards_written;
  j["shards_skipped"] = r.shards_skipped;
  return j.dump(2) + "\n";
}

// One GGUF file: no job arrays (the file is written whole, in one run).
void run_convert_gguf(const ConvertArgs& a) {
  io::GgufRecipe recipe = io::gguf_recipe(a.recipe);  // before anything is written
  if ((a.fp8_as_q8 || a.keep_quantized) && !recipe.type) {
    throw UsageError("--fp8-as-q8 and --keep-quantized go with --recipe f32, f16, bf16 or q8_0");
  }
  recipe.fp8_as_q8 = a.fp8_as_q8;
  recipe.keep_quantized = a.keep_quantized;
  if (a.merge || a.resume || a.shard_count != 1) {
    throw UsageError("--format gguf writes one file in one run: no --merge, --resume or --shard-count");
  }
  io::ConvertOptions o;
  o.threads = a.threads;
  ProgressBar bar("convert");
  o.progress = [&bar](std::uint64_t done, std::uint64_t total) { bar.update(done, total); };
  const io::ConvertReport r = io::convert_to_gguf(
      a.in, a.out, recipe, o, a.no_tokenizer ? io::GgufTokenizerMode::none : io::GgufTokenizerMode::required);
  const io::GgufFile written = io::read_gguf(a.out);  // the architecture it was written as (llama, gpt-oss, qwen2, ...)
  const io::GgufValue* arch = written.find_metadata("general.architecture");
  if (a.no_tokenizer) {
    std::fprintf(stderr,
                 "minifloat: warning: %s has no tokenizer (--no-tokenizer: tokenizer.ggml.model \"none\"): "
                 "llama.cpp loads it, but none of its text tools runs without a vocabulary\n",
                 a.out.c_str());
  }
  write_stdout(error_table(r) + fmt::format("recipe {}: wrote {} (GGUF v3, {}); {} -> {}\n", recipe.name, a.out,
                                            arch ? arch->as_string().value_or("?") : "?",
                                            human_bytes(static_cast<double>(r.input_bytes)),
                                            human_bytes(static_cast<double>(r.output_bytes))));
}

void run_convert(const ConvertArgs& a) {
  const io::WriteFormat format = io::write_format_named(a.format);
  if (format == io::WriteFormat::gguf) {
    if (a.lossless || a.allow_inexact || a.json) {
      throw UsageError("--lossless, --allow-inexact and --json go with safetensors output, not --format gguf");
    }
    return run_convert_gguf(a);
  }
  if (is_gguf(a.in)) {
    // A GGUF's tensors carry llama.cpp's names and row order, and its config is metadata: no Hugging Face checkpoint.
    throw UsageError(fmt::format(
        "{} is a GGUF file: convert reads it with --format gguf only (requantized into another GGUF); its tensors "
        "carry llama.cpp's names (blk.N.attn_q, Q/K rows permuted) and it has no config.json, so --format {} "
        "cannot write a Hugging Face checkpoint of it; `minifloat dequantize {} OUT.safetensors` writes its values "
        "under those names",
        a.in, a.format, a.in));
  }
  if (a.no_tokenizer) throw UsageError("--no-tokenizer goes with --format gguf (the other formats copy no tokenizer)");
  if (a.allow_inexact && !a.lossless) throw UsageError("--allow-inexact goes with --lossless");
  if (a.fp8_as_q8 || a.keep_quantized) throw UsageError("--fp8-as-q8 and --keep-quantized go with --format gguf");
  if (io::is_gguf_type_name(a.recipe)) {
    throw UsageError(fmt::format("--recipe {} is a GGUF tensor type: it goes with --format gguf", a.recipe));
  }
  const io::Recipe recipe = io::load_recipe(a.recipe);
  io::check_write_format(recipe, format);  // before anything is written
  if (a.merge) {
    io::merge_index(a.in, a.out, &recipe, format);
    write_stdout(fmt::format("merged: wrote the index and config.json of {}\n", a.out));
    return;
  }
  io::ConvertOptions o;
  o.job_index = a.shard_index;
  o.job_count = a.shard_count;
  o.resume = a.resume;
  o.threads = a.threads;
  o.format = format;
  o.lossless = a.lossless;
  o.allow_inexact = a.allow_inexact;
  if (o.job_count == 0 || o.job_index >= o.job_count) {
    throw UsageError("--shard-index must be less than --shard-count");
  }
  ProgressBar bar("convert");
  o.progress = [&bar](std::uint64_t done, std::uint64_t total) { bar.update(done, total); };
  const io::ConvertReport r = io::convert_checkpoint(a.in, a.out, recipe, o);
  if (a.json) {
    write_stdout(report_json(r));
    return;
  }
  std::string text = error_table(r) + cast_table(r);
  text +=
      fmt::format("recipe {}: {} shard{} written, {} kept from an earlier run; {} -> {}\n", recipe.name,
                  r.shards_written, r.shards_written == 1 ? "" : "s", r.shards_skipped,
                  human_bytes(static_cast<double>(r.input_bytes)), human_bytes(static_cast<double>(r.output_bytes)));
  if (o.job_count > 1) {
    text += fmt::format("job {} of {} done; when all are, run: minifloat convert --merge {} {} --recipe {}{}\n",
                        o.job_index, o.job_count, a.in, a.out, a.recipe,
                        format == io::WriteFormat::minifloat ? "" : " --format " + a.format);
  }
  write_stdout(text);
}

}  // namespace

void register_convert(CLI::App& app) {
  auto a = std::make_shared<ConvertArgs>();
  auto* s = app.add_subcommand("convert",
                               "Quantize a bf16/f16/f32 checkpoint by a recipe (sharded, resumable), "
                               "in minifloat's form or an engine's (--format); a weight already in the "
                               "recipe's scheme (MXFP4, MXFP8, NVFP4, FP8 blocks; MXFP4 into GGUF; FP8 "
                               "block scales F32 <-> ue8m0 when all are powers of two) is re-laid out "
                               "losslessly, not requantized");
  s->add_option("IN", a->in,
                "checkpoint: a .safetensors file, an index, or a directory; with --format gguf also a .gguf file "
                "(its weights requantized, its metadata and tokenizer kept)")
      ->required();
  s->add_option("OUT", a->out,
                "output directory (not IN): one shard per input shard, index, config.json; with --format gguf, "
                "one .gguf file")
      ->required();
  s->add_option(
       "--recipe", a->recipe,
       "deepseek-v4, deepinfer, fp8-block, mxfp8, mxfp4, nvfp4, nvfp4-4over6, nvfp4-ue5m3 (no --format holds its "
       "UE5M3 scales: refused), or a .json file of pattern: target "
       "rules; "
       "with --format gguf also f32, f16, bf16 or q8_0 (one ggml type for every 2-D weight)")
      ->required();
  s->add_option("--format", a->format,
                "what to write: minifloat (default: W + W_scale_inv, DeepSeek's form), compressed-tensors "
                "(nvfp4, mxfp4, mxfp8, fp8-block), modelopt (nvfp4, mxfp4, mxfp8; also hf_quant_config.json), "
                "transformers-fp8 (fp8-block, mxfp8), gpt-oss (mxfp4: the MoE experts as X_blocks + X_scales), "
                "deepseek (fp8-block: V3; deepseek-v4: V4, FP4 experts as I8; on DeepSeek's bare names the "
                "release form, X.weight + X.scale, and deepinfer: V4.1) or "
                "gguf (a Llama model as one llama.cpp file: mxfp4, f32, f16, bf16, q8_0); a recipe a format cannot "
                "express is refused before anything is written; awq / gptq (AutoAWQ GEMM, AutoGPTQ), and "
                "compressed-tensors too, re-lay out IN's integer pairs with a recipe that keeps them "
                "({\"*\": \"keep\"})");
  s->add_option("--shard-index", a->shard_index, "this job's index in a job array (Slurm, Kubernetes indexed jobs)");
  s->add_option("--shard-count", a->shard_count, "jobs in the array; job i converts shards i, i + N, ...");
  s->add_flag("--resume", a->resume, "keep output shards a previous run finished");
  s->add_flag("--no-tokenizer", a->no_tokenizer,
              "with --format gguf: write no vocabulary (tokenizer.ggml.model \"none\") on purpose; without it a "
              "checkpoint with no tokenizer.json or tokenizer.model is refused");
  s->add_flag("--fp8-as-q8", a->fp8_as_q8,
              "with --format gguf and a type recipe: FP8 weights (dequantized exactly) as Q8_0, the rest as the "
              "recipe's type (llama.cpp's convert_hf_to_gguf --fp8-as-q8)");
  s->add_flag("--keep-quantized", a->keep_quantized,
              "with --format gguf and a type recipe: MXFP4 and NVFP4 weights re-laid out unchanged, integer "
              "(INT4/INT8) weights as Q4_0, Q4_1 or Q8_0 where that holds them exactly; the rest as the recipe's "
              "type");
  s->add_flag("--lossless", a->lossless,
              "round nothing: a quantized weight whose target is another scheme is cast into it (MXFP4 -> NVFP4, "
              "MXFP4 -> FP8 tiles as DeepSeek's cast_e2m1fn_to_e4m3fn, FP8 tiles with power-of-two scales -> "
              "MXFP8), every block checked before anything is written; a block that cannot be carried exactly, a "
              "cast that does not exist, or a float tensor the recipe would quantize or narrow is an error");
  s->add_flag("--allow-inexact", a->allow_inexact,
              "with --lossless: write the blocks a cast cannot carry exactly (requantized by the target's rule; "
              "MXFP4 -> FP8 rounds as DeepSeek's cast) and report them and their errors");
  s->add_flag("--json", a->json, "print the report (per tensor: errors; casts: blocks exact / inexact) as JSON");
  s->add_flag("--merge", a->merge, "after a job array: write OUT's index and config.json");
  s->add_option("--threads", a->threads,
                "worker threads over the tensors of all shards (default: all cores); output is the same for any count");
  s->callback([a] { run_convert(*a); });
}

}  // namespace mf::cli
