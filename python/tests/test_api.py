"""The Python API itself: arguments, errors, shapes, views, stochastic rounding, metadata."""
import importlib.metadata
import re
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import minifloat
import minifloat._core
from conftest import assert_same

RNG = np.random.default_rng(7)


def test_version_is_the_projects():
    """The version is written once, in the top CMakeLists.txt's project() line: __version__ comes from the core's
    minifloat/version.h, the installed distribution's from pyproject.toml's regex over the same line."""
    cmake = (Path(__file__).resolve().parents[2] / "CMakeLists.txt").read_text(encoding="utf-8")
    project = re.search(r"project\(minifloat\s+VERSION\s+([0-9]+\.[0-9]+\.[0-9]+)", cmake)
    assert project, "no project(minifloat VERSION x.y.z) in CMakeLists.txt"
    assert minifloat.__version__ == minifloat._core.__version__ == project.group(1)
    assert importlib.metadata.version("minifloat") == project.group(1)


def test_formats_and_schemes_metadata():
    fmts = {f["name"]: f for f in minifloat.formats()}
    assert list(fmts) == ["f32", "bf16", "f16", "e4m3", "e5m2", "e3m2", "e2m3", "e2m1", "ue8m0", "ue4m3", "e4m3fnuz",
                          "e5m2fnuz", "e4m3b11fnuz", "e3m4", "e4m3ieee", "ue5m3"]
    # docs/spec.md#formats, typed by hand
    assert (fmts["e4m3"]["max_finite"], fmts["e4m3"]["nan_code"], fmts["e4m3"]["inf_code"]) == (448.0, 0x7F, None)
    assert (fmts["e5m2"]["max_finite"], fmts["e5m2"]["inf_code"]) == (57344.0, 0x7C)
    assert (fmts["e2m1"]["max_finite"], fmts["e2m1"]["min_subnormal"], fmts["e2m1"]["has_nan"]) == (6.0, 0.5, False)
    assert fmts["ue8m0"]["min_normal"] == 2.0**-127 and fmts["ue8m0"]["has_zero"] is False
    assert (fmts["e4m3fnuz"]["specials"], fmts["e4m3fnuz"]["nan_code"], fmts["e4m3fnuz"]["max_finite"]) == \
        ("fnuz", 0x80, 240.0)
    assert (fmts["ue5m3"]["max_finite"], fmts["ue5m3"]["nan_code"], fmts["ue5m3"]["bias"]) == (114688.0, 0xFF, 15)
    schemes = {s["name"]: s for s in minifloat.schemes()}
    assert schemes["mxfp4"]["bits_per_value"] == 4.25 and schemes["mxfp4"]["block"] == (1, 32)
    assert schemes["nvfp4"]["bits_per_value"] == 4.5 and schemes["nvfp4"]["tensor_scale"] is True
    assert schemes["fp8-128x128"]["block"] == (128, 128) and schemes["fp8-1x128"]["rule"] == "rceil"


def test_encode_values_by_hand():
    x = np.float32([0.3, -0.3, 448, 464, 465, np.inf, np.nan, -0.0])
    assert minifloat.encode(x, "e4m3").tolist() == [0x2A, 0xAA, 0x7E, 0x7E, 0x7F, 0x7F, 0x7F, 0x80]
    assert minifloat.encode(x, "e4m3", overflow="saturate").tolist() == [0x2A, 0xAA, 0x7E, 0x7E, 0x7E, 0x7E, 0x7F, 0x80]
    assert minifloat.encode(np.float32([0.3, 2.9]), "e2m1", rounding="toward_zero").tolist() == [0x0, 0x4]
    assert minifloat.encode([1.0, 0.25], "bf16").dtype == np.uint16  # lists of Python floats (f64) too
    assert minifloat.encode(np.float32([1.0]), "f32").tolist() == [0x3F800000]
    # f64 inputs round once: 1 + 2^-4 + 2^-30 is above the e4m3 tie at 1 + 2^-4 (f32 would round it onto the tie)
    assert minifloat.encode(np.float64([1 + 2**-4 + 2**-30]), "e4m3").tolist() == [0x39]
    assert minifloat.encode(np.float32([1 + 2**-4 + 2**-30]), "e4m3").tolist() == [0x38]


def test_stochastic_rounding_is_seeded_and_unbiased():
    x = np.full(200_000, 1.25, np.float32)  # halfway between e2m1 1.0 (0x2) and 1.5 (0x3)
    a = minifloat.encode(x, "e2m1", rounding="stochastic", seed=1)
    assert set(np.unique(a).tolist()) == {0x2, 0x3}
    assert abs(a.mean() - 2.5) < 0.01  # half up, half down
    assert_same(minifloat.encode(x, "e2m1", rounding="stochastic", seed=1), a)
    assert (minifloat.encode(x, "e2m1", rounding="stochastic", seed=2) != a).any()
    assert_same(minifloat.encode(x, "e2m1", rounding="stochastic"), minifloat.encode(x, "e2m1", rounding="stochastic", seed=0))
    # 1.375 is 3/4 of the way from 1.0 to 1.5
    b = minifloat.encode(np.full(200_000, 1.375, np.float32), "e2m1", rounding="stochastic", seed=3)
    assert abs((b == 0x3).mean() - 0.75) < 0.01


