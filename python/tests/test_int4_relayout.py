"""Integer pairs re-laid out between compressed-tensors pack-quantized, AutoAWQ GEMM and AutoGPTQ v1 (`minifloat
convert --recipe keep.json --format compressed-tensors|awq|gptq`): the same codes, zero points, scales and group
index in another packing. Each output is read by code independent of minifloat's: compressed-tensors' own
pack-quantized decompressor, AutoAWQ's unpack order as the catalogue cites it (/work/shared/checkpoints-in-the-wild.md
section 7.1) and llama.cpp's converter's dequant_gptq formula (conversion/base.py), both written out here in numpy;
and each dequantizes (minifloat) to the source's values bit for bit. docs/checkpoints.md ("Writing dialects")."""
import json
import os

import numpy as np
import pytest

from checkpoint_util import dequantize, load, minifloat, same_bits
from conftest import need
from test_dialects import ct_checkpoint, raw_tensors

os.environ.setdefault("HF_HUB_OFFLINE", "1")

AWQ_REVERSE_ORDER = [0, 4, 1, 5, 2, 6, 3, 7]  # AutoAWQ packing_utils: output 8 col + j at nibble [j] of its word


def keep_recipe(tmp_path):
    path = tmp_path / "keep.json"
    path.write_text(json.dumps({"*": "keep"}))
    return path


def convert(tmp_path, src, dst, fmt):
    return minifloat("convert", src, dst, "--recipe", keep_recipe(tmp_path), "--format", fmt)


def converted(tmp_path, src, name, fmt):
    r = convert(tmp_path, src, tmp_path / name, fmt)
    assert r.returncode == 0, r.stderr
    rows = [line for line in r.stdout.splitlines() if "re-laid out" in line]
    assert rows and all(line.split()[-3:] == ["0", "0", "0.000%"] for line in rows), r.stdout
    for cmd in ("verify", "inspect"):
        v = minifloat(cmd, tmp_path / name)
        assert v.returncode == 0, v.stderr + v.stdout
    return tmp_path / name


def config_of(path):
    return json.loads((path / "config.json").read_text())["quantization_config"]


def awq_values(torch, qweight, qzeros, scales):
    """AutoAWQ's dequantize_gemm, in numpy: unpack 8 nibbles a word, undo AWQ's order, (q - z) x s per group, as
    W [R, C] in f32 (each product exact: 5-bit difference times an f16 scale)."""
    shifts = np.arange(0, 32, 4, dtype=np.uint32)
    def unpack(words):
        w = words.numpy().view(np.uint32)
        nib = (w[:, :, None] >> shifts[None, None, :]) & 15  # [X, R/8, 8]: nibble i of each word
        order = np.arange(nib.shape[1] * 8).reshape(-1, 8)[:, AWQ_REVERSE_ORDER].reshape(-1)
        return nib.reshape(w.shape[0], -1)[:, order].astype(np.int32)
    q, z = unpack(qweight), unpack(qzeros)
    s = scales.float().numpy()
    group = q.shape[0] // s.shape[0]
    g = np.arange(q.shape[0]) // group
    return torch.from_numpy(((q - z[g]).astype(np.float32) * s[g]).T.copy())


def gptq_values(torch, qweight, qzeros, scales, g_idx, bits, checkpoint_format="gptq"):
    """llama.cpp's dequant_gptq (conversion/base.py; zeros + 1 for checkpoint_format gptq only, not gptq_v2), in
    numpy: W [R, C] f32."""
    maxq = 2 ** bits - 1
    wf = np.arange(0, 32, bits, dtype=np.uint32)
    zw = qzeros.numpy().view(np.uint32)
    zeros = ((zw[:, :, None] >> wf[None, None, :]) & maxq).reshape(scales.shape).astype(np.int32)
    zeros += 1 if checkpoint_format == "gptq" else 0
    qw = qweight.numpy().view(np.uint32)
    weight = ((qw[:, None, :] >> wf[None, :, None]) & maxq).reshape(-1, qw.shape[1]).astype(np.int32)
    g = g_idx.numpy()
    weight = weight[:len(g)]
    s = scales.float().numpy()
    return torch.from_numpy((s[g] * (weight - zeros[g]).astype(np.float32)).T.copy())


