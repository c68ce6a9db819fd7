"""Against PyTorch's own casts (torch 2.15, CPU), and torch's dtypes for minifloat's codes.

torch's casts differ from ml_dtypes (the default of docs/spec.md#encode) in documented ways, each pinned here on its own
inputs so that any other difference fails:
  * float8_e4m3fn: torch saturates finite overflow and +-Inf to +-448 (= minifloat overflow="saturate");
  * float8_e5m2: NaN -> 0x7F / 0xFF (minifloat: 0x7E / 0xFE, as ml_dtypes); bfloat16: NaN -> other NaN codes;
  * float8_e8m0fnu: +-0 -> 0x00 and negatives -> the code of |x| (minifloat and ml_dtypes: 0xFF, NaN).
"""
import numpy as np
import pytest

import minifloat
from conftest import ALL_16, F32_GRID, assert_same, need


@pytest.fixture(scope="module")
def torch():
    return need("torch")


def torch_codes(t, torch):
    width = {1: torch.uint8, 2: torch.int16, 4: torch.int32}[t.element_size()]
    return t.view(width).numpy().view({1: np.uint8, 2: np.uint16, 4: np.uint32}[t.element_size()])


def sources(torch):
    return {
        "f32": (F32_GRID, torch.from_numpy(F32_GRID.view(np.float32))),
        "bf16": (ALL_16, torch.from_numpy(ALL_16.view(np.int16)).view(torch.bfloat16)),
        "f16": (ALL_16, torch.from_numpy(ALL_16.view(np.int16)).view(torch.float16)),
    }


# Identity casts (bf16 -> bf16, f16 -> f16) are left out: torch keeps NaN payloads there; see test_ml_dtypes.
@pytest.mark.parametrize("fmt, source", [(f, s) for f in ("e4m3", "e5m2", "bf16", "f16", "ue8m0")
                                         for s in ("f32", "bf16", "f16") if f != s])
def test_encode_matches_torch_cast(torch, fmt, source):
    bits, t = sources(torch)[source]
    td = {"e4m3": torch.float8_e4m3fn, "e5m2": torch.float8_e5m2, "bf16": torch.bfloat16, "f16": torch.float16,
          "ue8m0": torch.float8_e8m0fnu}[fmt]
    expected = torch_codes(t.to(td), torch)
    overflow = "saturate" if fmt == "e4m3" else "default"
    got = minifloat.encode(t, fmt, overflow=overflow)
    assert got.dtype == td  # torch in, torch out, in torch's own dtype
    actual = torch_codes(got, torch)
    values = t.float().numpy()
    allowed = np.zeros(values.shape, bool)
    if fmt in ("e5m2", "bf16", "f16"):
        nan = np.isnan(values)
        # where torch's NaN differs, it is still a NaN of the format
        assert np.isnan(torch.from_numpy(expected[nan].view({1: np.uint8, 2: np.int16}[expected.itemsize]))
                        .view(td).float().numpy()).all()
        allowed = nan
    if fmt == "ue8m0":
        special = (values <= 0) & ~np.isnan(values)  # zeros and negatives
        assert_same(expected[special], minifloat.encode(np.abs(values[special]), "ue8m0") * (values[special] != 0),
                    bits[special], "torch's e8m0 of zeros (0x00) and negatives (|x|)")
        allowed = special
    assert_same(actual, expected, bits, f"encode {source} -> {fmt} vs torch", allowed)


@pytest.mark.parametrize("fmt", ["e4m3", "e5m2", "bf16", "f16", "ue8m0"])
def test_decode_matches_torch(torch, fmt):
    n = 1 << (16 if fmt in ("bf16", "f16") else 8)
    codes = np.arange(n, dtype=np.uint32).astype(np.uint16 if n > 256 else np.uint8)
    td = {"e4m3": torch.float8_e4m3fn, "e5m2": torch.float8_e5m2, "bf16": torch.bfloat16, "f16": torch.float16,
          "ue8m0": torch.float8_e8m0fnu}[fmt]
    view = minifloat.decode(codes, fmt, dtype=td)  # a torch view of the codes, no copy
    assert view.dtype == td and np.shares_memory(torch_codes(view, torch), codes)
    expected = view.float().numpy()
    actual = minifloat.decode(view, fmt)  # torch tensors of the format are codes
    nan = np.isnan(expected)
    assert_same(np.isnan(actual), nan, codes, f"decode {fmt}: NaN codes")
    assert_same(actual.view(np.uint32)[~nan], expected.view(np.uint32)[~nan], codes[~nan], f"decode {fmt} vs torch")
    as_torch = minifloat.decode(codes, fmt, dtype=torch.float32)
    assert isinstance(as_torch, torch.Tensor) and as_torch.dtype == torch.float32


def test_float4_e2m1fn_x2_nibble_order(torch):
    # docs/spec.md#packing: element 2i in the low nibble. 0.5 is code 0x1, 6.0 is 0x7, -1.0 is 0xA, 3.0 is 0x5.
    codes = minifloat.encode(np.float32([[0.5, 6.0, -1.0, 3.0]]), "e2m1")
    packed = minifloat.decode(codes, "e2m1", dtype=torch.float4_e2m1fn_x2)
    assert packed.dtype == torch.float4_e2m1fn_x2 and packed.shape == (1, 2)
    assert packed.view(torch.uint8).tolist() == [[0x71, 0x5A]]
    # the same bytes as torchao's packing of its own e2m1 codes (the producer torch's fp4 kernels consume)
    kernels = need("torchao.prototype.mx_formats.kernels")
    x = torch.randn(16, 64) * 3
    theirs = kernels.pack_uint4(kernels.f32_to_f4_unpacked(x))
    q = minifloat.quantize(x, "e2m1-1x64-f32")  # any scale: compare packing of the same codes
    ours_codes = minifloat.encode(x, "e2m1")
    assert_same(minifloat.decode(ours_codes, "e2m1", dtype=torch.float4_e2m1fn_x2).view(torch.uint8).numpy(),
                theirs.view(torch.uint8).numpy(), what="packed e2m1 vs torchao pack_uint4")
    assert q.codes_as(torch.float4_e2m1fn_x2).shape == (16, 32)


def test_quantized_tensor_hands_codes_to_torch(torch):
    x = torch.randn(32, 128)
    q = minifloat.quantize(x, "mxfp4")
    codes, scales = q.codes_as(torch.float4_e2m1fn_x2), q.scales_as(torch.float8_e8m0fnu)
    assert codes.shape == (32, 64) and scales.shape == (32, 4) and scales.dtype == torch.float8_e8m0fnu
    # torch decodes the e8m0 scales to the same powers of two
    assert_same(scales.float().numpy(), 2.0 ** (q.scales.astype(np.float64) - 127), what="e8m0 scales via torch")
    d = q.dequantize(torch.bfloat16)
    assert d.dtype == torch.bfloat16 and d.shape == (32, 128)
    assert_same(q.dequantize(torch.float32).numpy(), q.dequantize())
    e = minifloat.quantize(x.to(torch.bfloat16), "mxfp8")
    assert e.codes_as(torch.float8_e4m3fn).dtype == torch.float8_e4m3fn
    assert isinstance(minifloat.fake_quantize(x, "nvfp4"), torch.Tensor)
    assert isinstance(minifloat.rotate(x, 128), torch.Tensor)
