// Every one of the 2^32 f32 inputs, encoded into every format of 8 bits or fewer, against an independent slow
// reference: the nearest value of the format's golden table (tests/golden, written from the standards) by exact
// comparison with the midpoint, ties to the even code, then docs/spec.md#encode's special cases typed here by hand.
// Rounding toward zero and overflow = saturate are checked on every input too, and all three through the bulk path
// (minifloat/bulk.h, this CPU's best SIMD target) as well as the scalar codec.
//
// The reference's answer is constant between the table's values and midpoints, so it is asked once per run of
// inputs with one answer (run_starts) and the codec's six answers for every input of the run compared with it:
// asked once per input it took 60-70 s per format on 2 cores, more than half of it in the reference.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>
#include <vector>

#include "../golden/golden_table.h"
#include "minifloat/bulk.h"
#include "minifloat/codec.h"

namespace mf::test {
namespace {

// docs/spec.md#encode, per format, typed from the spec rather than derived from mf::Format.
struct Rules {
  std::uint32_t sign;           // sign bit of the code (0 for unsigned formats)
  std::uint32_t max_code;       // largest finite magnitude code
  double overflow_at;           // |x| at which default rounding stops giving max_code
  bool overflow_inclusive;      // true: |x| >= overflow_at overflows; false: |x| > overflow_at
  std::uint32_t overflow_code;  // magnitude code of default overflow (Inf or NaN; max_code when saturating formats)
  std::uint32_t inf_code;       // what +Inf encodes to by default
  std::uint32_t nan_code;       // what +NaN encodes to (magnitude; -NaN adds the sign, or the reverse for no-NaN)
  bool nan_is_zero;             // format has no NaN: NaN -> zero of the opposite sign
  bool is_ue8m0;
  bool unsigned_zero = false;  // fnuz: the -0 code is the NaN, so -0 and negatives that round to zero give +0
};

// Typed from docs/spec.md#encode and docs/spec.md#ue8m0.
Rules rules_for(const Format& f) {
  if (f == e4m3) return {0x80, 0x7E, 464.0, false, 0x7F, 0x7F, 0x7F, false, false};
  if (f == ue4m3) return {0x00, 0x7E, 464.0, false, 0x7F, 0x7F, 0x7F, false, false};
  if (f == e5m2) return {0x80, 0x7B, 61440.0, true, 0x7C, 0x7C, 0x7E, false, false};
  if (f == e3m2) return {0x20, 0x1F, 28.0, false, 0x1F, 0x1F, 0x00, true, false};
  if (f == e2m3) return {0x20, 0x1F, 7.5, false, 0x1F, 0x1F, 0x00, true, false};
  if (f == e2m1) return {0x08, 0x07, 6.0, false, 0x07, 0x07, 0x00, true, false};
  if (f == ue8m0) return {0x00, 0xFE, 1.5 * std::ldexp(1.0, 127), true, 0xFF, 0xFF, 0xFF, false, true};
  // fnuz (arXiv:2206.02915, ml_dtypes' float8_*fnuz): NaN, Inf and overflow all give 0x80; the largest values
  // (240, 57344, 30) have odd mantissas, so the midpoint to the next binade rounds up and overflows.
  if (f == e4m3fnuz) return {0x80, 0x7F, 248.0, true, 0x80, 0x80, 0x80, false, false, true};
  if (f == e5m2fnuz) return {0x80, 0x7F, 61440.0, true, 0x80, 0x80, 0x80, false, false, true};
  if (f == e4m3b11fnuz) return {0x80, 0x7F, 31.0, true, 0x80, 0x80, 0x80, false, false, true};
  // IEEE-style 8-bit (LLVM Float8E3M4, Float8E4M3): 15.5 and 240 have odd mantissas, the midpoint goes to Inf.
  if (f == e3m4) return {0x80, 0x6F, 15.75, true, 0x70, 0x70, 0x78, false, false};
  if (f == e4m3ieee) return {0x80, 0x77, 248.0, true, 0x78, 0x78, 0x7C, false, false};
  // ue5m3 (PTX ISA 13.4): 0xFE = 114688's mantissa 110 is even, so the midpoint 118784 (to 0xFF's 122880) stays; past
  // it, NaN.
  if (f == ue5m3) return {0x00, 0xFE, 118784.0, false, 0xFF, 0xFF, 0xFF, false, false};
  throw std::logic_error("no rules for this format");
}

struct Expected {
  std::uint32_t nearest, toward_zero, saturate;
};

class Reference {
 public:
  explicit Reference(const Format& f) : rules_(rules_for(f)) {
    for (const GoldenCode& g : load_golden(f.name)) {
      // Finite, non-negative values, in increasing order; the codes without a sign bit are those.
      if (!std::isfinite(g.value) || std::signbit(g.value) || (g.code & rules_.sign)) continue;
      values_.push_back(g);
    }
    std::sort(values_.begin(), values_.end(), [](auto& a, auto& b) { return a.value < b.value; });
  }

