// The per-target element codec (src/cpu/element_codec-inl.h) against the scalar codec (include/minifloat/codec.h),
// bit for bit, on every Highway target this CPU supports and the build compiled (Highway's TestWithParamTarget) and
// at every vector width the target has (Highway's ForPartialVectors: 1, 2, 4, ... lanes up to the full vector):
//   * Decode: every code of every format (every other f32 bit pattern being the scalar codec's own);
//   * EncodeNearest, EncodeStochastic (32 random bits per lane) and EncodeExact (each rounding) under both overflow
//     rules, on every code's value, the midpoints between neighbours and their f32 neighbours, random bit patterns
//     and specials; lanes the step hands on (NeedsScalar, NeedsExact) are left out, as its callers leave them.
// The bulk casts, quantizers and GEMM kernels call these same functions, so a lane-count-dependent slip here (a
// constant set only in some lanes, a partial vector's padding read back) would show in all of them.
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "minifloat/codec.h"
#include "minifloat/format.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "../tests/simd/element_codec_simd_test.cc"  // found through src/, the test's include path
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "hwy/tests/test_util-inl.h"
#include "cpu/element_codec-inl.h"

// Per-target helpers, defined once (they use no vectors).
#ifndef MF_ELEMENT_CODEC_SIMD_TEST_ONCE
#define MF_ELEMENT_CODEC_SIMD_TEST_ONCE
namespace mf::test {

// The formats the element codec serves: every one but f32 (which the bulk casts copy).
inline std::vector<const Format*> codec_formats() {
  std::vector<const Format*> out;
  for (const Format* f : all_formats) {
    if (f != &f32) out.push_back(f);
  }
  return out;
}

// Every code's value (all codes up to 4096 of them, a random 4096 otherwise), the midpoints between neighbours and
// their f32 neighbours, both signs; random bit patterns; specials and f32 subnormals.
inline std::vector<float> encode_inputs(const Format& f, std::uint32_t seed) {
  std::vector<float> x;
  std::mt19937 rng(seed);
  const bool all = f.code_count() <= 4096;
  for (std::uint32_t i = 0; i < 4096 && (!all || i < f.code_count()); ++i) {
    const std::uint32_t c = all ? i : rng() % static_cast<std::uint32_t>(f.code_count());
    const float v = decode(f, c), w = decode(f, c + 1);
    if (!std::isfinite(v)) continue;
    for (const float y : {v, std::isfinite(w) ? (v + w) / 2 : v * 1.0625f}) {
      for (const float z : {y, -y}) {
        x.insert(x.end(), {z, std::nextafter(z, INFINITY), std::nextafter(z, -INFINITY)});
      }
    }
  }
  for (int i = 0; i < 4096; ++i) x.push_back(std::bit_cast<float>(static_cast<std::uint32_t>(rng())));
  x.insert(x.end(), {0.0f, -0.0f, INFINITY, -INFINITY, NAN, -NAN, 1e-40f, -1e-40f, 0x1p-126f, 3.4e38f, -3.4e38f});
  return x;
}

inline std::string hex(std::uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%X", v);
  return buf;
}

}  // namespace mf::test
#endif  // MF_ELEMENT_CODEC_SIMD_TEST_ONCE

