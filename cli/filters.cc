// minifloat encode FORMAT / minifloat decode FORMAT: one value per line in, one per line out, for scripts.
#include <CLI/CLI.hpp>
#include <bit>
#include <cstdio>
#include <fmt/format.h>
#include <string>
#include <vector>

#include "common.h"
#include "minifloat/codec.h"
#include "minifloat/random.h"
#include "minifloat/text.h"

namespace mf::cli {
namespace {

struct Args {
  std::string format;
  std::vector<std::string> values;  // given on the command line instead of standard input
  bool bits = false;
  CodecFlags codec;
};

std::string read_stdin() {
  std::string data;
  char buf[1 << 16];
  std::size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, stdin)) > 0) data.append(buf, n);
  if (std::ferror(stdin)) throw UsageError("cannot read standard input");
  return data;
}

// Calls fn(line_number, text) for each input value: the command-line values, or the lines of standard input
// (a final newline ends the last line; it does not start an empty one).
template <class Fn>
void for_each_input(const Args& args, Fn fn) {
  if (!args.values.empty()) {
    for (std::size_t i = 0; i < args.values.size(); ++i) fn(i + 1, std::string_view(args.values[i]));
    return;
  }
  const std::string data = read_stdin();
  if (data.empty()) throw UsageError("empty input: give one value per line on standard input");
  std::string_view rest(data);
  std::size_t line = 0;
  while (!rest.empty()) {
    const std::size_t nl = rest.find('\n');
    fn(++line, rest.substr(0, nl));
    rest = nl == std::string_view::npos ? std::string_view{} : rest.substr(nl + 1);
  }
}

std::string where(const Args& args, std::size_t line) {
  return args.values.empty() ? fmt::format("line {}", line) : fmt::format("value {}", line);
}

void run_encode(const Args& args) {
  const Format& f = format_named(args.format);
  EncodeOptions options = encode_options(args.codec);
  const bool stochastic = options.rounding == Rounding::stochastic;
  std::string out;
  for_each_input(args, [&](std::size_t line, std::string_view text) {
    if (stochastic) options.random_bits = stochastic_bits(args.codec.seed, line - 1);
    std::uint32_t code = 0;
    if (args.bits) {
      const auto bits = parse_code(text, 32);
      if (!bits || (text.find("0x") == std::string_view::npos && text.find("0X") == std::string_view::npos)) {
        throw UsageError(fmt::format("{}: cannot read '{}' as f32 bits (0x3e99999a)", where(args, line), text));
      }
      code = encode(f, std::bit_cast<float>(*bits), options);
    } else {
      const auto value = parse_decimal(text);
      if (!value) {
        throw UsageError(fmt::format("{}: cannot read '{}' as a decimal number{}", where(args, line), text,
                                     text.find("0x") != std::string_view::npos ? " (use --bits for f32 bits)" : ""));
      }
      code = encode(f, *value, options);
    }
    out += hex_code(f, code);
    out += '\n';
  });
  write_stdout(out);
}

void run_decode(const Args& args) {
  const Format& f = format_named(args.format);
  std::string out;
  for_each_input(args, [&](std::size_t line, std::string_view text) {
    const auto code = parse_code(text, f.bits());
    if (!code) {
      throw UsageError(fmt::format("{}: '{}' is not a code of {} (an integer below 2^{}, e.g. {})", where(args, line),
                                   text, f.name, f.bits(), hex_code(f, f.max_finite_code())));
    }
    const float value = decode(f, *code);
    // Shortest decimal that reads back as f64 to exactly this value, so `encode` (which reads f64) round-trips
    // every code, also where a format rounds on either side of one of its own values (ue8m0 0x00 = 2^-127).
    out += args.bits ? hex_code(f32, std::bit_cast<std::uint32_t>(value)) : shortest(static_cast<double>(value));
    out += '\n';
  });
  write_stdout(out);
}

}  // namespace

void register_filters(CLI::App& app) {
  auto enc = std::make_shared<Args>();
  auto* e = app.add_subcommand("encode", "Encode values (one per line on stdin) into FORMAT codes, printed in hex");
  e->add_option("FORMAT", enc->format, "target format: " + known_format_names())->required();
  e->add_option("VALUES", enc->values, "values to encode instead of reading standard input");
  e->add_flag("--bits", enc->bits, "inputs are f32 bit patterns (0x3e99999a) instead of decimals");
  add_codec_flags(*e, enc->codec);
  e->callback([enc] { run_encode(*enc); });

  auto dec = std::make_shared<Args>();
  auto* d = app.add_subcommand("decode", "Decode FORMAT codes (one per line, 0x4d or 77) into shortest decimals");
  d->add_option("FORMAT", dec->format, "source format: " + known_format_names())->required();
  d->add_option("CODES", dec->values, "codes to decode instead of reading standard input");
  d->add_flag("--bits", dec->bits, "print f32 bit patterns (0x3e99999a) instead of decimals");
  d->callback([dec] { run_decode(*dec); });
}

}  // namespace mf::cli
