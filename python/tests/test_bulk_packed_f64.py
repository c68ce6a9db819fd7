"""encode from float64 (rounded once), decode into float64, and packed FP4 / FP6 codes in and out (the nibble order
torch.float4_e2m1fn_x2 and torchao use; 6-bit groups as docs/spec.md#packing).

ml_dtypes 0.6's astype from float64 into float8 / float6 / float4 / bfloat16 goes through float32 and so rounds twice
(float64(1.0625 + 2**-40).astype(float8_e4m3fn) is 1.0, not 1.125): it is the reference only for values that are
float32 values; the others are checked against nearest-even on ml_dtypes' grid of the format's values."""
import ml_dtypes
import numpy as np
import pytest
from conftest import assert_same, need

import minifloat

NARROW = {"e4m3": ml_dtypes.float8_e4m3fn, "e5m2": ml_dtypes.float8_e5m2, "e3m2": ml_dtypes.float6_e3m2fn,
          "e2m3": ml_dtypes.float6_e2m3fn, "e2m1": ml_dtypes.float4_e2m1fn, "ue8m0": ml_dtypes.float8_e8m0fnu,
          "bf16": ml_dtypes.bfloat16, "f16": np.float16}


def f64_inputs(fmt):
    """Every midpoint between neighbouring values of fmt and the f64 values just above and below it (which round to
    the midpoint in f32: a cast through f32 rounds them twice), and random f64 values around fmt's range."""
    dt = NARROW[fmt]
    bits = np.arange(1 << (8 * np.dtype(dt).itemsize), dtype=np.uint32).astype(np.uint8 if np.dtype(dt).itemsize == 1
                                                                               else np.uint16)
    with np.errstate(invalid="ignore"):
        v = np.unique(bits.view(dt).astype(np.float64))
    v = v[np.isfinite(v)]
    mid = (v[1:] + v[:-1]) / 2
    tiny = np.abs(mid) * 2.0 ** -40
    rng = np.random.default_rng(3)
    top = float(np.max(v))
    rand = rng.uniform(-1.2, 1.2, 20000) * top * 2.0 ** -rng.integers(0, 30, 20000)
    return np.concatenate([v, mid, mid + tiny, mid - tiny, np.nextafter(mid, np.inf), np.nextafter(mid, -np.inf),
                           rand, [0.0, -0.0, 1e300, -1e300, 1e-300]])


def nearest_even_on_grid(x, dt):
    """x (finite, |x| <= max) rounded once to nearest, ties to the even code, among the values of signed format dt
    (its values enumerated by ml_dtypes; midpoints of neighbours are exact in float64)."""
    storage = np.uint8 if np.dtype(dt).itemsize == 1 else np.uint16
    with np.errstate(invalid="ignore"):
        grid = np.arange(1 << (8 * np.dtype(dt).itemsize), dtype=np.uint32).astype(storage).view(dt).astype(np.float64)
    grid = np.unique(grid[np.isfinite(grid) & (grid >= 0)])
    odd = grid.astype(dt).view(storage) & 1
    a = np.abs(x)
    i = np.searchsorted(grid, a, side="right") - 1
    hi = grid[np.minimum(i + 1, grid.size - 1)]
    mid = (grid[i] + hi) / 2
    up = ((a > mid) | ((a == mid) & (odd[i] == 1))) & (i + 1 < grid.size)
    return np.copysign(grid[i + up], x).astype(dt).view(storage)


@pytest.mark.parametrize("fmt", sorted(NARROW))
def test_float64_rounds_once(fmt):
    x = f64_inputs(fmt)
    dt = NARROW[fmt]
    storage = np.uint8 if np.dtype(dt).itemsize == 1 else np.uint16
    got = minifloat.encode(x, fmt)
    with np.errstate(over="ignore", invalid="ignore"):
        f32 = x.astype(np.float32).astype(np.float64) == x
        want = x[f32].astype(dt)  # exact in float32: ml_dtypes rounds these once
    assert_same(got[f32], want.view(storage), x[f32], what=f"float64 -> {fmt}, float32 values, vs ml_dtypes")
    if fmt != "ue8m0":  # (no zero and no sign: its grid rule is the scalar codec's, tested in C++)
        top = float(ml_dtypes.finfo(dt).max)
        inside = np.abs(x) <= top
        assert_same(got[inside], nearest_even_on_grid(x[inside], dt), x[inside],
                    what=f"float64 -> {fmt} vs nearest even on the grid")


def test_float64_just_above_a_tie_rounds_up():
    # 1.0625 is the tie between e4m3's 1.0 (0x38) and 1.125 (0x39); 2.5 between e2m1's 2.0 (0x4) and 3.0 (0x5).
    assert minifloat.encode(np.float64([1.0625 + 2.0 ** -40, 1.0625]), "e4m3").tolist() == [0x39, 0x38]
    assert minifloat.encode(np.float64([2.5 + 2.0 ** -30, -(2.5 + 2.0 ** -30), 2.5]), "e2m1").tolist() == [5, 13, 4]