  // The table's values, increasing, and the default rounding's overflow threshold.
  std::vector<double> values() const {
    std::vector<double> v;
    for (const GoldenCode& g : values_) v.push_back(g.value);
    return v;
  }
  double overflow_at() const { return rules_.overflow_at; }

  // Index of the largest table value <= x (x > 0 finite), or -1 if x is below them all.
  int start_index(double x) const {
    const auto it = std::upper_bound(values_.begin(), values_.end(), x, [](double v, auto& g) { return v < g.value; });
    return static_cast<int>(it - values_.begin()) - 1;
  }

  // Expected codes for a positive finite x, given i = start_index(x).
  Expected positive(double x, int i) const {
    const Rules& r = rules_;
    if (r.is_ue8m0 && x < std::ldexp(1.0, -126)) {
      // docs/spec.md#ue8m0: x <= 2^-127 -> 0x00; 2^-127 < x < 2^-126 -> 0x01 (ml_dtypes' subnormal-style grid).
      const std::uint32_t c = x <= std::ldexp(1.0, -127) ? 0x00 : 0x01;
      return {c, 0x00, c};
    }
    const double max = values_.back().value;
    if (x >= max) {
      const bool over = r.overflow_inclusive ? x >= r.overflow_at : x > r.overflow_at;
      return {over ? r.overflow_code : r.max_code, r.max_code, r.max_code};
    }
    const GoldenCode& lo = values_[i];
    const GoldenCode& hi = values_[i + 1];
    const double mid = (lo.value + hi.value) / 2;  // exact: both have few significant bits
    std::uint32_t nearest;
    if (x < mid) {
      nearest = lo.code;
    } else if (x > mid) {
      nearest = hi.code;
    } else if (r.is_ue8m0) {
      nearest = hi.code;  // docs/spec.md#ue8m0: 1.5 x 2^E rounds up
    } else {
      nearest = (lo.code & 1) == 0 ? lo.code : hi.code;
    }
    return {nearest, x == hi.value ? hi.code : lo.code, nearest};
  }

  // Expected codes for any f32 input (bits), given i = start_index of its magnitude when that is positive finite.
  Expected any(std::uint32_t bits, int i) const {
    const Rules& r = rules_;
    const bool negative = bits >> 31;
    const float x = std::bit_cast<float>(bits);
    const std::uint32_t s = negative ? r.sign : 0;
    if (std::isnan(x)) {
      std::uint32_t c = r.nan_is_zero ? (negative ? 0 : r.sign) : (s | r.nan_code);
      if (r.sign == 0) c = r.nan_code;
      return {c, c, c};
    }
    if (r.sign == 0 && negative && (x != 0 || r.is_ue8m0)) return {r.nan_code, r.nan_code, r.nan_code};
    if (std::isinf(x)) return {s | r.inf_code, s | r.inf_code, s | r.max_code};
    if (x == 0) {
      const std::uint32_t c = r.is_ue8m0 ? r.nan_code : r.unsigned_zero ? 0 : s;
      return {c, c, c};
    }
    Expected e = positive(std::fabs(static_cast<double>(x)), i);
    const auto with_sign = [&](std::uint32_t c) { return r.unsigned_zero && c == 0 ? 0 : s | c; };
    return {with_sign(e.nearest), with_sign(e.toward_zero), with_sign(e.saturate)};
  }

