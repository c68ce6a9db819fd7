"""`minifloat convert --format gguf` from quantized checkpoints, in one pass, against llama.cpp's own converter.

The same tiny Llama (bf16, with a SentencePiece tokenizer.model) is quantized here into each source scheme, built
tensor by tensor with torch from the layouts the libraries document (DeepSeek / transformers FineGrainedFP8, Qwen's
FP8 with BF16 scale_inv, compressed-tensors float-quantized channel and block, ModelOpt FP8, AutoGPTQ, compressed-
tensors pack-quantized) or written by minifloat itself (ModelOpt and compressed-tensors NVFP4, which the converter
then reads as any other producer's). llama.cpp's convert_hf_to_gguf.py (conversion/base.py: dequant_simple,
dequant_gptq, dequant_packed, _nvfp4_pack, --fp8-as-q8) and minifloat convert each source, and every tensor must be
the same: name, GGML type, shape and bytes. Where minifloat writes a type the converter does not (Q4_0 / Q4_1 for
integer codes, --keep-quantized), gguf-py's gguf.quants.dequantize of minifloat's tensor must equal the converter's
own F32 dequantization bit for bit."""
import json
import shutil

import numpy as np
import pytest

from checkpoint_util import minifloat
from conftest import need
from test_convert_formats import tiny_llama
from test_gguf_tokenizer import run_converter, sentencepiece_model

FILE_TYPE = {"f32": 0, "f16": 1, "q8_0": 7, "bf16": 32}  # llama_ftype
MOSTLY_NVFP4 = 39


