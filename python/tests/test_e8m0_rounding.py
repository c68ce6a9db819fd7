"""ONNX Cast (opset 25) to FLOAT8E8M0 against onnxruntime's CPU kernel: minifloat.encode(x, "ue8m0") with
rounding away_from_zero / toward_zero / nearest_away (round_mode "up" / "down" / "nearest") and overflow clamp /
nan_outside_range (saturate 1 / 0) gives onnxruntime's code for every input tried (docs/encoding.md).

Inputs: a stratified sweep of f32 bit patterns (all 2^32 through onnxruntime take about 85 s per mode, too long
for the suite): for every exponent field and both signs, the mantissas at and around 0, the tie 0x400000, the
subnormal tie 0x600000 and the top, plus random mantissas; then 2^20 random bit patterns, and the specials.
The one-node model is built here with onnx.helper; onnxruntime has no numpy type for FLOAT8E8M0 outputs, so the
model casts the E8M0 result back to FLOAT (exact: every E8M0 value is an f32, NaN stays NaN) and the codes are
read off those values.
"""
import numpy as np
import pytest

import minifloat
from conftest import assert_same, need

ROUND_MODES = {"up": "away_from_zero", "down": "toward_zero", "nearest": "nearest_away"}
SATURATE = {1: "clamp", 0: "nan_outside_range"}


def _inputs():
    mantissas = set(range(0, 8)) | set(range(0x3FFFF8, 0x400008)) | set(range(0x5FFFF8, 0x600008)) | set(
        range(0x7FFFF8, 0x800000)) | {0x200000, 0x1FFFFF, 0x200001}
    rng = np.random.default_rng(25)
    m = np.array(sorted(mantissas), dtype=np.uint32)
    fields = np.arange(256, dtype=np.uint32)
    grid = (fields[:, None] << 23) | m[None, :]
    rand = (fields[:, None] << 23) | rng.integers(0, 1 << 23, size=(256, 64), dtype=np.uint32)
    pos = np.concatenate([grid.ravel(), rand.ravel()])
    bits = np.concatenate([pos, pos | 0x80000000, rng.integers(0, 1 << 32, size=1 << 20, dtype=np.uint64).astype(
        np.uint32), np.array([0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00000, 0x7F800001, 0x80000000], np.uint32)])
    return bits


def _session(ort, onnx, round_mode, saturate):
    helper, tp = onnx.helper, onnx.TensorProto
    cast = helper.make_node("Cast", ["x"], ["e8m0"], to=tp.FLOAT8E8M0, round_mode=round_mode, saturate=saturate)
    back = helper.make_node("Cast", ["e8m0"], ["y"], to=tp.FLOAT)
    graph = helper.make_graph([cast, back], "cast_e8m0", [helper.make_tensor_value_info("x", tp.FLOAT, [None])],
                              [helper.make_tensor_value_info("y", tp.FLOAT, [None])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 25)])
    model.ir_version = 11  # the newest onnxruntime 1.32 reads; opset 25 needs IR 11 or later
    onnx.checker.check_model(model)
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])


def _codes_of(values):
    """E8M0 codes of decoded values: NaN -> 0xFF, 2^-127 (f32 0x00400000) -> 0x00, 2^k -> its exponent field."""
    b = values.view(np.uint32)
    power = ((b & 0x807FFFFF) == 0) | (b == 0x00400000)
    assert np.all(power | np.isnan(values)), "onnxruntime gave a value that is not a power of two"
    return np.where(np.isnan(values), 0xFF, np.where(b == 0x00400000, 0, b >> 23)).astype(np.uint8)


@pytest.mark.parametrize("saturate", [1, 0])
@pytest.mark.parametrize("round_mode", ["up", "down", "nearest"])
def test_cast_to_e8m0_as_onnxruntime(round_mode, saturate):
    ort, onnx = need("onnxruntime"), need("onnx")
    bits = _inputs()
    x = bits.view(np.float32)
    expected = _codes_of(_session(ort, onnx, round_mode, saturate).run(None, {"x": x})[0])
    got = minifloat.encode(x, "ue8m0", rounding=ROUND_MODES[round_mode], overflow=SATURATE[saturate])
    assert_same(np.asarray(got).view(np.uint8), expected, inputs=bits,
                what=f"ue8m0 round_mode={round_mode} saturate={saturate}")


def test_the_back_cast_reads_every_code():
    """The oracle's read-back: every E8M0 code's value cast through the model (exact powers of two) gives the code."""
    ort, onnx = need("onnxruntime"), need("onnx")
    values = np.array([2.0 ** (k - 127) for k in range(255)] + [np.nan], dtype=np.float32)
    y = _session(ort, onnx, "down", 1).run(None, {"x": values})[0]
    assert_same(_codes_of(y), np.arange(256, dtype=np.uint16).astype(np.uint8), inputs=values.view(np.uint32))
