// The per-target element codec (src/cpu/element_codec-inl.h) against the scalar codec (include/minifloat/codec.h),
// bit for bit, on every Highway target this CPU supports and the build compiled (Highway's TestWithParamTarget) and
// at every vector width the target has (Highway's ForPartialVectors: 1, 2, 4, ... lanes up to the full vector):
//   * Decode: every code of every format (every other f32 bit pattern being the scalar codec's own);
//   * EncodeNearest, EncodeStochastic (32 random bits per lane) and EncodeExact (each rounding) under both overflow
//     rules, on every code's value, the midpoints between neighbours and their f32 neighbours, random bit patterns
//     and specials; lanes the step hands on (NeedsScalar, NeedsExact) are left out, as its callers leave them.
//   * the block quantizers' saturating encodes (EncodeSaturating; EncodeSaturatingByTable on AVX-512) on full
//     vectors: finite values near every code and midpoint, and random ones in every binade;
//   * the GEMM kernels' per-format decodes on every code: e4m3 with its constants built in, e4m3 placed and e2m1 by
//     byte table at every width; e4m3 through fp16 on AVX2 and AVX-512, e2m1 by lane permute and e4m3 by byte
//     table on full AVX-512 vectors.
// The bulk casts, quantizers and GEMM kernels call these same functions, so a lane-count-dependent slip here (a
// constant set only in some lanes, a partial vector's padding read back) would show in all of them.
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "minifloat/codec.h"
#include "minifloat/format.h"

