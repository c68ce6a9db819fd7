// Every one of the 2^32 f32 inputs, encoded into every format of 8 bits or fewer, against an independent slow
// reference: the nearest value of the format's golden table (tests/golden, written from the standards) by exact
// comparison with the midpoint, ties to the even code, then docs/spec.md#encode's special cases typed here by hand.
// Rounding toward zero and overflow = saturate are checked on every input too, and all three through the bulk path
// (minifloat/bulk.h, this CPU's best SIMD target) as well as the scalar codec.
//
// The reference walks the f32 inputs in increasing order, so the bracketing pair of table values only moves
// forward: O(1) per input, which keeps the whole suite at a few minutes on 2 cores.
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
  std::uint32_t sign;          // sign bit of the code (0 for unsigned formats)
  std::uint32_t max_code;      // largest finite magnitude code
  double overflow_at;          // |x| at which default rounding stops giving max_code
  bool overflow_inclusive;     // true: |x| >= overflow_at overflows; false: |x| > overflow_at
  std::uint32_t overflow_code; // magnitude code of default overflow (Inf or NaN; max_code when saturating formats)
  std::uint32_t inf_code;      // what +Inf encodes to by default
  std::uint32_t nan_code;      // what +NaN encodes to (magnitude; -NaN adds the sign, or the reverse for no-NaN)
  bool nan_is_zero;            // format has no NaN: NaN -> zero of the opposite sign
  bool is_ue8m0;
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

  // Index of the largest table value <= x (x > 0 finite), or -1 if x is below them all.
  int bracket(double x, int hint) const {
    int i = hint;
    while (i + 1 < static_cast<int>(values_.size()) && values_[i + 1].value <= x) ++i;
    return i;
  }
  int start_index(double x) const {
    const auto it = std::upper_bound(values_.begin(), values_.end(), x, [](double v, auto& g) { return v < g.value; });
    return static_cast<int>(it - values_.begin()) - 1;
  }

  // Expected codes for a positive finite x, given i = bracket(x).
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

  // Expected codes for any f32 input (bits), using the bracket hint for positive finite magnitudes.
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
      const std::uint32_t c = r.is_ue8m0 ? r.nan_code : s;
      return {c, c, c};
    }
    Expected e = positive(std::fabs(static_cast<double>(x)), i);
    return {s | e.nearest, s | e.toward_zero, s | e.saturate};
  }

 private:
  Rules rules_;
  std::vector<GoldenCode> values_;
};

template <const Format& F>
void check_every_f32() {
  const Reference ref(F);
  constexpr EncodeOptions kToZero{Rounding::toward_zero, Overflow::format_default, 0};
  constexpr EncodeOptions kSaturate{Rounding::nearest_even, Overflow::saturate, 0};
  constexpr std::int64_t kChunk = 1 << 20;
  constexpr std::int64_t kChunks = (std::int64_t{1} << 31) / kChunk;  // the magnitudes 0 .. 0x7FFFFFFF
  std::int64_t mismatches = 0;
  std::vector<std::string> first;
  std::mutex mu;

#pragma omp parallel for schedule(dynamic) reduction(+ : mismatches)
  for (std::int64_t c = 0; c < kChunks; ++c) {
    const std::uint32_t begin = static_cast<std::uint32_t>(c * kChunk);
    // The bulk path (bulk.h) on this CPU's best target, the chunk's magnitudes then their negatives.
    std::vector<float> xs(2 * kChunk);
    for (std::int64_t k = 0; k < kChunk; ++k) {
      xs[k] = std::bit_cast<float>(begin + static_cast<std::uint32_t>(k));
      xs[kChunk + k] = std::bit_cast<float>((begin + static_cast<std::uint32_t>(k)) | 0x80000000u);
    }
    std::vector<std::uint8_t> bulk[3];
    const BulkOptions modes[3] = {{}, {Rounding::toward_zero, Overflow::format_default, 0, 1},
                                  {Rounding::nearest_even, Overflow::saturate, 0, 1}};
    for (int m = 0; m < 3; ++m) {
      bulk[m].resize(xs.size());
      encode_bulk(F, xs, std::span<std::uint8_t>(bulk[m]), modes[m]);
    }
    int i = ref.start_index(static_cast<double>(std::bit_cast<float>(begin)));
    for (std::uint32_t mag = begin; mag < begin + kChunk; ++mag) {
      const float x = std::bit_cast<float>(mag);
      if (mag < 0x7F800000u && mag != 0) i = ref.bracket(static_cast<double>(x), i);
      for (const std::uint32_t bits : {mag, mag | 0x80000000u}) {
        const float v = std::bit_cast<float>(bits);
        const Expected want = ref.any(bits, i);
        const std::size_t at = (bits >> 31) * kChunk + (mag - begin);
        const std::uint32_t got[6] = {encode(F, v), encode(F, v, kToZero), encode(F, v, kSaturate),
                                      bulk[0][at], bulk[1][at], bulk[2][at]};
        const std::uint32_t exp[3] = {want.nearest, want.toward_zero, want.saturate};
        for (int m = 0; m < 6; ++m) {
          if (got[m] == exp[m % 3]) continue;
          ++mismatches;
          std::lock_guard lock(mu);
          if (first.size() < 10) {
            static constexpr const char* kMode[] = {"nearest_even",      "toward_zero",      "saturate",
                                                    "bulk nearest_even", "bulk toward_zero", "bulk saturate"};
            char buf[160];
            std::snprintf(buf, sizeof buf, "%s %s: f32 0x%08x (%.9g) expected 0x%02x got 0x%02x",
                          std::string(F.name).c_str(), kMode[m], bits, static_cast<double>(v), exp[m % 3], got[m]);
            first.emplace_back(buf);
          }
        }
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

}  // namespace
}  // namespace mf::test
