// The checkpoint commands as functions (minifloat/checkpoint_commands.h): inspect (the JSON text `minifloat inspect
// --json` prints, checkpoint_json.h), verify, dequantize, memory and convert (any --format), each with the GIL
// released; progress reported to a Python callable with the GIL taken back. The library's IoError and VerifyError
// become minifloat.CheckpointError (a RuntimeError) carrying the file and tensor they name.
#include <nanobind/stl/function.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "bindings.h"
#include "minifloat/checkpoint_commands.h"
#include "minifloat/checkpoint_json.h"
#include "minifloat/gguf.h"
#include "minifloat/gguf_model.h"
#include "minifloat/hf_config.h"
#include "minifloat/recipe.h"

namespace mf::py {
namespace {

bool is_gguf(const std::string& path) { return std::filesystem::path(path).extension() == ".gguf"; }

// Raised as CheckpointError(message) with .file and .tensor set ("" becomes None).
void raise_checkpoint_error(nb::handle type, const char* what, const std::string& file, const std::string& tensor) {
  nb::object e = type(nb::str(what));
  e.attr("file") = file.empty() ? nb::none() : nb::object(nb::str(file.c_str()));
  e.attr("tensor") = tensor.empty() ? nb::none() : nb::object(nb::str(tensor.c_str()));
  PyErr_SetObject(type.ptr(), e.ptr());
}

// A Python progress callable called from the library's workers: the GIL taken for each call. An exception it raises
// (KeyboardInterrupt too) stops the command as a failed tensor does (no tensor started after it, shards not yet
// whole removed) and is raised in its place once the command returns.
class Progress {
 public:
  explicit Progress(nb::object callback) : callback_(std::move(callback)) {}
  std::function<void(std::uint64_t, std::uint64_t)> function() {
    if (callback_.is_none()) return {};
    return [this](std::uint64_t done, std::uint64_t total) {
      nb::gil_scoped_acquire acquire;
      if (error_) return;
      try {
        callback_(done, total);
      } catch (nb::python_error& e) {
        error_.emplace(std::move(e));
        throw std::runtime_error("stopped by the progress callback");
      }
    };
  }
  // Call with the GIL held, after the command: its exception, if it raised one.
  void rethrow() {
    if (error_) {
      nb::python_error e = std::move(*error_);
      error_.reset();
      throw e;
    }
  }

