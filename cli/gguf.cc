// GGUF files in the checkpoint commands: inspect lists metadata and tensors, verify checks them, dequantize writes
// them out as safetensors.
#include <fmt/format.h>

#include <filesystem>
#include <map>

#include "checkpoint_cli.h"
#include "common.h"
#include "minifloat/checkpoint_commands.h"
#include "minifloat/checkpoint_json.h"
#include "minifloat/gguf.h"
#include "minifloat/gguf_model.h"
#include "minifloat/remote.h"
#include "minifloat/text.h"

namespace mf::cli {
namespace {

std::string type_summary(const io::GgufFile& f) {
  std::map<std::string, int> count;
  for (const io::GgufTensor& t : f.tensors()) ++count[io::gguf_type_name(t.type)];
  std::string out;
  for (const auto& [name, n] : count) out += fmt::format("{}{} x {}", out.empty() ? "" : ", ", name, n);
  return out.empty() ? "none" : out;
}

}  // namespace

bool is_gguf(const std::string& path) { return std::filesystem::path(path).extension() == ".gguf"; }

std::string inspect_gguf(const std::string& path, bool json) {
  // Over HTTP the header only: inspect lists, it reads no tensor's data.
  const io::GgufFile f = io::is_remote(path) ? io::read_gguf_header(path) : io::read_gguf(path);
  std::uint64_t params = 0, bytes = 0;
  for (const io::GgufTensor& t : f.tensors()) {
    params += t.elements();
    bytes += t.bytes;
  }
  const double bits = params ? 8.0 * static_cast<double>(bytes) / static_cast<double>(params) : 0.0;
  if (json) return io::inspect_gguf_json(f);
  std::string out = fmt::format("GGUF version {}, alignment {}, {} metadata entries\n", f.version(), f.alignment(),
                                f.metadata().size());
  for (const auto& [key, value] : f.metadata()) out += fmt::format("  {} = {}\n", key, value.text());
  for (const io::GgufTensor& t : f.tensors()) {
    out += fmt::format("{:<40} {:<8} {:<16} {:>12}  {}\n", t.name, io::gguf_type_name(t.type), shape_text(t.shape()),
                       t.bytes, io::gguf_can_dequantize(t.type) ? "" : "listed only: minifloat does not decode it");
  }
  out += fmt::format("{} tensors; {} parameters, {} ({:.4g} bits per parameter)\ntypes: {}\n", f.tensors().size(),
                     params, human_bytes(static_cast<double>(bytes)), bits, type_summary(f));
  return out;
}

std::string verify_gguf(const std::string& path) {
  try {
    const io::GgufVerifyReport r = io::verify_gguf(path);
    return fmt::format("ok: GGUF, {} tensors, {} decoded and finite, {} of types minifloat only lists\n", r.tensors,
                       r.decoded, r.tensors - r.decoded);
  } catch (const io::VerifyError& e) {
    throw UsageError(fmt::format("verify failed at tensor '{}': {}", e.tensor, e.what()));
  }
}

std::string dequantize_gguf(const std::string& in, const std::string& out, bool bf16) {
  if (std::filesystem::path(out).extension() != ".safetensors") {
    throw UsageError(fmt::format("OUT '{}': a GGUF file is dequantized into one .safetensors file", out));
  }
  const io::GgufDequantizeReport r = io::dequantize_gguf_file(in, out, bf16);
  return fmt::format("wrote {} ({}): {} tensors, {} -> {}\n", out, bf16 ? "bf16" : "f32", r.tensors,
                     human_bytes(static_cast<double>(r.input_bytes)), human_bytes(static_cast<double>(r.output_bytes)));
}

}  // namespace mf::cli
