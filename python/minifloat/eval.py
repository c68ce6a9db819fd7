"""What each recipe does to a real model's outputs, on the CPU with minifloat's kernels (docs/models.md):

    python -m minifloat.eval MODEL_DIR_OR_GGUF --recipe mxfp4,nvfp4,mxfp8,fp8-block,deepseek-v4 [--mode linear|fake]
                             [--pad] [--json] [--tokens N] [--sentences N] [--worst N] [--threads N]

MODEL: a transformers directory (config.json + safetensors) or a GGUF file of a Llama-architecture model (its tensors
dequantized to f32 by minifloat's GGUF reader: the unquantized reference). An encoder is scored by the cosine of its
mean-pooled embeddings to the reference over built-in sentences; a causal LM over a built-in text by perplexity, KL
divergence of next-token distributions to the reference, and top-1 agreement. Exit 2 on bad input."""
from __future__ import annotations

import argparse
import copy
import json
import math
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # nothing is downloaded: the model and its tokenizer are local files

import numpy as np  # noqa: E402
import torch  # noqa: E402

from . import _core  # noqa: E402
from ._eval_text import SENTENCES, TEXT  # noqa: E402
from ._quantize import error_report  # noqa: E402
from .torch import NoGemmError, _linears, fake_quantize_model, quantize_model  # noqa: E402

WINDOW = 512  # tokens per forward pass of a causal LM (windows do not overlap)


class EvalError(Exception):
    """Bad input: an unknown recipe, a path that is not a model, a tensor that cannot be dequantized."""


# ---- loading ----