@pytest.mark.parametrize("call, exc, words", [
    (lambda: minifloat.encode([1.0], "e9m9"), ValueError, "fmt: unknown format 'e9m9'"),
    (lambda: minifloat.encode([1.0], 7), TypeError, "fmt"),
    (lambda: minifloat.encode([1.0], "e4m3", rounding="up"), ValueError, "rounding"),
    (lambda: minifloat.encode([1.0], "e4m3", overflow="wrap"), ValueError, "overflow"),
    (lambda: minifloat.encode([1.0], "e4m3", seed=3), ValueError, "seed"),
    (lambda: minifloat.encode([1.0], "e4m3", rounding="stochastic", seed=-1), ValueError, "seed"),
    (lambda: minifloat.encode(["a"], "e4m3"), TypeError, "array"),
    (lambda: minifloat.encode(np.uint8([1]), "e4m3"), TypeError, "decode takes codes"),
    (lambda: minifloat.decode([16], "e2m1"), ValueError, "codes: element 0 is 16"),
    (lambda: minifloat.decode([-1], "e4m3"), ValueError, "codes"),
    (lambda: minifloat.decode(np.float32([1]), "e4m3"), TypeError, "codes"),
    (lambda: minifloat.decode([1], "e4m3", dtype=np.int8), TypeError, "dtype"),
    (lambda: minifloat.decode([1], "e4m3", dtype=ml_dtypes.float8_e5m2), TypeError, "dtype"),
    (lambda: minifloat.decode(np.uint8([1]).view(ml_dtypes.float8_e5m2), "e4m3"), ValueError, "e5m2 codes"),
    (lambda: minifloat.quantize(np.ones((2, 32), np.float32), "mxfp9"), ValueError, "mxfp9"),
    (lambda: minifloat.quantize(np.ones((2, 32), np.float32), 5), TypeError, "scheme"),
    (lambda: minifloat.quantize(np.ones((2, 30), np.float32), "mxfp4"), ValueError, "30"),
    (lambda: minifloat.quantize(np.ones((2, 32), np.float64), "mxfp4"), TypeError, "float64"),
    (lambda: minifloat.quantize(np.float32(1), "mxfp4"), ValueError, "scalar"),
    (lambda: minifloat.quantize(np.ones((2, 32), np.float32), "mxfp4", rule="up"), ValueError, "rule"),
    (lambda: minifloat.quantize(np.ones((2, 32), np.float32), "mxfp4", profile="x"), ValueError, "profile"),
    (lambda: minifloat.quantize(np.ones((2, 32), np.float32), "mxfp4", layout="x"), ValueError, "layout"),
    (lambda: minifloat.quantize(np.ones((2, 32), np.float32), "mxfp4", rotate=3), ValueError, "3"),
    (lambda: minifloat.quantize(np.ones((2, 32), np.float32), "mxfp4", threads="2"), TypeError, "threads"),
    (lambda: minifloat.quantize(np.float32([[np.nan] * 32]), "mxfp4", nonfinite="error"), ValueError, "array"),
    (lambda: minifloat.rotate(np.ones(24, np.float32), 16), ValueError, "16"),
    (lambda: minifloat.quantize(np.ones((2, 32), np.float32), "mxfp4").dequantize(np.int32), TypeError, "dtype"),
])
def test_bad_arguments_raise_named_errors(call, exc, words):
    with pytest.raises(exc, match=None) as info:
        call()
    assert words in str(info.value), str(info.value)


def test_quantized_tensor_layouts_and_shapes():
    x = RNG.standard_normal((3, 4, 64)).astype(np.float32)
    q = minifloat.quantize(x, "mxfp4")
    assert q.shape == (3, 4, 64) and q.codes.shape == (3, 4, 32) and q.scales.shape == (12, 2)
    assert q.nbytes == 3 * 4 * (32 + 2) and q.tensor_scale is None and q.scheme == "mxfp4"
    u = minifloat.quantize(x, "mxfp4", layout="unpacked")
    assert u.codes.shape == x.shape
    # packed e2m1: element 2i in the low nibble (docs/spec.md#packing)
    assert_same(q.codes.reshape(-1), (u.codes.reshape(-1)[0::2] | (u.codes.reshape(-1)[1::2] << 4)))
    g = minifloat.quantize(x, "mxfp4", layout="ggml")
    assert g.codes.shape == (3, 4, 2, 17)
    assert_same(g.codes[..., 0].reshape(-1), q.scales.reshape(-1))
    assert_same(g.scales.reshape(-1), q.scales.reshape(-1))
    for layout in (q, u, g):
        assert_same(layout.dequantize().view(np.uint32), q.dequantize().view(np.uint32), what="dequantize")
    assert_same(q.codes_as(ml_dtypes.float4_e2m1fn).view(np.uint8), u.codes)
    assert q.scales_as(ml_dtypes.float8_e8m0fnu).dtype == ml_dtypes.float8_e8m0fnu
    n = minifloat.quantize(x, "nvfp4")
    assert isinstance(n.tensor_scale, float) and n.scales.dtype == np.uint8 and n.scales.shape == (12, 4)
    assert n.scales_as(ml_dtypes.float8_e4m3fn).dtype == ml_dtypes.float8_e4m3fn
    f = minifloat.quantize(x, "e4m3-1x32-f32")
    assert f.scales.dtype == np.float32 and f.scales.shape == (12, 2)
    six = minifloat.quantize(x, "mxfp6-e2m3")
    assert six.codes.shape == (3, 4, 48)
    assert "nvfp4" in repr(n)


