// The fast GEMMs (mf::fp8_gemm, fp4_gemm, bf16_gemm, f32_gemm: Highway SIMD + OpenMP) against the scalar
// definitions (mf::ref::), bit for bit (every NaN counts as equal to every NaN), on every Highway target this CPU
// supports and the build compiled (each_target, or Highway's TestWithParamTarget: dispatch pinned to each in turn;
// AVX3_DL runs the e4m3 GEMV's table decode into f32 fmas, and its bf16 dot product where the CPU has one that
// rounds as two fmas, AVX3 the plain AVX-512 loop through fp16), with 1 and 2 threads, f32 and bf16
// output, with and without accumulate.
// Shapes cover each register tile (M = 1, 2, 3 and more, and the column-lane tile from 16 on AVX-512 and 12 on AVX2,
// with M not a multiple of its 4 or 2 rows and N ending inside its 32 or 16 columns), row passes (M > 256 for the
// 4 x 4 tile, M > 512 for the column-lane one), partial weight blocks (N not a multiple of 16) and partial groups
// (bf16/f32 with K not a multiple of 16 or 128). Inputs:
// normal, outlier-heavy, and adversarial codes: e4m3 subnormals, -0, NaN codes (0x7F/0xFF), extreme and NaN ue8m0
// scales.
// The GEMM library compiles Highway's AVX3_DL target (src/cpu/gemm.cc): list it among this file's targets too.
#define HWY_WANT_AVX3_DL
#include <gtest/gtest.h>
#include <hwy/targets.h>  // target enumeration only: the library is called through its public headers
#include <hwy/tests/hwy_gtest.h>

#include <omp.h>

#include <atomic>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "cpu/column_queue.h"
#include "cpu/gemm_dispatch.h"
#include "cpu/thread_scratch.h"
#include "minifloat/gemm.h"
#include "ref/gemm_problem.h"
#include "minifloat/quantize.h"
#include "minifloat/scheme.h"

