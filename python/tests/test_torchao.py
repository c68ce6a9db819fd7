"""Against torchao's MX (FLOOR, RCEIL, EVEN) and NVFP4 quantizers on the CPU, through minifloat's torchao profile.

torchao 0.18's eager CPU paths (prototype/mx_formats/mx_tensor.py to_mx, nvfp4_tensor.py nvfp4_quantize) agree with
minifloat bit for bit on ordinary tensors (checked below on wide-range data with zero blocks and exact ties). They
differ on two kinds of edge blocks, each pinned by a strict xfail so that a change on either side shows up:
  1. blocks whose ue8m0 scale clamps to 0x00 (2^-127): torchao divides the elements by 2^-126 (FLOOR: scale_fp32 is
     clamped to F32_MIN_NORMAL) or multiplies them by 1.0 (RCEIL: rcp_fp32 = 1 when the exponent is 0);
  2. blocks holding +-Inf: torchao gives a finite scale (FLOOR: the exponent field of Inf, 128, minus emax; RCEIL:
     0xFE) and saturated elements; minifloat gives the NaN scale 0xFF (docs/spec.md#special-blocks);
The torchao profile follows torchao's clamp of NVFP4 block scales to E4M3_EPS = 2^-6 (code 0x08, also for all-zero
blocks), where the ocp profile rounds onto the ue4m3 subnormals; test_nvfp4_tiny_block_scale pins it.
"""
import numpy as np
import pytest

import minifloat
from conftest import assert_same, need


@pytest.fixture(scope="module")
def torch():
    return need("torch")


@pytest.fixture(scope="module")
def ao():
    need("torchao")
    from torchao.prototype.mx_formats import mx_tensor, nvfp4_tensor
    from torchao.prototype.mx_formats.config import ScaleCalculationMode

    return mx_tensor, nvfp4_tensor, ScaleCalculationMode


MX = {"mxfp8": "float8_e4m3fn", "mxfp8-e5m2": "float8_e5m2", "mxfp4": "float4_e2m1fn_x2",
      "mxfp6-e2m3": "fp6_e2m3", "mxfp6-e3m2": "fp6_e3m2"}
MODES = {"FLOOR": None, "RCEIL": "rceil", "EVEN": "even"}


def wide_tensor(torch, rows=128, cols=1024, seed=0):
    """Normal values with rows scaled over 2^-40 .. 2^40, some all-zero blocks, and exact e2m1/e4m3 ties."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(rows, cols, generator=g) * torch.exp2(torch.randint(-40, 40, (rows, 1), generator=g).float())
    x[3, 64:96] = 0
    x[5, 0:32] = -0.0
    x[7, 0:32] = torch.tensor([6.0, 5.0, 3.5, 2.5, 1.75, 1.25, 0.75, 0.25] * 4)  # e2m1 ties at scale 1
    x[9, 32:64] = torch.tensor([448.0, 464.0, 432.0, 416.0] * 8)  # e4m3 ties near the top at scale 1
    return x


def elem_dtype(torch, name):
    return getattr(torch, name, name)  # fp6 element types are strings in torchao


def torchao_mx(torch, ao, x, scheme, mode):
    mx_tensor, _, modes = ao
    scales, data = mx_tensor.to_mx(x, elem_dtype(torch, MX[scheme]), 32, getattr(modes, mode))
    return scales.view(torch.uint8).numpy(), data.view(torch.uint8).numpy()


def ours_mx(x, scheme, mode):
    # torchao keeps fp6 unpacked, one code per byte
    layout = "unpacked" if scheme.startswith("mxfp6") else "packed"
    return minifloat.quantize(x, scheme, rule=MODES[mode], profile="torchao", layout=layout)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("scheme", MX)
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_mx_matches_torchao(torch, ao, scheme, mode, dtype):
    x = wide_tensor(torch).to(getattr(torch, dtype))
    scales, codes = torchao_mx(torch, ao, x, scheme, mode)
    q = ours_mx(x, scheme, mode)
    assert_same(q.scales, scales, what=f"{scheme} {mode} scales (ue8m0 codes)")
    assert_same(q.codes, codes, what=f"{scheme} {mode} element codes")


@pytest.mark.parametrize("scheme", ["nvfp4", "fp4-e4m3-16"])
@pytest.mark.parametrize("scale", [1.0, 1e-2, 1e3])
def test_nvfp4_matches_torchao(torch, ao, scheme, scale):
    _, nv, _ = ao
    g = torch.Generator().manual_seed(1)
    x = torch.randn(256, 1024, generator=g) * scale
    x[2, 0:16] = 0
    pts = nv.per_tensor_amax_to_scale(x.abs().max()) if scheme == "nvfp4" else None
    scales, codes = nv.nvfp4_quantize(x, 16, pts)
    q = minifloat.quantize(x, scheme, profile="torchao")
    if scheme == "nvfp4":
        assert q.tensor_scale == pts.item()
    assert_same(q.scales.reshape(-1), scales.view(torch.uint8).numpy().reshape(-1), what=f"{scheme} scales")
    assert_same(q.codes, codes.view(torch.uint8).numpy(), what=f"{scheme} codes")


def _edge(torch, amax):
    g = torch.Generator().manual_seed(2)
    b = (torch.rand(2, 32, generator=g) * 2 - 1) * amax
    b[:, 5] = amax
    return b.float()


@pytest.mark.xfail(strict=True, raises=AssertionError, reason="torchao divides by 2^-126 (FLOOR) or 1.0 (RCEIL) where the scale is 2^-127")
@pytest.mark.parametrize("mode", ["FLOOR", "RCEIL"])
def test_mx_smallest_scale_block(torch, ao, mode):
    x = _edge(torch, 2.0**-125)
    scales, codes = torchao_mx(torch, ao, x, "mxfp4", mode)
    q = ours_mx(x, "mxfp4", mode)
    assert_same(q.scales, scales, what="scales")
    assert_same(q.codes, codes, what="codes")


@pytest.mark.xfail(strict=True, raises=AssertionError, reason="torchao gives blocks with +-Inf a finite scale; minifloat NaN (0xFF)")
@pytest.mark.parametrize("mode", ["FLOOR", "RCEIL"])
def test_mx_inf_block(torch, ao, mode):
    x = torch.ones(2, 32)
    x[:, 3] = float("inf")
    scales, _ = torchao_mx(torch, ao, x, "mxfp8", mode)
    assert_same(ours_mx(x, "mxfp8", mode).scales, scales, what="scales")


def test_nvfp4_tiny_block_scale(torch, ao):
    """Block scales below 2^-6 and an all-zero block: torchao's clamp to E4M3_EPS (0x08), in scales and codes."""
    _, nv, _ = ao
    x = torch.randn(4, 64) * 0.01
    x[1, 16:32] = 0
    scales, codes = nv.nvfp4_quantize(x, 16, None)
    q = minifloat.quantize(x, "fp4-e4m3-16", profile="torchao")
    assert (scales.view(torch.uint8).numpy() == 0x08).any()  # the clamp is exercised
    assert_same(q.scales.reshape(-1), scales.view(torch.uint8).numpy().reshape(-1), what="scales")
    assert_same(q.codes, codes.view(torch.uint8).numpy(), what="codes")
