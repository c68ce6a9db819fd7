"""act_quant, fp8_gemm, fp4_gemm, linear, KV entries and packed block scales, against references written here in numpy.

GEMMs: bit for bit against minifloat/gemm.h's accumulation order written out in numpy (`gemm_order` below) on small
shapes, with operands decoded by ml_dtypes and activations quantized by DeepSeek's act_quant (test_deepseek.py); and
against an f64 matmul of the same dequantized operands within the rounding bound of that order (`f32_bound`).
Scales: hand-worked packings (DeepInfer's nvidia int32 / ascend int16, DeepGEMM's MN-major words, cuBLAS's 128x4
tiles) and round trips. KV entries: the bytes of minifloat.quantize's codes and scales, laid out as minifloat/kv.h
says, and their dequantization.
"""
import ml_dtypes
import numpy as np
import pytest

import minifloat
from conftest import assert_same, need
from test_deepseek import act_quant as deepseek_act_quant
from test_deepseek import activations

U = 2.0**-24  # unit roundoff of f32
LANES, ACT_BLOCK = 16, 128


def e4m3_values(codes):
    return np.asarray(codes, np.uint8).view(ml_dtypes.float8_e4m3fn).astype(np.float32)


def e2m1_values(packed, shape):
    """Packed e2m1 (element 2i in the low nibble of byte i) as float32 values."""
    nib = np.stack([packed & 0xF, packed >> 4], axis=-1).reshape(shape)
    return nib.astype(np.uint8).view(ml_dtypes.float4_e2m1fn).astype(np.float32)


def expand(scales, block, shape):
    """Block scales [R, C] spread over the elements [N, K] they scale."""
    br, bc = block
    return np.repeat(np.repeat(scales, br, 0), bc, 1)[:shape[0], :shape[1]]


def weight_operand(q):
    """(w [N, K] f32 as the GEMM reads it, sb or None, block): ue8m0 scales are multiplied in (exact), f32 scales
    stay outside (gemm.h)."""
    n, k = q.shape
    vals = e2m1_values(q.codes, (n, k)) if q._q.element == "e2m1" else e4m3_values(q.codes).reshape(n, k)
    if q._q.scale_format == "f32":
        return vals, q.scales, q.block
    s = q.scales_as(ml_dtypes.float8_e8m0fnu).astype(np.float32)
    return (vals * expand(s, q.block, (n, k))).astype(np.float32), None, q.block


