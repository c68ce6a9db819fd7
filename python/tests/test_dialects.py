"""`minifloat dequantize` on checkpoints written by the libraries themselves, bit for bit against each library's own
CPU dequantization: compressed-tensors (llm-compressor's format), NVIDIA ModelOpt's HF export, transformers'
FineGrainedFP8, and gpt-oss MXFP4 experts as transformers loads them. Each checkpoint is a tiny model built from a
config (no downloads); the output must be a clean plain checkpoint that transformers loads.

The libraries are pinned in python/requirements-test.txt. docs/checkpoints.md ("Dialects") has the conventions."""
import json
import os
import pathlib

import numpy as np
import pytest

from checkpoint_util import dequantize, load, minifloat, same_bits
from conftest import need

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def tiny_llama(torch):
    transformers = need("transformers")
    torch.manual_seed(0)
    cfg = transformers.LlamaConfig(hidden_size=256, intermediate_size=384, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2, vocab_size=512,
                                   max_position_embeddings=128, architectures=["LlamaForCausalLM"])
    return transformers.LlamaForCausalLM(cfg).to(torch.bfloat16).eval()


def assert_clean(out_dir, tensors, dtype_name):
    leftovers = [k for k in tensors if "scale" in k or k.endswith(("_packed", "_blocks", "_scales"))]
    assert leftovers == [], leftovers
    assert {str(v.dtype) for v in tensors.values()} == {dtype_name}
    assert "quantization_config" not in json.loads((pathlib.Path(out_dir) / "config.json").read_text())
    assert not (pathlib.Path(out_dir) / "hf_quant_config.json").exists()


# ---- compressed-tensors ----

