// The page's WebAssembly module: a few C functions over the library, so every number the page shows comes from
// the same C++ codec as the command line. Text in, JSON or SVG text out (the returned pointer stays valid until
// the next call). No logic lives here beyond parsing the page's inputs and naming the library call.
#include <emscripten/emscripten.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "minifloat/block_demo.h"
#include "minifloat/bulk.h"
#include "minifloat/codec.h"
#include "minifloat/describe_json.h"
#include "minifloat/format.h"
#include "minifloat/picture.h"
#include "minifloat/random.h"
#include "minifloat/scheme.h"
#include "minifloat/text.h"

namespace {

std::string result;  // what the last call returned

const char* give(std::string s) {
  result = std::move(s);
  return result.c_str();
}

// An error as JSON, the string escaped by the one writer that knows how (the message never holds quotes or
// backslashes we did not put there, but a user's text might).
const char* error_json(const std::string& message) {
  std::string s = "{\"error\": \"";
  for (const char c : message) {
    if (c == '"' || c == '\\') s += '\\';
    if (static_cast<unsigned char>(c) >= 0x20) s += c;
  }
  return give(s + "\"}");
}

mf::EncodeOptions options(int rounding, int overflow, std::uint32_t seed) {
  mf::EncodeOptions o;
  o.rounding = static_cast<mf::Rounding>(rounding);
  o.overflow = static_cast<mf::Overflow>(overflow);
  o.random_bits = mf::stochastic_bits(seed, 0);
  return o;
}

std::vector<const mf::Format*> formats_in(std::string_view list) {
  std::vector<const mf::Format*> out;
  while (!list.empty()) {
    const std::size_t comma = list.find(',');
    const std::string_view name = list.substr(0, comma);
    const mf::Format* f = mf::find_format(name);
    if (!f) throw std::invalid_argument("unknown format '" + std::string(name) + "'");
    out.push_back(f);
    list = comma == std::string_view::npos ? std::string_view{} : list.substr(comma + 1);
  }
  return out;
}

// "0.1, -2 3e-2" (commas, blanks or newlines between values) -> floats; the page's paste box takes any of them.
std::vector<float> values_in(std::string_view text) {
  std::vector<float> out;
  std::size_t i = 0;
  while (i < text.size()) {
    const std::size_t start = text.find_first_not_of(", \t\r\n", i);
    if (start == std::string_view::npos) break;
    const std::size_t end = std::min(text.find_first_of(", \t\r\n", start), text.size());
    const auto v = mf::parse_decimal(text.substr(start, end - start));
    if (!v)
      throw std::invalid_argument("cannot read '" + std::string(text.substr(start, end - start)) + "' as a number");
    out.push_back(static_cast<float>(*v));
    i = end;
  }
  return out;
}

}  // namespace

