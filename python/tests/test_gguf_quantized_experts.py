"""`minifloat convert --format gguf` of MoE and MLA checkpoints already quantized (DeepSeek V3's own release form:
FP8 E4M3 weights in 128x128 blocks with F32 `weight_scale_inv`, quantization_config quant_method fp8 with
weight_block_size) against llama.cpp's own converter: each expert's weight dequantized exactly and the layer's
experts stacked into one 3-D tensor, DeepSeek's kv_b_proj dequantized and split into attn_k_b / attn_v_b.

The tiny Qwen3-MoE and DeepSeek V3 models of test_gguf_arch.py (bf16, every parameter random) are quantized here
tensor by tensor with torch, as DeepSeek's release lays them out (every linear of the decoder layers, experts and
attention included; a block past the tensor's edge is cut off, as the converter's dequant_simple cuts it). minifloat
and convert_hf_to_gguf.py (--outtype q8_0, --outtype bf16 --fp8-as-q8) convert each: the same tensors in the same
order, GGML types, shapes, bytes and metadata. Then llama.cpp itself runs minifloat's files: in f32 (the FP8 values
exactly) to transformers' f32 forward pass of the same values, and in q8_0 within test_llama_cpp_runs.py's Q8_0
bound."""
import json
import shutil

import numpy as np
import pytest

from checkpoint_util import minifloat
from conftest import need
from test_gguf_arch import MODELS, assert_same_metadata, assert_same_tensors, llama_cpp, randomize
from test_gguf_sources import llama_cpp as llama_cpp_flags
from test_gguf_tokenizer import smollm_tokenizer  # noqa: F401 (a fixture)
from test_llama_cpp_runs import ARCH_TOLERANCE, TOLERANCE, load, logits_of, transformers_logits

ARCHS = ["qwen3moe", "deepseek2", "deepseek2-lite"]
BLOCK = 128
FP8_CONFIG = {"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic", "weight_block_size": [BLOCK, BLOCK]}


def quantized(name):
    """DeepSeek's release quantizes every linear of the decoder layers (the router, norms and embeddings stay)."""
    return name.startswith("model.layers.") and name.endswith("_proj.weight")


