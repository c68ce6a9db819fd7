"""NVIDIA ModelOpt's other HF exports (checkpoints-in-the-wild.md 6.3), read by `minifloat dequantize` and checked
against ModelOpt's own code on the CPU: a tiny Llama quantized by `mtq.quantize` with ModelOpt's presets and written
by its `export_hf_checkpoint`, each weight compared bit for bit with ModelOpt's own dequantization where it has one
(`from_quantized_weight` for INT8, the QTensor classes for FP8, NVFP4 and MXFP4) and, for INT4 (W4A16_AWQ), with the
inverse of its `pack_int4_in_uint8` written out here and checked by packing the values back with ModelOpt's function.
AWQ / SmoothQuant smoothing (`pre_quant_scale`, which the engine multiplies into the activations) is folded into the
plain weight: W[r, c] x pre_quant_scale[c], rounded once to f32. W4A8_AWQ is refused by name.

The `make-example-checkpoint --like modelopt-*` miniatures are held to the same exports: the same tensor names,
dtypes and shapes as ModelOpt's export of the same model, and config.json's quantization_config as ModelOpt's own
convert_hf_quant_config_format derives it from hf_quant_config.json.
"""
import json
import os

import numpy as np
import pytest

from checkpoint_util import load, minifloat, same_bits
from conftest import need

os.environ.setdefault("HF_HUB_OFFLINE", "1")

# quant_algo as hf_quant_config.json names it -> ModelOpt's preset
PRESETS = {"FP8_PER_CHANNEL_PER_TOKEN": "FP8_PER_CHANNEL_PER_TOKEN_CFG", "W4A16_AWQ": "INT4_AWQ_CFG",
           "W8A16": "INT8_WEIGHT_ONLY_CFG", "W8A8_SQ_PER_CHANNEL": "INT8_SMOOTHQUANT_CFG",
           "W4A16_NVFP4": "W4A16_NVFP4_CFG", "W4A8_NVFP4_FP8": "W4A8_NVFP4_FP8_CFG",
           "NVFP4_AWQ": "NVFP4_AWQ_LITE_CFG", "W4A8_MXFP4_FP8": "W4A8_MXFP4_FP8_CFG", "W4A8_AWQ": "W4A8_AWQ_BETA_CFG"}
LIKES = {"modelopt-fp8-pc-pt": "FP8_PER_CHANNEL_PER_TOKEN", "modelopt-w4a16-awq": "W4A16_AWQ",
         "modelopt-w8a16": "W8A16", "modelopt-w8a8-sq": "W8A8_SQ_PER_CHANNEL", "modelopt-w4a8-awq": "W4A8_AWQ"}


def llama_from(torch, config):
    transformers = need("transformers")
    torch.manual_seed(0)
    cfg = transformers.LlamaConfig(**config)
    return transformers.LlamaForCausalLM(cfg).to(torch.bfloat16).eval()


TINY = dict(hidden_size=256, intermediate_size=384, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
            vocab_size=512, max_position_embeddings=128, architectures=["LlamaForCausalLM"])


def export(torch, model, algo, out):
    """`model` quantized by ModelOpt's preset for `algo` (two calibration batches) and exported by ModelOpt.

    NVFP4_AWQ's calibration needs CUDA in ModelOpt 0.47 ("amax must be a CUDA tensor for dynamic block
    quantization"): its checkpoint is ModelOpt's NVFP4 export with AWQ's one addition, the pre_quant_scale BF16 [C]
    of o_proj and down_proj (where ModelOpt's INT4 AWQ export leaves them: the others are folded into the norms),
    and its quant_algo renamed in both configs."""
    mtq = need("modelopt.torch.quantization")
    from modelopt.torch.export import export_hf_checkpoint
    vocab = model.config.vocab_size

    def calibrate(m):
        with torch.no_grad():
            for _ in range(2):
                m(torch.randint(0, vocab, (2, 16)))
    preset = "NVFP4_DEFAULT_CFG" if algo == "NVFP4_AWQ" else PRESETS[algo]
    model = mtq.quantize(model, getattr(mtq, preset), calibrate)
    export_hf_checkpoint(model, export_dir=out)
    if algo == "NVFP4_AWQ":
        from safetensors.torch import load_file, save_file
        g = torch.Generator().manual_seed(1)
        for f in sorted(out.glob("*.safetensors")):
            t = load_file(str(f))
            for k in [k for k in t if k.endswith((".o_proj.weight", ".down_proj.weight"))]:
                cols = t[k].shape[1] * 2
                t[k[:-len(".weight")] + ".pre_quant_scale"] = (torch.rand(cols, generator=g) + 0.5).to(torch.bfloat16)
            save_file(t, str(f), metadata={"format": "pt"})
        for name, key in (("hf_quant_config.json", "quantization"), ("config.json", "quantization_config")):
            c = json.loads((out / name).read_text())
            c[key]["quant_algo"] = "NVFP4_AWQ"
            (out / name).write_text(json.dumps(c, indent=2))
    return json.loads((out / "hf_quant_config.json").read_text())