namespace {

using Shape = std::vector<std::int64_t>;

class GemmSimdTarget : public hwy::TestWithParamTarget {};
HWY_TARGET_INSTANTIATE_TEST_SUITE_P(GemmSimdTarget);

// Runs `body` once per target, dispatch pinned to it as in a GemmSimdTarget instance, the target named in every
// failure. The suites that compare with the scalar reference run their targets so, in one test: the reference's
// outputs are kept for the inputs (expect_fast_matches_ref) and computed once rather than once per target, each
// target's instance being a process of its own under ctest (the reference was most of their time).
void each_target(const std::function<void()>& body) {
  struct Unpin {
    ~Unpin() { hwy::SetSupportedTargetsForTest(0); }
  } unpin;
  for (const std::int64_t target : hwy::SupportedAndGeneratedTargets()) {
    hwy::SetSupportedTargetsForTest(target);
    SCOPED_TRACE(std::string("target ") + hwy::TargetName(target));
    body();
  }
}

// adversarial: edge codes and scales that keep every product finite; extreme: also scales up to 2^127;
// weight_codes: edge codes and scales in the weight only, so that a weight's NaN code decides its output alone (a
// NaN activation code would make a whole M = 1 row NaN, whatever the weights).
enum class Kind { normal, outliers, adversarial, extreme, weight_codes };

std::vector<float> values(std::int64_t n, Kind kind, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<float> unit(0.0f, 1.0f);
  std::vector<float> x(static_cast<std::size_t>(n));
  for (float& v : x) {
    v = normal(rng);
    if (kind != Kind::normal && unit(rng) < 0.02f) v *= 1000.0f;     // outliers
    if (kind == Kind::adversarial && unit(rng) < 0.05f) v *= 1e-6f;  // small values: e4m3 subnormals
  }
  return x;
}

// Overwrites some codes and scales with edge values: NaN codes, -0, subnormals, extreme and NaN scales.
void spoil(mf::QuantizedTensor& q, std::mt19937& rng, bool extreme) {
  std::uniform_int_distribution<std::size_t> pick(0, q.codes.size() - 1);
  const bool e4m3 = q.scheme.element.format == &mf::e4m3;
  const std::uint8_t codes[] = {0x7F, 0xFF, 0x80, 0x01, 0x87, 0x00};
  for (const std::uint8_t c : codes) q.codes[pick(rng)] = e4m3 ? c : static_cast<std::uint8_t>(c & 0x88);
  if (*q.scheme.scale_format == mf::ue8m0) {
    std::uniform_int_distribution<std::size_t> s(0, q.scales.size() - 1);
    for (const std::uint8_t c : {0x00, 0xFF, 0x10, 0x86}) q.scales[s(rng)] = c;
    if (extreme) {
      for (const std::uint8_t c : {0xFE, 0xF0}) q.scales[s(rng)] = c;
    }
  }
  if (*q.scheme.scale_format == mf::ue4m3) {  // nvfp4: block scales 0, NaN, the least subnormal, the largest (448)
    std::uniform_int_distribution<std::size_t> s(0, q.scales.size() - 1);
    for (const std::uint8_t c : {0x00, 0x7F, 0x01, 0x7E}) q.scales[s(rng)] = c;
    if (extreme) q.tensor_scale = 0x1p120f;  // s x acc can overflow
  }
}

mf::QuantizedTensor weight(const std::string& scheme, std::int64_t n, std::int64_t k, Kind kind, std::mt19937& rng) {
  const std::vector<float> w = values(n * k, kind, rng);
  mf::QuantizeOptions o;
  o.pad = true;
  mf::QuantizedTensor q = mf::quantize(w.data(), Shape{n, k}, mf::scheme_named(scheme), o);
  if (kind == Kind::adversarial || kind == Kind::extreme || kind == Kind::weight_codes) {
    spoil(q, rng, kind == Kind::extreme);
  }
  return q;
}

bool same(float a, float b) {
  return (std::isnan(a) && std::isnan(b)) || std::bit_cast<std::uint32_t>(a) == std::bit_cast<std::uint32_t>(b);
}
bool same(std::uint16_t a, std::uint16_t b) {
  const bool nan_a = (a & 0x7FFF) > 0x7F80, nan_b = (b & 0x7FFF) > 0x7F80;
  return (nan_a && nan_b) || a == b;
}

// Runs `gemm(out, options)` as fast path and as reference in every output/accumulate/thread setting.
using Gemm = std::function<void(bool fast, mf::GemmOut out, const mf::GemmOptions& o)>;

template <class T>
void expect_same(const std::vector<T>& fast, const std::vector<T>& ref, const std::string& what) {
  for (std::size_t i = 0; i < ref.size(); ++i) {
    if (!same(fast[i], ref[i])) {
      FAIL() << what << ": first mismatch at " << i << " of " << ref.size() << ": fast " << +fast[i] << " ref "
             << +ref[i];
    }
  }
}

// The reference's four outputs (f32 and bf16, each written and accumulated) for one set of inputs.
struct RefOutputs {
  std::vector<float> f32[2];
  std::vector<std::uint16_t> bf16[2];
};

// `inputs` (empty: none) names the operands bit for bit (inputs_of): the reference is then computed once for them and
// kept, since every target, every GEMV loop and both thread counts compare with the same one. Computed afresh each
// time, the scalar reference took most of this suite's time (nine tenths of it under the sanitizers).
void expect_fast_matches_ref(const Gemm& gemm, std::int64_t m, std::int64_t n, const std::string& what,
                             const std::string& inputs = {}) {
  const auto size = static_cast<std::size_t>(m * n);
  std::vector<float> old32(size);
  std::vector<std::uint16_t> old16(size);
  for (std::size_t i = 0; i < size; ++i) {
    old32[i] = static_cast<float>(i % 7) - 3.25f;
    old16[i] = static_cast<std::uint16_t>(0x3F80 + i % 11);
  }
  static std::map<std::string, RefOutputs> kept;
  const auto compute = [&] {
    RefOutputs r;
    for (const bool accumulate : {false, true}) {
      mf::GemmOptions o;
      o.threads = 1;
      o.accumulate = accumulate;
      r.f32[accumulate] = old32;
      gemm(false, mf::GemmOut{r.f32[accumulate].data(), nullptr}, o);
      r.bf16[accumulate] = old16;
      gemm(false, mf::GemmOut{nullptr, r.bf16[accumulate].data()}, o);
    }
    return r;
  };
  RefOutputs fresh;
  const RefOutputs* ref = &fresh;
  if (inputs.empty()) {
    fresh = compute();
  } else {
    const std::string key = std::to_string(m) + "x" + std::to_string(n) + "|" + inputs;
    auto it = kept.find(key);
    if (it == kept.end()) it = kept.emplace(key, compute()).first;
    ref = &it->second;
  }
  for (const int threads : {1, 2}) {
    for (const bool accumulate : {false, true}) {
      const std::string tag = what + " threads " + std::to_string(threads) + (accumulate ? " accumulate" : "");
      mf::GemmOptions o;
      o.threads = threads;
      o.accumulate = accumulate;
      std::vector<float> f = old32;
      gemm(true, mf::GemmOut{f.data(), nullptr}, o);
      expect_same(f, ref->f32[accumulate], tag + " f32");
      std::vector<std::uint16_t> fb = old16;
      gemm(true, mf::GemmOut{nullptr, fb.data()}, o);
      expect_same(fb, ref->bf16[accumulate], tag + " bf16");
    }
  }
}

// The operands of an fp8 or fp4 GEMM, bit for bit, with the names of their schemes (`schemes`), as a key for
// expect_fast_matches_ref's kept references.
std::string inputs_of(const std::string& schemes, const mf::QuantizedTensor& a, const mf::QuantizedTensor& w) {
  std::string key = schemes;
  for (const mf::QuantizedTensor* q : {&a, &w}) {
    key += "|" + std::to_string(q->codes.size()) + "|" + std::to_string(q->scales.size()) + "|";
    for (const std::int64_t d : q->shape) key += std::to_string(d) + ",";
    key.append(reinterpret_cast<const char*>(q->codes.data()), q->codes.size());
    key.append(reinterpret_cast<const char*>(q->scales.data()), q->scales.size());
    key.append(reinterpret_cast<const char*>(&q->tensor_scale), sizeof q->tensor_scale);
  }
  return key;
}

struct Dims {
  std::int64_t m, n, k;
};
// M = 1 to 7 (AVX-512) or 11 (AVX2 and narrower): the GEMV (7 and 11 its most; on AVX3_DL fp8 and mxfp4 in batches
// of up to 4 rows, up to 15); 9: the 4 x 4 tile on AVX-512 (bf16; fp8 on AVX3), the GEMV on AVX2; 12: the column-lane
// tile on AVX2; 15: the most rows of AVX3_DL's batched GEMV; 18 and more: the column-lane tile on both, in one and
// two passes of rows.
const Dims kShapes[] = {{1, 16, 128},  {1, 50, 384},   {2, 33, 256},  {3, 17, 128},  {5, 64, 512},
                        {7, 30, 256},  {9, 40, 384},   {11, 24, 256}, {12, 40, 256}, {15, 24, 256},
                        {18, 40, 384}, {260, 20, 256}, {520, 20, 256}};

std::string dims_text(const Dims& d) {
  return "M=" + std::to_string(d.m) + " N=" + std::to_string(d.n) + " K=" + std::to_string(d.k);
}

void check_quantized(const std::string& scheme, mf::ActScale act_scale, Kind kind, std::uint32_t seed) {
  std::mt19937 rng(seed);
  const bool fp4 = scheme == "mxfp4" || scheme == "nvfp4";
  for (const Dims& d : kShapes) {
    if (kind == Kind::weight_codes && d.m != 1) continue;  // other shapes: covered by adversarial
    const std::vector<float> x = values(d.m * d.k, kind, rng);
    mf::QuantizedTensor a = mf::act_quant(x.data(), Shape{d.m, d.k}, act_scale);
    if (kind == Kind::adversarial || kind == Kind::extreme) spoil(a, rng, kind == Kind::extreme);
    const mf::QuantizedTensor w = weight(scheme, d.n, d.k, kind, rng);
    const Gemm gemm = [&](bool fast, mf::GemmOut out, const mf::GemmOptions& o) {
      if (fp4) {
        fast ? mf::fp4_gemm(a, w, out, o) : mf::ref::fp4_gemm(a, w, out, o);
      } else {
        fast ? mf::fp8_gemm(a, w, out, o) : mf::ref::fp8_gemm(a, w, out, o);
      }
    };
    expect_fast_matches_ref(gemm, d.m, d.n,
                            scheme + (act_scale == mf::ActScale::f32 ? " (f32 activation scales) " : " ") +
                                dims_text(d) + " kind " + std::to_string(static_cast<int>(kind)),
                            inputs_of(scheme + " act " + std::to_string(static_cast<int>(act_scale)), a, w));
  }
}

// Runs `body` once per loop the e4m3 GEMV has on this target: with AVX512-BF16's dot product where it can run
// (AVX3_DL on a CPU whose dot product rounds as two fmas), and again without it (the table decode's f32 fmas); on
// AVX2 with the codes through fp16 and with their fields in f32 place; whichever of the two this CPU runs by default.
void each_e4m3_gemv_loop(const std::function<void()>& body) {
  const auto each = [&body](void (*choose)(mf::gemm::GemvChoice)) {
    for (const auto choice : {mf::gemm::GemvChoice::always, mf::gemm::GemvChoice::never}) {
      choose(choice);
      body();
    }
    choose(mf::gemm::GemvChoice::faster);
  };
  if (mf::gemm::gemv_e4m3_bf16_dot_available()) {
    each(mf::gemm::choose_gemv_e4m3_bf16_dot);
  } else if (mf::gemm::gemv_e4m3_f32_fields_available()) {
    each(mf::gemm::choose_gemv_e4m3_f32_fields);
  } else {
    body();
  }
}

// each_e4m3_gemv_loop on each target in turn.
void each_target_and_e4m3_gemv_loop(const std::function<void()>& body) {
  each_target([&body] { each_e4m3_gemv_loop(body); });
}

TEST(GemmSimdTargets, Fp8Weights128x128) {
  each_target_and_e4m3_gemv_loop([] {
    for (const Kind k : {Kind::normal, Kind::outliers, Kind::adversarial, Kind::extreme, Kind::weight_codes}) {
      check_quantized("fp8-128x128", mf::ActScale::ue8m0, k, 1);
    }
  });
}
TEST(GemmSimdTargets, Fp8Weights32x32) {
  each_target_and_e4m3_gemv_loop([] {
    for (const Kind k : {Kind::normal, Kind::adversarial, Kind::extreme, Kind::weight_codes}) {
      check_quantized("fp8-32x32", mf::ActScale::ue8m0, k, 2);
    }
  });
}
TEST(GemmSimdTargets, Fp8Weights1x128) {  // a ue8m0 scale per weight row: the GEMV's 16 rows have 16 factors
  each_target_and_e4m3_gemv_loop([] {
    for (const Kind k : {Kind::normal, Kind::adversarial, Kind::weight_codes}) {
      check_quantized("fp8-1x128", mf::ActScale::ue8m0, k, 7);
    }
  });
}
// mxfp8 (e4m3 1x32 ue8m0): AVX3_DL's GEMV reads its scale codes in place and puts each scale into the exponents of
// the activations its block meets (src/cpu/gemv_mxfp8-inl.h); other targets and kernels make f32 factors as for fp8.
TEST(GemmSimdTargets, Mxfp8Weights) {
  each_target_and_e4m3_gemv_loop([] {
    for (const Kind k : {Kind::normal, Kind::outliers, Kind::adversarial, Kind::extreme, Kind::weight_codes}) {
      check_quantized("mxfp8", mf::ActScale::ue8m0, k, 9);
    }
  });
}

// A scale code written at (row, col) of a weight in 1x32 blocks (mxfp8 or mxfp4), and where `zeros` its block's codes
// made ±0 (+0 and -0 blocks alternating): the edge-scale tests' edits. Out of range is a test failure (at()), not a
// write past the weight.
struct ScaleEdit {
  std::int64_t row, col;
  std::uint8_t code;
  bool zeros;
};
void edit_scales(mf::QuantizedTensor& w, const std::vector<ScaleEdit>& edits) {
  const bool e2m1 = w.scheme.element.bits() == 4;
  const std::int64_t cols = w.cols() / 32, block_bytes = e2m1 ? 16 : 32;
  const std::uint8_t negative_zeros = e2m1 ? 0x88 : 0x80;  // two -0 nibbles, or one -0 e4m3 code
  for (const ScaleEdit& e : edits) {
    const auto block = static_cast<std::size_t>(e.row * cols + e.col);
    w.scales.at(block) = e.code;
    if (!e.zeros) continue;
    const auto at = block * static_cast<std::size_t>(block_bytes);
    (void)w.codes.at(at + static_cast<std::size_t>(block_bytes) - 1);
    std::fill_n(w.codes.begin() + static_cast<std::ptrdiff_t>(at), block_bytes,
                (e.row + e.col) % 2 ? negative_zeros : std::uint8_t{0x00});
  }
}

// mxfp8 scale codes at the edges of the range in which the GEMV applies a scale inside the dot product (27 .. 227:
// 2^-100 .. 2^100) and just past them, each on a block of weights and on a block of zeros (quantize gives a block of
// zeros code 0; a zero-padded K is made of them), NaN (0xFF) on a block of zeros (0 x NaN is NaN), and the largest
// code 0xFE on a block whose weights overflow to Inf there; at M = 1, 3 and 6 (batches of 4 and 2), every target
// and GEMV loop against the definition.
TEST(GemmSimdTargets, Mxfp8ScaleCodesAtTheRangeEdges) {
  std::mt19937 rng(13);
  const std::int64_t n = 40, k = 512;
  for (const std::int64_t m : {1, 3, 6}) {
    const std::vector<float> x = values(m * k, Kind::normal, rng);
    const mf::QuantizedTensor a = mf::act_quant(x.data(), Shape{m, k}, mf::ActScale::ue8m0);
    mf::QuantizedTensor w = weight("mxfp8", n, k, Kind::normal, rng);
    edit_scales(w, {{0, 0, 26, false},
                    {1, 3, 27, false},
                    {2, 5, 227, false},
                    {3, 6, 228, false},
                    {17, 1, 26, true},
                    {18, 2, 228, true},
                    {19, 4, 0, true},
                    {20, 7, 0, false},
                    {33, 9, 0xFE, true},
                    {34, 10, 0xFF, true},
                    {35, 15, 0xFE, false}});
    each_target_and_e4m3_gemv_loop([&] {
      expect_fast_matches_ref(
          [&](bool fast, mf::GemmOut out, const mf::GemmOptions& o) {
            fast ? mf::fp8_gemm(a, w, out, o) : mf::ref::fp8_gemm(a, w, out, o);
          },
          m, n, "mxfp8 edge scales M=" + std::to_string(m), inputs_of("mxfp8 edges", a, w));
    });
    std::vector<float> y(static_cast<std::size_t>(m * n));
    mf::fp8_gemm(a, w, mf::GemmOut{y.data(), nullptr}, {});
    EXPECT_TRUE(std::isnan(y[34])) << "0 x NaN scale";  // row 34's zero block times the NaN scale
    EXPECT_TRUE(std::isfinite(y[19]) && std::isfinite(y[17])) << "blocks of zeros with scales out of range";
  }
}

// mxfp8 at the edge of the scale codes AVX2's GEMV reads in place (E4m3ScaleCodes: up to 246, 2^119, and NaN, where
// its factor, the scale times 2^8, is finite): codes 246, 0 and 0xFF on blocks of weights, and the same weight with one
// code 247 (2^120), which takes the f32 factors' loops; at M = 1 and 3, every target and GEMV loop against the
// definition.
TEST(GemmSimdTargets, Mxfp8ScaleCodesAtTheFp16FactorEdge) {
  std::mt19937 rng(15);
  const std::int64_t n = 40, k = 512, cols = k / 32;
  for (const std::int64_t m : {1, 3}) {
    const std::vector<float> x = values(m * k, Kind::normal, rng);
    const mf::QuantizedTensor a = mf::act_quant(x.data(), Shape{m, k}, mf::ActScale::ue8m0);
    mf::QuantizedTensor w = weight("mxfp8", n, k, Kind::normal, rng);
    w.scales[static_cast<std::size_t>(2 * cols + 5)] = 246;
    w.scales[static_cast<std::size_t>(17 * cols + 1)] = 0;
    w.scales[static_cast<std::size_t>(33 * cols + 9)] = 0xFF;
    for (const bool past : {false, true}) {
      if (past) w.scales[static_cast<std::size_t>(20 * cols + 7)] = 247;
      each_target_and_e4m3_gemv_loop([&] {
        expect_fast_matches_ref(
            [&](bool fast, mf::GemmOut out, const mf::GemmOptions& o) {
              fast ? mf::fp8_gemm(a, w, out, o) : mf::ref::fp8_gemm(a, w, out, o);
            },
            m, n, "mxfp8 fp16 factor edge M=" + std::to_string(m) + (past ? " with 247" : ""),
            inputs_of("mxfp8 factor edge", a, w));
      });
    }
  }
}

TEST(GemmSimdTargets, Fp8WeightsWithF32Scales) {
  // f32 weight scales stay outside the products: groups of 128, or 32 for 32-wide blocks.
  each_target_and_e4m3_gemv_loop([] {
    for (const Kind k : {Kind::normal, Kind::outliers, Kind::adversarial, Kind::weight_codes}) {
      check_quantized("e4m3-128x128-f32", mf::ActScale::f32, k, 3);
      check_quantized("e4m3-32x32-f32", mf::ActScale::f32, k, 4);
      check_quantized("e4m3-1x128-f32", mf::ActScale::ue8m0, k, 5);
    }
  });
}
// mxfp4: on AVX3_DL by the bf16 dot product where it can run and again without (each_e4m3_gemv_loop: the same choice).
TEST(GemmSimdTargets, Fp4Weights) {
  each_target_and_e4m3_gemv_loop([] {
    for (const Kind k : {Kind::normal, Kind::outliers, Kind::adversarial, Kind::extreme, Kind::weight_codes}) {
      check_quantized("mxfp4", mf::ActScale::ue8m0, k, 6);
    }
  });
}
// mxfp4 scale codes at the edges of the range in which AVX3_DL's e2m1 GEMV multiplies by the bf16 dot product (18 ..
// 235: every weight a normal bf16 in [2^-110, 2^111)) and just past them, each on a block of weights and on a block of
// zeros (±0 codes), code 0 (a zero-padded K's) on zeros and on weights, the largest code 0xFE on zeros and on weights
// that overflow to Inf there, and NaN (0xFF) on zeros (0 x NaN is NaN); at M = 1, 3 and 6 (batches of 4 and 2), every
// target and GEMV loop against the definition. Rows of exact codes only (the loop that looks at no code) sit beside
// them in the same blocks of 16 rows; two rows have tiny codes (2 and 10) throughout. Rows 48-63 are a zero-padded
// K's (every row of SmolLM2's K = 576 padded to 640 ends so): blocks of zeros with code 0 at the row's end, and zero
// blocks with codes 17 and 236, and nothing else out of the range.
TEST(GemmSimdTargets, Mxfp4ScaleCodesAtTheDotRangeEdges) {
  std::mt19937 rng(14);
  const std::int64_t n = 64, k = 512, cols = k / 32;
  for (const std::int64_t m : {1, 3, 6}) {
    const std::vector<float> x = values(m * k, Kind::normal, rng);
    const mf::QuantizedTensor a = mf::act_quant(x.data(), Shape{m, k}, mf::ActScale::ue8m0);
    mf::QuantizedTensor w = weight("mxfp4", n, k, Kind::normal, rng);
    edit_scales(w, {{0, 0, 17, false},
                    {1, 3, 18, false},
                    {2, 5, 235, false},
                    {3, 6, 236, false},
                    {17, 1, 17, true},
                    {18, 2, 236, true},
                    {19, 4, 0, true},
                    {20, 7, 0, false},
                    {33, 9, 0xFE, true},
                    {34, 10, 0xFF, true},
                    {35, 15, 0xFE, false},
                    {50, 3, 236, true},
                    {51, 2, 17, true}});
    std::vector<ScaleEdit> padding;  // rows 48-63: a zero-padded K's last two blocks
    for (std::int64_t row = 48; row < 64; ++row) {
      padding.push_back({row, cols - 2, 0, true});
      padding.push_back({row, cols - 1, 0, true});
    }
    edit_scales(w, padding);
    // Whole rows of tiny scales (2^-125, 2^-117): there products and sums fall below 2^-126, the f32 denormals that
    // the dot product would flush, and nothing larger hides them.
    std::fill_n(w.scales.begin() + 21 * cols, cols, std::uint8_t{2});
    std::fill_n(w.scales.begin() + 22 * cols, cols, std::uint8_t{10});
    each_target_and_e4m3_gemv_loop([&] {
      expect_fast_matches_ref(
          [&](bool fast, mf::GemmOut out, const mf::GemmOptions& o) {
            fast ? mf::fp4_gemm(a, w, out, o) : mf::ref::fp4_gemm(a, w, out, o);
          },
          m, n, "mxfp4 edge scales M=" + std::to_string(m), inputs_of("mxfp4 edges", a, w));
    });
    std::vector<float> y(static_cast<std::size_t>(m * n));
    mf::fp4_gemm(a, w, mf::GemmOut{y.data(), nullptr}, {});
    EXPECT_TRUE(std::isnan(y[34])) << "0 x NaN scale";  // row 34's zero block times the NaN scale
    EXPECT_TRUE(std::isfinite(y[19]) && std::isfinite(y[17]) && std::isfinite(y[33]))
        << "blocks of zeros with scales out of range";
  }
}

// nvfp4: the e2m1 GEMV with a table per 16 weights, and the tiles; E4M3 scales inside w, t per group (spoil: block
// scales 0, NaN, subnormal and 448; t = 2^120 in the extreme kind).
TEST(GemmSimdTargets, Nvfp4Weights) {
  each_target_and_e4m3_gemv_loop([] {
    for (const Kind k : {Kind::normal, Kind::outliers, Kind::adversarial, Kind::extreme, Kind::weight_codes}) {
      check_quantized("nvfp4", mf::ActScale::ue8m0, k, 7);
    }
  });
}

// The weight-only form: f32 and bf16 activations as they are, fp8, mxfp4 and nvfp4 weights with edge codes and scales
// (adversarial) or outliers, at every shape of the suite (K a multiple of 128: the fast path).
TEST(GemmSimdTargets, WeightOnly) {
  each_target([] {
    std::mt19937 rng(8);
    for (const std::string scheme : {"mxfp4", "nvfp4", "fp8-128x128", "fp8-32x32", "e4m3-128x128-f32"}) {
      for (const Dims& d : kShapes) {
        const Kind kind = d.m % 2 ? Kind::adversarial : Kind::outliers;
        const std::vector<float> x = values(d.m * d.k, kind, rng);
        std::vector<std::uint16_t> x16(x.size());
        for (std::size_t i = 0; i < x.size(); ++i) x16[i] = static_cast<std::uint16_t>(mf::encode(mf::bf16, x[i]));
        const mf::QuantizedTensor w = weight(scheme, d.n, d.k, kind, rng);
        const std::string what = "weight-only " + scheme + " " + dims_text(d);
        expect_fast_matches_ref(
            [&](bool fast, mf::GemmOut out, const mf::GemmOptions& o) {
              fast ? mf::weight_only_gemm(x.data(), d.m, w, out, o)
                   : mf::ref::weight_only_gemm(x.data(), d.m, w, out, o);
            },
            d.m, d.n, what + " f32", what + " f32");
        expect_fast_matches_ref(
            [&](bool fast, mf::GemmOut out, const mf::GemmOptions& o) {
              fast ? mf::weight_only_gemm(x16.data(), d.m, w, out, o)
                   : mf::ref::weight_only_gemm(x16.data(), d.m, w, out, o);
            },
            d.m, d.n, what + " bf16", what + " bf16");
      }
    }
  });
}

// M = 1 and 3 with the activation's last columns zero (a Linear whose in_features, 40 or 576 or 500, is zero-padded to
// whole activation blocks; or an all-zero row; at M = 3 the middle row is not padded): the e4m3 GEMV stops its fmas
// at each row's last nonzero activation, which must change no bit. The zeros are +0 and -0 codes, and NaN weight codes
// sit inside that zero tail too: 0 x NaN is NaN, so those rows must still come out NaN. Weights: random, outliers, e4m3
// subnormals, -0 and NaN codes.
void check_zero_tail() {
  std::mt19937 rng(11);
  const struct {
    const char* scheme;
    mf::ActScale act_scale;
  } cases[] = {{"fp8-128x128", mf::ActScale::ue8m0},  {"e4m3-128x128-f32", mf::ActScale::f32},
               {"fp8-1x128", mf::ActScale::ue8m0},    {"fp8-32x32", mf::ActScale::ue8m0},
               {"e4m3-32x32-f32", mf::ActScale::f32}, {"mxfp4", mf::ActScale::ue8m0},
               {"mxfp8", mf::ActScale::ue8m0}};
  const struct {
    std::int64_t n, k, live;
  } shapes[] = {{192, 640, 576}, {50, 128, 40}, {40, 512, 500}, {33, 1536, 1536}, {16, 256, 0}, {24, 384, 257}};
  for (const auto& c : cases) {
    const bool fp4 = std::string(c.scheme) == "mxfp4";
    for (const auto& d : shapes) {
      for (const Kind kind : {Kind::normal, Kind::outliers, Kind::adversarial}) {
        // 6: the batched GEMV's batches of 4 and 2 rows, the first all with tails, the second without: the batches
        // skip different lines, and only the first looks through the tail's NaN codes (the second multiplies them).
        for (const std::int64_t m : {1, 3, 6}) {
          std::vector<float> x = values(m * d.k, kind, rng);
          for (std::int64_t r = 0; r < m; ++r) {
            if (m == 6 ? r >= 4 : r % 2 != 0) continue;  // rows 0 and 2 (M = 3), 0 to 3 (M = 6) end in zeros
            for (std::int64_t i = d.live; i < d.k; ++i) {
              x[static_cast<std::size_t>(r * d.k + i)] = (i % 3 == 0) ? -0.0f : 0.0f;
            }
          }
          const mf::QuantizedTensor a = mf::act_quant(x.data(), Shape{m, d.k}, c.act_scale);
          std::vector<float> wv = values(d.n * d.k, kind, rng);
          for (std::int64_t r = 0; r < d.n; ++r) {  // the weight zero-padded as the activation is
            for (std::int64_t i = d.live; i < d.k; ++i) wv[static_cast<std::size_t>(r * d.k + i)] = 0.0f;
          }
          mf::QuantizeOptions qo;
          qo.pad = true;
          mf::QuantizedTensor w = mf::quantize(wv.data(), Shape{d.n, d.k}, mf::scheme_named(c.scheme), qo);
          if (kind == Kind::adversarial) spoil(w, rng, false);
          if (!fp4 && d.live < d.k) {  // NaN codes in the zero tail of rows 3 and 17
            w.codes[static_cast<std::size_t>(3 * d.k + d.k - 1)] = 0x7F;
            if (d.n > 17) w.codes[static_cast<std::size_t>(17 * d.k + d.live)] = 0xFF;
          }
          expect_fast_matches_ref(
              [&](bool fast, mf::GemmOut out, const mf::GemmOptions& o) {
                if (fp4) {
                  fast ? mf::fp4_gemm(a, w, out, o) : mf::ref::fp4_gemm(a, w, out, o);
                } else {
                  fast ? mf::fp8_gemm(a, w, out, o) : mf::ref::fp8_gemm(a, w, out, o);
                }
              },
              m, d.n,
              std::string(c.scheme) + " M=" + std::to_string(m) + " N=" + std::to_string(d.n) +
                  " K=" + std::to_string(d.k) + " zero from " + std::to_string(d.live) + " kind " +
                  std::to_string(static_cast<int>(kind)),
              inputs_of(std::string(c.scheme) + " act " + std::to_string(static_cast<int>(c.act_scale)), a, w));
          if (!fp4 && d.live < d.k) {  // the NaN codes reached the output (not only matched the reference)
            std::vector<float> y(static_cast<std::size_t>(m * d.n));
            mf::fp8_gemm(a, w, mf::GemmOut{y.data(), nullptr}, {});
            EXPECT_TRUE(std::isnan(y[3])) << c.scheme << " K=" << d.k;
          }
        }
      }
    }
  }
}
TEST(GemmSimdTargets, GemvActivationWithZeroTail) { each_target_and_e4m3_gemv_loop(check_zero_tail); }

// A NaN weight scale (ue8m0 code 0xFF) on a block that lies wholly in the activations' zero tail: 0 x (value x NaN)
// is NaN in the definition, so those outputs are NaN although the GEMV skips the tail's products (it leaves weights
// with a NaN scale to the tiles, which skip nothing). fp8-32x32 at N = 50, K = 128: scale block (1, 3) holds rows
// 32 to 49, columns 96 to 127; mxfp8 (whose GEMV reads the scale codes in place on AVX3_DL and AVX2): the same columns
// of row 32.
TEST_P(GemmSimdTarget, NanWeightScaleInZeroTail) {
  std::mt19937 rng(12);
  for (const std::int64_t m : {1, 3}) {
    std::vector<float> x = values(m * 128, Kind::normal, rng);
    for (std::int64_t r = 0; r < m; ++r) std::fill(x.begin() + r * 128 + 40, x.begin() + (r + 1) * 128, 0.0f);
    const mf::QuantizedTensor a = mf::act_quant(x.data(), Shape{m, 128}, mf::ActScale::ue8m0);
    for (const std::string scheme : {"fp8-32x32", "mxfp8"}) {  // mxfp8: its codes read in place (AVX3_DL, AVX2)
      SCOPED_TRACE(scheme);
      mf::QuantizedTensor w = weight(scheme, 50, 128, Kind::normal, rng);
      const bool mx = scheme == "mxfp8";
      ASSERT_EQ(w.scales.size(), mx ? 50u * 4u : 2u * 4u);
      w.scales[mx ? 32 * 4 + 3 : 1 * 4 + 3] = 0xFF;  // row 32 (mxfp8) or rows 32-49, the last 32 columns
      each_e4m3_gemv_loop([&] {
        expect_fast_matches_ref(
            [&](bool fast, mf::GemmOut out, const mf::GemmOptions& o) {
              fast ? mf::fp8_gemm(a, w, out, o) : mf::ref::fp8_gemm(a, w, out, o);
            },
            m, 50, "M=" + std::to_string(m));
        std::vector<float> y(static_cast<std::size_t>(m * 50));
        mf::fp8_gemm(a, w, mf::GemmOut{y.data(), nullptr}, {});
        for (std::int64_t r = 0; r < m; ++r) {
          EXPECT_FALSE(std::isnan(y[static_cast<std::size_t>(r * 50 + 31)])) << "row " << r;
          EXPECT_TRUE(std::isnan(y[static_cast<std::size_t>(r * 50 + 32)])) << "row " << r;
        }
      });
    }
  }
}

// Calls large enough for two threads (M x N x K > kParallelMacs, 2^18) split their columns between them: M = 1 and
// single passes of activation rows (M <= 256) take chunks of column blocks from a queue (src/cpu/column_queue.h),
// larger M a fixed share per thread. N = 1000 (63 blocks) is 16 chunks at M = 1 and M = 3 (the GEMV, each chunk's
// columns for every row) and 7 at M = 9 (4 x 4 tile on AVX-512), N = 500 is 8 at M = 18 (column-lane tile), the last
// ending inside a block; N = 576 at K = 640 (SmolLM2-135M's q_proj, K padded) is 9 chunks at M = 1, the smallest
// decode shape that runs on two threads; M = 256 is one whole pass, read in place (no padded copy; so are M = 1 and
// any M that needs no padding), M = 300 makes two passes of the 4 x 4 tile's 256 rows (one of the column-lane tile's
// 512), M = 600 two of the column-lane tile's. A chunk skipped, taken twice (accumulate adds twice) or cut short shows
// up as a mismatch. Best target only: the split is the same on all.
TEST(GemmSimd, ColumnsSplitBetweenThreads) {
  std::mt19937 rng(10);
  for (const Dims d : {Dims{1, 1000, 1152}, Dims{1, 576, 640}, Dims{3, 1000, 384}, Dims{9, 1000, 128},
                       Dims{18, 500, 128}, Dims{256, 40, 128}, Dims{300, 40, 128}, Dims{600, 40, 128}}) {
    ASSERT_GT(static_cast<double>(d.m * d.n * d.k), mf::gemm::kParallelMacs);
    const std::vector<float> x = values(d.m * d.k, Kind::normal, rng);
    const mf::QuantizedTensor a = mf::act_quant(x.data(), Shape{d.m, d.k}, mf::ActScale::ue8m0);
    std::vector<std::uint16_t> a16(static_cast<std::size_t>(d.m * d.k)), w16(static_cast<std::size_t>(d.n * d.k));
    for (auto& v : a16) v = static_cast<std::uint16_t>(0x3C00 + rng() % 0x800);
    for (auto& v : w16) v = static_cast<std::uint16_t>(0x3C00 + rng() % 0x800 + (rng() % 2) * 0x8000);
    for (const std::string scheme : {"fp8-128x128", "mxfp4", "bf16"}) {
      const mf::QuantizedTensor w = weight(scheme == "bf16" ? "mxfp4" : scheme, d.n, d.k, Kind::weight_codes, rng);
      const auto gemm = [&](bool fast, float* out, bool accumulate) {
        mf::GemmOptions o;
        o.threads = 2;
        o.accumulate = accumulate;
        const mf::GemmOut c{out, nullptr};
        if (scheme == "bf16") {
          fast ? mf::bf16_gemm(a16.data(), w16.data(), d.m, d.n, d.k, c, o)
               : mf::ref::bf16_gemm(a16.data(), w16.data(), d.m, d.n, d.k, c, o);
        } else if (scheme == "mxfp4") {
          fast ? mf::fp4_gemm(a, w, c, o) : mf::ref::fp4_gemm(a, w, c, o);
        } else {
          fast ? mf::fp8_gemm(a, w, c, o) : mf::ref::fp8_gemm(a, w, c, o);
        }
      };
      for (const bool accumulate : {false, true}) {
        std::vector<float> f(static_cast<std::size_t>(d.m * d.n));
        for (std::size_t i = 0; i < f.size(); ++i) f[i] = static_cast<float>(i % 7) - 3.25f;
        std::vector<float> r = f;
        gemm(true, f.data(), accumulate);
        gemm(false, r.data(), accumulate);
        expect_same(f, r, scheme + " " + dims_text(d) + (accumulate ? " accumulate" : ""));
      }
    }
  }
}

// The kept scratch: aligned, the same block while a call asks no more than it holds, a larger one when it does, and
// given back by trim only above the limit.
TEST(GemmSimd, ThreadScratchGrowsAndTrims) {
  mf::gemm::ThreadScratch s;
  float* first = s.get(100);
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(first) % 64, 0u);
  first[99] = 1.0f;
  EXPECT_EQ(s.get(50), first);
  EXPECT_EQ(s.get(100), first);
  float* larger = s.get(1000);
  ASSERT_NE(larger, nullptr);
  larger[999] = 2.0f;  // writable to its end (ASan checks the bound)
  s.trim(1000);
  EXPECT_EQ(s.get(1000), larger);
  s.trim(999);
  float* again = s.get(10);
  ASSERT_NE(again, nullptr);
  again[9] = 3.0f;
}

