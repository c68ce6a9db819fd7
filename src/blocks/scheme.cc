#include "minifloat/scheme.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <stdexcept>
#include <string>

namespace mf {
namespace {

struct Named {
  std::string_view name;
  std::string_view spelling;  // the custom spelling it stands for
  bool tensor_scale;
};
// docs/spec.md#schemes.
constexpr std::array<Named, 12> kNamed{{
    {"mxfp8", "e4m3-1x32-ue8m0-floor", false},
    {"mxfp8-e5m2", "e5m2-1x32-ue8m0-floor", false},
    {"mxfp6-e3m2", "e3m2-1x32-ue8m0-floor", false},
    {"mxfp6-e2m3", "e2m3-1x32-ue8m0-floor", false},
    {"mxfp4", "e2m1-1x32-ue8m0-floor", false},
    {"nvfp4", "e2m1-1x16-ue4m3-e4m3", true},
    {"fp4-e4m3-16", "e2m1-1x16-ue4m3-e4m3", false},
    {"fp8-1x128", "e4m3-1x128-ue8m0-rceil", false},
    {"fp8-128x128", "e4m3-128x128-ue8m0-rceil", false},
    {"fp8-32x32", "e4m3-32x32-ue8m0-rceil", false},
    // Last, so that tests drawing random data scheme by scheme keep their streams for the others.
    {"nvfp4-4over6", "e2m1-1x16-ue4m3-4over6", true},  // Four Over Six (arXiv 2512.02010)
    // NVFP4 with UE5M3 block scales (TransformerEngine#3325's prototype;
    // docs/schemes.md#nvfp4-with-ue5m3-scales-nvfp4-ue5m3).
    {"nvfp4-ue5m3", "e2m1-1x16-ue5m3-e4m3", true},
}};

constexpr std::array<std::string_view, 7> kRules{"floor", "rceil", "even", "f32", "e4m3", "mse", "4over6"};
constexpr std::array<std::string_view, 5> kProfiles{"ocp", "deepseek", "torchao", "te", "ggml"};
constexpr std::array<std::string_view, 3> kLayouts{"packed", "unpacked", "ggml"};

template <std::size_t N>
std::string joined(const std::array<std::string_view, N>& names) {
  std::string s;
  for (auto n : names) {
    if (!s.empty()) s += ", ";
    s += n;
  }
  return s;
}

template <class E, std::size_t N>
E named(std::string_view what, std::string_view name, const std::array<std::string_view, N>& names) {
  for (std::size_t i = 0; i < N; ++i)
    if (names[i] == name) return static_cast<E>(i);
  throw std::invalid_argument("unknown " + std::string(what) + " '" + std::string(name) + "' (known: " + joined(names) +
                              ")");
}

int parse_positive(std::string_view text, std::string_view whole) {
  int v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v <= 0 || v > (1 << 20)) {
    throw std::invalid_argument("scheme '" + std::string(whole) + "': bad block size '" + std::string(text) + "'");
  }
  return v;
}

ElementType element_named(std::string_view name, std::string_view whole) {
  if (name == "int8") return {nullptr, 8};
  if (name == "int4") return {nullptr, 4};
  // The element formats the block quantizers serve; the other signed 8-bit formats (fnuz, e3m4, e4m3ieee) are not
  // block elements of any published scheme, and the fast path's saturating encoder would give fnuz's NaN for -0.
  const Format* f = find_format(name);
  if (!f || !(*f == e4m3 || *f == e5m2 || *f == e3m2 || *f == e2m3 || *f == e2m1)) {
    throw std::invalid_argument("scheme '" + std::string(whole) + "': unknown element type '" + std::string(name) +
                                "' (known: e4m3, e5m2, e3m2, e2m3, e2m1, int8, int4)");
  }
  return {f, 0};
}

ScaleRule default_rule(const ElementType& el, const Format& scale) {
  if (scale == f32 || el.is_int()) return ScaleRule::f32;
  if (scale == ue4m3 || scale == ue5m3) return ScaleRule::e4m3;
  return ScaleRule::floor;
}

// The dash-separated parts of a custom spelling; 2 to 4 non-empty ones, else an error naming the known schemes.
std::vector<std::string_view> custom_parts(std::string_view whole) {
  std::vector<std::string_view> part;
  for (std::size_t start = 0;;) {
    const std::size_t dash = whole.find('-', start);
    part.push_back(whole.substr(start, dash == std::string_view::npos ? std::string_view::npos : dash - start));
    if (dash == std::string_view::npos) break;
    start = dash + 1;
  }
  if (part.size() < 2 || part.size() > 4 || std::find(part.begin(), part.end(), std::string_view{}) != part.end()) {
    std::string known;
    for (const Named& k : kNamed) {
      if (!known.empty()) known += ", ";
      known += k.name;
    }
    throw std::invalid_argument("unknown scheme '" + std::string(whole) + "' (known: " + known +
                                "; or ELEMENT-BLOCK[-SCALE[-RULE]] such as e2m1-1x32-ue8m0-rceil or int4-1x128)");
  }
  return part;
}

// RxC: the block's rows and columns, at most 2^24 values.
void parse_block(std::string_view text, std::string_view whole, Scheme& s) {
  const std::size_t x = text.find('x');
  if (x == std::string_view::npos) {
    throw std::invalid_argument("scheme '" + std::string(whole) + "': block '" + std::string(text) +
                                "' is not RxC (1x32, 128x128)");
  }
  s.block_rows = parse_positive(text.substr(0, x), whole);
  s.block_cols = parse_positive(text.substr(x + 1), whole);
  if (static_cast<std::int64_t>(s.block_rows) * s.block_cols > (std::int64_t{1} << 24)) {
    throw std::invalid_argument("scheme '" + std::string(whole) + "': a block of more than 2^24 values");
  }
}

const Format* scale_format_named(std::string_view name, std::string_view whole) {
  const Format* sf = find_format(name);
  if (!sf || !(*sf == ue8m0 || *sf == ue4m3 || *sf == ue5m3 || *sf == f32)) {
    throw std::invalid_argument("scheme '" + std::string(whole) + "': scale format '" + std::string(name) +
                                "' is not one of ue8m0, ue4m3, ue5m3, f32");
  }
  return sf;
}

// ELEMENT-BLOCK[-SCALE[-RULE]]
Scheme parse_custom(std::string_view whole) {
  const std::vector<std::string_view> part = custom_parts(whole);
  const std::size_t n = part.size();
  Scheme s;
  s.element = element_named(part[0], whole);
  parse_block(part[1], whole, s);
  s.scale_format = n >= 3 ? scale_format_named(part[2], whole) : s.element.is_int() ? &f32 : &ue8m0;
  s.rule = n == 4 ? scale_rule_named(part[3]) : default_rule(s.element, *s.scale_format);
  s = with_rule(s, s.rule);
  s.name = s.element.name() + "-" + std::to_string(s.block_rows) + "x" + std::to_string(s.block_cols) + "-" +
           std::string(s.scale_format->name) + "-" + std::string(to_string(s.rule));
  return s;
}

}  // namespace

