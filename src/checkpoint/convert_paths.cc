// Where convert's output goes and what it may never touch (convert_paths.h).
#include "convert_paths.h"

#include <algorithm>
#include <array>
#include <span>

#include "../io/file.h"

namespace mf::io::detail {

namespace fs = std::filesystem;
using Spec = SafetensorsWriter::Spec;

fs::path output_path(const fs::path& out, const Checkpoint& c, const std::string& name) {
  return out.extension() == ".safetensors" && c.shards.size() == 1 ? out : out / name;
}

fs::path output_dir(const fs::path& out, const Checkpoint& c) {
  return out.extension() == ".safetensors" && c.shards.size() == 1 ? out.parent_path() : out;
}

fs::path real_path(const fs::path& p) {
  std::error_code ec;
  const fs::path r = fs::weakly_canonical(p.empty() ? fs::path(".") : p, ec);
  return ec ? fs::absolute(p.empty() ? fs::path(".") : p) : r;
}

namespace {

// a is b or lies inside it (both real paths).
bool within(const fs::path& a, const fs::path& b) {
  return std::mismatch(b.begin(), b.end(), a.begin(), a.end()).first == b.end();
}

// The same file: the same device and inode where both exist (hard links, bind mounts), else the same real path.
bool same_file(const fs::path& a, const fs::path& b) {
  std::error_code ec;
  if (fs::exists(a, ec) && fs::exists(b, ec)) {
    const bool same = fs::equivalent(a, b, ec);
    if (!ec) return same;
  }
  return real_path(a) == real_path(b);
}

}  // namespace

// One file in (IN names a .safetensors file): refused only when an output file is the input file. A directory (or
// index) in: OUT may not be IN, lie inside it, or hold it, by real path (symbolic links resolved): the input's shards
// would be overwritten or read back.
void refuse_overwriting_input(const fs::path& in, const Checkpoint& c, const fs::path& out) {
  std::error_code ec;
  if (!c.index_path && !fs::is_directory(in, ec)) {
    const fs::path target = output_path(out, c, c.shards[0]);
    if (same_file(target, c.shard_path(0))) {
      throw IoError(IoErrc::write_failed, out,
                    cat("OUT is the input file ", c.shard_path(0).string(), ": it would be overwritten"));
    }
    return;
  }
  const fs::path in_dir = real_path(c.directory), out_dir = real_path(output_dir(out, c));
  if (within(out_dir, in_dir) || within(in_dir, out_dir)) {
    const char* how = out_dir == in_dir ? "is" : within(out_dir, in_dir) ? "lies inside" : "holds";
    throw IoError(
        IoErrc::write_failed, out,
        cat("OUT ", how, " the input checkpoint's directory ", in_dir.string(), ": write to a directory outside it"));
  }
}

// Temporary files of a killed run for the files this job writes (`names`): never valid, always safe to remove.
// Only this job's: the other jobs of a job array write their own shards into the same directory at the same time.
void remove_stale_temps(const fs::path& dir, const std::set<std::string>& names) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string n = e.path().filename().string();
    const std::size_t tmp = n.find(".tmp-");
    if (n.starts_with(".") && tmp != std::string::npos && names.contains(n.substr(1, tmp - 1))) {
      fs::remove(e.path(), ec);
    }
  }
}

bool already_done(const fs::path& path, const std::vector<Spec>& specs) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return false;
  try {
    const SafetensorsFile f = read_safetensors(path);
    std::set<std::string> names;
    for (const SafetensorsTensor& t : f.tensors()) names.insert(t.name);
    if (names.size() != specs.size()) return false;
    for (const Spec& s : specs) {
      const SafetensorsTensor* t = f.find(s.name);
      if (t == nullptr || t->dtype != s.dtype || t->shape != s.shape) return false;
    }
    return true;
  } catch (const IoError&) {
    return false;
  }
}

std::vector<fs::path> output_shards(const Checkpoint& c, const fs::path& out) {
  std::vector<fs::path> paths;
  for (const std::string& shard : c.shards) paths.push_back(output_path(out, c, shard));
  return paths;
}

void write_text(const fs::path& path, const std::string& text) {
  const std::array<std::span<const std::byte>, 1> pieces{std::as_bytes(std::span(text))};
  detail::write_atomically(path, pieces);
}

}  // namespace mf::io::detail
