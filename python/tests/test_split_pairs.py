"""A weight and its scale in different shards: "The deepseek model often splits a module's weight and
weight_scale_inv tensors across different files" (vllm-project/compressed-tensors #641; checkpoints-in-the-wild.md
2.4). Every command borrows a pair's scale (and second-level scale and extras) from the shard the index names and
reads the pair in the weight's shard; convert and dequantize write the pair's output there, and the scale's own shard
never writes it as a tensor of its own. Checked on small real-data checkpoints (the `--like deepseek-v3` miniature,
and a compressed-tensors NVFP4 Llama quantized by compressed-tensors itself) with scales moved to the other shard:
inspect's values against numpy and ml_dtypes applying DeepSeek-V3's formula (checkpoints-in-the-wild.md 2.3: each
e4m3 code times its 128x128 tile's F32 scale); dequantize and convert against the same commands on the unsplit
checkpoint, whose outputs the other tests check against the libraries.
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


def move_to_other_shard(d, names):
    """Moves tensors `names` of two-shard checkpoint `d` each to the shard the index does not put it in."""
    idx_path = d / "model.safetensors.index.json"
    idx = json.loads(idx_path.read_text())
    shards = sorted(set(idx["weight_map"].values()))
    assert len(shards) == 2 and names
    files = {s: read_raw(d / s) for s in shards}
    for n in names:
        was = idx["weight_map"][n]
        to = shards[1 - shards.index(was)]
        files[to][0][n] = files[was][0].pop(n)
        idx["weight_map"][n] = to
    for s, (tensors, meta) in files.items():
        write_raw(d / s, tensors, meta)
    idx_path.write_text(json.dumps(idx))


def written(d):
    """{name: (shard, dtype, shape, bytes)} over every .safetensors file of output `d`, each name in one file only,
    and the index (if any) naming the file that holds it."""
    out = {}
    for f in sorted(d.glob("*.safetensors")):
        for n, (dtype, shape, b) in read_raw(f)[0].items():
            assert n not in out, f"{n} written in {out[n][0]} and {f.name}"
            out[n] = (f.name, dtype, shape, b)
    idx = d / "model.safetensors.index.json"
    if idx.exists():
        assert json.loads(idx.read_text())["weight_map"] == {n: v[0] for n, v in out.items()}
    return out


def same_files(a, b):
    """Every file of output directory `a` byte for byte in `b`, and no other."""
    names = sorted(p.name for p in a.iterdir())
    assert names == sorted(p.name for p in b.iterdir())
    for n in names:
        assert (a / n).read_bytes() == (b / n).read_bytes(), n


def run(*args):
    r = minifloat(*args)
    assert r.returncode == 0, (args, r.stderr)
    return r


@pytest.fixture(scope="module")
def v3_pair(tmp_path_factory):
    """The `--like deepseek-v3` miniature in two shards, and a copy with every weight_scale_inv in the other one."""
    import shutil
    root = tmp_path_factory.mktemp("v3")
    run("make-example-checkpoint", root / "whole", "--like", "deepseek-v3", "--shards", "2")
    shutil.copytree(root / "whole", root / "split")
    idx = json.loads((root / "whole" / "model.safetensors.index.json").read_text())
    scales = [n for n in idx["weight_map"] if n.endswith("_scale_inv")]
    assert len(scales) > 20 and len({idx["weight_map"][n] for n in scales}) == 2  # scales moved both ways
    move_to_other_shard(root / "split", scales)
    return root / "whole", root / "split", scales


@pytest.fixture(scope="module")
def nvfp4_pair(tmp_path_factory):
    """A compressed-tensors NVFP4 tiny Llama (compressed-tensors' own quantization, test_dialects.ct_checkpoint) in
    two shards (layer 0 and the rest), and a copy with every weight_global_scale and input_global_scale in the other
    shard, and one weight_scale too."""
    import shutil
    from conftest import need
    from test_dialects import ct_checkpoint
    torch = need("torch")
    root = tmp_path_factory.mktemp("nvfp4")
    one = root / "one"
    ct_checkpoint(torch, "NVFP4", one)
    tensors, meta = read_raw(one / "model.safetensors")
    whole = root / "whole"
    whole.mkdir()
    shards = ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"]
    parts = [{k: v for k, v in tensors.items() if (".layers.0." in k) == first} for first in (True, False)]
    for s, part in zip(shards, parts):
        write_raw(whole / s, part, meta)
    weight_map = {k: shards[i] for i, part in enumerate(parts) for k in part}
    (whole / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))
    shutil.copy(one / "config.json", whole / "config.json")
    shutil.copytree(whole, root / "split")
    moved = [k for k in weight_map if k.endswith((".weight_global_scale", ".input_global_scale"))]
    moved.append("model.layers.1.mlp.down_proj.weight_scale")
    assert len(moved) == 29
    move_to_other_shard(root / "split", moved)
    return whole, root / "split", moved


def test_every_command_reads_the_moved_scales(v3_pair, nvfp4_pair):
    for whole, split, moved in (v3_pair, nvfp4_pair):
        idx = json.loads((split / "model.safetensors.index.json").read_text())["weight_map"]
        assert any(idx[n] != json.loads((whole / "model.safetensors.index.json").read_text())["weight_map"][n]
                   for n in moved)
        run("verify", split)
        run("verify", split, "--headers-only")
        r = run("inspect", split, "--json")
        rows = {t["name"]: t for t in json.loads(r.stdout)["tensors"]}
        assert all("paired in" in rows[n]["role"] for n in moved), [rows[n]["role"] for n in moved]


@pytest.mark.parametrize("dtype", ["bf16", "f32"])
def test_dequantize_split_equals_unsplit(v3_pair, nvfp4_pair, tmp_path, dtype):
    for k, (whole, split, moved) in enumerate((v3_pair, nvfp4_pair)):
        a, b = tmp_path / f"whole{k}", tmp_path / f"split{k}"
        run("dequantize", whole, a, "--dtype", dtype)
        run("dequantize", split, b, "--dtype", dtype)
        out = written(b)
        # No scale written as a plain tensor in the shard that holds it: the weights are plain, nothing else.
        assert not [n for n in out if "scale" in n], [n for n in out if "scale" in n]
        same_files(a, b)
        run("verify", b)


V3_CONVERTS = [("fp8-block", "minifloat"), ("mxfp4", "minifloat"), ("fp8-block", "deepseek"), ("nvfp4", "modelopt"),
               ("mxfp8", "compressed-tensors")]
NVFP4_CONVERTS = [("nvfp4", "compressed-tensors"), ("mxfp4", "compressed-tensors"), ("mxfp4", "minifloat"),
                  ("fp8-block", "minifloat"), ("mxfp8", "modelopt")]


@pytest.mark.parametrize("which,recipe,fmt", [("v3", *c) for c in V3_CONVERTS] +
                         [("nvfp4", *c) for c in NVFP4_CONVERTS])
def test_convert_split_equals_unsplit(v3_pair, nvfp4_pair, tmp_path, which, recipe, fmt):
    whole, split, moved = v3_pair if which == "v3" else nvfp4_pair
    a, b = tmp_path / "whole", tmp_path / "split"
    run("convert", whole, a, "--recipe", recipe, "--format", fmt)
    run("convert", split, b, "--recipe", recipe, "--format", fmt)
    want, got = written(a), written(b)
    assert sorted(got) == sorted(want)
    for n in want:  # tensor for tensor, each in the shard of the unsplit output (with its weight)
        assert got[n] == want[n], n
    assert (a / "config.json").read_text() == (b / "config.json").read_text()
    run("verify", b)


@pytest.mark.parametrize("fmt", ["minifloat", "modelopt"])
def test_a_moved_global_scale_is_checked_as_in_place(nvfp4_pair, tmp_path, fmt):
    """compressed-tensors' global scales of these weights have no exact reciprocal (what generate_gparam gives):
    re-laying them out into a format that multiplies is refused, split or not, with the same message."""
    whole, split, _ = nvfp4_pair
    said = []
    for src in (whole, split):
        r = minifloat("convert", src, tmp_path / src.name, "--recipe", "nvfp4", "--format", fmt)
        assert r.returncode == 2 and "weight_global_scale" in r.stderr, r.stderr
        assert not (tmp_path / src.name).exists()
        said.append(r.stderr.replace(str(src), "IN"))
    assert said[0] == said[1]


@pytest.mark.parametrize("which,recipe,fmt", [("v3", None, None), ("v3", "fp8-block", "minifloat"),
                                              ("v3", "mxfp4", "minifloat"), ("nvfp4", None, None),
                                              ("nvfp4", "nvfp4", "compressed-tensors")])
def test_two_jobs_write_what_one_does(v3_pair, nvfp4_pair, tmp_path, which, recipe, fmt):
    _, split, _ = v3_pair if which == "v3" else nvfp4_pair
    cmd = ["dequantize"] if recipe is None else ["convert"]
    extra = [] if recipe is None else ["--recipe", recipe, "--format", fmt]
    one, two = tmp_path / "one", tmp_path / "two"
    run(*cmd, split, one, *extra)
    for i in (0, 1):
        run(*cmd, split, two, *extra, "--shard-index", str(i), "--shard-count", "2")
    run(*cmd, "--merge", split, two, *extra)
    same_files(one, two)
    run("verify", two)
