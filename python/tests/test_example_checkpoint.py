"""`minifloat make-example-checkpoint --arch A`: tiny checkpoints that are real models in miniature.

Each architecture's config.json and tensors must load in transformers' own model class (from_pretrained, CPU) with
no missing, unexpected or mismatched keys, every weight as stored, and a forward pass with finite logits; and the
built-in recipes must still convert them."""
import json
import os

import pytest

from checkpoint_util import minifloat
from conftest import need

os.environ.setdefault("HF_HUB_OFFLINE", "1")
# DeepSeek's names and transformers' for a few of V4's tensors of each kind.
V4_NAMES = {
    "embed.weight": "model.embed_tokens.weight", "head.weight": "lm_head.weight", "norm.weight": "model.norm.weight",
    "hc_head_fn": "model.hc_head.hc_fn", "hc_head_scale": "model.hc_head.hc_scale",
    "layers.0.hc_attn_fn": "model.layers.0.attn_hc.fn", "layers.1.hc_ffn_base": "model.layers.1.ffn_hc.base",
    "layers.0.attn_norm.weight": "model.layers.0.input_layernorm.weight",
    "layers.0.attn.attn_sink": "model.layers.0.self_attn.sinks",
    "layers.0.attn.wq_a.weight": "model.layers.0.self_attn.q_a_proj.weight",
    "layers.0.attn.q_norm.weight": "model.layers.0.self_attn.q_a_norm.weight",
    "layers.0.attn.wo_a.weight": "model.layers.0.self_attn.o_a_proj.weight",
    "layers.0.attn.wo_b.weight": "model.layers.0.self_attn.o_b_proj.weight",
    "layers.0.attn.compressor.ape": "model.layers.0.self_attn.compressor.position_bias",
    "layers.1.attn.compressor.wkv.weight": "model.layers.1.self_attn.compressor.kv_proj.weight",
    "layers.1.attn.indexer.compressor.wgate.weight":
        "model.layers.1.self_attn.compressor.indexer.gate_proj.weight",
    "layers.1.attn.indexer.wq_b.weight": "model.layers.1.self_attn.compressor.indexer.q_b_proj.weight",
    "layers.1.attn.indexer.weights_proj.weight":
        "model.layers.1.self_attn.compressor.indexer.scorer.weights_proj.weight",
    "layers.0.ffn.gate.tid2eid": "model.layers.0.mlp.gate.tid2eid",
    "layers.1.ffn.gate.bias": "model.layers.1.mlp.gate.e_score_correction_bias",
    "layers.1.ffn.shared_experts.w2.weight": "model.layers.1.mlp.shared_experts.down_proj.weight",
}
ARCHS = {"llama": "LlamaForCausalLM", "qwen-moe": "Qwen3MoeForCausalLM", "deepseek-v4": "DeepseekV4ForCausalLM"}


def make(path, arch):
    r = minifloat("make-example-checkpoint", path, "--arch", arch)
    assert r.returncode == 0, r.stderr
    return r.stdout


