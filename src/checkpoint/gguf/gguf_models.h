// Internal: the architectures convert --format gguf writes (Llama, gpt-oss, Qwen2, Qwen3, Qwen3-MoE, DeepSeek V3), each
// as llama.cpp's convert_hf_to_gguf writes it: the hyperparameters read from config.json, llama.cpp's name for each
// Hugging Face tensor, and the metadata.
#pragma once

#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "minifloat/gguf.h"
#include "minifloat/gguf_model.h"

namespace mf::io::detail {

enum class GgufArch { llama, gpt_oss, qwen2, qwen3, qwen3moe, deepseek2, deepseek4 };

using GgufKeys = std::vector<std::pair<std::string, GgufValue>>;

// What config.json says, checked: the fields every architecture has, and gpt-oss's experts, sliding window and YaRN
// rotary scaling.
struct GgufModel {
  GgufArch arch = GgufArch::llama;
  std::uint32_t n_layer = 0, n_embd = 0, n_ff = 0, n_head = 0, n_head_kv = 0, n_ctx = 0, n_vocab = 0, head_dim = 0;
  bool explicit_head_dim = false;
  float rope_theta = 10000.0f, rms_eps = 0;
  std::uint32_t n_expert = 0, n_expert_used = 0, sliding_window = 0, yarn_orig_ctx = 0;
  float yarn_factor = 0;  // 0: no rotary scaling
  // Qwen2, Qwen3, Qwen3-MoE, DeepSeek V3: the ARCH.* keys and general.file_type (its value a placeholder that
  // gguf_metadata fills in) in convert_hf_to_gguf's order (gguf_text_model.cc).
  GgufKeys params;
  bool drop_lm_head = false;                              // DeepSeek V3 tied: lm_head is not written
  std::uint32_t kv_b_heads = 0, qk_nope = 0, v_head = 0;  // DeepSeek V3's kv_b_proj split
  std::uint32_t n_ff_exp = 0;                             // Qwen3-MoE: a fused gate_up's rows are 2 x this
  std::uint32_t n_hash_layers = 0;                        // DeepSeek V4: the first layers, routed by tid2eid
};

// config.json's model: LlamaForCausalLM (or model_type llama) or GptOssForCausalLM (model_type gpt_oss). Throws
// IoError gguf_unsupported naming `file` and the architecture or field otherwise.
GgufModel gguf_model(const nlohmann::json& config, const std::filesystem::path& file);

// One output tensor of a Hugging Face tensor: its llama.cpp name, and which of its rows it takes: rows
// offset, offset + stride, ... along the axis that gpt-oss interleaves gate and up on (the last of a 2-D bias, the
// middle of a 3-D expert tensor); stride 1 takes them all.
struct GgufName {
  std::string name;
  std::uint32_t stride = 1, offset = 0;
  // One expert's 2-D weight, index `expert` of the 3-D `name` that stacks every expert of its layer.
  static constexpr std::uint32_t kNoExpert = ~std::uint32_t{0};
  std::uint32_t expert = kNoExpert;
  // The first axis cut into `groups` equal groups (heads, experts) and rows [first, first + count) of each taken, each
  // group's slice transposed when `transpose`: DeepSeek's kv_b_proj into k_b and v_b, a fused gate_up into gate and
  // up. groups 0: no such split.
  // group_rows: the rows each group must have.
  std::uint32_t groups = 0, group_rows = 0, first = 0, count = 0;
  bool transpose = false;
};

// llama.cpp's names for Hugging Face tensor `hf` (one, or gate then up for gpt-oss's fused gate_up, k_b then v_b for
// DeepSeek's kv_b_proj); an empty list for one llama.cpp drops (rotary inv_freq buffers, DeepSeek's MTP layers and
// tied lm_head); nullopt for one it has no name for.
std::optional<std::vector<GgufName>> gguf_names(const GgufModel& m, std::string_view hf);

// What the refusal of an unnamed tensor says the architecture maps.
std::string gguf_mapped(const GgufModel& m);

// True for a tensor llama.cpp keeps in F32 whatever the requested type (biases, norms, the MoE router).
bool gguf_keeps_f32(const GgufModel& m, std::string_view gguf_name);

// The metadata llama.cpp reads for `m` but the tokenizer's (gguf_tokenizer.h); file_type: llama_ftype of the
// weights.
std::vector<std::pair<std::string, GgufValue>> gguf_metadata(const GgufModel& m, std::uint32_t file_type,
                                                             const std::string& model_name);

// llama_ftype of the recipe's weights: general.file_type (gguf_requantize.cc).
std::uint32_t gguf_file_type(const GgufRecipe& r);

// A GGUF file as convert --format gguf's input (gguf_requantize.cc): a path ending in .gguf that is not a directory.
bool is_gguf_input(const std::filesystem::path& in);
// Its weights requantized by the recipe into `out`, the rest as in `in` (docs/checkpoints.md, "A GGUF file as IN").
ConvertReport requantize_gguf(const std::filesystem::path& in, const std::filesystem::path& out,
                              const GgufRecipe& recipe, const ConvertOptions& options, GgufTokenizerMode tokenizer);

// ---- shared by the architectures (gguf_models.cc) ----

[[noreturn]] void gguf_unsupported(const std::filesystem::path& file, std::string_view what);
std::uint32_t count_field(const nlohmann::json& c, const char* key, const std::filesystem::path& file);
float float_field(const nlohmann::json& c, const char* key, const std::filesystem::path& file);
// A layer number as Hugging Face writes it (decimal, no leading zero) below n_layer.
bool layer_number(std::string_view digits, std::uint32_t n_layer);
// model.layers.N.REST split into N and REST (N a layer number below n_layer); nullopt for another name.
std::optional<std::pair<std::string_view, std::string_view>> layer_part(std::string_view hf, std::uint32_t n_layer);
// blk.N.TO.KIND for REST = FROM.KIND (KIND weight or bias) and a pair FROM -> TO of `modules`; nullopt for another.
using ModuleNames = std::span<const std::pair<std::string_view, std::string_view>>;
std::optional<std::vector<GgufName>> module_name(std::string_view n, std::string_view rest, ModuleNames modules);
// The hyperparameters every architecture has (head_dim: config.json's, or hidden_size / num_attention_heads).
void read_common(const nlohmann::json& c, const std::filesystem::path& file, GgufModel& m);
// general.* and ARCH.{block_count, ..., layer_norm_rms_epsilon[, key_length, value_length]}.
std::vector<std::pair<std::string, GgufValue>> common_metadata(const GgufModel& m, std::string_view arch,
                                                               const std::string& model_name);

// general.architecture, general.type and general.name.
GgufKeys general_metadata(std::string_view arch, const std::string& model_name);
// Where the architectures past llama and gpt-oss put general.file_type's value in GgufModel::params.
inline constexpr std::string_view kFileTypeKey = "general.file_type";

GgufModel llama_model(const nlohmann::json& c, const std::filesystem::path& file);
std::optional<std::vector<GgufName>> llama_names(std::string_view hf, std::uint32_t n_layer);
GgufModel gpt_oss_model(const nlohmann::json& c, const std::filesystem::path& file);
std::optional<std::vector<GgufName>> gpt_oss_names(std::string_view hf, std::uint32_t n_layer);
std::vector<std::pair<std::string, GgufValue>> gpt_oss_metadata(const GgufModel& m, std::uint32_t file_type,
                                                                const std::string& model_name);

// Qwen2, Qwen3, Qwen3-MoE and DeepSeek V3 (gguf_qwen.cc, gguf_deepseek2.cc, gguf_text_model.cc).
GgufModel qwen_model(const nlohmann::json& c, const std::filesystem::path& file, GgufArch arch);
std::optional<std::vector<GgufName>> qwen_names(const GgufModel& m, std::string_view hf);
// blk.N.ffn_{gate,up,down}_exps.weight for REST = mlp.experts.E.{gate,up,down}_proj.weight (E below n_expert): the
// expert's slot of the tensor stacking its layer's experts; nullopt for another REST.
std::optional<std::vector<GgufName>> expert_name(std::string_view n, std::string_view rest, std::uint32_t n_expert);
GgufModel deepseek2_model(const nlohmann::json& c, const std::filesystem::path& file);
std::optional<std::vector<GgufName>> deepseek2_names(const GgufModel& m, std::string_view hf);
// DeepSeek V4's release form (gguf_deepseek4.cc): bare names, MTP dropped; ffn.gate.tid2eid named for the hash
// layers.
GgufModel deepseek4_model(const nlohmann::json& c, const std::filesystem::path& file);
std::optional<std::vector<GgufName>> deepseek4_names(const GgufModel& m, std::string_view hf);
// llama.cpp's name of the architecture (general.architecture).
std::string_view gguf_arch_name(GgufArch arch);
// TextModel.set_gguf_parameters of convert_hf_to_gguf for `arch` (block_count ... general.file_type), read from
// config.json `c` (with num_key_value_heads and rms_norm_eps overridden where given); what it cannot write as the
// converter does (rope types other than default, linear and yarn; pooling; non-causal attention) is refused.
struct TextOverrides {
  std::optional<std::uint32_t> n_head_kv;
  std::optional<float> rms_eps;
};
GgufKeys text_model_params(const nlohmann::json& c, const std::filesystem::path& file, GgufArch arch,
                           const TextOverrides& o = {});
// GGUFWriter.add_key_value: a key already there keeps its place and takes the new value; a new one is appended.
void set_key(GgufKeys& keys, std::string key, GgufValue value);
// The rotary parameters as the converter reads them (rope_parameters, else rope_scaling, with rope_theta, type and
// original_max_position_embeddings mirrored from the top level).
nlohmann::json rope_parameters(const nlohmann::json& c, const std::filesystem::path& file);
// config.json's first present, non-null key of `keys` (find_hparam), or nullptr.
const nlohmann::json* find_param(const nlohmann::json& c, std::initializer_list<const char*> keys);

}  // namespace mf::io::detail
