"""Against gguf-py's MXFP4 quantizer (the `gguf` package, llama.cpp's Python reference), through minifloat's ggml
profile and layout: 17-byte blocks, the ue8m0 scale then 16 bytes with element j | element j+16 << 4."""
import numpy as np
import pytest

import minifloat
from conftest import assert_same, need


@pytest.fixture(scope="module")
def gguf():
    return need("gguf")


def inputs(seed):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((64, 256)) * np.exp2(rng.integers(-30, 30, (64, 1)))).astype(np.float32)
    x[1, :32] = 0  # zero block
    x[2, :32] = -np.float32(1e-30) * (np.arange(32) % 2)  # tiny negatives: ggml never stores -0
    x[3, :32] = np.tile(np.float32([6, 5, 3.5, 2.5, 1.75, 1.25, 0.75, 0.25]), 4)  # ties: ggml goes to the smaller
    x[4, :32] = -x[3, :32]
    return x


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_mxfp4_matches_gguf(gguf, seed):
    x = inputs(seed)
    expected = gguf.quants.quantize(x, gguf.GGMLQuantizationType.MXFP4)
    q = minifloat.quantize(x, "mxfp4", profile="ggml", layout="ggml")
    assert q.codes.shape == (64, 8, 17)
    assert_same(q.codes.reshape(-1), np.asarray(expected).reshape(-1), what="ggml MXFP4 blocks")
    # and gguf reads our blocks back to what minifloat's dequantize gives
    back = gguf.quants.dequantize(q.codes.reshape(64, -1), gguf.GGMLQuantizationType.MXFP4)
    assert_same(q.dequantize().view(np.uint32), back.astype(np.float32).view(np.uint32), what="dequantized")
