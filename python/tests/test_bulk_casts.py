"""encode / decode into caller buffers (out=) and decode into float16 / bfloat16, against ml_dtypes' astype.

Every 2^16 bf16 and f16 bit pattern goes through every format ml_dtypes has and back into bf16 and f16; the codes
and the values must be ml_dtypes' bit for bit (NaN: NaN, whatever the payload).
"""
import ml_dtypes
import numpy as np
import pytest

import minifloat

DTYPES = {
    "bf16": ml_dtypes.bfloat16, "f16": np.float16, "e4m3": ml_dtypes.float8_e4m3fn, "e5m2": ml_dtypes.float8_e5m2,
    "e3m2": ml_dtypes.float6_e3m2fn, "e2m3": ml_dtypes.float6_e2m3fn, "e2m1": ml_dtypes.float4_e2m1fn,
    "ue8m0": ml_dtypes.float8_e8m0fnu,
}
ALL_16 = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
WIDE = {"bf16": ml_dtypes.bfloat16, "f16": np.float16}


def same_bits(got, want, what):
    """got and want (arrays of one 16-bit float dtype) hold the same bits, or both NaN."""
    g, w = got.view(np.uint16), want.view(np.uint16)
    nan = np.isnan(got.astype(np.float32)) & np.isnan(want.astype(np.float32))
    bad = np.flatnonzero((g != w) & ~nan)
    assert bad.size == 0, f"{what}: {bad.size} differ, first at {bad[0]}: got 0x{g[bad[0]]:04x}, want 0x{w[bad[0]]:04x}"


@pytest.mark.parametrize("source", ["bf16", "f16"])
@pytest.mark.parametrize("fmt", sorted(DTYPES))
def test_every_16_bit_input_through_every_format_and_back(fmt, source):
    values = ALL_16.view(WIDE[source])
    codes = minifloat.encode(values, fmt)
    with np.errstate(invalid="ignore"):  # NaN into a format without NaN
        want_codes = values.astype(DTYPES[fmt])
    nan = np.isnan(want_codes.astype(np.float32))
    want = want_codes.view(np.uint8 if np.dtype(DTYPES[fmt]).itemsize == 1 else np.uint16)
    assert np.array_equal(codes[~nan], want[~nan]), f"encode {source} -> {fmt}"
    assert np.all(np.isnan(minifloat.decode(codes[nan], fmt))), f"encode {source} -> {fmt}: NaN"
    for back in ("bf16", "f16"):
        got = minifloat.decode(want, fmt, dtype=WIDE[back])
        assert got.dtype == np.dtype(WIDE[back]) and got.shape == want.shape
        with np.errstate(invalid="ignore"):
            same_bits(got, want_codes.astype(WIDE[back]), f"decode {fmt} -> {back}")


@pytest.mark.parametrize("fmt", ["e4m3", "e2m1", "bf16", "ue8m0"])
def test_encode_into_out_equals_a_new_array(fmt):
    rng = np.random.default_rng(5)
    x = (rng.standard_normal((64, 48)) * 3).astype(np.float32)
    storage = np.uint16 if fmt == "bf16" else np.uint8
    out = np.full(x.shape, 0xAB, dtype=storage)
    for rounding, seed in (("nearest_even", None), ("stochastic", 11)):
        got = minifloat.encode(x, fmt, rounding=rounding, seed=seed, out=out)
        assert got is out
        assert np.array_equal(out, minifloat.encode(x, fmt, rounding=rounding, seed=seed))
    # The format's own ml_dtypes dtype is accepted as out too, and written as its codes.
    own = np.empty(x.shape, dtype=DTYPES[fmt])
    assert minifloat.encode(x, fmt, out=own) is own
    assert np.array_equal(own.view(storage), x.astype(DTYPES[fmt]).view(storage))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, ml_dtypes.bfloat16])
def test_decode_into_out_equals_a_new_array(dtype):
    codes = np.arange(256, dtype=np.uint8).reshape(16, 16)
    out = np.empty(codes.shape, dtype=dtype)
    got = minifloat.decode(codes, "e5m2", dtype=dtype, out=out)
    assert got is out
    want = codes.view(ml_dtypes.float8_e5m2).astype(dtype)
    assert np.array_equal(out.astype(np.float64), want.astype(np.float64), equal_nan=True)


def test_out_mismatches_name_the_argument():
    x = np.ones((4, 6), dtype=np.float32)
    codes = np.ones((4, 6), dtype=np.uint8)
    with pytest.raises(ValueError, match="out: shape"):
        minifloat.encode(x, "e4m3", out=np.empty((6, 4), dtype=np.uint8))
    with pytest.raises(TypeError, match="out: dtype"):
        minifloat.encode(x, "e4m3", out=np.empty((4, 6), dtype=np.uint16))
    with pytest.raises(TypeError, match="out: dtype"):
        minifloat.encode(x, "bf16", out=np.empty((4, 6), dtype=np.uint8))
    with pytest.raises(ValueError, match="out: a C-contiguous"):
        minifloat.encode(x, "e4m3", out=np.empty((6, 4), dtype=np.uint8).T)
    read_only = np.empty((4, 6), dtype=np.uint8)
    read_only.flags.writeable = False
    with pytest.raises(ValueError, match="out: the array is read-only"):
        minifloat.encode(x, "e4m3", out=read_only)
    with pytest.raises(TypeError, match="out: a numpy array"):
        minifloat.encode(x, "e4m3", out=[0] * 24)
    with pytest.raises(TypeError, match="out: dtype"):
        minifloat.decode(codes, "e4m3", out=np.empty((4, 6), dtype=np.float64))
    with pytest.raises(ValueError, match="out: shape"):
        minifloat.decode(codes, "e4m3", dtype=np.float16, out=np.empty(24, dtype=np.float16))
    with pytest.raises(TypeError, match="dtype: int32"):
        minifloat.decode(codes, "e4m3", dtype=np.int32)
