// merge_index: what is written once all output shards are: model.safetensors.index.json, config.json with the
// quantization_config of the format written (hf_quant_config.json for ModelOpt), and the input's other files
// (tokenizer, generation config) copied as they are.
#include <optional>
#include <set>

#include "convert_paths.h"
#include "deepseek_release.h"
#include "dialect_writer.h"
#include "../io/file.h"
#include "minifloat/checkpoint_commands.h"
#include "minifloat/checkpoint_tensors.h"
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

// The quantization_config of minifloat's own forms, from what the output shards hold: none when no pair is there;
// the recipe's DeepSeek form when it says what every pair holds; else minifloat's declaration of the schemes held
// (an NVFP4 or MXFP4 recipe, pairs kept from the input), so the output never reads as unquantized.
std::string own_config(std::string_view text, const Recipe& recipe, const std::vector<fs::path>& shards) {
  std::set<std::string> schemes;
  bool deepseek = recipe.hf_quantization.has_value();
  for (const fs::path& p : shards) {
    const SafetensorsFile f = read_safetensors(p);
    for (const QuantizedPair& pair : find_pairs(f)) {
      schemes.insert(pair.scheme_name);
      deepseek = deepseek && pair.form == PairForm::deepseek &&
                 detail::deepseek_config_holds(*recipe.hf_quantization, pair.scheme);
    }
  }
  if (schemes.empty()) return hf_config_with_quantization(text, std::nullopt);
  if (deepseek) return hf_config_with_quantization(text, recipe.hf_quantization);
  return hf_config_with_minifloat_schemes(text, {schemes.begin(), schemes.end()});
}

// config.json with the quantization_config of what was written: minifloat's own forms' (own_config; none for
// dequantize) or the dialect's, whose module lists are read off the output shards.
void write_config(const Checkpoint& c, const fs::path& config, const fs::path& out, const fs::path& dir,
                  const Recipe* recipe, WriteFormat format) {
  const detail::InputFile file(config);
  const std::vector<std::byte> bytes = file.read(0, file.size(), "config");
  const std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  std::string written;
  if (recipe == nullptr) {
    written = hf_config_with_quantization(text, std::nullopt);
  } else if (format == WriteFormat::deepseek && detail::deepseek_release_form(c, *recipe)) {
    written = detail::deepseek_release_config(text, *recipe);
  } else if (format == WriteFormat::deepseek) {
    written = hf_config_with_quantization(text, recipe->hf_quantization);
  } else if (format == WriteFormat::minifloat) {
    written = own_config(text, *recipe, output_shards(c, out));
  } else {
    written = detail::dialect_config(hf_config_unnested(text), *recipe, format, output_shards(c, out));
  }
  write_text(dir / "config.json", written);
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
  if (format == WriteFormat::gguf)
    throw std::invalid_argument("--format gguf writes one file: there is nothing to merge");
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
