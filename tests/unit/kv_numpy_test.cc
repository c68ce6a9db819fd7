// KV-cache pages against numpy + ml_dtypes renderings of the projects' own reference code: FlashMLA's
// quantize_k_cache for MODEL1_FP8Sparse (tests/quant.py: a page of 576-byte data rows, then 8-byte scale rows, padded
// to a multiple of 576) for v4-mixed, and the V4.1 per-token packers (512 e4m3 + 16 ue8m0; 256 e2m1 + 32 e4m3) for
// mxfp8 and fp4-e4m3-16; FlashInfer's DeepSeek-V4 NVFP4 page (flashinfer/mla: page_size rows of 224 B e2m1 + 128 B
// bf16, then page_size rows of 32 B: 28 e4m3 scales and padding) for v4-nvfp4; and OCP MX v1.0 FP6 (floor scale,
// packed four codes per 3 bytes as docs/spec.md#packing says) for mxfp6-e3m2 / mxfp6-e2m3. The inputs are bf16 values
// of moderate size, where the references' clamps of tiny amax do not act (docs/kv.md), so every byte must match.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "io_test_util.h"
#include "minifloat/codec.h"
#include "minifloat/kv.h"

namespace mf {
namespace {

using io::testing::python_has;
using io::testing::run_python;
using io::testing::str;
using io::testing::TempDir;
using io::testing::write_file;

constexpr const char* kScript = R"(import sys
import numpy as np
import ml_dtypes as md

fmt, page_size, pages = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
x = np.fromfile(sys.argv[4], np.float32).reshape(pages, page_size, 512)
got = open(sys.argv[5], 'rb').read()

def ue8m0_rceil(amax, elem_max):
    # 2^ceil(log2(amax / elem_max)) and its ue8m0 code, amax as in act_quant (clamped to 1e-4)
    e = np.ceil(np.log2(np.maximum(amax, np.float32(1e-4)) / np.float32(elem_max))).astype(np.int32)
    return np.ldexp(np.float32(1), e).astype(np.float32), (e + 127).astype(np.uint8)

def e4m3_blocks(v, tile):
    t = v.reshape(*v.shape[:-1], -1, tile)
    scale, code = ue8m0_rceil(np.abs(t).max(-1), 448.0)
    q = (t / scale[..., None]).astype(md.float8_e4m3fn).view(np.uint8).reshape(v.shape)
    return q, code

if fmt == 'v4-mixed':   # FlashMLA tests/quant.py, MODEL1_FP8Sparse
    q, code = e4m3_blocks(x[..., :448], 64)
    rope = x[..., 448:].astype(md.bfloat16).view(np.uint8).reshape(pages, page_size, 128)
    data = np.concatenate([q, rope], -1).reshape(pages, -1)
    scales = np.concatenate([code, np.zeros((pages, page_size, 1), np.uint8)], -1).reshape(pages, -1)
    stride = -(-page_size * 584 // 576) * 576
    buf = np.zeros((pages, stride), np.uint8)
    buf[:, :page_size * 576] = data
    buf[:, page_size * 576:page_size * 584] = scales
elif fmt == 'mxfp8':    # V4.1: 512 B e4m3 then 16 B ue8m0 per token
    q, code = e4m3_blocks(x, 32)
    buf = np.concatenate([q, code], -1)
elif fmt.startswith('mxfp6'):  # OCP MX floor scale, RNE saturated; 4 codes in 3 bytes (docs/spec.md#packing)
    ty, emax, top = (md.float6_e3m2fn, 4, 28.0) if fmt == 'mxfp6-e3m2' else (md.float6_e2m3fn, 2, 7.5)
    t = x.reshape(pages, page_size, 16, 32)
    k = np.frexp(np.abs(t).max(-1))[1] - 1 - emax
    e = np.clip(t / np.ldexp(np.float32(1), k)[..., None], -top, top).astype(ty).view(np.uint8)
    c = (e.reshape(pages, page_size, 128, 4) & 0x3F).astype(np.uint32)
    g = c[..., 0] | c[..., 1] << 6 | c[..., 2] << 12 | c[..., 3] << 18
    packed = np.stack([g & 0xFF, g >> 8 & 0xFF, g >> 16], -1).astype(np.uint8).reshape(pages, page_size, 384)
    buf = np.concatenate([packed, (k + 127).astype(np.uint8)], -1)
else:                   # e2m1 (element 2i low nibble) with e4m3 scales amax / 6 per 16 values
    n = 448 if fmt == 'v4-nvfp4' else 512
    t = x[..., :n].reshape(pages, page_size, n // 16, 16)
    code = (np.abs(t).max(-1) / np.float32(6)).astype(md.float8_e4m3fn)
    scale = code.astype(np.float32)
    e = (t / scale[..., None]).astype(md.float4_e2m1fn).view(np.uint8).reshape(pages, page_size, n) & 0xF
    packed = e[..., 0::2] | (e[..., 1::2] << 4)
    if fmt == 'v4-nvfp4':  # FlashInfer: page_size * 352 data bytes, then page_size * 32 scale bytes
        rope = x[..., 448:].astype(md.bfloat16).view(np.uint8).reshape(pages, page_size, 128)
        scales = np.concatenate([code.view(np.uint8), np.zeros((pages, page_size, 4), np.uint8)], -1)
        buf = np.concatenate([np.concatenate([packed, rope], -1).reshape(pages, -1), scales.reshape(pages, -1)], -1)
    else:               # V4.1 FP4: 256 B e2m1 then 32 B e4m3 scales per token
        buf = np.concatenate([packed, code.view(np.uint8)], -1)
want = buf.tobytes()
if want != got:
    a, b = np.frombuffer(want, np.uint8), np.frombuffer(got, np.uint8)
    i = np.flatnonzero(a != b) if len(a) == len(b) else [min(len(a), len(b))]
    print('mismatch', fmt, len(a), len(b), 'first at', i[0], 'count', len(i))
    sys.exit(1)
print('checked', fmt)
)";

// bf16 values, normal(0, 1) times a per-token power of two.
std::vector<float> bf16_tokens(int tokens, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> d(0, 1);
  std::vector<float> v(static_cast<std::size_t>(tokens) * kKvValues);
  for (int t = 0; t < tokens; ++t) {
    const float s = std::ldexp(1.0f, t % 7 - 3);
    for (int i = 0; i < kKvValues; ++i) {
      v[static_cast<std::size_t>(t) * kKvValues + i] = decode(bf16, encode(bf16, s * d(rng)));
    }
  }
  return v;
}

TEST(KvNumpy, PagesMatchFlashMlaFlashInferAndOcpPackers) {
  TempDir dir;
  ASSERT_TRUE(python_has(dir, "ml_dtypes", "ml_dtypes"));
  write_file(dir / "check.py", kScript);
  const int page_size = 64, pages = 2;
  const std::vector<float> x = bf16_tokens(page_size * pages, 11);
  write_file(dir / "x.f32", std::string_view(reinterpret_cast<const char*>(x.data()), x.size() * sizeof(float)));
  std::vector<std::int64_t> slots(x.size() / kKvValues);
  for (std::size_t i = 0; i < slots.size(); ++i) slots[i] = static_cast<std::int64_t>(i);
  for (const KvFormat f : {KvFormat::v4_mixed, KvFormat::mxfp8, KvFormat::fp4_e4m3_16, KvFormat::v4_nvfp4,
                           KvFormat::mxfp6_e3m2, KvFormat::mxfp6_e2m3}) {
    KvCache cache(f, page_size, pages);
    cache.write(x, slots);
    const auto b = cache.bytes();
    write_file(dir / "cache.bin", std::string_view(reinterpret_cast<const char*>(b.data()), b.size()));
    const auto r =
        run_python(dir / "check.py", str(to_string(f), " ", page_size, " ", pages, " '", (dir / "x.f32").string(),
                                         "' '", (dir / "cache.bin").string(), "'"));
    EXPECT_EQ(r.status, 0) << r.output;
    EXPECT_NE(r.output.find("checked"), std::string::npos) << r.output;
  }
}

}  // namespace
}  // namespace mf