std::string ElementType::name() const {
  return is_int() ? "int" + std::to_string(int_bits) : std::string(format->name);
}

Scheme scheme_named(std::string_view name) {
  for (const Named& k : kNamed) {
    if (k.name == name) {
      Scheme s = parse_custom(k.spelling);
      s.name = std::string(k.name);
      s.tensor_scale = k.tensor_scale;
      return s;
    }
  }
  return parse_custom(name);
}

std::vector<std::string> scheme_names() {
  std::vector<std::string> out;
  for (const Named& k : kNamed) out.emplace_back(k.name);
  return out;
}

ScaleRule scale_rule_named(std::string_view name) { return named<ScaleRule>("scale rule", name, kRules); }
Profile profile_named(std::string_view name) { return named<Profile>("profile", name, kProfiles); }
Layout layout_named(std::string_view name) { return named<Layout>("layout", name, kLayouts); }
std::string_view to_string(ScaleRule r) { return kRules[static_cast<std::size_t>(r)]; }
std::string_view to_string(Profile p) { return kProfiles[static_cast<std::size_t>(p)]; }
std::string_view to_string(Layout l) { return kLayouts[static_cast<std::size_t>(l)]; }

Scheme with_rule(Scheme s, ScaleRule r) {
  const Format& sf = *s.scale_format;
  const auto fail = [&](std::string_view why) {
    throw std::invalid_argument("scale rule " + std::string(to_string(r)) + " does not fit scheme " + s.name + ": " +
                                std::string(why));
  };
  if (r == ScaleRule::f32 && !(sf == f32)) fail("rule f32 stores amax / max as an f32 scale (use scale format f32)");
  // Rule e4m3 rounds amax / max (/ tensor scale) to nearest in a scale format with a mantissa: NVFP4's ue4m3, or
  // ue5m3 (NVFP4 with UE5M3 scales).
  if (r == ScaleRule::e4m3 && !(sf == ue4m3 || sf == ue5m3)) fail("rule e4m3 needs a ue4m3 or ue5m3 scale");
  // 4/6 picks between the block maxima 6 and 4 of E2M1 (its two largest values) with an e4m3 scale.
  if (r == ScaleRule::four_over_six && !(sf == ue4m3 && s.element.format == &e2m1)) {
    fail("rule 4over6 is NVFP4's: e2m1 elements with a ue4m3 scale");
  }
  if (r != ScaleRule::f32 && r != ScaleRule::e4m3 && s.element.is_int() && r != ScaleRule::rceil) {
    fail("integer elements take rule f32 or rceil");
  }
  if (s.tensor_scale && r != ScaleRule::e4m3 && r != ScaleRule::four_over_six) {
    fail("two-level schemes (nvfp4) scale their blocks with rule e4m3 or 4over6");
  }
  s.rule = r;
  return s;
}

Scheme with_profile(Scheme s, Profile p) {
  s.profile = p;
  // DeepSeek's and Transformer Engine's ue8m0 scales round up (TE: PTX cvt.rp.satfinite.ue8m0x2.f32).
  if ((p == Profile::deepseek || p == Profile::te) && *s.scale_format == ue8m0) s.rule = ScaleRule::rceil;
  if (p == Profile::ggml) {
    if (!(s.element.format == &e2m1) || s.block_cols != 32 || s.block_rows != 1 || !(*s.scale_format == ue8m0)) {
      throw std::invalid_argument("profile ggml is llama.cpp's MXFP4 (e2m1, 1x32, ue8m0), not " + s.name);
    }
    s.rule = ScaleRule::floor;
  }
  return s;
}

}  // namespace mf
