// Memory of a model under a recipe: parameters and bytes per precision class (the accounting of
// docs/spec.md#v4-memory).
#include <algorithm>
#include <map>

#include "minifloat/checkpoint_commands.h"

namespace mf::io {

MemoryReport memory_report(const HfConfig& config, const Recipe& recipe) {
  const std::uint64_t keep_width = config.dtype == "float32" ? 4 : 2;  // bf16 and f16 checkpoints: 2 bytes
  std::map<std::string, MemoryClass> classes;
  for (const ShapedName& t : model_tensors(config)) {
    std::uint64_t n = 1;
    for (const std::uint64_t d : t.shape) n *= d;
    const bool floating = t.dtype != DType::I64;  // integer tables (a hash router's) are kept as they are
    const std::string target = recipe.target_for(t.name, t.shape.size(), floating);
    MemoryClass& c = classes[target];
    c.target = target;
    c.params += n;
    ++c.tensors;
    const std::optional<Scheme> scheme = target_scheme(recipe, target);
    if (!scheme) {
      c.data_bytes += n * (!floating ? 8 : target == "f32" ? 4 : target == "bf16" ? 2 : keep_width);
      continue;
    }
    // Elements packed (4- and 6-bit formats whole rows at a time), then one scale per block of the grid.
    const std::uint64_t cols = t.shape.back(), rows = n / std::max<std::uint64_t>(cols, 1);
    c.data_bytes += rows * ((cols * static_cast<std::uint64_t>(scheme->element.bits()) + 7) / 8);
    const std::uint64_t br = static_cast<std::uint64_t>(scheme->block_rows);
    const std::uint64_t bc = static_cast<std::uint64_t>(scheme->block_cols);
    const std::uint64_t blocks = (rows + br - 1) / br * ((cols + bc - 1) / bc);
    c.scale_bytes += blocks * (scheme->scale_format->bits() <= 8 ? 1 : 4) + (scheme->tensor_scale ? 4 : 0);
  }
  MemoryReport r;
  for (auto& [target, c] : classes) {
    r.params += c.params;
    r.bytes += c.data_bytes + c.scale_bytes;
    r.classes.push_back(c);
  }
  std::stable_sort(r.classes.begin(), r.classes.end(), [](const MemoryClass& a, const MemoryClass& b) {
    return a.data_bytes + a.scale_bytes > b.data_bytes + b.scale_bytes;
  });
  return r;
}

bool shard_is_mine(std::size_t shard, std::size_t job_index, std::size_t job_count) {
  if (job_count == 0 || job_index >= job_count) {
    throw std::invalid_argument("--shard-index must be in [0, --shard-count)");
  }
  return shard % job_count == job_index;
}

}  // namespace mf::io
