"""convert --lossless: quantized pairs cast between block schemes (docs/checkpoints.md, "Lossless casts between
schemes"), on the DeepSeek-V4 release miniature (`make-example-checkpoint --like deepseek-v4-release`: routed experts
FP4 as I8 with E8M0 1x32 scales, linears FP8 with E8M0 128x128 scales). Every cast is checked by dequantizing input and
output and comparing every value bit for bit; the written NVFP4 against ModelOpt's NVFP4QTensor and compressed-tensors'
NVFP4 decompressor, the MXFP8 against ModelOpt's MXFP8QTensor, and MXFP4 -> FP8 against DeepSeek's
cast_e2m1fn_to_e4m3fn (inference/convert.py) written out below from its published formula. MXFP4 checkpoints that
compressed-tensors and ModelOpt wrote themselves are cast into NVFP4 the same way."""
import json
import pathlib

import pytest

from checkpoint_util import minifloat, same_bits
from conftest import need

EXPERTS_NVFP4 = {"*.experts.*": "nvfp4", "*": "f32"}
# The FP8 pairs by name (a BF16 tensor given a scheme is refused under --lossless), the experts to FP8 tiles.
EXPERTS_FP8_LINEARS_MXFP8 = {"*.experts.*": "fp8-128x128", "*.wq_a.*": "mxfp8", "*.wq_b.*": "mxfp8",
                             "*.attn.wkv.*": "mxfp8", "*.wo_a.*": "mxfp8", "*.wo_b.*": "mxfp8",
                             "*.shared_experts.*": "mxfp8", "*.e_proj.*": "mxfp8", "*.h_proj.*": "mxfp8", "*": "f32"}


def release(tmp_path):
    src = tmp_path / "v4"
    r = minifloat("make-example-checkpoint", src, "--like", "deepseek-v4-release")
    assert r.returncode == 0, r.stderr
    return src


def recipe_file(tmp_path, rules):
    p = tmp_path / "recipe.json"
    p.write_text(json.dumps(rules))
    return p


def tensors(path):
    from safetensors.torch import load_file
    out = {}
    for shard in sorted(pathlib.Path(path).glob("*.safetensors")):
        out.update(load_file(str(shard)))
    return out


def dequantize(src, dst, dtype="bf16"):
    """Every shard of `minifloat dequantize SRC DST --dtype DTYPE`."""
    r = minifloat("dequantize", src, dst, "--dtype", dtype)
    assert r.returncode == 0, r.stderr
    return tensors(dst)


def convert(src, out, rules_path, *extra):
    r = minifloat("convert", src, out, "--recipe", rules_path, "--lossless", "--json", *extra)
    assert r.returncode == 0, r.stderr
    return {t["name"]: t for t in json.loads(r.stdout)["tensors"]}


def all_values_equal(torch, src, out, tmp_path):
    """Input and output dequantized to f32 (exact: each value code x scale, rounded once), compared bit for bit."""
    want, got = dequantize(src, tmp_path / "in-f32", "f32"), dequantize(out, tmp_path / "out-f32", "f32")
    assert want.keys() == got.keys()
    for k in want:
        same_bits(torch, got[k], want[k], k)


def expert_names(stored):
    return sorted(k for k in stored if ".experts." in k and k.endswith(".weight") and ".shared_" not in k)