HWY_BEFORE_NAMESPACE();
namespace mf::test {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
namespace cpu = mf::cpu::HWY_NAMESPACE;

// Whether the codec is tested at d's width. Not at one lane on x86's SIMD targets: there Highway 1.0.3 shifts a
// 1-lane u32 vector by a vector with psll/psrl, which take the low 64 bits of the count register as one count, and
// Set fills every lane of it, so each variable shift gives 0 (later Highway versions fix this). No kernel uses
// 1-lane vectors (the bulk casts and quantizers take full vectors, the GEMMs 16 lanes or the full vector).
template <class D>
bool Tested(D d) {
  return !(HWY_ARCH_X86 && HWY_TARGET != HWY_SCALAR && HWY_TARGET != HWY_EMU128 && hn::Lanes(d) == 1);
}

// Runs `step(lanes in, lanes out)` over `in` one vector of d at a time (the last one padded with `pad`).
template <class D, class Step>
std::vector<std::uint32_t> ByVectors(D d, const std::vector<std::uint32_t>& in, std::uint32_t pad, Step step) {
  const std::size_t n = hn::Lanes(d);
  std::vector<std::uint32_t> padded = in;
  padded.resize((in.size() + n - 1) / n * n, pad);
  std::vector<std::uint32_t> out(padded.size());
  for (std::size_t i = 0; i < padded.size(); i += n) hn::StoreU(step(hn::LoadU(d, padded.data() + i)), d, out.data() + i);
  out.resize(in.size());
  return out;
}

struct TestDecode {
  template <class T, class D>
  HWY_NOINLINE void operator()(T /*unused*/, D d) {
    if (!Tested(d)) return;
    for (const Format* f : codec_formats()) {
      const mf::cpu::ElementCodec k = mf::cpu::element_codec(*f);
      std::vector<std::uint32_t> codes(static_cast<std::size_t>(f->code_count()));
      for (std::uint32_t c = 0; c < codes.size(); ++c) codes[c] = c;
      const auto got = ByVectors(d, codes, 0, [&](auto v) { return cpu::Decode(d, k, v); });
      int bad = 0;
      for (std::uint32_t c = 0; c < codes.size() && bad < 3; ++c) {
        const std::uint32_t want = std::bit_cast<std::uint32_t>(decode(*f, c));
        if (got[c] != want) {
          ++bad;
          ADD_FAILURE() << f->name << " code " << hex(c) << " at " << hn::Lanes(d) << " lanes: " << hex(got[c])
                        << ", want " << hex(want);
        }
      }
    }
  }
};

// Compares the lanes `skip` leaves with the scalar codec under `o` (random bits: `random[i]`).
template <class D>
void ExpectEncodes(D d, const Format& f, EncodeOptions o, const std::vector<std::uint32_t>& bits,
                   const std::vector<std::uint32_t>& random, const std::vector<std::uint32_t>& got,
                   const std::vector<std::uint32_t>& skip, const char* step) {
  int bad = 0;
  for (std::size_t i = 0; i < bits.size() && bad < 3; ++i) {
    if (skip[i] != 0) continue;
    o.random_bits = random[i];
    const std::uint32_t want = encode(f, std::bit_cast<float>(bits[i]), o);
    if (got[i] != want) {
      ++bad;
      ADD_FAILURE() << step << " " << f.name << " x = " << hex(bits[i]) << " rounding "
                    << static_cast<int>(o.rounding) << " overflow " << static_cast<int>(o.overflow) << " at "
                    << hn::Lanes(d) << " lanes: " << hex(got[i]) << ", want " << hex(want);
    }
  }
}

struct TestEncode {
  template <class T, class D>
  HWY_NOINLINE void operator()(T /*unused*/, D d) {
    if (!Tested(d)) return;
    const hn::RebindToUnsigned<D> du;
    const auto skip_lanes = [&](auto mask) { return hn::IfThenElseZero(mask, hn::Set(du, 1u)); };
    std::mt19937 rng(7);
    for (const Format* f : codec_formats()) {
      std::vector<std::uint32_t> bits, random;
      for (const float x : encode_inputs(*f, 11)) {
        bits.push_back(std::bit_cast<std::uint32_t>(x));
        random.push_back(static_cast<std::uint32_t>(rng()));
      }
      const auto mag = [&](auto v) { return hn::And(v, hn::Set(du, 0x7FFFFFFFu)); };
      const auto scalar = ByVectors(du, bits, 0, [&](auto v) { return skip_lanes(cpu::NeedsScalar(du, mag(v))); });
      for (const Overflow overflow : {Overflow::standard, Overflow::saturate}) {
        const mf::cpu::ElementCodec nearest = mf::cpu::element_codec(*f, {Rounding::nearest_even, overflow});
        ExpectEncodes(du, *f, {Rounding::nearest_even, overflow}, bits, random,
                      ByVectors(du, bits, 0, [&](auto v) { return cpu::EncodeNearest(du, nearest, v); }), scalar,
                      "EncodeNearest");
        // EncodeStochastic: lanes by index, each with its random bits (both arrays go through ByVectors alike).
        const mf::cpu::ElementCodec stochastic = mf::cpu::element_codec(*f, {Rounding::stochastic, overflow});
        std::vector<std::uint32_t> skip = ByVectors(du, bits, 0, [&](auto v) {
          return skip_lanes(cpu::NeedsExact(du, stochastic, mag(v)));
        });
        for (std::size_t i = 0; i < skip.size(); ++i) skip[i] |= scalar[i];
        std::vector<std::uint32_t> got(bits.size());
        const std::size_t n = hn::Lanes(du);
        for (std::size_t i = 0; i + n <= bits.size(); i += n) {
          hn::StoreU(cpu::EncodeStochastic(du, stochastic, hn::LoadU(du, bits.data() + i), hn::LoadU(du, random.data() + i)),
                     du, got.data() + i);
        }
        for (std::size_t i = bits.size() / n * n; i < bits.size(); ++i) skip[i] = 1;  // the tail: no whole vector
        ExpectEncodes(du, *f, {Rounding::stochastic, overflow}, bits, random, got, skip, "EncodeStochastic");
        for (const Rounding rounding : {Rounding::nearest_even, Rounding::toward_zero, Rounding::stochastic}) {
          const mf::cpu::ElementCodec exact = mf::cpu::element_codec(*f, {rounding, overflow});
          for (std::size_t i = 0; i + n <= bits.size(); i += n) {
            hn::StoreU(cpu::EncodeExact(du, exact, hn::LoadU(du, bits.data() + i), hn::LoadU(du, random.data() + i)),
                       du, got.data() + i);
          }
          std::vector<std::uint32_t> skip_exact = scalar;
          for (std::size_t i = bits.size() / n * n; i < bits.size(); ++i) skip_exact[i] = 1;
          ExpectEncodes(du, *f, {rounding, overflow}, bits, random, got, skip_exact, "EncodeExact");
        }
      }
    }
  }
};

void TestAllDecode() { hn::ForPartialVectors<TestDecode>()(std::uint32_t()); }
void TestAllEncode() { hn::ForPartialVectors<TestEncode>()(std::uint32_t()); }

}  // namespace HWY_NAMESPACE
}  // namespace mf::test
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace mf::test {

class ElementCodecTarget : public hwy::TestWithParamTarget {};
HWY_TARGET_INSTANTIATE_TEST_SUITE_P(ElementCodecTarget);
HWY_EXPORT_AND_TEST_P(ElementCodecTarget, TestAllDecode);
HWY_EXPORT_AND_TEST_P(ElementCodecTarget, TestAllEncode);

}  // namespace mf::test
#endif  // HWY_ONCE