def nibbles_by_rows(torch, w):
    """The inverse of ModelOpt's pack_int4_in_uint8 (quant_utils.py) for a 2-D weight: byte [i, c] holds output rows
    2i (low nibble) and 2i+1 (high nibble) of column c, each a two's-complement int4."""
    b = w.to(torch.int32)
    lo, hi = b & 15, b >> 4
    q = torch.stack([lo, hi], dim=1).reshape(2 * w.shape[0], w.shape[1])
    return torch.where(q >= 8, q - 16, q)


def reference(torch, algo, stored, mod):
    """The f32 weight of module `mod` by ModelOpt's own dequantization (or the packing's inverse, for INT4), with
    pre_quant_scale folded in; and, for INT4, the codes' values before the fold, for the packing check."""
    qt = need("modelopt.torch.quantization.qtensor")
    from modelopt.torch.export.quant_utils import from_quantized_weight
    w, s = stored[mod + ".weight"], stored[mod + ".weight_scale"]
    f32 = torch.float32
    if algo == "FP8_PER_CHANNEL_PER_TOKEN":
        want = qt.FP8QTensor(w.shape, f32, w).dequantize(dtype=f32, scale=s.view(-1, 1))
    elif algo in ("W8A16", "W8A8_SQ_PER_CHANNEL"):
        want = from_quantized_weight(w, s, "int8_wo", f32)
    elif algo in ("W4A16_AWQ",):
        g = w.shape[1] // s.shape[1]
        want = nibbles_by_rows(torch, w).to(f32) * s.to(f32).repeat_interleave(g, dim=1)
    elif algo == "W4A8_MXFP4_FP8":
        want = qt.MXFP4QTensor(torch.Size([w.shape[0], w.shape[1] * 2]), f32, w).dequantize(
            dtype=f32, scale=s, block_sizes={-1: 32})
    else:  # the NVFP4 tensors: W4A16_NVFP4, NVFP4_AWQ; W4A8_NVFP4_FP8 with blocks of 32 (its group_size)
        block = 2 * w.shape[1] // s.shape[1]
        want = qt.NVFP4QTensor(torch.Size([w.shape[0], w.shape[1] * 2]), f32, w).dequantize(
            dtype=f32, scale=s, double_scale=stored[mod + ".weight_scale_2"], block_sizes={-1: block})
    codes = want
    pqs = stored.get(mod + ".pre_quant_scale")
    if pqs is not None:
        want = want * pqs.to(f32)
    return want, codes


