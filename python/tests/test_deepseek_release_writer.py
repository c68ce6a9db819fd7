"""`convert --format deepseek` of a checkpoint in DeepSeek's bare names writes the release form: X.weight + X.scale
(F8_E8M0), routed experts FP4 as I8 [R, C/2] with X.scale F8_E8M0 [R, C/32], and config.json as the release carries
it. The expected layout is the catalogue's table, written out below with its source; the values are checked by
`minifloat dequantize` of input and output (bit for bit: the re-layout is lossless), by `verify`, and by transformers'
own DeepseekV4ForCausalLM, which loads the release form (renaming its names) on the CPU.
"""
import json
import struct

import pytest

from checkpoint_util import minifloat, same_bits
from conftest import need

# /work/shared/checkpoints-in-the-wild.md section 1.1 (V4-Flash's config.json as read in RobTand/prismaquant #26):
# quantization_config without expert_dtype, which sits at the top level.
V4_QUANTIZATION = {"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic", "scale_fmt": "ue8m0",
                   "weight_block_size": [128, 128]}
# Same section, V4.1-Flash (FlashML-org/FreeToken #444, huggingface/huggingface.js #2469): 32x32 tiles, expert_dtype
# inside quantization_config, the text model's fields under text_config.
V41_QUANTIZATION = {"quant_method": "fp8", "activation_scheme": "dynamic", "weight_block_size": [32, 32],
                    "scale_fmt": "ue8m0", "expert_dtype": "fp4"}


