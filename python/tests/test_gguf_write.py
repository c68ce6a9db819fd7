"""`minifloat convert --format gguf`: a tiny Hugging Face Llama written as one GGUF file, read back by gguf-py.

Checked with gguf-py 0.19.0 (llama.cpp's own Python package): GGUFReader parses the file, the tensor names and the
llama.* metadata are llama.cpp's, F32 / F16 / BF16 / Q8_0 bytes equal gguf.quants.quantize of the source weights
(with Q and K rows permuted by an independent numpy rendering of convert_hf_to_gguf's LlamaModel.permute), MXFP4
values equal minifloat's own dequantization of --format minifloat, and gguf.quants.dequantize of every tensor equals
`minifloat dequantize` of the file bit for bit."""
import json

import numpy as np
import pytest

from checkpoint_util import assert_refused, minifloat
from conftest import need
from test_convert_formats import tiny_llama

LAYERS, HIDDEN, FF, HEADS, KV_HEADS, VOCAB, CTX = 2, 256, 384, 4, 2, 512, 128
LINEARS = {"self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v",
           "self_attn.o_proj": "attn_output", "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up",
           "mlp.down_proj": "ffn_down"}
NORMS = {"input_layernorm": "attn_norm", "post_attention_layernorm": "ffn_norm"}
FILE_TYPE = {"f32": 0, "f16": 1, "q8_0": 7, "bf16": 32, "mxfp4": 38}  # llama_ftype


def llama_cpp_names():
    """HF name -> llama.cpp name, written out from llama.cpp's tensor table (gguf-py's TENSOR_NAMES)."""
    names = {"model.embed_tokens.weight": "token_embd.weight", "model.norm.weight": "output_norm.weight",
             "lm_head.weight": "output.weight"}
    for i in range(LAYERS):
        for hf, cpp in {**LINEARS, **NORMS}.items():
            names[f"model.layers.{i}.{hf}.weight"] = f"blk.{i}.{cpp}.weight"
    return names


def permute(w, n_head):
    """llama.cpp's LlamaModel.permute: per head, rows [half 0 | half 1] of the rotary pairs interleaved."""
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def source_f32(path):
    """The bf16 source weights, widened exactly to f32."""
    from safetensors.torch import load_file
    return {k: v.float().numpy() for k, v in load_file(str(path / "model.safetensors")).items()}


def in_llama_order(name, w):
    if ".self_attn.q_proj." in name:
        return permute(w, HEADS)
    if ".self_attn.k_proj." in name:
        return permute(w, KV_HEADS)
    return w


def convert_gguf(tmp_path, recipe):
    torch = need("torch")
    src = tmp_path / "src"
    if not src.exists():
        tiny_llama(torch, src)
    out = tmp_path / f"{recipe}.gguf"
    r = minifloat("convert", src, out, "--recipe", recipe, "--format", "gguf", "--no-tokenizer")
    assert r.returncode == 0, r.stderr
    return src, out


def minifloat_values(tmp_path, gguf_path):
    """`minifloat dequantize` of the GGUF file: every tensor as f32, by name."""
    from safetensors.numpy import load_file
    dst = tmp_path / (gguf_path.stem + "-deq.safetensors")
    r = minifloat("dequantize", gguf_path, dst)
    assert r.returncode == 0, r.stderr
    return load_file(str(dst))


def field(reader, key):
    f = reader.get_field(key)
    assert f is not None, f"{key} missing"
    return f.contents()


def same_f32_bits(got, want, what, zero_sign=True):
    got, want = np.asarray(got, np.float32), np.asarray(want, np.float32)
    assert got.shape == want.shape, f"{what}: {got.shape} != {want.shape}"
    differ = got.view(np.uint32) != want.view(np.uint32)
    if not zero_sign:
        differ &= ~((got == 0) & (want == 0))
    assert not differ.any(), f"{what}: {int(differ.sum())} of {got.size} values differ"