def nvfp4_by_library(torch, out, fmt, names, want):
    """The NVFP4 weights `names` of `out`, dequantized by the dialect's library (compressed-tensors' decompressor for
    its format; ModelOpt's NVFP4QTensor for ModelOpt's and minifloat's, which share the form: W (F4 / U8), W_scale
    (F8_E4M3 [R, C/16]), W_scale_2 (F32 [])), against `want` (the input dequantized to bf16: e2m1 x 2^k is exact
    there)."""
    stored = tensors(out)
    if fmt == "compressed-tensors":
        need("compressed_tensors")
        from compressed_tensors.compressors import BaseCompressor
        from compressed_tensors.quantization import QuantizationConfig
        parsed = QuantizationConfig.model_validate(json.loads((out / "config.json").read_text())["quantization_config"])
        compressor = BaseCompressor.get_value_from_registry(parsed.format)
        for name in names:
            m = name[:-len(".weight")]
            parts = {k[len(m) + 1:]: v for k, v in stored.items() if k.rsplit(".", 1)[0] == m}
            assert set(parts) == {"weight_packed", "weight_scale", "weight_global_scale"}, parts.keys()
            got = compressor.decompress(parts, parsed.config_groups["group_0"])["weight"]
            same_bits(torch, got, want[name], name)
    else:
        qt = need("modelopt.torch.quantization.qtensor")
        for name in names:
            w = stored[name].view(torch.uint8)
            got = qt.NVFP4QTensor(torch.Size([w.shape[0], w.shape[1] * 2]), torch.bfloat16, w).dequantize(
                dtype=torch.bfloat16, scale=stored[name + "_scale"], double_scale=stored[name + "_scale_2"],
                block_sizes={-1: 16})
            same_bits(torch, got, want[name], name, zero_sign=False)  # ModelOpt decodes e2m1 -0 as +0


@pytest.mark.parametrize("fmt", ["minifloat", "modelopt", "compressed-tensors"])
def test_fp4_experts_to_nvfp4(tmp_path, fmt):
    torch = need("torch")
    src = release(tmp_path)
    out = tmp_path / "out"
    rows = convert(src, out, recipe_file(tmp_path, EXPERTS_NVFP4), "--format", fmt)
    cast = {k: v for k, v in rows.items() if "blocks" in v}
    assert len(cast) == 36, rows.keys()  # (2 layers + 1 MTP) x 4 experts x 3
    for name, row in cast.items():
        assert row["target"] == "nvfp4 cast from e2m1-1x32-ue8m0-rceil", row
        assert row["blocks"] == 128 * 128 // 16 and row["exact_blocks"] == row["blocks"], row
        assert row["inexact_blocks"] == 0 and row["max_abs"] == 0 and row["max_rel"] == 0, row
    all_values_equal(torch, src, out, tmp_path)
    nvfp4_by_library(torch, out, fmt, sorted(cast), dequantize(src, tmp_path / "in-bf16"))
    r = minifloat("verify", out)
    assert r.returncode == 0, r.stderr + r.stdout