def fp8_modules(c):
    """Section 1.2's table (reference Linear / Attention classes, vllm deepseek_v4.py; MTP's e_proj / h_proj from
    vllm deepseek_v4_mtp.py): module suffix -> [out, in] of each FP8 weight, F8_E4M3 + `.scale` F8_E8M0."""
    dim, q, heads, hd = c["hidden_size"], c["q_lora_rank"], c["num_attention_heads"], c["head_dim"]
    groups, o_lora, inter = c["o_groups"], c["o_lora_rank"], c["moe_intermediate_size"]
    return {"attn.wq_a": [q, dim], "attn.wq_b": [heads * hd, q], "attn.wkv": [hd, dim],
            "attn.wo_a": [groups * o_lora, heads * hd // groups], "attn.wo_b": [dim, groups * o_lora],
            "attn.indexer.wq_b": [c["index_n_heads"] * c["index_head_dim"], q],
            "ffn.shared_experts.w1": [inter, dim], "ffn.shared_experts.w3": [inter, dim],
            "ffn.shared_experts.w2": [dim, inter], "e_proj": [dim, dim], "h_proj": [dim, dim]}


def expert_shape(c, w):
    """Section 1.2: ffn.experts.E.w1 / w3 [moe_inter, dim], w2 [dim, moe_inter] (NVIDIA-NeMo/Automodel #2034)."""
    dim, inter = c["hidden_size"], c["moe_intermediate_size"]
    return [dim, inter] if w == "w2" else [inter, dim]


def header(d):
    """name -> (dtype, shape, bytes) over every shard of checkpoint directory `d` (the safetensors header)."""
    out = {}
    index = d / "model.safetensors.index.json"
    shards = sorted(set(json.loads(index.read_text())["weight_map"].values())) if index.exists() else [
        f.name for f in d.glob("*.safetensors")]
    for shard in shards:
        raw = (d / shard).read_bytes()
        n = struct.unpack("<Q", raw[:8])[0]
        for name, e in json.loads(raw[8:8 + n]).items():
            if name != "__metadata__":
                b, end = e["data_offsets"]
                out[name] = (e["dtype"], e["shape"], raw[8 + n + b:8 + n + end])
    return out


def run(*args):
    r = minifloat(*args)
    assert r.returncode == 0, r.stderr
    return r


def module_of(name):
    """layers.N.attn.wq_a -> attn.wq_a; mtp.0.e_proj -> e_proj (the table's suffixes)."""
    parts = name.split(".")
    return ".".join(parts[2:])


def check_release_layout(out, c, block, expert_scale="F8_E8M0"):
    """Every quantized weight of `out` as the table says, scales named X.scale, nothing in V3's spelling."""
    t = header(out)
    assert not [n for n in t if n.endswith("_scale_inv")]
    fp8 = fp8_modules(c)
    scaled = sorted(n[:-len(".scale")] for n in t if n.endswith(".scale"))
    assert scaled, "no quantized weight written"
    for m in scaled:
        w, s = t[m + ".weight"], t[m + ".scale"]
        suffix = module_of(m)
        if ".ffn.experts." in m:
            r, k = expert_shape(c, m.rsplit(".", 1)[1])
            assert (w[0], w[1]) == ("I8", [r, k // 2]), (m, w[:2])
            assert (s[0], s[1]) == (expert_scale, [r, k // 32]), (m, s[:2])
        else:
            assert suffix in fp8, m
            r, k = fp8[suffix]
            assert (w[0], w[1]) == ("F8_E4M3", [r, k]), (m, w[:2])
            assert (s[0], s[1]) == ("F8_E8M0", [-(-r // block), -(-k // block)]), (m, s[:2])
    # Every module of the table present in the output is quantized (none left in bf16 or written elsewhere).
    for n in t:
        if n.endswith(".weight") and (module_of(n[:-7]) in fp8 or ".ffn.experts." in n):
            assert n[:-7] in scaled, n
    return t


def make(tmp_path, name, *args):
    d = tmp_path / name
    run("make-example-checkpoint", d, *args)
    return d


def config(d):
    return json.loads((d / "config.json").read_text())


def same_dequantized(torch, tmp_path, a, b):
    """`minifloat dequantize --dtype f32` of checkpoints a and b, every tensor bit for bit."""
    from safetensors.torch import load_file
    run("dequantize", a, tmp_path / "deq-a", "--dtype", "f32")
    run("dequantize", b, tmp_path / "deq-b", "--dtype", "f32")
    x, y = {}, {}
    for d, into in ((tmp_path / "deq-a", x), (tmp_path / "deq-b", y)):
        for f in sorted(d.glob("*.safetensors")):
            into.update(load_file(str(f)))
    assert x.keys() == y.keys()
    for name in x:
        same_bits(torch, y[name], x[name], name)


def test_v4_release_written_as_released(tmp_path):
    """The V4 release miniature -> --format deepseek: the table's layout and V4's config; every FP8 and FP4 pair's
    bytes are the input's (re-laid out, not requantized); the other tensors as the input has them but the ones recipe
    deepseek-v4 casts to f32 (`*compressor*`, docs/checkpoints.md "Recipes"); dequantize equal; verify passes."""
    torch = need("torch")
    src = make(tmp_path, "release", "--like", "deepseek-v4-release")
    out = tmp_path / "out"
    run("convert", src, out, "--recipe", "deepseek-v4", "--format", "deepseek")
    c = config(out)
    t = check_release_layout(out, c, 128)
    assert c["quantization_config"] == V4_QUANTIZATION and c["expert_dtype"] == "fp4"
    assert "quantization_config" not in c.get("text_config", {})
    want = header(src)
    assert t.keys() == want.keys()
    for name, (dtype, shape, data) in t.items():
        if "compressor" in name:
            assert (dtype, shape) == ("F32", want[name][1]), name
        else:
            assert (dtype, shape, data) == want[name], name
    same_dequantized(torch, tmp_path, src, out)
    run("verify", out)


def test_minifloat_quantized_written_as_released(tmp_path):
    """A bf16 V4 in DeepSeek's names quantized into minifloat's form (W + W_scale_inv, FP4 as F4) -> --format
    deepseek: the table's layout with the very code and scale bytes (F4 and I8 hold the same bytes), the same as
    quantizing the bf16 model straight into --format deepseek; dequantize equal; verify passes."""
    torch = need("torch")
    bf16 = make(tmp_path, "bf16", "--arch", "deepseek-v4")
    mine = tmp_path / "minifloat"
    run("convert", bf16, mine, "--recipe", "deepseek-v4")
    out, direct = tmp_path / "out", tmp_path / "direct"
    run("convert", mine, out, "--recipe", "deepseek-v4", "--format", "deepseek")
    run("convert", bf16, direct, "--recipe", "deepseek-v4", "--format", "deepseek")
    c = config(out)
    t = check_release_layout(out, c, 128)
    assert c["quantization_config"] == V4_QUANTIZATION and c["expert_dtype"] == "fp4"
    m = header(mine)
    for name, (dtype, shape, data) in t.items():
        if name.endswith(".scale"):
            weight = name[:-len(".scale")] + ".weight"
            assert data == m[weight + "_scale_inv"][2], name
        else:
            assert data == m[name][2], name
    assert header(direct) == t
    assert config(direct) == c
    same_dequantized(torch, tmp_path, mine, out)
    run("verify", out)


def test_round_trip_through_compressed_tensors(tmp_path):
    """V4 release -> compressed-tensors with the routed experts as mxfp4-pack-quantized (the rest dequantized to bf16,
    the hyper-connection and sink parameters kept: V4's 64-row FP8 weights are no whole 128x128 blocks, which
    compressed-tensors' block strategy needs) -> --format deepseek: the experts, the same numbers all the way, come
    back as the release's very I8 and `.scale` bytes; every tensor has the names and dtypes of the release ->
    --format deepseek."""
    src = make(tmp_path, "release", "--like", "deepseek-v4-release")
    recipe = tmp_path / "experts.json"
    recipe.write_text(json.dumps({"*.ffn.experts.*": "mxfp4", "*.weight": "bf16", "*": "keep"}))
    ct, back, direct = tmp_path / "ct", tmp_path / "back", tmp_path / "direct"
    run("convert", src, ct, "--recipe", recipe, "--format", "compressed-tensors")
    c = header(ct)
    assert c["layers.1.ffn.experts.0.w1.weight_packed"][0] == "U8" and "layers.1.ffn.experts.0.w1.weight" not in c
    run("convert", ct, back, "--recipe", "deepseek-v4", "--format", "deepseek")
    run("convert", src, direct, "--recipe", "deepseek-v4", "--format", "deepseek")
    got, want, same = header(back), header(src), header(direct)
    experts = [n for n in want if ".ffn.experts." in n]
    assert len(experts) == 2 * 3 * 4 * 3  # layers 0 and 1 and mtp.0, 4 experts, w1 / w2 / w3, weight and scale
    for n in experts:
        assert got[n] == want[n], n
    assert {n: t[:2] for n, t in got.items()} == {n: t[:2] for n, t in same.items()}
    assert config(back)["quantization_config"] == V4_QUANTIZATION and config(back)["expert_dtype"] == "fp4"
    run("verify", back)


def test_v41_release_written_as_released(tmp_path):
    """The V4.1 miniature -> --recipe deepinfer --format deepseek: 32x32 FP8 tiles, FP4 experts, quantization_config
    under text_config as V4.1 carries it; the engram table becomes bf16 (deepinfer's `*embed*` rule)."""
    torch = need("torch")
    src = make(tmp_path, "v41", "--like", "deepseek-v4.1")
    out = tmp_path / "out"
    run("convert", src, out, "--recipe", "deepinfer", "--format", "deepseek")
    c = config(out)
    text = c["text_config"]
    t = check_release_layout(out, text, 32)
    assert "quantization_config" not in c and "expert_dtype" not in c
    assert text["quantization_config"] == V41_QUANTIZATION
    want = header(src)
    for name, (dtype, shape, data) in t.items():
        if name.startswith("layers.1.engram.embed."):
            assert (dtype, shape) == ("BF16", want[name][1]), name
        elif "compressor" not in name:
            assert (dtype, shape, data) == want[name], name
    run("verify", out)


def test_flash_base_form_from_fp8_block(tmp_path):
    """--recipe fp8-block on DeepSeek's names: V4-Flash-Base's form (section 1.1, NVIDIA-NeMo/Automodel #2034): every
    quantized weight FP8 128x128 with an F32 `.scale`, experts too, and expert_dtype "fp8" at the top level. On a
    small model made here of the table's modules only (fp8-block quantizes every 2-D tensor, so V4's hyper-connection
    mixers, which are no module weights, would be refused by name)."""
    import numpy as np
    from safetensors.numpy import save_file
    src = tmp_path / "src"
    src.mkdir()
    rng = np.random.default_rng(0)
    shapes = {"embed.weight": [256, 128], "layers.0.attn.wq_a.weight": [256, 128],
              "layers.0.ffn.experts.0.w1.weight": [128, 256], "layers.0.ffn.experts.0.w2.weight": [256, 128],
              "layers.0.ffn_norm.weight": [128], "head.weight": [256, 128]}
    save_file({n: rng.standard_normal(s).astype(np.float32) for n, s in shapes.items()}, str(src / "model.safetensors"))
    (src / "config.json").write_text(json.dumps({"model_type": "deepseek_v4", "hidden_size": 128}))
    out = tmp_path / "out"
    run("convert", src, out, "--recipe", "fp8-block", "--format", "deepseek")
    t = header(out)
    assert sorted(n for n in t if n.endswith(".scale")) == [
        "layers.0.attn.wq_a.scale", "layers.0.ffn.experts.0.w1.scale", "layers.0.ffn.experts.0.w2.scale"]
    for n in ["layers.0.attn.wq_a", "layers.0.ffn.experts.0.w1", "layers.0.ffn.experts.0.w2"]:
        r, k = shapes[n + ".weight"]
        assert t[n + ".weight"][:2] == ("F8_E4M3", [r, k]), n
        assert t[n + ".scale"][:2] == ("F32", [r // 128, k // 128]), n
    c = config(out)
    assert c["expert_dtype"] == "fp8"
    assert c["quantization_config"] == {"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic",
                                        "weight_block_size": [128, 128]}
    run("verify", out)


def test_v32_blocks_on_hugging_face_names_refused(tmp_path):
    """32x32 is V4.1's release form only; a checkpoint in Hugging Face names (V3's spelling) is refused, nothing
    written."""
    src = make(tmp_path, "qwen", "--arch", "qwen-moe")
    out = tmp_path / "out"
    r = minifloat("convert", src, out, "--recipe", "deepinfer", "--format", "deepseek")
    assert r.returncode == 2, r.stderr
    assert "32x32 blocks are DeepSeek-V4.1's" in r.stderr and "Hugging Face names" in r.stderr, r.stderr
    assert not out.exists()


def test_transformers_loads_the_written_release(tmp_path):
    """transformers' DeepseekV4ForCausalLM (5.23, on the CPU: it dequantizes FP8 and FP4 to bf16 as it loads the
    release's names) loads the written checkpoint with no missing or unexpected keys, every parameter equal to its load
    of the release miniature the checkpoint was converted from (the compressors, cast to f32 by the recipe, hold the
    same values)."""
    torch = need("torch")
    transformers = need("transformers")
    src = make(tmp_path, "release", "--like", "deepseek-v4-release")
    out = tmp_path / "out"
    run("convert", src, out, "--recipe", "deepseek-v4", "--format", "deepseek")
    model, info = transformers.AutoModelForCausalLM.from_pretrained(out, dtype=torch.bfloat16, output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"], info
    ref = transformers.AutoModelForCausalLM.from_pretrained(src, dtype=torch.bfloat16)
    want = ref.state_dict()
    for name, got in model.state_dict().items():
        same_bits(torch, got, want[name].to(got.dtype), name)


def test_fp4_experts_in_partial_blocks_refused(tmp_path):
    """DeepSeek's FP4 scale is [out, in // 32] (section 1.2, the reference Linear): an expert 48 wide would need
    minifloat's padded last block, which its loader has no rule for; refused naming the tensor, nothing written."""
    import numpy as np
    from safetensors.numpy import save_file
    src = tmp_path / "src"
    src.mkdir()
    rng = np.random.default_rng(0)
    save_file({"layers.0.attn.wq_a.weight": rng.standard_normal([128, 128]).astype(np.float32),
               "layers.0.ffn.experts.0.w1.weight": rng.standard_normal([32, 48]).astype(np.float32)},
              str(src / "model.safetensors"))
    out = tmp_path / "out"
    r = minifloat("convert", src, out, "--recipe", "deepseek-v4", "--format", "deepseek")
    assert r.returncode == 2, r.stderr
    assert "layers.0.ffn.experts.0.w1.weight" in r.stderr and "whole blocks of 32" in r.stderr, r.stderr
    assert not out.exists()
