// minifloat: the command. Each subcommand lives in its own file and only parses, calls the library, and prints.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>
#include <string>
#include <fmt/format.h>

#include "checkpoint_cli.h"
#include "common.h"
#include "minifloat/dtype.h"
#include "minifloat/version.h"

namespace {

// Every subcommand, each from its own file.
void register_all(CLI::App& app) {
  mf::cli::register_formats(app);
  mf::cli::register_show(app);
  mf::cli::register_filters(app);
  mf::cli::register_quantize(app);
  mf::cli::register_error(app);
  mf::cli::register_block(app);
  mf::cli::register_kv(app);
  mf::cli::register_pack_scales(app);
  mf::cli::register_gemm(app);
  mf::cli::register_plot(app);
  mf::cli::register_serve(app);
  mf::cli::register_inspect(app);
  mf::cli::register_convert(app);
  mf::cli::register_verify(app);
  mf::cli::register_memory(app);
  mf::cli::register_example_checkpoint(app);
  mf::cli::register_tour(app);
}

// CLI11 reports a mistyped subcommand as "a subcommand is required": false, after naming it and the known ones.
bool known_subcommand(CLI::App& app, int argc, char** argv) {
  if (argc < 2 || argv[1][0] == '-') return true;
  bool known = false;
  std::string names;
  for (const CLI::App* sub : app.get_subcommands({})) {
    known = known || sub->get_name() == argv[1];
    if (!names.empty()) names += ", ";
    names += sub->get_name();
  }
  if (!known) std::fprintf(stderr, "minifloat: error: unknown subcommand '%s' (known: %s)\n", argv[1], names.c_str());
  return known;
}

// Parses and runs; the exit status: 0, 2 for bad input (a message naming it), 3 for an internal error.
int parse_and_run(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "minifloat: error: %s (see 'minifloat --help')\n", e.what());
    return 2;
  } catch (const mf::cli::UsageError& e) {
    std::fprintf(stderr, "minifloat: error: %s\n", e.what());
    return 2;
  } catch (const mf::io::IoError& e) {  // a bad or unreadable file: names the file (and tensor)
    std::fprintf(stderr, "minifloat: error: %s\n", e.what());
    return 2;
  } catch (const std::invalid_argument& e) {  // bad input the library refused (a shape that does not block, ...)
    std::fprintf(stderr, "minifloat: error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "minifloat: internal error: %s\n", e.what());
    return 3;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"minifloat: exact low-precision number formats for LLM inference (FP8, FP6, FP4, BF16, scales)",
               "minifloat"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "minifloat " + std::string(mf::kVersion));
  register_all(app);
  if (!known_subcommand(app, argc, argv)) return 2;
  return parse_and_run(app, argc, argv);
}
