"""Against DeepSeek-V3's act_quant (inference/kernel.py), written here in numpy from docs/spec.md#block-scaling:
per 1 x 128 block, amax = max(|x|) clamped to >= 1e-4; s = amax / 448 (f32); with scale_fmt "ue8m0",
s = 2^ceil(log2 s) (exactly, as fast_log2_ceil); y = x / s cast to e4m3 with saturation (cvt.rn.satfinite)."""
import ml_dtypes
import numpy as np
import pytest

import minifloat
from conftest import assert_same


def act_quant(x: np.ndarray, block: int = 128, scale_fmt=None):
    """(e4m3 codes as uint8, scales as float32 [rows, cols / block])."""
    rows, cols = x.shape
    b = x.reshape(rows, cols // block, block).astype(np.float32)
    amax = np.maximum(np.abs(b).max(axis=-1, keepdims=True), np.float32(1e-4))
    s = (amax / np.float32(448)).astype(np.float32)
    if scale_fmt == "ue8m0":
        m, e = np.frexp(s)  # s = m * 2^e, m in [0.5, 1): ceil(log2 s) = e - 1 exactly when m == 0.5
        s = np.ldexp(np.float32(1), np.where(m == 0.5, e - 1, e)).astype(np.float32)
    y = np.clip(b / s, -448, 448).astype(np.float32)
    codes = y.astype(ml_dtypes.float8_e4m3fn).view(np.uint8).reshape(rows, cols)
    return codes, s.reshape(rows, cols // block)


def activations(seed):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((32, 1024)) * np.exp2(rng.integers(-20, 12, (32, 1)))).astype(np.float32)
    x[0, :128] = 0  # zero block: amax clamps to 1e-4
    x[1, :128] = np.float32(3e-6) * rng.standard_normal(128).astype(np.float32)  # below the clamp
    x[2, 5] = 448 * 2.0**3  # amax / 448 an exact power of two
    x[3, 7] = np.nextafter(np.float32(448 * 2.0**3), np.float32(1e9))  # just above: ceil goes up
    return x


@pytest.mark.parametrize("seed", [0, 1])
def test_act_quant_ue8m0(seed):
    x = activations(seed)
    codes, scales = act_quant(x, scale_fmt="ue8m0")
    q = minifloat.quantize(x, "fp8-1x128", profile="deepseek")
    assert q.rule == "rceil" and q.scales.shape == scales.shape
    assert_same(q.codes, codes, what="act_quant e4m3 codes")
    assert_same(q.scales_as(ml_dtypes.float8_e8m0fnu).astype(np.float32).view(np.uint32), scales.view(np.uint32),
                what="act_quant ue8m0 scales")


@pytest.mark.parametrize("seed", [0, 1])
def test_act_quant_f32_scales(seed):
    x = activations(seed)
    codes, scales = act_quant(x)
    q = minifloat.quantize(x, "e4m3-1x128-f32", profile="deepseek")
    assert_same(q.codes, codes, what="act_quant e4m3 codes")
    assert_same(q.scales.view(np.uint32), scales.view(np.uint32), what="act_quant f32 scales")
    # dequantized value = code * s
    assert_same(q.dequantize().view(np.uint32),
                (codes.view(ml_dtypes.float8_e4m3fn).astype(np.float32).reshape(32, 8, 128) * scales[..., None])
                .astype(np.float32).reshape(32, 1024).view(np.uint32), what="dequantized")