@pytest.mark.parametrize("recipe", ["f32", "f16", "bf16", "q8_0", "mxfp4"])
def test_gguf_written_as_llama_cpp_reads_it(tmp_path, recipe):
    gguf = need("gguf")
    src, out = convert_gguf(tmp_path, recipe)
    reader = gguf.GGUFReader(str(out))
    Q = gguf.GGMLQuantizationType

    # Metadata: what llama.cpp's llama loader reads, from the config.
    config = json.loads((src / "config.json").read_text())
    theta = config.get("rope_theta", config.get("rope_parameters", {}).get("rope_theta"))
    assert field(reader, "general.architecture") == "llama"
    want = {"llama.block_count": LAYERS, "llama.context_length": CTX, "llama.embedding_length": HIDDEN,
            "llama.feed_forward_length": FF, "llama.attention.head_count": HEADS,
            "llama.attention.head_count_kv": KV_HEADS, "llama.rope.dimension_count": HIDDEN // HEADS,
            "llama.vocab_size": VOCAB, "general.file_type": FILE_TYPE[recipe], "general.quantization_version": 2}
    for key, value in want.items():
        assert field(reader, key) == value, key
        assert reader.get_field(key).types == [gguf.GGUFValueType.UINT32], key
    assert field(reader, "llama.rope.freq_base") == np.float32(theta)
    assert field(reader, "llama.attention.layer_norm_rms_epsilon") == np.float32(config["rms_norm_eps"])
    assert field(reader, "tokenizer.ggml.model") == "none"

    # 32-byte alignment of the data section and of every tensor.
    assert reader.data_offset % 32 == 0
    assert all(t.data_offset % 32 == 0 for t in reader.tensors)

    # Names and types.
    names = llama_cpp_names()
    tensors = {t.name: t for t in reader.tensors}
    assert set(tensors) == set(names.values())
    linear = Q.MXFP4 if recipe == "mxfp4" else {"f32": Q.F32, "f16": Q.F16, "bf16": Q.BF16, "q8_0": Q.Q8_0}[recipe]
    for hf, cpp in names.items():
        t = tensors[cpp]
        norm = cpp.endswith("_norm.weight")
        embedding = cpp in ("token_embd.weight", "output.weight")
        want_type = Q.F32 if norm else Q.BF16 if recipe == "mxfp4" and embedding else linear
        assert t.tensor_type == want_type, (cpp, t.tensor_type)

    # Values: gguf-py's dequantize against minifloat's, and the bytes against an independent rendering.
    ours = minifloat_values(tmp_path, out)
    source = source_f32(src)
    own = None
    if recipe == "mxfp4":
        r = minifloat("convert", src, tmp_path / "own", "--recipe", "mxfp4")
        assert r.returncode == 0, r.stderr
        own = minifloat_values_dir(tmp_path, tmp_path / "own")
    for hf, cpp in names.items():
        t = tensors[cpp]
        shape = tuple(int(d) for d in reversed(t.shape))
        values = gguf.quants.dequantize(t.data, t.tensor_type).reshape(shape)
        same_f32_bits(values, ours[cpp], f"{cpp}: gguf.quants.dequantize against minifloat dequantize")
        w = in_llama_order(hf, source[hf])
        if own is not None and t.tensor_type == Q.MXFP4:
            # ggml decodes the e2m1 code for -0 as +0.
            same_f32_bits(values, in_llama_order(hf, own[hf]), f"{cpp}: against --format minifloat", zero_sign=False)
        else:
            expected = gguf.quants.quantize(w.astype(np.float32), t.tensor_type)
            got = np.asarray(t.data).view(np.uint8).reshape(-1)
            assert np.array_equal(got, expected.view(np.uint8).reshape(-1)), f"{cpp}: bytes differ from gguf-py's"


def minifloat_values_dir(tmp_path, ckpt):
    from safetensors.numpy import load_file
    r = minifloat("dequantize", ckpt, tmp_path / "own-f32", "--dtype", "f32")
    assert r.returncode == 0, r.stderr
    return load_file(str(tmp_path / "own-f32" / "model.safetensors"))


