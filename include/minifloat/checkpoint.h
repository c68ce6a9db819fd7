// minifloat/checkpoint.h: checkpoints as Hugging Face stores them: one .safetensors file, or shards named by
// model.safetensors.index.json, in a directory that usually also holds config.json.
//
// The index is
//   {"metadata": {"total_size": 1234}, "weight_map": {"model.embed_tokens.weight": "model-00001-of-00002.safetensors",
//   ...}}
// where total_size is the sum of the tensors' byte sizes (headers not counted) and every shard name is a plain file
// name in the index's directory. Reading checks each of those rules with its own IoErrc; check_checkpoint() then
// checks the index against the shards themselves.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "minifloat/safetensors.h"

namespace mf::io {

inline constexpr std::string_view kIndexFileName = "model.safetensors.index.json";

struct CheckpointIndex {
  std::optional<std::uint64_t> total_size;        // metadata.total_size, when present
  std::map<std::string, std::string> weight_map;  // tensor name -> shard file name
  // Other metadata entries, kept as JSON text so that a rewrite loses nothing.
  std::map<std::string, std::string> other_metadata;

  std::vector<std::string> shards() const;  // the distinct shard names, sorted
};

// Parses an index (`name` stands for the file in messages). Throws IoError: invalid_json, duplicate_key,
// index_not_object, index_no_weight_map, index_bad_entry, index_bad_total_size, index_bad_shard_name.
CheckpointIndex parse_index(std::string_view json, const std::filesystem::path& name);
CheckpointIndex read_index(const std::filesystem::path& path);
// Writes `index` as indented JSON with sorted keys, all or nothing (temporary file, fsync, rename).
void write_index(const std::filesystem::path& path, const CheckpointIndex& index);

// Where a checkpoint's tensors are.
struct Checkpoint {
  std::filesystem::path directory;                  // holds the shards (and config.json, if any)
  std::optional<std::filesystem::path> index_path;  // set for a sharded checkpoint
  std::vector<std::string> shards;                  // shard file names in `directory`, sorted
  CheckpointIndex index;                            // read, or made up from the one file for a single-file checkpoint

  std::filesystem::path shard_path(std::size_t i) const { return directory / shards[i]; }
  // directory/config.json when it exists.
  std::optional<std::filesystem::path> config_path() const;
};

// Opens `path`: a .safetensors file, an index file, or a directory holding an index or exactly one .safetensors
// file. Reads the index (or the one file's header) but not the shards. Throws IoError (open_failed, no_checkpoint,
// and the index errors).
Checkpoint open_checkpoint(const std::filesystem::path& path);

// Totals over the shards, as check_checkpoint() found them.
struct CheckpointSummary {
  std::uint64_t tensors = 0;
  std::uint64_t tensor_bytes = 0;  // what total_size must be
  std::uint64_t file_bytes = 0;    // including the headers
};

// Maps every shard (each parsed with every safetensors check) and checks the index against them: every tensor it
// lists is in its shard (index_tensor_missing), every tensor of a shard is listed there (index_tensor_unlisted), and
// total_size, when given, is the sum of the tensors' bytes (index_total_size). `headers_only`: each shard is read with
// read_safetensors_header (the same checks, no tensor data read).
CheckpointSummary check_checkpoint(const Checkpoint& checkpoint, bool headers_only = false);

// read_safetensors_header(path) when `headers_only`, else read_safetensors(path).
SafetensorsFile read_shard(const std::filesystem::path& path, bool headers_only);

// The usual shard name: "model-00002-of-00005.safetensors" for i = 1, n = 5 (one-based in the name).
std::string shard_file_name(std::size_t i, std::size_t n);

}  // namespace mf::io
