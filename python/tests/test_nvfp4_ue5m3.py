"""NVFP4 with UE5M3 block scales (nvfp4-ue5m3) through the command, against the rule re-stated here in numpy.

The rule (docs/schemes.md#nvfp4-with-ue5m3-scales-nvfp4-ue5m3, after NVIDIA/TransformerEngine#3325): tensor scale =
tensor amax / (114688 * 6); block scale = UE5M3(RN(amax / 6 / tensor scale)), saturated to 0xFE; elements = E2M1(RN(x /
(scale * tensor scale))), saturated to +-6. UE5M3 and E2M1 are decoded below from their definitions (docs/formats.md:
UE5M3 = EEEEE MMM, bias 15, subnormals M x 2^-17, 0xFF NaN; E2M1 = S EE M, bias 1), and rounding is a nearest-value
search with ties to the even code, not minifloat's codec. Also: convert refuses nvfp4-ue5m3 for every --format.
"""
import json

import numpy as np
import pytest

from checkpoint_util import minifloat
from conftest import assert_same


def ue5m3_values():
    """The value of every finite UE5M3 code 0x00 .. 0xFE."""
    v = []
    for code in range(0xFF):
        e, m = code >> 3, code & 7
        v.append(m * 2.0 ** -17 if e == 0 else (1 + m / 8) * 2.0 ** (e - 15))
    return np.array(v)


E2M1 = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0])


def nearest_even(y, table):
    """The code of the table value nearest y (y >= 0), ties to the even code, above the table: its last code."""
    i = np.searchsorted(table, y)  # table[i-1] < y <= table[i]
    if i == 0:
        return 0
    if i == len(table):
        return len(table) - 1
    lo, hi = y - table[i - 1], table[i] - y
    if lo < hi:
        return i - 1
    if hi < lo:
        return i
    return i - 1 if (i - 1) % 2 == 0 else i


def reference(x):
    """(codes one per byte, scale codes, tensor scale) of nvfp4-ue5m3 for a float32 [rows, cols]."""
    f32 = np.float32
    finite = np.abs(x[np.isfinite(x)])
    ts = f32(finite.max()) / f32(114688.0 * 6.0) if finite.size else f32(1)
    ts = ts if ts > 0 else f32(1)
    scales_table, codes, scales = ue5m3_values(), [], []
    for row in x:
        for blk in row.reshape(-1, 16):
            amax = f32(np.abs(blk).max())
            s = nearest_even(float(amax / f32(6) / ts), scales_table)
            d = f32(scales_table[s]) * ts
            scales.append(s)
            for v in blk:
                if d == 0:
                    codes.append(0x8 if np.signbit(v) else 0)
                    continue
                c = nearest_even(float(np.abs(f32(v) / d)), E2M1)
                codes.append(c | (0x8 if v < 0 else 0))
    return np.array(codes, np.uint8), np.array(scales, np.uint8), ts


def data():
    rng = np.random.default_rng(7)
    x = (rng.standard_normal((8, 128)) * np.exp(rng.standard_normal((8, 1)))).astype(np.float32)
    # Small blocks: a block's ideal scale is 114688 x its amax / the tensor's, so these reach UE5M3's least normal
    # (2^-14), its subnormals (2^-17 .. 7 x 2^-17) and 0x00.
    for j, k in enumerate((-22, -25, -27, -28, -29, -33)):
        x[1, 16 * j:16 * j + 16] *= np.float32(2.0 ** k)
    x[2, :16] = 0
    x[2, 16:32] = -0.0
    x[3, :16] *= np.float32(50.0)         # the tensor's amax: scale 0xFE
    return x