// The column-lane tile and the GEMV keep their scratch per thread: a call after a larger one (more rows, longer K,
// more columns) must see none of its leftovers, and one after a smaller one none of its bounds.
TEST(GemmSimd, KeptScratchLeavesNothingBetweenCalls) {
  std::mt19937 rng(21);
  const struct {
    std::int64_t m, n, k;
  } calls[] = {{300, 70, 512}, {20, 33, 256}, {1, 40, 384}, {300, 70, 512}, {18, 17, 128}, {3, 50, 256}};
  for (const auto& d : calls) {
    const std::vector<float> x = values(d.m * d.k, Kind::normal, rng);
    const mf::QuantizedTensor a = mf::act_quant(x.data(), Shape{d.m, d.k});
    const mf::QuantizedTensor w = weight("fp8-128x128", d.n, d.k, Kind::normal, rng);
    std::vector<float> fast(static_cast<std::size_t>(d.m * d.n), -1.0f), ref(fast.size(), -2.0f);
    mf::fp8_gemm(a, w, mf::GemmOut{fast.data(), nullptr}, {});
    mf::ref::fp8_gemm(a, w, mf::GemmOut{ref.data(), nullptr}, {});
    expect_same(fast, ref, "M " + std::to_string(d.m) + " N " + std::to_string(d.n) + " K " + std::to_string(d.k));
  }
}