def ct_values(torch, path, modules):
    """compressed-tensors' own pack-quantized decompressor on each module, with the config the output carries."""
    from compressed_tensors.compressors import BaseCompressor
    from compressed_tensors.quantization import QuantizationConfig
    qc = QuantizationConfig.model_validate(config_of(path))
    compressor = BaseCompressor.get_value_from_registry(qc.format if qc.format != "mixed-precision"
                                                        else "pack-quantized")
    stored = load(path)
    out = {}
    for m in modules:
        scheme = next(g for g in qc.config_groups.values() if "Linear" in g.targets or m in g.targets)
        parts = {k[len(m) + 1:]: v for k, v in stored.items() if k.rsplit(".", 1)[0] == m}
        out[m] = compressor.decompress(parts, scheme)["weight"]
    return out


def modules_of(path, suffix):
    return sorted(k[:-len(suffix)] for k in load(path) if k.endswith(suffix))


def assert_same_values(torch, src, out, tmp_path, tag):
    want = dequantize(src, tmp_path / f"deq-src-{tag}", "f32")
    got = dequantize(out, tmp_path / f"deq-{tag}", "f32")
    assert want.keys() == got.keys()
    for k in want:
        same_bits(torch, got[k], want[k], f"{k} ({tag})")
    return want


def check_awq(torch, path, want):
    stored = load(path)
    for m in modules_of(path, ".qweight"):
        got = awq_values(torch, stored[m + ".qweight"], stored[m + ".qzeros"], stored[m + ".scales"])
        same_bits(torch, got, want[m + ".weight"], m + " (AutoAWQ's unpack)")
        assert stored[m + ".scales"].dtype == torch.float16


def check_gptq(torch, path, want):
    stored, config = load(path), config_of(path)
    for m in modules_of(path, ".qweight"):
        got = gptq_values(torch, stored[m + ".qweight"], stored[m + ".qzeros"], stored[m + ".scales"],
                          stored[m + ".g_idx"], config["bits"], config.get("checkpoint_format", "gptq"))
        same_bits(torch, got, want[m + ".weight"], m + " (llama.cpp's dequant_gptq)")


def check_ct(torch, path, want):
    modules = modules_of(path, ".weight_packed")
    for m, w in ct_values(torch, path, modules).items():
        # the library computes in the scale's dtype: the rounding of the exact f32 product
        same_bits(torch, w, want[m + ".weight"].to(w.dtype), m + " (compressed-tensors' decompressor)")


@pytest.mark.parametrize("preset", ["W4A16", "W4A16_ASYM"])
def test_compressed_tensors_int4_into_awq_gptq_and_back(tmp_path, preset):
    """compressed-tensors' own W4A16 (symmetric) and W4A16_ASYM checkpoints into AWQ and GPTQ: each read by the
    library formulas equals the source's values; back into compressed-tensors gives the source's code and zero-point
    bytes, its scales the same values (F16 now: AWQ and GPTQ store F16); AWQ <-> GPTQ keeps every byte."""
    torch = need("torch")
    need("compressed_tensors")
    src = tmp_path / "ct"
    source_config = ct_checkpoint(torch, preset, src)
    awq = converted(tmp_path, src, "awq", "awq")
    gptq = converted(tmp_path, src, "gptq", "gptq")
    same = converted(tmp_path, src, "ct-same", "compressed-tensors")
    want = assert_same_values(torch, src, awq, tmp_path, "awq")
    assert_same_values(torch, src, gptq, tmp_path, "gptq")
    assert_same_values(torch, src, same, tmp_path, "ct")
    check_awq(torch, awq, want)
    check_gptq(torch, gptq, want)
    check_ct(torch, same, want)
    sym = preset == "W4A16"
    assert config_of(awq) == {"quant_method": "awq", "zero_point": True, "group_size": 128, "bits": 4,
                              "version": "gemm", "modules_to_not_convert": ["lm_head"]}
    assert config_of(gptq) == {"bits": 4, "group_size": 128, "desc_act": False, "sym": sym, "quant_method": "gptq",
                               "checkpoint_format": "gptq"}
    # compressed-tensors into itself: the very bytes and the library's own config
    before, after = raw_tensors(src), raw_tensors(same)
    assert before.keys() == after.keys()
    for k in before:
        assert after[k] == before[k], k
    assert config_of(same) == source_config
    # back from AWQ and GPTQ: the codes and zero points byte for byte, the scales value for value
    for name, mid in (("awq", awq), ("gptq", gptq)):
        back = converted(tmp_path, mid, f"back-{name}", "compressed-tensors")
        check_ct(torch, back, want)
        b = raw_tensors(back)
        assert b.keys() == before.keys(), (name, sorted(set(b) ^ set(before)))
        for k in before:
            if k.endswith("_scale"):
                assert b[k][0] == "F16" and b[k][1] == before[k][1]
                same_bits(torch, load(back)[k].float(), load(src)[k].float(), k)
            else:
                assert b[k] == before[k], (name, k)
        assert config_of(back)["config_groups"]["group_0"]["weights"]["symmetric"] == sym
    for a, b in (("awq", "gptq"), ("gptq", "awq")):
        there = converted(tmp_path, tmp_path / a, f"{a}-{b}", b)
        again = converted(tmp_path, there, f"{a}-{b}-{a}", a)
        assert raw_tensors(again) == raw_tensors(tmp_path / a), (a, b)
        assert raw_tensors(there) == raw_tensors(tmp_path / b), (a, b)