extern "C" {

// One number (decimal or f32 bits "0x3e99999a") in the formats listed ("bf16,e4m3"): `minifloat show --json`.
EMSCRIPTEN_KEEPALIVE const char* mf_describe(const char* x, const char* formats, double scale, int rounding,
                                             int overflow, std::uint32_t seed) {
  try {
    const auto parsed = mf::parse_number(x);
    if (!parsed) return error_json("cannot read '" + std::string(x) + "' as a number or as f32 bits (0x...)");
    if (!(scale > 0) || !std::isfinite(scale)) return error_json("the scale must be a positive finite number");
    return give(mf::describe_json(parsed->value, parsed->from_f32_bits, formats_in(formats), scale,
                                  options(rounding, overflow, seed), -1));
  } catch (const std::exception& e) {
    return error_json(e.what());
  }
}

// One block: `minifloat block VALUES --scheme S [--rule R] [--outlier V] --json`. rule "" keeps the scheme's.
EMSCRIPTEN_KEEPALIVE const char* mf_block(const char* values, const char* scheme, const char* rule,
                                          const char* outlier) {
  try {
    const std::vector<float> v = values_in(values);
    if (v.empty() || v.size() > mf::kBlockDemoMaxValues) {
      return error_json("give 1 to 32 values, not " + std::to_string(v.size()));
    }
    mf::Scheme s = mf::scheme_named(scheme);
    if (*rule) s = mf::with_rule(s, mf::scale_rule_named(rule));
    std::optional<float> o;
    if (*outlier) {
      const auto parsed = mf::parse_decimal(outlier);
      if (!parsed) return error_json("cannot read the outlier '" + std::string(outlier) + "' as a number");
      o = static_cast<float>(*parsed);
    }
    return give(mf::block_demo_json(v, s, o ? &*o : nullptr, -1));
  } catch (const std::exception& e) {
    return error_json(e.what());
  }
}

// Panel 1 (which = 1) or panel 2 (which = 2) as SVG: the pictures `minifloat plot` writes.
EMSCRIPTEN_KEEPALIVE const char* mf_picture(int which, const char* x, int rounding, int overflow, std::uint32_t seed) {
  const auto parsed = mf::parse_number(x);
  const double v = parsed ? parsed->value : 0.3;
  const mf::EncodeOptions o = options(rounding, overflow, seed);
  return give(which == 1 ? mf::strips_svg(v, o) : mf::error_svg(v, o));
}

// n values drawn from a normal distribution times `spread` (Box-Muller over SplitMix64 bits), as "v1,v2,..."
// in the shortest decimals that read back to the same f32: the block panel's "fill at random".
EMSCRIPTEN_KEEPALIVE const char* mf_random_values(int n, double spread, std::uint32_t seed) {
  std::string s;
  for (int i = 0; i < n; ++i) {
    const double u1 = (static_cast<double>(mf::stochastic_bits(seed, 2 * i)) + 1) / 4294967296.0;
    const double u2 = static_cast<double>(mf::stochastic_bits(seed, 2 * i + 1)) / 4294967296.0;
    const double z = std::sqrt(-2 * std::log(u1)) * std::cos(2 * M_PI * u2);
    if (i) s += ",";
    s += mf::shortest(static_cast<float>(z * spread));
  }
  return give(s);
}

// Array casts through the library's bulk casts (minifloat/bulk.h; in this build the scalar codec in a loop), for the
// WebAssembly-against-native test (tests/web/test_wasm_vs_native.py): n f32 bit patterns in, n codes out, with the
// options `minifloat encode` takes (stochastic bits are stochastic_bits(seed, i) as there). f32 codes are the
// scalar codec's. Returns 0, or -1 for an unknown format.
EMSCRIPTEN_KEEPALIVE int mf_encode_bits(const char* format, const std::uint32_t* bits, std::uint32_t* codes, int n,
                                        int rounding, int overflow, std::uint32_t seed) {
  const mf::Format* f = mf::find_format(format);
  if (!f) return -1;
  const auto count = static_cast<std::size_t>(n);
  const std::span<const float> x(reinterpret_cast<const float*>(bits), count);
  const mf::EncodeOptions o = options(rounding, overflow, seed);
  const mf::BulkOptions bulk{o.rounding, o.overflow, seed, 1};
  const auto widen = [&]<class Code>(Code) {
    std::vector<Code> narrow(count);
    mf::encode_bulk(*f, x, std::span<Code>(narrow), bulk);
    std::copy(narrow.begin(), narrow.end(), codes);
  };
  if (f->storage_bytes() == 1) {
    widen(std::uint8_t{});
  } else if (f->storage_bytes() == 2) {
    widen(std::uint16_t{});
  } else {
    for (std::size_t i = 0; i < count; ++i) {
      mf::EncodeOptions e = o;
      e.random_bits = mf::stochastic_bits(seed, i);
      codes[i] = mf::encode(*f, x[i], e);
    }
  }
  return 0;
}

// n codes in, n decoded f32 bit patterns out (bulk.h's decode_bulk); -1 for an unknown format.
EMSCRIPTEN_KEEPALIVE int mf_decode_bits(const char* format, const std::uint32_t* codes, std::uint32_t* bits, int n) {
  const mf::Format* f = mf::find_format(format);
  if (!f) return -1;
  const auto count = static_cast<std::size_t>(n);
  const std::span<float> x(reinterpret_cast<float*>(bits), count);
  const auto narrow = [&]<class Code>(Code) {
    const std::vector<Code> c(codes, codes + count);  // decode reads each code's low f.bits() bits, as decode() does
    mf::decode_bulk(*f, std::span<const Code>(c), x);
  };
  if (f->storage_bytes() == 1) {
    narrow(std::uint8_t{});
  } else if (f->storage_bytes() == 2) {
    narrow(std::uint16_t{});
  } else {
    for (std::size_t i = 0; i < count; ++i) x[i] = mf::decode(*f, codes[i]);
  }
  return 0;
}

}  // extern "C"