// Two threads drain the queue: every block is handed out once, in chunks of at most the chunk size.
TEST(GemmSimd, ColumnQueueHandsOutEveryBlockOnce) {
  for (const std::int64_t blocks : {0, 1, 4, 63, 1000}) {
    mf::gemm::ColumnQueue queue(blocks, 4);
    std::vector<int> taken(static_cast<std::size_t>(blocks));
#pragma omp parallel num_threads(2)
    {
      std::int64_t begin, end;
      while (queue.next(begin, end)) {
        EXPECT_LE(end - begin, 4);
        EXPECT_LT(begin, end);
        for (std::int64_t b = begin; b < end; ++b) {
#pragma omp atomic
          ++taken[static_cast<std::size_t>(b)];
        }
      }
    }
    for (std::int64_t b = 0; b < blocks; ++b) EXPECT_EQ(taken[static_cast<std::size_t>(b)], 1) << "block " << b;
  }
}

// wait_until_done returns once every block is reported finished, not before: one thread computes its chunks slowly
// while the other waits. It gives up after its limit when a block is never reported.
TEST(GemmSimd, ColumnQueueWaitsForEveryChunk) {
  for (const std::int64_t blocks : {1, 5, 64}) {
    mf::gemm::ColumnQueue queue(blocks, 4);
    std::vector<int> finished(static_cast<std::size_t>(blocks));
    std::atomic<int> waited_early{0};
#pragma omp parallel num_threads(2)
    {
      std::int64_t begin, end;
      while (queue.next(begin, end)) {
        if (omp_get_thread_num() == 1) std::this_thread::sleep_for(std::chrono::milliseconds(2));
        for (std::int64_t b = begin; b < end; ++b) {
#pragma omp atomic
          ++finished[static_cast<std::size_t>(b)];
        }
        queue.finished(begin, end);
      }
      queue.wait_until_done(std::chrono::seconds(60));
      for (std::int64_t b = 0; b < blocks; ++b) {
        int seen;
#pragma omp atomic read
        seen = finished[static_cast<std::size_t>(b)];
        if (seen != 1) ++waited_early;
      }
    }
    EXPECT_EQ(waited_early.load(), 0) << blocks << " blocks";
  }
  mf::gemm::ColumnQueue never(8, 4);
  std::int64_t begin, end;
  ASSERT_TRUE(never.next(begin, end));
  never.finished(begin, end);  // the second chunk is claimed by no one
  const auto start = std::chrono::steady_clock::now();
  never.wait_until_done(std::chrono::milliseconds(5));
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(5));
}

