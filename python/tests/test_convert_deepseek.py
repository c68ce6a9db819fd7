"""`minifloat convert --format deepseek`: a tiny DeepSeek-V3 MoE (built by transformers from a config, every dim a
multiple of 128) written as DeepSeek's V3 (fp8-block: FP8 e4m3 + F32 weight_scale_inv 128x128) and V4 (deepseek-v4:
FP8 with ue8m0 scales, MXFP4 experts as I8 [R, C/2] + ue8m0 [R, C/32]) checkpoints, loaded by transformers'
from_pretrained on the CPU (FineGrainedFP8 dequantizes there): no missing or unexpected keys, every weight
bit-identical to `minifloat dequantize` of --format minifloat's output, and logits equal to those of that model."""
import json
import os

import pytest

from checkpoint_util import assert_refused, dequantize, minifloat, same_bits
from conftest import need

os.environ.setdefault("HF_HUB_OFFLINE", "1")
EXPERTS = 4


def tiny_deepseek_v3(torch, out):
    transformers = need("transformers")
    torch.manual_seed(0)
    cfg = transformers.DeepseekV3Config(
        hidden_size=256, intermediate_size=256, moe_intermediate_size=128, num_hidden_layers=2,
        first_k_dense_replace=1, num_attention_heads=2, num_key_value_heads=2, n_routed_experts=EXPERTS,
        n_shared_experts=1, num_experts_per_tok=2, n_group=1, topk_group=1, q_lora_rank=128, kv_lora_rank=128,
        qk_rope_head_dim=128, qk_nope_head_dim=128, v_head_dim=128, vocab_size=256, max_position_embeddings=128)
    transformers.DeepseekV3ForCausalLM(cfg).to(torch.bfloat16).save_pretrained(out)


def as_model_holds(torch, plain, name, shape):
    """The dequantized checkpoint's tensor for model parameter `name`: transformers fuses each MoE layer's experts
    (gate_up_proj = gate_proj and up_proj of each expert stacked, down_proj stacked)."""
    if name in plain:
        return plain[name]
    prefix, what = name.rsplit(".", 1)
    parts = ["gate_proj", "up_proj"] if what == "gate_up_proj" else [what]
    stacked = torch.stack([torch.cat([plain[f"{prefix}.{e}.{p}.weight"] for p in parts]) for e in range(EXPERTS)])
    assert tuple(stacked.shape) == tuple(shape), (name, stacked.shape, shape)
    return stacked


@pytest.mark.parametrize("recipe,scale_dtype,expert_dtype", [("fp8-block", "F32", "F8_E4M3"),
                                                             ("deepseek-v4", "F8_E8M0", "I8")])
def test_deepseek_loads_in_transformers(tmp_path, recipe, scale_dtype, expert_dtype):
    torch = need("torch")
    transformers = need("transformers")
    from safetensors import safe_open
    src = tmp_path / "src"
    tiny_deepseek_v3(torch, src)
    for fmt in ("deepseek", "minifloat"):
        r = minifloat("convert", src, tmp_path / fmt, "--recipe", recipe, "--format", fmt)
        assert r.returncode == 0, r.stderr
    with safe_open(str(tmp_path / "deepseek" / "model.safetensors"), "np") as f:
        expert = "model.layers.1.mlp.experts.0.up_proj.weight"
        assert f.get_slice(expert).get_dtype() == expert_dtype
        assert f.get_slice(expert).get_shape() == ([128, 128] if expert_dtype == "I8" else [128, 256])
        assert f.get_slice("model.layers.1.self_attn.o_proj.weight_scale_inv").get_dtype() == scale_dtype
    qc = json.loads((tmp_path / "deepseek" / "config.json").read_text())["quantization_config"]
    want = {"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic", "weight_block_size": [128, 128]}
    if recipe == "deepseek-v4":
        want.update(scale_fmt="ue8m0", expert_dtype="fp4")
    assert qc == want, qc

    plain = dequantize(tmp_path / "minifloat", tmp_path / "plain")
    assert dequantize(tmp_path / "deepseek", tmp_path / "deq").keys() == plain.keys()
    model, info = transformers.AutoModelForCausalLM.from_pretrained(tmp_path / "deepseek", dtype=torch.bfloat16,
                                                                    output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"], info
    for name, got in model.state_dict().items():
        want = as_model_holds(torch, plain, name, got.shape).to(got.dtype)  # the router's f32 bias: exact
        same_bits(torch, got, want, f"{name}: transformers' load against minifloat dequantize of --format minifloat")

    reference = transformers.AutoModelForCausalLM.from_pretrained(tmp_path / "plain", dtype=torch.bfloat16).eval()
    ids = torch.arange(10).reshape(1, 10)
    with torch.no_grad():
        same_bits(torch, model.eval()(ids).logits, reference(ids).logits, "logits")


@pytest.mark.parametrize("recipe,can", [("nvfp4", "minifloat, compressed-tensors, modelopt"),
                                        ("mxfp4", "minifloat, compressed-tensors, modelopt, gpt-oss, gguf")])
def test_deepseek_refuses_other_schemes(tmp_path, recipe, can):
    torch = need("torch")
    tiny_deepseek_v3(torch, tmp_path / "src")
    assert_refused(tmp_path / "src", tmp_path / "out", recipe, "deepseek", can)
