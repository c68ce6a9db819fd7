// vLLM's NVFP4 KV cache entries: the entry of docs/kv.md#vllm-nvfp4 built byte by byte, both formats against the
// scalar block quantizer (mf::ref) with the caller's tensor scale, vLLM's [K_data | K_scale | V_data | V_scale] page
// at hand-computed offsets (V scales swizzled or linear), and one test per error.
#include "minifloat/kv_vllm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "minifloat/quantize.h"

namespace mf {
namespace {

std::string what(const std::exception& e) { return e.what(); }

// docs/kv.md's example: head_dim 64, scale 0.5. Block 0 = 1, 0, 1, 0, ...; block 1 = -3; block 2 = 0; block 3 =
// 2688 at dim 48, else 0.
std::vector<float> example() {
  std::vector<float> x(64, 0.0f);
  for (int i = 0; i < 16; ++i) x[i] = i % 2 ? 0.0f : 1.0f;
  for (int i = 16; i < 32; ++i) x[i] = -3.0f;
  x[48] = 2688.0f;
  return x;
}

TEST(VllmKv, Names) {
  EXPECT_EQ(vllm_kv_format_named("vllm-nvfp4"), VllmKvFormat::nvfp4);
  EXPECT_EQ(vllm_kv_format_named("vllm-nvfp4-4over6"), VllmKvFormat::nvfp4_4over6);
  EXPECT_EQ(to_string(VllmKvFormat::nvfp4_4over6), "vllm-nvfp4-4over6");
  EXPECT_EQ(vllm_kv_scheme(VllmKvFormat::nvfp4).name, "nvfp4");
  EXPECT_EQ(vllm_kv_scheme(VllmKvFormat::nvfp4_4over6).name, "nvfp4-4over6");
  try {
    vllm_kv_format_named("nvfp4_4over6");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(what(e).find("known: vllm-nvfp4, vllm-nvfp4-4over6"), std::string::npos) << what(e);
  }
  // vLLM's full_dim = head_size / 2 + head_size / 16 (nvfp4_kv_cache_full_dim).
  EXPECT_EQ(vllm_kv_entry_bytes(64), 36);
  EXPECT_EQ(vllm_kv_entry_bytes(128), 72);
  EXPECT_EQ(vllm_kv_entry_bytes(256), 144);
  // 2 sides x heads x block_size x full_dim: 8 heads of 128, block 16 (vLLM PR 37192's 18432 bytes per page).
  EXPECT_EQ(vllm_kv_page_bytes({128, 8, 16, true}), 18432);
}

// docs/kv.md: block 0's S = ue4m3(RNE(1 / 6 / 0.5 = 0.333)) = 1.375 * 2^-2 = 0x2B, 1 / (0.34375 * 0.5) = 5.8 -> 6 =
// code 0x7; block 1: S = ue4m3(3 / 6 / 0.5) = 1.0 = 0x38, -3 / 0.5 = -6 = 0xF; block 2: S = 0x00, codes 0; block 3:
// 2688 / 6 / 0.5 = 896 saturates to 448 = 0x7E, 2688 / 224 = 12 saturates to 6.
TEST(VllmKv, Nvfp4EntryByHand) {
  std::vector<std::uint8_t> want(36, 0);
  for (int i = 0; i < 8; ++i) want[i] = 0x07;
  for (int i = 8; i < 16; ++i) want[i] = 0xFF;
  want[24] = 0x07;
  want[32] = 0x2B;
  want[33] = 0x38;
  want[34] = 0x00;
  want[35] = 0x7E;
  const std::vector<float> x = example();
  EXPECT_EQ(vllm_kv_encode(VllmKvFormat::nvfp4, 64, x, 0.5f), want);
  const std::vector<float> back = vllm_kv_decode(VllmKvFormat::nvfp4, 64, want, 0.5f);
  ASSERT_EQ(back.size(), 64u);
  EXPECT_EQ(back[0], 1.03125f);  // 6 * 0.34375 * 0.5
  EXPECT_EQ(back[1], 0.0f);
  EXPECT_EQ(back[16], -3.0f);
  EXPECT_EQ(back[32], 0.0f);
  EXPECT_EQ(back[48], 1344.0f);  // 6 * 448 * 0.5
  // The same bytes with another tensor scale decode to values scaled by the ratio.
  EXPECT_EQ(vllm_kv_decode(VllmKvFormat::nvfp4, 64, want, 1.0f)[16], -6.0f);
}

// 4/6: block 0's M=4 candidate S = ue4m3(1 / 4 / 0.5) = 0.5 = 0x30 holds 1 exactly (1 / 0.25 = 4 = code 0x6) where
// M=6 gives 1.03125: M=4 wins. Block 1: both exact (1.0 and 1.5 = 0x3C), a tie: M=6. Block 3: both saturate to 448
// with the same error: M=6.
TEST(VllmKv, FourOverSixEntryByHand) {
  std::vector<std::uint8_t> want(36, 0);
  for (int i = 0; i < 8; ++i) want[i] = 0x06;
  for (int i = 8; i < 16; ++i) want[i] = 0xFF;
  want[24] = 0x07;
  want[32] = 0x30;
  want[33] = 0x38;
  want[35] = 0x7E;
  const std::vector<float> x = example();
  EXPECT_EQ(vllm_kv_encode(VllmKvFormat::nvfp4_4over6, 64, x, 0.5f), want);
  const std::vector<float> back = vllm_kv_decode(VllmKvFormat::nvfp4_4over6, 64, want, 0.5f);
  EXPECT_EQ(back[0], 1.0f);
  EXPECT_EQ(back[16], -3.0f);
}

// Random vectors at head_dim 64, 128, 256 and several tensor scales: each entry is mf::ref::quantize's codes then
// scales for that vector alone with the scale as the tensor scale, and decodes as mf::ref::dequantize does.
TEST(VllmKv, AgainstReferenceQuantizer) {
  std::mt19937_64 rng(7);
  std::normal_distribution<float> d(0, 1);
  for (const VllmKvFormat f : {VllmKvFormat::nvfp4, VllmKvFormat::nvfp4_4over6}) {
    for (const int dim : {64, 128, 256}) {
      for (const float scale : {1.0f, 0.0123f, 3.5f}) {
        const int n = 24;
        std::vector<float> x(static_cast<std::size_t>(n) * dim);
        for (int v = 0; v < n; ++v) {
          for (int i = 0; i < dim; ++i) x[static_cast<std::size_t>(v) * dim + i] = std::ldexp(d(rng), v % 11 - 5);
        }
        const std::vector<std::uint8_t> e = vllm_kv_encode(f, dim, x, scale);
        ASSERT_EQ(e.size(), static_cast<std::size_t>(n) * (dim / 2 + dim / 16));
        const std::vector<float> back = vllm_kv_decode(f, dim, e, scale);
        for (int v = 0; v < n; ++v) {
          QuantizeOptions o;
          o.tensor_scale = scale;
          const std::vector<std::int64_t> shape{1, dim};
          const QuantizedTensor q = ref::quantize(x.data() + static_cast<std::size_t>(v) * dim, shape,
                                                  scheme_named(f == VllmKvFormat::nvfp4 ? "nvfp4" : "nvfp4-4over6"), o);
          ASSERT_EQ(q.tensor_scale, scale);
          std::vector<std::uint8_t> want = q.codes;
          want.insert(want.end(), q.scales.begin(), q.scales.end());
          const std::size_t entry = static_cast<std::size_t>(dim / 2 + dim / 16);
          ASSERT_EQ(std::vector<std::uint8_t>(e.begin() + v * entry, e.begin() + (v + 1) * entry), want)
              << to_string(f) << " head_dim " << dim << " scale " << scale << " vector " << v;
          std::vector<float> dq(static_cast<std::size_t>(dim));
          ref::dequantize(q, dq.data());
          for (int i = 0; i < dim; ++i) ASSERT_EQ(back[static_cast<std::size_t>(v) * dim + i], dq[i]);
        }
      }
    }
  }
}

// A page of head_dim 64, 2 KV heads, block_size 4 is 2 x 2 x 4 x 36 = 576 bytes: K data at h * 128 + t * 32, K
// scales at 256 + h * 16 + t * 4 + s, V data at 288 + h * 128 + t * 32, V scales at 544 + h * 16 + (swizzled, D/64 =
// 1: row (t/4)*4 + s, column t % 4) s * 4 + t, or (linear) t * 4 + s.
TEST(VllmKv, PagesAtDocumentedOffsets) {
  for (const bool swizzle : {true, false}) {
    const VllmKvPages p{64, 2, 4, swizzle};
    ASSERT_EQ(vllm_kv_page_bytes(p), 576);
    std::mt19937_64 rng(11);
    std::normal_distribution<float> d(0, 2);
    const std::vector<std::int64_t> slots{5, 2, 7};  // page 1 token 1, page 0 token 2, page 1 token 3
    std::vector<float> key(3 * 2 * 64), value(3 * 2 * 64);
    for (auto& v : key) v = d(rng);
    for (auto& v : value) v = d(rng);
    std::vector<std::uint8_t> pages(2 * 576, 0xAB);
    write_vllm_kv_pages(VllmKvFormat::nvfp4, p, pages, key, value, slots, 0.25f, 2.0f);
    const std::vector<std::uint8_t> ke = vllm_kv_encode(VllmKvFormat::nvfp4, 64, key, 0.25f);
    const std::vector<std::uint8_t> ve = vllm_kv_encode(VllmKvFormat::nvfp4, 64, value, 2.0f);
    std::vector<bool> written(pages.size(), false);
    for (int t = 0; t < 3; ++t) {
      const std::size_t base = static_cast<std::size_t>(slots[t] / 4) * 576,
                        tok = static_cast<std::size_t>(slots[t] % 4);
      for (int h = 0; h < 2; ++h) {
        const std::size_t entry = static_cast<std::size_t>(t * 2 + h) * 36;
        for (std::size_t j = 0; j < 32; ++j) {
          const std::size_t kd = base + h * 128 + tok * 32 + j, vd = base + 288 + h * 128 + tok * 32 + j;
          EXPECT_EQ(pages[kd], ke[entry + j]);
          EXPECT_EQ(pages[vd], ve[entry + j]);
          written[kd] = written[vd] = true;
        }
        for (std::size_t s = 0; s < 4; ++s) {
          const std::size_t ks = base + 256 + h * 16 + tok * 4 + s;
          const std::size_t vs = base + 544 + h * 16 + (swizzle ? s * 4 + tok : tok * 4 + s);
          EXPECT_EQ(pages[ks], ke[entry + 32 + s]) << "K scale " << s << " token " << t;
          EXPECT_EQ(pages[vs], ve[entry + 32 + s]) << "V scale " << s << " token " << t << " swizzle " << swizzle;
          written[ks] = written[vs] = true;
        }
      }
    }
    for (std::size_t i = 0; i < pages.size(); ++i) {
      if (!written[i]) {
        ASSERT_EQ(pages[i], 0xAB) << "byte " << i << " was not to be written";
      }
    }
    std::vector<float> k2(key.size()), v2(value.size());
    read_vllm_kv_pages(VllmKvFormat::nvfp4, p, pages, slots, 0.25f, 2.0f, k2, v2);
    EXPECT_EQ(k2, vllm_kv_decode(VllmKvFormat::nvfp4, 64, ke, 0.25f));
    EXPECT_EQ(v2, vllm_kv_decode(VllmKvFormat::nvfp4, 64, ve, 2.0f));
  }
}

// head_dim 128 (D/64 = 2): V scale s of token t at row (t/4)*4 + s/2, column (s%2)*4 + t%4, checked on a 4over6 page.
TEST(VllmKv, SwizzleAtHeadDim128) {
  const VllmKvPages p{128, 1, 8, true};
  ASSERT_EQ(vllm_kv_page_bytes(p), 2 * 8 * 72);
  std::vector<float> key(8 * 128), value(8 * 128);
  std::mt19937_64 rng(3);
  std::normal_distribution<float> d(0, 1);
  for (auto& v : key) v = d(rng);
  for (auto& v : value) v = d(rng);
  std::vector<std::int64_t> slots(8);
  for (int t = 0; t < 8; ++t) slots[t] = 7 - t;
  std::vector<std::uint8_t> page(static_cast<std::size_t>(vllm_kv_page_bytes(p)), 0);
  write_vllm_kv_pages(VllmKvFormat::nvfp4_4over6, p, page, key, value, slots, 1.0f, 1.0f);
  const std::vector<std::uint8_t> ve = vllm_kv_encode(VllmKvFormat::nvfp4_4over6, 128, value, 1.0f);
  const std::size_t v_scales = 8 * 72 + 8 * 64;
  for (int i = 0; i < 8; ++i) {
    const std::size_t t = static_cast<std::size_t>(slots[i]);
    for (std::size_t s = 0; s < 8; ++s) {
      const std::size_t row = (t / 4) * 4 + s / 2, col = (s % 2) * 4 + t % 4;
      EXPECT_EQ(page[v_scales + row * 8 + col], ve[static_cast<std::size_t>(i) * 72 + 64 + s]);
    }
  }
}

TEST(VllmKv, BadScalesAreNamed) {
  const std::vector<float> x(64, 1.0f);
  for (const float bad :
       {0.0f, -1.0f, std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
    try {
      vllm_kv_encode(VllmKvFormat::nvfp4, 64, x, bad);
      FAIL() << bad;
    } catch (const KvError& e) {
      EXPECT_NE(what(e).find("scale = "), std::string::npos) << what(e);
      EXPECT_NE(what(e).find("not a finite per-tensor scale > 0"), std::string::npos) << what(e);
    }
    EXPECT_THROW(vllm_kv_decode(VllmKvFormat::nvfp4, 64, std::vector<std::uint8_t>(36), bad), KvError);
    const VllmKvPages p{64, 1, 4, true};
    std::vector<std::uint8_t> page(static_cast<std::size_t>(vllm_kv_page_bytes(p)));
    const std::vector<std::int64_t> slot{0};
    try {
      write_vllm_kv_pages(VllmKvFormat::nvfp4, p, page, x, x, slot, 1.0f, bad);
      FAIL() << bad;
    } catch (const KvError& e) {
      EXPECT_NE(what(e).find("v_scale = "), std::string::npos) << what(e);
    }
    std::vector<float> k(64), v(64);
    try {
      read_vllm_kv_pages(VllmKvFormat::nvfp4, p, page, slot, bad, 1.0f, k, v);
      FAIL() << bad;
    } catch (const KvError& e) {
      EXPECT_NE(what(e).find("k_scale = "), std::string::npos) << what(e);
    }
  }
}

TEST(VllmKv, BadShapesAreRefused) {
  for (const int dim : {0, 8, 72, 100}) {
    try {
      vllm_kv_encode(VllmKvFormat::nvfp4, dim, std::vector<float>(144, 1.0f), 1.0f);
      FAIL() << dim;
    } catch (const KvError& e) {
      EXPECT_NE(what(e).find("head_dim " + std::to_string(dim) + " is not a positive multiple of 16"),
                std::string::npos)
          << what(e);
    }
  }
  // 80 is a multiple of 16 (linear V scales take it) but not of 64 (the SM100 swizzle does not); block_size 6.
  EXPECT_EQ(vllm_kv_page_bytes({80, 1, 6, false}), 2 * 6 * 45);
  EXPECT_THROW(vllm_kv_page_bytes({80, 1, 8, true}), KvError);
  EXPECT_THROW(vllm_kv_page_bytes({128, 1, 6, true}), KvError);
  EXPECT_THROW(vllm_kv_page_bytes({128, 0, 16, true}), KvError);
  try {
    vllm_kv_encode(VllmKvFormat::nvfp4, 64, std::vector<float>(100, 1.0f), 1.0f);
    FAIL();
  } catch (const KvError& e) {
    EXPECT_NE(what(e).find("100 floats are not whole vectors of head_dim 64"), std::string::npos) << what(e);
  }
  EXPECT_THROW(vllm_kv_decode(VllmKvFormat::nvfp4, 64, std::vector<std::uint8_t>(35), 1.0f), KvError);
  const VllmKvPages p{64, 2, 4, true};
  std::vector<std::uint8_t> pages(576);
  std::vector<float> kv(2 * 64);
  try {
    write_vllm_kv_pages(VllmKvFormat::nvfp4, p, pages, kv, kv, std::vector<std::int64_t>{4}, 1.0f, 1.0f);
    FAIL();
  } catch (const KvError& e) {
    EXPECT_NE(what(e).find("slot 4 is outside the buffer's 4 slots"), std::string::npos) << what(e);
  }
  try {
    write_vllm_kv_pages(VllmKvFormat::nvfp4, p, pages, kv, kv, std::vector<std::int64_t>{0, 1}, 1.0f, 1.0f);
    FAIL();
  } catch (const KvError& e) {
    EXPECT_NE(what(e).find("128 floats for 2 slots; expected [2, 2, 64] = 256"), std::string::npos) << what(e);
  }
  std::vector<std::uint8_t> short_buffer(575);
  EXPECT_THROW(write_vllm_kv_pages(VllmKvFormat::nvfp4, p, short_buffer, kv, kv, std::vector<std::int64_t>{0}, 1, 1),
               KvError);
}

// The quantizer's given tensor scale: used as is (reference and fast path), checked, exclusive with tensor_amax,
// refused by one-level schemes.
TEST(VllmKv, QuantizeTakesATensorScale) {
  const std::vector<float> x = example();
  const std::vector<std::int64_t> shape{1, 64};
  QuantizeOptions o;
  o.tensor_scale = 0.5f;
  EXPECT_EQ(quantize(x.data(), shape, scheme_named("nvfp4"), o).tensor_scale, 0.5f);
  EXPECT_EQ(ref::quantize(x.data(), shape, scheme_named("nvfp4"), o).tensor_scale, 0.5f);
  // a one-level scheme has no tensor scale to take: an error, never dropped
  EXPECT_THROW(quantize(x.data(), shape, scheme_named("mxfp4"), o), QuantizeError);
  EXPECT_THROW(ref::quantize(x.data(), shape, scheme_named("mxfp4"), o), QuantizeError);
  o.tensor_amax = 10;
  EXPECT_THROW(quantize(x.data(), shape, scheme_named("nvfp4"), o), QuantizeError);
  o.tensor_amax = 0;
  o.tensor_scale = -1;
  EXPECT_THROW(quantize(x.data(), shape, scheme_named("nvfp4"), o), QuantizeError);
}

TEST(VllmKv, Report) {
  std::vector<float> x(4 * 128);
  std::mt19937_64 rng(1);
  std::normal_distribution<float> d(0, 1);
  for (auto& v : x) v = d(rng);
  const VllmKvReport r = vllm_kv_report(VllmKvFormat::nvfp4, 128, x, 1.0f);
  EXPECT_EQ(r.vectors, 4);
  EXPECT_EQ(r.bytes_per_vector, 72);
  EXPECT_DOUBLE_EQ(r.compression, 256.0 / 72);
  EXPECT_EQ(r.error.count, 512);
  EXPECT_GT(r.error.sqnr_db, 15);
  EXPECT_LT(r.error.sqnr_db, 25);
}

}  // namespace
}  // namespace mf
