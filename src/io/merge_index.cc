// merge_index: what is written once all output shards are: model.safetensors.index.json, config.json with the
// quantization_config of the format written (hf_quant_config.json for ModelOpt), and the input's other files
// (tokenizer, generation config) copied as they are.
#include <optional>

#include "convert_paths.h"
#include "dialect_writer.h"
#include "file.h"
#include "minifloat/checkpoint_ops.h"
#include "minifloat/hf_config.h"

namespace mf::io {

namespace fs = std::filesystem;
using detail::output_dir;
using detail::output_path;
using detail::output_shards;
using detail::real_path;
using detail::refuse_overwriting_input;
using detail::write_text;

namespace {

// The output shards' index, every shard written by now (by this or the other jobs of a job array).
void write_merged_index(const Checkpoint& c, const fs::path& out, const fs::path& dir) {
  CheckpointIndex index;
  index.total_size = 0;
  for (const std::string& shard : c.shards) {
    const fs::path p = output_path(out, c, shard);
    std::error_code ec;
    if (!fs::exists(p, ec)) throw IoError(IoErrc::open_failed, p, "shard not written yet: run the remaining jobs");
    const SafetensorsFile f = read_safetensors(p);
    for (const SafetensorsTensor& t : f.tensors()) index.weight_map[t.name] = shard;
    *index.total_size += f.data_size();
  }
  write_index(dir / kIndexFileName, index);
}

// config.json with the quantization_config of what was written: the recipe's own (minifloat, deepseek; none for
// dequantize) or the dialect's, whose module lists are read off the output shards.
void write_config(const Checkpoint& c, const fs::path& config, const fs::path& out, const fs::path& dir,
                  const Recipe* recipe, WriteFormat format) {
  const detail::InputFile file(config);
  const std::vector<std::byte> bytes = file.read(0, file.size(), "config");
  const std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  const std::optional<QuantizationConfig> none;
  const bool own = format == WriteFormat::minifloat || format == WriteFormat::deepseek;  // the recipe's config
  write_text(dir / "config.json", own || recipe == nullptr
                                      ? hf_config_with_quantization(text, recipe ? recipe->hf_quantization : none)
                                      : detail::dialect_config(text, *recipe, format, output_shards(c, out)));
}

// Tokenizer, generation config and the like come along unchanged; hf_quant_config.json (ModelOpt's note of the
// scheme) stays behind, as quantization_config does: it would describe tensors the output does not hold.
void copy_other_files(const Checkpoint& c, const fs::path& dir) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(c.directory.empty() ? "." : c.directory, ec)) {
    const std::string n = e.path().filename().string();
    if (!e.is_regular_file() || n.starts_with(".") || e.path().extension() == ".safetensors" || n == "config.json" ||
        n == kIndexFileName || n == "hf_quant_config.json" || fs::exists(dir / n)) {
      continue;
    }
    fs::copy_file(e.path(), dir / n, ec);
  }
}

}  // namespace

void merge_index(const fs::path& in, const fs::path& out, const Recipe* recipe, WriteFormat format) {
  if (format == WriteFormat::gguf) throw std::invalid_argument("--format gguf writes one file: there is nothing to merge");
  const Checkpoint c = open_checkpoint(in);
  refuse_overwriting_input(in, c, out);
  const fs::path dir = output_dir(out, c);
  // One file written beside its input: the input's config.json and tokenizer are its own, never rewritten.
  std::error_code ec;
  if (!c.index_path && !fs::is_directory(in, ec) && real_path(dir) == real_path(c.directory)) return;
  if (c.index_path) write_merged_index(c, out, dir);
  if (const auto config = c.config_path()) write_config(c, *config, out, dir, recipe, format);
  if (format == WriteFormat::modelopt && recipe != nullptr) {
    write_text(dir / "hf_quant_config.json", detail::modelopt_hf_quant_config(*recipe, output_shards(c, out)));
  }
  copy_other_files(c, dir);
}

}  // namespace mf::io