// Targets without an fma run the fast path only when every product is exact, which fails once a ue8m0 weight scale
// exceeds 2^100 (codes 228 .. 254; 255 is NaN). The scan must see every scale code, the last one included.
TEST(GemmSimd, ProductsExactUntilAScaleExceeds2To100) {
  std::mt19937 rng(9);
  const std::vector<float> x = values(128, Kind::normal, rng);
  const mf::QuantizedTensor a = mf::act_quant(x.data(), Shape{1, 128}, mf::ActScale::ue8m0);
  std::vector<float> out(64);
  for (const char* scheme : {"mxfp4", "fp8-32x32"}) {
    const bool fp4 = std::string(scheme) == "mxfp4";
    const mf::QuantizedTensor w0 = weight(scheme, fp4 ? 41 : 64, 128, Kind::normal, rng);  // 164 codes: a vector tail
    for (const std::size_t at : {std::size_t{0}, w0.scales.size() / 2, w0.scales.size() - 1}) {
      for (const int code : {127, 227, 228, 254, 255}) {
        mf::QuantizedTensor w = w0;
        w.scales[at] = static_cast<std::uint8_t>(code);
        const mf::GemmOut o{out.data(), nullptr};
        const mf::gemm::Problem p =
            fp4 ? mf::gemm::fp4_problem(a, w, o, {}) : mf::gemm::fp8_problem("fp8_gemm", a, w, o, {});
        EXPECT_EQ(p.products_exact(), code < 228 || code == 255) << scheme << " code " << code << " at " << at;
      }
    }
  }
}