def deepseek_cast_e2m1fn_to_e4m3fn(torch, x, scale):
    """DeepSeek-V4 inference/convert.py's lossless FP4 -> FP8 cast, from its published formula: per 128x128 tile,
    s_blk = max(tile's E8M0 scales) / 2^6, fp8 = e2m1 x (scale / s_blk) cast to float8_e4m3fn, new scale s_blk."""
    table = torch.tensor([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0])
    b = x.view(torch.uint8)
    v = torch.stack([table[(b & 0x0F).long()], table[(b >> 4).long()]], dim=-1).flatten(1)  # low nibble first
    rows, cols = v.shape
    s = scale.float()  # [rows, cols / 32]
    t = s.view(rows // 128, 128, cols // 128, 4).amax(dim=(1, 3)) / 2 ** 6  # [rows / 128, cols / 128]
    per_block = s / t.repeat_interleave(128, 0).repeat_interleave(4, 1)
    fp8 = (v * per_block.repeat_interleave(32, 1)).to(torch.float8_e4m3fn)
    return fp8, t.to(torch.float8_e8m0fnu)


def test_fp4_experts_to_fp8_tiles_and_fp8_tiles_to_mxfp8(tmp_path):
    torch = need("torch")
    qt = need("modelopt.torch.quantization.qtensor")
    src = release(tmp_path)
    out = tmp_path / "out"
    rows = convert(src, out, recipe_file(tmp_path, EXPERTS_FP8_LINEARS_MXFP8))
    cast = {k: v for k, v in rows.items() if "blocks" in v}
    assert all(v["inexact_blocks"] == 0 and v["exact_blocks"] == v["blocks"] for v in cast.values()), cast
    all_values_equal(torch, src, out, tmp_path)
    before, after = tensors(src), tensors(out)
    experts = expert_names(before)
    assert len(experts) == 36
    for name in experts:
        assert rows[name]["target"] == "fp8-128x128 cast from e2m1-1x32-ue8m0-rceil" and rows[name]["blocks"] == 1
        fp8, s = deepseek_cast_e2m1fn_to_e4m3fn(torch, before[name], before[name[:-len("weight")] + "scale"])
        # DeepSeek's table reads the e2m1 code 8 (-0) as +0; minifloat keeps -0 (OCP), so E4M3 0x80 where DeepSeek
        # writes 0x00: the one difference allowed.
        got, ds = after[name].view(torch.uint8), fp8.view(torch.uint8)
        differ = got != ds
        assert bool((got[differ] == 0x80).all() and (ds[differ] == 0x00).all()), name
        assert torch.equal(got == 0x80, (before[name].view(torch.uint8).repeat_interleave(2, 1) >>
                                         torch.tensor([0, 4]).repeat(got.shape[1] // 2) & 0xF) == 8), name
        assert torch.equal(after[name + "_scale_inv"].view(torch.uint8), s.view(torch.uint8)), name
    want = dequantize(src, tmp_path / "in-bf16")
    linears = [k for k, v in cast.items() if v["target"].startswith("mxfp8")]
    assert len(linears) == 27, linears  # 2 layers x 8, an indexer wq_b, MTP: 8 + e_proj + h_proj
    for name in linears:
        w, s = after[name], after[name + "_scale_inv"]
        assert torch.equal(w.view(torch.uint8), before[name].view(torch.uint8)), name  # the same codes
        got = qt.MXFP8QTensor(w.shape, torch.bfloat16, w).dequantize(dtype=torch.bfloat16, scale=s.view(torch.uint8),
                                                                      block_sizes={-1: 32})
        same_bits(torch, got, want[name], name)


def widen_one_expert_scale(torch, src, name, row, block, drop):
    """The release miniature with one E8M0 block scale of `name` lowered `drop` binades below the tensor's largest."""
    from safetensors.torch import load_file, save_file
    index = json.loads((src / "model.safetensors.index.json").read_text())
    shard = src / index["weight_map"][name]
    t = load_file(str(shard))
    codes = t[name[:-len("weight")] + "scale"].view(torch.uint8).clone()
    codes[row, block] = int(codes.max()) - drop
    t[name[:-len("weight")] + "scale"] = codes.view(torch.float8_e8m0fnu)
    save_file(t, str(shard), metadata={"format": "pt"})


def test_inexact_block_is_an_error_unless_allowed(tmp_path):
    torch = need("torch")
    src = release(tmp_path)
    name = "layers.0.ffn.experts.1.w2.weight"
    widen_one_expert_scale(torch, src, name, 3, 1, 20)  # 20 binades: past NVFP4's 17
    rules = recipe_file(tmp_path, EXPERTS_NVFP4)
    out = tmp_path / "out"
    r = minifloat("convert", src, out, "--recipe", rules, "--lossless")
    assert r.returncode == 2, r.stderr
    assert f"tensor '{name}'" in r.stderr and "cannot be carried exactly" in r.stderr, r.stderr
    assert "block (3, 2) of the output's scale grid" in r.stderr and "nothing was written" in r.stderr, r.stderr
    assert not out.exists()
    rows = convert(src, out, rules, "--allow-inexact")
    row = rows[name]
    assert 1 <= row["inexact_blocks"] <= 2 and row["exact_blocks"] == row["blocks"] - row["inexact_blocks"], row
    assert row["max_abs"] > 0 and row["max_rel"] > 0, row
    assert all(v["inexact_blocks"] == 0 for k, v in rows.items() if "blocks" in v and k != name)
    want, got = dequantize(src, tmp_path / "in", "f32"), dequantize(out, tmp_path / "got", "f32")
    differ = (want[name].view(torch.int32) != got[name].view(torch.int32)).nonzero()
    assert len(differ) > 0 and all(int(i) == 3 and 32 <= int(j) < 64 for i, j in differ), differ  # that block only
    assert abs(float((got[name] - want[name]).abs().max()) - row["max_abs"]) == 0, row


@pytest.mark.parametrize("rules,why", [
    ({"*.experts.*": "nvfp4", "*": "mxfp8"}, "tensor 'embed.weight' (BF16) has the recipe target mxfp8: --lossless "
                                              "writes nothing rounded"),
    ({"*.experts.*": "mxfp6-e2m3", "*": "f32"}, "no lossless cast from e2m1-1x32-ue8m0-rceil to mxfp6-e2m3"),
    ({"*.shared_experts.*": "nvfp4", "*": "f32"}, "no lossless cast from e4m3-128x128-ue8m0-rceil to nvfp4"),
    ({"*.experts.*": "bf16", "*": "f32"}, "(a quantized pair) has the recipe target bf16"),
])
def test_refused_before_anything_is_written(tmp_path, rules, why):
    src = release(tmp_path)
    out = tmp_path / "out"
    r = minifloat("convert", src, out, "--recipe", recipe_file(tmp_path, rules), "--lossless")
    assert r.returncode == 2 and why in r.stderr, r.stderr
    assert not out.exists()


@pytest.mark.parametrize("source", ["compressed-tensors", "modelopt"])
@pytest.mark.parametrize("fmt", ["minifloat", "modelopt", "compressed-tensors"])
def test_library_mxfp4_to_nvfp4(tmp_path, source, fmt):
    """A tiny Llama that compressed-tensors' MXFP4 preset or ModelOpt's MXFP4 config quantized, cast by the built-in
    nvfp4 recipe (its BF16 embeddings and head stay BF16, as the recipe asks): every linear cast exactly."""
    torch = need("torch")
    from test_dialects import ct_checkpoint, modelopt_checkpoint
    src, out = tmp_path / "src", tmp_path / "out"
    (ct_checkpoint if source == "compressed-tensors" else modelopt_checkpoint)(torch, "MXFP4", src)
    r = minifloat("convert", src, out, "--recipe", "nvfp4", "--lossless", "--json", "--format", fmt)
    assert r.returncode == 0, r.stderr
    cast = {t["name"]: t for t in json.loads(r.stdout)["tensors"] if "blocks" in t}
    assert len(cast) == 14 and all(t["inexact_blocks"] == 0 and t["target"] == "nvfp4 cast from e2m1-1x32-ue8m0"
                                   for t in cast.values()), cast
    all_values_equal(torch, src, out, tmp_path)
    nvfp4_by_library(torch, out, fmt, sorted(cast), dequantize(src, tmp_path / "in-bf16"))


def test_python_convert_lossless_writes_what_the_command_writes(tmp_path):
    """minifloat.convert(lossless=True) runs the same code: the same files, byte for byte, and the same report rows."""
    mf = pytest.importorskip("minifloat")
    src = release(tmp_path)
    rules = recipe_file(tmp_path, EXPERTS_NVFP4)
    rows = convert(src, tmp_path / "cli", rules)
    report = mf.convert(src, tmp_path / "py", rules, lossless=True, progress=False)
    got = {t["name"]: t for t in report["tensors"]}
    for name, row in rows.items():
        for key in ("blocks", "exact_blocks", "inexact_blocks", "max_rel"):
            assert got[name].get(key) == row.get(key), (name, key)
    for f in sorted((tmp_path / "cli").iterdir()):
        assert (tmp_path / "py" / f.name).read_bytes() == f.read_bytes(), f.name
    with pytest.raises(ValueError, match="allow_inexact goes with lossless"):
        mf.convert(src, tmp_path / "no", rules, allow_inexact=True)