def words(torch, nibbles):
    """[..., 8] nibbles as I32 words, nibble i at bit 4 i (both libraries' zero words are packed so; AWQ's order of
    outputs within a word does not matter for random values)."""
    packed = (nibbles.numpy().astype(np.uint64) << (4 * np.arange(8, dtype=np.uint64))).sum(-1)
    return torch.from_numpy(packed.astype(np.uint32).view(np.int32))


def awq_source(torch, tmp_path, zeros_from=1):
    """AutoAWQ GEMM tensors of random words (zero points from `zeros_from` to 15), F16 scales."""
    from safetensors.torch import save_file
    g = torch.Generator().manual_seed(5)
    rows, cols, group = 64, 256, 64
    tensors = {}
    for m in ("model.layers.0.mlp.down_proj", "model.layers.0.self_attn.q_proj"):
        tensors[m + ".qweight"] = torch.randint(-2**31, 2**31 - 1, (cols, rows // 8), generator=g, dtype=torch.int32)
        nib = torch.randint(zeros_from, 16, (cols // group, rows // 8, 8), generator=g, dtype=torch.int64)
        tensors[m + ".qzeros"] = words(torch, nib)
        tensors[m + ".scales"] = (torch.rand(cols // group, rows, generator=g) * 0.01 + 0.001).to(torch.float16)
    tensors["model.norm.weight"] = torch.ones(rows, dtype=torch.float16)
    src = tmp_path / "awq-src"
    src.mkdir()
    save_file(tensors, str(src / "model.safetensors"))
    (src / "config.json").write_text(json.dumps({"model_type": "llama", "torch_dtype": "float16", "quantization_config": {
        "quant_method": "awq", "bits": 4, "group_size": group, "zero_point": True, "version": "gemm"}}))
    return src


def test_awq_into_gptq_and_compressed_tensors(tmp_path):
    """AutoAWQ words (every nibble used) into GPTQ and compressed-tensors: the library formulas read the source's
    values, and back into AWQ gives the very files."""
    torch = need("torch")
    need("compressed_tensors")
    src = awq_source(torch, tmp_path)
    want = dequantize(src, tmp_path / "deq-src", "f32")
    check_awq(torch, src, want)  # the reference agrees with minifloat's reading of the source
    gptq = converted(tmp_path, src, "gptq", "gptq")
    ct = converted(tmp_path, src, "ct", "compressed-tensors")
    check_gptq(torch, gptq, want)
    check_ct(torch, ct, want)
    assert config_of(ct)["config_groups"]["group_0"]["weights"]["symmetric"] is False
    for name in ("gptq", "ct"):
        back = converted(tmp_path, tmp_path / name, f"{name}-awq", "awq")
        assert raw_tensors(back) == raw_tensors(src), name


def test_gptq_act_order_kept_in_gptq_and_refused_elsewhere(tmp_path):
    """GPTQ with an act-order g_idx (desc_act): into GPTQ it stays (the very files, desc_act true, llama.cpp's formula
    reads the source's values); AWQ has no g_idx and compressed-tensors 0.20 removed its actorder "group" and
    weight_g_idx (its QuantizationArgs refuses them): both refuse it by name, nothing written."""
    torch = need("torch")
    from safetensors.torch import save_file
    g = torch.Generator().manual_seed(7)
    rows, cols, group, m = 64, 256, 64, "model.layers.0.mlp.down_proj"
    stored_zero = torch.randint(0, 15, (cols // group, rows // 8, 8), generator=g, dtype=torch.int64)  # no wrap
    tensors = {
        m + ".qweight": torch.randint(-2**31, 2**31 - 1, (cols // 8, rows), generator=g, dtype=torch.int32),
        m + ".qzeros": words(torch, stored_zero),
        m + ".scales": (torch.rand(cols // group, rows, generator=g) * 0.01 + 0.001).to(torch.float16),
        m + ".g_idx": (torch.randperm(cols, generator=g) // group).to(torch.int32),
    }
    src = tmp_path / "gptq-src"
    src.mkdir()
    save_file(tensors, str(src / "model.safetensors"))
    (src / "config.json").write_text(json.dumps({"model_type": "llama", "quantization_config": {
        "quant_method": "gptq", "bits": 4, "group_size": group, "desc_act": True, "sym": False,
        "checkpoint_format": "gptq"}}))
    want = dequantize(src, tmp_path / "deq-src", "f32")
    again = converted(tmp_path, src, "gptq", "gptq")
    assert raw_tensors(again) == raw_tensors(src)
    assert config_of(again)["desc_act"] is True
    check_gptq(torch, again, want)
    for fmt in ("awq", "compressed-tensors"):
        r = convert(tmp_path, src, tmp_path / fmt, fmt)
        assert r.returncode == 2 and "act-order" in r.stderr and m + ".qweight" in r.stderr, r.stderr
        assert "nothing was written" in r.stderr and not (tmp_path / fmt).exists()


def test_refusals(tmp_path):
    """What a target cannot hold is refused by name before anything is written: a zero point of 0 into GPTQ (stored
    as zero - 1, it wraps), 8-bit codes into AWQ, a recipe that would quantize into AWQ."""
    torch = need("torch")
    need("compressed_tensors")
    src = awq_source(torch, tmp_path, zeros_from=0)
    r = convert(tmp_path, src, tmp_path / "gptq", "gptq")
    assert r.returncode == 2 and "is 0, which GPTQ v1 stores as zero - 1" in r.stderr, r.stderr
    assert not (tmp_path / "gptq").exists()
    ct_checkpoint(torch, "W8A16", tmp_path / "w8")
    r = convert(tmp_path, tmp_path / "w8", tmp_path / "awq8", "awq")
    assert r.returncode == 2 and "holds 4-bit codes, not 8-bit" in r.stderr, r.stderr
    assert not (tmp_path / "awq8").exists()
    r = minifloat("convert", src, tmp_path / "mx", "--recipe", "mxfp4", "--format", "awq")
    assert r.returncode == 2 and "recipe mxfp4 cannot be written as --format awq" in r.stderr, r.stderr
    assert not (tmp_path / "mx").exists()


def test_relaid_out_compressed_tensors_loads_in_transformers(tmp_path):
    """compressed-tensors' own W4A16_ASYM into GPTQ and back into compressed-tensors (F16 scales now): transformers'
    compressed-tensors quantizer on CPU (dequantize=True) loads it with no missing or unexpected keys, each Linear
    the library's value (computed in the F16 scales' dtype, then stored in the model's bf16) of the source's numbers,
    and runs."""
    torch = need("torch")
    transformers = need("transformers")
    src = tmp_path / "ct"
    ct_checkpoint(torch, "W4A16_ASYM", src)
    gptq = converted(tmp_path, src, "gptq", "gptq")
    back = converted(tmp_path, gptq, "back", "compressed-tensors")
    want = dequantize(src, tmp_path / "deq-src", "f32")
    qc = transformers.CompressedTensorsConfig(dequantize=True)
    model, info = transformers.AutoModelForCausalLM.from_pretrained(back, quantization_config=qc, dtype=torch.bfloat16,
                                                                    output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"], info
    linears = [(n, m) for n, m in model.named_modules() if isinstance(m, torch.nn.Linear) and n != "lm_head"]
    assert len(linears) == 14
    for name, m in linears:
        same_bits(torch, m.weight.data, want[name + ".weight"].to(torch.float16).to(torch.bfloat16), name)
    with torch.no_grad():
        assert torch.isfinite(model(torch.tensor([[1, 2, 3]])).logits).all()