@pytest.mark.parametrize("fmt", sorted(NARROW))
def test_decode_into_float64_as_ml_dtypes(fmt):
    dt = NARROW[fmt]
    storage = np.uint8 if np.dtype(dt).itemsize == 1 else np.uint16
    codes = np.arange(min(1 << (8 * np.dtype(dt).itemsize), 1 << 16), dtype=np.uint32).astype(storage)
    if dt in (ml_dtypes.float4_e2m1fn, ml_dtypes.float6_e2m3fn, ml_dtypes.float6_e3m2fn):
        codes = codes[: 1 << {ml_dtypes.float4_e2m1fn: 4}.get(dt, 6)]
    got = minifloat.decode(codes, fmt, dtype=np.float64)
    assert got.dtype == np.float64
    with np.errstate(invalid="ignore"):
        assert np.array_equal(got, codes.view(dt).astype(np.float64), equal_nan=True)


def test_e2m1_packed_as_torch_float4_e2m1fn_x2_and_torchao():
    torch = need("torch")
    kernels = need("torchao.prototype.mx_formats.kernels")
    x = torch.randn(16, 64) * 3
    got = minifloat.encode(x, "e2m1", packed=True)
    assert got.dtype == torch.float4_e2m1fn_x2 and got.shape == (16, 32)
    theirs = kernels.pack_uint4(kernels.f32_to_f4_unpacked(x))
    assert_same(got.view(torch.uint8).numpy(), theirs.view(torch.uint8).numpy(), what="packed e2m1 vs torchao")
    back = minifloat.decode(got, "e2m1", packed=True)
    assert back.shape == (16, 64)
    assert np.array_equal(back, x.numpy().astype(ml_dtypes.float4_e2m1fn).astype(np.float32))
    with pytest.raises(ValueError, match="packed=True"):
        minifloat.decode(got, "e2m1")


def test_packed_golden_bytes_typed_by_hand():
    # e2m1: 1.0 = 0x2, -0.5 = 0x9, 6.0 = 0x7; the odd last nibble padded with 0.
    assert minifloat.encode(np.float32([1.0, -0.5, 6.0]), "e2m1", packed=True).tolist() == [0x92, 0x07]
    # e2m3: 1.0 = 8, 2.0 = 16, -1.0 = 40, 0.125 = 1 -> 8 | 16 << 6 | 40 << 12 | 1 << 18 = 0x068408; 7.5 = 31 alone.
    packed = minifloat.encode(np.float64([1.0, 2.0, -1.0, 0.125, 7.5]), "e2m3", packed=True)
    assert packed.tolist() == [0x08, 0x84, 0x06, 0x1F, 0x00, 0x00]
    assert minifloat.decode(packed, "e2m3", packed=True, count=5).tolist() == [1.0, 2.0, -1.0, 0.125, 7.5]


@pytest.mark.parametrize("fmt", ["e2m1", "e2m3", "e3m2"])
@pytest.mark.parametrize("shape", [(7,), (3, 8), (5, 12), (2, 3, 5)])
def test_packed_round_trip_equals_unpacked(fmt, shape):
    rng = np.random.default_rng(1)
    x = (rng.standard_normal(shape) * 4).astype(np.float32)
    codes = minifloat.encode(x, fmt)
    bits = 4 if fmt == "e2m1" else 6
    rows = shape[-1] * bits % 8 == 0  # packed along the last dimension, else flat
    for src in (x, x.astype(np.float64), x.astype(ml_dtypes.bfloat16)):
        packed = minifloat.encode(src, fmt, packed=True, rounding="stochastic", seed=4)
        flat = (x.size + 3) // 4 * 3 if bits == 6 else (x.size + 1) // 2  # whole bytes / 3-byte groups
        assert packed.shape == (shape[:-1] + (shape[-1] * bits // 8,) if rows else (flat,))
        if rows:
            back = minifloat.decode(packed, fmt, packed=True)
        else:
            back = minifloat.decode(packed, fmt, packed=True, count=x.size)
        want = minifloat.decode(minifloat.encode(src, fmt, rounding="stochastic", seed=4), fmt)
        assert np.array_equal(back.reshape(shape), want)
    packed = minifloat.encode(x, fmt, packed=True)
    n = x.size
    back = minifloat.decode(packed, fmt, packed=True, count=n, dtype=np.float64)
    assert np.array_equal(back, minifloat.decode(codes, fmt, dtype=np.float64).reshape(-1))
    out = np.empty(packed.shape, dtype=np.uint8)
    assert minifloat.encode(x, fmt, packed=True, out=out) is out and np.array_equal(out, packed)


def test_packed_errors_name_the_argument():
    x = np.ones(5, dtype=np.float32)
    with pytest.raises(ValueError, match="packed: only 4- and 6-bit"):
        minifloat.encode(x, "e4m3", packed=True)
    packed = minifloat.encode(x, "e2m3", packed=True)
    with pytest.raises(ValueError, match="codes: 6 bytes given, 7 e2m3 codes pack into 6"[:20]):
        minifloat.decode(packed, "e2m3", packed=True, count=9)
    with pytest.raises(ValueError, match="pass count="):
        minifloat.decode(np.zeros(4, dtype=np.uint8), "e2m3", packed=True)
    with pytest.raises(ValueError, match="count: only with packed=True"):
        minifloat.decode(np.zeros(4, dtype=np.uint8), "e2m3", count=4)
    with pytest.raises(ValueError, match="out: shape"):
        minifloat.encode(x, "e2m1", packed=True, out=np.empty(5, dtype=np.uint8))
