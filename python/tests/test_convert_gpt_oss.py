"""`minifloat convert --format gpt-oss`: a tiny bf16 GptOss model (built by transformers from a config) with its MoE
experts written as gpt-oss writes them (X_blocks U8 [E, R, C/32, 16], X_scales U8 [E, R, C/32], quant_method mxfp4),
loaded by transformers' own from_pretrained on the CPU (its Mxfp4 quantizer dequantizes to bf16 there): every weight
bit-identical to `minifloat dequantize` of the same output, close to the source in the source's layout (a transposed
or de-interleaved expert would be off by its whole size), and the logits equal those of the dequantized model."""
import json
import os

import pytest

from checkpoint_util import load, minifloat, same_bits
from conftest import need

os.environ.setdefault("HF_HUB_OFFLINE", "1")
EXPERTS, HIDDEN, FF = 4, 64, 64


def tiny_gpt_oss(torch, out):
    transformers = need("transformers")
    torch.manual_seed(0)
    cfg = transformers.GptOssConfig(hidden_size=HIDDEN, intermediate_size=FF, num_hidden_layers=2,
                                    num_attention_heads=4, num_key_value_heads=2, head_dim=16, vocab_size=128,
                                    num_local_experts=EXPERTS, num_experts_per_tok=2, max_position_embeddings=128)
    model = transformers.GptOssForCausalLM(cfg).to(torch.bfloat16).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if ".experts." in name:
                p.normal_(0, 0.05)  # GptOss initializes experts small; MXFP4 wants ordinary magnitudes
    model.save_pretrained(out)
    return model


def test_gpt_oss_loads_in_transformers(tmp_path):
    torch = need("torch")
    transformers = need("transformers")
    src = tmp_path / "src"
    source = tiny_gpt_oss(torch, src).state_dict()
    r = minifloat("convert", src, tmp_path / "oss", "--recipe", "mxfp4", "--format", "gpt-oss")
    assert r.returncode == 0, r.stderr
    stored = load(tmp_path / "oss")
    for layer in range(2):
        p = f"model.layers.{layer}.mlp.experts."
        assert stored[p + "gate_up_proj_blocks"].dtype == torch.uint8
        assert tuple(stored[p + "gate_up_proj_blocks"].shape) == (EXPERTS, 2 * FF, HIDDEN // 32, 16)
        assert tuple(stored[p + "gate_up_proj_scales"].shape) == (EXPERTS, 2 * FF, HIDDEN // 32)
        assert tuple(stored[p + "down_proj_blocks"].shape) == (EXPERTS, HIDDEN, FF // 32, 16)
        assert tuple(stored[p + "down_proj_scales"].shape) == (EXPERTS, HIDDEN, FF // 32)
        assert p + "gate_up_proj" not in stored
        assert stored[p + "gate_up_proj_bias"].dtype == torch.bfloat16  # biases, router, attention: as they were
    config = json.loads((tmp_path / "oss" / "config.json").read_text())
    assert config["quantization_config"] == {
        "modules_to_not_convert": ["model.layers.*.self_attn", "model.layers.*.mlp.router", "model.embed_tokens",
                                   "lm_head"],
        "quant_method": "mxfp4"}

    r = minifloat("dequantize", tmp_path / "oss", tmp_path / "deq", "--dtype", "bf16")
    assert r.returncode == 0, r.stderr
    ours = load(tmp_path / "deq")
    model, info = transformers.AutoModelForCausalLM.from_pretrained(tmp_path / "oss", dtype=torch.bfloat16,
                                                                    output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"], info
    loaded = model.state_dict()
    assert set(loaded) == set(ours)
    for name, want in ours.items():
        same_bits(torch, loaded[name], want, f"{name}: transformers' load against minifloat dequantize")
        if ".experts." in name and not name.endswith("_bias"):
            err = (loaded[name].float() - source[name].float()).norm() / source[name].float().norm()
            assert err < 0.2, f"{name}: relative error {err:.3f} against the source"

    plain = transformers.AutoModelForCausalLM.from_pretrained(tmp_path / "deq", dtype=torch.bfloat16).eval()
    ids = torch.arange(12).reshape(1, 12)
    with torch.no_grad():
        same_bits(torch, model.eval()(ids).logits, plain(ids).logits, "logits")


def test_gpt_oss_needs_experts(tmp_path):
    torch = need("torch")
    from test_convert_formats import tiny_llama
    tiny_llama(torch, tmp_path / "src")
    r = minifloat("convert", tmp_path / "src", tmp_path / "out", "--recipe", "mxfp4", "--format", "gpt-oss")
    assert r.returncode == 2, r.stderr
    assert "--format gpt-oss quantizes MoE experts" in r.stderr and "none found; nothing was written" in r.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("recipe", ["nvfp4", "fp8-block"])
def test_gpt_oss_refuses_other_schemes(tmp_path, recipe):
    torch = need("torch")
    tiny_gpt_oss(torch, tmp_path / "src")
    r = minifloat("convert", tmp_path / "src", tmp_path / "out", "--recipe", recipe, "--format", "gpt-oss")
    assert r.returncode == 2, r.stderr
    assert f"recipe {recipe} cannot be written as --format gpt-oss" in r.stderr, r.stderr
    assert not (tmp_path / "out").exists()
