// Checkpoints: a file, an index or a directory opened as one list of shards, and the index checked against them.
#include "minifloat/checkpoint.h"

#include <algorithm>
#include <set>

#include "byte_source.h"
#include "file.h"
#include "minifloat/remote.h"

namespace mf::io {
namespace {

namespace fs = std::filesystem;
using detail::cat;

bool is_safetensors(const fs::path& p) { return p.extension() == ".safetensors"; }

Checkpoint from_index(const fs::path& index_path) {
  Checkpoint c;
  c.directory = index_path.parent_path();
  c.index_path = index_path;
  c.index = read_index(index_path);
  c.shards = c.index.shards();
  return c;
}

// A single file: the index is made up from its header, so every command sees one shape of checkpoint.
Checkpoint from_file(const fs::path& file) {
  Checkpoint c;
  c.directory = file.parent_path();
  c.shards = {file.filename().string()};
  // Locally the whole file is mapped and checked; over HTTP its header only.
  const SafetensorsFile f = detail::is_url(file) ? read_safetensors_header(file) : read_safetensors(file);
  c.index.total_size = f.data_size();
  for (const SafetensorsTensor& t : f.tensors()) c.index.weight_map.emplace(t.name, c.shards[0]);
  return c;
}

// Over HTTP: the index, or the one file's header, read by range requests; then every shard's header fetched in
// parallel into the cache, where the commands' readers find it. A URL that names neither an index nor a .safetensors
// file (hf://ORG/REPO) is a directory: its index, else its model.safetensors.
Checkpoint open_remote(const std::string& location) {
  begin_remote_session();
  const fs::path url = resolve_hf(location);
  Checkpoint c;
  if (url.extension() == ".json") {
    c = from_index(url);
  } else if (is_safetensors(url)) {
    c = from_file(url);
  } else if (detail::read_small_file(url / kIndexFileName, kMaxSafetensorsHeader, "index")) {
    c = from_index(url / kIndexFileName);
  } else {
    c = from_file(url / "model.safetensors");
  }
  std::vector<fs::path> shards;
  for (std::size_t i = 0; i < c.shards.size(); ++i) {
    // A plain file name (read_index checks that) may still hold what a URL reads otherwise: a query, a fragment, an
    // escape. Such a name is refused rather than sent.
    if (c.shards[i].find_first_of("?#% \t\r\n") != std::string::npos) {
      throw IoError(
          IoErrc::index_bad_shard_name, c.index_path.value_or(url),
          cat("shard name '", c.shards[i], "' would change meaning in a URL (it holds '?', '#', '%' or white space)"));
    }
    shards.push_back(c.shard_path(i));
  }
  detail::prefetch_safetensors_headers(shards);
  return c;
}

}  // namespace

std::optional<fs::path> Checkpoint::config_path() const {
  const fs::path p = directory / "config.json";
  // Remote: read (and cached) now, when it is there; an HTTP 404 is no config.json.
  if (detail::is_url(p))
    return detail::read_small_file(p, kMaxSafetensorsHeader, "config") ? std::optional(p) : std::nullopt;
  std::error_code ec;
  if (fs::is_regular_file(p, ec)) return p;
  return std::nullopt;
}

Checkpoint open_checkpoint(const fs::path& path) {
  if (is_remote(path.string())) return open_remote(path.string());
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    if (fs::exists(path / kIndexFileName, ec)) return from_index(path / kIndexFileName);
    std::vector<fs::path> files;
    for (const auto& entry : fs::directory_iterator(path, ec)) {
      if (entry.is_regular_file() && is_safetensors(entry.path())) files.push_back(entry.path());
    }
    if (files.size() == 1) return from_file(files[0]);
    throw IoError(IoErrc::no_checkpoint, path,
                  files.empty() ? std::string("no .safetensors file and no ") + std::string(kIndexFileName)
                                : cat(files.size(), " .safetensors files and no ", kIndexFileName, " to tie them"));
  }
  if (!fs::exists(path, ec)) throw IoError(IoErrc::open_failed, path, "no such file or directory");
  if (path.extension() == ".json") return from_index(path);
  return from_file(path);
}

SafetensorsFile read_shard(const std::filesystem::path& path, bool headers_only) {
  return headers_only ? read_safetensors_header(path) : read_safetensors(path);
}

CheckpointSummary check_checkpoint(const Checkpoint& c, bool headers_only) {
  CheckpointSummary s;
  std::set<std::string> seen;
  for (std::size_t i = 0; i < c.shards.size(); ++i) {
    const fs::path path = c.shard_path(i);
    const SafetensorsFile f = read_shard(path, headers_only);
    s.file_bytes += f.header_size() + f.data_size();
    s.tensor_bytes += f.data_size();
    for (const SafetensorsTensor& t : f.tensors()) {
      const auto it = c.index.weight_map.find(t.name);
      if (it == c.index.weight_map.end() || it->second != c.shards[i]) {
        throw IoError(IoErrc::index_tensor_unlisted, path, t.name,
                      it == c.index.weight_map.end() ? std::string("is in this shard but not in the index")
                                                     : cat("is in this shard but the index puts it in ", it->second));
      }
      seen.insert(t.name);
      ++s.tensors;
    }
  }
  for (const auto& [tensor, shard] : c.index.weight_map) {
    if (!seen.contains(tensor)) {
      throw IoError(IoErrc::index_tensor_missing, c.directory / shard, tensor,
                    cat("the index puts it in ", shard, ", which does not hold it"));
    }
  }
  if (c.index.total_size && *c.index.total_size != s.tensor_bytes) {
    throw IoError(IoErrc::index_total_size, c.index_path.value_or(c.directory),
                  cat("metadata.total_size ", *c.index.total_size, " differs from the ", s.tensor_bytes,
                      " bytes of the shards' tensors"));
  }
  return s;
}

}  // namespace mf::io
