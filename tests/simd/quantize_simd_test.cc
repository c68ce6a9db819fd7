// The fast path of block quantization (mf::quantize, mf::dequantize, mf::fake_quantize, mf::dequantize_bf16:
// Highway SIMD + OpenMP) against the scalar reference (mf::ref::quantize, mf::ref::dequantize), bit for bit:
// codes, scale bytes, tensor scale bits and dequantized f32 bits, on every Highway target this CPU supports and the
// build compiled, with 1 and 2 threads. Schemes: every named one, custom ones, the ocp/deepseek/ggml profiles, all
// layouts. Inputs: random (normal, heavy-tailed with outliers) and adversarial (exact ties of the element format
// after scaling, values next to ties and to amax, f32 subnormals, huge values, zero and -0 blocks, NaN/Inf blocks),
// partial edge blocks, odd column counts, 1-D and 3-D shapes, tiles, bf16/f16 inputs and Hadamard rotation.
#include <gtest/gtest.h>
#include <hwy/targets.h>  // target enumeration only: the library is called through its public headers
#include <hwy/tests/hwy_gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "minifloat/codec.h"
#include "minifloat/quantize.h"
#include "minifloat/scheme.h"

namespace {

using Shape = std::vector<std::int64_t>;
constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

mf::Scheme scheme(const std::string& name, mf::Profile p = mf::Profile::ocp) {
  return mf::with_profile(mf::scheme_named(name), p);
}

// Custom spellings beside scheme_names(): one per remaining rule and element family, and blocks of 48 (three
// vectors on AVX-512, six on AVX2, twelve on SSE4: not a power of two, so a group of blocks takes its per-block loop),
// with a power-of-two scale and with NVFP4's e4m3 scale.
const std::vector<std::string> kCustom = {"e2m1-1x32-ue8m0-rceil", "e4m3-1x128-f32", "e5m2-1x32-ue8m0-even",
                                          "int8-1x32", "int4-1x128", "e2m3-1x32-ue8m0-mse", "e4m3-1x48-ue8m0-floor",
                                          "e2m1-1x48-ue4m3-e4m3",
                                          // UE5M3 scales (nvfp4-ue5m3's) with one level, and in blocks of 48.
                                          "e2m1-1x16-ue5m3", "e2m1-1x48-ue5m3-e4m3"};

std::string shape_text(const Shape& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

std::int64_t count_of(const Shape& shape) {
  std::int64_t n = 1;
  for (const std::int64_t d : shape) n *= d;
  return n;
}

// ---- inputs ----

// Calls fn(rng, indices) once per block of `shape` under `s`, with the flat indices of the block's valid elements.
void for_each_block(const Shape& shape, const mf::Scheme& s, std::mt19937& rng,
                    const std::function<void(std::mt19937&, const std::vector<std::int64_t>&)>& fn) {
  const std::int64_t cols = shape.empty() ? 1 : shape.back(), rows = count_of(shape) / std::max<std::int64_t>(cols, 1);
  std::vector<std::int64_t> idx;
  for (std::int64_t r0 = 0; r0 < rows; r0 += s.block_rows) {
    for (std::int64_t c0 = 0; c0 < cols; c0 += s.block_cols) {
      idx.clear();
      for (std::int64_t r = r0; r < std::min(rows, r0 + s.block_rows); ++r)
        for (std::int64_t c = c0; c < std::min(cols, c0 + s.block_cols); ++c) idx.push_back(r * cols + c);
      fn(rng, idx);
    }
  }
}

// The element type's non-negative values, ascending (0, subnormals, normals up to max; 0..max for integers).
std::vector<float> element_grid(const mf::ElementType& el) {
  std::vector<float> g;
  if (el.is_int()) {
    for (int i = 0; i <= static_cast<int>(el.max()); ++i) g.push_back(static_cast<float>(i));
  } else {
    for (std::uint32_t c = 0; c <= el.format->max_finite_code(); ++c) g.push_back(mf::decode(*el.format, c));
  }
  return g;
}

float random_sign(std::mt19937& rng, float v) { return rng() % 2 ? -v : v; }

// An exact tie or grid point of the element format times 2^k, the block's amax = max * 2^k at a random place: every
// power-of-two rule then picks S = 2^k, so x / S lands exactly on the grid and on midpoints (ties to even).
void tie_block(std::mt19937& rng, const std::vector<std::int64_t>& idx, const mf::Scheme& s, float* x, bool nudge) {
  const std::vector<float> grid = element_grid(s.element);
  const float S = std::ldexp(1.0f, static_cast<int>(rng() % 25) - 12);
  for (const std::int64_t i : idx) {
    const std::size_t j = rng() % (grid.size() - 1);
    const float v = rng() % 2 ? grid[j] : (grid[j] + grid[j + 1]) / 2;
    x[i] = random_sign(rng, v * S);
  }
  x[idx[rng() % idx.size()]] = random_sign(rng, s.element.max() * S);
  if (nudge) {  // one f32 ulp off every value, the amax included: just below/above ties and amax
    for (const std::int64_t i : idx) x[i] = std::nextafter(x[i], rng() % 2 ? kInf : -kInf);
  }
}

float normal(std::mt19937& rng) { return std::normal_distribution<float>(0.0f, 1.0f)(rng); }

float bits_with_exponent(std::mt19937& rng, std::uint32_t lo, std::uint32_t hi) {
  const std::uint32_t e = lo + static_cast<std::uint32_t>(rng() % (hi - lo + 1));
  return std::bit_cast<float>((static_cast<std::uint32_t>(rng()) & 0x807FFFFFu) | (e << 23));
}

struct Kind {
  const char* name;
  std::function<void(std::mt19937&, const std::vector<std::int64_t>&, const mf::Scheme&, float*)> block;
};

// Indices into kinds(), for tests that use a few.
enum KindIndex : std::size_t {
  kNormal,
  kHeavy,
  kTies,
  kNearTies,
  kPowerOfTwo,
  kSubnormal,
  kHuge,
  kZeros,
  kNonFinite,
  kAnyBits
};

const std::vector<Kind>& kinds() {
  static const std::vector<Kind> k = {
      {"normal",
       [](auto& rng, auto& idx, auto&, float* x) {
         for (auto i : idx) x[i] = normal(rng);
       }},
      {"heavy-tailed with outliers",
       [](auto& rng, auto& idx, auto&, float* x) {
         for (auto i : idx) x[i] = normal(rng) * std::exp(1.5f * normal(rng)) * (rng() % 64 == 0 ? 1000.0f : 1.0f);
       }},
      {"exact ties after scaling", [](auto& rng, auto& idx, auto& s, float* x) { tie_block(rng, idx, s, x, false); }},
      {"one ulp from ties and amax", [](auto& rng, auto& idx, auto& s, float* x) { tie_block(rng, idx, s, x, true); }},
      {"amax at a power of two or one ulp below",
       [](auto& rng, auto& idx, auto&, float* x) {
         const float p = std::ldexp(1.0f, static_cast<int>(rng() % 41) - 20);
         const float amax = rng() % 2 ? p : std::nextafter(p, 0.0f);
         for (auto i : idx) x[i] = random_sign(rng, amax * std::uniform_real_distribution<float>(0, 1)(rng));
         x[idx[rng() % idx.size()]] = random_sign(rng, amax);
       }},
      {"f32 subnormals",
       [](auto& rng, auto& idx, auto&, float* x) {
         const bool mixed = rng() % 2;  // some blocks hold a small normal too
         for (auto i : idx) x[i] = bits_with_exponent(rng, 0, 0);
         if (mixed) x[idx[rng() % idx.size()]] = bits_with_exponent(rng, 1, 3);
       }},
      {"huge",
       [](auto& rng, auto& idx, auto&, float* x) {
         for (auto i : idx) x[i] = bits_with_exponent(rng, 200, 254);
         if (rng() % 3 == 0) x[idx[rng() % idx.size()]] = random_sign(rng, std::numeric_limits<float>::max());
       }},
      {"zero, -0 and mixed-zero blocks",
       [](auto& rng, auto& idx, auto&, float* x) {
         const int what = static_cast<int>(rng() % 4);
         for (auto i : idx) {
           x[i] = what == 0 ? 0.0f : what == 1 ? -0.0f : what == 2 ? random_sign(rng, 0.0f) : normal(rng);
         }
       }},
      {"NaN and +-Inf in some blocks",
       [](auto& rng, auto& idx, auto&, float* x) {
         for (auto i : idx) x[i] = normal(rng);
         const int what = static_cast<int>(rng() % 4);
         const std::int64_t at = rng() % 2 ? idx.back() : idx[rng() % idx.size()];  // the tail is a scalar path
         if (what < 3) x[at] = what == 0 ? kNaN : what == 1 ? kInf : -kInf;
       }},
      {"any finite bit pattern",
       [](auto& rng, auto& idx, auto&, float* x) {
         for (auto i : idx) x[i] = bits_with_exponent(rng, 0, 254);
       }},
  };
  return k;
}

// x for `shape`, block by block, offset by one float in its buffer so that SIMD loads are unaligned.
struct Input {
  std::string what;
  Shape shape;
  std::vector<float> buffer;
  const float* x() const { return buffer.data() + 1; }
  std::size_t size() const { return buffer.size() - 1; }
};

Input make_input(const Kind& kind, const Shape& shape, const mf::Scheme& s, std::uint32_t seed) {
  Input in{kind.name, shape, std::vector<float>(static_cast<std::size_t>(count_of(shape)) + 1, 0.0f)};
  std::mt19937 rng(seed);
  float* x = in.buffer.data() + 1;
  for_each_block(shape, s, rng,
                 [&](std::mt19937& r, const std::vector<std::int64_t>& idx) { kind.block(r, idx, s, x); });
  return in;
}

// ---- comparison ----

// One instance of each test per target this build compiled and this CPU runs, dispatch pinned to it (Highway's
// TestWithParamTarget); mf::ref:: is scalar and runs the same in every instance.
class QuantizeSimdTarget : public hwy::TestWithParamTarget {};
HWY_TARGET_INSTANTIATE_TEST_SUITE_P(QuantizeSimdTarget);

std::string label(const mf::Scheme& s, const mf::QuantizeOptions& o) {
  return "scheme " + s.name + " (rule " + std::string(mf::to_string(s.rule)) + ", profile " +
         std::string(mf::to_string(s.profile)) + "), layout " + std::string(mf::to_string(o.layout)) +
         (o.pad ? ", pad" : "") + (o.rotate ? ", rotate " + std::to_string(o.rotate) : "");
}

template <class T>
std::string hex(T v) {
  char text[32];
  std::snprintf(text, sizeof text, "0x%0*llx", static_cast<int>(2 * sizeof(T)), static_cast<unsigned long long>(v));
  return text;
}

// The first index where two byte arrays differ, reported with expected and actual; true when equal.
bool same_bytes(const std::vector<std::uint8_t>& expected, const std::vector<std::uint8_t>& actual,
                const std::string& what, const std::string& where) {
  if (expected.size() != actual.size()) {
    ADD_FAILURE() << where << ": " << what << " sizes differ: expected " << expected.size() << ", got "
                  << actual.size();
    return false;
  }
  const auto m = std::mismatch(expected.begin(), expected.end(), actual.begin());
  if (m.first == expected.end()) return true;
  ADD_FAILURE() << where << ": " << what << " differ first at byte " << (m.first - expected.begin()) << ": expected "
                << hex(*m.first) << ", got " << hex(*m.second);
  return false;
}

// Equal bits; with any_nan, any NaN matches any NaN (after a rotation, whose NaN sign and payload hadamard.h
// leaves unspecified).
bool same_floats(const std::vector<float>& expected, const float* actual, const std::string& what,
                 const std::string& where, bool any_nan = false) {
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const auto e = std::bit_cast<std::uint32_t>(expected[i]), a = std::bit_cast<std::uint32_t>(actual[i]);
    if (any_nan && std::isnan(expected[i]) && std::isnan(actual[i])) continue;
    if (e != a) {
      ADD_FAILURE() << where << ": " << what << " differs first at index " << i << ": expected " << expected[i] << " ("
                    << hex(e) << "), got " << actual[i] << " (" << hex(a) << ")";
      return false;
    }
  }
  return true;
}

bool same_tensor(const mf::QuantizedTensor& ref, const mf::QuantizedTensor& fast, const std::string& where) {
  EXPECT_EQ(ref.shape, fast.shape) << where;
  EXPECT_EQ(ref.scale_shape, fast.scale_shape) << where;
  EXPECT_EQ(ref.scheme.name, fast.scheme.name) << where;
  EXPECT_EQ(ref.layout, fast.layout) << where;
  EXPECT_EQ(ref.rotate, fast.rotate) << where;
  const auto ts_ref = std::bit_cast<std::uint32_t>(ref.tensor_scale);
  const auto ts = std::bit_cast<std::uint32_t>(fast.tensor_scale);
  EXPECT_EQ(ts_ref, ts) << where << ": tensor_scale expected " << ref.tensor_scale << ", got " << fast.tensor_scale;
  return same_bytes(ref.codes, fast.codes, "codes", where) && same_bytes(ref.scales, fast.scales, "scales", where) &&
         ts_ref == ts;
}

// A tensor for the reusing overload of mf::quantize: larger buffers full of junk, and every other field wrong.
mf::QuantizedTensor dirty_tensor() {
  mf::QuantizedTensor q;
  q.shape = {7};
  q.scheme = mf::scheme_named("nvfp4");
  q.layout = mf::Layout::ggml;
  q.rotate = 16;
  q.codes.assign(300000, 0xAB);
  q.scales.assign(30000, 0xCD);
  q.scale_shape = {9, 9};
  q.tensor_scale = 3.0f;
  return q;
}

// The core check: one scheme, options and input, on every target and with 1 and 2 threads; mf::quantize both
// fresh and into a reused tensor (first a dirty one, then the previous result).
void expect_fast_matches_ref(const mf::Scheme& s, mf::QuantizeOptions o, const Input& in) {
  const std::string base = label(s, o) + ", input " + in.what + " " + shape_text(in.shape);
  const mf::QuantizedTensor ref = mf::ref::quantize(in.x(), in.shape, s, o);
  std::vector<float> ref_out(in.size());
  mf::ref::dequantize(ref, ref_out.data());
  std::vector<float> out(in.size());
  std::vector<std::uint16_t> out16(in.size());
  mf::QuantizedTensor reused = dirty_tensor();
  {
    const std::int64_t target = hwy::SupportedTargets();  // the one this instance pins
    for (const int threads : {1, 2}) {
      o.threads = threads;
      const std::string where = base + ", target " + hwy::TargetName(target) + ", threads " + std::to_string(threads);
      const mf::QuantizedTensor fast = mf::quantize(in.x(), in.shape, s, o);
      if (!same_tensor(ref, fast, where + ", mf::quantize")) return;
      mf::quantize(in.x(), in.shape, s, o, reused);
      if (!same_tensor(ref, reused, where + ", mf::quantize into a reused tensor")) return;
      mf::dequantize(fast, out.data(), threads);
      if (!same_floats(ref_out, out.data(), "mf::dequantize", where, o.rotate != 0)) return;
      mf::fake_quantize(in.x(), out.data(), in.shape, s, o);
      if (!same_floats(ref_out, out.data(), "mf::fake_quantize", where, o.rotate != 0)) return;
      mf::dequantize_bf16(fast, out16.data(), threads);
      for (std::size_t i = 0; i < out16.size(); ++i) {
        const auto e = static_cast<std::uint16_t>(mf::encode(mf::bf16, ref_out[i]));
        if (out16[i] != e && !(o.rotate && std::isnan(ref_out[i]) && std::isnan(mf::decode(mf::bf16, out16[i])))) {
          ADD_FAILURE() << where << ": mf::dequantize_bf16 differs first at index " << i << ": expected " << hex(e)
                        << ", got " << hex(out16[i]);
          return;
        }
      }
    }
  }
}

// Every input kind on `shape`.
void expect_all_kinds(const mf::Scheme& s, const mf::QuantizeOptions& o, const Shape& shape, std::uint32_t seed) {
  for (const Kind& k : kinds()) expect_fast_matches_ref(s, o, make_input(k, shape, s, seed++));
}

// A shape of whole blocks: 6 rows of three blocks, or 2 x 2 tiles.
Shape whole_blocks(const mf::Scheme& s) {
  return s.block_rows == 1 ? Shape{6, 3 * s.block_cols} : Shape{2 * s.block_rows, 2 * s.block_cols};
}

mf::QuantizeOptions options(mf::Layout layout = mf::Layout::packed, bool pad = false, int rotate = 0) {
  mf::QuantizeOptions o;
  o.layout = layout;
  o.pad = pad;
  o.rotate = rotate;
  return o;
}

// ---- tests ----

TEST(QuantizeSimd, TargetsIncludeTheBaseline) {
  const std::vector<std::int64_t> targets = hwy::SupportedAndGeneratedTargets();
  ASSERT_FALSE(targets.empty());
  for (const std::int64_t t : targets) std::printf("compiled and supported: %s\n", hwy::TargetName(t));
}

TEST_P(QuantizeSimdTarget, DispatchesToThisTarget) {
  const float x[32] = {1.0f};
  (void)mf::quantize(x, Shape{32}, mf::scheme_named("mxfp8"));
  ASSERT_TRUE(hwy::GetChosenTarget().IsInitialized());
  const auto expected =
      std::countr_zero(static_cast<std::uint64_t>(HWY_CHOSEN_TARGET_SHIFT(GetParam()) | HWY_CHOSEN_TARGET_MASK_SCALAR));
  EXPECT_EQ(hwy::GetChosenTarget().GetIndex(), static_cast<std::size_t>(expected)) << hwy::TargetName(GetParam());
}

TEST_P(QuantizeSimdTarget, NamedSchemesOnEveryInputKind) {
  std::uint32_t seed = 1000;
  for (const std::string& name : mf::scheme_names()) {
    const mf::Scheme s = scheme(name);
    expect_all_kinds(s, options(), whole_blocks(s), seed += 100);
  }
}

TEST_P(QuantizeSimdTarget, CustomSchemesOnEveryInputKind) {
  std::uint32_t seed = 2000;
  for (const std::string& name : kCustom) {
    const mf::Scheme s = scheme(name);
    expect_all_kinds(s, options(), whole_blocks(s), seed += 100);
  }
}

// Rows of 1 x B blocks wide enough for the kernels that take N blocks at once (N = 4, 8 or 16 lanes) and a partial
// group after them: every block of one kind, then a random kind per block, so that some groups mix blocks the
// vector scale path takes with blocks (zero, subnormal, NaN) that need the scalar rule.
TEST_P(QuantizeSimdTarget, GroupsOfBlocksOnWideRows) {
  std::uint32_t seed = 2500;
  std::vector<std::string> names = mf::scheme_names();
  names.insert(names.end(), kCustom.begin(), kCustom.end());
  for (const std::string& name : names) {
    for (const mf::Profile p : {mf::Profile::ocp, mf::Profile::deepseek, mf::Profile::torchao}) {
      const mf::Scheme s = scheme(name, p);
      if (s.block_rows != 1) continue;
      const Shape shape{3, 37 * s.block_cols};
      expect_all_kinds(s, options(), shape, seed += 100);
      Input mixed{"a random kind per block", shape, std::vector<float>(static_cast<std::size_t>(count_of(shape)) + 1)};
      std::mt19937 rng(seed + 50);
      for_each_block(shape, s, rng, [&](std::mt19937& r, const std::vector<std::int64_t>& idx) {
        // Mostly normal blocks, so that whole groups take the vector path and single odd blocks sit among them.
        const std::size_t k = r() % 4 ? kNormal : r() % kinds().size();
        kinds()[k].block(r, idx, s, mixed.buffer.data() + 1);
      });
      expect_fast_matches_ref(s, options(), mixed);
    }
  }
}

// Divisors that are not powers of two (NVFP4's S * tensor scale, f32 scales): the fast path multiplies by RN(1/d)
// and redoes lanes near a rounding midpoint by division. Here every value is RN(midpoint * d) moved 0 to 4 f32 ulp
// either way, d being the divisor the reference gives the block, so x / d lands on, or a few ulp from, midpoints
// (the reciprocal alone gets some of them wrong: checked by removing the redo).
TEST_P(QuantizeSimdTarget, MidpointsUnderDivisorsThatAreNotPowersOfTwo) {
  std::uint32_t seed = 2800;
  for (const char* name :
       {"nvfp4", "fp4-e4m3-16", "e4m3-1x128-f32", "e2m1-1x32-f32", "e5m2-1x32-f32", "nvfp4-ue5m3", "e2m1-1x16-ue5m3"}) {
    const mf::Scheme s = scheme(name);
    const Shape shape{4, 37 * s.block_cols};
    Input in{"midpoints times the block's divisor, 0 to 4 ulp off", shape,
             std::vector<float>(static_cast<std::size_t>(count_of(shape)) + 1)};
    float* x = in.buffer.data() + 1;
    std::mt19937 rng(seed += 100);
    std::vector<std::vector<std::int64_t>> blocks;
    for_each_block(shape, s, rng, [&](std::mt19937& r, const std::vector<std::int64_t>& idx) {
      for (const std::int64_t i : idx) x[i] = normal(r) * 0.1f;
      x[idx[r() % idx.size()]] = random_sign(r, std::ldexp(1.0f + static_cast<float>(r() % 1000) / 1000, r() % 9 - 4));
      blocks.push_back(idx);
    });
    // The divisors depend only on each block's amax (and the tensor's): fixed by the normal fill above.
    const mf::QuantizedTensor first = mf::ref::quantize(in.x(), shape, s, options());
    const std::vector<float> grid = element_grid(s.element);
    for (std::size_t b = 0; b < blocks.size(); ++b) {
      const std::int64_t bc_count = shape[1] / s.block_cols;
      const float d = mf::scale_divisor(
          s, first.scale_code(static_cast<std::int64_t>(b) / bc_count, static_cast<std::int64_t>(b) % bc_count),
          first.tensor_scale);
      ASSERT_TRUE(d > 0 && std::isfinite(d)) << name << " block " << b;
      float amax = 0;
      for (const std::int64_t i : blocks[b]) amax = std::max(amax, std::fabs(x[i]));
      for (const std::int64_t i : blocks[b]) {
        if (std::fabs(x[i]) == amax) continue;
        const std::size_t j = rng() % (grid.size() - 1);
        float v = (grid[j] + grid[j + 1]) / 2 * d;
        for (std::uint32_t k = rng() % 5; k > 0; --k) v = std::nextafter(v, rng() % 2 ? kInf : 0.0f);
        if (v < amax) x[i] = random_sign(rng, v);
      }
    }
    expect_fast_matches_ref(s, options(), in);
  }
}

TEST_P(QuantizeSimdTarget, Profiles) {
  std::uint32_t seed = 3000;
  for (const mf::Profile p : {mf::Profile::ocp, mf::Profile::deepseek, mf::Profile::ggml, mf::Profile::torchao}) {
    expect_all_kinds(scheme("mxfp4", p), options(), {6, 96}, seed += 100);
  }
  // DeepSeek's own schemes: ue8m0 (rceil) and f32 scales, 1x128 and 128x128, with the 1e-4 amax clamp.
  for (const char* name : {"fp8-1x128", "e4m3-1x128-f32", "mxfp8"}) {
    const mf::Scheme s = scheme(name, mf::Profile::deepseek);
    expect_all_kinds(s, options(), whole_blocks(s), seed += 100);
  }
  expect_fast_matches_ref(scheme("fp8-128x128", mf::Profile::deepseek), options(),
                          make_input(kinds()[kNormal], {256, 256}, scheme("fp8-128x128"), seed));
  // Transformer Engine's MXFP8 (rceil as an f32 product rounded up, divisor 1 for scale 0x00).
  for (const char* name : {"mxfp8", "mxfp8-e5m2"}) {
    const mf::Scheme s = scheme(name, mf::Profile::te);
    expect_all_kinds(s, options(), whole_blocks(s), seed += 100);
  }
}

// Layout::unpacked with 4- and 6-bit elements currently fails on every target: a bug of the fast path's row offsets,
// not of SIMD (see Layouts.UnpackedHoldsOneCodePerByteInRowMajorOrder in tests/unit/quantize_layout_test.cc).
TEST_P(QuantizeSimdTarget, Layouts) {
  std::uint32_t seed = 4000;
  for (const char* name : {"mxfp4", "mxfp6-e3m2", "mxfp6-e2m3", "mxfp8", "nvfp4", "int4-1x128", "int8-1x32"}) {
    const mf::Scheme s = scheme(name);
    expect_all_kinds(s, options(mf::Layout::unpacked), whole_blocks(s), seed += 100);
  }
  for (const mf::Profile p : {mf::Profile::ocp, mf::Profile::deepseek, mf::Profile::ggml, mf::Profile::torchao}) {
    expect_all_kinds(scheme("mxfp4", p), options(mf::Layout::ggml), {5, 128}, seed += 100);
  }
}

// Partial edge blocks (pad) and column counts that start rows mid-byte for 4-bit and mid-group for 6-bit codes.
TEST_P(QuantizeSimdTarget, PartialEdgeBlocksAndOddColumns) {
  std::uint32_t seed = 5000;
  std::vector<std::string> names = mf::scheme_names();
  names.insert(names.end(), kCustom.begin(), kCustom.end());
  for (const std::string& name : names) {
    const mf::Scheme s = scheme(name);
    const std::int64_t rows = s.block_rows == 1 ? 5 : s.block_rows + 37;
    const std::int64_t bc = s.block_cols;
    for (const std::int64_t cols : {std::int64_t{1}, std::int64_t{7}, bc + 1, 2 * bc + 13, 2 * bc + 14, 2 * bc + 15}) {
      for (const mf::Layout layout : {mf::Layout::packed, mf::Layout::unpacked}) {
        for (const KindIndex k : {kNormal, kZeros, kNonFinite}) {
          expect_fast_matches_ref(s, options(layout, true), make_input(kinds()[k], {rows, cols}, s, seed++));
        }
      }
    }
  }
}

TEST_P(QuantizeSimdTarget, OneAndThreeDimensionalShapes) {
  std::uint32_t seed = 6000;
  for (const char* name : {"mxfp4", "mxfp6-e3m2", "nvfp4", "fp8-1x128", "int4-1x128", "fp8-32x32"}) {
    const mf::Scheme s = scheme(name);
    expect_all_kinds(s, options(mf::Layout::packed, true), {3 * s.block_cols + 5}, seed += 100);
    expect_all_kinds(s, options(), {2, s.block_rows == 1 ? 3 : s.block_rows, 2 * s.block_cols}, seed += 100);
  }
}

// Tiles with rows that are not a multiple of the tile (pad), threads splitting tile rows.
TEST_P(QuantizeSimdTarget, TilesWithPartialRows) {
  std::uint32_t seed = 7000;
  const mf::Scheme t128 = scheme("fp8-128x128"), t32 = scheme("fp8-32x32");
  for (const KindIndex k : {kNormal, kHeavy, kTies, kZeros, kNonFinite}) {
    expect_fast_matches_ref(t128, options(mf::Layout::packed, true), make_input(kinds()[k], {200, 300}, t128, seed++));
    expect_fast_matches_ref(t32, options(mf::Layout::packed, true), make_input(kinds()[k], {70, 75}, t32, seed++));
    expect_fast_matches_ref(t32, options(mf::Layout::packed, true), make_input(kinds()[k], {3, 33, 64}, t32, seed++));
  }
}

TEST_P(QuantizeSimdTarget, Bf16AndF16Inputs) {
  std::uint32_t seed = 8000;
  for (const char* name : {"mxfp4", "mxfp8", "nvfp4", "fp8-1x128", "mxfp6-e2m3", "int8-1x32"}) {
    const mf::Scheme s = scheme(name);
    for (const mf::InputType type : {mf::InputType::bf16, mf::InputType::f16}) {
      const mf::Format& f = type == mf::InputType::bf16 ? mf::bf16 : mf::f16;
      for (const Kind& k : kinds()) {
        // Narrow a kind's f32 values (RNE, as a caller would) plus raw 16-bit subnormals; widen them back exactly.
        const Input in32 = make_input(k, {4, 2 * s.block_cols + 3}, s, seed++);
        std::mt19937 rng(seed);
        std::vector<std::uint16_t> bits(in32.size() + 1);
        std::vector<float> wide(in32.size());
        for (std::size_t i = 0; i < in32.size(); ++i) {
          bits[i + 1] = static_cast<std::uint16_t>(rng() % 16 == 0 ? (rng() & 0x8003u) : mf::encode(f, in32.x()[i]));
          wide[i] = type == mf::InputType::bf16 ? std::bit_cast<float>(std::uint32_t{bits[i + 1]} << 16)
                                                : mf::decode(mf::f16, bits[i + 1]);
        }
        const mf::QuantizeOptions o = options(mf::Layout::packed, true);
        const std::string where = label(s, o) + ", " + std::string(f.name) + " input " + k.name;
        const mf::QuantizedTensor ref = mf::ref::quantize(wide.data(), in32.shape, s, o);
        mf::QuantizedTensor reused = dirty_tensor();
        {
          const std::int64_t target = hwy::SupportedTargets();  // the one this instance pins
          for (const int threads : {1, 2}) {
            mf::QuantizeOptions ot = o;
            ot.threads = threads;
            const std::string at =
                where + ", target " + hwy::TargetName(target) + ", threads " + std::to_string(threads);
            same_tensor(ref, mf::quantize(bits.data() + 1, type, in32.shape, s, ot), at);
            mf::quantize(bits.data() + 1, type, in32.shape, s, ot, reused);
            same_tensor(ref, reused, at + ", into a reused tensor");
          }
        }
      }
    }
  }
}

TEST_P(QuantizeSimdTarget, Rotate) {
  std::uint32_t seed = 9000;
  for (const char* name : {"mxfp4", "nvfp4", "fp8-1x128", "mxfp8-e5m2", "int4-1x128", "e2m3-1x32-ue8m0-mse"}) {
    for (const int n : {16, 32, 128}) {
      const mf::Scheme s = scheme(name);
      for (const KindIndex k : {kNormal, kHeavy, kTies, kZeros, kNonFinite}) {
        expect_fast_matches_ref(s, options(mf::Layout::packed, false, n), make_input(kinds()[k], {4, 256}, s, seed++));
      }
    }
  }
  const mf::Scheme g = scheme("mxfp4", mf::Profile::ggml);
  expect_fast_matches_ref(g, options(mf::Layout::ggml, false, 32), make_input(kinds()[kHeavy], {4, 256}, g, seed));
}

// nonfinite = error: both paths refuse the same input with the same message (tensor name, first index), before
// any kernel runs (so on no particular target).
TEST(QuantizeSimd, NonfiniteErrorsMatch) {
  for (const char* name : {"mxfp4", "fp8-32x32", "nvfp4", "e2m3-1x32-ue8m0-mse"}) {
    const mf::Scheme s = scheme(name);
    const Shape shape = {64, 64};
    std::vector<float> x(4096, 1.0f);
    x[5 * 64] = kInf;  // row 5 of the first 32x32 tile: before index 40 in block order, after it in flat order
    x[40] = kNaN;
    mf::QuantizeOptions o;
    o.nonfinite = mf::NonFinite::error;
    o.tensor_name = "blk.0.ffn_up";
    std::string expected;
    try {
      (void)mf::ref::quantize(x.data(), shape, s, o);
      ADD_FAILURE() << name << ": the reference accepted a NaN with nonfinite = error";
    } catch (const mf::QuantizeError& e) {
      expected = e.what();
    }
    for (const int threads : {1, 2}) {
      o.threads = threads;
      std::string actual = "(no error)";
      try {
        (void)mf::quantize(x.data(), shape, s, o);
      } catch (const mf::QuantizeError& e) {
        actual = e.what();
      }
      EXPECT_EQ(expected, actual) << name << ", threads " << threads;
      std::vector<float> out(x.size());
      EXPECT_THROW(mf::fake_quantize(x.data(), out.data(), shape, s, o), mf::QuantizeError) << name;
    }
  }
}

// mf::dequantize of arbitrary codes and scales (NaN/Inf element codes, NaN and extreme scales, any f32 scale).
TEST_P(QuantizeSimdTarget, DequantizeArbitraryCodesAndScales) {
  std::mt19937 rng(10000);
  std::vector<std::string> names = mf::scheme_names();
  names.insert(names.end(), kCustom.begin(), kCustom.end());
  for (const std::string& name : names) {
    const mf::Scheme s = scheme(name);
    for (const mf::Layout layout : {mf::Layout::packed, mf::Layout::unpacked}) {
      for (const Shape& shape : {whole_blocks(s), Shape{s.block_rows == 1 ? 3 : s.block_rows + 5, s.block_cols + 7}}) {
        mf::QuantizedTensor q =
            mf::ref::quantize(make_input(kinds()[kNormal], shape, s, rng()).x(), shape, s, options(layout, true));
        const unsigned mask = layout == mf::Layout::unpacked ? (1u << s.element.bits()) - 1 : 0xFFu;
        for (auto& c : q.codes) c = static_cast<std::uint8_t>(rng() & mask);
        for (auto& c : q.scales) c = static_cast<std::uint8_t>(rng());
        if (*s.scale_format == mf::ue4m3)
          for (auto& c : q.scales) c &= 0x7F;
        if (s.tensor_scale) q.tensor_scale = bits_with_exponent(rng, 90, 140);
        std::vector<float> ref_out(static_cast<std::size_t>(q.count())), out(ref_out.size());
        mf::ref::dequantize(q, ref_out.data());
        {
          const std::int64_t target = hwy::SupportedTargets();  // the one this instance pins
          for (const int threads : {1, 2}) {
            mf::dequantize(q, out.data(), threads);
            same_floats(ref_out, out.data(), "mf::dequantize of random codes",
                        label(s, options(layout)) + " " + shape_text(shape) + ", target " + hwy::TargetName(target));
          }
        }
      }
    }
  }
}

// A NaN element in a block whose scale is NaN too: the element's NaN, on every target (scaled_value). Random codes
// (NaN codes among them) under NaN scales of both signs, f32 and ue8m0 scales.
TEST_P(QuantizeSimdTarget, DequantizeNanElementsUnderNanScales) {
  std::mt19937 rng(12000);
  for (const char* name : {"fp8-1x128", "fp8-128x128", "mxfp8", "mxfp4"}) {
    const mf::Scheme s = scheme(name);
    const Shape shape = whole_blocks(s);
    mf::QuantizedTensor q = mf::ref::quantize(make_input(kinds()[kNormal], shape, s, rng()).x(), shape, s,
                                              options(mf::Layout::packed, true));
    for (auto& c : q.codes) c = static_cast<std::uint8_t>(rng());
    if (*s.scale_format == mf::f32) {
      auto* scales = reinterpret_cast<std::uint32_t*>(q.scales.data());
      for (std::size_t i = 0; i < q.scales.size() / 4; ++i) scales[i] = (rng() & 1 ? 0xFFC00000u : 0x7FC00001u);
    } else {
      for (auto& c : q.scales) c = 0xFF;
    }
    std::vector<float> ref_out(static_cast<std::size_t>(q.count())), out(ref_out.size());
    mf::ref::dequantize(q, ref_out.data());
    for (const int threads : {1, 2}) {
      mf::dequantize(q, out.data(), threads);
      same_floats(ref_out, out.data(), "mf::dequantize under NaN scales", std::string(name));
    }
  }
}

// Outputs of 16 MiB or more leave through an L1 buffer and non-temporal stores (quantize.cc kStreamBytes), in chunks
// of whole blocks, or straight from the decoder when 64-byte aligned; here with random codes and scales, the output
// 64-byte aligned or 1 to 3 floats past that, rows that
// are not a multiple of the chunk, and a one-row tensor wider than a chunk many times over.
TEST_P(QuantizeSimdTarget, DequantizeLargeOutputsThroughStreamingStores) {
  std::mt19937 rng(11000);
  for (const char* name : {"mxfp4", "mxfp8", "nvfp4", "fp8-128x128", "mxfp6-e2m3"}) {
    const mf::Scheme s = scheme(name);
    for (const Shape& shape : {Shape{512, 8320}, Shape{1, 4 * 1024 * 1024 + 8 * 128}}) {
      if (s.block_rows > 1 && shape[0] == 1) continue;
      mf::QuantizedTensor q =
          mf::ref::quantize(std::vector<float>(static_cast<std::size_t>(count_of(shape)), 1.0f).data(), shape, s,
                            options(mf::Layout::packed, true));
      for (auto& c : q.codes) c = static_cast<std::uint8_t>(rng());
      for (auto& c : q.scales) c = static_cast<std::uint8_t>(rng() % 8 + (*s.scale_format == mf::ue4m3 ? 50 : 124));
      std::vector<float> ref_out(static_cast<std::size_t>(q.count())), out(ref_out.size() + 32);
      ASSERT_GE(ref_out.size() * sizeof(float), std::size_t{16} << 20);
      mf::ref::dequantize(q, ref_out.data());
      // 64-byte aligned outputs stream straight from the decoder, others through the buffer.
      float* const aligned = out.data() + (64 - reinterpret_cast<std::uintptr_t>(out.data()) % 64) % 64 / 4;
      {
        const std::int64_t target = hwy::SupportedTargets();  // the one this instance pins
        const std::size_t offset = rng() % 2 ? 0 : rng() % 4;
        mf::dequantize(q, aligned + offset, 2);
        same_floats(ref_out, aligned + offset, "mf::dequantize of a large tensor",
                    label(s, options()) + " " + shape_text(shape) + ", output offset " + std::to_string(offset) +
                        ", target " + hwy::TargetName(target));
      }
    }
  }
}

}  // namespace
