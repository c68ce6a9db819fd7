// Internal: where convert's and dequantize's output goes, and what it may never touch: the output paths of a
// checkpoint's shards, the refusal to write over or into the input, temporary files of a killed run, and shards an
// earlier run finished (--resume).
#pragma once

#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "minifloat/checkpoint.h"
#include "minifloat/safetensors.h"

namespace mf::io::detail {

// Where shard `name` goes: into the directory `out`, or `out` itself for one file written to a .safetensors path.
std::filesystem::path output_path(const std::filesystem::path& out, const Checkpoint& c, const std::string& name);
std::filesystem::path output_dir(const std::filesystem::path& out, const Checkpoint& c);
// Every output shard's path, in the input's shard order.
std::vector<std::filesystem::path> output_shards(const Checkpoint& c, const std::filesystem::path& out);

// The path with symbolic links resolved where it exists (absolute otherwise).
std::filesystem::path real_path(const std::filesystem::path& p);

// Throws IoError when OUT would overwrite the input file, or (a directory in) is, lies inside or holds its directory.
void refuse_overwriting_input(const std::filesystem::path& in, const Checkpoint& c, const std::filesystem::path& out);

// Removes the temporary files a killed run left for the output files `names` in `dir`.
void remove_stale_temps(const std::filesystem::path& dir, const std::set<std::string>& names);

// A shard written by an earlier run: it parses with every check and holds exactly the planned tensors.
bool already_done(const std::filesystem::path& path, const std::vector<SafetensorsWriter::Spec>& specs);

// `text` written to `path` through a temporary file renamed whole.
void write_text(const std::filesystem::path& path, const std::string& text);

}  // namespace mf::io::detail