TEST_P(GemmSimdTarget, PlainBf16AndF32) {
  std::mt19937 rng(7);
  const Dims shapes[] = {{1, 16, 128}, {1, 21, 40},   {2, 33, 300}, {3, 17, 7},
                         {6, 40, 129}, {17, 50, 200}, {261, 18, 64}};
  for (const Dims& d : shapes) {
    for (const Kind kind : {Kind::normal, Kind::outliers, Kind::adversarial}) {
      const std::vector<float> a = values(d.m * d.k, kind, rng), w = values(d.n * d.k, kind, rng);
      std::vector<std::uint16_t> a16(a.size()), w16(w.size());
      const auto high_half = [](float x) { return static_cast<std::uint16_t>(std::bit_cast<std::uint32_t>(x) >> 16); };
      for (std::size_t i = 0; i < a.size(); ++i) a16[i] = high_half(a[i]);
      for (std::size_t i = 0; i < w.size(); ++i) w16[i] = high_half(w[i]);
      expect_fast_matches_ref(
          [&](bool fast, mf::GemmOut out, const mf::GemmOptions& o) {
            fast ? mf::bf16_gemm(a16.data(), w16.data(), d.m, d.n, d.k, out, o)
                 : mf::ref::bf16_gemm(a16.data(), w16.data(), d.m, d.n, d.k, out, o);
          },
          d.m, d.n, "bf16 " + dims_text(d));
      expect_fast_matches_ref(
          [&](bool fast, mf::GemmOut out, const mf::GemmOptions& o) {
            fast ? mf::f32_gemm(a.data(), w.data(), d.m, d.n, d.k, out, o)
                 : mf::ref::f32_gemm(a.data(), w.data(), d.m, d.n, d.k, out, o);
          },
          d.m, d.n, "f32 " + dims_text(d));
    }
  }
}