def test_quantize_and_dequantize_match_the_rule(tmp_path):
    from safetensors.numpy import load_file
    x = data()
    np.save(tmp_path / "x.npy", x)
    r = minifloat("quantize", tmp_path / "x.npy", tmp_path / "q.safetensors", "--scheme", "nvfp4-ue5m3",
                  "--layout", "unpacked")
    assert r.returncode == 0, r.stderr
    q = load_file(str(tmp_path / "q.safetensors"))
    codes, scales, ts = reference(x)
    assert q["x_scale"].dtype == np.uint8 and q["x_scale"].shape == (8, 8)  # U8: safetensors has no UE5M3
    assert q["x_tensor_scale"].dtype == np.float32 and q["x_tensor_scale"] == ts
    assert_same(q["x_scale"].reshape(-1), scales, what="block scales")
    assert_same(q["x"].reshape(-1), codes, what="codes")
    assert scales.max() == 0xFE and 0x00 in scales[8:16] and ((scales > 0) & (scales < 8)).any(), scales[8:16]

    r = minifloat("dequantize", tmp_path / "q.safetensors", tmp_path / "d.safetensors")
    assert r.returncode == 0, r.stderr
    back = load_file(str(tmp_path / "d.safetensors"))["x"].reshape(-1)
    table = ue5m3_values()
    want = np.array([(E2M1[c & 7] * (-1 if c & 8 else 1)) for c in codes], np.float32) \
        * np.repeat(table[scales].astype(np.float32) * ts, 16)
    assert_same(back.view(np.uint32), want.astype(np.float32).view(np.uint32), what="dequantized bits")


def test_nan_block_and_nonfinite_error(tmp_path):
    from safetensors.numpy import load_file
    x = data()
    x[5, 40] = np.nan
    np.save(tmp_path / "x.npy", x)
    assert minifloat("quantize", tmp_path / "x.npy", tmp_path / "q.safetensors", "--scheme", "nvfp4-ue5m3",
                     "--layout", "unpacked").returncode == 0
    assert load_file(str(tmp_path / "q.safetensors"))["x_scale"][5, 2] == 0xFF  # UE5M3's only NaN
    r = minifloat("quantize", tmp_path / "x.npy", tmp_path / "e.safetensors", "--scheme", "nvfp4-ue5m3",
                  "--nonfinite", "error")
    assert r.returncode != 0 and "NaN at index 680" in r.stderr, r.stderr
    assert not (tmp_path / "e.safetensors").exists()


@pytest.mark.parametrize("fmt", ["minifloat", "compressed-tensors", "modelopt", "transformers-fp8", "gguf"])
def test_convert_refuses_it_for_every_format(tmp_path, fmt):
    from safetensors.numpy import save_file
    src = tmp_path / "src"
    src.mkdir()
    save_file({"model.layers.0.mlp.up_proj.weight": data()}, str(src / "model.safetensors"))
    (src / "config.json").write_text(json.dumps({"model_type": "llama"}))
    out = tmp_path / "out"
    r = minifloat("convert", src, out, "--recipe", "nvfp4-ue5m3", "--format", fmt)
    assert r.returncode == 2, r.stderr
    assert f"recipe nvfp4-ue5m3 cannot be written as --format {fmt}" in r.stderr, r.stderr
    assert "UE5M3 block scales no checkpoint dialect holds" in r.stderr, r.stderr
    assert not out.exists()


def test_python_package_matches_the_rule():
    import minifloat
    x = data()
    q = minifloat.quantize(x, "nvfp4-ue5m3", layout="unpacked")
    codes, scales, ts = reference(x)
    assert q.tensor_scale == ts and q.scales.dtype == np.uint8
    assert_same(q.scales.reshape(-1), scales, what="block scales")
    assert_same(q.codes.reshape(-1), codes, what="codes")
    with pytest.raises(TypeError, match="ue5m3 scales have no torch or ml_dtypes dtype"):
        q.scales_as(np.uint8)
    table = minifloat.decode(q.scales, "ue5m3")  # the codes decode through the package's own format
    assert_same(table.reshape(-1).view(np.uint32), ue5m3_values()[scales].astype(np.float32).view(np.uint32),
                what="decoded scales")
    back = q.dequantize()
    assert_same(minifloat.fake_quantize(x, "nvfp4-ue5m3").view(np.uint32), back.view(np.uint32), what="fake_quantize")
    report = minifloat.error_report(x, "nvfp4-ue5m3")
    assert report["scheme"] == "nvfp4-ue5m3" and report["bits_per_value"] == 4.5
