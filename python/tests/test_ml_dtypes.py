"""Bit-exact with ml_dtypes' astype (numpy's for f16) for every format ml_dtypes has (docs/spec.md#encode).

Inputs: the f32 grid of the C++ tests, and every bf16 and every f16 bit pattern. The one deliberate difference is
NaN payloads where the reference keeps them (numpy's f32 -> f16, and the identity casts bf16 -> bf16, f16 -> f16;
docs/encoding.md): minifloat gives the canonical quiet NaN (bf16 0x7FC0, f16 0x7E00) with the input's sign.
"""
import warnings

import ml_dtypes
import numpy as np
import pytest

import minifloat
from conftest import ALL_16, F32_GRID, assert_same

DTYPES = {
    "bf16": ml_dtypes.bfloat16, "f16": np.float16, "e4m3": ml_dtypes.float8_e4m3fn, "e5m2": ml_dtypes.float8_e5m2,
    "e3m2": ml_dtypes.float6_e3m2fn, "e2m3": ml_dtypes.float6_e2m3fn, "e2m1": ml_dtypes.float4_e2m1fn,
    "ue8m0": ml_dtypes.float8_e8m0fnu, "e4m3fnuz": ml_dtypes.float8_e4m3fnuz, "e5m2fnuz": ml_dtypes.float8_e5m2fnuz,
    "e4m3b11fnuz": ml_dtypes.float8_e4m3b11fnuz, "e3m4": ml_dtypes.float8_e3m4, "e4m3ieee": ml_dtypes.float8_e4m3,
}
SOURCES = {"f32": (F32_GRID, np.float32), "bf16": (ALL_16, ml_dtypes.bfloat16), "f16": (ALL_16, np.float16)}


def storage(dtype):
    return np.uint8 if np.dtype(dtype).itemsize == 1 else np.uint16


def expected_codes(values, dtype):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # overflow and NaN casts are the point
        return values.astype(dtype).view(storage(dtype))


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("fmt", DTYPES)
def test_encode_matches_astype(fmt, source):
    bits, src_dtype = SOURCES[source]
    values = bits.view(src_dtype)
    expected = expected_codes(values, DTYPES[fmt])
    actual = minifloat.encode(values, fmt)
    assert actual.dtype == storage(DTYPES[fmt]) and actual.shape == values.shape
    allowed = None
    if fmt in ("f16", "bf16"):
        # The one deliberate difference: NaN payloads (docs/encoding.md). Every NaN must still give the canonical
        # NaN with the input's sign, and the reference's answer must be a NaN too.
        wide = values.astype(np.float32)
        nan = np.isnan(wide)
        quiet = 0x7E00 if fmt == "f16" else 0x7FC0
        canonical = np.where(np.signbit(wide), 0x8000 | quiet, quiet).astype(np.uint16)
        assert_same(actual[nan], canonical[nan], bits[nan], f"{fmt} NaN codes")
        assert np.isnan(expected[nan].view(DTYPES[fmt]).astype(np.float32)).all()
        allowed = nan
    assert_same(actual, expected, bits, f"encode {source} -> {fmt}", allowed)


@pytest.mark.parametrize("fmt", DTYPES)
def test_decode_matches_astype(fmt):
    dtype = DTYPES[fmt]
    codes = np.arange(1 << (8 * np.dtype(dtype).itemsize if fmt in ("bf16", "f16") else
                              {"e3m2": 6, "e2m3": 6, "e2m1": 4}.get(fmt, 8)), dtype=np.uint32).astype(storage(dtype))
    expected = codes.view(dtype).astype(np.float32).view(np.uint32)
    actual = minifloat.decode(codes, fmt).view(np.uint32)
    assert_same(actual, expected, codes, f"decode {fmt} (f32 bits)")
    as64 = minifloat.decode(codes, fmt, dtype=np.float64)
    assert_same(np.isnan(as64) | (as64 == actual.view(np.float32)), np.ones(codes.size, bool), codes, "f64 decode")


@pytest.mark.parametrize("fmt", DTYPES)
def test_own_dtype_is_a_view(fmt):
    dtype = DTYPES[fmt]
    x = np.linspace(-3, 3, 64, dtype=np.float32).reshape(8, 8)
    codes = minifloat.encode(x, fmt)
    viewed = minifloat.decode(codes, fmt, dtype=dtype)
    assert viewed.dtype == np.dtype(dtype) and viewed.shape == (8, 8)
    assert np.shares_memory(viewed, codes)
    # and the ml_dtypes array is accepted back as codes of that format, and as values by encode
    assert_same(minifloat.decode(viewed, fmt).view(np.uint32),
                viewed.astype(np.float32).view(np.uint32), None, "decode of an ml_dtypes array")
    if fmt == "bf16":
        assert_same(minifloat.encode(viewed, "e4m3"), viewed.astype(ml_dtypes.float8_e4m3fn).view(np.uint8))


def test_non_contiguous_and_3d_inputs():
    x = np.random.default_rng(0).standard_normal((4, 6, 10)).astype(np.float32)[:, ::2, 1:]
    assert_same(minifloat.encode(x, "e4m3"), x.astype(ml_dtypes.float8_e4m3fn).view(np.uint8))
    assert minifloat.encode(x, "e4m3").shape == x.shape
