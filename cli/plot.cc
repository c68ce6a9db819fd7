// minifloat plot --out DIR [--x X]: the page's two pictures as SVG files (panel1-strips.svg, panel2-error.svg), drawn
// by the same library functions the page calls through WebAssembly.
#include <CLI/CLI.hpp>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <memory>
#include <string>

#include "common.h"
#include "minifloat/picture.h"
#include "minifloat/random.h"
#include "minifloat/text.h"

namespace mf::cli {
namespace {

void write_file(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  out.close();
  if (!out) throw UsageError(fmt::format("cannot write {}", path.string()));
}

}  // namespace

void register_plot(CLI::App& app) {
  struct Args {
    std::string out;
    std::string x = "0.3";
    CodecFlags codec;
  };
  auto a = std::make_shared<Args>();
  auto* sub = app.add_subcommand("plot", "Write the page's pictures as SVG: the bit strips and error vs mantissa bits");
  sub->add_option("--out", a->out, "folder for panel1-strips.svg and panel2-error.svg (created if missing)")
      ->required();
  sub->add_option("--x", a->x, "the number drawn, decimal or f32 bits (0x3e99999a)")->capture_default_str();
  add_codec_flags(*sub, a->codec);
  sub->callback([a] {
    const auto x = parse_number(a->x);
    if (!x) throw UsageError(fmt::format("--x: cannot read '{}' as a number or as f32 bits (0x...)", a->x));
    EncodeOptions options = encode_options(a->codec);
    options.random_bits = stochastic_bits(a->codec.seed, 0);
    const std::filesystem::path dir = a->out;
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) throw UsageError(fmt::format("cannot create {}: {}", dir.string(), ec.message()));
    const std::filesystem::path strips = dir / "panel1-strips.svg", error = dir / "panel2-error.svg";
    write_file(strips, strips_svg(x->value, options));
    write_file(error, error_svg(x->value, options));
    write_stdout(fmt::format("wrote {}\nwrote {}\n", strips.string(), error.string()));
  });
}

}  // namespace mf::cli
