// minifloat encode FORMAT / minifloat decode FORMAT: one value per line in, one per line out, for scripts; or, with
// --binary IN OUT, raw little-endian arrays through the bulk casts (minifloat/bulk.h), for pipes and files.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <bit>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "common.h"
#include "minifloat/bulk.h"
#include "minifloat/codec.h"
#include "minifloat/random.h"
#include "minifloat/text.h"

namespace mf::cli {
namespace {

struct Args {
  std::string format;
  std::vector<std::string> values;  // given on the command line instead of standard input
  bool bits = false;
  std::vector<std::string> binary;  // IN OUT ("-": standard input / output)
  CodecFlags codec;
};

static_assert(std::endian::native == std::endian::little, "--binary reads and writes the host's little-endian bytes");

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

std::string read_binary(const std::string& path) {
  if (path == "-") return read_stdin();
  std::ifstream in(path, std::ios::binary);
  std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!in.good() && !in.eof()) throw UsageError(fmt::format("IN: cannot read {}", path));
  if (!in.is_open()) throw UsageError(fmt::format("IN: cannot open {}", path));
  return data;
}

// All of `bytes` to standard output, or to `path` through a temporary file renamed at the end: a failed run leaves
// no partial OUT.
void write_binary(const std::string& path, std::span<const char> bytes) {
  if (path == "-") return write_stdout(std::string_view(bytes.data(), bytes.size()));
  const std::filesystem::path target(path);
  const std::filesystem::path temp = target.string() + fmt::format(".partial-{}", ::getpid());
  {
    std::ofstream out(temp, std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.close();
    if (out) {
      std::error_code ec;
      std::filesystem::rename(temp, target, ec);
      if (!ec) return;
    }
  }
  std::error_code ignored;
  std::filesystem::remove(temp, ignored);
  throw UsageError(fmt::format("OUT: cannot write {}", path));
}

template <class T>
std::span<const char> bytes_of(const std::vector<T>& v) {
  return {reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T)};
}

// fn(codes of x): x (f32 or f64 values) through the bulk casts, each f64 rounded once from its own value; f32 codes
// through the scalar codec (the identity, but for saturated Inf). Element i rounds with stochastic_bits(seed, i),
// line i + 1 of the text form. Codes are f.storage_bytes() wide.
template <class T, class Fn>
void with_codes(const Format& f, std::span<const T> x, const CodecFlags& flags, Fn fn) {
  const EncodeOptions options = encode_options(flags);
  const BulkOptions bulk{options.rounding, options.overflow, flags.seed, 0};
  if (f.storage_bytes() == 1) {
    std::vector<std::uint8_t> codes(x.size());
    encode_bulk(f, x, std::span<std::uint8_t>(codes), bulk);
    return fn(codes);
  }
  if (f.storage_bytes() == 2) {
    std::vector<std::uint16_t> codes(x.size());
    encode_bulk(f, x, std::span<std::uint16_t>(codes), bulk);
    return fn(codes);
  }
  std::vector<std::uint32_t> codes(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    EncodeOptions o = options;
    o.random_bits = stochastic_bits(flags.seed, i);
    codes[i] = encode(f, x[i], o);
  }
  fn(codes);
}

// f32 values in (4 bytes each), codes out (f.storage_bytes() each).
void run_encode_binary(const Args& args) {
  const Format& f = format_named(args.format);
  const std::string in = read_binary(args.binary[0]);
  if (in.size() % 4 != 0) {
    throw UsageError(
        fmt::format("IN: {} bytes is not a whole number of f32 values (4 bytes each): {} bytes left "
                    "over at offset {}",
                    in.size(), in.size() % 4, in.size() - in.size() % 4));
  }
  std::vector<float> x(in.size() / 4);
  std::memcpy(x.data(), in.data(), in.size());
  with_codes(f, std::span<const float>(x), args.codec,
             [&](const auto& codes) { write_binary(args.binary[1], bytes_of(codes)); });
}

// Codes in (f.storage_bytes() each, every one below 2^bits), f32 values out.
void run_decode_binary(const Args& args) {
  const Format& f = format_named(args.format);
  const std::string in = read_binary(args.binary[0]);
  const std::size_t width = static_cast<std::size_t>(f.storage_bytes());
  if (in.size() % width != 0) {
    throw UsageError(
        fmt::format("IN: {} bytes is not a whole number of {} codes ({} bytes each): {} bytes left "
                    "over at offset {}",
                    in.size(), f.name, width, in.size() % width, in.size() - in.size() % width));
  }
  std::vector<float> x(in.size() / width);
  const auto checked = [&]<class Code>(std::vector<Code>& codes) {
    std::memcpy(codes.data(), in.data(), in.size());
    for (std::size_t i = 0; f.bits() < static_cast<int>(8 * sizeof(Code)) && i < codes.size(); ++i) {
      if (codes[i] >> f.bits()) {
        throw UsageError(fmt::format("IN: the code at offset {} is {:#x}, not a code of {} (below 2^{})", i * width,
                                     +codes[i], f.name, f.bits()));
      }
    }
  };
  if (width == 1) {
    std::vector<std::uint8_t> codes(x.size());
    checked(codes);
    decode_bulk(f, std::span<const std::uint8_t>(codes), x);
  } else if (width == 2) {
    std::vector<std::uint16_t> codes(x.size());
    checked(codes);
    decode_bulk(f, std::span<const std::uint16_t>(codes), x);
  } else {
    std::vector<std::uint32_t> codes(x.size());
    checked(codes);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = decode(f, codes[i]);
  }
  write_binary(args.binary[1], bytes_of(x));
}

void check_binary_alone(const Args& args) {
  if (!args.values.empty()) throw UsageError("--binary reads IN: give no values on the command line");
  if (args.bits) throw UsageError("--binary reads and writes raw bytes: --bits does not apply");
}

// The input values as f64 (decimals, each read to the nearest f64) or, with --bits, as f32 bit patterns.
template <class T>
std::vector<T> read_values(const Args& args) {
  std::vector<T> x;
  for_each_input(args, [&](std::size_t line, std::string_view text) {
    if constexpr (std::is_same_v<T, float>) {
      const auto bits = parse_code(text, 32);
      if (!bits || (text.find("0x") == std::string_view::npos && text.find("0X") == std::string_view::npos)) {
        throw UsageError(fmt::format("{}: cannot read '{}' as f32 bits (0x3e99999a)", where(args, line), text));
      }
      x.push_back(std::bit_cast<float>(*bits));
    } else {
      const auto value = parse_decimal(text);
      if (!value) {
        throw UsageError(fmt::format("{}: cannot read '{}' as a decimal number{}", where(args, line), text,
                                     text.find("0x") != std::string_view::npos ? " (use --bits for f32 bits)" : ""));
      }
      x.push_back(*value);
    }
  });
  return x;
}

// Text lines in, one hex code per line out: every value read first, then one bulk cast (from f64 for decimals:
// rounded once, never through f32).
template <class T>
void encode_text(const Args& args) {
  const Format& f = format_named(args.format);
  const std::vector<T> x = read_values<T>(args);
  std::string out;
  with_codes(f, std::span<const T>(x), args.codec, [&](const auto& codes) {
    for (const auto code : codes) {
      out += hex_code(f, code);
      out += '\n';
    }
  });
  write_stdout(out);
}

void run_encode(const Args& args) {
  if (!args.binary.empty()) {
    check_binary_alone(args);
    return run_encode_binary(args);
  }
  return args.bits ? encode_text<float>(args) : encode_text<double>(args);
}

// f32 values of `codes` (each below 2^f.bits()) through the bulk casts; f32 codes are their own bits.
std::vector<float> decode_codes(const Format& f, const std::vector<std::uint32_t>& codes) {
  std::vector<float> x(codes.size());
  if (f.storage_bytes() <= 2) {
    const auto bulk = [&]<class Code>(Code) {
      const std::vector<Code> narrow(codes.begin(), codes.end());
      decode_bulk(f, std::span<const Code>(narrow), x);
    };
    f.storage_bytes() == 1 ? bulk(std::uint8_t{}) : bulk(std::uint16_t{});
  } else {
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = decode(f, codes[i]);
  }
  return x;
}

void run_decode(const Args& args) {
  if (!args.binary.empty()) {
    check_binary_alone(args);
    return run_decode_binary(args);
  }
  const Format& f = format_named(args.format);
  std::vector<std::uint32_t> codes;
  for_each_input(args, [&](std::size_t line, std::string_view text) {
    const auto code = parse_code(text, f.bits());
    if (!code) {
      throw UsageError(fmt::format("{}: '{}' is not a code of {} (an integer below 2^{}, e.g. {})", where(args, line),
                                   text, f.name, f.bits(), hex_code(f, f.max_finite_code())));
    }
    codes.push_back(*code);
  });
  std::string out;
  for (const float value : decode_codes(f, codes)) {
    // Shortest decimal that reads back as f64 to exactly this value, so `encode` (which reads f64) round-trips
    // every code, also where a format rounds on either side of one of its own values (ue8m0 0x00 = 2^-127).
    out += args.bits ? hex_code(f32, std::bit_cast<std::uint32_t>(value)) : shortest(static_cast<double>(value));
    out += '\n';
  }
  write_stdout(out);
}

}  // namespace