def gemm_order(a, sa, w, sb=None, block=(1, ACT_BLOCK)):
    """C [M, N] in gemm.h's order: groups of G (128, or the weight block width when f32 weight scales are narrower);
    in a group 16 lane sums p[k % 16] += a*w from +0, then the tree ((p0+p8)+(p4+p12)) + ...; C = C + s * acc with
    s = sa * sb. The products are exact in f32 (e4m3 x e4m3/e2m1 x 2^e, bf16 x bf16), so numpy's rounded multiply
    then rounded add is the fma of the definition."""
    m, k = a.shape
    n = w.shape[0]
    br, bc = block
    g_width = ACT_BLOCK if sb is None else min(ACT_BLOCK, bc)
    c = np.zeros((m, n), np.float32)
    for g in range(k // g_width):
        p = np.zeros((LANES, m, n), np.float32)
        for i in range(g * g_width, (g + 1) * g_width):
            p[i % LANES] = p[i % LANES] + a[:, i, None] * w[None, :, i]
        q = p[:8] + p[8:]
        r = q[:4] + q[4:]
        s2 = r[:2] + r[2:]
        acc = s2[0] + s2[1]
        s = sa[:, (g * g_width) // ACT_BLOCK][:, None]
        if sb is not None:
            s = s * sb[np.arange(n) // br, (g * g_width) // bc][None, :]
        c = c + s * acc
    return c


def f32_bound(a64, w64, k, group, products_rounded=False):
    """|C - exact| <= gamma_d * sum_k |a_k w_k| (Higham's bound for a sum whose terms each pass through at most d
    rounded operations): d = G/16 lane adds + 4 tree adds + 2 (s = sa*sb, s*acc) + K/G group adds (+1 when the
    products themselves round, f32 x f32)."""
    d = group // LANES + 4 + 2 + k // group + (1 if products_rounded else 0)
    gamma = d * U / (1 - d * U)
    return gamma * (np.abs(a64) @ np.abs(w64).T)


def rng_tensor(rng, shape, spread=4):
    return (rng.standard_normal(shape) * np.exp2(rng.integers(-spread, spread, shape[:-1] + (1,)))).astype(np.float32)


# ---------------------------------------------------------------------------------------------------- act_quant

@pytest.mark.parametrize("scale", ["ue8m0", "f32"])
def test_act_quant_is_deepseeks(scale):
    x = activations(3)
    codes, scales = deepseek_act_quant(x, scale_fmt="ue8m0" if scale == "ue8m0" else None)
    q = minifloat.act_quant(x, scale)
    assert q.block == (1, 128) and q._q.scale_format == scale and q.profile == "deepseek"
    assert_same(q.codes, codes, what="act_quant codes")
    got = q.scales_as(ml_dtypes.float8_e8m0fnu).astype(np.float32) if scale == "ue8m0" else q.scales
    assert_same(got.view(np.uint32), scales.view(np.uint32), what="act_quant scales")


def test_act_quant_leading_dims_and_bf16_input():
    x = activations(4)
    q = minifloat.act_quant(x.reshape(4, 8, 1024))
    assert q.shape == (4, 8, 1024)
    assert_same(q.codes.reshape(32, 1024), minifloat.act_quant(x).codes)
    xb = x.astype(ml_dtypes.bfloat16)
    assert_same(minifloat.act_quant(xb).codes, deepseek_act_quant(xb.astype(np.float32), scale_fmt="ue8m0")[0])


# ---------------------------------------------------------------------------------------------------- GEMMs

FP8_WEIGHTS = ["fp8-128x128", "fp8-32x32", "fp8-1x128", "e4m3-128x128-f32", "e4m3-32x32-f32"]


def _operands(seed, m=6, n=256, k=512):
    rng = np.random.default_rng(seed)
    return rng_tensor(rng, (m, k)), rng_tensor(rng, (n, k), spread=2)


def _activation(x, scale):
    codes, sa = deepseek_act_quant(x, scale_fmt="ue8m0" if scale == "ue8m0" else None)
    return e4m3_values(codes), sa


@pytest.mark.parametrize("scheme", FP8_WEIGHTS)
def test_fp8_gemm_bit_exact_against_the_documented_order(scheme):
    x, w = _operands(10)
    qw = minifloat.quantize(w, scheme)
    a, sa = _activation(x, "ue8m0")
    wv, sb, block = weight_operand(qw)
    expected = gemm_order(a, sa, wv, sb, block)
    got = minifloat.fp8_gemm(minifloat.act_quant(x), qw)
    assert got.dtype == np.float32 and got.shape == (6, 256)
    assert_same(got.view(np.uint32), expected.view(np.uint32), what=f"fp8_gemm {scheme}")
    assert_same(minifloat.fp8_gemm(minifloat.act_quant(x), qw, threads=1).view(np.uint32), got.view(np.uint32),
                what="threads=1")
    bf = minifloat.fp8_gemm(minifloat.act_quant(x), qw, dtype=ml_dtypes.bfloat16)
    assert bf.dtype == ml_dtypes.bfloat16
    assert_same(bf.view(np.uint16), expected.astype(ml_dtypes.bfloat16).view(np.uint16), what="bf16 output (RNE)")


def test_fp4_gemm_bit_exact_against_the_documented_order():
    x, w = _operands(11)
    qw = minifloat.quantize(w, "mxfp4")
    a, sa = _activation(x, "ue8m0")
    wv, _, _ = weight_operand(qw)
    expected = gemm_order(a, sa, wv)
    got = minifloat.fp4_gemm(minifloat.act_quant(x), qw)
    assert_same(got.view(np.uint32), expected.view(np.uint32), what="fp4_gemm mxfp4")


@pytest.mark.parametrize("scheme", ["fp8-128x128", "e4m3-128x128-f32", "mxfp4"])
def test_linear_within_the_f32_bound_of_an_f64_matmul(scheme):
    """linear(x, W) = act_quant(x) x W^T: against an f64 matmul of the dequantized operands (the activation through
    DeepSeek's act_quant, with f32 scales when W's are f32), within f32_bound; bf16 output adds its own rounding
    (2^-8 relative: 8 significant bits). x has leading dimensions [2, 3]."""
    x, w = _operands(12)
    qw = minifloat.quantize(w, scheme)
    scale = "f32" if qw._q.scale_format == "f32" else "ue8m0"
    a, sa = _activation(x, scale)
    a64 = a.astype(np.float64) * np.repeat(sa, ACT_BLOCK, 1)
    wv, sb, block = weight_operand(qw)
    w64 = wv.astype(np.float64) * (1 if sb is None else expand(sb, block, wv.shape))
    exact = a64 @ w64.T
    group = ACT_BLOCK if sb is None else min(ACT_BLOCK, block[1])
    bound = f32_bound(a64, w64, 512, group)
    y = minifloat.linear(x.reshape(2, 3, 512), qw)
    assert y.shape == (2, 3, 256)
    y = y.reshape(6, 256)
    err = np.abs(y - exact)
    assert (err <= bound).all(), f"worst error {err.max()} against bound {bound.flat[err.argmax()]}"
    assert_same(y.view(np.uint32), gemm_order(a, sa, wv, sb, block).view(np.uint32),
                what="linear = the documented order")
    yb = minifloat.linear(x, qw, dtype="bfloat16").astype(np.float64)
    assert (np.abs(yb - exact) <= bound + 2.0**-8 * np.abs(y)).all()


def nvfp4_weight_operand(q):
    """(w [N, K] f32, t): nvfp4 as the GEMM reads it (docs/gemm.md): e2m1 element x E4M3 block scale (ml_dtypes'
    values; exact in f32), and the f32 tensor scale that joins each group's factor."""
    n, k = q.shape
    s = q.scales.view(ml_dtypes.float8_e4m3fn).astype(np.float32)
    return (e2m1_values(q.codes, (n, k)) * expand(s, q.block, (n, k))).astype(np.float32), np.float32(q.tensor_scale)


def test_nvfp4_fp4_gemm_and_linear_bit_exact_against_the_documented_order():
    """nvfp4 weights in fp4_gemm and linear: act_quant's activations, w = element x S inside, s = sa x t per group."""
    x, w = _operands(16)
    qw = minifloat.quantize(w, "nvfp4")
    a, sa = _activation(x, "ue8m0")
    wv, t = nvfp4_weight_operand(qw)
    expected = gemm_order(a, sa, wv, np.full((1, 4), t, np.float32), (256, ACT_BLOCK))
    assert_same(minifloat.fp4_gemm(minifloat.act_quant(x), qw).view(np.uint32), expected.view(np.uint32),
                what="fp4_gemm nvfp4")
    assert_same(minifloat.linear(x, qw).view(np.uint32), expected.view(np.uint32), what="linear nvfp4")


@pytest.mark.parametrize("scheme", ["nvfp4", "mxfp4", "fp8-128x128", "e4m3-128x128-f32"])
def test_weight_only_linear(scheme):
    """linear(..., weight_only=True): x not quantized. bf16 x: every product exact, so bit for bit the documented
    order with sa = 1; f32 x: within the bound of a torch f64 matmul on the dequantized weights (products round)."""
    torch = need("torch")
    x, w = _operands(17)
    qw = minifloat.quantize(w, scheme)
    if scheme == "nvfp4":
        wv, t = nvfp4_weight_operand(qw)
        sb, block, w64 = np.full((1, 4), t, np.float32), (256, ACT_BLOCK), wv.astype(np.float64) * np.float64(t)
    else:
        wv, sb, block = weight_operand(qw)
        w64 = wv.astype(np.float64) * (1 if sb is None else expand(sb, block, wv.shape))
    xb = x.astype(ml_dtypes.bfloat16)
    expected = gemm_order(xb.astype(np.float32), np.ones((6, 4), np.float32), wv, sb, block)
    assert_same(minifloat.linear(xb, qw, weight_only=True).view(np.uint32), expected.view(np.uint32),
                what=f"weight-only {scheme}, bf16 x")
    # the dequantized weights (minifloat's own: fl(element x fl(S x t)) for nvfp4, two roundings) agree with w64
    assert (np.abs(qw.dequantize().astype(np.float64) - w64) <= 2 * U * np.abs(w64)).all()
    exact = (torch.from_numpy(x.astype(np.float64)) @ torch.from_numpy(w64).T).numpy()
    group = ACT_BLOCK if sb is None or scheme == "nvfp4" else min(ACT_BLOCK, block[1])
    bound = f32_bound(x.astype(np.float64), w64, 512, group, products_rounded=True)
    err = np.abs(minifloat.linear(x, qw, weight_only=True) - exact)
    assert (err <= bound).all(), f"worst error {err.max()} against bound {bound.flat[err.argmax()]}"


def test_linear_with_plain_weights():
    x, w = _operands(13)
    # bf16 weights: x rounded to bf16 (RNE), products exact: the documented order with s = 1, bit for bit
    wb = w.astype(ml_dtypes.bfloat16)
    xb = x.astype(ml_dtypes.bfloat16).astype(np.float32)
    expected = gemm_order(xb, np.ones((6, 4), np.float32), wb.astype(np.float32))
    assert_same(minifloat.linear(x, wb).view(np.uint32), expected.view(np.uint32), what="linear bf16 weights")
    # f32 weights: products round too; the f64 matmul within the bound
    exact = x.astype(np.float64) @ w.astype(np.float64).T
    err = np.abs(minifloat.linear(x, w) - exact)
    bound = f32_bound(x.astype(np.float64), w.astype(np.float64), 512, ACT_BLOCK, products_rounded=True)
    assert (err <= bound).all(), f"worst error {err.max()}"


def test_out_and_accumulate():
    x, w = _operands(14)
    qw = minifloat.quantize(w, "fp8-128x128")
    a = minifloat.act_quant(x)
    c = minifloat.fp8_gemm(a, qw)
    old = np.random.default_rng(1).standard_normal((6, 256)).astype(np.float32)
    out = old.copy()
    assert minifloat.fp8_gemm(a, qw, out=out, accumulate=True) is out
    assert_same(out.view(np.uint32), (old + c).view(np.uint32), what="accumulate: one f32 add of the old value")
    old_b = old.astype(ml_dtypes.bfloat16)
    out_b = old_b.copy()
    minifloat.linear(x, qw, out=out_b, accumulate=True)
    want = (old_b.astype(np.float32) + c).astype(ml_dtypes.bfloat16)
    assert_same(out_b.view(np.uint16), want.view(np.uint16), what="bf16 accumulate: widened, added, rounded")
    out2 = np.full((6, 256), 7, np.float32)
    minifloat.linear(x, qw, out=out2)  # without accumulate, out is overwritten
    assert_same(out2.view(np.uint32), c.view(np.uint32))


def test_linear_torch_in_torch_out():
    torch = pytest.importorskip("torch")
    x, w = _operands(15)
    qw = minifloat.quantize(w, "fp8-128x128")
    y = minifloat.linear(torch.from_numpy(x), qw)
    assert isinstance(y, torch.Tensor) and y.dtype == torch.float32
    assert_same(y.numpy().view(np.uint32), minifloat.linear(x, qw).view(np.uint32))
    yb = minifloat.linear(torch.from_numpy(x), qw, dtype="bfloat16")
    assert yb.dtype == torch.bfloat16


def _gemm_error_cases():
    x, w = _operands(16)
    a = minifloat.act_quant(x)
    qw = minifloat.quantize(w, "fp8-128x128")
    q384 = minifloat.quantize(w[:, :384], "fp8-1x128")
    q4 = minifloat.quantize(w, "mxfp4")
    return [
        (lambda: minifloat.fp8_gemm(a, q384), ValueError, "[6, 512]", "[256, 384]"),
        (lambda: minifloat.fp8_gemm(x, qw), TypeError, "a:", "act_quant"),
        (lambda: minifloat.fp8_gemm(a, w), TypeError, "w:", "QuantizedTensor"),
        (lambda: minifloat.fp8_gemm(a, q4), ValueError, "[6, 512]", "e4m3"),
        (lambda: minifloat.fp4_gemm(a, qw), ValueError, "[256, 512]", "mxfp4"),
        (lambda: minifloat.fp8_gemm(qw, qw), ValueError, "activation", "fp8-128x128"),
        (lambda: minifloat.fp8_gemm(a, qw, out=np.zeros((6, 255), np.float32)), ValueError, "(6, 255)", "(6, 256)"),
        (lambda: minifloat.fp8_gemm(a, qw, out=np.zeros((6, 256))), TypeError, "out:", "float64"),
        (lambda: minifloat.fp8_gemm(a, qw, out=np.zeros((256, 6), np.float32).T), ValueError, "out:", "contiguous"),
        (lambda: minifloat.fp8_gemm(a, qw, accumulate=True), ValueError, "accumulate", "out="),
        (lambda: minifloat.fp8_gemm(a, qw, dtype=np.int8), TypeError, "dtype", "int8"),
        (lambda: minifloat.fp8_gemm(a, qw, out=np.zeros((6, 256), np.float32), dtype="bfloat16"), TypeError,
         "dtype", "out"),
        (lambda: minifloat.linear(x.astype(np.float64), qw), TypeError, "x:", "float64"),
        (lambda: minifloat.linear(x, w.astype(np.float64)), TypeError, "w:", "f64"),
        (lambda: minifloat.linear(x, w[0]), ValueError, "w:", "(512,)"),
        (lambda: minifloat.linear(x, w[:, :500]), ValueError, "[..., 512]", "[256, 500]"),
        (lambda: minifloat.linear(x[:, :500], qw), ValueError, "500", "128"),
        (lambda: minifloat.act_quant(x, "e8m0"), ValueError, "scale", "e8m0"),
        (lambda: minifloat.act_quant(x[:, :100]), ValueError, "100", "128"),
        (lambda: minifloat.act_quant(x.astype(np.int32)), TypeError, "x:", "int"),
    ]


@pytest.mark.parametrize("case", range(len(_gemm_error_cases())))
def test_gemm_errors_name_the_argument_and_both_shapes(case):
    call, exc, *words = _gemm_error_cases()[case]
    with pytest.raises(exc) as e:
        call()
    for word in words:
        assert word in str(e.value), f"{word!r} not in {str(e.value)!r}"


# ---------------------------------------------------------------------------------------------------- scale layouts

def test_pack_scales_by_hand():
    c = np.array([[1, 2, 3, 4, 5], [6, 7, 8, 9, 10]], np.uint8)
    nv = minifloat.pack_scales(c, "nvidia-int32")
    assert nv.dtype == np.int32 and nv.tolist() == [[0x04030201, 0x05], [0x09080706, 0x0A]]
    assert minifloat.pack_scales(c, "nvidia").tolist() == nv.tolist()
    asc = minifloat.pack_scales(c, "ascend-int16")
    assert asc.dtype == np.int16 and asc.tolist() == [[0x0201, 0x0403, 0x05], [0x0706, 0x0908, 0x0A]]
    dg = minifloat.pack_scales(c, "deepgemm")  # the words transposed, rows padded to 4 (16-byte TMA alignment)
    assert dg.dtype == np.int32 and dg.tolist() == [[0x04030201, 0x09080706, 0, 0], [0x05, 0x0A, 0, 0]]
    cb = minifloat.pack_scales(c, "cublas-128x4")  # two 128x4 tiles of 512 bytes; (r, c) at (r%32)*16 + (r/32)*4 + c
    assert cb.dtype == np.uint8 and cb.shape == (128, 8)
    want = np.zeros(1024, np.uint8)
    want[[0, 1, 2, 3, 512, 16, 17, 18, 19, 528]] = np.arange(1, 11)
    assert_same(cb.reshape(-1), want, what="cublas-128x4 bytes")
    assert minifloat.pack_scales(c, "row-major").tolist() == c.tolist()


def test_nvidia_int32_and_ascend_int16_as_deepinfer():
    """docs/spec.md#scale-packing: [1536, 128] ue8m0 codes -> [1536, 32] int32 (code k at bits 8*(k%4)), [1536, 64]
    int16 on Ascend."""
    codes = np.random.default_rng(0).integers(0, 256, (1536, 128)).astype(np.uint8)
    nv = minifloat.pack_scales(codes, "nvidia")
    assert nv.shape == (1536, 32) and nv.dtype == np.int32
    words = (codes.reshape(1536, 32, 4).astype(np.uint32) << np.uint32([0, 8, 16, 24])).sum(-1, dtype=np.uint32)
    assert_same(nv.view(np.uint32), words, what="nvidia-int32 words")
    asc = minifloat.pack_scales(codes, "ascend")
    assert asc.shape == (1536, 64) and asc.dtype == np.int16
    halves = (codes.reshape(1536, 64, 2).astype(np.uint16) << np.uint16([0, 8])).sum(-1, dtype=np.uint16)
    assert_same(asc.view(np.uint16), halves, what="ascend-int16 halfwords")
    for p, packed in (("nvidia-int32", nv), ("ascend-int16", asc)):
        assert_same(minifloat.unpack_scales(packed, p, (1536, 128)), codes, what=f"{p} round trip")
    # a QuantizedTensor's scales directly, and ml_dtypes e8m0 codes
    q = minifloat.quantize(np.random.default_rng(1).standard_normal((4, 256)).astype(np.float32), "mxfp8")
    assert_same(minifloat.pack_scales(q, "nvidia"), minifloat.pack_scales(q.scales, "nvidia"))
    assert_same(minifloat.pack_scales(q.scales_as(ml_dtypes.float8_e8m0fnu), "nvidia"),
                minifloat.pack_scales(q.scales, "nvidia"))


def deepgemm_ref(codes):
    rows, cols = codes.shape
    padded = np.zeros((rows, -(-cols // 4) * 4), np.uint8)
    padded[:, :cols] = codes
    words = padded.view("<u4")  # [rows, ceil(cols/4)]
    out = np.zeros((words.shape[1], -(-rows // 4) * 4), np.uint32)
    out[:, :rows] = words.T
    return out


def cublas_ref(codes):
    rows, cols = codes.shape
    rp, cp = -(-rows // 128) * 128, -(-cols // 4) * 4
    out = np.zeros(rp * cp, np.uint8)
    r, c = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
    tile = (r // 128) * (cp // 4) + c // 4
    out[tile * 512 + (r % 32) * 16 + ((r % 128) // 32) * 4 + c % 4] = codes[r, c]
    return out.reshape(rp, cp)


@pytest.mark.parametrize("shape", [(300, 7), (128, 4), (1, 1), (257, 33)])
def test_deepgemm_and_cublas_layouts(shape):
    codes = np.random.default_rng(shape[0]).integers(1, 256, shape).astype(np.uint8)
    dg = minifloat.pack_scales(codes, "deepgemm")
    assert_same(dg.view(np.uint32), deepgemm_ref(codes), what="deepgemm words")
    cb = minifloat.pack_scales(codes, "cublas-128x4")
    assert_same(cb, cublas_ref(codes), what="cublas-128x4 bytes")
    for p, packed in (("deepgemm", dg), ("cublas-128x4", cb)):
        assert_same(minifloat.unpack_scales(packed, p, shape), codes, what=f"{p} round trip")


@pytest.mark.parametrize("platform", ["row-major", "nvidia-int32", "ascend-int16", "deepgemm", "cublas-128x4"])
def test_batched_round_trip(platform):
    codes = np.random.default_rng(5).integers(0, 256, (3, 130, 9)).astype(np.uint8)
    packed = minifloat.pack_scales(codes, platform)
    assert_same(minifloat.unpack_scales(packed, platform, codes.shape), codes, what=f"{platform} batched")
    for i in range(3):  # each batch member packed on its own, one after another
        one = minifloat.pack_scales(codes[i], platform).reshape(-1)
        assert_same(packed.reshape(-1)[i * one.size:(i + 1) * one.size], one, what=f"batch member {i}")


def test_scale_layout_errors():
    codes = np.zeros((1536, 128), np.uint8)
    nv = minifloat.pack_scales(codes, "nvidia")
    with pytest.raises(ValueError) as e:  # docs/spec.md#wrong-scale-dtype: NVIDIA words read on Ascend
        minifloat.unpack_scales(nv, "ascend", (1536, 128))
    assert "[1536, 32]" in str(e.value) and "[1536, 64]" in str(e.value) and "nvidia-int32" in str(e.value)
    with pytest.raises(ValueError, match="platform"):
        minifloat.pack_scales(codes, "tpu")
    with pytest.raises(TypeError, match="codes"):
        minifloat.pack_scales(codes.astype(np.float32), "nvidia")
    with pytest.raises(TypeError, match="packed"):
        minifloat.unpack_scales(nv.astype(np.float32), "nvidia", (1536, 128))
    with pytest.raises(TypeError, match="code_shape"):
        minifloat.unpack_scales(nv, "nvidia", 1536)
    with pytest.raises(TypeError, match="codes"):  # f32 block scales are not codes
        minifloat.pack_scales(minifloat.act_quant(np.ones((1, 128), np.float32), "f32"), "nvidia")
    assert "deepgemm" in minifloat.scale_layouts()


# ---------------------------------------------------------------------------------------------------- KV cache

def kv_values(tokens=5, seed=0):
    v = rng_tensor(np.random.default_rng(seed), (tokens, 512), spread=6)
    v[0, :16] = 0
    v[1, 3] = 1e-30
    return v


def kv_expected(v, fmt):
    """(entry bytes, decoded values) from minifloat.quantize / dequantize and ml_dtypes, laid out as kv.h says."""
    t = v.shape[0]
    if fmt == "fp4-e4m3-16":
        q = minifloat.quantize(v, "fp4-e4m3-16")
        return np.concatenate([q.codes, q.scales], axis=1), q.dequantize()
    if fmt == "mxfp8":
        q = minifloat.quantize(v, "mxfp8", profile="deepseek")
        return np.concatenate([q.codes, q.scales], axis=1), q.dequantize()
    if fmt in ("mxfp6-e3m2", "mxfp6-e2m3"):
        q = minifloat.quantize(v, fmt)
        return np.concatenate([q.codes, q.scales], axis=1), q.dequantize()
    rope = v[:, 448:].astype(ml_dtypes.bfloat16)
    if fmt == "v4-nvfp4":  # [224 e2m1 | 128 bf16 | 28 ue4m3 | 4 zero]
        q = minifloat.quantize(v[:, :448].copy(), "fp4-e4m3-16")
        entry = np.concatenate([q.codes, rope.view(np.uint8).reshape(t, 128), q.scales, np.zeros((t, 4), np.uint8)], 1)
        return entry, np.concatenate([q.dequantize(), rope.astype(np.float32)], axis=1)
    q = minifloat.quantize(v[:, :448].copy(), "e4m3-1x64-ue8m0-rceil", profile="deepseek")
    entry = np.concatenate([q.codes, rope.view(np.uint8).reshape(t, 128), q.scales, np.zeros((t, 1), np.uint8)], 1)
    return entry, np.concatenate([q.dequantize(), rope.astype(np.float32)], axis=1)


@pytest.mark.parametrize("fmt, entry_bytes", [("fp4-e4m3-16", 288), ("mxfp8", 528), ("v4-mixed", 584), ("v4-nvfp4", 384),
                                               ("mxfp6-e3m2", 400), ("mxfp6-e2m3", 400)])
def test_kv_entries_are_the_quantizers_bytes(fmt, entry_bytes):
    v = kv_values()
    e = minifloat.kv_encode(v, fmt)
    assert e.dtype == np.uint8 and e.shape == (5, entry_bytes)
    want_bytes, want_values = kv_expected(v, fmt)
    assert_same(e, want_bytes, what=f"{fmt} entries")
    d = minifloat.kv_decode(e, fmt)
    assert d.dtype == np.float32 and d.shape == (5, 512)
    assert_same(d.view(np.uint32), want_values.view(np.uint32), what=f"{fmt} decoded")
    assert_same(minifloat.kv_decode(e.reshape(-1), fmt), d)  # a run of entries back to back
    assert minifloat.kv_encode(v.reshape(5, 1, 512), fmt).shape == (5, 1, entry_bytes)
    assert {f["name"]: f["entry_bytes"] for f in minifloat.kv_formats()}[fmt] == entry_bytes


def test_kv_cache_pages():
    v = kv_values(6, seed=1)
    cache = minifloat.KvCache("fp4-e4m3-16", page_size=4, pages=3)
    assert (cache.slots, cache.bytes.size, minifloat.kv_page_bytes("fp4-e4m3-16", 4)) == (12, 3 * 4 * 288, 4 * 288)
    slots = [0, 5, 6, 11, 2, 3]
    cache.write(v, slots)
    assert_same(cache.read(slots), minifloat.kv_decode(minifloat.kv_encode(v)), what="read back")
    assert_same(cache.read([1, 4]), np.zeros((2, 512), np.float32), what="unwritten slots")
    assert_same(cache.page(1)[288:576], minifloat.kv_encode(v[1:2]).reshape(-1), what="slot 5 = page 1, token 1")
    assert not cache.bytes.flags.writeable
    # v4-mixed: 64 rows of 576 data bytes, then 64 scale rows of 8 bytes, padded to a multiple of 576
    assert minifloat.kv_page_bytes("v4-mixed", 64) == -(-64 * 584 // 576) * 576
    mixed = minifloat.KvCache("v4-mixed", page_size=2, pages=1)
    mixed.write(v[:2], [0, 1])
    e = minifloat.kv_encode(v[:2], "v4-mixed")
    assert_same(mixed.page(0)[:1152], e[:, :576].reshape(-1), what="v4-mixed data rows")
    assert_same(mixed.page(0)[1152:1168], e[:, 576:].reshape(-1), what="v4-mixed scale footer")
    # v4-nvfp4: rows of 352 data bytes, then the 32-byte scale rows, no padding (FlashInfer's page)
    assert minifloat.kv_page_bytes("v4-nvfp4", 64) == 64 * 384
    nv = minifloat.KvCache("v4-nvfp4", page_size=2, pages=1)
    nv.write(v[:2], [1, 0])
    e = minifloat.kv_encode(v[1::-1], "v4-nvfp4")
    assert_same(nv.page(0)[:704], e[:, :352].reshape(-1), what="v4-nvfp4 data rows")
    assert_same(nv.page(0)[704:768], e[:, 352:].reshape(-1), what="v4-nvfp4 scale footer")


def test_kv_errors():
    v = kv_values(2)
    with pytest.raises(ValueError, match="values.*500"):
        minifloat.kv_encode(v[:, :500], "mxfp8")
    with pytest.raises(ValueError, match="format"):
        minifloat.kv_encode(v, "fp3")
    with pytest.raises(TypeError, match="entries"):
        minifloat.kv_decode(v, "mxfp8")
    with pytest.raises(ValueError, match=r"entries.*\(2, 100\).*528"):
        minifloat.kv_decode(np.zeros((2, 100), np.uint8), "mxfp8")
    with pytest.raises(ValueError, match="528"):
        minifloat.kv_decode(np.zeros(600, np.uint8), "mxfp8")
    cache = minifloat.KvCache("mxfp8", 2, 1)
    with pytest.raises(ValueError, match=r"\(2, 512\).*\(3,\)"):
        cache.write(v, [0, 1, 0])
    with pytest.raises(ValueError, match="5"):
        cache.write(v, [0, 5])
    with pytest.raises(TypeError, match="slots"):
        cache.read([0.5])
    with pytest.raises(ValueError, match="page size"):
        minifloat.KvCache("mxfp8", 0, 1)
