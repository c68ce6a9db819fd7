// Data flows one way (docs/architecture.md): formats -> blocks -> ref -> cpu -> ops -> io -> checkpoint -> present ->
// tools. Every
// `#include "..."` of the library, the tools and the benchmarks is resolved to the layer it points into, and an
// include that points to a later layer than its own file's fails, naming both files. Public headers belong to the
// layer that defines what they declare (kPublicHeaders); a new one must be given a layer here.
#include <gtest/gtest.h>

#include <cstddef>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;
const fs::path kRoot = MF_SOURCE_DIR;

enum Layer { formats, blocks, ref, cpu, ops, io, checkpoint, present, tools };
constexpr const char* kLayerNames[] = {"formats", "blocks",     "ref",     "cpu",  "ops",
                                       "io",      "checkpoint", "present", "tools"};

// Folders of the tree and their layers. tests/ is not here: a test may include whatever it checks.
const std::map<std::string, Layer> kFolders = {
    {"src/formats", formats},
    {"src/blocks", blocks},
    {"src/ref", ref},
    {"src/cpu", cpu},
    {"src/ops", ops},
    {"src/io", io},
    {"src/checkpoint", checkpoint},
    {"src/present", present},
    {"cli", tools},
    {"bench", tools},
    {"python/src", tools},
    {"web", tools},
};

const std::map<std::string, Layer> kPublicHeaders = {
    // numbers: formats as data, the scalar and bulk codecs, text, one number described
    {"format.h", formats},
    {"codec.h", formats},
    {"bulk.h", formats},
    {"random.h", formats},
    {"text.h", formats},
    {"describe.h", formats},
    {"dtype.h", formats},
    // the version: version.h.in, configured into the build tree as version.h; no layer's code, so any may include it
    {"version.h.in", formats},
    // blocks of numbers
    {"scheme.h", blocks},
    {"scale.h", blocks},
    {"pack.h", blocks},
    {"quantize.h", blocks},
    {"lossless_cast.h", blocks},  // casts between schemes; ref::cast_exactness beside them, as quantize.h's ref::
    {"hadamard.h", blocks},
    // the GEMM's definition: operands, options and the reference beside the entry points
    {"gemm.h", ref},
    {"kv.h", ops},
    {"kv_vllm.h", ops},
    {"scale_layout.h", ops},
    {"error_report.h", ops},
    // file containers
    {"npy.h", io},
    {"safetensors.h", io},
    {"gguf.h", io},
    {"tensor_file.h", io},
    {"checkpoint.h", io},
    {"remote.h", io},  // checkpoints over HTTP
    // the checkpoint tool
    {"checkpoint_tensors.h", checkpoint},
    {"checkpoint_commands.h", checkpoint},
    {"checkpoint_reader.h", checkpoint},
    {"hf_config.h", checkpoint},
    {"recipe.h", checkpoint},
    {"gguf_model.h", checkpoint},
    {"describe_json.h", present},
    {"checkpoint_json.h", present},
    {"picture.h", present},
    {"block_demo.h", present},
    {"minifloat.h", tools},  // everything
};

std::string rel(const fs::path& p) { return fs::relative(p, kRoot).generic_string(); }

// The layer of a file of the tree, or nothing for a file outside the layered folders.
std::optional<Layer> layer_of(const fs::path& file) {
  const fs::path canonical = fs::weakly_canonical(file);
  const std::string r = rel(canonical);
  if (r.starts_with("include/minifloat/")) {
    const auto it = kPublicHeaders.find(canonical.filename().string());
    if (it != kPublicHeaders.end()) return it->second;
    return std::nullopt;
  }
  for (const auto& [folder, layer] : kFolders) {
    if (r.starts_with(folder + "/")) return layer;
  }
  return std::nullopt;
}

// The quoted includes of a file, with their line numbers.
std::vector<std::pair<int, std::string>> quoted_includes(const fs::path& file) {
  std::ifstream in(file);
  std::vector<std::pair<int, std::string>> out;
  int n = 0;
  for (std::string line; std::getline(in, line);) {
    ++n;
    const std::size_t hash = line.find_first_not_of(" \t");
    if (hash == std::string::npos || line.compare(hash, 1, "#") != 0) continue;
    const std::size_t inc = line.find("include", hash);
    const std::size_t open = line.find('"', hash);
    if (inc == std::string::npos || open == std::string::npos || open < inc) continue;
    const std::size_t close = line.find('"', open + 1);
    if (close != std::string::npos) out.emplace_back(n, line.substr(open + 1, close - open - 1));
  }
  return out;
}

// Where an include resolves: beside the including file, then in include/ (the one directory the library adds).
std::optional<fs::path> resolve(const fs::path& from, const std::string& name) {
  for (const fs::path& dir : {from.parent_path(), kRoot / "include"}) {
    if (fs::is_regular_file(dir / name)) return dir / name;
  }
  return std::nullopt;
}

std::vector<fs::path> layered_files() {
  std::vector<fs::path> files;
  std::vector<fs::path> roots;
  for (const auto& [folder, layer] : kFolders) roots.push_back(kRoot / folder);
  roots.push_back(kRoot / "include/minifloat");
  for (const fs::path& dir : roots) {
    if (!fs::is_directory(dir)) continue;
    for (const auto& e : fs::recursive_directory_iterator(dir)) {
      const std::string ext = e.path().extension().string();
      if (e.is_regular_file() && (ext == ".h" || ext == ".cc")) files.push_back(e.path());
    }
  }
  return files;
}

TEST(Layers, EveryPublicHeaderHasALayer) {
  for (const auto& e : fs::directory_iterator(kRoot / "include/minifloat")) {
    EXPECT_TRUE(kPublicHeaders.contains(e.path().filename().string()))
        << rel(e.path()) << " has no layer: add it to kPublicHeaders in tests/cli/layers_test.cc";
  }
}

TEST(Layers, EveryIncludePointsToItsOwnLayerOrAnEarlierOne) {
  int checked = 0;
  for (const fs::path& file : layered_files()) {
    const std::optional<Layer> from = layer_of(file);
    ASSERT_TRUE(from) << rel(file);
    for (const auto& [line, name] : quoted_includes(file)) {
      const std::optional<fs::path> target = resolve(file, name);
      if (!target) continue;  // a system or Highway header reached through -I
      const std::optional<Layer> to = layer_of(*target);
      ++checked;
      EXPECT_TRUE(to) << rel(file) << ":" << line << " includes \"" << name << "\" (" << rel(*target)
                      << "), which is in no layer";
      if (to) {
        EXPECT_LE(*to, *from) << rel(file) << ":" << line << " includes \"" << name << "\": " << kLayerNames[*from]
                              << " may not include " << kLayerNames[*to] << " (docs/architecture.md)";
      }
    }
  }
  EXPECT_GE(checked, 200) << "too few includes found: is the walk reading the tree under " << kRoot << "?";
}

}  // namespace