def fp8_blocks(torch, w):
    """w [R, C] as E4M3 codes and F32 scale_inv [ceil(R/128), ceil(C/128)]: amax / 448 per block, the last blocks
    cut off at the tensor's edge; and the values those codes and scales hold (codes x scale, in f32)."""
    rows, cols = w.shape
    br, bc = -(-rows // BLOCK), -(-cols // BLOCK)
    padded = torch.zeros(br * BLOCK, bc * BLOCK)
    padded[:rows, :cols] = w
    s = padded.reshape(br, BLOCK, bc, BLOCK).abs().amax(dim=(1, 3)) / 448
    full = s.repeat_interleave(BLOCK, 0).repeat_interleave(BLOCK, 1)[:rows, :cols]
    codes = (w / full).to(torch.float8_e4m3fn)
    return codes, s.float(), codes.float() * full


@pytest.fixture(scope="module")
def sources(tmp_path_factory, smollm_tokenizer):  # noqa: F811
    """arch -> (the FP8 checkpoint, the same values dequantized as an f32 checkpoint for transformers)."""
    torch, transformers = need("torch"), need("transformers")
    from safetensors.torch import load_file, save_file
    root = tmp_path_factory.mktemp("gguf_quantized_experts")
    out = {}
    for arch in ARCHS:
        torch.manual_seed(0)
        model = MODELS[arch](transformers)
        randomize(torch, model)
        src, fp8, exact = root / f"{arch}-bf16", root / f"{arch}-fp8", root / f"{arch}-exact"
        model.to(torch.bfloat16).save_pretrained(src)
        for f in smollm_tokenizer.iterdir():
            shutil.copy(f, src / f.name)
        fp8_tensors, exact_tensors = {}, {}
        for k, v in load_file(str(src / "model.safetensors")).items():
            if quantized(k):
                codes, s, values = fp8_blocks(torch, v.float())
                fp8_tensors.update({k: codes, k + "_scale_inv": s})
                exact_tensors[k] = values
            else:
                fp8_tensors[k] = v
                exact_tensors[k] = v.float()
        for d, tensors in ((fp8, fp8_tensors), (exact, exact_tensors)):
            d.mkdir()
            for f in src.iterdir():
                if not f.name.endswith(".safetensors"):
                    shutil.copy(f, d / f.name)
            save_file(tensors, str(d / "model.safetensors"), metadata={"format": "pt"})
        config = json.loads((fp8 / "config.json").read_text())
        (fp8 / "config.json").write_text(json.dumps({**config, "quantization_config": FP8_CONFIG}))
        config = json.loads((exact / "config.json").read_text())
        (exact / "config.json").write_text(json.dumps({**config, "torch_dtype": "float32", "dtype": "float32"}))
        out[arch] = fp8, exact
    return out


def mine(src, out, recipe, *flags):
    r = minifloat("convert", src, out, "--recipe", recipe, "--format", "gguf", *flags)
    assert r.returncode == 0, r.stderr
    return r.stdout


@pytest.mark.parametrize("outtype,flags", [("q8_0", ()), ("bf16", ("--fp8-as-q8",))])
@pytest.mark.parametrize("arch", ARCHS)
def test_fp8_experts_and_kv_b_as_llama_cpp_converts_them(sources, tmp_path, arch, outtype, flags):
    gguf = need("gguf")
    src = sources[arch][0]
    want = llama_cpp_flags(src, tmp_path / "llama.cpp.gguf", outtype, *flags)
    report = mine(src, tmp_path / "minifloat.gguf", outtype, *flags)
    got_reader, want_reader = gguf.GGUFReader(str(tmp_path / "minifloat.gguf")), gguf.GGUFReader(str(want))
    assert_same_metadata(got_reader, want_reader)
    assert_same_tensors(got_reader, want_reader)
    names = [t.name for t in got_reader.tensors]
    assert "blk.1.ffn_down_exps.weight" in names
    types = {t.name: t.tensor_type.name for t in got_reader.tensors}
    assert types["blk.1.ffn_gate_exps.weight"] == "Q8_0"
    if arch.startswith("deepseek2"):
        assert "blk.0.attn_k_b.weight" in names and "blk.0.attn_v_b.weight" in names
        # qk_nope_head_dim 16 (the lite model): k_b's rows are not whole Q8_0 blocks, F16 as the converter falls back
        assert types["blk.0.attn_k_b.weight"] == ("F16" if arch == "deepseek2-lite" else "Q8_0")
    # One error row per output tensor: each stacked tensor and each of k_b / v_b.
    assert "(4 experts) -> blk.1.ffn_up_exps.weight" in report, report
    if arch.startswith("deepseek2"):
        assert "kv_b_proj.weight -> blk.0.attn_k_b.weight" in report, report


def test_keep_quantized_experts_without_an_exact_type_take_the_type(sources, tmp_path):
    """--keep-quantized: no GGML type holds FP8 blocks exactly, so the experts are written in the recipe's type,
    the same bytes as without the flag."""
    src = sources["qwen3moe"][0]
    mine(src, tmp_path / "plain.gguf", "bf16")
    mine(src, tmp_path / "kept.gguf", "bf16", "--keep-quantized")
    assert (tmp_path / "plain.gguf").read_bytes() == (tmp_path / "kept.gguf").read_bytes()


# DeepSeek in q8_0 is left out: on this tiny random model Q8_0 moves llama.cpp's logits by 7.4% (median token)
# from transformers' f32 ones whatever the source (measured: the same from the unquantized values), past the Q8_0
# bound; its bytes are held to the converter's above.
@pytest.mark.parametrize("arch,recipe", [("qwen3moe", "f32"), ("deepseek2", "f32"), ("qwen3moe", "q8_0")])
def test_llama_cpp_runs_fp8_experts(sources, tmp_path, arch, recipe):
    """llama.cpp loads and runs minifloat's file; its logits against transformers' f32 forward pass of the FP8
    values (the exact checkpoint): f32 within test_llama_cpp_runs.py's architecture bound (median token, and 90% of
    tokens, as there: a routed MoE may pick another expert for a token within rounding), q8_0 within its Q8_0
    bound."""
    torch, transformers = need("torch"), need("transformers")
    fp8, exact = sources[arch]
    out = tmp_path / f"{arch}-{recipe}.gguf"
    mine(fp8, out, recipe)
    llm = load(out, n_ctx=128)
    tokens = list(np.random.default_rng(0).integers(3, llm.n_vocab(), 48))
    reference = transformers.AutoModelForCausalLM.from_pretrained(str(exact), dtype=torch.float32)
    want = transformers_logits(reference, tokens)
    got = logits_of(llm, tokens)
    per_token = np.sqrt(np.mean((got - want) ** 2, -1) / np.mean(want ** 2, -1))
    print(f"\n{arch} {recipe}: relative RMS per token: median {np.median(per_token):.3g}, max {per_token.max():.3g}")
    bound = ARCH_TOLERANCE if recipe == "f32" else TOLERANCE[recipe]
    assert np.median(per_token) <= bound, (arch, per_token)
    assert np.mean(per_token <= bound) >= 0.9, (arch, per_token)


def test_experts_quantized_differently_are_refused(sources, tmp_path):
    """One expert unquantized among FP8 ones: they cannot be one stacked tensor's, an error naming the expert, and
    nothing written."""
    from safetensors.torch import load_file, save_file
    src = tmp_path / "src"
    shutil.copytree(sources["qwen3moe"][0], src)
    tensors = load_file(str(src / "model.safetensors"))
    odd = "model.layers.0.mlp.experts.2.down_proj.weight"
    tensors[odd] = tensors[odd].float().to(need("torch").bfloat16)
    del tensors[odd + "_scale_inv"]
    save_file(tensors, str(src / "model.safetensors"), metadata={"format": "pt"})
    out = tmp_path / "out.gguf"
    r = minifloat("convert", src, out, "--recipe", "q8_0", "--format", "gguf")
    assert r.returncode == 2, r.stderr
    assert "experts.2.down_proj.weight" in r.stderr and "quantization differs" in r.stderr, r.stderr
    assert not any(tmp_path.glob("out*"))


def int4_experts(torch, fp8_dir, dst):
    """Kimi K2's release form on the tiny Qwen3-MoE: only the routed experts quantized, compressed-tensors
    pack-quantized INT4, symmetric, one BF16 scale per 32 values (f16-friendly: amax / 7 rounded to f16), the rest
    bf16 (the unquantized source beside the FP8 one)."""
    from safetensors.torch import load_file, save_file
    from test_gguf_sources import pack_rows
    src = fp8_dir.parent / fp8_dir.name.replace("-fp8", "-bf16")
    dst.mkdir()
    for f in src.iterdir():
        if not f.name.endswith(".safetensors"):
            shutil.copy(f, dst / f.name)
    tensors = {}
    for k, v in load_file(str(src / "model.safetensors")).items():
        if ".mlp.experts." not in k:
            tensors[k] = v
            continue
        w = v.float().numpy()
        rows, cols = w.shape
        s = (np.abs(w).reshape(rows, cols // 32, 32).max(axis=2) / 7).astype(np.float16)
        q = np.clip(np.round(w / np.repeat(s.astype(np.float32), 32, axis=1)) + 8, 0, 15).astype(np.int64)
        tensors.update({k + "_packed": torch.from_numpy(pack_rows(q)),
                        k + "_scale": torch.from_numpy(s.astype(np.float32)).to(torch.bfloat16),
                        k + "_shape": torch.tensor([rows, cols], dtype=torch.int64)})
    save_file(tensors, str(dst / "model.safetensors"), metadata={"format": "pt"})
    weights = {"num_bits": 4, "type": "int", "strategy": "group", "group_size": 32, "symmetric": True,
               "dynamic": False}
    config = json.loads((dst / "config.json").read_text())
    config["quantization_config"] = {
        "quant_method": "compressed-tensors", "format": "pack-quantized",
        "config_groups": {"group_0": {"targets": ["Linear"], "weights": weights, "input_activations": None}},
        "ignore": ["lm_head", "re:.*self_attn.*", "re:.*mlp.gate$"]}
    (dst / "config.json").write_text(json.dumps(config))
    return dst


def test_int4_experts_kept_exactly_as_q4_0(sources, tmp_path):
    """INT4 experts: with --recipe bf16 byte for byte the converter's (dequant_packed, stacked, BF16); with
    --keep-quantized every stacked expert tensor is Q4_0 whose gguf-py dequantization is the converter's F32 values
    bit for bit, and the rest the converter's bf16 file's."""
    torch, gguf = need("torch"), need("gguf")
    from test_gguf_sources import assert_same_tensors as same_tensors, tensors
    src = int4_experts(torch, sources["qwen3moe"][0], tmp_path / "int4")
    want = llama_cpp_flags(src, tmp_path / "llama.cpp.gguf", "bf16")
    mine(src, tmp_path / "plain.gguf", "bf16")
    same_tensors(tmp_path / "plain.gguf", want)
    report = mine(src, tmp_path / "kept.gguf", "bf16", "--keep-quantized")
    got = tensors(tmp_path / "kept.gguf")
    experts = [n for n in got if "_exps." in n]
    assert len(experts) == 6
    same_tensors(tmp_path / "kept.gguf", want, skip=experts)
    values = tensors(llama_cpp_flags(src, tmp_path / "llama.cpp-f32.gguf", "f32"))
    for name in experts:
        t = got[name]
        assert t.tensor_type == gguf.GGMLQuantizationType.Q4_0, (name, t.tensor_type.name)
        ours = gguf.quants.dequantize(t.data, t.tensor_type).reshape(-1)
        theirs = np.asarray(values[name].data).reshape(-1)
        assert np.array_equal(ours.view(np.uint32), theirs.view(np.uint32)), f"{name}: values differ"
    assert "-> blk.1.ffn_up_exps.weight" in report and "Q4_0 exact" in report, report