// The GEMM kernels' decodes include AVX3_DL's (AVX512-VBMI): compile that target here too, as src/cpu/gemm.cc does.
#define HWY_WANT_AVX3_DL
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "../tests/simd/element_codec_simd_test.cc"  // found through src/, the test's include path
#include "hwy/foreach_target.h"                                        // IWYU pragma: keep
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
  for (std::size_t i = 0; i < padded.size(); i += n) {
    hn::StoreU(step(hn::LoadU(d, padded.data() + i)), d, out.data() + i);
  }
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
      ADD_FAILURE() << step << " " << f.name << " x = " << hex(bits[i]) << " rounding " << static_cast<int>(o.rounding)
                    << " overflow " << static_cast<int>(o.overflow) << " at " << hn::Lanes(d)
                    << " lanes: " << hex(got[i]) << ", want " << hex(want);
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
      for (const Overflow overflow : {Overflow::format_default, Overflow::saturate}) {
        const mf::cpu::ElementCodec nearest = mf::cpu::element_codec(*f, {Rounding::nearest_even, overflow});
        ExpectEncodes(du, *f, {Rounding::nearest_even, overflow}, bits, random,
                      ByVectors(du, bits, 0, [&](auto v) { return cpu::EncodeNearest(du, nearest, v); }), scalar,
                      "EncodeNearest");
        // EncodeStochastic: lanes by index, each with its random bits (both arrays go through ByVectors alike).
        const mf::cpu::ElementCodec stochastic = mf::cpu::element_codec(*f, {Rounding::stochastic, overflow});
        std::vector<std::uint32_t> skip =
            ByVectors(du, bits, 0, [&](auto v) { return skip_lanes(cpu::NeedsExact(du, stochastic, mag(v))); });
        for (std::size_t i = 0; i < skip.size(); ++i) skip[i] |= scalar[i];
        std::vector<std::uint32_t> got(bits.size());
        const std::size_t n = hn::Lanes(du);
        for (std::size_t i = 0; i + n <= bits.size(); i += n) {
          const auto x = hn::LoadU(du, bits.data() + i), r = hn::LoadU(du, random.data() + i);
          hn::StoreU(cpu::EncodeStochastic(du, stochastic, x, r), du, got.data() + i);
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

// ---- the GEMM kernels' per-format decodes, against the scalar codec ----

// DecodeE4m3 gives every code's value (the quiet NaN for 0x7F and 0xFF, as decode does).
struct TestE4m3 {
  template <class T, class D>
  HWY_NOINLINE void operator()(T /*unused*/, D df) {
    if (!Tested(df)) return;
    const hn::RebindToUnsigned<D> du;
    const std::size_t n = hn::Lanes(df);
    std::vector<std::uint32_t> codes(256 + n), bits(codes.size());
    for (std::uint32_t c = 0; c < codes.size(); ++c) codes[c] = c % 256;
    for (std::size_t i = 0; i + n <= codes.size(); i += n) {
      hn::StoreU(hn::BitCast(du, cpu::DecodeE4m3(df, hn::LoadU(du, codes.data() + i))), du, bits.data() + i);
    }
    for (std::uint32_t c = 0; c < 256; ++c) {
      EXPECT_EQ(bits[c], std::bit_cast<std::uint32_t>(decode(e4m3, c))) << "code " << hex(c) << " at " << n << " lanes";
    }
  }
};

// DecodeE4m3Placed times 2^120 is every non-NaN code's value; E4m3IsNan finds exactly the NaN codes.
struct TestE4m3Placed {
  template <class T, class D>
  HWY_NOINLINE void operator()(T /*unused*/, D di) {
    if (!Tested(di)) return;
    const std::size_t n = hn::Lanes(di);
    std::vector<std::int32_t> codes(256 + n), bits(codes.size()), nan(codes.size());
    for (std::size_t c = 0; c < codes.size(); ++c) codes[c] = static_cast<std::int8_t>(c % 256);  // sign-extended
    for (std::size_t i = 0; i + n <= codes.size(); i += n) {
      const auto c = hn::LoadU(di, codes.data() + i);
      hn::StoreU(cpu::DecodeE4m3Placed(di, c), di, bits.data() + i);
      hn::StoreU(hn::IfThenElseZero(cpu::E4m3IsNan(di, c), hn::Set(di, 1)), di, nan.data() + i);
    }
    for (std::uint32_t c = 0; c < 256; ++c) {
      const float want = decode(e4m3, c);
      EXPECT_EQ(nan[c] != 0, std::isnan(want)) << "code " << hex(c) << " at " << n << " lanes";
      if (std::isnan(want)) continue;
      const float got = std::bit_cast<float>(bits[c]) * 0x1p120f;
      EXPECT_EQ(std::bit_cast<std::uint32_t>(got), std::bit_cast<std::uint32_t>(want))
          << "code " << hex(c) << " at " << n << " lanes";
    }
  }
};

#if HWY_TARGET != HWY_SCALAR
// DecodeE2m1Lanes on every byte (two codes, low nibble first) at every width from 2 lanes: decode(e2m1, code).
struct TestE2m1Lanes {
  template <class T, class D>
  HWY_NOINLINE void operator()(T /*unused*/, D df) {
    if constexpr (hn::MaxLanes(D()) >= 2) Check(df);
  }
  template <class D>
  static void Check(D df) {
    const std::size_t n = hn::Lanes(df);
    std::vector<std::uint8_t> bytes(256);
    for (std::size_t b = 0; b < 256; ++b) bytes[b] = static_cast<std::uint8_t>(b);
    std::vector<float> got(512);
    for (std::size_t i = 0; i < 512; i += n) {
      hn::StoreU(cpu::DecodeE2m1Lanes(df, bytes.data() + i / 2), df, got.data() + i);
    }
    for (std::uint32_t i = 0; i < 512; ++i) {
      const std::uint32_t code = (bytes[i / 2] >> (4 * (i % 2))) & 0xF;
      EXPECT_EQ(std::bit_cast<std::uint32_t>(got[i]), std::bit_cast<std::uint32_t>(decode(e2m1, code)))
          << "code " << code << " at " << n << " lanes";
      EXPECT_EQ(std::bit_cast<std::uint32_t>(cpu::kE2m1Values[code]), std::bit_cast<std::uint32_t>(decode(e2m1, code)));
    }
  }
};
#endif

#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3_DL
// DecodeE4m3x64Bf16Pairs gives every code's value as bf16 (the scalar codec's f32 bits, whose low half is zero; a NaN
// for the NaN codes), in the pairs the GEMV's dot product takes: lane i of w0 holds codes i (word 2i + 1) and 16 + i
// (word 2i), of w1 codes 32 + i and 48 + i. Every code at every position: four rotations of 0..255.
HWY_NOINLINE void CheckBf16Pairs() {
  std::vector<std::uint8_t> codes(256 + 64);
  for (std::size_t c = 0; c < codes.size(); ++c) codes[c] = static_cast<std::uint8_t>(c * 7 + 3);
  alignas(64) std::uint16_t words[64];
  for (std::size_t at = 0; at < 256; at += 16) {
    __m512i w0, w1;
    cpu::DecodeE4m3x64Bf16Pairs(codes.data() + at, w0, w1);
    _mm512_store_si512(words, w0);
    _mm512_store_si512(words + 32, w1);
    for (std::uint32_t lane = 0; lane < 32; ++lane) {
      const std::uint32_t chunk = lane / 16, i = lane % 16;
      for (const std::uint32_t second : {0u, 1u}) {  // the product added second: k + 16
        const std::uint32_t code = codes[at + 32 * chunk + 16 * second + i];
        const std::uint16_t got = words[32 * chunk + 2 * i + (second ? 0 : 1)];
        const float value = decode(e4m3, code);
        const auto want = static_cast<std::uint16_t>(std::bit_cast<std::uint32_t>(value) >> 16);
        if (std::isnan(value)) {
          EXPECT_TRUE((got & 0x7FFF) > 0x7F80) << "code " << hex(code) << " gives " << hex(got);
        } else {
          EXPECT_EQ(std::bit_cast<std::uint32_t>(value) & 0xFFFF, 0u) << "code " << hex(code) << ": not a bf16";
          EXPECT_EQ(got, want) << "code " << hex(code) << " at " << at << " lane " << lane;
        }
      }
    }
  }
}

// DecodeE4m3x64 gives every code's value as f32 in code order, bit for bit the scalar codec's (a NaN for the NaN
// codes), and never an f32 subnormal (the GEMV's fmas read them without a microcode assist). Every code at every
// position: codes stepped by 7 from 64 starting points.
HWY_NOINLINE void CheckE4m3x64() {
  std::vector<std::uint8_t> codes(256 + 64);
  for (std::size_t c = 0; c < codes.size(); ++c) codes[c] = static_cast<std::uint8_t>(c * 7 + 3);
  alignas(64) float got[64];
  for (std::size_t at = 0; at < 256; at += 4) {
    hn::Vec<cpu::DF16> w[4];
    cpu::DecodeE4m3x64(codes.data() + at, w[0], w[1], w[2], w[3]);
    for (int v = 0; v < 4; ++v) hn::Store(w[v], cpu::DF16(), got + 16 * v);
    for (std::uint32_t i = 0; i < 64; ++i) {
      const std::uint32_t code = codes[at + i];
      const float want = decode(e4m3, code);
      if (std::isnan(want)) {
        EXPECT_TRUE(std::isnan(got[i])) << "code " << hex(code) << " at " << at << " + " << i;
      } else {
        EXPECT_EQ(std::bit_cast<std::uint32_t>(got[i]), std::bit_cast<std::uint32_t>(want))
            << "code " << hex(code) << " at " << at << " + " << i;
        EXPECT_NE(std::fpclassify(got[i]), FP_SUBNORMAL) << "code " << hex(code);
      }
    }
  }
}
#endif

#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2
// DecodeE4m3Half and DecodeE4m3Halves give every non-NaN code's value times 2^-8 (the NaN codes a finite value, as
// DecodeE4m3Placed), never as an f32 subnormal. Every code at every position: codes stepped by 7 from many starts.
HWY_NOINLINE void CheckE4m3Half() {
  const hn::ScalableTag<float> df;
  const std::size_t n = hn::Lanes(df);
  std::vector<std::uint8_t> codes(256 + 2 * n);
  for (std::size_t c = 0; c < codes.size(); ++c) codes[c] = static_cast<std::uint8_t>(c * 7 + 3);
  std::vector<float> got(3 * n);
  const auto check = [&](std::size_t at, std::size_t count) {
    for (std::size_t i = 0; i < count; ++i) {
      const std::uint32_t code = codes[at + i];
      const float want = decode(e4m3, code);
      EXPECT_NE(std::fpclassify(got[i]), FP_SUBNORMAL) << "code " << hex(code);
      if (std::isnan(want)) {
        EXPECT_TRUE(std::isfinite(got[i])) << "code " << hex(code);
      } else {
        EXPECT_EQ(std::bit_cast<std::uint32_t>(got[i] * 0x1p8f), std::bit_cast<std::uint32_t>(want))
            << "code " << hex(code) << " at " << at + i << ", " << n << " lanes";
      }
    }
  };
  for (std::size_t at = 0; at < 256; ++at) {
    hn::StoreU(cpu::DecodeE4m3Half(df, codes.data() + at), df, got.data());
    check(at, n);
    hn::Vec<decltype(df)> lo, hi;
    cpu::DecodeE4m3Halves(df, codes.data() + at, lo, hi);
    hn::StoreU(lo, df, got.data());
    hn::StoreU(hi, df, got.data() + n);
    check(at, 2 * n);
  }
}
#endif

// The full-vector decodes of AVX-512 (e2m1 by lane permute, plain and in the GEMV's strided order) and of AVX3_DL (e4m3
// by byte table, to f32 and to bf16 pairs), AVX2's e2m1 decode through a scaled table, e4m3 through fp16 (AVX2 and
// AVX-512), and the decodes through halves of AVX2 and AVX-512 (e4m3, e5m2, e3m2, e2m3, e2m1), on every byte of codes.
void TestWideDecodes() {
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2
  CheckE4m3Half();
  {
    std::vector<std::uint8_t> codes(256 + 15);
    for (std::size_t b = 0; b < codes.size(); ++b) codes[b] = static_cast<std::uint8_t>((b * 37 + 11) % 256);
    alignas(32) float got[16];
    for (const Format* f : {&e4m3, &e5m2, &e3m2, &e2m3, &e2m1}) {
      const mf::cpu::ElementCodec k = mf::cpu::element_codec(*f);
      ASSERT_TRUE(cpu::DecodesViaHalf(k)) << f->name;
      for (std::size_t at = 0; at < 256; ++at) {  // every code in every lane position
        std::vector<std::uint8_t> in(16);
        for (std::uint32_t i = 0; i < 16; ++i) in[i] = static_cast<std::uint8_t>(codes[at + i] & k.code_mask);
        __m256 lo, hi;
        cpu::DecodeX16ViaHalf(k, in.data(), lo, hi);
        _mm256_store_ps(got, lo);
        _mm256_store_ps(got + 8, hi);
        for (std::uint32_t i = 0; i < 16; ++i) {
          EXPECT_EQ(std::bit_cast<std::uint32_t>(got[i]), std::bit_cast<std::uint32_t>(decode(*f, in[i])))
              << f->name << " code " << hex(in[i]) << " in lane " << i;
        }
      }
    }
    for (const Format* f : {&ue8m0, &bf16, &f16}) EXPECT_FALSE(cpu::DecodesViaHalf(mf::cpu::element_codec(*f)));
  }
#endif
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2 && HWY_TARGET > HWY_AVX3
  {
    std::vector<std::uint8_t> bytes(256 + 3);
    for (std::size_t b = 0; b < bytes.size(); ++b) bytes[b] = static_cast<std::uint8_t>((b * 37 + 11) % 256);
    // A plain scale, one whose products are f32 subnormals, one that overflows, and a NaN scale (ue8m0 0xFF).
    for (const float given : {0.25f, 0x1p-127f, 0x1p127f, std::numeric_limits<float>::quiet_NaN()}) {
      volatile float opaque = given;  // the products made at run time, as the GEMV makes its tables
      const float scale = opaque;
      alignas(32) float table[8], got[8];
      cpu::E2m1x8Table(scale, table);
      for (std::size_t at = 0; at < 256; ++at) {
        hn::StoreU(cpu::DecodeE2m1x8Table(bytes.data() + at, table), hn::Full256<float>(), got);
        for (std::uint32_t i = 0; i < 8; ++i) {
          const std::uint32_t code = (bytes[at + i / 2] >> (4 * (i % 2))) & 0xF;
          const float want = decode(e2m1, code) * scale;  // a NaN's sign is the compiler's (as in the GEMM tests)
          EXPECT_TRUE(std::isnan(want) ? std::isnan(got[i])
                                       : std::bit_cast<std::uint32_t>(got[i]) == std::bit_cast<std::uint32_t>(want))
              << "lane " << i << " of byte " << at << ", scale " << scale << ": " << got[i] << " for " << want;
        }
      }
    }
  }
#endif
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
  const cpu::DF16 df;
  std::vector<std::uint8_t> bytes(256);
  for (std::size_t b = 0; b < 256; ++b) bytes[b] = static_cast<std::uint8_t>((b * 37 + 11) % 256);  // every byte
  alignas(64) float table[16], got[32];
  for (int j = 0; j < 16; ++j) table[j] = cpu::kE2m1Values[j] * 0.25f;
  for (std::size_t at = 0; at < 256; at += 16) {
    hn::Vec<cpu::DF16> w0, w1;
    cpu::DecodeE2m1x32Strided(bytes.data() + at, table, w0, w1);
    hn::Store(w0, df, got);
    hn::Store(w1, df, got + 16);
    for (std::uint32_t i = 0; i < 32; ++i) {
      const std::uint32_t half = i / 16, q = (i % 16) / 2, weight = 16 * half + q + (i % 2 ? 8 : 0);
      const std::uint32_t code = (bytes[at + weight / 2] >> (4 * (weight % 2))) & 0xF;
      EXPECT_EQ(std::bit_cast<std::uint32_t>(got[i]), std::bit_cast<std::uint32_t>(decode(e2m1, code) * 0.25f))
          << "strided lane " << i << " of byte " << at;
    }
    for (std::size_t h = 0; h < 16; h += 8) {
      hn::Store(cpu::DecodeE2m1x16(bytes.data() + at + h), df, got);
      for (std::uint32_t i = 0; i < 16; ++i) {
        const std::uint32_t code = (bytes[at + h + i / 2] >> (4 * (i % 2))) & 0xF;
        EXPECT_EQ(std::bit_cast<std::uint32_t>(got[i]), std::bit_cast<std::uint32_t>(decode(e2m1, code)));
      }
    }
  }
#endif
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3_DL
  CheckBf16Pairs();  // AVX512-VBMI, which AVX3_DL has
  CheckE4m3x64();
#endif
}

// The block quantizers' saturating encoders on full f32 vectors, against the scalar codec with Overflow::saturate:
// EncodeSaturating on every target, and on AVX-512 EncodeSaturatingByTable for the formats its table fits. Inputs:
// encode_inputs' finite values, and 4096 random bit patterns in every f32 binade from 2^-149 to past the format's
// max (quotients of finite values are any finite f32), both signs.
void TestSaturatingEncodes() {
  using DF = hn::ScalableTag<float>;
  const DF df;
  const hn::RebindToUnsigned<DF> du;
  const std::size_t n = hn::Lanes(df);
  // The block quantizers' element formats: src/blocks/scheme.cc takes these alone.
  for (const Format* f : {&e4m3, &e5m2, &e3m2, &e2m3, &e2m1}) {
    const mf::cpu::ElementCodec k = mf::cpu::element_codec(*f);
    std::vector<float> x;
    for (const float v : encode_inputs(*f, 7)) {
      if (std::isfinite(v)) x.push_back(v);
    }
    std::mt19937 rng(11);
    const std::uint32_t top = (std::bit_cast<std::uint32_t>(f->max_finite()) >> 23) + 2;
    for (std::uint32_t field = 0; field <= top; ++field) {
      for (int i = 0; i < 4096; ++i) {
        x.push_back(std::bit_cast<float>((static_cast<std::uint32_t>(rng()) & 0x807FFFFFu) | field << 23));
      }
    }
    x.resize((x.size() + n - 1) / n * n, 0.0f);
    const cpu::SaturatingGrid<DF> grid(k);
    EncodeOptions saturate;
    saturate.overflow = Overflow::saturate;
    const auto check = [&](const char* step, auto encode) {
      std::vector<std::uint32_t> got(n);
      int bad = 0;
      for (std::size_t i = 0; i < x.size() && bad < 3; i += n) {
        hn::StoreU(encode(hn::LoadU(df, x.data() + i)), du, got.data());
        for (std::size_t j = 0; j < n && bad < 3; ++j) {
          const std::uint32_t want = mf::encode(*f, x[i + j], saturate);
          if (got[j] != want) {
            ++bad;
            ADD_FAILURE() << step << " " << f->name << " of " << x[i + j] << " ("
                          << hex(std::bit_cast<std::uint32_t>(x[i + j])) << "): " << hex(got[j]) << ", want "
                          << hex(want);
          }
        }
      }
    };
    check("EncodeSaturating", [&](auto y) { return cpu::EncodeSaturating(df, grid, y); });
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
    const bool fits = f == &e4m3 || f == &e3m2 || f == &e2m3 || f == &e2m1;
    EXPECT_EQ(cpu::SaturatingTable<DF>::Fits(k), fits) << f->name;
    if (fits) {
      const cpu::SaturatingTable<DF> table(k);
      check("EncodeSaturatingByTable", [&](auto y) { return cpu::EncodeSaturatingByTable(table, y); });
    }
#endif
  }
}

void TestAllDecode() { hn::ForPartialVectors<TestDecode>()(std::uint32_t()); }
void TestAllEncode() { hn::ForPartialVectors<TestEncode>()(std::uint32_t()); }
void TestGemmDecodes() {
  hn::ForPartialVectors<TestE4m3>()(float());
  hn::ForPartialVectors<TestE4m3Placed>()(std::int32_t());
#if HWY_TARGET != HWY_SCALAR
  hn::ForPartialVectors<TestE2m1Lanes>()(float());
#endif
  TestWideDecodes();
}

}  // namespace HWY_NAMESPACE
}  // namespace mf::test
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace mf::test {

class ElementCodecTarget : public hwy::TestWithParamTarget {};
HWY_TARGET_INSTANTIATE_TEST_SUITE_P(ElementCodecTarget);
HWY_EXPORT_AND_TEST_P(ElementCodecTarget, TestAllDecode);
HWY_EXPORT_AND_TEST_P(ElementCodecTarget, TestAllEncode);
HWY_EXPORT_AND_TEST_P(ElementCodecTarget, TestGemmDecodes);
HWY_EXPORT_AND_TEST_P(ElementCodecTarget, TestSaturatingEncodes);

}  // namespace mf::test
#endif  // HWY_ONCE