def check_dequantized(torch, tmp_path, src, algo):
    stored = load(src)
    r = minifloat("dequantize", src, tmp_path / "f32", "--dtype", "f32")
    assert r.returncode == 0, r.stderr
    out = load(tmp_path / "f32")
    leftovers = [k for k in out if "scale" in k]
    assert leftovers == [], leftovers
    modules = sorted({k[:-len(".weight_scale")] for k in stored if k.endswith(".weight_scale")})
    assert len(modules) == 14, modules  # 2 layers x (q, k, v, o, gate, up, down)
    for mod in modules:
        want, codes = reference(torch, algo, stored, mod)
        # ModelOpt's NVFP4 and MXFP4 decode the e2m1 code 8 (-0) as +0
        same_bits(torch, out[mod + ".weight"], want, f"{algo} {mod}", zero_sign="FP4" not in algo)
        if algo == "W4A16_AWQ":  # ModelOpt's own packer gives the stored bytes back from the values read
            from modelopt.torch.export.quant_utils import pack_int4_in_uint8
            s = stored[mod + ".weight_scale"].to(torch.float32)
            repacked = pack_int4_in_uint8(codes, s, codes.shape[1] // s.shape[1])
            assert torch.equal(repacked, stored[mod + ".weight"]), mod
    return stored, out


@pytest.mark.parametrize("algo", ["FP8_PER_CHANNEL_PER_TOKEN", "W4A16_AWQ", "W8A16", "W8A8_SQ_PER_CHANNEL",
                                  "W4A16_NVFP4", "W4A8_NVFP4_FP8", "NVFP4_AWQ", "W4A8_MXFP4_FP8"])
def test_modelopt_export_dequantizes_as_modelopt_does(tmp_path, algo):
    torch = need("torch")
    src = tmp_path / "mo"
    hq = export(torch, llama_from(torch, TINY), algo, src)
    assert hq["quantization"]["quant_algo"] == algo, hq
    check_dequantized(torch, tmp_path, src, algo)
    for cmd in ("inspect", "verify"):
        r = minifloat(cmd, src)
        assert r.returncode == 0, r.stderr
    assert algo in minifloat("inspect", src).stdout


def test_w4a8_awq_is_refused_by_name(tmp_path):
    torch = need("torch")
    src = tmp_path / "mo"
    hq = export(torch, llama_from(torch, TINY), "W4A8_AWQ", src)
    assert hq["quantization"]["quant_algo"] == "W4A8_AWQ", hq
    for cmd in (("dequantize", src, tmp_path / "out"), ("convert", src, tmp_path / "out", "--recipe", "nvfp4")):
        r = minifloat(*cmd)
        assert r.returncode != 0, r.stdout
        assert "quant_algo 'W4A8_AWQ' is not read by minifloat" in r.stderr, r.stderr
        assert "weight_scale_2" in r.stderr, r.stderr
        assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("like", sorted(LIKES))
def test_miniature_is_laid_out_as_modelopt_exports_it(tmp_path, like):
    """The miniature's tensors (names, dtypes, shapes) are those of ModelOpt's own export of a Llama of the same
    config, and its config.json's quantization_config is convert_hf_quant_config_format of its hf_quant_config.json."""
    torch = need("torch")
    from modelopt.torch.export.convert_hf_config import convert_hf_quant_config_format
    algo = LIKES[like]
    d = tmp_path / like
    r = minifloat("make-example-checkpoint", d, "--like", like, "--shards", 1)
    assert r.returncode == 0, r.stderr
    config = json.loads((d / "config.json").read_text())
    hq = json.loads((d / "hf_quant_config.json").read_text())
    assert config["quantization_config"] == convert_hf_quant_config_format(hq)
    keys = {k: config[k] for k in ("hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
                                   "num_key_value_heads", "vocab_size", "head_dim") if k in config}
    theirs = tmp_path / "modelopt"
    their_hq = export(torch, llama_from(torch, dict(keys, architectures=["LlamaForCausalLM"])), algo, theirs)
    assert their_hq["quantization"]["quant_algo"] == algo
    assert {k: v for k, v in their_hq["quantization"].items()} == hq["quantization"]
    from safetensors import safe_open

    def layout(path):
        out = {}
        for f in sorted(path.glob("*.safetensors")):
            with safe_open(str(f), "pt") as h:
                for k in h.keys():
                    t = h.get_slice(k)
                    out[k] = (t.get_dtype(), tuple(t.get_shape()))
        return out
    assert layout(d) == layout(theirs)
    if algo == "W4A8_AWQ":
        r = minifloat("dequantize", d, tmp_path / "out")
        assert r.returncode != 0 and "W4A8_AWQ" in r.stderr, r.stderr
        return
    from safetensors.torch import load_file
    stored = {}
    for f in sorted(d.glob("*.safetensors")):
        stored.update(load_file(str(f)))
    r = minifloat("dequantize", d, tmp_path / "f32", "--dtype", "f32")
    assert r.returncode == 0, r.stderr
    out = load_file(str(next((tmp_path / "f32").glob("*.safetensors"))))
    for mod in sorted({k[:-len(".weight_scale")] for k in stored if k.endswith(".weight_scale")}):
        want, _ = reference(torch, algo, stored, mod)
        same_bits(torch, out[mod + ".weight"], want, f"{like} {mod}")
    v = minifloat("verify", d)
    assert v.returncode == 0, v.stderr


def mixed_export(torch, out):
    """ModelOpt's MIXED_PRECISION: its FP8_PER_CHANNEL_PER_TOKEN preset with the MLP's quantizers overridden to INT8
    weight-only (W8A16), as a quant_cfg list's later entries override earlier ones."""
    mtq = need("modelopt.torch.quantization")
    from modelopt.torch.export import export_hf_checkpoint
    import copy
    cfg = copy.deepcopy(mtq.FP8_PER_CHANNEL_PER_TOKEN_CFG)
    cfg["quant_cfg"] += [{"quantizer_name": "*mlp*weight_quantizer", "cfg": {"num_bits": 8, "axis": 0}},
                         {"quantizer_name": "*mlp*input_quantizer", "enable": False}]
    model = llama_from(torch, TINY)

    def calibrate(m):
        with torch.no_grad():
            for _ in range(2):
                m(torch.randint(0, TINY["vocab_size"], (2, 16)))
    model = mtq.quantize(model, cfg, calibrate)
    export_hf_checkpoint(model, export_dir=out)
    return json.loads((out / "hf_quant_config.json").read_text())["quantization"]


def test_mixed_precision_export_reads_each_layer_by_its_own_algorithm(tmp_path):
    torch = need("torch")
    src = tmp_path / "mo"
    q = mixed_export(torch, src)
    assert q["quant_algo"] == "MIXED_PRECISION", q
    layers = q["quantized_layers"]
    assert {v["quant_algo"] for v in layers.values()} == {"FP8_PER_CHANNEL_PER_TOKEN", "W8A16"}, layers
    stored = load(src)
    r = minifloat("dequantize", src, tmp_path / "f32", "--dtype", "f32")
    assert r.returncode == 0, r.stderr
    out = load(tmp_path / "f32")
    assert len(layers) == 14
    for mod, entry in layers.items():
        want, _ = reference(torch, entry["quant_algo"], stored, mod)
        same_bits(torch, out[mod + ".weight"], want, f"{entry['quant_algo']} {mod}")
    v = minifloat("verify", src)
    assert v.returncode == 0, v.stderr


def test_verify_holds_each_quantized_layer_to_its_algorithm(tmp_path):
    torch = need("torch")
    src = tmp_path / "mo"
    mixed_export(torch, src)
    path = src / "config.json"
    original = json.loads(path.read_text())

    def verify_with(edit):
        c = json.loads(json.dumps(original))
        edit(c["quantization_config"]["quantized_layers"])
        path.write_text(json.dumps(c))
        return minifloat("verify", src)
    mod = "model.layers.0.mlp.down_proj"
    v = verify_with(lambda layers: layers[mod].update(quant_algo="W4A16_AWQ"))
    assert v.returncode != 0, v.stdout
    assert f"gives module '{mod}' quant_algo 'W4A16_AWQ', but its weight '{mod}.weight' holds int8-channel-f32" \
        in v.stderr, v.stderr
    v = verify_with(lambda layers: layers.pop(mod))
    assert v.returncode != 0, v.stdout
    assert f"module '{mod}' has a quantized weight and no quantized_layers entry" in v.stderr, v.stderr
    v = verify_with(lambda layers: layers.update({"model.layers.0.mlp.extra_proj": {"quant_algo": "W8A16"}}))
    assert v.returncode != 0, v.stdout
    assert "lists quantized layer 'model.layers.0.mlp.extra_proj' (W8A16), but no quantized weight" in v.stderr, \
        v.stderr