def test_q_and_k_rows_are_permuted(tmp_path):
    gguf = need("gguf")
    src, out = convert_gguf(tmp_path, "f32")
    tensors = {t.name: t for t in gguf.GGUFReader(str(out)).tensors}
    source = source_f32(src)
    for hf, cpp, heads in (("model.layers.1.self_attn.q_proj.weight", "blk.1.attn_q.weight", HEADS),
                           ("model.layers.1.self_attn.k_proj.weight", "blk.1.attn_k.weight", KV_HEADS),
                           ("model.layers.1.self_attn.v_proj.weight", "blk.1.attn_v.weight", None)):
        got = np.asarray(tensors[cpp].data).reshape(source[hf].shape)
        want = source[hf] if heads is None else permute(source[hf], heads)
        assert np.array_equal(got.view(np.uint32), want.view(np.uint32)), cpp
        if heads is not None:
            head = source[hf].shape[0] // heads
            # Row 1 of head 0 is the source's row head / 2: the first row of the pairs' second half.
            assert np.array_equal(got[1], source[hf][head // 2]), cpp
            assert not np.array_equal(got, source[hf]), cpp


@pytest.mark.parametrize("recipe,can", [("nvfp4", "minifloat, compressed-tensors, modelopt"),
                                        ("fp8-block", "minifloat, compressed-tensors, transformers-fp8"),
                                        ("mxfp8", "minifloat, compressed-tensors, modelopt, transformers-fp8")])
def test_recipes_gguf_cannot_express_are_refused(tmp_path, recipe, can):
    torch = need("torch")
    tiny_llama(torch, tmp_path / "src")
    assert_refused(tmp_path / "src", tmp_path / "out.gguf", recipe, "gguf", can)


def test_other_architectures_and_misuse_are_refused(tmp_path):
    torch = need("torch")
    src = tmp_path / "src"
    tiny_llama(torch, src)
    r = minifloat("convert", src, tmp_path / "out", "--recipe", "q8_0", "--format", "gguf")
    assert r.returncode == 2 and "OUT must be a path ending in .gguf" in r.stderr, r.stderr
    r = minifloat("convert", src, tmp_path / "out", "--recipe", "q8_0")
    assert r.returncode == 2 and "--recipe q8_0 is a GGUF tensor type: it goes with --format gguf" in r.stderr
    config = json.loads((src / "config.json").read_text())
    config.update(architectures=["MistralForCausalLM"], model_type="mistral")
    (src / "config.json").write_text(json.dumps(config))
    r = minifloat("convert", src, tmp_path / "out.gguf", "--recipe", "q8_0", "--format", "gguf")
    assert r.returncode == 2, r.stderr
    assert 'architecture "MistralForCausalLM": --format gguf writes Llama (architectures' in r.stderr, r.stderr
    assert not any(tmp_path.glob("out*"))


def ggml_mxfp4_blocks(codes, scales):
    """ggml's block_mxfp4 bytes from OCP-packed e2m1 codes [R, C/2] (element 2i in byte i's low nibble) and E8M0
    scales [R, C/32], written out from llama.cpp's layout: per block the scale byte, then 16 bytes whose byte j holds
    element j in the low nibble and element j + 16 in the high nibble."""
    rows = codes.shape[0]
    nibbles = np.stack([codes & 0x0F, codes >> 4], axis=-1).reshape(rows, -1, 32)  # elements in order
    packed = nibbles[..., :16] | (nibbles[..., 16:] << 4)
    return np.concatenate([scales.reshape(rows, -1, 1), packed], axis=-1).astype(np.uint8)


@pytest.mark.parametrize("source", ["compressed-tensors", "modelopt", "minifloat"])
def test_an_mxfp4_checkpoint_is_relaid_out_into_gguf(tmp_path, source):
    """An MXFP4 checkpoint written by compressed-tensors' or ModelOpt's own library (or by minifloat, W +
    W_scale_inv E8M0 as DeepSeek-V4 keeps its experts) converted to GGUF by the mxfp4 recipe: every linear reported
    re-laid out with no error; its ggml blocks equal an independent numpy re-packing of the input's code and scale
    bytes (Q and K rows permuted as llama.cpp does); and gguf.quants.dequantize of each equals `minifloat dequantize`
    of the input, permuted the same way, bit for bit (-0 read as +0, as ggml's e2m1 table has it)."""
    torch = need("torch")
    gguf = need("gguf")
    from test_dialects import PARTS, ct_checkpoint, modelopt_checkpoint, raw_tensors
    from checkpoint_util import dequantize
    src = tmp_path / "src"
    if source == "compressed-tensors":
        ct_checkpoint(torch, "MXFP4", src)
    elif source == "modelopt":
        modelopt_checkpoint(torch, "MXFP4", src)
    else:
        tiny_llama(torch, tmp_path / "bf16")
        r = minifloat("convert", tmp_path / "bf16", src, "--recipe", "mxfp4")
        assert r.returncode == 0, r.stderr
    out = tmp_path / "out.gguf"
    r = minifloat("convert", src, out, "--recipe", "mxfp4", "--format", "gguf", "--no-tokenizer")
    assert r.returncode == 0, r.stderr
    rows = [line for line in r.stdout.splitlines() if "mxfp4 re-laid out" in line]
    assert len(rows) == 14 and all(line.split()[-3:] == ["0", "0", "0.000%"] for line in rows), r.stdout
    want = {k: v.numpy() for k, v in dequantize(src, tmp_path / "deq", "f32").items()}
    raw = raw_tensors(src)
    code_part, scale_part = PARTS[source]["mxfp4"]
    tensors = {t.name: t for t in gguf.GGUFReader(out).tensors}
    names = llama_cpp_names()
    checked = 0
    for i in range(LAYERS):
        for hf in LINEARS:
            module = f"model.layers.{i}.{hf}"
            cpp = tensors[names[module + ".weight"]]
            assert cpp.tensor_type == gguf.GGMLQuantizationType.MXFP4, cpp.name
            codes = np.frombuffer(raw[module + code_part][2], np.uint8)
            scales = np.frombuffer(raw[module + scale_part][2], np.uint8)
            w = want[module + ".weight"]
            codes, scales = codes.reshape(w.shape[0], -1), scales.reshape(w.shape[0], -1)
            name = module + ".weight"
            blocks = ggml_mxfp4_blocks(in_llama_order(name, codes), in_llama_order(name, scales))
            assert np.array_equal(np.asarray(cpp.data, np.uint8).reshape(-1), blocks.reshape(-1)), cpp.name
            values = gguf.quants.dequantize(cpp.data, cpp.tensor_type).reshape(w.shape)
            # ggml's e2m1 table decodes the code 8 (-0) as +0
            same_f32_bits(values, in_llama_order(name, w), cpp.name, zero_sign=False)
            checked += 1
    assert checked == 14