def is_linear(name):
    return name.startswith("model.layers.") and name.endswith("_proj.weight")


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    """The bf16 tiny Llama (hidden 256, ff 384, 4 heads, 2 KV heads, vocab 512) with a SentencePiece tokenizer."""
    torch = need("torch")
    root = tmp_path_factory.mktemp("gguf-sources")
    for name, exact in (("src", False), ("exact", True)):
        tiny_llama(torch, root / name, exact_global_scale=exact)
        (root / name / "tokenizer.model").write_bytes(sentencepiece_model())
        (root / name / "tokenizer_config.json").write_text(json.dumps(
            {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>", "add_bos_token": True}))
    return root


def rewrite(src, dst, quantize, quantization_config=None, files=None):
    """src copied into dst with every linear weight replaced by quantize(name, f32 weight) -> {name: tensor}."""
    from safetensors.torch import load_file, save_file
    dst.mkdir()
    for f in src.iterdir():
        if not f.name.endswith(".safetensors"):
            shutil.copy(f, dst / f.name)
    tensors = {}
    for k, v in load_file(str(src / "model.safetensors")).items():
        tensors.update(quantize(k, v.float()) if is_linear(k) else {k: v})
    save_file(tensors, str(dst / "model.safetensors"), metadata={"format": "pt"})
    if quantization_config is not None:
        config = json.loads((dst / "config.json").read_text())
        config["quantization_config"] = quantization_config
        (dst / "config.json").write_text(json.dumps(config))
    for name, value in (files or {}).items():
        (dst / name).write_text(json.dumps(value))
    return dst


# ---- FP8 sources ----

def fp8(torch, w, scale):
    """FP8 E4M3 codes of w for the (broadcast) scale, and the scale."""
    return (w / scale).to(torch.float8_e4m3fn)


def fp8_blocks(torch, w, br, bc, dtype):
    rows, cols = w.shape
    amax = w.reshape(rows // br, br, cols // bc, bc).abs().amax(dim=(1, 3))
    s = (amax / 448).to(dtype)
    full = s.float().repeat_interleave(br, 0).repeat_interleave(bc, 1)
    return fp8(torch, w, full), s


def fp8_source(torch, root, kind):
    """An FP8 checkpoint of `kind`, as its producer lays it out."""
    src, dst = root / "src", root / f"fp8-{kind}"
    if dst.exists():
        return dst
    dynamic = {"quant_method": "fp8", "activation_scheme": "dynamic"}

    def compressed(strategy, block=None):
        weights = {"num_bits": 8, "type": "float", "strategy": strategy, "symmetric": True, "dynamic": False,
                   "group_size": None, "block_structure": block}
        return {"quant_method": "compressed-tensors", "format": "float-quantized",
                "config_groups": {"group_0": {"targets": ["Linear"], "weights": weights, "input_activations": None}},
                "ignore": ["lm_head"]}

    if kind in ("deepseek", "qwen-bf16"):  # W + W_scale_inv [R/128, C/128], F32 (DeepSeek) or BF16 (Qwen)
        dtype = torch.float32 if kind == "deepseek" else torch.bfloat16
        def q(k, w):
            codes, s = fp8_blocks(torch, w, 128, 128, dtype)
            return {k: codes, k + "_scale_inv": s}
        return rewrite(src, dst, q, {**dynamic, "fmt": "e4m3", "weight_block_size": [128, 128]})
    if kind == "per-tensor":  # transformers' FineGrainedFP8 with weight_block_size null: one F32 scale_inv
        def q(k, w):
            s = (w.abs().max() / 448).float()
            return {k: fp8(torch, w, s), k + "_scale_inv": s.reshape(())}
        return rewrite(src, dst, q, {**dynamic, "weight_block_size": None})
    if kind == "ct-channel":  # compressed-tensors: W + W_scale BF16 [R, 1]
        def q(k, w):
            s = (w.abs().amax(dim=1, keepdim=True) / 448).to(torch.bfloat16)
            return {k: fp8(torch, w, s.float()), k + "_scale": s}
        return rewrite(src, dst, q, compressed("channel"))
    if kind == "ct-block":  # compressed-tensors: W + W_scale F32 [R/128, C/128]
        def q(k, w):
            codes, s = fp8_blocks(torch, w, 128, 128, torch.float32)
            return {k: codes, k + "_scale": s}
        return rewrite(src, dst, q, compressed("block", [128, 128]))
    assert kind == "modelopt"  # ModelOpt FP8: W + W_scale F32 [] + input_scale F32 [] (hf_quant_config.json)
    def q(k, w):
        s = (w.abs().max() / 448).float()
        module = k.removesuffix(".weight")
        return {k: fp8(torch, w, s), k + "_scale": s.reshape(()), module + ".input_scale": torch.tensor(0.0123)}
    return rewrite(src, dst, q, files={"hf_quant_config.json": {
        "producer": {"name": "modelopt", "version": "0.29.0"},
        "quantization": {"quant_algo": "FP8", "kv_cache_quant_algo": None, "exclude_modules": ["lm_head"]}}})


def llama_cpp(src, out, outtype, *flags):
    r = run_converter(src, "--outfile", out, "--outtype", outtype, *flags)
    assert r.returncode == 0, r.stderr[-3000:]
    return out


def ours(src, out, recipe, *flags):
    r = minifloat("convert", src, out, "--recipe", recipe, "--format", "gguf", *flags)
    assert r.returncode == 0, r.stderr
    return r.stdout


def tensors(path):
    return {t.name: t for t in need("gguf").GGUFReader(str(path)).tensors}


def raw(t):
    return np.asarray(t.data).reshape(-1).view(np.uint8)


def file_type(path):
    return need("gguf").GGUFReader(str(path)).get_field("general.file_type").contents()


def assert_same_tensors(got_path, want_path, skip=()):
    """Every tensor of the converter's file in minifloat's: the same names, types, shapes and bytes."""
    got, want = tensors(got_path), tensors(want_path)
    assert set(got) == set(want), (sorted(set(got) ^ set(want)))
    for name, w in want.items():
        if name in skip:
            continue
        g = got[name]
        assert g.tensor_type == w.tensor_type, (name, g.tensor_type.name, w.tensor_type.name)
        assert list(g.shape) == list(w.shape), name
        assert np.array_equal(raw(g), raw(w)), f"{name}: bytes differ from llama.cpp's converter"


# Each out type and each source at least once (the encoding after dequantization is shared; a converter run takes
# seconds).
FP8_CASES = [("deepseek", "f16"), ("deepseek", "q8_0"), ("qwen-bf16", "bf16"), ("per-tensor", "f32"),
             ("ct-channel", "q8_0"), ("ct-block", "f16"), ("modelopt", "q8_0")]


@pytest.mark.parametrize("kind,outtype", FP8_CASES)
def test_fp8_sources_as_llama_cpp_converts_them(base, tmp_path, kind, outtype):
    """Each FP8 weight dequantized exactly (code x scale in f32, as dequant_simple) and encoded once; the report
    gives every dequantized tensor's error."""
    src = fp8_source(need("torch"), base, kind)
    want = llama_cpp(src, tmp_path / "llama.cpp.gguf", outtype)
    report = ours(src, tmp_path / "minifloat.gguf", outtype)
    assert_same_tensors(tmp_path / "minifloat.gguf", want)
    assert file_type(tmp_path / "minifloat.gguf") == file_type(want) == FILE_TYPE[outtype]
    assert "model.layers.1.self_attn.q_proj.weight" in report and "model.layers.0.mlp.down_proj.weight" in report


@pytest.mark.parametrize("kind,outtype", [("deepseek", "bf16"), ("modelopt", "f16")])
def test_fp8_as_q8_as_llama_cpp_converts_it(base, tmp_path, kind, outtype):
    """--fp8-as-q8: FP8-sourced 2-D weights as Q8_0, the embeddings and output at the out type, norms F32."""
    src = fp8_source(need("torch"), base, kind)
    want = llama_cpp(src, tmp_path / "llama.cpp.gguf", outtype, "--fp8-as-q8")
    report = ours(src, tmp_path / "minifloat.gguf", outtype, "--fp8-as-q8")
    assert_same_tensors(tmp_path / "minifloat.gguf", want)
    Q = need("gguf").GGMLQuantizationType
    got = tensors(tmp_path / "minifloat.gguf")
    assert got["blk.0.attn_q.weight"].tensor_type == Q.Q8_0
    assert got["token_embd.weight"].tensor_type == Q[outtype.upper()]
    assert "Q8_0 (fp8-as-q8)" in report


def test_fp8_flags_are_for_type_recipes(base, tmp_path):
    src = fp8_source(need("torch"), base, "deepseek")
    r = minifloat("convert", src, tmp_path / "out.gguf", "--recipe", "mxfp4", "--format", "gguf", "--fp8-as-q8")
    assert r.returncode == 2 and "--fp8-as-q8 and --keep-quantized go with --recipe f32, f16, bf16 or q8_0" in r.stderr
    r = minifloat("convert", src, tmp_path / "out", "--recipe", "mxfp4", "--keep-quantized")
    assert r.returncode == 2 and "go with --format gguf" in r.stderr
    assert not any(tmp_path.glob("out*"))


# ---- NVFP4 sources ----

def nvfp4_source(root, kind):
    """minifloat's NVFP4 of the tiny Llama as ModelOpt (with an input_scale per linear added, as ModelOpt's W4A4
    exports carry), compressed-tensors (global scales 2^16: exact reciprocals; an input_global_scale 8 added) or
    minifloat's own form (ModelOpt's tensor names, the codes as F4, which the converter does not read: it is compared
    with the converter's conversion of the same quantization written as ModelOpt, "modelopt-plain")."""
    torch = need("torch")
    from safetensors.torch import load_file, save_file
    dst = root / f"nvfp4-{kind}"
    if dst.exists():
        return dst
    fmt = {"modelopt": "modelopt", "modelopt-plain": "modelopt", "ct": "compressed-tensors", "own": "minifloat"}
    src = root / "exact"
    r = minifloat("convert", src, dst, "--recipe", "nvfp4", "--format", fmt[kind])
    assert r.returncode == 0, r.stderr
    for f in ("tokenizer.model", "tokenizer_config.json"):
        shutil.copy(src / f, dst / f)
    shards = sorted(dst.glob("*.safetensors"))
    assert len(shards) == 1
    t = load_file(str(shards[0]))
    added = {}
    for k in list(t):
        if kind == "modelopt" and k.endswith(".weight_scale_2"):
            added[k.removesuffix(".weight_scale_2") + ".input_scale"] = torch.tensor(0.0123)
        if kind == "ct" and k.endswith(".weight_global_scale"):
            added[k.removesuffix(".weight_global_scale") + ".input_global_scale"] = torch.tensor([8.0])
    if added:
        t.update(added)
        save_file(t, str(shards[0]), metadata={"format": "pt"})
        index = dst / "model.safetensors.index.json"
        if index.exists():
            j = json.loads(index.read_text())
            j["weight_map"].update({k: shards[0].name for k in added})
            index.write_text(json.dumps(j))
    return dst


@pytest.mark.parametrize("kind", ["modelopt", "ct", "own"])
def test_nvfp4_sources_as_llama_cpp_converts_them(base, tmp_path, kind):
    """--keep-quantized: every NVFP4 weight as GGML NVFP4 with its codes and E4M3 scale bytes unchanged (Q and K
    rows permuted), X.scale (ModelOpt's weight_scale_2; 1 / compressed-tensors' weight_global_scale) and
    X.input_scale as the converter writes them, general.file_type MOSTLY_NVFP4."""
    src = nvfp4_source(base, kind)
    want = llama_cpp(nvfp4_source(base, "modelopt-plain") if kind == "own" else src, tmp_path / "llama.cpp.gguf",
                     "bf16")
    report = ours(src, tmp_path / "minifloat.gguf", "bf16", "--keep-quantized")
    assert_same_tensors(tmp_path / "minifloat.gguf", want)
    got = tensors(tmp_path / "minifloat.gguf")
    Q = need("gguf").GGMLQuantizationType
    assert got["blk.1.attn_k.weight"].tensor_type == Q.NVFP4
    assert "blk.1.attn_k.scale" in got
    if kind != "own":  # ModelOpt's input_scale as it is; 1 / compressed-tensors' input_global_scale 8
        want_input = np.float32(0.0123) if kind == "modelopt" else np.float32(0.125)
        assert np.asarray(got["blk.1.attn_k.input_scale"].data)[0] == want_input
    if kind == "ct":  # the reciprocal of 2^16
        assert float(np.asarray(got["blk.0.attn_q.scale"].data)[0]) == 2.0 ** -16
    assert file_type(tmp_path / "minifloat.gguf") == file_type(want) == MOSTLY_NVFP4
    assert "NVFP4 re-laid out" in report


def refused(src, out, needle):
    r = minifloat("convert", src, out, "--recipe", "bf16", "--format", "gguf", "--keep-quantized")
    assert r.returncode == 2, r.stderr
    assert needle in r.stderr, r.stderr
    assert not out.exists() and not any(out.parent.glob(out.name + "*"))
    return r.stderr


def edited(src, dst, edit):
    """A copy of src whose single shard's tensors are changed by edit(dict of torch tensors)."""
    from safetensors.torch import load_file, save_file
    shutil.copytree(src, dst)
    shard = sorted(dst.glob("*.safetensors"))[0]
    t = load_file(str(shard))
    edit(t)
    save_file(t, str(shard), metadata={"format": "pt"})
    return dst


def test_nvfp4_that_ggml_cannot_hold_is_refused(base, tmp_path):
    modelopt = nvfp4_source(base, "modelopt")
    down = "model.layers.0.mlp.down_proj.weight"

    def cut(t):  # 368 columns: whole 16-value blocks, not whole 64-value ones
        t[down] = t[down][:, :184].contiguous()
        t[down + "_scale"] = t[down + "_scale"][:, :23].contiguous()
    err = refused(edited(modelopt, tmp_path / "cut", cut), tmp_path / "cut.gguf", "NVFP4 rows of 368 values")
    assert down in err

    def negative(t):  # a negative E4M3 block scale: the converter clears the sign bit
        t["model.layers.1.self_attn.v_proj.weight_scale"].view(need("torch").uint8)[0, 0] |= 0x80
    err = refused(edited(modelopt, tmp_path / "neg", negative), tmp_path / "neg.gguf", "has its sign bit set")
    assert "model.layers.1.self_attn.v_proj.weight_scale" in err

    # compressed-tensors' global scale divides: with g = 3, 1 / g in f32 times a block scale is not the block
    # scale / g in f32 (minifloat's own compressed-tensors writer refuses such a g, so it is set here).
    def third(t):
        t["model.layers.0.mlp.up_proj.weight_global_scale"].fill_(3.0)
    err = refused(edited(nvfp4_source(base, "ct"), tmp_path / "third", third), tmp_path / "ct.gguf", "global scale 3")
    assert "model.layers.0.mlp.up_proj.weight_global_scale" in err and "convert without --keep-quantized" in err
    r = minifloat("convert", tmp_path / "third", tmp_path / "plain.gguf", "--recipe", "bf16", "--format", "gguf")
    assert r.returncode == 0, r.stderr  # without --keep-quantized: dequantized exactly, then BF16


# ---- INT4 sources ----

def pack_rows(q, bits=4):
    """Codes [R, C] (0 .. 2^bits - 1) packed along each row into I32 words, code c at bit (c % 8) x 4 of word c / 8."""
    rows, cols = q.shape
    per = 32 // bits
    words = np.zeros((rows, cols // per), np.uint32)
    for j in range(per):
        words |= q[:, j::per].astype(np.uint32) << np.uint32(bits * j)
    return words.view(np.int32)


def int4_source(torch, root, kind):
    """Symmetric or asymmetric 4-bit codes with f16-friendly group scales, as AutoGPTQ (v1: qzeros stored as
    zero - 1) or compressed-tensors pack-quantized lays them out."""
    dst = root / f"int4-{kind}"
    if dst.exists():
        return dst
    if kind == "ct-int8-channel":  # compressed-tensors int-quantized: W I8 [R, C] + W_scale F16 [R, 1]
        def int8(k, w):
            s = (w.abs().amax(dim=1, keepdim=True) / 127).to(torch.float16)
            return {k: torch.round(w / s.float()).clamp(-127, 127).to(torch.int8), k + "_scale": s}
        weights = {"num_bits": 8, "type": "int", "strategy": "channel", "symmetric": True, "dynamic": False,
                   "group_size": None}
        return rewrite(root / "src", dst, int8, {
            "quant_method": "compressed-tensors", "format": "int-quantized",
            "config_groups": {"group_0": {"targets": ["Linear"], "weights": weights, "input_activations": None}},
            "ignore": ["lm_head"]})
    group = {"gptq-sym32": 32, "gptq-asym64": 64, "gptq-sym16": 16, "ct-sym128": 128}[kind]
    sym = "asym" not in kind
    rng = np.random.default_rng(7)

    def codes_scales(w):
        rows, cols = w.shape
        g = cols // group
        amax = np.abs(w).reshape(rows, g, group).max(axis=2)
        if sym:
            s = (amax / 7).astype(np.float16)
            z = np.full((rows, g), 8, np.int64)
        else:  # scales of at most 3 significant bits and zeros 1 .. 15 (GPTQ v1 stores zero - 1: 0 has no
            # form): (q - z) x s and z x s are exact in f16
            s = (2.0 ** np.round(np.log2(amax / 7)) * rng.choice([1.0, 1.25, 1.5, 1.75], amax.shape)).astype(np.float16)
            z = rng.integers(1, 16, (rows, g))
        full_s = np.repeat(s.astype(np.float32), group, axis=1)
        full_z = np.repeat(z, group, axis=1)
        q = np.clip(np.round(w / full_s) + full_z, 0, 15).astype(np.int64)
        return q, s, z

    if kind.startswith("gptq"):
        def qz(k, w):
            q, s, z = codes_scales(w.numpy())  # q [R, C], s and z [R, G]
            module = k.removesuffix(".weight")
            cols = q.shape[1]
            return {module + ".qweight": torch.from_numpy(pack_rows(q).T.copy()),  # [C/8, R]: along the inputs
                    module + ".qzeros": torch.from_numpy(pack_rows((z.T - 1) & 15)),  # [G, R/8]
                    module + ".scales": torch.from_numpy(s.T.copy()),                    # [G, R] F16
                    module + ".g_idx": torch.from_numpy(np.arange(cols, dtype=np.int32) // group)}
        return rewrite(root / "src", dst, qz, {"quant_method": "gptq", "bits": 4, "group_size": group,
                                              "desc_act": False, "sym": sym, "checkpoint_format": "gptq"})

    def ct(k, w):
        q, s, _ = codes_scales(w.numpy())
        return {k + "_packed": torch.from_numpy(pack_rows(q)),
                k + "_scale": torch.from_numpy(s.astype(np.float32)).to(torch.bfloat16),
                k + "_shape": torch.tensor(list(q.shape), dtype=torch.int64)}
    weights = {"num_bits": 4, "type": "int", "strategy": "group", "group_size": group, "symmetric": True,
               "dynamic": False}
    return rewrite(root / "src", dst, ct, {
        "quant_method": "compressed-tensors", "format": "pack-quantized",
        "config_groups": {"group_0": {"targets": ["Linear"], "weights": weights, "input_activations": None}},
        "ignore": ["lm_head"]})


@pytest.mark.parametrize("kind,exact", [("gptq-sym32", "Q4_0"), ("gptq-asym64", "Q4_1"), ("ct-sym128", "Q4_0"),
                                        ("ct-int8-channel", "Q8_0"), ("gptq-sym16", None)])
def test_integer_sources(base, tmp_path, kind, exact):
    """Without --keep-quantized: dequantized (dequant_gptq / dequant_packed) and encoded as the out type, byte for
    byte the converter's. With it: the first of Q4_0, Q4_1 that holds the values exactly, whose gguf-py
    dequantization is the converter's F32 dequantization bit for bit (INT8 with one f16 scale per row: Q8_0); a
    block spanning two groups of scales (group 16) holds in none and stays at the recipe's type, its error
    reported."""
    torch, gguf = need("torch"), need("gguf")
    src = int4_source(torch, base, kind)
    want = llama_cpp(src, tmp_path / "llama.cpp.gguf", "bf16")
    ours(src, tmp_path / "plain.gguf", "bf16")
    assert_same_tensors(tmp_path / "plain.gguf", want)

    report = ours(src, tmp_path / "kept.gguf", "bf16", "--keep-quantized")
    got = tensors(tmp_path / "kept.gguf")
    linear = [n for n in got if n.startswith("blk.") and not n.endswith("_norm.weight")]
    assert len(linear) == 14
    if exact is None:
        assert_same_tensors(tmp_path / "kept.gguf", want)
        assert "model.layers.0.mlp.up_proj.weight" in report and "BF16" in report
        return
    assert_same_tensors(tmp_path / "kept.gguf", want, skip=linear)
    values = tensors(llama_cpp(src, tmp_path / "llama.cpp-f32.gguf", "f32"))
    for name in linear:
        t = got[name]
        assert t.tensor_type == gguf.GGMLQuantizationType[exact], (name, t.tensor_type.name)
        mine = gguf.quants.dequantize(t.data, t.tensor_type).reshape(-1)
        theirs = np.asarray(values[name].data).reshape(-1)
        assert np.array_equal(mine.view(np.uint32), theirs.view(np.uint32)), f"{name}: values differ"
    assert file_type(tmp_path / "kept.gguf") == {"Q4_0": 2, "Q4_1": 3, "Q8_0": FILE_TYPE["bf16"]}[exact]
    assert f"{exact} exact" in report