def _reverse_permute(w: np.ndarray, heads: int) -> np.ndarray:
    """llama.cpp's convert interleaves the rotary halves of attn_q / attn_k rows; transformers' Llama wants them
    back in halves (per head: rows [0, 2, 4, ..., 1, 3, 5, ...] -> [0..d/2, d/2..d])."""
    d = w.shape[0] // heads // 2
    return w.reshape(heads, d, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


_GGUF_NAMES = {"attn_norm": "input_layernorm", "ffn_norm": "post_attention_layernorm", "attn_q": "self_attn.q_proj",
               "attn_k": "self_attn.k_proj", "attn_v": "self_attn.v_proj", "attn_output": "self_attn.o_proj",
               "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj", "ffn_down": "mlp.down_proj"}


def _load_gguf(path: Path):
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer
    try:
        tensors = dict(_core.gguf_tensors(str(path)))
    except (RuntimeError, ValueError) as e:
        raise EvalError(str(e)) from None
    config = AutoConfig.from_pretrained(str(path.parent), gguf_file=path.name)
    if config.model_type != "llama":
        raise EvalError(f"{path}: a GGUF file of a {config.model_type} model: minifloat.eval reads Llama-architecture "
                        "GGUF files (or a transformers directory)")
    tokenizer = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
    state = {}
    for name, value in tensors.items():
        parts = name.split(".")
        if name == "token_embd.weight":
            key = "model.embed_tokens.weight"
        elif name == "output_norm.weight":
            key = "model.norm.weight"
        elif name == "output.weight":
            key = "lm_head.weight"
        elif parts[0] == "blk" and parts[2] in _GGUF_NAMES:
            key = f"model.layers.{parts[1]}.{_GGUF_NAMES[parts[2]]}.{parts[3]}"
            if parts[2] == "attn_q":
                value = _reverse_permute(value, config.num_attention_heads)
            elif parts[2] == "attn_k":
                value = _reverse_permute(value, config.num_key_value_heads)
        else:
            raise EvalError(f"{path}: tensor '{name}' has no place in a Llama model")
        state[key] = torch.from_numpy(np.ascontiguousarray(value))
    config.tie_word_embeddings = "lm_head.weight" not in state
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    missing, unexpected = model.load_state_dict(state, strict=False)
    missing = [k for k in missing if not (k == "lm_head.weight" and config.tie_word_embeddings)]
    if missing or unexpected:
        raise EvalError(f"{path}: tensors missing {missing[:3]} or unexpected {unexpected[:3]} for the Llama model")
    if config.tie_word_embeddings:
        model.tie_weights()
    return "causal", model.eval(), tokenizer


def load_model(path) -> tuple:
    """("encoder" or "causal", model in f32, tokenizer) from a transformers directory or a Llama GGUF file."""
    p = Path(path)
    if p.is_file() and p.suffix == ".gguf":
        return _load_gguf(p)
    if not (p.is_dir() and (p / "config.json").is_file()):
        raise EvalError(f"{path}: not a model: a directory with config.json and safetensors weights, or a .gguf file "
                        "is expected")
    from transformers import AutoConfig, AutoModel, AutoModelForCausalLM, AutoTokenizer
    config = AutoConfig.from_pretrained(str(p))
    causal = any(a.endswith("ForCausalLM") for a in (config.architectures or []))
    cls = AutoModelForCausalLM if causal else AutoModel
    model = cls.from_pretrained(str(p), dtype=torch.float32)
    return ("causal" if causal else "encoder"), model.eval(), AutoTokenizer.from_pretrained(str(p))


# ---- scoring ----

def _progress(enabled: bool, what: str, i: int, n: int):
    if enabled:
        print(f"\r{what}: {i}/{n}", end="" if i < n else "\n", file=sys.stderr, flush=True)


def _embeddings(model, batch) -> torch.Tensor:
    hidden = model(**batch).last_hidden_state.float()
    mask = batch["attention_mask"].unsqueeze(-1).float()
    return (hidden * mask).sum(1) / mask.sum(1)


def _windows(tokenizer, tokens: int | None) -> list:
    ids = tokenizer(TEXT, return_tensors="pt")["input_ids"][0]
    if tokens is not None:
        ids = ids[:tokens]
    return [ids[i:i + WINDOW].unsqueeze(0) for i in range(0, len(ids), WINDOW) if len(ids[i:i + WINDOW]) > 1]


class Reference:
    """The unquantized model's outputs, computed once: pooled embeddings, or per window the next-token log-probs."""

    def __init__(self, kind, model, tokenizer, tokens=None, sentences=None, progress=False):
        self.kind = kind
        with torch.inference_mode():
            if kind == "encoder":
                self.batch = tokenizer(SENTENCES[:sentences], padding=True, return_tensors="pt")
                self.emb = _embeddings(model, self.batch)
            else:
                self.windows = _windows(tokenizer, tokens)
                self.logp = []
                for i, w in enumerate(self.windows):
                    _progress(progress, "reference", i, len(self.windows))
                    self.logp.append(torch.log_softmax(model(w).logits[0, :-1].float(), -1))
                _progress(progress, "reference", len(self.windows), len(self.windows))
        self.metrics = self.score(model)
        if kind == "causal":  # the spread of the logits over the vocabulary: what scales a logit error (models.md)
            self.metrics["logit_variance"] = float(torch.cat([lp.var(-1) for lp in self.logp]).mean())

    def score(self, model, progress=False, what="") -> dict:
        with torch.inference_mode():
            if self.kind == "encoder":
                cos = torch.nn.functional.cosine_similarity(_embeddings(model, self.batch), self.emb, dim=-1)
                return {"cosine_mean": float(cos.mean()), "cosine_min": float(cos.min()),
                        "sentences": len(cos)}
            nll = kl = agree = count = 0.0
            for i, (w, ref) in enumerate(zip(self.windows, self.logp)):
                _progress(progress, what, i, len(self.windows))
                logp = torch.log_softmax(model(w).logits[0, :-1].float(), -1)
                target = w[0, 1:]
                nll += float(-logp.gather(1, target[:, None]).sum())
                kl += float((ref.exp() * (ref - logp)).sum())
                agree += float((ref.argmax(-1) == logp.argmax(-1)).sum())
                count += len(target)
            _progress(progress, what, len(self.windows), len(self.windows))
            return {"perplexity": math.exp(nll / count), "kl": kl / count, "top1_agreement": agree / count,
                    "tokens": int(count)}


def _tensor_errors(model, recipe: str, worst: int) -> tuple:
    """(bits per quantized parameter, quantized parameters, every tensor's error, the `worst` ones) of the recipe's
    weights, lowest SQNR first; partial edge blocks allowed, as the model's quantization allows them."""
    profile, chosen = _linears(model, recipe)
    bits = params = 0.0
    rows = []
    for n, m, t in chosen:
        r = error_report(m.weight.detach().float().numpy(), t, profile=profile, pad=True)
        bits += r["bits_per_value"] * m.weight.numel()
        params += m.weight.numel()
        sqnr = r["stats"]["sqnr_db"]
        rows.append({"tensor": n + ".weight", "scheme": t, "sqnr_db": sqnr, "rel_rmse": 10 ** (-sqnr / 20)})
    rows.sort(key=lambda e: e["sqnr_db"])
    return bits / params, params, rows, rows[:worst]


def evaluate(path, recipes, mode="linear", pad=False, tokens=None, sentences=None, worst=3, threads=None,
             progress=False, loaded=None) -> dict:
    """The report of `python -m minifloat.eval` as a dict (what --json prints). loaded: load_model(path)'s result,
    to score a model loaded once (the model itself is never changed: each recipe quantizes a copy)."""
    if mode not in ("linear", "fake"):
        raise EvalError(f"--mode: '{mode}' is not linear or fake")
    if threads:
        torch.set_num_threads(threads)
    kind, model, tokenizer = loaded or load_model(path)
    ref = Reference(kind, model, tokenizer, tokens, sentences, progress)
    report = {"model": str(path), "kind": kind, "mode": mode, "reference": ref.metrics, "recipes": []}
    for recipe in recipes:
        try:
            bits, params, all_errors, worst_rows = _tensor_errors(model, recipe, worst)
        except ValueError as e:
            raise EvalError(str(e)) from None
        q = copy.deepcopy(model)
        used = mode
        try:
            if mode == "linear":
                try:
                    quantize_model(q, recipe, pad=pad, threads=threads)
                except NoGemmError:
                    used = "fake"  # no GEMM for this scheme (mxfp6, ...): weights only, said in the report
                    fake_quantize_model(q, recipe, pad=True)
            else:
                fake_quantize_model(q, recipe, pad=True)
        except ValueError as e:
            raise EvalError(str(e)) from None
        start = time.perf_counter()
        metrics = ref.score(q, progress, recipe)
        report["recipes"].append({"recipe": recipe, "mode": used, **metrics, "bits_per_parameter": bits,
                                  "quantized_parameters": int(params), "seconds": time.perf_counter() - start,
                                  "worst_tensors": worst_rows, "tensor_rel_rmse": [e["rel_rmse"] for e in all_errors]})
        del q
    return report


def format_table(report: dict) -> str:
    causal = report["kind"] == "causal"
    ref = report["reference"]
    if causal:
        head = "| recipe | mode | bits/param | perplexity | KL to f32 | top-1 agreement | worst tensor (SQNR dB) |"
        lines = [head, "|---|---|---|---|---|---|---|",
                 f"| f32 (reference) | - | 32 | {ref['perplexity']:.3f} | 0 | 1 | - |"]
    else:
        head = "| recipe | mode | bits/param | cosine mean | cosine min | worst tensor (SQNR dB) |"
        lines = [head, "|---|---|---|---|---|---|", "| f32 (reference) | - | 32 | 1 | 1 | - |"]
    for r in report["recipes"]:
        w = r["worst_tensors"][0]
        worst = f"{w['tensor']} {w['scheme']} ({w['sqnr_db']:.1f})"
        if causal:
            lines.append(f"| {r['recipe']} | {r['mode']} | {r['bits_per_parameter']:.3g} | {r['perplexity']:.3f} | "
                         f"{r['kl']:.4f} | {r['top1_agreement']:.4f} | {worst} |")
        else:
            lines.append(f"| {r['recipe']} | {r['mode']} | {r['bits_per_parameter']:.3g} | {r['cosine_mean']:.4f} | "
                         f"{r['cosine_min']:.4f} | {worst} |")
    n = f"{ref['tokens']} tokens" if causal else f"{ref['sentences']} sentences"
    return f"{report['model']} ({report['kind']}, {n})\n" + "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m minifloat.eval", description=__doc__.split("\n\n")[0])
    ap.add_argument("model", help="a transformers model directory or a Llama GGUF file")
    ap.add_argument("--recipe", default="mxfp4,nvfp4,mxfp8,fp8-block,deepseek-v4",
                    help="comma-separated recipes (built-in names or JSON files)")
    ap.add_argument("--mode", default="linear", choices=["linear", "fake"],
                    help="linear: minifloat.torch.Linear (act_quant + fp8/fp4 GEMM); fake: weights rounded only")
    ap.add_argument("--pad", action="store_true", help="allow partial blocks (zero-pad K to a multiple of 128)")
    ap.add_argument("--json", action="store_true", help="print the report as JSON")
    ap.add_argument("--tokens", type=int, default=None, help="causal LM: score only the first N tokens of the text")
    ap.add_argument("--sentences", type=int, default=None, help="encoder: only the first N sentences")
    ap.add_argument("--worst", type=int, default=3, help="worst tensors listed per recipe")
    ap.add_argument("--threads", type=int, default=None, help="threads for torch and minifloat (default: all)")
    args = ap.parse_args(argv)
    recipes = [r for r in args.recipe.split(",") if r]
    try:
        if not recipes:
            raise EvalError("--recipe: no recipe given")
        for r in recipes:
            try:
                _core.recipe_targets(r, [])
            except (ValueError, RuntimeError) as e:
                raise EvalError(f"--recipe: {e}") from None
        progress = sys.stderr.isatty() and not args.json
        report = evaluate(args.model, recipes, args.mode, args.pad, args.tokens, args.sentences, args.worst,
                          args.threads, progress)
    except EvalError as e:
        print(f"minifloat.eval: error: {e}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(report, indent=1))
    else:
        print(format_table(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