// The e4m3 GEMV decodes by table on AVX3_DL and newer (AVX512-VBMI), through fp16 in 16 lanes on AVX3, in 8 on AVX2
// (through fp16 or with shifted fields, as the CPU's maker chooses) and by shifted fields on narrower targets: each
// instance of the tests above runs the path its target names.
// Where the CPU has AVX512-BF16 the dot product must be available on AVX3_DL, so that each_e4m3_gemv_loop runs it.
TEST_P(GemmSimdTarget, E4m3GemvDecodeFollowsTheTarget) {
  const std::int64_t target = GetParam();
  std::string expected = "lanes";
#if HWY_ARCH_X86
  __builtin_cpu_init();
  if (target <= HWY_AVX3_DL) {
    expected = "tables";
  } else if (target <= HWY_AVX3) {
    expected = "avx512";
  }
#endif
  EXPECT_EQ(mf::gemm::gemv_e4m3_decode(), expected) << hwy::TargetName(target);
  // AVX512-BF16's dot product can run only on AVX3_DL and newer.
  const bool dot = mf::gemm::gemv_e4m3_bf16_dot_available();
  std::printf("%s: e4m3 GEMV decode %s%s\n", hwy::TargetName(target), mf::gemm::gemv_e4m3_decode(),
              dot ? (mf::gemm::gemv_e4m3_bf16_dot() ? ", bf16 dot product" : ", bf16 dot product available") : "");
  if (expected != "tables") {
    EXPECT_FALSE(dot);
  }
#if HWY_ARCH_X86
  if (expected == "tables" && __builtin_cpu_supports("avx512bf16")) {
    // Zen 4 and the Sapphire Rapids-class Xeon round as two fmas (measured); a CPU that does not would keep the
    // table loop, and fail here until it is named as such.
    EXPECT_TRUE(dot) << "this CPU's vdpbf16ps does not round as two fmas, or the dot product is not compiled in";
  }
#endif
  mf::gemm::choose_gemv_e4m3_bf16_dot(mf::gemm::GemvChoice::never);
  EXPECT_FALSE(mf::gemm::gemv_e4m3_bf16_dot());
  mf::gemm::choose_gemv_e4m3_bf16_dot(mf::gemm::GemvChoice::always);
  EXPECT_EQ(mf::gemm::gemv_e4m3_bf16_dot(), dot);
  mf::gemm::choose_gemv_e4m3_bf16_dot(mf::gemm::GemvChoice::faster);
  // The AVX2 loop's two decodes: on AVX2 only.
  EXPECT_EQ(mf::gemm::gemv_e4m3_f32_fields_available(), HWY_ARCH_X86 && target == HWY_AVX2) << hwy::TargetName(target);
#if HWY_ARCH_X86
  // By default the loop measured faster on the CPU's maker: the dot product and the f32 fields on AMD's, the f32
  // fmas and the fp16 route on Intel's.
  EXPECT_EQ(mf::gemm::gemv_e4m3_bf16_dot(), dot && __builtin_cpu_is("amd") != 0);
  EXPECT_EQ(mf::gemm::gemv_e4m3_f32_fields_chosen(), __builtin_cpu_is("amd") != 0);
#endif
}

TEST(GemmSimd, TargetsCompiled) {
  for (const std::int64_t t : hwy::SupportedAndGeneratedTargets()) {
    std::printf("compiled and supported: %s\n", hwy::TargetName(t));
  }
  EXPECT_FALSE(hwy::SupportedAndGeneratedTargets().empty());
#if HWY_ARCH_X86
  // A CPU with AVX3_DL runs it (this file asks for it as gemm.cc does).
  if (hwy::SupportedTargets() & HWY_AVX3_DL) {
    EXPECT_EQ(hwy::SupportedAndGeneratedTargets()[0], HWY_AVX3_DL);
  }
#endif
}

}  // namespace
