"""AutoGPTQ's checkpoint_format gptq_v2 (GPTQModel's default): the words of v1 with the zero points stored as they are
(v1 stores zero - 1). Words are packed here as AutoGPTQ packs them (auto_gptq/nn_modules/qlinear/qlinear_cuda_old.py
pack(), without v1's `zeros -= 1`), and read by code independent of minifloat's: the numbers unpacked by hand and
llama.cpp's converter's dequant_gptq (conversion/base.py: + 1 only for checkpoint_format "gptq"), in numpy;
compressed-tensors' own decompressor; AutoAWQ's unpack order. --format gptq writes v1: a v2 source re-laid out there
where every zero - 1 fits, a zero of 0 refused by name. docs/checkpoints.md ("AWQ and GPTQ")."""
import json

import numpy as np
import pytest

from checkpoint_util import dequantize, load, minifloat, same_bits
from conftest import need
from test_dialects import raw_tensors
from test_int4_relayout import check_awq, check_ct, check_gptq, config_of, convert, converted

MODULES = ("model.layers.0.mlp.down_proj", "model.layers.0.self_attn.q_proj")
ROWS, COLS, GROUP = 64, 256, 64


def pack(values, bits, axis):
    """AutoGPTQ's pack: along `axis`, value j of each run of 32 / bits at bit bits x j of its I32 word."""
    v = np.moveaxis(values.astype(np.uint64), axis, 0)
    per = 32 // bits
    v = v.reshape(v.shape[0] // per, per, *v.shape[1:])
    shifts = (bits * np.arange(per, dtype=np.uint64)).reshape(per, *([1] * (v.ndim - 2)))
    words = (v << shifts).sum(1).astype(np.uint32).view(np.int32)
    return np.ascontiguousarray(np.moveaxis(words, 0, axis))


def v2_source(torch, tmp_path, bits, zeros_from, act_order=False, name="v2"):
    """A GPTQ v2 checkpoint of random codes and zero points (zero points from `zeros_from` to 2^b - 1), F16 scales;
    and the values (q - z) x s [R, C] each module holds, worked from the numbers before packing."""
    from safetensors.torch import save_file
    rng = np.random.default_rng(bits * 10 + zeros_from)
    tensors, want = {}, {}
    for m in MODULES:
        q = rng.integers(0, 2 ** bits, (COLS, ROWS))
        z = rng.integers(zeros_from, 2 ** bits, (COLS // GROUP, ROWS))
        s = (rng.random((COLS // GROUP, ROWS)) * 0.01 + 0.001).astype(np.float16)
        g = (rng.permutation(COLS) if act_order else np.arange(COLS)) // GROUP
        tensors[m + ".qweight"] = torch.from_numpy(pack(q, bits, 0))
        tensors[m + ".qzeros"] = torch.from_numpy(pack(z, bits, 1))
        tensors[m + ".scales"] = torch.from_numpy(s)
        tensors[m + ".g_idx"] = torch.from_numpy(g.astype(np.int32))
        want[m + ".weight"] = torch.from_numpy(((q - z[g]).astype(np.float32) * s[g].astype(np.float32)).T.copy())
    tensors["model.norm.weight"] = torch.ones(ROWS, dtype=torch.float16)
    src = tmp_path / name
    src.mkdir()
    save_file(tensors, str(src / "model.safetensors"))
    (src / "config.json").write_text(json.dumps({"model_type": "llama", "torch_dtype": "float16", "quantization_config": {
        "quant_method": "gptq", "bits": bits, "group_size": GROUP, "desc_act": act_order, "sym": False,
        "checkpoint_format": "gptq_v2"}}))
    return src, want


@pytest.mark.parametrize("bits", [2, 4, 8])
def test_v2_zero_points_read_as_stored(tmp_path, bits):
    """inspect and verify pass; dequantize gives the hand-worked (q - z) x s and llama.cpp's dequant_gptq formula for
    gptq_v2, zero points of 0 included; the same files declared v1 read otherwise (the declaration is what tells)."""
    torch = need("torch")
    src, want = v2_source(torch, tmp_path, bits, zeros_from=0)
    for cmd in ("inspect", "verify"):
        r = minifloat(cmd, src)
        assert r.returncode == 0, r.stderr + r.stdout
    got = dequantize(src, tmp_path / "deq", "f32")
    for m in MODULES:
        same_bits(torch, got[m + ".weight"], want[m + ".weight"], m + " (hand-worked)")
    check_gptq(torch, src, got)
    config = json.loads((src / "config.json").read_text())
    config["quantization_config"]["checkpoint_format"] = "gptq"
    (src / "config.json").write_text(json.dumps(config))
    as_v1 = dequantize(src, tmp_path / "deq-v1", "f32")
    assert not torch.equal(as_v1[MODULES[0] + ".weight"], got[MODULES[0] + ".weight"])


@pytest.mark.parametrize("bits", [4, 8])
def test_v2_into_v1_and_on(tmp_path, bits):
    """v2 -> --format gptq writes v1: the same qweight, scales and g_idx, qzeros the words of zero - 1, config
    checkpoint_format "gptq"; llama.cpp's v1 formula reads the source's values. v1 -> compressed-tensors (its own
    decompressor agrees) -> gptq gives the v1 files again; 4-bit: v1 -> awq (AutoAWQ's unpack agrees)."""
    torch = need("torch")
    need("compressed_tensors")
    src, want = v2_source(torch, tmp_path, bits, zeros_from=1)
    v1 = converted(tmp_path, src, "v1", "gptq")
    assert config_of(v1)["checkpoint_format"] == "gptq" and config_of(v1)["bits"] == bits
    stored, before = load(v1), load(src)
    for m in MODULES:
        for part in (".qweight", ".scales", ".g_idx"):
            assert torch.equal(stored[m + part], before[m + part]), m + part
        z = before[m + ".qzeros"].numpy().view(np.uint32)  # v2: the zero points as they are
        zeros = (z[:, :, None] >> (bits * np.arange(32 // bits, dtype=np.uint32))) & (2 ** bits - 1)
        expected = pack(zeros.reshape(z.shape[0], -1).astype(np.int64) - 1, bits, 1)
        assert np.array_equal(stored[m + ".qzeros"].numpy(), expected), m
    values = dequantize(v1, tmp_path / "deq-v1", "f32")
    for m in MODULES:
        same_bits(torch, values[m + ".weight"], want[m + ".weight"], m + " (v1)")
    check_gptq(torch, v1, values)
    ct = converted(tmp_path, v1, "ct", "compressed-tensors")
    check_ct(torch, ct, values)
    again = converted(tmp_path, ct, "again", "gptq")
    assert raw_tensors(again) == raw_tensors(v1)
    if bits == 4:
        check_awq(torch, converted(tmp_path, v1, "awq", "awq"), values)


def test_v2_zero_of_zero_refused_in_v1_kept_in_compressed_tensors(tmp_path):
    """A zero point of 0 has no v1 form (zero - 1 = -1 wraps): --format gptq refuses it by name, nothing written;
    compressed-tensors holds it (its decompressor reads the source's values). With act order (desc_act), v2 -> v1
    keeps g_idx and desc_act."""
    torch = need("torch")
    need("compressed_tensors")
    src, want = v2_source(torch, tmp_path, 4, zeros_from=0)
    r = convert(tmp_path, src, tmp_path / "v1", "gptq")
    assert r.returncode == 2 and "is 0, which GPTQ v1 stores as zero - 1" in r.stderr, r.stderr
    assert MODULES[0] + ".qweight" in r.stderr or MODULES[1] + ".qweight" in r.stderr, r.stderr
    assert not (tmp_path / "v1").exists()
    check_ct(torch, converted(tmp_path, src, "ct", "compressed-tensors"), want)
    ordered, want = v2_source(torch, tmp_path, 4, zeros_from=1, act_order=True, name="ordered")
    v1 = converted(tmp_path, ordered, "ordered-v1", "gptq")
    assert config_of(v1)["desc_act"] is True and config_of(v1)["checkpoint_format"] == "gptq"
    check_gptq(torch, v1, want)