void register_filters(CLI::App& app) {
  auto enc = std::make_shared<Args>();
  auto* e = app.add_subcommand("encode", "Encode values (one per line on stdin) into FORMAT codes, printed in hex");
  e->add_option("FORMAT", enc->format, "target format: " + known_format_names())->required();
  e->add_option("VALUES", enc->values, "values to encode instead of reading standard input");
  e->add_flag("--bits", enc->bits, "inputs are f32 bit patterns (0x3e99999a) instead of decimals");
  e->add_option("--binary", enc->binary,
                "IN OUT: raw little-endian f32 values in, codes out (one byte each; two for bf16/f16, four for f32); "
                "- is standard input / output")
      ->expected(2);
  add_codec_flags(*e, enc->codec);
  e->callback([enc] { run_encode(*enc); });

  auto dec = std::make_shared<Args>();
  auto* d = app.add_subcommand("decode", "Decode FORMAT codes (one per line, 0x4d or 77) into shortest decimals");
  d->add_option("FORMAT", dec->format, "source format: " + known_format_names())->required();
  d->add_option("CODES", dec->values, "codes to decode instead of reading standard input");
  d->add_flag("--bits", dec->bits, "print f32 bit patterns (0x3e99999a) instead of decimals");
  d->add_option("--binary", dec->binary,
                "IN OUT: raw little-endian codes in (one byte each; two for bf16/f16, four for f32), f32 values out; "
                "- is standard input / output")
      ->expected(2);
  d->callback([dec] { run_decode(*dec); });
}

}  // namespace mf::cli
