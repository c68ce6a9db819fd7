// Internal: the tokenizer that convert --format gguf writes, read from the checkpoint's tokenizer.json,
// tokenizer_config.json and tokenizer.model (SentencePiece) as llama.cpp's convert_hf_to_gguf and gguf-py's
// SpecialVocab read them (docs/checkpoints.md, "GGUF (llama.cpp)").
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gguf_models.h"
#include "minifloat/gguf.h"

namespace mf::io::detail {

// tokenizer.json's added_tokens, as transformers holds them once it has loaded the tokenizer (tokenizer_config.json's
// named special tokens marked special).
struct AddedToken {
  std::string content;
  std::uint32_t id = 0;
  bool special = false, normalized = true, lstrip = false, rstrip = false, single_word = false;
};

// A tokenizer.json with what transformers adds from tokenizer_config.json.
struct HfTokenizer {
  std::filesystem::path file;     // tokenizer.json, for messages
  nlohmann::json json;            // the whole file
  nlohmann::json config;          // tokenizer_config.json, or an empty object
  std::vector<AddedToken> added;  // in id order
  // The token (model vocabulary or added) with this content; nullopt for none.
  std::optional<std::uint32_t> id_of(const std::string& content) const;
};

// What llama.cpp's converter names the BPE pre-tokenizer of `t` (get_vocab_base_pre): transformers' encoding of the
// converter's fixed text (chktxt), as a Python list's str(), hashed with SHA-256 and looked up in the converter's
// table. `hash` is always set; `name` is nullopt for a hash the table does not hold. Throws IoError gguf_tokenizer
// naming t.file and the part (normalizer, pre-tokenizer, model, post-processor, regex) that minifloat cannot
// reproduce, rather than guess a hash.
struct BpePre {
  std::string hash;
  std::optional<std::string> name;
  std::vector<std::uint32_t> ids;  // the encoding hashed
};
BpePre bpe_pre(const HfTokenizer& t);

// SHA-256 of `bytes` as 64 lowercase hex digits.
std::string sha256_hex(std::string_view bytes);

// The converter's table of (hash, name), in its order (a hash that appears twice keeps the later name, as the
// converter's sequence of ifs does).
const std::vector<std::pair<std::string_view, std::string_view>>& bpe_pre_table();

// The tokenizer.* metadata of the checkpoint in `dir`, written as llama.cpp's converter writes it for `m`
// (LlamaModel.set_vocab for Llama, _set_vocab_gpt2 for gpt-oss), and the number of tokens (the rows that
// token_embd must have). nullopt when `dir` holds no tokenizer.json and no tokenizer.model. Throws IoError
// invalid_json / duplicate_key for a file that does not parse, gguf_tokenizer naming the file and key for a
// tokenizer it cannot convert as the converter does (an unknown pre-tokenizer, ids past config.json's vocab_size,
// a SentencePiece model that does not parse, ...).
struct GgufTokenizer {
  std::vector<std::pair<std::string, GgufValue>> metadata;
  std::uint64_t tokens = 0;
  std::filesystem::path file;  // the file the vocabulary came from, for messages
};
std::optional<GgufTokenizer> gguf_tokenizer(const std::filesystem::path& dir, const nlohmann::json& config,
                                            const GgufModel& m);

}  // namespace mf::io::detail
