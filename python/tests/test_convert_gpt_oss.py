"""`minifloat convert --format gpt-oss`: a tiny bf16 GptOss model (built by transformers from a config) with its MoE
experts written as gpt-oss writes them (X_blocks U8 [E, R, C/32, 16], X_scales U8 [E, R, C/32], quant_method mxfp4),
loaded by transformers' own from_pretrained on the CPU (its Mxfp4 quantizer dequantizes to bf16 there): every weight
bit-identical to `minifloat dequantize` of the same output, close to the source in the source's layout (a transposed
or de-interleaved expert would be off by its whole size), and the logits equal those of the dequantized model."""
import json
import os

import pytest

from checkpoint_util import dequantize, load, minifloat, same_bits
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


# ---- gpt-oss's MXFP4 experts re-laid out: split into per-expert weights of other dialects, and gathered back ----

# Experts only: gpt-oss's fused parameters and the per-expert weights they split into (not their biases).
EXPERTS_ONLY = {"*.experts.gate_up_proj": "mxfp4", "*.experts.down_proj": "mxfp4", "*.experts.*_proj.weight": "mxfp4",
                "*": "keep"}


def gpt_oss_blocks(root):
    """The tiny gpt-oss converted to gpt-oss's own MXFP4 expert blocks in root / "oss", and transformers' load of
    that checkpoint (its state dict, bf16)."""
    torch = need("torch")
    transformers = need("transformers")
    tiny_gpt_oss(torch, root / "src")
    r = minifloat("convert", root / "src", root / "oss", "--recipe", "mxfp4", "--format", "gpt-oss")
    assert r.returncode == 0, r.stderr
    return transformers.AutoModelForCausalLM.from_pretrained(root / "oss", dtype=torch.bfloat16).state_dict()


@pytest.fixture(scope="module")
def oss(tmp_path_factory):
    """A tiny gpt-oss checkpoint with MXFP4 expert blocks, and each expert's weights as transformers' Mxfp4
    quantizer dequantizes them on load (its gate_up_proj [E, H, 2I] de-interleaved and transposed into gate_proj and
    up_proj [I, H], down_proj [E, I, H] transposed): the reference for every dialect's per-expert weights."""
    root = tmp_path_factory.mktemp("oss")
    loaded = gpt_oss_blocks(root)
    recipe = root / "experts.json"
    recipe.write_text(json.dumps(EXPERTS_ONLY))
    experts = {}
    for layer in range(2):
        p = f"model.layers.{layer}.mlp.experts."
        for e in range(EXPERTS):
            experts[f"{p}{e}.gate_proj.weight"] = loaded[p + "gate_up_proj"][e][:, 0::2].T
            experts[f"{p}{e}.up_proj.weight"] = loaded[p + "gate_up_proj"][e][:, 1::2].T
            experts[f"{p}{e}.down_proj.weight"] = loaded[p + "down_proj"][e].T
    return root, recipe, experts


def relaid_rows(stdout):
    rows = [line.split() for line in stdout.splitlines() if "re-laid out" in line]
    assert all(row[-3:] == ["0", "0", "0.000%"] for row in rows), stdout
    return sorted(row[0] for row in rows)


FUSED = sorted(f"model.layers.{layer}.mlp.experts.{p}" for layer in range(2) for p in ("gate_up_proj", "down_proj"))


@pytest.mark.parametrize("fmt", ["minifloat", "compressed-tensors", "modelopt"])
def test_gpt_oss_experts_relaid_out_and_back(oss, tmp_path, fmt):
    """gpt-oss's expert blocks converted into another dialect's per-expert MXFP4 weights with no requantization
    (reported re-laid out, error 0): each expert's weight as that dialect's own library dequantizes it
    (compressed-tensors' MXFP4 decompressor, ModelOpt's MXFP4QTensor, minifloat dequantize for minifloat's form)
    equals transformers' dequantization of the gpt-oss input, bit for bit; and converted back with --format gpt-oss,
    the very files of the input."""
    torch = need("torch")
    root, recipe, experts = oss
    r = minifloat("convert", root / "oss", tmp_path / "mid", "--recipe", recipe, "--format", fmt)
    assert r.returncode == 0, r.stderr
    assert relaid_rows(r.stdout) == FUSED
    stored = load(tmp_path / "mid")
    assert not any(k.endswith(("_blocks", "_scales")) for k in stored)
    bf16 = torch.bfloat16
    if fmt == "minifloat":
        got = dequantize(tmp_path / "mid", tmp_path / "deq")
    elif fmt == "compressed-tensors":
        from compressed_tensors.compressors import BaseCompressor
        from compressed_tensors.quantization import QuantizationConfig
        parsed = QuantizationConfig.model_validate(
            json.loads((tmp_path / "mid" / "config.json").read_text())["quantization_config"])
        compressor = BaseCompressor.get_value_from_registry(parsed.format)
        got = {}
        for name in experts:
            m = name[:-len(".weight")]
            parts = {k[len(m) + 1:]: v for k, v in stored.items() if k.rsplit(".", 1)[0] == m}
            got[name] = compressor.decompress(parts, parsed.config_groups["group_0"])["weight"].to(bf16)
    else:
        qt = need("modelopt.torch.quantization.qtensor")
        got = {name: qt.MXFP4QTensor(torch.Size([stored[name].shape[0], stored[name].shape[1] * 2]), bf16,
                                     stored[name]).dequantize(dtype=bf16, scale=stored[name + "_scale"],
                                                              block_sizes={-1: 32}) for name in experts}
    for name, want in experts.items():
        same_bits(torch, got[name], want, f"{name} ({fmt}) against transformers' gpt-oss load",
                  zero_sign=fmt != "modelopt")  # ModelOpt decodes the code 8 (-0) as +0

    r = minifloat("convert", tmp_path / "mid", tmp_path / "back", "--recipe", "mxfp4", "--format", "gpt-oss")
    assert r.returncode == 0, r.stderr
    assert relaid_rows(r.stdout) == FUSED
    for f in ("model.safetensors", "config.json"):
        assert (tmp_path / "back" / f).read_bytes() == (root / "oss" / f).read_bytes(), f