 private:
  Rules rules_;
  std::vector<GoldenCode> values_;
};

// The magnitudes (f32 bits without the sign) at which Reference::any may answer differently from the magnitude
// before: every table value, every midpoint, the overflow threshold and the special cases' edges, each with the
// magnitude after it (more than are needed: a superfluous boundary only cuts a run in two). Between two of them
// `any` is constant, so the walk below asks it once per run instead of once per input, checks that it gives the
// same at the run's last magnitude, and asks it again at one input in 4093 and wherever a codec answer differs from
// the run's. So a missing boundary fails the test unless the codec, too, ignores it at that very input.
std::vector<std::uint32_t> run_starts(const Reference& ref) {
  std::vector<std::uint32_t> b = {0, 1, 0x7F800000u, 0x7F800001u, 0x80000000u};
  const auto add = [&b](double v) {
    const std::uint32_t m = std::bit_cast<std::uint32_t>(static_cast<float>(v));
    b.push_back(m);
    b.push_back(m + 1);
  };
  const std::vector<double> values = ref.values();
  for (std::size_t i = 0; i < values.size(); ++i) {
    add(values[i]);
    if (i + 1 < values.size()) add((values[i] + values[i + 1]) / 2);
  }
  add(ref.overflow_at());
  add(std::ldexp(1.0, -127));
  add(std::ldexp(1.0, -126));
  std::sort(b.begin(), b.end());
  b.erase(std::unique(b.begin(), b.end()), b.end());
  return b;
}

// The scalar codec (codec.h, header-only) for one format and mode, inlined with both known at compile time: the
// same code, at a few nanoseconds a call instead of a call into its general form (2^33 calls per format and mode).
template <const Format& F, EncodeOptions O>
[[gnu::flatten]] std::uint32_t encode_as(float v) {
  return encode(F, v, O);
}

template <const Format& F>
void check_every_f32() {
  const Reference ref(F);
  constexpr EncodeOptions kToZero{Rounding::toward_zero, Overflow::format_default, 0};
  constexpr EncodeOptions kSaturate{Rounding::nearest_even, Overflow::saturate, 0};
  constexpr std::int64_t kChunk = 1 << 20;
  constexpr std::int64_t kChunks = (std::int64_t{1} << 31) / kChunk;  // the magnitudes 0 .. 0x7FFFFFFF
  const std::vector<std::uint32_t> starts = run_starts(ref);
  // The reference's answer for an input, its table bracket found afresh (binary search).
  const auto reference = [&ref](std::uint32_t bits) {
    const float x = std::bit_cast<float>(bits & 0x7FFFFFFFu);
    return ref.any(bits, std::isfinite(x) && x > 0 ? ref.start_index(static_cast<double>(x)) : -1);
  };
  std::int64_t mismatches = 0;
  std::vector<std::string> first;
  std::mutex mu;
  const auto report = [&](const char* what, std::uint32_t bits, std::uint32_t want, std::uint32_t got) {
    std::lock_guard lock(mu);
    if (first.size() < 10) {
      char buf[160];
      std::snprintf(buf, sizeof buf, "%s %s: f32 0x%08x (%.9g) expected 0x%02x got 0x%02x", std::string(F.name).c_str(),
                    what, bits, static_cast<double>(std::bit_cast<float>(bits)), want, got);
      first.emplace_back(buf);
    }
  };

#pragma omp parallel reduction(+ : mismatches)
  {
    std::vector<float> xs(2 * kChunk);  // each thread's, for every chunk it takes
    std::vector<std::uint8_t> bulk[3];
    for (auto& v : bulk) v.resize(xs.size());
#pragma omp for schedule(dynamic)
    for (std::int64_t c = 0; c < kChunks; ++c) {
      const std::uint32_t begin = static_cast<std::uint32_t>(c * kChunk);
      const std::uint32_t end = begin + static_cast<std::uint32_t>(kChunk);
      // The bulk path (bulk.h) on this CPU's best target, the chunk's magnitudes then their negatives.
      for (std::int64_t k = 0; k < kChunk; ++k) {
        xs[k] = std::bit_cast<float>(begin + static_cast<std::uint32_t>(k));
        xs[kChunk + k] = std::bit_cast<float>((begin + static_cast<std::uint32_t>(k)) | 0x80000000u);
      }
      const BulkOptions modes[3] = {{},
                                    {Rounding::toward_zero, Overflow::format_default, 0, 1},
                                    {Rounding::nearest_even, Overflow::saturate, 0, 1}};
      for (int m = 0; m < 3; ++m) encode_bulk(F, xs, std::span<std::uint8_t>(bulk[m]), modes[m]);
      // The runs of constant answers that meet this chunk, each cut to it.
      auto next = std::upper_bound(starts.begin(), starts.end(), begin);
      for (std::uint32_t a = begin; a < end; ++next) {
        const std::uint32_t b = std::min<std::uint32_t>(*next, end);
        for (const std::uint32_t sign : {0u, 0x80000000u}) {
          const Expected want = reference(a | sign);
          const Expected last = reference((b - 1) | sign);
          const std::uint32_t exp[3] = {want.nearest, want.toward_zero, want.saturate};
          const std::uint32_t exp_last[3] = {last.nearest, last.toward_zero, last.saturate};
          if (!std::equal(exp, exp + 3, exp_last)) {
            ++mismatches;
            report("run boundary missing, reference's nearest_even at the run's end", (b - 1) | sign, exp[0],
                   exp_last[0]);
          }
          const std::uint8_t* got_bulk[3];  // at mag - begin
          for (int m = 0; m < 3; ++m) got_bulk[m] = bulk[m].data() + (sign >> 31) * kChunk;
          for (std::uint32_t mag = a; mag < b; ++mag) {
            const std::uint32_t bits = mag | sign;
            const float v = std::bit_cast<float>(bits);
            const std::uint32_t got[6] = {encode_as<F, EncodeOptions{}>(v), encode_as<F, kToZero>(v),
                                          encode_as<F, kSaturate>(v),       got_bulk[0][mag - begin],
                                          got_bulk[1][mag - begin],         got_bulk[2][mag - begin]};
            bool ok = true;
            for (int m = 0; m < 6; ++m) ok &= got[m] == exp[m % 3];
            if (mag % 4093 == 0) {  // the run's answer against the reference asked at this very input
              const Expected here = reference(bits);
              ok &= here.nearest == exp[0] && here.toward_zero == exp[1] && here.saturate == exp[2];
            }
            if (ok) continue;
            const Expected here = reference(bits);  // a mismatch is reported against the reference itself
            const std::uint32_t exp_here[3] = {here.nearest, here.toward_zero, here.saturate};
            static constexpr const char* kMode[] = {"nearest_even",      "toward_zero",      "saturate",
                                                    "bulk nearest_even", "bulk toward_zero", "bulk saturate"};
            for (int m = 0; m < 6; ++m) {
              if (got[m] == exp_here[m % 3]) continue;
              ++mismatches;
              report(kMode[m], bits, exp_here[m % 3], got[m]);
            }
            if (!std::equal(exp, exp + 3, exp_here)) {
              ++mismatches;
              report("run boundary missing, the run's nearest_even", bits, exp_here[0], exp[0]);
            }
          }
        }
        a = b;
      }
    }
  }
  for (const std::string& s : first) ADD_FAILURE() << s;
  EXPECT_EQ(mismatches, 0) << "mismatches over all 2^32 inputs x 3 modes, scalar and bulk";
}

TEST(ExhaustiveEncode, E4M3) { check_every_f32<e4m3>(); }
TEST(ExhaustiveEncode, E5M2) { check_every_f32<e5m2>(); }
TEST(ExhaustiveEncode, E3M2) { check_every_f32<e3m2>(); }
TEST(ExhaustiveEncode, E2M3) { check_every_f32<e2m3>(); }
TEST(ExhaustiveEncode, E2M1) { check_every_f32<e2m1>(); }
TEST(ExhaustiveEncode, UE8M0) { check_every_f32<ue8m0>(); }
TEST(ExhaustiveEncode, UE4M3) { check_every_f32<ue4m3>(); }
TEST(ExhaustiveEncode, E4M3FNUZ) { check_every_f32<e4m3fnuz>(); }
TEST(ExhaustiveEncode, E5M2FNUZ) { check_every_f32<e5m2fnuz>(); }
TEST(ExhaustiveEncode, E4M3B11FNUZ) { check_every_f32<e4m3b11fnuz>(); }
TEST(ExhaustiveEncode, E3M4) { check_every_f32<e3m4>(); }
TEST(ExhaustiveEncode, E4M3IEEE) { check_every_f32<e4m3ieee>(); }
TEST(ExhaustiveEncode, UE5M3) { check_every_f32<ue5m3>(); }

}  // namespace
}  // namespace mf::test
