// Whole checkpoints (minifloat/checkpoint_commands.h): a job array's shards and merge step, and the
// example checkpoint; a recipe's targets for tensor names (minifloat/recipe.h); a GGUF file's tensors dequantized
// (minifloat/gguf.h). The Python side (minifloat/_checkpoint.py, minifloat/dask.py) decides which job does what.
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <string>
#include <utility>
#include <vector>

#include "bindings.h"
#include "minifloat/checkpoint.h"
#include "minifloat/checkpoint_commands.h"
#include "minifloat/gguf.h"
#include "minifloat/gguf_model.h"
#include "minifloat/recipe.h"

namespace mf::py {
namespace {

// checkpoint_shards, merge_index, recipe_targets: a job array's shards, its merge step, and recipes' targets
// (convert itself: checkpoint_commands.cc).
void bind_convert(nb::module_& m) {
  m.def(
      "checkpoint_shards",
      [](const std::string& path) {
        nb::list names;
        for (const std::string& s : io::open_checkpoint(path).shards) names.append(s);
        return names;
      },
      nb::arg("path"));
  m.def(
      "merge_index",
      [](const std::string& in, const std::string& out, const std::string& recipe, const std::string& format) {
        const io::Recipe r = for_arg("recipe", [&] { return io::load_recipe(recipe); });
        const io::WriteFormat f = for_arg("format", [&] { return io::write_format_named(format); });
        nb::gil_scoped_release release;
        io::merge_index(in, out, &r, f);
      },
      nb::arg("input"), nb::arg("output"), nb::arg("recipe"), nb::arg("format"));
  // (recipe name, profile, the target of each name as a floating 2-D tensor: a scheme, bf16, f32 or keep).
  m.def(
      "recipe_targets",
      [](const std::string& recipe, const std::vector<std::string>& names) {
        const io::Recipe r = for_arg("recipe", [&] { return io::load_recipe(recipe); });
        std::vector<std::string> targets;
        for (const std::string& n : names) targets.push_back(r.target_for(n, 2, true));
        return nb::make_tuple(r.name, std::string(to_string(r.profile)), targets);
      },
      nb::arg("recipe"), nb::arg("names"));
}

// gguf_tensors and make_example_checkpoint: reading GGUF files and writing the example checkpoints.
void bind_gguf_and_examples(nb::module_& m) {
  // [(name, float32 array in numpy shape order)] for every tensor; IoError (RuntimeError) naming a tensor whose type
  // is not decoded, before any is.
  m.def(
      "gguf_tensors",
      [](const std::string& path) {
        const io::GgufFile f = io::read_gguf(path);
        for (const io::GgufTensor& t : f.tensors()) {
          if (!io::gguf_can_dequantize(t.type)) (void)io::dequantize_gguf(f, t);  // throws, naming it
        }
        nb::list out;
        for (const io::GgufTensor& t : f.tensors()) {
          std::vector<float> v;
          {
            nb::gil_scoped_release release;
            v = io::dequantize_gguf(f, t);
          }
          std::vector<std::size_t> shape;
          for (const std::uint64_t d : t.shape()) shape.push_back(static_cast<std::size_t>(d));
          out.append(nb::make_tuple(t.name, to_numpy(std::move(v), shape)));
        }
        return out;
      },
      nb::arg("path"));
  m.def(
      "make_example_checkpoint",
      [](const std::string& dir, int shards, const std::string& arch) {
        const io::ExampleArch a = for_arg("arch", [&] { return io::example_arch_named(arch); });
        nb::gil_scoped_release release;
        io::write_example_checkpoint(dir, shards, io::example_size(a), a);
      },
      nb::arg("dir"), nb::arg("shards"), nb::arg("arch"));
}

}  // namespace

void bind_checkpoint(nb::module_& m) {
  bind_convert(m);
  bind_gguf_and_examples(m);
}

}  // namespace mf::py
