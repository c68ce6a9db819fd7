"""The integer-word releases in miniature (`make-example-checkpoint --like autoawq | gptq | gptq-v2 |
compressed-tensors-w4a16 | compressed-tensors-w4a16-asym | kimi-k2-thinking | compressed-tensors-mixed-nvfp4`): every
command runs on each (inspect names the family, verify, dequantize, convert, memory), and the dequantized values
equal readers independent of minifloat: AutoAWQ's unpack order and llama.cpp's `dequant_gptq` (v1 and gptq_v2),
written out in numpy (test_int4_relayout.py), and compressed-tensors' own decompressors, module by module, each with
the config group that targets it. The layout (names, dtypes, shapes, config.json, side files) is checked against what
each library writes (docs/checkpoints.md "Published releases in miniature")."""
import json
import re

import numpy as np
import pytest

from checkpoint_util import minifloat, same_bits
from conftest import need
from test_int4_relayout import awq_values, gptq_values
from test_release_forms import load_all

FAMILY = {
    "autoawq": "AutoAWQ (qweight + qzeros + scales) x 14",
    "gptq": "AutoGPTQ (qweight + qzeros + scales) x 14",
    "gptq-v2": "AutoGPTQ (qweight + qzeros + scales) x 14",
    "compressed-tensors-w4a16": "compressed-tensors pack-quantized x 14",
    "compressed-tensors-w4a16-asym": "compressed-tensors pack-quantized x 14",
    "kimi-k2-thinking": "compressed-tensors pack-quantized x 12",
    "compressed-tensors-mixed-nvfp4": "compressed-tensors mixed-precision, float-quantized, nvfp4-pack-quantized x 15",
}


def make(tmp_path, like):
    d = tmp_path / like
    r = minifloat("make-example-checkpoint", d, "--like", like)
    assert r.returncode == 0, r.stderr
    return d


def config_of(d):
    return json.loads((d / "config.json").read_text())


def dequantized(torch, src, dst):
    r = minifloat("dequantize", src, dst, "--dtype", "f32")
    assert r.returncode == 0, r.stderr
    return load_all(torch, dst)


@pytest.mark.parametrize("like", list(FAMILY))
def test_every_command(tmp_path, like):
    torch = need("torch")
    src = make(tmp_path, like)
    r = minifloat("inspect", src)
    assert r.returncode == 0 and f"family: {FAMILY[like]}" in r.stdout, r.stderr + r.stdout
    r = minifloat("verify", src)
    assert r.returncode == 0, r.stderr + r.stdout
    deq = dequantized(torch, src, tmp_path / "deq")
    assert not any(k.endswith((".qweight", ".qzeros", ".scales", ".g_idx", "_packed", "_scale", "_zero_point",
                               "_shape", "_global_scale")) for k in deq), sorted(deq)
    r = minifloat("memory", "--config", src / "config.json", "--recipe", "fp8-block")
    assert r.returncode == 0, r.stderr
    for recipe in ("fp8-block", "mxfp4"):
        out = tmp_path / f"out-{recipe}"
        r = minifloat("convert", src, out, "--recipe", recipe)
        assert r.returncode == 0, recipe + ": " + r.stderr
        for cmd in ("verify", "inspect"):
            assert minifloat(cmd, out).returncode == 0, (recipe, cmd)


def test_autoawq(tmp_path):
    """AutoAWQ's layout and config (to_transformers_dict); AutoAWQ's unpack reads minifloat's values; F16 model."""
    torch = need("torch")
    src = make(tmp_path, "autoawq")
    assert config_of(src)["quantization_config"] == {"quant_method": "awq", "zero_point": True, "group_size": 128,
                                                     "bits": 4, "version": "gemm", "modules_to_not_convert": None}
    stored, deq = load_all(torch, src), dequantized(torch, src, tmp_path / "deq")
    m = "model.layers.0.mlp.down_proj"  # [128, 256]: two groups
    assert stored[m + ".qweight"].shape == (256, 16) and stored[m + ".qzeros"].shape == (2, 16)
    assert stored[m + ".scales"].shape == (2, 128) and stored[m + ".scales"].dtype == torch.float16
    assert stored["model.norm.weight"].dtype == torch.float16
    for name in [k[:-8] for k in stored if k.endswith(".qweight")]:
        got = awq_values(torch, stored[name + ".qweight"], stored[name + ".qzeros"], stored[name + ".scales"])
        same_bits(torch, deq[name + ".weight"], got, name + " (AutoAWQ's unpack)")