@pytest.mark.parametrize("arch", ARCHS)
def test_loads_in_transformers(tmp_path, arch):
    torch = need("torch")
    transformers = need("transformers")
    from safetensors.torch import load_file
    make(tmp_path / "m", arch)
    config = json.loads((tmp_path / "m" / "config.json").read_text())
    assert config["architectures"] == [ARCHS[arch]]
    model, info = transformers.AutoModelForCausalLM.from_pretrained(tmp_path / "m", output_loading_info=True)
    assert type(model).__name__ == ARCHS[arch]
    assert not info["missing_keys"] and not info["unexpected_keys"] and not info["mismatched_keys"], info
    assert model.dtype == torch.bfloat16
    # Weights as stored: under the same name (Llama, Qwen), under transformers' V4 names, and the experts fused
    # (gate and up concatenated per expert).
    stored = {}
    for shard in sorted((tmp_path / "m").glob("*.safetensors")):
        stored.update(load_file(str(shard)))
    params = dict(model.state_dict())
    names = V4_NAMES if arch == "deepseek-v4" else {k: k for k in stored if ".experts." not in k}
    for k, v in names.items():
        assert torch.equal(params[v], stored[k]), f"{k} as {v}"
    if arch != "llama":
        gate, up, down = ("w1", "w3", "w2") if arch == "deepseek-v4" else ("gate_proj", "up_proj", "down_proj")
        prefix, mlp = ("layers.", "ffn") if arch == "deepseek-v4" else ("model.layers.", "mlp")
        for layer in range(config["num_hidden_layers"]):
            fused = f"model.layers.{layer}.mlp.experts."
            for e in range(4):
                x = f"{prefix}{layer}.{mlp}.experts.{e}."
                want = torch.cat([stored[x + gate + ".weight"], stored[x + up + ".weight"]])
                assert torch.equal(params[fused + "gate_up_proj"][e], want), x
                assert torch.equal(params[fused + "down_proj"][e], stored[x + down + ".weight"]), x
    # `memory` counts the tensors the config implies (model_tensors): as many as transformers' state dict holds.
    r = minifloat("memory", "--config", tmp_path / "m" / "config.json")
    assert r.returncode == 0, r.stderr
    assert f"total: {sum(v.numel() for v in params.values())} parameters" in r.stdout, r.stdout
    with torch.no_grad():
        logits = model(torch.tensor([[3, 1, 4, 1, 5, 9, 2, 6]])).logits
    assert logits.shape == (1, 8, config["vocab_size"])
    assert torch.isfinite(logits).all()


def test_deepseek_v4_names_are_deepseeks(tmp_path):
    """The V4 example keeps DeepSeek's own names (those the built-in deepseek-v4 recipe matches) and the
    tensors the simplified default lacks."""
    from safetensors import safe_open
    out = make(tmp_path / "m", "deepseek-v4")
    assert "config.json (deepseek_v4, bfloat16)" in out, out
    names = set()
    for shard in (tmp_path / "m").glob("*.safetensors"):
        with safe_open(str(shard), "np") as f:
            names |= set(f.keys())
            if "layers.0.ffn.gate.tid2eid" in f.keys():
                assert f.get_slice("layers.0.ffn.gate.tid2eid").get_dtype() == "I64"
    for name in ("embed.weight", "head.weight", "hc_head_fn", "layers.0.attn.attn_sink", "layers.0.attn.wo_a.weight",
                 "layers.0.attn.compressor.ape", "layers.1.attn.indexer.compressor.wkv.weight",
                 "layers.1.attn.indexer.weights_proj.weight", "layers.1.ffn.gate.bias", "layers.0.ffn.gate.tid2eid",
                 "layers.1.ffn.experts.3.w2.weight", "layers.1.ffn.shared_experts.w1.weight"):
        assert name in names, name


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("recipe", ["deepseek-v4", "fp8-block", "mxfp8", "mxfp4", "nvfp4"])
def test_recipes_convert_it(tmp_path, arch, recipe):
    make(tmp_path / "m", arch)
    r = minifloat("convert", tmp_path / "m", tmp_path / "q", "--recipe", recipe)
    assert r.returncode == 0, r.stderr
    r = minifloat("verify", tmp_path / "q")
    assert r.returncode == 0, r.stderr + r.stdout


def test_python_api_writes_the_same(tmp_path):
    import minifloat as mf
    make(tmp_path / "cli", "llama")
    mf.make_example_checkpoint(tmp_path / "py", arch="llama")
    for f in ("config.json", "model.safetensors.index.json", "model-00001-of-00002.safetensors"):
        assert (tmp_path / "cli" / f).read_bytes() == (tmp_path / "py" / f).read_bytes(), f
    with pytest.raises(ValueError, match="unknown example architecture 'gpt'"):
        mf.make_example_checkpoint(tmp_path / "bad", arch="gpt")


def test_unknown_arch_is_a_usage_error(tmp_path):
    r = minifloat("make-example-checkpoint", tmp_path / "m", "--arch", "gpt")
    assert r.returncode == 2 and "--arch" in r.stderr, r.stderr
    assert not (tmp_path / "m").exists()
