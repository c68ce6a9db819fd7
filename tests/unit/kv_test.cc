// KV-cache entries: entries worked by hand, every format against the scalar block quantizer (mf::ref) token by
// token, pages laid out as documented, and one test per error.
#include "minifloat/kv.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "minifloat/codec.h"
#include "minifloat/quantize.h"

namespace mf {
namespace {

constexpr KvFormat kAll[] = {KvFormat::fp4_e4m3_16, KvFormat::mxfp8,      KvFormat::v4_mixed,
                             KvFormat::v4_nvfp4,    KvFormat::mxfp6_e3m2, KvFormat::mxfp6_e2m3};

std::vector<float> random_tokens(int tokens, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> d(0, 1);
  std::vector<float> v(static_cast<std::size_t>(tokens) * kKvValues);
  for (int t = 0; t < tokens; ++t) {
    const float s = std::ldexp(1.0f, t % 9 - 4);  // magnitudes from 2^-4 to 2^4, token by token
    for (int i = 0; i < kKvValues; ++i) v[static_cast<std::size_t>(t) * kKvValues + i] = s * d(rng);
  }
  return v;
}

std::string what(const std::exception& e) { return e.what(); }

TEST(KvLayout, ByteCounts) {
  // docs/spec.md#kv: 288 and 528 bytes; V4's mixed entry 448 + 128 + 7 + 1.
  EXPECT_EQ(kv_layout(KvFormat::fp4_e4m3_16).entry_bytes(), 288);
  EXPECT_EQ(kv_layout(KvFormat::mxfp8).entry_bytes(), 528);
  EXPECT_EQ(kv_layout(KvFormat::v4_mixed).entry_bytes(), 584);
  EXPECT_EQ(kv_page_bytes(KvFormat::mxfp8, 64), 64 * 528);
  EXPECT_EQ(kv_page_bytes(KvFormat::v4_mixed, 64), 37440);  // FlashMLA: ceil(64 * 584 / 576) * 576 = 65 * 576
  EXPECT_EQ(kv_page_bytes(KvFormat::v4_mixed, 4), 2880);    // 2336 -> 5 * 576
  // FlashInfer's DeepSeek-V4 NVFP4 cache: 224 + 128 data bytes and 32 scale bytes per token, pages unpadded.
  EXPECT_EQ(kv_layout(KvFormat::v4_nvfp4).entry_bytes(), 384);
  EXPECT_EQ(kv_layout(KvFormat::v4_nvfp4).data_bytes, 352);
  EXPECT_EQ(kv_page_bytes(KvFormat::v4_nvfp4, 64), 64 * 384);
  // MXFP6: 512 six-bit codes in 384 bytes + 16 ue8m0 scales.
  EXPECT_EQ(kv_layout(KvFormat::mxfp6_e3m2).entry_bytes(), 400);
  EXPECT_EQ(kv_layout(KvFormat::mxfp6_e2m3).entry_bytes(), 400);
  EXPECT_EQ(kv_format_named("v4-nvfp4"), KvFormat::v4_nvfp4);
  EXPECT_EQ(to_string(KvFormat::mxfp6_e2m3), "mxfp6-e2m3");
  EXPECT_EQ(kv_format_named("v4-mixed"), KvFormat::v4_mixed);
  EXPECT_EQ(to_string(KvFormat::fp4_e4m3_16), "fp4-e4m3-16");
}

// Even blocks of 16: 1, 0, 1, 0, ... (amax 1: S = ue4m3(RNE(1/6)) = 1.375 * 2^-3 = 0x23; 1 / 0.171875 = 5.8 -> 6,
// code 7; element 2i in the low nibble: byte 0x07). Odd blocks: all -3 (S = 0.5 = 0x30; -6 = code 0xF: byte 0xFF).
TEST(KvEntry, Fp4ByHand) {
  std::vector<float> x(kKvValues);
  for (int i = 0; i < kKvValues; ++i) x[i] = (i / 16) % 2 ? -3.0f : (i % 2 ? 0.0f : 1.0f);
  const std::vector<std::uint8_t> e = kv_encode(KvFormat::fp4_e4m3_16, x);
  ASSERT_EQ(e.size(), 288u);
  for (int b = 0; b < 32; ++b) {
    for (int j = 0; j < 8; ++j) EXPECT_EQ(e[8 * b + j], b % 2 ? 0xFF : 0x07) << "block " << b;
    EXPECT_EQ(e[256 + b], b % 2 ? 0x30 : 0x23) << "scale " << b;
  }
  const std::vector<float> back = kv_decode(KvFormat::fp4_e4m3_16, e);
  EXPECT_EQ(back[0], 1.03125f);  // 6 * 0.171875
  EXPECT_EQ(back[1], 0.0f);
  EXPECT_EQ(back[16], -3.0f);
}

// Block b of 32 holds +-2^(b-4) (odd blocks negative): rceil S = 2^ceil(log2(2^(b-4) / 448)) = 2^(b-12), ue8m0
// code 115 + b; every element is 2^8 = e4m3 0x78 (0xF8 negative).
TEST(KvEntry, Mxfp8ByHand) {
  std::vector<float> x(kKvValues);
  for (int i = 0; i < kKvValues; ++i) x[i] = std::ldexp((i / 32) % 2 ? -1.0f : 1.0f, i / 32 - 4);
  const std::vector<std::uint8_t> e = kv_encode(KvFormat::mxfp8, x);
  ASSERT_EQ(e.size(), 528u);
  for (int i = 0; i < 512; ++i) ASSERT_EQ(e[i], (i / 32) % 2 ? 0xF8 : 0x78) << i;
  for (int b = 0; b < 16; ++b) EXPECT_EQ(e[512 + b], 115 + b) << "scale " << b;
  EXPECT_EQ(kv_decode(KvFormat::mxfp8, e), x);  // powers of two: exact
}

// Non-RoPE block b of 64 holds +-2^b: S = 2^(b-8), code 119 + b, elements 0x78 / 0xF8. RoPE dim j holds 1 + j/128,
// bf16 0x3F80 + j, stored little-endian. Then 7 scales and a zero byte.
TEST(KvEntry, V4MixedByHand) {
  std::vector<float> x(kKvValues);
  for (int i = 0; i < 448; ++i) x[i] = std::ldexp((i / 64) % 2 ? -1.0f : 1.0f, i / 64);
  for (int j = 0; j < 64; ++j) x[448 + j] = 1.0f + static_cast<float>(j) / 128;
  const std::vector<std::uint8_t> e = kv_encode(KvFormat::v4_mixed, x);
  ASSERT_EQ(e.size(), 584u);
  for (int i = 0; i < 448; ++i) ASSERT_EQ(e[i], (i / 64) % 2 ? 0xF8 : 0x78) << i;
  for (int j = 0; j < 64; ++j) {
    EXPECT_EQ(e[448 + 2 * j], 0x80 + j) << "rope " << j;
    EXPECT_EQ(e[449 + 2 * j], 0x3F) << "rope " << j;
  }
  for (int b = 0; b < 7; ++b) EXPECT_EQ(e[576 + b], 119 + b) << "scale " << b;
  EXPECT_EQ(e[583], 0);
  EXPECT_EQ(kv_decode(KvFormat::v4_mixed, e), x);
}

// Non-RoPE block b of 16 (28 of them) as in Fp4ByHand: even blocks 1, 0, 1, 0, ... (scale 0x23, bytes 0x07), odd
// blocks all -3 (scale 0x30, bytes 0xFF). RoPE dim j holds 1 + j/128 = bf16 0x3F80 + j, little-endian, at byte
// 224 + 2j. Then the 28 scales at 352..379 and 4 zero bytes.
TEST(KvEntry, V4Nvfp4ByHand) {
  std::vector<float> x(kKvValues);
  for (int i = 0; i < 448; ++i) x[i] = (i / 16) % 2 ? -3.0f : (i % 2 ? 0.0f : 1.0f);
  for (int j = 0; j < 64; ++j) x[448 + j] = 1.0f + static_cast<float>(j) / 128;
  const std::vector<std::uint8_t> e = kv_encode(KvFormat::v4_nvfp4, x);
  ASSERT_EQ(e.size(), 384u);
  for (int b = 0; b < 28; ++b) {
    for (int j = 0; j < 8; ++j) EXPECT_EQ(e[8 * b + j], b % 2 ? 0xFF : 0x07) << "block " << b;
    EXPECT_EQ(e[352 + b], b % 2 ? 0x30 : 0x23) << "scale " << b;
  }
  for (int j = 0; j < 64; ++j) {
    EXPECT_EQ(e[224 + 2 * j], 0x80 + j) << "rope " << j;
    EXPECT_EQ(e[225 + 2 * j], 0x3F) << "rope " << j;
  }
  for (int k = 380; k < 384; ++k) EXPECT_EQ(e[k], 0) << k;
  const std::vector<float> back = kv_decode(KvFormat::v4_nvfp4, e);
  EXPECT_EQ(back[0], 1.03125f);  // 6 * 0.171875
  EXPECT_EQ(back[16], -3.0f);
  EXPECT_EQ(back[448 + 5], x[448 + 5]);
}

// Every group of 4 values is 1, -0.5, 0.25, 0 (amax 1 in every block of 32), packed four per 3 bytes: value i at
// bits 6i..6i+5 of the little-endian 24-bit group (docs/spec.md#packing).
//   e3m2 (bias 3, emax 4): floor S = 2^(0 - 4), ue8m0 123; 16 = 0b0'111'00 = 0x1C, -8 = 0b1'110'00 = 0x38,
//     4 = 0b0'101'00 = 0x14, 0: group 0x1C | 0x38 << 6 | 0x14 << 12 = 0x014E1C -> bytes 1C 4E 01.
//   e2m3 (bias 1, emax 2): S = 2^-2, ue8m0 125; 4 = 0b0'11'000 = 0x18, -2 = 0b1'10'000 = 0x30, 1 = 0b0'01'000 =
//     0x08, 0: group 0x18 | 0x30 << 6 | 0x08 << 12 = 0x008C18 -> bytes 18 8C 00.
TEST(KvEntry, Mxfp6ByHand) {
  std::vector<float> x(kKvValues);
  for (int i = 0; i < kKvValues; ++i) x[i] = std::array<float, 4>{1.0f, -0.5f, 0.25f, 0.0f}[i % 4];
  const struct {
    KvFormat f;
    std::array<std::uint8_t, 3> group;
    std::uint8_t scale;
  } cases[] = {{KvFormat::mxfp6_e3m2, {0x1C, 0x4E, 0x01}, 123}, {KvFormat::mxfp6_e2m3, {0x18, 0x8C, 0x00}, 125}};
  for (const auto& c : cases) {
    const std::vector<std::uint8_t> e = kv_encode(c.f, x);
    ASSERT_EQ(e.size(), 400u);
    for (int i = 0; i < 384; ++i) ASSERT_EQ(e[i], c.group[i % 3]) << to_string(c.f) << " byte " << i;
    for (int b = 0; b < 16; ++b) EXPECT_EQ(e[384 + b], c.scale) << to_string(c.f) << " scale " << b;
    EXPECT_EQ(kv_decode(c.f, e), x) << to_string(c.f);  // exact on these values
  }
}

// Zero tokens: the deepseek profile clamps amax to 1e-4, so e4m3 blocks get 2^ceil(log2(1e-4 / 448)) = 2^-22 (code
// 0x69); FP4 blocks get a zero ue4m3 scale. Every value decodes to +0.
TEST(KvEntry, ZeroToken) {
  const std::vector<float> x(kKvValues, 0.0f);
  const std::vector<std::uint8_t> fp4 = kv_encode(KvFormat::fp4_e4m3_16, x);
  EXPECT_EQ(fp4, std::vector<std::uint8_t>(288, 0));
  const std::vector<std::uint8_t> fp8 = kv_encode(KvFormat::mxfp8, x);
  for (int b = 0; b < 16; ++b) EXPECT_EQ(fp8[512 + b], 0x69);
  const std::vector<std::uint8_t> v4 = kv_encode(KvFormat::v4_mixed, x);
  for (int b = 0; b < 7; ++b) EXPECT_EQ(v4[576 + b], 0x69);
  for (const KvFormat f : kAll) {
    for (const float v : kv_decode(f, kv_encode(f, x))) ASSERT_EQ(std::bit_cast<std::uint32_t>(v), 0u);
  }
}

// Each token's entry against the scalar reference quantizer run on that token alone, with the layout assembled here
// from the documented description; and decoding against the reference dequantizer.
TEST(KvEntry, MatchesScalarReferencePerToken) {
  const int tokens = 20;
  const std::vector<float> x = random_tokens(tokens, 42);
  for (const KvFormat f : kAll) {
    const KvLayout L = kv_layout(f);
    const std::vector<std::uint8_t> e = kv_encode(f, x);
    ASSERT_EQ(e.size(), static_cast<std::size_t>(tokens * L.entry_bytes()));
    const std::vector<float> back = kv_decode(f, e);
    for (int t = 0; t < tokens; ++t) {
      const float* xt = x.data() + t * kKvValues;
      const std::vector<std::int64_t> shape{1, L.quantized_values};
      const QuantizedTensor q = ref::quantize(xt, shape, kv_scheme(f));
      std::vector<std::uint8_t> want = q.codes;
      for (int i = L.quantized_values; i < kKvValues; ++i) {
        const std::uint32_t b = encode(bf16, xt[i]);
        want.push_back(static_cast<std::uint8_t>(b));
        want.push_back(static_cast<std::uint8_t>(b >> 8));
      }
      ASSERT_EQ(static_cast<int>(want.size()), L.data_bytes);
      want.insert(want.end(), q.scales.begin(), q.scales.end());
      want.resize(static_cast<std::size_t>(L.entry_bytes()), 0);
      const std::vector<std::uint8_t> got(e.begin() + t * L.entry_bytes(), e.begin() + (t + 1) * L.entry_bytes());
      ASSERT_EQ(got, want) << to_string(f) << " token " << t;

      std::vector<float> deq(static_cast<std::size_t>(L.quantized_values));
      ref::dequantize(q, deq.data());
      for (int i = 0; i < kKvValues; ++i) {
        const float w = i < L.quantized_values ? deq[i] : decode(bf16, encode(bf16, xt[i]));
        ASSERT_EQ(back[t * kKvValues + i], w) << to_string(f) << " token " << t << " value " << i;
      }
    }
  }
}

// Slots written out of order into pages of 4: each slot's bytes are the token's entry at the documented place.
TEST(KvPages, LayoutMatchesEntries) {
  const std::vector<float> x = random_tokens(5, 9);
  const std::vector<std::int64_t> slots{6, 0, 11, 3, 4};
  for (const KvFormat f : kAll) {
    const KvLayout L = kv_layout(f);
    KvCache cache(f, 4, 3);
    ASSERT_EQ(cache.slots(), 12);
    cache.write(x, slots);
    const std::vector<std::uint8_t> entries = kv_encode(f, x);
    const std::int64_t stride = kv_page_bytes(f, 4);
    for (std::size_t t = 0; t < slots.size(); ++t) {
      const std::int64_t page = slots[t] / 4, i = slots[t] % 4;
      const std::uint8_t* e = entries.data() + t * L.entry_bytes();
      const std::uint8_t* base = cache.bytes().data() + page * stride;
      // fp4/mxfp8/mxfp6: whole entries back to back; v4-mixed: 576-byte data rows, then the 8-byte scale rows;
      // v4-nvfp4: 352-byte data rows, then the 32-byte scale rows.
      const int row = f == KvFormat::v4_mixed ? 576 : 352, scale_row = f == KvFormat::v4_mixed ? 8 : 32;
      const std::uint8_t* data = base + (L.scale_footer ? i * row : i * L.entry_bytes());
      const std::uint8_t* scale = L.scale_footer ? base + 4 * row + i * scale_row : data + L.data_bytes;
      EXPECT_TRUE(std::equal(e, e + L.data_bytes, data)) << to_string(f) << " slot " << slots[t];
      EXPECT_TRUE(std::equal(e + L.data_bytes, e + L.entry_bytes(), scale)) << to_string(f) << " slot " << slots[t];
    }
    EXPECT_EQ(cache.page(1).size(), static_cast<std::size_t>(stride));
    // Reading back gives what one-entry decoding gives; a never-written slot reads as zeros.
    const std::vector<float> back = cache.read(slots), want = kv_decode(f, entries);
    EXPECT_EQ(back, want) << to_string(f);
    for (const float v : cache.read(std::vector<std::int64_t>{1})) ASSERT_EQ(v, 0.0f);
  }
}

TEST(KvPages, CallerBufferAndRewrite) {
  // A caller's buffer of two v4-mixed pages of 64 (FlashMLA's page size); writing a slot twice keeps the last token.
  std::vector<std::uint8_t> pages(2 * 37440, 0xAA);
  const std::vector<float> x = random_tokens(2, 5);
  write_kv_pages(KvFormat::v4_mixed, 64, pages, x, std::vector<std::int64_t>{70, 70});
  std::vector<float> out(kKvValues);
  read_kv_pages(KvFormat::v4_mixed, 64, pages, std::vector<std::int64_t>{70}, out);
  const std::vector<float> second(x.begin() + kKvValues, x.end());
  EXPECT_EQ(out, kv_decode(KvFormat::v4_mixed, kv_encode(KvFormat::v4_mixed, second)));
  EXPECT_EQ(pages[0], 0xAA);  // other slots untouched
}

TEST(KvReport, BytesAndError) {
  std::vector<float> ones(2 * kKvValues, 1.0f);
  const KvReport fp8 = kv_report(KvFormat::mxfp8, ones);
  EXPECT_EQ(fp8.bytes_per_token, 528);
  EXPECT_EQ(fp8.tokens, 2);
  EXPECT_DOUBLE_EQ(fp8.compression, 1024.0 / 528);
  EXPECT_EQ(fp8.error.mse, 0.0);
  EXPECT_TRUE(std::isinf(fp8.error.sqnr_db));
  const KvReport fp4 = kv_report(KvFormat::fp4_e4m3_16, ones);
  EXPECT_EQ(fp4.bytes_per_token, 288);
  EXPECT_DOUBLE_EQ(fp4.error.mean_rel_error, 0.03125);  // every 1 comes back as 1.03125
  EXPECT_DOUBLE_EQ(fp4.error.mse, 0.03125 * 0.03125);
  // Random data: FP8 is far more accurate than FP4.
  const std::vector<float> x = random_tokens(16, 1);
  const double fp4_sqnr = kv_report(KvFormat::fp4_e4m3_16, x).error.sqnr_db;
  const double fp8_sqnr = kv_report(KvFormat::mxfp8, x).error.sqnr_db;
  EXPECT_GT(fp8_sqnr, fp4_sqnr + 10);
}

TEST(KvErrors, ValuesNotWholeTokens) {
  const std::vector<float> x(kKvValues + 1, 1.0f);
  try {
    kv_encode(KvFormat::mxfp8, x);
    FAIL();
  } catch (const KvError& e) {
    EXPECT_NE(what(e).find("513 floats"), std::string::npos) << e.what();
  }
  EXPECT_THROW(kv_report(KvFormat::mxfp8, x), KvError);
}

TEST(KvErrors, EntriesNotWhole) {
  const std::vector<std::uint8_t> e(600);
  try {
    kv_decode(KvFormat::v4_mixed, e);
    FAIL();
  } catch (const KvError& err) {
    EXPECT_NE(what(err).find("600 bytes"), std::string::npos) << err.what();
    EXPECT_NE(what(err).find("584"), std::string::npos) << err.what();
  }
}

TEST(KvErrors, ValuesDoNotFitSlots) {
  KvCache cache(KvFormat::mxfp8, 4, 1);
  const std::vector<float> x(2 * kKvValues, 1.0f);
  try {
    cache.write(x, std::vector<std::int64_t>{0, 1, 2});
    FAIL();
  } catch (const KvError& e) {
    EXPECT_NE(what(e).find("1024 floats for 3 slots"), std::string::npos) << e.what();
    EXPECT_NE(what(e).find("[3, 512]"), std::string::npos) << e.what();
  }
  std::vector<float> out(kKvValues);
  EXPECT_THROW(read_kv_pages(KvFormat::mxfp8, 4, cache.bytes(), std::vector<std::int64_t>{0, 1}, out), KvError);
}

TEST(KvErrors, SlotOutsideBuffer) {
  KvCache cache(KvFormat::fp4_e4m3_16, 4, 2);
  const std::vector<float> x(kKvValues, 1.0f);
  for (const std::int64_t s : {std::int64_t{8}, std::int64_t{-1}}) {
    try {
      cache.write(x, std::vector<std::int64_t>{s});
      FAIL();
    } catch (const KvError& e) {
      EXPECT_NE(what(e).find("slot " + std::to_string(s)), std::string::npos) << e.what();
      EXPECT_NE(what(e).find("8 slots"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(cache.read(std::vector<std::int64_t>{8}), KvError);
  EXPECT_THROW(cache.page(2), KvError);
}

TEST(KvErrors, BufferNotWholePages) {
  std::vector<std::uint8_t> pages(37440 + 1);
  const std::vector<float> x(kKvValues, 1.0f);
  try {
    write_kv_pages(KvFormat::v4_mixed, 64, pages, x, std::vector<std::int64_t>{0});
    FAIL();
  } catch (const KvError& e) {
    EXPECT_NE(what(e).find("37441 bytes"), std::string::npos) << e.what();
    EXPECT_NE(what(e).find("37440"), std::string::npos) << e.what();
  }
}

TEST(KvErrors, BadPageSizeAndNames) {
  EXPECT_THROW(KvCache(KvFormat::mxfp8, 0, 1), KvError);
  EXPECT_THROW(KvCache(KvFormat::mxfp8, 4, -1), KvError);
  EXPECT_THROW(kv_page_bytes(KvFormat::mxfp8, -3), KvError);
  try {
    kv_format_named("nvfp4");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(what(e).find("'nvfp4'"), std::string::npos) << e.what();
    EXPECT_NE(what(e).find("fp4-e4m3-16, mxfp8, v4-mixed, v4-nvfp4, mxfp6-e3m2, mxfp6-e2m3"), std::string::npos)
        << e.what();
  }
}

// A NaN in a quantized block gives that block the scale format's NaN code (ue4m3 0x7F, ue8m0 0xFF) and it decodes to
// NaN; the token's other blocks are unaffected. A NaN RoPE dim stays a bf16 NaN.
TEST(KvNonFinite, NanBlock) {
  const struct {
    KvFormat f;
    int block;         // values per scale
    std::uint8_t nan;  // the scale format's NaN code
  } cases[] = {{KvFormat::v4_nvfp4, 16, 0x7F}, {KvFormat::mxfp6_e3m2, 32, 0xFF}, {KvFormat::mxfp6_e2m3, 32, 0xFF}};
  for (const auto& c : cases) {
    std::vector<float> x(kKvValues, 1.0f);
    x[c.block + 3] = NAN;  // in block 1
    const KvLayout L = kv_layout(c.f);
    const std::vector<std::uint8_t> e = kv_encode(c.f, x);
    EXPECT_NE(e[L.data_bytes + 0], c.nan) << to_string(c.f);
    EXPECT_EQ(e[L.data_bytes + 1], c.nan) << to_string(c.f);
    const std::vector<float> back = kv_decode(c.f, e);
    for (int i = 0; i < kKvValues; ++i) {
      if (i >= c.block && i < 2 * c.block) {
        EXPECT_TRUE(std::isnan(back[i])) << to_string(c.f) << " " << i;
      } else if (i < L.quantized_values) {
        EXPECT_FALSE(std::isnan(back[i])) << to_string(c.f) << " " << i;
      }
    }
  }
  std::vector<float> x(kKvValues, 1.0f);
  x[500] = NAN;
  EXPECT_TRUE(std::isnan(kv_decode(KvFormat::v4_nvfp4, kv_encode(KvFormat::v4_nvfp4, x))[500]));
}

// Scales out of range saturate (no tensor scale): a v4-nvfp4 block with amax above 6 * 448 takes ue4m3 0x7E (448)
// and its values clip to +-2688; a block of values below the smallest ue4m3 scale (2^-9 * 6 / 2, rounding to 0)
// becomes signed zeros with scale 0. MXFP6's ue8m0 holds 2^-127 .. 2^127, so only subnormal-f32 blocks reach its
// floor (scale 0x00, values flushed to zero).
TEST(KvNonFinite, ScalesOutOfRange) {
  std::vector<float> x(kKvValues, 0.0f);
  for (int i = 0; i < 16; ++i) x[i] = i % 2 ? -1e6f : 1e6f;
  for (int i = 16; i < 32; ++i) x[i] = -1e-5f;
  const std::vector<std::uint8_t> e = kv_encode(KvFormat::v4_nvfp4, x);
  EXPECT_EQ(e[352], 0x7E);
  EXPECT_EQ(e[353], 0x00);
  const std::vector<float> back = kv_decode(KvFormat::v4_nvfp4, e);
  EXPECT_EQ(back[0], 2688.0f);
  EXPECT_EQ(back[1], -2688.0f);
  EXPECT_EQ(std::bit_cast<std::uint32_t>(back[16]), 0x80000000u);  // -0
  std::vector<float> tiny(kKvValues, 1e-42f);
  const std::vector<std::uint8_t> m = kv_encode(KvFormat::mxfp6_e3m2, tiny);
  EXPECT_EQ(m[384], 0x00);
  for (const float v : kv_decode(KvFormat::mxfp6_e3m2, m)) ASSERT_EQ(v, 0.0f);
}

}  // namespace
}  // namespace mf