 private:
  nb::object callback_;
  std::optional<nb::python_error> error_;
};

nb::dict report_dict(const io::ConvertReport& r) {
  nb::dict d;
  d["input_bytes"] = r.input_bytes;
  d["output_bytes"] = r.output_bytes;
  d["shards_written"] = r.shards_written;
  d["shards_skipped"] = r.shards_skipped;
  nb::list tensors;
  for (const io::TensorReport& t : r.tensors) {
    nb::dict e;
    e["name"] = t.name;
    e["target"] = t.target;
    e["rmse"] = t.rmse;
    e["max_abs"] = t.max_abs;
    e["rel_rmse"] = t.rel_rmse;
    if (t.blocks != 0) {  // a pair cast by convert's lossless mode
      e["blocks"] = t.blocks;
      e["exact_blocks"] = t.blocks - t.inexact_blocks;
      e["inexact_blocks"] = t.inexact_blocks;
      e["max_rel"] = t.max_rel;
    }
    tensors.append(e);
  }
  d["tensors"] = tensors;
  return d;
}

// Runs a writing command (`command(options)` returns its ConvertReport) with the GIL released and progress reported
// to `progress`; an exception the callback raised is the one that leaves.
template <class Command>
nb::dict run_writing(nb::object progress, io::ConvertOptions& o, Command&& command) {
  Progress p(std::move(progress));
  o.progress = p.function();
  io::ConvertReport report;
  try {
    nb::gil_scoped_release release;
    report = command(o);
  } catch (...) {
    p.rethrow();
    throw;
  }
  return report_dict(report);
}

// inspect: the JSON text (parsed by the Python layer).
std::string inspect(const std::string& path, bool stats, const std::string& rules, int threads, bool headers_only) {
  if (is_gguf(path)) {
    nb::gil_scoped_release release;
    return io::inspect_gguf_json(io::read_gguf(path));
  }
  if (stats && headers_only) throw std::invalid_argument("stats reads the tensors' values; headers_only does not");
  const io::ConfigRules r = for_arg("rules", [&] { return io::config_rules_named(rules); });
  nb::gil_scoped_release release;
  return io::inspect_json(io::inspect_checkpoint(path, stats, r, threads, headers_only));
}

nb::dict verify(const std::string& path, const std::string& rules, bool fp4_qat, int threads, bool headers_only) {
  nb::dict d;
  if (is_gguf(path)) {
    io::GgufVerifyReport r;
    {
      nb::gil_scoped_release release;
      r = io::verify_gguf(path);
    }
    d["format"] = "gguf";
    d["tensors"] = r.tensors;
    d["decoded"] = r.decoded;
    return d;
  }
  io::VerifyOptions o;
  o.rules = for_arg("rules", [&] { return io::config_rules_named(rules); });
  o.fp4_qat = fp4_qat;
  o.threads = threads;
  o.headers_only = headers_only;
  io::VerifyReport r;
  {
    nb::gil_scoped_release release;
    r = io::verify_checkpoint(path, o);
  }
  d["format"] = "safetensors";
  d["tensors"] = r.summary.tensors;
  d["tensor_bytes"] = r.summary.tensor_bytes;
  d["file_bytes"] = r.summary.file_bytes;
  d["pairs"] = r.pairs;
  d["qat_tensors"] = r.qat_tensors;
  d["headers_only"] = r.headers_only;
  d["config_rules"] = r.config ? nb::object(nb::str(std::string(io::to_string(r.config->rules)).c_str())) : nb::none();
  return d;
}

nb::dict dequantize(const std::string& in, const std::string& out, bool bf16, int threads, std::size_t job_index,
                    std::size_t job_count, bool resume, const std::vector<std::string>& passthrough,
                    nb::object progress) {
  if (is_gguf(in)) {
    if (std::filesystem::path(out).extension() != ".safetensors") {
      throw std::invalid_argument("output: a GGUF file is dequantized into one .safetensors file, not '" + out + "'");
    }
    io::GgufDequantizeReport r;
    {
      nb::gil_scoped_release release;
      r = io::dequantize_gguf_file(in, out, bf16);
    }
    nb::dict d;
    d["tensors"] = r.tensors;
    d["input_bytes"] = r.input_bytes;
    d["output_bytes"] = r.output_bytes;
    return d;
  }
  io::ConvertOptions o;
  o.threads = threads;
  o.job_index = job_index;
  o.job_count = job_count;
  o.resume = resume;
  o.passthrough = passthrough;
  return run_writing(std::move(progress), o,
                     [&](const io::ConvertOptions& opts) { return io::dequantize_checkpoint(in, out, bf16, opts); });
}

nb::dict memory(const std::string& config, const std::string& recipe) {
  const io::Recipe r = for_arg("recipe", [&] { return io::load_recipe(recipe); });
  const io::MemoryReport m = io::memory_report(io::read_hf_config(config, io::ConfigRules::detect), r);
  nb::dict d;
  nb::list classes;
  for (const io::MemoryClass& c : m.classes) {
    nb::dict e;
    e["target"] = c.target;
    e["tensors"] = c.tensors;
    e["params"] = c.params;
    e["data_bytes"] = c.data_bytes;
    e["scale_bytes"] = c.scale_bytes;
    classes.append(e);
  }
  d["classes"] = classes;
  d["params"] = m.params;
  d["bytes"] = m.bytes;
  return d;
}

// convert --format gguf: one file, one run.
nb::dict convert_gguf(const std::string& in, const std::string& out, const std::string& recipe, int threads,
                      bool no_tokenizer, bool fp8_as_q8, bool keep_quantized, nb::object progress) {
  io::GgufRecipe r = for_arg("recipe", [&] { return io::gguf_recipe(recipe); });
  if ((fp8_as_q8 || keep_quantized) && !r.type) {
    throw std::invalid_argument("fp8_as_q8 and keep_quantized go with recipe f32, f16, bf16 or q8_0");
  }
  r.fp8_as_q8 = fp8_as_q8;
  r.keep_quantized = keep_quantized;
  io::ConvertOptions o;
  o.threads = threads;
  return run_writing(std::move(progress), o, [&](const io::ConvertOptions& opts) {
    return io::convert_to_gguf(in, out, r, opts,
                               no_tokenizer ? io::GgufTokenizerMode::none : io::GgufTokenizerMode::required);
  });
}

nb::dict convert(const std::string& in, const std::string& out, const std::string& recipe, const std::string& format,
                 std::size_t job_index, std::size_t job_count, bool resume, bool write_index, int threads,
                 bool lossless, bool allow_inexact, nb::object progress) {
  const io::WriteFormat f = for_arg("format", [&] { return io::write_format_named(format); });
  const io::Recipe r = for_arg("recipe", [&] { return io::load_recipe(recipe); });
  for_arg("format", [&] {
    io::check_write_format(r, f);  // before anything is written
    return 0;
  });
  io::ConvertOptions o;
  o.job_index = job_index;
  o.job_count = job_count;
  o.resume = resume;
  o.write_index = write_index;
  o.threads = threads;
  o.format = f;
  o.lossless = lossless;
  o.allow_inexact = allow_inexact;
  return run_writing(std::move(progress), o,
                     [&](const io::ConvertOptions& opts) { return io::convert_checkpoint(in, out, r, opts); });
}

}  // namespace

void bind_checkpoint_commands(nb::module_& m) {
  // minifloat._core.CheckpointError, for the translator: a reference never released (the type lives as long as the
  // process; a static nb::object would be released after the interpreter is gone).
  static nb::handle error_type;
  error_type = nb::handle(PyErr_NewExceptionWithDoc(
      "minifloat._core.CheckpointError",
      "A checkpoint minifloat refuses or cannot read: .file and .tensor name where (None when not known).",
      PyExc_RuntimeError, nullptr));
  if (!error_type.is_valid()) throw nb::python_error();
  m.attr("CheckpointError") = error_type;
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const io::IoError& e) {
      raise_checkpoint_error(error_type, e.what(), e.file, e.tensor);
    } catch (const io::VerifyError& e) {
      raise_checkpoint_error(error_type, e.what(), "", e.tensor);
    }
  });
  m.def("inspect", &inspect, nb::arg("path"), nb::arg("stats"), nb::arg("rules"), nb::arg("threads"),
        nb::arg("headers_only"));
  m.def("verify", &verify, nb::arg("path"), nb::arg("rules"), nb::arg("fp4_qat"), nb::arg("threads"),
        nb::arg("headers_only"));
  m.def("dequantize", &dequantize, nb::arg("input"), nb::arg("output"), nb::arg("bf16"), nb::arg("threads"),
        nb::arg("job_index"), nb::arg("job_count"), nb::arg("resume"), nb::arg("passthrough"),
        nb::arg("progress").none());
  m.def("memory", &memory, nb::arg("config"), nb::arg("recipe"));
  m.def("convert", &convert, nb::arg("input"), nb::arg("output"), nb::arg("recipe"), nb::arg("format"),
        nb::arg("job_index"), nb::arg("job_count"), nb::arg("resume"), nb::arg("write_index"), nb::arg("threads"),
        nb::arg("lossless"), nb::arg("allow_inexact"), nb::arg("progress").none());
  m.def("convert_gguf", &convert_gguf, nb::arg("input"), nb::arg("output"), nb::arg("recipe"), nb::arg("threads"),
        nb::arg("no_tokenizer"), nb::arg("fp8_as_q8"), nb::arg("keep_quantized"), nb::arg("progress").none());
}

}  // namespace mf::py
