"""vLLM's NVFP4 KV cache entries and pages (docs/kv.md#vllm-nvfp4) against independent references.

- vllm-nvfp4 entries against ModelOpt's NVFP4QTensor.quantize with the per-tensor scale given as
  weights_scaling_factor_2 (block scale e4m3(amax / (6 * scale)), elements x / (S * scale) rounded to E2M1; its
  clamp of block scales to >= 2^-9 is never reached by these values).
- vllm-nvfp4-4over6 entries against vLLM's FOUR_OVER_SIX store rule (PR #45187, csrc/libtorch_stable/
  nvfp4_kv_cache_kernels.cu), re-stated here in our own words with torch: the M=6 and M=4 block scales
  e4m3(amax / M / scale) (saturated to 448, as the kernel's satfinite conversion), the elements rounded to E2M1, the
  squared errors, and M=4 only when strictly smaller.
- Pages against a numpy rendering of vLLM's page: [K_data | K_scale | V_data | V_scale], each [heads, block_size, ...]
  and the V scales in the trtllm-gen order the kernel's comment gives: [T//4, 4, 4, S//4] permuted (0, 2, 3, 1).
"""
import numpy as np
import pytest

import minifloat
from conftest import assert_same

torch = pytest.importorskip("torch")


def unpack(packed):
    return np.stack([packed & 0xF, packed >> 4], axis=-1).reshape(packed.shape[:-1] + (-1,))


def random_vectors(seed, n, dim):
    rng = np.random.default_rng(seed)
    x = rng.standard_t(5, size=(n, dim)) * np.exp2(rng.integers(-3, 4, size=(n, 1)))
    return x.astype(np.float32)


