"""A weight and its scale in different shards: "The deepseek model often splits a module's weight and
weight_scale_inv tensors across different files" (vllm-project/compressed-tensors #641; checkpoints-in-the-wild.md
2.4). inspect and verify borrow the scale from the shard the index names and read the pair in the weight's shard;
convert and dequantize, which pair within a shard, refuse such a checkpoint, naming the weight, its scale and the
shard the index puts it in, and write nothing. Checked on a small real-data checkpoint (the `--like deepseek-v3`
miniature, one scale's bytes moved to the other shard); the pair's values against numpy and ml_dtypes applying
DeepSeek-V3's formula (checkpoints-in-the-wild.md 2.3: each e4m3 code times its 128x128 tile's F32 scale).
"""
import json

import pytest

from checkpoint_util import minifloat


def read_raw(path):
    """{name: (dtype, shape, bytes)} of a safetensors file, in data order, and its metadata."""
    data = path.read_bytes()
    n = int.from_bytes(data[:8], "little")
    header = json.loads(data[8:8 + n])
    meta = header.pop("__metadata__", {})
    body = data[8 + n:]
    order = sorted(header, key=lambda k: header[k]["data_offsets"][0])
    return {k: (header[k]["dtype"], header[k]["shape"], body[slice(*header[k]["data_offsets"])]) for k in order}, meta


def write_raw(path, tensors, meta):
    header, offset = {"__metadata__": meta} if meta else {}, 0
    for k, (dtype, shape, b) in tensors.items():
        header[k] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(b)]}
        offset += len(b)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    path.write_bytes(len(text).to_bytes(8, "little") + text + b"".join(b for _, _, b in tensors.values()))


@pytest.fixture
def split_pair(tmp_path):
    d = tmp_path / "v3"
    r = minifloat("make-example-checkpoint", d, "--like", "deepseek-v3", "--shards", "2")
    assert r.returncode == 0, r.stderr
    idx_path = d / "model.safetensors.index.json"
    idx = json.loads(idx_path.read_text())
    shards = sorted(set(idx["weight_map"].values()))
    weight = next(n for n, s in idx["weight_map"].items()
                  if s == shards[0] and n + "_scale_inv" in idx["weight_map"])
    scale = weight + "_scale_inv"
    (a, meta_a), (b, meta_b) = read_raw(d / shards[0]), read_raw(d / shards[1])
    b[scale] = a.pop(scale)
    write_raw(d / shards[0], a, meta_a)
    write_raw(d / shards[1], b, meta_b)
    idx["weight_map"][scale] = shards[1]
    idx_path.write_text(json.dumps(idx))
    return d, weight, scale, shards[1]


def test_inspect_and_verify_read_the_split_pair(split_pair):
    import ml_dtypes
    import numpy as np
    d, weight, scale, other = split_pair
    for args in (["verify", d], ["verify", d, "--headers-only"]):
        r = minifloat(*args)
        assert r.returncode == 0, (args, r.stderr)
    r = minifloat("inspect", d, "--stats", "--json")
    assert r.returncode == 0, r.stderr
    rows = {t["name"]: t for t in json.loads(r.stdout)["tensors"]}
    assert rows[weight]["role"].startswith("weight of e4m3-128x128-f32-f32"), rows[weight]["role"]
    assert rows[scale]["role"] == f"scale of {weight} (paired in {rows[weight]['shard']})"
    assert rows[scale]["shard"] == other and rows[scale]["params"] == 0
    # The pair's values, read from the two files by hand.
    idx = json.loads((d / "model.safetensors.index.json").read_text())
    w_dtype, w_shape, w_bytes = read_raw(d / idx["weight_map"][weight])[0][weight]
    s_dtype, s_shape, s_bytes = read_raw(d / other)[0][scale]
    assert (w_dtype, s_dtype) == ("F8_E4M3", "F32")
    codes = np.frombuffer(w_bytes, dtype=ml_dtypes.float8_e4m3fn).astype(np.float32).reshape(w_shape)
    scales = np.frombuffer(s_bytes, dtype="<f4").reshape(s_shape)
    full = np.repeat(np.repeat(scales, 128, axis=0), 128, axis=1)[: w_shape[0], : w_shape[1]]
    values = codes * full
    assert rows[weight]["stats"]["min"] == pytest.approx(float(values.min()), rel=1e-6)
    assert rows[weight]["stats"]["max"] == pytest.approx(float(values.max()), rel=1e-6)
    assert rows[weight]["stats"]["rms"] == pytest.approx(float(np.sqrt((values.astype(np.float64) ** 2).mean())),
                                                        rel=1e-6)


def test_convert_and_dequantize_name_the_split_pair(split_pair, tmp_path):
    d, weight, scale, other = split_pair
    said = f"its partner '{scale}' is in shard {other}"
    for args in (["dequantize", d, tmp_path / "deq"], ["convert", d, tmp_path / "conv", "--recipe", "mxfp4"]):
        r = minifloat(*args)
        assert r.returncode == 2, (args, r.stdout[-500:], r.stderr)
        assert weight in r.stderr and said in r.stderr and "pairs them only within one shard" in r.stderr, \
            (args, r.stderr)
    assert not (tmp_path / "deq").exists() and not (tmp_path / "conv").exists()
