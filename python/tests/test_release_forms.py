"""Published releases in miniature (`minifloat make-example-checkpoint --like`) against transformers' own readers,
on the CPU: its FineGrainedFP8 dequantization (`Fp8Dequantize`, which reads the DeepSeek form with F32, E8M0, BF16 or
F16 scales, one scale per tensor, and FP4 experts packed in int8) pair by pair, and `from_pretrained` of the whole
checkpoint, which dequantizes FP8 to bf16 on a machine without a GPU. Every value must equal `minifloat dequantize`
bit for bit, except where transformers reads a partial edge tile wrongly: it takes the block as rows // scale rows,
so DeepSeek-V3's [160, 128] weight with 2 scale rows is read in blocks of 80 rows, not 128 (asserted below, with its
cause). DeepSeek-V4.1 has no model class in transformers 5.23: its pairs are checked with Fp8Dequantize only. The
independent numpy reference of each release's formula is tests/cli/release_cli_test.cc's.
"""
import json

import pytest

from checkpoint_util import minifloat, same_bits
from conftest import need

LIKES = ["deepseek-v4-release", "deepseek-v4.1", "deepseek-v3", "qwen-fp8", "fp8-per-tensor"]


def make(tmp_path, like):
    d = tmp_path / like
    r = minifloat("make-example-checkpoint", d, "--like", like)
    assert r.returncode == 0, r.stderr
    return d


def load_all(torch, d):
    from safetensors.torch import load_file
    idx = json.loads((d / "model.safetensors.index.json").read_text())
    out = {}
    for shard in sorted(set(idx["weight_map"].values())):
        out.update(load_file(str(d / shard)))
    return out


def pairs_of(tensors):
    """weight name -> scale name, by the release's names: W_scale_inv, or X.scale beside an FP8 / I8 X.weight."""
    import torch
    out = {}
    for name, t in tensors.items():
        if not name.endswith(".weight"):
            continue
        module = name[: -len(".weight")]
        if name + "_scale_inv" in tensors:
            out[name] = name + "_scale_inv"
        elif module + ".scale" in tensors and t.dtype in (torch.float8_e4m3fn, torch.int8):
            out[name] = module + ".scale"
    return out


@pytest.mark.parametrize("like", LIKES)
def test_fp8_dequantize_pair_by_pair(tmp_path, like):
    """transformers' Fp8Dequantize of each stored pair (its own block inference) against minifloat dequantize --dtype
    f32: bit for bit where the grid has whole tiles; on V3's partial tiles it equals the rows // scale-rows reading
    instead, which differs from the published block of 128."""
    torch = need("torch")
    need("transformers")
    from transformers.integrations.finegrained_fp8 import Fp8Dequantize
    src = make(tmp_path, like)
    r = minifloat("dequantize", src, tmp_path / "deq", "--dtype", "f32")
    assert r.returncode == 0, r.stderr
    stored, plain = load_all(torch, src), load_all(torch, tmp_path / "deq")
    op = Fp8Dequantize(None)
    pairs = pairs_of(stored)
    assert pairs
    misread = []
    for w, s in pairs.items():
        got = op._dequantize_one(stored[w], stored[s], output_dtype=torch.float32)
        want = plain[w]
        if like == "deepseek-v3" and tuple(want.shape) in ((160, 128), (192, 96)):
            # transformers' block: rows // scale_rows = 80 (or 96) rows, where DeepSeek's is 128 with a partial tile.
            sr = stored[s].shape[0]
            q = stored[w].to(torch.float32)
            wrong = q * torch.repeat_interleave(stored[s], q.shape[0] // sr, dim=0)
            same_bits(torch, got, wrong, f"{w}: transformers' own block inference")
            assert not torch.equal(got, want), w
            misread.append(w)
            continue
        same_bits(torch, got, want, f"{w}: transformers' Fp8Dequantize against minifloat dequantize")
    if like == "deepseek-v3":
        assert len(misread) == 6, misread  # kv_a_proj_with_mqa and q_b_proj of layers 0, 1 and the MTP layer 2


def test_fp8_dequantize_f16_scales(tmp_path):
    """Qwen3-4B-Instruct-2507-FP8 stores weight_scale_inv as F16 (checkpoints-in-the-wild.md 3.2): the same pair with
    F16 scales, read by transformers and by minifloat."""
    torch = need("torch")
    need("transformers")
    from safetensors.torch import save_file
    from transformers.integrations.finegrained_fp8 import Fp8Dequantize
    g = torch.Generator().manual_seed(3)
    w = (torch.randn(256, 384, generator=g) * 100).clamp(-448, 448).to(torch.float8_e4m3fn)
    s = (torch.rand(2, 3, generator=g) * 1e-3 + 1e-5).to(torch.float16)
    src = tmp_path / "f16"
    src.mkdir()
    save_file({"model.layers.0.mlp.down_proj.weight": w, "model.layers.0.mlp.down_proj.weight_scale_inv": s},
              str(src / "model.safetensors"))
    r = minifloat("dequantize", src, tmp_path / "deq", "--dtype", "f32")
    assert r.returncode == 0, r.stderr
    from safetensors.torch import load_file
    got = load_file(str(tmp_path / "deq" / "model.safetensors"))["model.layers.0.mlp.down_proj.weight"]
    want = Fp8Dequantize(None)._dequantize_one(w, s, output_dtype=torch.float32)
    same_bits(torch, got, want, "F16 scales")


@pytest.mark.parametrize("like", ["deepseek-v4-release", "deepseek-v3", "qwen-fp8", "fp8-per-tensor"])
def test_from_pretrained_equals_the_dequantized_model(tmp_path, like):
    """from_pretrained of the release (transformers dequantizes FP8 to bf16 on the CPU, renaming DeepSeek-V4's names and
    fusing experts as it loads) against from_pretrained of `minifloat dequantize --dtype f32`'s plain checkpoint: every
    parameter bit for bit, but V3's partial tiles (above). MTP layers are not part of transformers' models: DeepSeek-V4's
    mtp.* are skipped silently, V3's model.layers.2.* are reported unexpected in both loads."""
    torch = need("torch")
    transformers = need("transformers")
    src = make(tmp_path, like)
    r = minifloat("dequantize", src, tmp_path / "plain", "--dtype", "f32")
    assert r.returncode == 0, r.stderr
    model, info = transformers.AutoModelForCausalLM.from_pretrained(src, dtype=torch.bfloat16, output_loading_info=True)
    plain, plain_info = transformers.AutoModelForCausalLM.from_pretrained(tmp_path / "plain", dtype=torch.bfloat16,
                                                                          output_loading_info=True)
    assert not info["missing_keys"] and not plain_info["missing_keys"], (info, plain_info)
    if like == "deepseek-v3":
        assert info["unexpected_keys"] and all(k.startswith("model.layers.2.") for k in info["unexpected_keys"])
    else:
        assert not info["unexpected_keys"], info
    want = plain.state_dict()
    differ = []
    for name, got in model.state_dict().items():
        if like == "deepseek-v3" and ("kv_a_proj_with_mqa" in name or "q_b_proj" in name):
            if not torch.equal(got, want[name].to(got.dtype)):
                differ.append(name)
            continue
        # The plain load may keep a float32 tensor of the f32 checkpoint as float32: its values rounded once to the
        # parameter's dtype are what the quantized load computes, (code x scale).to(dtype).
        same_bits(torch, got, want[name].to(got.dtype),
                  f"{name}: from_pretrained of the release against the dequantized model")
    if like == "deepseek-v3":
        assert len(differ) == 4, differ  # layers 0 and 1: transformers' blocks of 80 and 96 rows