@pytest.mark.parametrize("like", ["gptq", "gptq-v2"])
def test_gptq(tmp_path, like):
    """AutoGPTQ v1 with desc_act (a g_idx out of order, zeros stored - 1, every symmetric zero stored 7) and GPTQModel's
    gptq_v2 (asymmetric, zeros as they are): config.json and quantize_config.json agree, and llama.cpp's
    dequant_gptq of each format reads minifloat's values."""
    torch = need("torch")
    src = make(tmp_path, like)
    q = config_of(src)["quantization_config"]
    assert json.loads((src / "quantize_config.json").read_text()) == q
    assert q["checkpoint_format"] == ("gptq" if like == "gptq" else "gptq_v2") and q["bits"] == 4
    assert q["group_size"] == 128 and q["desc_act"] == (like == "gptq") and q["sym"] == (like == "gptq")
    stored, deq = load_all(torch, src), dequantized(torch, src, tmp_path / "deq")
    m = "model.layers.0.mlp.down_proj"
    g = stored[m + ".g_idx"]
    assert stored[m + ".qweight"].shape == (32, 128) and stored[m + ".qzeros"].shape == (2, 16) and g.shape == (256,)
    in_order = torch.equal(g, torch.arange(256, dtype=torch.int32) // 128)
    assert in_order == (like == "gptq-v2") and torch.equal(torch.bincount(g), torch.tensor([128, 128]))
    if like == "gptq":
        assert (stored[m + ".qzeros"].numpy().view(np.uint32) == 0x77777777).all()
    for name in [k[:-8] for k in stored if k.endswith(".qweight")]:
        got = gptq_values(torch, stored[name + ".qweight"], stored[name + ".qzeros"], stored[name + ".scales"],
                          stored[name + ".g_idx"], 4, q["checkpoint_format"])
        same_bits(torch, deq[name + ".weight"], got, name + " (llama.cpp's dequant_gptq)")
    # convert --format gguf reads the zero points as the config declares them too (gguf-py reads the file back)
    gguf = need("gguf")
    r = minifloat("convert", src, tmp_path / "m.gguf", "--format", "gguf", "--recipe", "f32", "--no-tokenizer")
    assert r.returncode == 0, r.stderr
    tensors = {t.name: t for t in gguf.GGUFReader(str(tmp_path / "m.gguf")).tensors}
    got = np.array(tensors["blk.0.ffn_down.weight"].data).reshape(128, 256)
    assert np.array_equal(got, deq[m + ".weight"].numpy()), "blk.0.ffn_down.weight"


def group_for(qc, module):
    """The config group whose targets match `module` (an exact name, "re:" a regex, or the class "Linear")."""
    for g in qc.config_groups.values():
        for t in g.targets:
            if t == module or t == "Linear" or (t.startswith("re:") and re.match(t[3:], module)):
                return g
    return None


def ct_check(torch, src, deq):
    """Each quantized module decompressed by compressed-tensors' compressor of its group's format (the top-level one
    when the group names none), with the group's scheme; equal to minifloat's value rounded to the scale's dtype, in
    which the library computes."""
    from compressed_tensors.compressors import BaseCompressor
    from compressed_tensors.quantization import QuantizationConfig
    qc = QuantizationConfig.model_validate(config_of(src)["quantization_config"])
    stored = load_all(torch, src)
    modules = sorted({k.rsplit(".", 1)[0] for k in stored if k.endswith((".weight_packed", ".weight_scale"))})
    for m in modules:
        scheme = group_for(qc, m)
        assert scheme is not None, m
        fmt = scheme.format or qc.format
        compressor = BaseCompressor.get_value_from_registry(fmt)
        parts = {k[len(m) + 1:]: v for k, v in stored.items() if k.rsplit(".", 1)[0] == m}
        w = compressor.decompress(parts, scheme)["weight"]
        same_bits(torch, w, deq[m + ".weight"].to(w.dtype), f"{m} (compressed-tensors' {fmt} decompressor)")
    return modules


@pytest.mark.parametrize("like", ["compressed-tensors-w4a16", "compressed-tensors-w4a16-asym"])
def test_compressed_tensors_w4a16(tmp_path, like):
    torch = need("torch")
    need("compressed_tensors")
    src = make(tmp_path, like)
    asym = like.endswith("asym")
    w = config_of(src)["quantization_config"]["config_groups"]["group_0"]["weights"]
    assert (w["num_bits"], w["type"], w["strategy"], w["group_size"], w["symmetric"]) == (4, "int", "group", 128,
                                                                                          not asym)
    stored = load_all(torch, src)
    m = "model.layers.0.mlp.down_proj"
    assert stored[m + ".weight_packed"].shape == (128, 32) and stored[m + ".weight_scale"].dtype == torch.bfloat16
    assert stored[m + ".weight_scale"].shape == (128, 2) and stored[m + ".weight_shape"].tolist() == [128, 256]
    assert (m + ".weight_zero_point" in stored) == asym
    if asym:
        assert stored[m + ".weight_zero_point"].shape == (16, 2)
    assert len(ct_check(torch, src, dequantized(torch, src, tmp_path / "deq"))) == 14


def test_kimi_k2_thinking(tmp_path):
    """DeepSeek-V3's architecture with only the routed experts INT4 (group 32, BF16 scales), the ignore list of the
    release (section 4.1); compressed-tensors' decompressor reads minifloat's values."""
    torch = need("torch")
    need("compressed_tensors")
    src = make(tmp_path, "kimi-k2-thinking")
    config = config_of(src)
    assert config["architectures"] == ["DeepseekV3ForCausalLM"] and config["model_type"] == "kimi_k2"
    q = config["quantization_config"]
    assert q["format"] == "pack-quantized" and q["config_groups"]["group_0"]["weights"]["group_size"] == 32
    assert q["ignore"] == ["lm_head", "re:.*self_attn.*", "re:.*shared_experts.*",
                           "re:.*mlp\\.(gate|up|gate_up|down)_proj.*"]
    stored = load_all(torch, src)
    for name, t in stored.items():
        expert = ".mlp.experts." in name
        if name.endswith("weight_packed"):
            assert expert and t.dtype == torch.int32, name
        if not expert and name.endswith(".weight") and t.dim() == 2:
            assert t.dtype == torch.bfloat16, name
    m = "model.layers.1.mlp.experts.0.down_proj"  # [128, 96]
    assert stored[m + ".weight_packed"].shape == (128, 12) and stored[m + ".weight_scale"].shape == (128, 3)
    assert stored[m + ".weight_scale"].dtype == torch.bfloat16
    modules = ct_check(torch, src, dequantized(torch, src, tmp_path / "deq"))
    assert len(modules) == 12 and all(".mlp.experts." in m for m in modules)


def test_compressed_tensors_mixed_nvfp4(tmp_path):
    """FP8 per-channel attention (and lm_head) beside NVFP4 MLPs, the top-level format mixed-precision; each module
    read by its group's decompressor (float-quantized, nvfp4-pack-quantized)."""
    torch = need("torch")
    need("compressed_tensors")
    src = make(tmp_path, "compressed-tensors-mixed-nvfp4")
    q = config_of(src)["quantization_config"]
    assert q["format"] == "mixed-precision"
    assert [g["format"] for g in q["config_groups"].values()] == ["float-quantized", "nvfp4-pack-quantized"]
    stored = load_all(torch, src)
    a, m = "model.layers.0.self_attn.q_proj", "model.layers.0.mlp.down_proj"
    assert stored[a + ".weight"].dtype == torch.float8_e4m3fn and stored[a + ".weight_scale"].shape == (256, 1)
    assert stored[m + ".weight_packed"].shape == (128, 128) and stored[m + ".weight_scale"].shape == (128, 16)
    assert stored[m + ".weight_global_scale"].shape == (1,) and m + ".input_global_scale" in stored
    assert len(ct_check(torch, src, dequantized(torch, src, tmp_path / "deq"))) == 15
