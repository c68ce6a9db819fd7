"""GGUF files through the checkpoint commands as a user runs them: a file written by gguf-py's own GGUFWriter (with
tensors quantized by gguf.quants) is listed by `minifloat inspect`, passes `verify`, and `dequantize` writes a
safetensors file whose values equal gguf.quants.dequantize bit for bit; a type minifloat does not decode is an error
that names the tensor, and nothing is written."""
import json

import numpy as np
import pytest

from checkpoint_util import minifloat
from conftest import need



def write_gguf(path, extra_q4k=False):
    gguf = need("gguf")
    rng = np.random.default_rng(7)
    Q = gguf.GGMLQuantizationType
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_uint32("llama.block_count", 2)
    w.add_string("general.name", "tiny")
    x = (rng.standard_normal((8, 64)) * np.exp2(rng.integers(-8, 8, (8, 1)))).astype(np.float32)
    tensors = {
        "blk.0.attn_q.weight": (gguf.quants.quantize(x, Q.Q8_0), Q.Q8_0),
        "blk.0.ffn_up.weight": (gguf.quants.quantize(x, Q.MXFP4), Q.MXFP4),
        "blk.0.ffn_gate.weight": (gguf.quants.quantize(x, Q.Q4_0), Q.Q4_0),
        "blk.0.ffn_down.weight": (gguf.quants.quantize(x, Q.Q4_1), Q.Q4_1),
        "blk.0.attn_norm.weight": (rng.standard_normal(64).astype(np.float32), None),
        "token_embd.weight": (rng.standard_normal((4, 64)).astype(np.float16), None),
    }
    if extra_q4k:
        tensors["blk.1.ffn_down.weight"] = (rng.integers(0, 256, (1, 144), dtype=np.uint8), Q.Q4_K)
    for name, (data, qtype) in tensors.items():
        if qtype is None:
            w.add_tensor(name, data)
        else:  # the quantized bytes, their shape in bytes per row as gguf-py takes it
            w.add_tensor(name, data, raw_shape=data.shape, raw_dtype=qtype)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return tensors


def test_gguf_dequantize_matches_gguf_py(tmp_path):
    gguf = need("gguf")
    from safetensors.numpy import load_file
    src = tmp_path / "tiny.gguf"
    tensors = write_gguf(src)
    r = minifloat("inspect", src)
    assert r.returncode == 0, r.stderr
    assert all(t in r.stdout for t in ("Q8_0", "MXFP4", "Q4_0", "Q4_1")), r.stdout
    assert 'general.name = "tiny"' in r.stdout, r.stdout
    j = json.loads(minifloat("inspect", "--json", src).stdout)
    assert {t["name"]: t["type"] for t in j["tensors"]}["blk.0.ffn_up.weight"] == "MXFP4"
    v = minifloat("verify", src)
    assert v.returncode == 0 and "6 decoded and finite" in v.stdout, v.stdout + v.stderr
    d = minifloat("dequantize", src, tmp_path / "out.safetensors")
    assert d.returncode == 0, d.stderr
    out = load_file(str(tmp_path / "out.safetensors"))
    for name, (data, qtype) in tensors.items():
        want = data.astype(np.float32) if qtype is None else gguf.quants.dequantize(data, qtype)
        got = out[name]
        assert got.dtype == np.float32 and got.shape == want.shape, (name, got.shape, want.shape)
        assert np.array_equal(got.view(np.uint32), want.astype(np.float32).view(np.uint32)), name


def test_gguf_type_minifloat_does_not_decode(tmp_path):
    src = tmp_path / "q4k.gguf"
    write_gguf(src, extra_q4k=True)
    r = minifloat("inspect", src)
    assert r.returncode == 0 and "listed only: minifloat does not decode it" in r.stdout, r.stdout
    d = minifloat("dequantize", src, tmp_path / "out.safetensors")
    assert d.returncode == 2
    assert "tensor 'blk.1.ffn_down.weight': Q4_K [1, 256] is a GGUF type minifloat lists but does not decode" \
        in d.stderr, d.stderr
    assert not (tmp_path / "out.safetensors").exists()
