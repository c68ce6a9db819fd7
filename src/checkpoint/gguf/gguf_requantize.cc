// convert --format gguf of a GGUF file: the weights the recipe names requantized (each value dequantized exactly
// from its ggml type, then encoded once), everything else (metadata, tokenizer, tensor order, names, shapes, the
// tensors the recipe leaves alone) as in the input (docs/checkpoints.md, "GGUF as IN").
#include <algorithm>
#include <cmath>
#include <optional>
#include <stdexcept>

#include "../../io/file.h"
#include "../parallel.h"
#include "../tensor_values.h"
#include "gguf_models.h"
#include "minifloat/gguf.h"
#include "minifloat/gguf_model.h"
#include "minifloat/pack.h"
#include "minifloat/quantize.h"

namespace mf::io {

namespace fs = std::filesystem;
using detail::cat;

std::uint32_t detail::gguf_file_type(const GgufRecipe& r) {
  // llama_ftype (llama.h; gguf-py's LlamaFileType): what general.file_type says the weights mostly are.
  if (!r.type) return 38;  // MOSTLY_MXFP4_MOE
  switch (*r.type) {
    case GgufType::F32: return 0;    // ALL_F32
    case GgufType::F16: return 1;    // MOSTLY_F16
    case GgufType::BF16: return 32;  // MOSTLY_BF16
    default: return 7;               // MOSTLY_Q8_0
  }
}

bool detail::is_gguf_input(const fs::path& in) {
  std::error_code ec;
  return in.extension() == ".gguf" && !fs::is_directory(in, ec);
}

namespace {

// One tensor of the output: the input's, kept byte for byte or requantized.
struct Step {
  const GgufTensor* in;
  GgufType type;                 // the output's
  std::optional<Scheme> scheme;  // MXFP4: quantized by minifloat's quantizer
  bool keep() const { return static_cast<std::uint32_t>(type) == in->type; }
};

// The tensors llama.cpp's llama-quantize quantizes in a llama or gpt-oss model (llama-quant.cpp,
// tensor_allows_quantization): 2-D or 3-D weights but the norms and the MoE router. The rest (norms, biases, sinks)
// keep their type and bytes.
bool takes_recipe(const GgufTensor& t) {
  const std::string_view n = t.name;
  return t.dims.size() >= 2 && n.ends_with(".weight") && !n.ends_with("_norm.weight") &&
         n.find("ffn_gate_inp.weight") == n.npos;
}

Scheme mxfp4_scheme(const GgufRecipe& r, const std::string& target) {
  return r.recipe ? *target_scheme(*r.recipe, target) : with_profile(scheme_named("mxfp4"), Profile::ocp);
}

// What tensor t becomes under recipe r, as convert --format gguf decides it for a Hugging Face weight; the recipe's
// rules are matched against the llama.cpp name.
Step plan(const GgufTensor& t, const GgufRecipe& r, bool gpt_oss) {
  Step s{&t, static_cast<GgufType>(t.type), std::nullopt};
  if (!takes_recipe(t)) return s;
  const std::uint64_t cols = t.dims[0];
  // gpt-oss's experts are MXFP4 whatever the recipe, as convert (and llama.cpp's converter) writes them.
  if (gpt_oss && t.name.ends_with("_exps.weight")) {
    s.type = GgufType::MXFP4;
    if (!s.keep()) s.scheme = mxfp4_scheme(r, "mxfp4");
    return s;
  }
  if (r.type) {
    s.type = *r.type;
    // llama.cpp's convert falls back to F16 for a row that is not whole Q8_0 blocks; so does convert.
    if (s.type == GgufType::Q8_0 && cols % 32 != 0) s.type = GgufType::F16;
    return s;
  }
  const std::string target = r.recipe->target_for(t.name, 2, true);
  if (target == "bf16") s.type = GgufType::BF16;
  if (target == "f32") s.type = GgufType::F32;
  if (target_scheme(*r.recipe, target) && cols % 32 == 0) {
    s.type = GgufType::MXFP4;
    if (!s.keep()) s.scheme = mxfp4_scheme(r, target);
  }
  return s;
}

// The input's metadata with general.file_type set (in place, or appended), and general.alignment left to the
// writer, which writes it (last) when it is not 32.
std::vector<std::pair<std::string, GgufValue>> metadata_of(const GgufFile& f, const GgufRecipe& r) {
  std::vector<std::pair<std::string, GgufValue>> out;
  bool file_type = false;
  for (const auto& [key, value] : f.metadata()) {
    if (key == "general.alignment" && f.alignment() != kGgufDefaultAlignment) continue;
    if (key == "general.file_type") {
      out.emplace_back(key, GgufValue::of_u32(detail::gguf_file_type(r)));
      file_type = true;
    } else {
      out.emplace_back(key, value);
    }
  }
  if (!file_type) out.emplace_back("general.file_type", GgufValue::of_u32(detail::gguf_file_type(r)));
  return out;
}

// Every step planned and checked before the file is created: the architecture, and a type to requantize from that
// minifloat decodes.
std::vector<Step> plan_all(const GgufFile& f, const GgufRecipe& r) {
  const GgufValue* arch = f.find_metadata("general.architecture");
  const std::string_view a = arch ? arch->as_string().value_or("") : "";
  if (a != "llama" && a != "gpt-oss") {
    throw IoError(IoErrc::gguf_unsupported, f.path(),
                  cat("general.architecture is ", arch ? arch->text() : "missing",
                      ": a GGUF input is requantized for architectures llama and gpt-oss (which tensors llama.cpp "
                      "quantizes is decided per architecture)"));
  }
  std::vector<Step> steps;
  for (const GgufTensor& t : f.tensors()) {
    Step s = plan(t, r, a == "gpt-oss");
    if (!s.keep() && !gguf_can_dequantize(t.type)) {
      throw IoError(IoErrc::not_dequantizable, f.path(), t.name,
                    cat("type ", gguf_type_name(t.type), " cannot be requantized to ",
                        gguf_type_name(static_cast<std::uint32_t>(s.type)),
                        ": minifloat decodes F32, F16, BF16, Q4_0, Q4_1, Q8_0 and MXFP4; nothing was written"));
    }
    steps.push_back(std::move(s));
  }
  return steps;
}

// Step s's bytes from the input's values x; its error row but for F32, which holds every decoded value.
std::optional<TensorReport> requantize(const GgufFile& f, const Step& s, int threads, const std::vector<float>& x,
                                       std::vector<std::byte>& bytes) {
  const GgufTensor& t = *s.in;
  const std::string target =
      cat(gguf_type_name(static_cast<std::uint32_t>(s.type)), " requantized from ", gguf_type_name(t.type));
  try {
    if (s.scheme) {
      // A NaN would become the scale byte 0xFF, which ggml reads as 2^127.
      const auto bad = std::find_if(x.begin(), x.end(), [](float v) { return !std::isfinite(v); });
      if (bad != x.end()) throw std::invalid_argument(cat("value ", bad - x.begin(), " is not finite"));
      QuantizeOptions o;
      o.threads = threads;
      o.tensor_name = t.name;
      const std::vector<std::int64_t> shape{static_cast<std::int64_t>(t.elements() / t.dims[0]),
                                            static_cast<std::int64_t>(t.dims[0])};
      const QuantizedTensor q = quantize(x.data(), shape, *s.scheme, o);
      bytes.resize(q.scales.size() * kGgmlBlockBytes);
      ocp_to_ggml_mxfp4(q.codes, q.scales, std::span(reinterpret_cast<std::uint8_t*>(bytes.data()), bytes.size()));
    } else {
      bytes = gguf_encode(s.type, x);
    }
  } catch (const std::invalid_argument& e) {
    throw IoError(IoErrc::gguf_unsupported, f.path(), t.name, cat("as ", target, ": ", e.what()));
  }
  if (s.type == GgufType::F32) return std::nullopt;
  return detail::error_of(t.name, target, x, gguf_decode(s.type, bytes));
}

}  // namespace

ConvertReport detail::requantize_gguf(const fs::path& in, const fs::path& out, const GgufRecipe& recipe,
                                      const ConvertOptions& options, GgufTokenizerMode tokenizer) {
  if (tokenizer == GgufTokenizerMode::none) {
    throw IoError(IoErrc::gguf_unsupported, in,
                  "--no-tokenizer: a GGUF input keeps its own tokenizer metadata as it is");
  }
  std::error_code ec;
  if (fs::equivalent(in, out, ec) && !ec) throw IoError(IoErrc::write_failed, out, "OUT is the input file");
  const GgufFile f = read_gguf(in);
  const std::vector<Step> steps = plan_all(f, recipe);
  std::vector<GgufTensorSpec> specs;
  ConvertReport report;
  for (const Step& s : steps) {
    specs.push_back({s.in->name, s.type, s.in->dims});
    report.input_bytes += s.in->bytes;
  }
  fs::create_directories(out.parent_path().empty() ? fs::path(".") : out.parent_path());
  GgufWriter writer(out, metadata_of(f, recipe), std::move(specs), f.alignment());
  const int threads = detail::worker_count(options.threads);
  std::vector<std::byte> bytes;
  std::uint64_t done = 0;
  for (std::size_t k = 0; k < steps.size(); ++k) {
    const Step& s = steps[k];
    if (s.keep()) {
      writer.write_tensor(k, f.bytes(*s.in));
    } else {
      const std::vector<float> x = dequantize_gguf(f, *s.in);
      if (std::optional<TensorReport> row = requantize(f, s, threads, x, bytes)) report.tensors.push_back(*row);
      writer.write_tensor(k, bytes);
    }
    done += s.in->bytes;
    if (options.progress) options.progress(done, report.input_bytes);
  }
  writer.commit();
  report.output_bytes = writer.bytes_total();
  report.shards_written = 1;
  return report;
}

}  // namespace mf::io
