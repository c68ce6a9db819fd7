// minifloat/gguf_model.h: GGUF files as whole models: a Hugging Face checkpoint converted into one GGUF file that
// llama.cpp loads (convert --format gguf), and a GGUF file dequantized into safetensors or verified as a checkpoint
// (dequantize, verify). The file container itself (reading, writing, the block codecs) is gguf.h.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "minifloat/checkpoint_commands.h"
#include "minifloat/gguf.h"
#include "minifloat/recipe.h"

namespace mf::io {

// ---- a Hugging Face checkpoint as one GGUF file: convert --format gguf (src/checkpoint/gguf/gguf_convert.cc) ----

// What each 2-D weight is written as: one ggml type for all (`type`: F32, F16, BF16 or Q8_0, as llama.cpp's
// convert_hf_to_gguf --outtype), or (`recipe`) MXFP4 where the recipe quantizes, every scheme target of which must be
// mxfp4, and the recipe's bf16 / f32 / keep elsewhere. 1-D tensors (norms, biases) are F32 either way, as llama.cpp
// keeps them.
// A quantized pair (FP8, NVFP4, INT4, ...) is dequantized exactly and encoded once as the type, with these choices
// (docs/checkpoints.md, the table "source scheme -> GGML type"; type recipes only):
//   fp8_as_q8       llama.cpp's --fp8-as-q8: FP8-sourced 2-D weights as Q8_0, everything else as `type`;
//   keep_quantized  MXFP4 and NVFP4 pairs re-laid out with their codes and scales unchanged, integer pairs as the
//                   first of Q4_0, Q4_1, Q8_0 that holds their values exactly; the rest as `type`.
struct GgufRecipe {
  std::string name;
  std::optional<GgufType> type;
  std::optional<Recipe> recipe;
  bool fp8_as_q8 = false;
  bool keep_quantized = false;
};
// "f32", "f16", "bf16", "q8_0", or a recipe (load_recipe: a name or a .json file). Throws RecipeError for an unknown
// recipe and std::invalid_argument for one GGUF cannot express (nvfp4, fp8-*, mixed schemes), naming the formats
// that can.
GgufRecipe gguf_recipe(const std::string& name);
bool is_gguf_type_name(std::string_view name);  // f32, f16, bf16, q8_0

// What convert_to_gguf does about the tokenizer: `required` converts the checkpoint's tokenizer files (tokenizer.json,
// tokenizer_config.json, tokenizer.model, ...) and refuses a checkpoint without any (IoError gguf_no_tokenizer, before
// anything is written); `none` writes tokenizer.ggml.model "none" and no vocabulary on purpose (--no-tokenizer).
enum class GgufTokenizerMode { required, none };

// A Llama checkpoint (config.json: architectures LlamaForCausalLM, or model_type llama) as one GGUF v3 file `out`
// (a path ending in .gguf) that llama.cpp loads: llama.cpp's tensor names (token_embd, blk.N.attn_q, ...,
// output_norm, output), Q and K rows permuted as convert_hf_to_gguf permutes them for llama's rotary embedding,
// the llama.* metadata from config.json, general.file_type, and the tokenizer as convert_hf_to_gguf writes it
// (tokenizer.ggml.* and tokenizer.chat_template: a BPE tokenizer.json as "gpt2" with tokenizer.ggml.pre chosen by
// the converter's fingerprint table, a SentencePiece tokenizer.model or a byte-fallback BPE as "llama" with scores;
// IoError gguf_tokenizer naming the file for one it cannot convert so, and for a token count that is not the
// embedding's rows). Or a gpt-oss checkpoint (GptOssForCausalLM) as
// convert_hf_to_gguf's GptOssModel writes it (arch gpt-oss): its MXFP4 experts (X_blocks, or per-expert weights of any
// packed dialect) re-laid out into ggml MXFP4 blocks with codes and scales unchanged, gate_up split into
// ffn_gate_exps and ffn_up_exps, the gpt-oss.* metadata (experts, sliding window, YaRN). Every tensor is planned and
// every config field checked before the file is created; the file is written to a temporary name and renamed. Throws
// IoError gguf_unsupported naming the architecture, config field or tensor it has no mapping for, and IoError /
// std::invalid_argument for values a type cannot hold (naming the tensor). The report's rows: each tensor written
// lossily (Q8_0, MXFP4, F16 or BF16 from wider values) with its error.
// `in` a .gguf file (llama or gpt-oss): its weights requantized by the recipe (each value dequantized exactly, encoded
// once), every other tensor's bytes, the names, order and shapes, and the metadata (tokenizer included) kept but
// general.file_type; a tensor to requantize of a type minifloat does not decode is IoError not_dequantizable, raised
// before anything is written; `tokenizer` none and `out` equal to `in` are refused (docs/checkpoints.md).
ConvertReport convert_to_gguf(const std::filesystem::path& in, const std::filesystem::path& out,
                              const GgufRecipe& recipe, const ConvertOptions& options = {},
                              GgufTokenizerMode tokenizer = GgufTokenizerMode::required);

// ---- GGUF files as checkpoints (src/checkpoint/gguf/gguf_files.cc) ----

struct GgufDequantizeReport {
  std::size_t tensors = 0;
  std::uint64_t input_bytes = 0, output_bytes = 0;
};
// Every tensor of `in` dequantized into the safetensors file `out` (F32, or BF16 rounded to nearest even), names and
// shapes (numpy order) kept, written to a temporary name and renamed. Never silent: a tensor of a type minifloat
// does not decode is an IoError (not_dequantizable) naming it, raised before anything is written.
GgufDequantizeReport dequantize_gguf_file(const std::filesystem::path& in, const std::filesystem::path& out, bool bf16);

struct GgufVerifyReport {
  std::size_t tensors = 0, decoded = 0;
};
// Every header check of read_gguf, then every decodable tensor's values: finite (a NaN or Inf Q8_0 scale, an
// MXFP4 scale byte of 255, is named). Throws IoError or VerifyError (checkpoint_commands.h).
GgufVerifyReport verify_gguf(const std::filesystem::path& path);

}  // namespace mf::io
