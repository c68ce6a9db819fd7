// KV-cache entries: entries worked by hand, every format against the scalar block quantizer (mf::ref) token by
// token, pages laid out as documented, and one test per error.
#include "minifloat/kv.h"

#include <gtest/gtest.h>

#include <algorithm>
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

constexpr KvFormat kAll[] = {KvFormat::fp4_e4m3_16, KvFormat::mxfp8, KvFormat::v4_mixed};

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
      // fp4/mxfp8: whole entries back to back; v4-mixed: 576-byte data rows, then the 8-byte scale rows.
      const std::uint8_t* data = base + (L.scale_footer ? i * 576 : i * L.entry_bytes());
      const std::uint8_t* scale = L.scale_footer ? base + 4 * 576 + i * 8 : data + L.data_bytes;
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
    EXPECT_NE(what(e).find("fp4-e4m3-16, mxfp8, v4-mixed"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace mf