def ct_checkpoint(torch, preset, out, groups=None, ignore=("lm_head",)):
    """A tiny Llama quantized by compressed-tensors' own presets and qparam math (what llm-compressor's min-max
    observer computes), compressed by its ModelCompressor and saved. `groups` (name -> QuantizationScheme) stands
    for the preset's one group_0 where given (mixed precision); `ignore` is the config's list."""
    ct = need("compressed_tensors")
    from compressed_tensors.quantization import (QuantizationArgs, QuantizationConfig, QuantizationScheme,
                                                 QuantizationStatus, QuantizationStrategy,
                                                 apply_quantization_config, preset_name_to_scheme)
    from compressed_tensors.quantization.utils import calculate_qparams, generate_gparam
    model = tiny_llama(torch)
    if groups is None and preset == "FP8_CHANNEL_W_ONLY":
        groups = {"group_0": QuantizationScheme(targets=["Linear"], weights=QuantizationArgs(
            num_bits=8, type="float", strategy="channel", symmetric=True, dynamic=False))}
    elif groups is None:
        groups = {"group_0": preset_name_to_scheme(preset, ["Linear"])}
    apply_quantization_config(model, QuantizationConfig(config_groups=groups, ignore=list(ignore)))
    for _, m in model.named_modules():
        s = getattr(m, "quantization_scheme", None)
        if s is None or s.weights is None:
            continue
        a, w, gs = s.weights, m.weight.data, None
        if a.strategy == QuantizationStrategy.TENSOR:
            lo, hi = torch.aminmax(w)
        elif a.strategy == QuantizationStrategy.CHANNEL:
            lo, hi = w.amin(1, keepdim=True), w.amax(1, keepdim=True)
        elif a.strategy in (QuantizationStrategy.GROUP, QuantizationStrategy.TENSOR_GROUP):
            g = w.unflatten(-1, (w.shape[-1] // a.group_size, a.group_size))
            lo, hi = g.amin(-1), g.amax(-1)
            if a.strategy == QuantizationStrategy.TENSOR_GROUP:
                gs = generate_gparam(w.min(), w.max())
                m.weight_global_scale.data.copy_(gs)
        else:  # block
            bh, bw = a.block_structure
            b = w.unflatten(0, (-1, bh)).unflatten(2, (-1, bw))
            lo, hi = b.amin((1, 3)), b.amax((1, 3))
        scale, zp = calculate_qparams(lo, hi, a, global_scale=gs)
        m.weight_scale.data.copy_(scale.reshape(m.weight_scale.shape))
        if hasattr(m, "weight_zero_point"):
            m.weight_zero_point.data.copy_(zp.reshape(m.weight_zero_point.shape))
        m.quantization_status = QuantizationStatus.FROZEN
    for _, m in model.named_modules():  # a static activation scale, as calibration would leave it
        if hasattr(m, "input_scale"):
            m.input_scale.data.fill_(4.0 / 448.0)
        if hasattr(m, "input_global_scale"):
            m.input_global_scale.data.fill_(448.0 * 6.0 / 4.0)
    compressor = ct.compressors.ModelCompressor.from_pretrained_model(model)
    compressor.compress_model(model)
    model.save_pretrained(out)
    compressor.update_config(out)
    return json.loads((pathlib.Path(out) / "config.json").read_text())["quantization_config"]


@pytest.mark.parametrize("preset,fmt", [("NVFP4", "nvfp4-pack-quantized"), ("NVFP4A16", "nvfp4-pack-quantized"),
                                        ("MXFP4", "mxfp4-pack-quantized"), ("MXFP8", "mxfp8-quantized"),
                                        ("FP8", "float-quantized"), ("FP8_DYNAMIC", "float-quantized"),
                                        ("FP8_BLOCK", "float-quantized"), ("FP8_CHANNEL_W_ONLY", "naive-quantized"),
                                        ("W4A16", "pack-quantized"), ("W4A16_ASYM", "pack-quantized"),
                                        ("W8A16", "pack-quantized"), ("W8A8", "int-quantized")])
def test_compressed_tensors(tmp_path, preset, fmt):
    torch = need("torch")
    from compressed_tensors.compressors import BaseCompressor
    from compressed_tensors.quantization import QuantizationConfig
    src = tmp_path / "ct"
    config = ct_checkpoint(torch, preset, src)
    assert config["format"] == fmt
    qc = QuantizationConfig.model_validate(config)
    scheme, compressor = qc.config_groups["group_0"], BaseCompressor.get_value_from_registry(qc.format)
    stored = load(src)
    out16 = dequantize(src, tmp_path / "bf16")
    out32 = dequantize(src, tmp_path / "f32", "f32")
    assert_clean(tmp_path / "bf16", out16, "torch.bfloat16")
    assert_clean(tmp_path / "f32", out32, "torch.float32")
    modules = sorted({k.rsplit(".", 1)[0] for k in stored if k.endswith(".weight_scale")})
    assert len(modules) == 14  # 2 layers x (q, k, v, o, gate, up, down)
    for mod in modules:
        parts = {k[len(mod) + 1:]: v for k, v in stored.items() if k.rsplit(".", 1)[0] == mod}
        want = compressor.decompress(parts, scheme)["weight"]
        same_bits(torch, out16[mod + ".weight"], want, mod)
        # f32: the exact product, which the library's bf16 result is the rounding of
        same_bits(torch, out32[mod + ".weight"].to(torch.bfloat16), want, mod + " (f32 rounded)")
    r = minifloat("inspect", src)
    assert r.returncode == 0, r.stderr
    assert "compressed-tensors" in r.stdout and fmt in r.stdout, r.stdout
    v = minifloat("verify", src)
    assert v.returncode == 0, v.stderr


def test_compressed_tensors_output_loads_in_transformers(tmp_path):
    torch = need("torch")
    transformers = need("transformers")
    src = tmp_path / "ct"
    ct_checkpoint(torch, "NVFP4", src)
    dequantize(src, tmp_path / "out")
    model, info = transformers.LlamaForCausalLM.from_pretrained(tmp_path / "out", output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"], info
    out = load(tmp_path / "out")
    same_bits(torch, model.get_parameter("model.layers.0.mlp.down_proj.weight").data,
              out["model.layers.0.mlp.down_proj.weight"], "loaded")


# ---- NVIDIA ModelOpt ----

def modelopt_checkpoint(torch, algo, out):
    mtq = need("modelopt.torch.quantization")
    from modelopt.torch.export import export_hf_checkpoint
    model = tiny_llama(torch)
    configs = {"NVFP4": mtq.NVFP4_DEFAULT_CFG, "FP8": mtq.FP8_DEFAULT_CFG, "MXFP8": mtq.MXFP8_DEFAULT_CFG,
               "MXFP4": mtq.MXFP4_DEFAULT_CFG, "FP8_PB_WO": mtq.FP8_2D_BLOCKWISE_WEIGHT_ONLY_CFG}

    def calibrate(m):
        with torch.no_grad():
            for _ in range(2):
                m(torch.randint(0, 512, (2, 16)))
    model = mtq.quantize(model, configs[algo], calibrate)
    export_hf_checkpoint(model, export_dir=out)


@pytest.mark.parametrize("algo", ["NVFP4", "FP8", "MXFP8", "MXFP4", "FP8_PB_WO"])
def test_modelopt(tmp_path, algo):
    torch = need("torch")
    qt = need("modelopt.torch.quantization.qtensor")
    src = tmp_path / "mo"
    modelopt_checkpoint(torch, algo, src)
    assert (src / "hf_quant_config.json").exists()
    stored = load(src)
    # ModelOpt's FP8 dequantize works in the dtype asked for: into bf16 it rounds the f32 scale to bf16 before the
    # multiply (a second rounding minifloat does not make), so FP8 is compared where both round once, in f32.
    dtype = torch.float32 if algo == "FP8" else torch.bfloat16
    name = "f32" if algo == "FP8" else "bf16"
    out = dequantize(src, tmp_path / name, name)
    assert_clean(tmp_path / name, out, str(dtype))
    modules = sorted({k[:-7] for k in stored if k.endswith(".weight") and k[:-7] + ".weight_scale" in stored})
    assert len(modules) == 14
    for mod in modules:
        w, s = stored[mod + ".weight"], stored[mod + ".weight_scale"]
        if algo == "NVFP4":
            want = qt.NVFP4QTensor(torch.Size([w.shape[0], w.shape[1] * 2]), torch.bfloat16, w).dequantize(
                dtype=torch.bfloat16, scale=s, double_scale=stored[mod + ".weight_scale_2"], block_sizes={-1: 16})
        elif algo == "MXFP4":
            want = qt.MXFP4QTensor(torch.Size([w.shape[0], w.shape[1] * 2]), torch.bfloat16, w).dequantize(
                dtype=torch.bfloat16, scale=s, block_sizes={-1: 32})
        elif algo == "FP8":
            want = qt.FP8QTensor(w.shape, dtype, w).dequantize(dtype=dtype, scale=s)
        elif algo == "MXFP8":
            want = qt.MXFP8QTensor(w.shape, torch.bfloat16, w).dequantize(dtype=torch.bfloat16, scale=s,
                                                                          block_sizes={-1: 32})
        else:  # FP8_PB_WO: F32 scales [R/128, 1, C/128, 1], broadcast over 128 x 128 tiles (ModelOpt's own view)
            R, C = w.shape
            want = (w.float().view(R // 128, 128, C // 128, 128) * s.float()).view(R, C).to(torch.bfloat16)
        same_bits(torch, out[mod + ".weight"], want, mod, zero_sign=algo not in ("NVFP4", "MXFP4"))
    r = minifloat("inspect", src)
    assert r.returncode == 0, r.stderr
    assert "modelopt" in r.stdout, r.stdout


# ---- transformers FineGrainedFP8 ----

def transformers_fp8_checkpoint(torch, scale_fmt, src):
    """A tiny Llama quantized by transformers' own FineGrainedFP8 quantizer (128x128 blocks, F32 weight_scale_inv;
    powers of two with scale_fmt ue8m0), saved with its quantization_config. Returns the stored tensors."""
    transformers = need("transformers")
    import types
    from safetensors.torch import save_file
    from transformers.integrations.finegrained_fp8 import Fp8Quantize
    model = tiny_llama(torch)
    qc = transformers.FineGrainedFP8Config(weight_block_size=(128, 128), activation_scheme="dynamic",
                                           scale_fmt=scale_fmt, modules_to_not_convert=["lm_head"])
    quantize = Fp8Quantize(types.SimpleNamespace(quantization_config=qc))  # what from_pretrained runs on a GPU
    stored = {}
    for k, v in model.state_dict().items():
        mod = k.rsplit(".", 1)[0]
        if k.endswith(".weight") and isinstance(model.get_submodule(mod), torch.nn.Linear) and mod != "lm_head":
            stored.update(quantize._quantize_one(k, v))
        else:
            stored[k] = v.contiguous()
    src.mkdir()
    save_file(stored, str(src / "model.safetensors"), metadata={"format": "pt"})
    config = model.config.to_dict()
    config["quantization_config"] = qc.to_dict()
    (src / "config.json").write_text(json.dumps(config))
    return stored


@pytest.mark.parametrize("scale_fmt", ["float", "ue8m0"])
def test_transformers_fp8(tmp_path, scale_fmt):
    torch = need("torch")
    need("transformers")
    from transformers.integrations.finegrained_fp8 import Fp8Dequantize
    src = tmp_path / "fp8"
    stored = transformers_fp8_checkpoint(torch, scale_fmt, src)
    out = dequantize(src, tmp_path / "bf16")
    assert_clean(tmp_path / "bf16", out, "torch.bfloat16")
    pairs = [k for k in stored if k.endswith(".weight_scale_inv")]
    assert len(pairs) == 14
    for s in pairs:
        w = s[: -len("_scale_inv")]
        want = Fp8Dequantize(None)._dequantize_one(stored[w], stored[s], output_dtype=torch.bfloat16)
        same_bits(torch, out[w], want, w)
    for cmd in ("inspect", "verify"):
        r = minifloat(cmd, src)
        assert r.returncode == 0, r.stderr


def test_fp8_block_scales_relaid_out_between_f32_and_ue8m0(tmp_path):
    """transformers' FineGrainedFP8 checkpoint with scale_fmt ue8m0 (E8M0 weight_scale_inv) converted by fp8-block
    into transformers' F32 form: the codes are the input's bytes, each F32 scale is 2^(code - 127) (numpy's ldexp),
    and transformers' own Fp8Dequantize gives the input's values bit for bit (and minifloat dequantize's). Those
    power-of-two F32 scales converted by a recipe whose target is fp8-128x128 (E8M0 scales) give back the input's
    E8M0 bytes. Scales that are not powers of two (scale_fmt float) are refused, naming the tensor."""
    torch = need("torch")
    need("transformers")
    from transformers.integrations.finegrained_fp8 import Fp8Dequantize
    src = tmp_path / "fp8"
    transformers_fp8_checkpoint(torch, "ue8m0", src)
    r = minifloat("convert", src, tmp_path / "f32", "--recipe", "fp8-block", "--format", "transformers-fp8")
    assert r.returncode == 0, r.stderr
    rows = [line for line in r.stdout.splitlines() if "e4m3-128x128-f32 re-laid out" in line]
    assert len(rows) == 14 and all(line.split()[-3:] == ["0", "0", "0.000%"] for line in rows), r.stdout
    before, f32 = raw_tensors(src), raw_tensors(tmp_path / "f32")
    scales = sorted(k for k in before if k.endswith(".weight_scale_inv"))
    assert len(scales) == 14
    stored_in, stored_f32 = load(src), load(tmp_path / "f32")
    want = dequantize(src, tmp_path / "deq-in", "f32")
    for s in scales:
        w = s[:-len("_scale_inv")]
        assert before[s][0] == "F8_E8M0" and f32[s][0] == "F32" and f32[s][1] == before[s][1], s
        codes = np.frombuffer(before[s][2], np.uint8).astype(np.int32)
        assert np.array_equal(np.frombuffer(f32[s][2], np.float32), np.ldexp(np.float32(1), codes - 127)), s
        assert f32[w][2] == before[w][2], w
        lib_in = Fp8Dequantize(None)._dequantize_one(stored_in[w], stored_in[s], output_dtype=torch.float32)
        lib_out = Fp8Dequantize(None)._dequantize_one(stored_f32[w], stored_f32[s], output_dtype=torch.float32)
        same_bits(torch, lib_out, lib_in, w)
        same_bits(torch, want[w], lib_in, w)

    recipe = tmp_path / "fp8-128x128.json"
    recipe.write_text(json.dumps({"lm_head.weight": "keep", "*_proj.weight": "fp8-128x128"}))
    r = minifloat("convert", tmp_path / "f32", tmp_path / "e8", "--recipe", recipe)
    assert r.returncode == 0, r.stderr
    rows = [line for line in r.stdout.splitlines() if "fp8-128x128 re-laid out" in line]
    assert len(rows) == 14 and all(line.split()[-3:] == ["0", "0", "0.000%"] for line in rows), r.stdout
    e8 = raw_tensors(tmp_path / "e8")
    for s in scales:
        w = s[:-len("_scale_inv")]
        assert e8[s][0] == "F8_E8M0" and e8[s][2] == before[s][2], s
        assert e8[w][2] == before[w][2], w
    got = dequantize(tmp_path / "e8", tmp_path / "deq-e8", "f32")
    assert want.keys() == got.keys()
    for k in want:
        same_bits(torch, got[k], want[k], k)

    transformers_fp8_checkpoint(torch, "float", tmp_path / "fp8-float")
    r = minifloat("convert", tmp_path / "fp8-float", tmp_path / "refused", "--recipe", recipe)
    assert r.returncode == 2, r.stderr
    assert "weight_scale_inv' holds" in r.stderr and "not a power of two" in r.stderr, r.stderr
    assert "requantize from the unquantized model" in r.stderr, r.stderr
    assert not (tmp_path / "refused").exists()


# ---- gpt-oss MXFP4 experts ----

def test_gpt_oss_mxfp4(tmp_path):
    torch = need("torch")
    transformers = need("transformers")
    from compressed_tensors.compressors.mxfp4.base import MXFP4PackedCompressor
    from compressed_tensors.quantization import preset_name_to_scheme
    from compressed_tensors.quantization.utils import calculate_qparams
    from safetensors.torch import save_file
    from transformers.integrations.mxfp4 import convert_moe_packed_tensors
    torch.manual_seed(0)
    cfg = transformers.GptOssConfig(hidden_size=192, intermediate_size=64, num_hidden_layers=2,
                                    num_attention_heads=4, num_key_value_heads=2, head_dim=32, num_local_experts=4,
                                    num_experts_per_tok=2, vocab_size=256, max_position_embeddings=128,
                                    sliding_window=32, layer_types=["sliding_attention", "full_attention"],
                                    architectures=["GptOssForCausalLM"])
    model = transformers.GptOssForCausalLM(cfg).to(torch.bfloat16)
    scheme = preset_name_to_scheme("MXFP4A16", ["Linear"])

    def blocks_and_scales(w):  # the parameter [E, in, out] -> X_blocks [E, out, in/32, 16], X_scales [E, out, in/32]
        rows = w.transpose(1, 2).contiguous()
        E, R, C = rows.shape
        flat = rows.reshape(E * R, C)
        g = flat.unflatten(-1, (C // 32, 32))
        scale, _ = calculate_qparams(g.amin(-1), g.amax(-1), scheme.weights)
        c = MXFP4PackedCompressor.compress({"weight": flat, "weight_scale": scale}, scheme)
        return c["weight_packed"].reshape(E, R, C // 32, 16), c["weight_scale"].reshape(E, R, C // 32)

    stored = {}
    for k, v in model.state_dict().items():
        if k.endswith(("mlp.experts.gate_up_proj", "mlp.experts.down_proj")):
            stored[k + "_blocks"], stored[k + "_scales"] = blocks_and_scales(v)
        else:
            stored[k] = v.contiguous()
    src = tmp_path / "gpt-oss"
    src.mkdir()
    save_file(stored, str(src / "model.safetensors"), metadata={"format": "pt"})
    config = cfg.to_dict()
    config["quantization_config"] = {"quant_method": "mxfp4", "modules_to_not_convert": [
        "model.layers.*.self_attn", "model.layers.*.mlp.router", "model.embed_tokens", "lm_head"]}
    (src / "config.json").write_text(json.dumps(config))
    out = dequantize(src, tmp_path / "bf16")
    assert_clean(tmp_path / "bf16", out, "torch.bfloat16")
    experts = [k[: -len("_blocks")] for k in stored if k.endswith("_blocks")]
    assert len(experts) == 4
    for x in experts:
        want = convert_moe_packed_tensors(stored[x + "_blocks"], stored[x + "_scales"], dtype=torch.bfloat16)
        same_bits(torch, out[x], want, x)
    loaded, info = transformers.GptOssForCausalLM.from_pretrained(tmp_path / "bf16", output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"], info
    r = minifloat("inspect", src)
    assert r.returncode == 0, r.stderr
    assert "gpt-oss" in r.stdout, r.stdout


# ---- lossless re-layout: an MX checkpoint of one dialect converted into another ----

def raw_tensors(path):
    """{name: (dtype, shape, bytes)} of every shard, read from the safetensors headers (safetensors cannot read F4)."""
    out = {}
    for shard in sorted(pathlib.Path(path).glob("*.safetensors")):
        data = shard.read_bytes()
        n = int.from_bytes(data[:8], "little")
        header = json.loads(data[8:8 + n])
        for name, t in header.items():
            if name != "__metadata__":
                a, b = t["data_offsets"]
                out[name] = (t["dtype"], t["shape"], data[8 + n + a:8 + n + b])
    return out


# Where each format keeps the codes and block scales of module P (the MX schemes).
PARTS = {"compressed-tensors": {"mxfp4": (".weight_packed", ".weight_scale"), "mxfp8": (".weight", ".weight_scale")},
         "modelopt": {"mxfp4": (".weight", ".weight_scale"), "mxfp8": (".weight", ".weight_scale")},
         "minifloat": {"mxfp4": (".weight", ".weight_scale_inv"), "mxfp8": (".weight", ".weight_scale_inv")}}


@pytest.mark.parametrize("source", ["compressed-tensors", "modelopt"])
@pytest.mark.parametrize("recipe", ["mxfp4", "mxfp8"])
@pytest.mark.parametrize("fmt", ["compressed-tensors", "modelopt", "minifloat"])
def test_relayout_is_lossless(tmp_path, source, recipe, fmt):
    """A checkpoint the library itself wrote (compressed-tensors' MXFP4 / MXFP8 presets, ModelOpt's) converted by
    the recipe of the same scheme into another dialect: codes and scales byte for byte the input's, every tensor
    reported as re-laid out with no error, and each output dequantizing (minifloat, and the library's own where the
    output is a library's) to exactly the input's values."""
    torch = need("torch")
    src = tmp_path / "src"
    if source == "compressed-tensors":
        ct_checkpoint(torch, recipe.upper(), src)
    else:
        modelopt_checkpoint(torch, recipe.upper(), src)
    r = minifloat("convert", src, tmp_path / "out", "--recipe", recipe, "--format", fmt)
    assert r.returncode == 0, r.stderr
    rows = [line for line in r.stdout.splitlines() if f"{recipe} re-laid out" in line]
    assert len(rows) == 14 and all(line.split()[-3:] == ["0", "0", "0.000%"] for line in rows), r.stdout
    r = minifloat("verify", tmp_path / "out")
    assert r.returncode == 0, r.stderr + r.stdout
    before, after = raw_tensors(src), raw_tensors(tmp_path / "out")
    (code_in, scale_in), (code_out, scale_out) = PARTS[source][recipe], PARTS[fmt][recipe]
    modules = sorted(k[:-len(scale_in)] for k in before if k.endswith(scale_in))
    assert len(modules) == 14
    for m in modules:
        assert after[m + code_out][2] == before[m + code_in][2], m
        assert after[m + scale_out][2] == before[m + scale_in][2], m
    want = dequantize(src, tmp_path / "deq-in")
    got = dequantize(tmp_path / "out", tmp_path / "deq-out")
    assert want.keys() == got.keys()
    for k in want:
        same_bits(torch, got[k], want[k], k)
    if fmt == "compressed-tensors":  # the library's own decompressor on the output
        from compressed_tensors.compressors import BaseCompressor
        from compressed_tensors.quantization import QuantizationConfig
        stored = load(tmp_path / "out")
        parsed = QuantizationConfig.model_validate(
            json.loads((tmp_path / "out" / "config.json").read_text())["quantization_config"])
        compressor = BaseCompressor.get_value_from_registry(parsed.format)
        for m in modules:
            parts = {k[len(m) + 1:]: v for k, v in stored.items() if k.rsplit(".", 1)[0] == m}
            same_bits(torch, compressor.decompress(parts, parsed.config_groups["group_0"])["weight"],
                      want[m + ".weight"], m)


@pytest.mark.parametrize("fmt", ["modelopt", "minifloat"])
def test_nvfp4_global_scale_without_an_exact_reciprocal_is_not_relaid_out(tmp_path, fmt):
    """compressed-tensors' own NVFP4 (W4A16) has global scales 2688 / amax: dividing by one is not multiplying by any
    f32, so re-laying it out into a dialect that multiplies would round; it is an error naming the tensor."""
    torch = need("torch")
    ct_checkpoint(torch, "NVFP4A16", tmp_path / "ct")
    r = minifloat("convert", tmp_path / "ct", tmp_path / "out", "--recipe", "nvfp4", "--format", fmt)
    assert r.returncode == 2, r.stderr
    assert "weight_global_scale" in r.stderr and "has no tensor scale that reproduces its values exactly" in r.stderr
    assert ".weight_packed'" in r.stderr and "nothing was written" in r.stderr, r.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("preset", ["W4A16", "W4A16_ASYM"])
def test_integer_weights_convert_into_a_scheme(tmp_path, preset):
    """compressed-tensors' integer weights into MXFP4: requantized from their exact values, so one pass writes what
    dequantize --dtype f32 then convert writes; the output verifies and its config says what it holds."""
    torch = need("torch")
    ct_checkpoint(torch, preset, tmp_path / "ct")
    r = minifloat("convert", tmp_path / "ct", tmp_path / "one", "--recipe", "mxfp4")
    assert r.returncode == 0, r.stderr
    f32 = dequantize(tmp_path / "ct", tmp_path / "f32", "f32")
    assert f32
    r = minifloat("convert", tmp_path / "f32", tmp_path / "two", "--recipe", "mxfp4")
    assert r.returncode == 0, r.stderr
    one, two = load(tmp_path / "one"), load(tmp_path / "two")
    quantized = [k for k in one if k.endswith("_scale_inv")]
    assert len(quantized) == 14
    for k in quantized:
        w = k[:-len("_scale_inv")]
        assert torch.equal(one[w].view(torch.uint8), two[w].view(torch.uint8)), w
        assert torch.equal(one[k].view(torch.uint8), two[k].view(torch.uint8)), k
    assert not any(k.endswith(("weight_packed", "weight_shape", "weight_zero_point")) for k in one)
    config = json.loads((tmp_path / "one" / "config.json").read_text())
    assert config["quantization_config"] == {"quant_method": "minifloat", "schemes": ["e2m1-1x32-ue8m0-rceil"]}
    v = minifloat("verify", tmp_path / "one")
    assert v.returncode == 0, v.stderr


# ---- AutoAWQ (GEMM) ----

def test_autoawq_gemm_against_compressed_tensors_converter(tmp_path):
    """AutoAWQ's GEMM tensors (qweight [C, R/8] in AWQ's interleaved nibble order, qzeros, scales F16), read by
    minifloat, against compressed-tensors' own AutoAWQ converter followed by its pack-quantized decompressor: the
    library's f16 result is the rounding of minifloat's exact f32 product, value for value."""
    torch = need("torch")
    need("compressed_tensors")
    from safetensors.torch import save_file
    from compressed_tensors.compressors import BaseCompressor
    from compressed_tensors.entrypoints.convert.converters import AutoAWQConverter
    from compressed_tensors.quantization import QuantizationArgs, QuantizationScheme
    g = torch.Generator().manual_seed(3)
    rows, cols, group = 64, 256, 128  # R outputs, C inputs
    tensors = {}
    for m in ("model.layers.0.mlp.down_proj", "model.layers.0.self_attn.q_proj"):
        tensors[m + ".qweight"] = torch.randint(-2**31, 2**31 - 1, (cols, rows // 8), generator=g, dtype=torch.int32)
        tensors[m + ".qzeros"] = torch.randint(-2**31, 2**31 - 1, (cols // group, rows // 8), generator=g,
                                               dtype=torch.int32)
        tensors[m + ".scales"] = (torch.rand(cols // group, rows, generator=g) * 0.01 + 0.001).to(torch.float16)
    tensors["model.norm.weight"] = torch.ones(rows, dtype=torch.float16)
    src = tmp_path / "awq"
    src.mkdir()
    save_file(tensors, str(src / "model.safetensors"))
    (src / "config.json").write_text(json.dumps({"model_type": "llama", "torch_dtype": "float16", "quantization_config": {
        "quant_method": "awq", "bits": 4, "group_size": group, "zero_point": True, "version": "gemm"}}))
    out = dequantize(src, tmp_path / "f32", "f32")
    converted = AutoAWQConverter(bits=4, group_size=group).process({k: v.clone() for k, v in tensors.items()})
    scheme = QuantizationScheme(targets=["Linear"], weights=QuantizationArgs(
        num_bits=4, type="int", strategy="group", group_size=group, symmetric=False))
    compressor = BaseCompressor.get_value_from_registry("pack-quantized")
    for m in ("model.layers.0.mlp.down_proj", "model.layers.0.self_attn.q_proj"):
        parts = {k[len(m) + 1:]: v for k, v in converted.items() if k.startswith(m + ".")}
        want = compressor.decompress(parts, scheme)["weight"]
        assert want.shape == (rows, cols) and want.dtype == torch.float16
        same_bits(torch, out[m + ".weight"].to(torch.float16), want, m)
    r = minifloat("inspect", src)
    assert r.returncode == 0 and "awq-int4-1x128-f16" in r.stdout, r.stdout + r.stderr
    v = minifloat("verify", src)
    assert v.returncode == 0, v.stderr