def test_dequantize_dtypes_and_fake_quantize():
    x = RNG.standard_normal((8, 64)).astype(np.float32)
    q = minifloat.quantize(x, "mxfp8")
    d = q.dequantize()
    assert_same(q.dequantize(np.float64), d.astype(np.float64), what="f64")
    assert_same(q.dequantize(ml_dtypes.bfloat16).view(np.uint16), d.astype(ml_dtypes.bfloat16).view(np.uint16))
    assert_same(minifloat.fake_quantize(x, "mxfp8").view(np.uint32), d.view(np.uint32), what="fake_quantize")
    # bf16 input quantizes the same values as their exact f32 widening
    xb = x.astype(ml_dtypes.bfloat16)
    assert_same(minifloat.quantize(xb, "mxfp4").codes, minifloat.quantize(xb.astype(np.float32), "mxfp4").codes)
    assert_same(minifloat.fake_quantize(xb, "nvfp4"), minifloat.fake_quantize(xb.astype(np.float32), "nvfp4"))
    xh = x.astype(np.float16)
    assert_same(minifloat.quantize(xh, "mxfp8").codes, minifloat.quantize(xh.astype(np.float32), "mxfp8").codes)


def test_error_report_and_rotate():
    x = RNG.standard_normal((64, 128)).astype(np.float32)
    r = minifloat.error_report(x, "mxfp4", worst_blocks=3)
    d = minifloat.quantize(x, "mxfp4").dequantize().astype(np.float64)
    mse = np.mean((x.astype(np.float64) - d) ** 2)
    assert r["scheme"] == "mxfp4" and r["bits_per_value"] == 4.25 and len(r["worst_blocks"]) == 3
    assert r["stats"]["count"] == x.size and abs(r["stats"]["mse"] - mse) <= 1e-12 * max(mse, 1)
    assert r["stats"]["sqnr_db"] == pytest.approx(10 * np.log10(np.sum(x.astype(np.float64) ** 2) / np.sum((x - d) ** 2)))
    # rotate: the Sylvester Walsh-Hadamard matrix over groups of n, times n^-1/2, in f64 here
    n = 16
    h = np.array([[(-1) ** bin(i & j).count("1") for j in range(n)] for i in range(n)]) / np.sqrt(n)
    y = minifloat.rotate(x, n)
    exact = (x.astype(np.float64).reshape(-1, n) @ h.T).reshape(x.shape)
    assert np.max(np.abs(y - exact)) < 1e-5 and y.dtype == np.float32
    assert np.max(np.abs(minifloat.rotate(y, n) - x)) < 1e-5
    assert not np.shares_memory(y, x)
    rq = minifloat.quantize(x, "mxfp4", rotate=32)
    assert rq.rotate == 32 and minifloat.error_report(x, "mxfp4", rotate=32)["stats"]["count"] == x.size


@pytest.mark.serial
def test_gil_is_released_and_codes_are_views():
    import threading
    import time

    x = RNG.standard_normal(1 << 23).astype(np.float32)
    wide = x.astype(np.float64)  # f64 takes the scalar codec: 0.1 s or more over this (f32 is a few ms)
    t0 = time.perf_counter()
    minifloat.encode(wide, "e4m3")
    duration = time.perf_counter() - t0
    started = threading.Event()
    t = threading.Thread(target=lambda: (started.set(), minifloat.encode(wide, "e4m3")))
    t0 = time.perf_counter()
    t.start()
    started.wait()
    time.sleep(0.005)  # with the GIL held by the call, these would return only after the call
    woke = time.perf_counter() - t0
    t.join()
    assert woke < duration / 2, (woke, duration)
    q = minifloat.quantize(x.reshape(256, -1), "mxfp4")
    assert np.shares_memory(q.codes, q._q.codes)  # views of the QuantizedTensor's buffer, no copies
    codes = minifloat.encode(x[:64], "e4m3")
    assert np.shares_memory(minifloat.decode(codes, "e4m3", dtype=ml_dtypes.float8_e4m3fn), codes)