def test_gpt_oss_to_gpt_oss_is_a_copy(oss, tmp_path):
    root, _, _ = oss
    r = minifloat("convert", root / "oss", tmp_path / "same", "--recipe", "mxfp4", "--format", "gpt-oss")
    assert r.returncode == 0, r.stderr
    assert relaid_rows(r.stdout) == FUSED
    assert (tmp_path / "same" / "model.safetensors").read_bytes() == (root / "oss" / "model.safetensors").read_bytes()


def test_gpt_oss_blocks_not_requantized(oss, tmp_path):
    """gpt-oss's MXFP4 experts asked for as another scheme: refused (a requantization), naming the tensor."""
    root, _, _ = oss
    r = minifloat("convert", root / "oss", tmp_path / "out", "--recipe", "nvfp4", "--format", "compressed-tensors")
    assert r.returncode == 2, r.stderr
    assert "experts.down_proj_blocks' is already quantized (X_blocks + X_scales pair" in r.stderr, r.stderr
    assert "is nvfp4: --format compressed-tensors cannot hold it as it is" in r.stderr, r.stderr
    assert "gpt-oss's expert blocks go to MXFP4 only" in r.stderr and "nothing was written" in r.stderr, r.stderr
    assert not (tmp_path / "out").exists()


def test_gpt_oss_gathers_whole_layers_only(oss, tmp_path):
    """Per-expert MXFP4 weights with one expert's up_proj missing cannot make gpt-oss's fused gate_up_proj: refused,
    naming it, nothing written."""
    from safetensors.torch import save_file
    root, recipe, _ = oss
    r = minifloat("convert", root / "oss", tmp_path / "ct", "--recipe", recipe, "--format", "compressed-tensors")
    assert r.returncode == 0, r.stderr
    stored = load(tmp_path / "ct")
    gone = "model.layers.1.mlp.experts.3.up_proj.weight"
    del stored[gone + "_packed"], stored[gone + "_scale"]
    save_file(stored, str(tmp_path / "ct" / "model.safetensors"))
    r = minifloat("convert", tmp_path / "ct", tmp_path / "out", "--recipe", "mxfp4", "--format", "gpt-oss")
    assert r.returncode == 2, r.stderr
    assert f"the MXFP4 experts model.layers.1.mlp.experts.*: {gone} is missing or not MXFP4" in r.stderr, r.stderr
    assert "nothing was written" in r.stderr and not (tmp_path / "out").exists()


def test_gpt_oss_refuses_quantized_weights_that_are_no_experts(tmp_path):
    """A Llama's MXFP4 projections (no MoE experts) have no place in gpt-oss's dialect, which quantizes experts
    only: refused, naming the first, nothing written."""
    torch = need("torch")
    from test_convert_formats import tiny_llama
    tiny_llama(torch, tmp_path / "src")
    r = minifloat("convert", tmp_path / "src", tmp_path / "own", "--recipe", "mxfp4")
    assert r.returncode == 0, r.stderr
    r = minifloat("convert", tmp_path / "own", tmp_path / "out", "--recipe", "mxfp4", "--format", "gpt-oss")
    assert r.returncode == 2, r.stderr
    assert "down_proj.weight' is already quantized (W + W_scale_inv pair, e2m1-1x32-ue8m0" in r.stderr, r.stderr
    assert "but is no MoE expert: --format gpt-oss quantizes only experts" in r.stderr, r.stderr
    assert not (tmp_path / "out").exists()