@pytest.mark.parametrize("dim", [64, 128, 256])
@pytest.mark.parametrize("scale", [1.0, 0.03125, 0.37])
def test_nvfp4_entries_match_modelopt(dim, scale):
    from modelopt.torch.quantization.qtensor.nvfp4_tensor import NVFP4QTensor

    x = random_vectors(dim, 512, dim)
    e = minifloat.vllm_kv_encode(x, "vllm-nvfp4", scale)
    assert e.shape == (512, dim // 2 + dim // 16)
    q, block_scales, _ = NVFP4QTensor.quantize(torch.from_numpy(x), 16,
                                               weights_scaling_factor_2=torch.tensor(scale, dtype=torch.float32))
    assert_same(e[:, dim // 2:], block_scales.view(torch.uint8).numpy().reshape(512, -1), what="block scales")
    assert_same(e[:, :dim // 2], q._quantized_data.numpy().reshape(512, -1), what="e2m1 bytes")
    # Decoding: e2m1 x S x scale, ModelOpt's dequantize (compared as values: its table decodes code 0x8 as +0, where
    # minifloat keeps the sign of -0).
    back = minifloat.vllm_kv_decode(e, dim, "vllm-nvfp4", scale)
    ref = q.dequantize(dtype=torch.float32, scale=block_scales, double_scale=torch.tensor(scale),
                       block_sizes={-1: 16}).numpy()
    assert_same(back, ref.astype(np.float32), what="decoded values")


E2M1 = torch.tensor([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0])


def e2m1_round(v):
    """RNE onto the E2M1 grid (0.5 steps below 2, 1 below 4, 2 above), saturated to 6."""
    a = v.abs().clamp(max=6)
    r = torch.where(a < 2, torch.round(2 * a) / 2, torch.where(a < 4, torch.round(a), 2 * torch.round(a / 2)))
    return torch.sign(v) * r


def vllm_4over6(x, scale):
    """(e2m1 codes [n, dim], scale codes [n, dim/16]) of vLLM's nvfp4_4over6 store for float32 x [n, dim]."""
    xt = torch.from_numpy(x).reshape(x.shape[0], -1, 16).double()
    amax = xt.abs().amax(-1)
    best = None
    for m in (6.0, 4.0):  # M=6 first: M=4 must be strictly better
        s = (amax / m / scale).float().clamp(max=448).to(torch.float8_e4m3fn)
        d = s.double() * scale
        q = torch.where(d.unsqueeze(-1) > 0, e2m1_round(xt / d.unsqueeze(-1)), torch.zeros_like(xt))
        err = ((q * d.unsqueeze(-1) - xt) ** 2).sum(-1)
        if best is None:
            best = [q, s.view(torch.uint8), err]
        else:
            take = err < best[2]
            best = [torch.where(take.unsqueeze(-1), q, best[0]), torch.where(take, s.view(torch.uint8), best[1]), err]
    q = best[0].reshape(x.shape[0], -1).float()
    idx = (q.abs().unsqueeze(-1) == E2M1).float().argmax(-1)
    codes = idx | (torch.signbit(q).to(torch.int64) << 3)
    return codes.to(torch.uint8).numpy(), best[1].numpy()


@pytest.mark.parametrize("dim", [64, 128, 256])
@pytest.mark.parametrize("scale", [1.0, 0.25])
def test_4over6_entries_match_vllm_rule(dim, scale):
    x = random_vectors(100 + dim, 512, dim)
    e = minifloat.vllm_kv_encode(x, "vllm-nvfp4-4over6", scale)
    codes, scales = vllm_4over6(x, scale)
    assert_same(e[:, dim // 2:], scales, what="block scales")
    assert_same(unpack(e[:, :dim // 2]), codes, what="e2m1 codes")
    six = minifloat.vllm_kv_encode(x, "vllm-nvfp4", scale)[:, dim // 2:]
    assert 0 < (six != scales).mean() < 1  # both candidates are taken somewhere


def vllm_page(k_entries, v_entries, heads, block, dim, swizzle):
    """One page from entries [block, heads, full_dim] (token-major, as key/value come), rendered with reshapes."""
    half, sdim = dim // 2, dim // 16
    sides = []
    for entries, is_v in ((k_entries, False), (v_entries, True)):
        hnd = entries.reshape(block, heads, half + sdim).transpose(1, 0, 2)  # [heads, block, full_dim]
        data = hnd[:, :, :half]
        scales = hnd[:, :, half:]
        if is_v and swizzle:
            scales = scales.reshape(heads, block // 4, 4, 4, sdim // 4).transpose(0, 1, 3, 4, 2)
            scales = scales.reshape(heads, block, sdim)
        sides += [data.reshape(-1), scales.reshape(-1)]
    return np.concatenate(sides)


@pytest.mark.parametrize("swizzle", [True, False])
@pytest.mark.parametrize("fmt", ["vllm-nvfp4", "vllm-nvfp4-4over6"])
def test_pages_match_rendering(swizzle, fmt):
    heads, block, dim = 2, 8, 128
    rng = np.random.default_rng(9)
    key = rng.standard_normal((2 * block, heads, dim)).astype(np.float32)
    value = (3 * rng.standard_normal((2 * block, heads, dim))).astype(np.float32)
    slots = rng.permutation(2 * block)  # every slot of two pages, in a shuffled order
    page_bytes = minifloat.vllm_kv_page_bytes(dim, heads, block, swizzle)
    assert page_bytes == 2 * heads * block * (dim // 2 + dim // 16)
    pages = np.zeros(2 * page_bytes, np.uint8)
    minifloat.vllm_kv_write_pages(pages, key, value, slots, 0.5, 2.0, fmt, block, swizzle)
    ke = minifloat.vllm_kv_encode(key, fmt, 0.5)
    ve = minifloat.vllm_kv_encode(value, fmt, 2.0)
    order = np.argsort(slots)  # token at each slot
    for p in range(2):
        tokens = order[p * block:(p + 1) * block]
        want = vllm_page(ke[tokens], ve[tokens], heads, block, dim, swizzle)
        assert_same(pages[p * page_bytes:(p + 1) * page_bytes], want, what=f"page {p}")
    k2, v2 = minifloat.vllm_kv_read_pages(pages, slots, heads, dim, 0.5, 2.0, fmt, block, swizzle)
    assert_same(k2.view(np.uint32), minifloat.vllm_kv_decode(ke, dim, fmt, 0.5).view(np.uint32), what="key")
    assert_same(v2.view(np.uint32), minifloat.vllm_kv_decode(ve, dim, fmt, 2.0).view(np.uint32), what="value")


@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan"), float("inf")])
def test_bad_scale_is_named(bad):
    x = np.ones((1, 64), np.float32)
    with pytest.raises(ValueError, match="scale = .* is not a finite per-tensor scale > 0"):
        minifloat.vllm_kv_encode(x, "vllm-nvfp4", bad)
    pages = np.zeros(minifloat.vllm_kv_page_bytes(64, 1, 4), np.uint8)
    with pytest.raises(ValueError, match="k_scale = "):
        minifloat.vllm_kv_write_pages(pages, x.reshape(1, 1, 64), x.reshape(1, 1, 64), [0], bad, 1.0, block_size=4)
    assert not pages.any()  # nothing written


def test_bad_shapes_are_refused():
    with pytest.raises(ValueError, match="head_dim 72 is not a positive multiple of 16"):
        minifloat.vllm_kv_encode(np.ones((2, 72), np.float32))
    with pytest.raises(ValueError, match="swizzled V scales"):
        minifloat.vllm_kv_page_bytes(80, 1, 16)
    with pytest.raises(ValueError, match="unknown vLLM KV format 'nvfp4'"):
        minifloat.vllm_kv_encode(np.ones((1, 64), np.float32), "nvfp4")
    with pytest.raises(TypeError, match="pages: a C-contiguous numpy uint8 array"):
        minifloat.vllm_kv_write_pages([0] * 576, np.ones((1, 1, 64), np.float32), np.ones((1, 1, 64), np.float32),
                                      [0], block_size=4)
