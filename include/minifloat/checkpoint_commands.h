// minifloat/checkpoint_commands.h: whole-checkpoint operations behind `minifloat inspect | convert | dequantize |
// verify | memory | make-example-checkpoint`. Each works tensor by tensor: inputs are memory-mapped (each tensor's
// pages released after use) and each output tensor goes straight to its place in its shard's file (SafetensorsWriter).
//
// Parallelism: convert, dequantize, verify and inspect --stats spread the tensors of all their shards over a pool of
// worker threads. Each worker holds one tensor at a time, so the working memory is at most `threads` tensors' buffers
// (about ten times a tensor's bf16 size each: f32 input, f32 dequantized copy for the error table, codes), whatever
// the shard size. The results do not depend on the thread count: output files are byte for byte the same, report
// rows come in shard order then data order, and an error is the one a sequential pass would have stopped at.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "minifloat/checkpoint.h"
#include "minifloat/dtype.h"
#include "minifloat/hf_config.h"
#include "minifloat/recipe.h"

namespace mf::io {

// ---- the tensors a config implies ----

struct ShapedName {
  std::string name;
  std::vector<std::uint64_t> shape;
  DType dtype = DType::BF16;  // a float parameter's, as the example writes it; I64 for an integer table
};

// Every parameter tensor of the model `config` describes, with its shape, in checkpoint order:
//   model_type "deepseek_v4": DeepSeek's own names (embed, layers.N.attn.wq_a, ffn.experts.E.w1, ffn.shared_experts,
//     attn.compressor, attn.indexer, hc_attn_fn, head), the shape make-example-checkpoint writes;
//   otherwise DeepSeek V3's Hugging Face names (MLA attention, first_k_dense_replace dense layers, MoE layers with
//     n_routed_experts + n_shared_experts, no MTP layers).
// Throws HfConfigError (missing_key) naming a missing field.
std::vector<ShapedName> model_tensors(const HfConfig& config);

// ---- make-example-checkpoint ----

// The model an example checkpoint is shaped like:
//   v4_like      the default: DeepSeek-V4's module names in DeepSeek's form, with simplified shapes (no grouped
//                output, sinks or hyper-connection heads) that no model class takes; what the tests and benchmarks
//                of convert were written against (63 tensors at the default size);
//   deepseek_v4  DeepSeek-V4 as DeepSeek releases it (names transformers' deepseek_v4 model renames on load), with
//                both compressed attention types and a hash-routed first layer;
//   llama        Hugging Face LlamaForCausalLM;
//   qwen_moe     Hugging Face Qwen3MoeForCausalLM (experts stored one by one).
// The last three load in transformers' own classes with no missing or unexpected keys.
enum class ExampleArch { v4_like, deepseek_v4, llama, qwen_moe };
// "v4-like", "deepseek-v4", "llama", "qwen-moe"; throws std::invalid_argument listing them.
ExampleArch example_arch_named(std::string_view name);

// The example's size: the defaults give the tiny v4-like test checkpoint (63 tensors, 300 kB); larger ones feed
// benchmarks. intermediate is the Llama MLP's width (and Qwen-MoE's unused dense width).
struct ExampleSize {
  int hidden = 64, layers = 2, experts = 4, moe_intermediate = 32, vocab = 256, intermediate = 256;
};
// The default size of each architecture: v4_like's above; the others hidden 128 (heads of 64, so every linear's
// sides are multiples of 128 and 128 x 128 blocks divide them), 2 layers, 4 experts of width 128, vocabulary 256.
ExampleSize example_size(ExampleArch arch);
// A tiny bf16 checkpoint of `arch` in `dir` (created): config.json, `shards` shards and their index; deterministic
// values (normal, std 0.02 for matrices, near 1 for vectors; a hash router's token table t -> t, t + 1, ... mod the
// expert count). The architectures other than v4_like pin each matrix's amax to 2688 x 2^-16 (the rest clamped to
// 0.04), so NVFP4's tensor scale is a power of two that compressed-tensors' global scale holds exactly. Returns the
// config.
HfConfig write_example_checkpoint(const std::filesystem::path& dir, int shards = 2, const ExampleSize& size = {},
                                  ExampleArch arch = ExampleArch::v4_like);

// ---- published releases in miniature ----

// A published checkpoint family's storage layout in miniature (docs/checkpoints.md, "Published releases in
// miniature", names each one's sources): its tensor names, dtypes, scale grids and config.json, with the values of
// the `--arch` example's bf16 model quantized by minifloat into the release's scheme.
//   deepseek_v4_release  DeepSeek-V4-Flash as released: bare names (layers.N.attn.wq_a.weight, ffn.experts.E.w1.weight,
//                        mtp.0.*), FP8 with X.scale F8_E8M0 per 128x128, routed experts FP4 as I8 [R, C/2] with
//                        X.scale F8_E8M0 [R, C/32], F32 hyper-connection mixers and biases; expert_dtype "fp4" at the
//                        top level of config.json
//   deepseek_v4_1        DeepSeek-V4.1-Flash: the same names with 32x32 FP8 tiles, an engram table with 1x32 scales,
//                        quantization_config (and the text model's fields) nested under text_config
//   deepseek_v3          DeepSeek-V3 / R1 (and Kimi K2-Instruct's form): Hugging Face names, W_scale_inv F32 per
//                        128x128 with partial edge tiles, an MTP layer
//   qwen_fp8             Qwen3-MoE FP8: W_scale_inv in BF16 per 128x128
//   fp8_per_tensor       Llama as transformers' FineGrainedFP8 holds it with weight_block_size null (Mistral's HF FP8):
//                        one F32 W_scale_inv [] per weight, and an F32 activation_scale []
//   modelopt_*           Llama as NVIDIA ModelOpt's HF export writes it (config.json and hf_quant_config.json):
//                        fp8_pc_pt (FP8_PER_CHANNEL_PER_TOKEN: W F8_E4M3 + W_scale F32 [R]), w4a16_awq (W U8
//                        [R/2, C] + W_scale F32 [R, C/128] + pre_quant_scale BF16 [C]), w8a16 (W I8 + W_scale F32
//                        [R]), w8a8_sq (that + input_scale and pre_quant_scale), w4a8_awq (w4a16_awq's + an F32
//                        W_scale_2 and input_scale: a form minifloat refuses, by name)
//   autoawq              Llama as AutoAWQ writes GEMM W4 g128 (qweight / qzeros / scales F16, F16 model)
//   gptq, gptq_v2        Llama as AutoGPTQ writes 4-bit g128 with desc_act (v1: zeros stored - 1) and as GPTQModel
//                        writes checkpoint_format gptq_v2 (asymmetric, zeros as they are)
//   compressed_tensors_w4a16[_asym]  Llama as llm-compressor's W4A16 (W4A16_ASYM: packed zero points) writes it
//   kimi_k2_thinking     DeepSeek-V3 architecture, routed experts INT4 pack-quantized group 32, BF16 scales
//   compressed_tensors_mixed_nvfp4   Llama, FP8 per-channel attention + NVFP4 MLP (mixed-precision)
enum class ReleaseLike {
  deepseek_v4_release,
  deepseek_v4_1,
  deepseek_v3,
  qwen_fp8,
  fp8_per_tensor,
  modelopt_fp8_pc_pt,
  modelopt_w4a16_awq,
  modelopt_w8a16,
  modelopt_w8a8_sq,
  modelopt_w4a8_awq,
  autoawq,
  gptq,
  gptq_v2,
  compressed_tensors_w4a16,
  compressed_tensors_w4a16_asym,
  kimi_k2_thinking,
  compressed_tensors_mixed_nvfp4
};
// "deepseek-v4-release", "deepseek-v4.1", "deepseek-v3", "qwen-fp8", "fp8-per-tensor", "modelopt-fp8-pc-pt",
// "modelopt-w4a16-awq", "modelopt-w8a16", "modelopt-w8a8-sq", "modelopt-w4a8-awq", "autoawq", "gptq", "gptq-v2",
// "compressed-tensors-w4a16", "compressed-tensors-w4a16-asym", "kimi-k2-thinking", "compressed-tensors-mixed-nvfp4";
// throws std::invalid_argument.
ReleaseLike release_like_named(std::string_view name);
std::string_view to_string(ReleaseLike like);
// Writes the miniature of `like` in `dir` (created): config.json, `shards` shards (a weight's scales in its shard)
// and their index; deterministic bytes. Returns the config.
HfConfig write_release_example(const std::filesystem::path& dir, ReleaseLike like, int shards = 2);

// ---- memory ----

struct MemoryClass {
  std::string target;  // "fp8-128x128", "e2m1-1x32-ue8m0-rceil", "bf16", "f32", "keep"
  std::uint64_t params = 0;
  std::uint64_t data_bytes = 0;  // elements
  std::uint64_t scale_bytes = 0;
  std::uint64_t tensors = 0;
};
struct MemoryReport {
  std::vector<MemoryClass> classes;  // by target, largest first
  std::uint64_t params = 0, bytes = 0;
};
// Parameter count and bytes per precision class when `recipe` is applied to model_tensors(config). "keep" counts
// the config's dtype (bf16 unless torch_dtype says float32 / float16).
MemoryReport memory_report(const HfConfig& config, const Recipe& recipe);

// ---- split work across a job array ----

// Which shards of `count` a job does: shard i belongs to job i % job_count. Throws std::invalid_argument unless
// 0 <= job_index < job_count.
bool shard_is_mine(std::size_t shard, std::size_t job_index, std::size_t job_count);

// ---- convert and dequantize ----

// The checkpoint dialect convert writes (docs/checkpoints.md, "Writing dialects"): minifloat's DeepSeek-like form,
// compressed-tensors 0.20, NVIDIA ModelOpt's HF export, or transformers' FineGrainedFP8; AutoAWQ GEMM and AutoGPTQ
// (integer pairs re-laid out only).
enum class WriteFormat {
  minifloat,
  compressed_tensors,
  modelopt,
  transformers_fp8,
  gpt_oss,
  deepseek,
  gguf,
  awq,
  gptq
};
// "minifloat", "compressed-tensors", "modelopt", "transformers-fp8", "gpt-oss", "deepseek", "gguf" (one file:
// convert_to_gguf, gguf.h), "awq", "gptq"; throws std::invalid_argument listing them.
WriteFormat write_format_named(std::string_view name);
std::string_view to_string(WriteFormat f);
// Throws std::invalid_argument when `format` cannot express every scheme target of `recipe`, naming the formats
// that can (called by convert_checkpoint before anything is written).
void check_write_format(const Recipe& recipe, WriteFormat format);

struct TensorReport {
  std::string name, target;
  double rmse = 0, max_abs = 0, rel_rmse = 0;  // of the dequantized tensor against the input (quantized targets)
  // convert --lossless, a pair cast into another scheme (lossless_cast.h): the output's blocks, those holding a value
  // that differs from the input's (only with --allow-inexact), and the largest |error| / |input| over the values.
  // blocks == 0: no cast.
  std::uint64_t blocks = 0, inexact_blocks = 0;
  double max_rel = 0;
};
struct ConvertOptions {
  std::size_t job_index = 0, job_count = 1;  // --shard-index / --shard-count: a job converts only its shards
  bool resume = false;                       // skip output shards that already exist and check
  bool write_index = true;                   // the job (or merge step) that writes the index and config.json
  // Worker threads, 0 for one per hardware thread. Tensors (of any shard) are handed out in checkpoint order to the
  // workers, each quantizing its tensor single-threaded; a tensor that alone is at least one worker's share of the
  // input (a file of one or two large tensors) is quantized with all `threads` instead. 1: one tensor after the
  // other on the calling thread. Shards open at once: about one per worker, each committed (fsync, rename) by the
  // worker that finishes its last tensor.
  int threads = 0;
  // Input bytes done and in all, after each tensor: called from the workers, one call at a time, `done` never
  // decreasing.
  std::function<void(std::uint64_t done, std::uint64_t total)> progress;
  // dequantize: tensors whose names match one of these globs are copied unchanged, even where they look quantized.
  // Each must match some tensor (checked in a one-job run).
  std::vector<std::string> passthrough;
  WriteFormat format = WriteFormat::minifloat;  // convert: the dialect of the tensors and config written
  // convert --lossless: a pair whose target is another scheme is cast (lossless_cast.h), never requantized, and no
  // tensor is rounded (a float tensor given a scheme, or narrowed to BF16, is refused); every cast runs once before
  // anything is written and a block it cannot carry exactly is an error naming the tensor and block.
  bool lossless = false;
  bool allow_inexact = false;  // with lossless: such blocks are written requantized and counted (TensorReport)
};
struct ConvertReport {
  std::vector<TensorReport> tensors;
  std::uint64_t input_bytes = 0, output_bytes = 0;
  std::size_t shards_written = 0, shards_skipped = 0;
};
// bf16 / f16 / f32 weights to the recipe's targets; one output shard per input shard (same names), an index, and
// config.json with quantization_config set as the recipe says. `out` must not be `in` (nor hold it). Each shard is
// written to a temporary name and renamed, so an interrupted run leaves only whole shards; `resume` keeps them. On an
// error (a tensor, a shard), no more tensors are started, the ones in flight finish, shards not yet whole leave no
// file behind, and the error is rethrown as raised (naming the file and tensor).
ConvertReport convert_checkpoint(const std::filesystem::path& in, const std::filesystem::path& out,
                                 const Recipe& recipe, const ConvertOptions& options = {});
// Writes out/model.safetensors.index.json (and config.json) from the shards present in `out`: the merge step after a
// job array. Throws IoError if a shard of the input's index is missing in `out`.
// `format` sets config.json's quantization_config (and ModelOpt's hf_quant_config.json).
void merge_index(const std::filesystem::path& in, const std::filesystem::path& out, const Recipe* recipe,
                 WriteFormat format = WriteFormat::minifloat);

// FP8 / FP4 pairs (W + W_scale_inv, W + W_scale + W_scale_2) back to plain F32 or BF16 weights named W, and every other
// float tensor converted to that dtype. Never silent: a tensor that looks quantized (a quantized dtype, or a scale's
// name) and is part of no pair is an IoError (not_dequantizable) naming it, raised before anything is written,
// unless options.passthrough names it. config.json loses its quantization_config, and hf_quant_config.json is not
// copied. Same streaming, sharding and all-or-nothing rules as convert.
ConvertReport dequantize_checkpoint(const std::filesystem::path& in, const std::filesystem::path& out, bool bf16,
                                    const ConvertOptions& options = {});

// ---- verify ----

struct VerifyError : std::runtime_error {
  VerifyError(std::string tensor, const std::string& what) : std::runtime_error(what), tensor(std::move(tensor)) {}
  std::string tensor;
};
struct VerifyOptions {
  ConfigRules rules = ConfigRules::detect;
  bool fp4_qat = false;  // check FP8 routed experts for FP4-QAT even when config.json does not ask for FP4 experts
  int threads = 0;       // workers over the pairs and experts of all shards, 0 for one per hardware thread
  // Read only the shards' headers (read_safetensors_header): the index against the shards, config.json, every pair's
  // names, dtypes and shapes (and its block grid against the config), the quantization rule and the config against
  // the pairs; no scale, code or FP4-QAT check (those read the values).
  bool headers_only = false;
};
struct VerifyReport {
  CheckpointSummary summary;
  std::size_t pairs = 0, qat_tensors = 0;  // qat_tensors: the ones checked (none headers-only)
  bool headers_only = false;
  std::optional<HfConfig> config;
};
// The index against the shards (check_checkpoint), config.json by its rules, every quantized pair (finite,
// positive scales; weight codes that are not NaN; shapes that fit one block scheme), and DeepInfer's FP4-QAT
// condition (docs/spec.md#fp4-qat) on FP8 routed experts (`*.experts.*`) when the config asks for FP4 experts or
// fp4_qat is set: each 1x32 block is e2m1 values times one power of two, else "Only support FP4-QAT checkpoint". Throws
// VerifyError naming the tensor, or IoError / HfConfigError.
VerifyReport verify_checkpoint(const std::filesystem::path& path, const VerifyOptions& options = {});

// True when the 32 (or fewer) e4m3 codes are e2m1 values times one power of two (DeepInfer's FP4-QAT check).
bool fp4_qat_block(std::span<const std::uint8_t> e4m3_codes);

// ---- inspect ----

struct TensorInfo {
  std::string name, shard;
  DType dtype;
  std::vector<std::uint64_t> shape;
  std::uint64_t bytes = 0;
  std::string role;  // "weight of <scheme> (<pair form>)", "scale of W", "tensor scale of W", or "" for a plain one
  std::uint64_t params = 0;  // logical elements (scales count 0: they are overhead)
  // --stats, floating tensors and dequantized pairs: over the values
  std::optional<double> min, max, mean, rms;
  std::uint64_t nonfinite = 0;
};
struct InspectReport {
  Checkpoint checkpoint;
  std::vector<TensorInfo> tensors;  // in shard order, then data order
  std::uint64_t params = 0, bytes = 0;
  std::optional<HfConfig> config;  // when config.json is there
  std::string scheme_summary;      // "fp8-128x128 x 12, e2m1-1x32-ue8m0-rceil x 24" or "none"
  // The published family the pairs' forms (and config.json) name, "" when they name none: "DeepSeek-V4 as released
  // (X.weight + X.scale): ...", "DeepSeek-V4.1 ...", "Qwen FP8 release (... BF16 block scales) x N", "transformers
  // FineGrainedFP8 per tensor ... x N", "DeepSeek-V3 / R1 / V3.1 FP8 ... x N".
  std::string family;
  // Why the other commands would refuse this checkpoint, "" when they would not: a tensor quantized (by dtype or
  // name) in no pair minifloat reads, or a declared quantization it does not read (the message they throw).
  std::string not_understood;
};
// With `stats`, the statistics of the tensors are computed by `threads` workers (0: one per hardware thread). A
// checkpoint the other commands refuse is still listed (roles "not understood: ..."), with not_understood set.
// `headers_only`: each shard read with read_safetensors_header (no tensor data read, so a compressed-tensors pair's
// columns come from config.json's num_bits: find_pairs); with `stats`, std::invalid_argument.
InspectReport inspect_checkpoint(const std::filesystem::path& path, bool stats, ConfigRules rules, int threads = 0,
                                 bool headers_only = false);

}  // namespace mf::io
