#!/usr/bin/env python3
"""minifloat's Python package against ml_dtypes `astype` and torchao's CPU quantizers, on the same arrays in one run.

Each row: the median of --repeat runs for both sides and the ratio (their time / ours: above 1, minifloat is faster);
the machine's own limits on the same array first: numpy's copy (memcpy) and a read-only pass (x.max()).
Usage: bench_python.py [--size N] [--repeat R] [--threads T] [--casts-only]   (prints a Markdown table)
"""
import argparse
import statistics
import time
import warnings

import ml_dtypes
import numpy as np

import minifloat


def median_time(fn, repeat):
    fn()  # warm up (first-touch page faults, lazy imports)
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", type=int, default=1 << 22, help="values per array (default 4M, a 2048 x 2048 matrix)")
    p.add_argument("--repeat", type=int, default=7)
    p.add_argument("--threads", type=int, default=0, help="threads for both sides' quantizers (0: all cores)")
    p.add_argument("--casts-only", action="store_true", help="the encode / decode rows only (no torch, torchao)")
    a = p.parse_args()
    cols = 2048
    x = np.random.default_rng(0).standard_normal((a.size // cols, cols)).astype(np.float32)
    rows = []

    def row(name, ours, theirs, other):
        t_ours, t_theirs = median_time(ours, a.repeat), median_time(theirs, a.repeat)
        rows.append((name, other, t_ours, t_theirs))

    y = np.empty_like(x)
    row("memcpy (np.copyto) / read-only (x.max())", lambda: np.copyto(y, x), lambda: x.max(), "read-only pass")
    casts = (("e4m3", ml_dtypes.float8_e4m3fn), ("e5m2", ml_dtypes.float8_e5m2), ("e3m2", ml_dtypes.float6_e3m2fn),
             ("e2m3", ml_dtypes.float6_e2m3fn), ("e2m1", ml_dtypes.float4_e2m1fn), ("ue8m0", ml_dtypes.float8_e8m0fnu),
             ("bf16", ml_dtypes.bfloat16), ("f16", np.float16))
    for fmt, dt in casts:
        codes = minifloat.encode(x, fmt)
        view = codes.view(dt)
        row(f"encode f32 -> {fmt}", lambda: minifloat.encode(x, fmt), lambda: x.astype(dt), "ml_dtypes astype")
        row(f"decode {fmt} -> f32", lambda: minifloat.decode(codes, fmt), lambda: view.astype(np.float32),
            "ml_dtypes astype")
    row("encode f32 -> e4m3, stochastic", lambda: minifloat.encode(x, "e4m3", rounding="stochastic", seed=1),
        lambda: minifloat.encode(x, "e4m3"), "minifloat nearest_even")
    if a.casts_only:
        return report(a, x, cols, rows, "")

    try:
        import torch
        from torchao.prototype.mx_formats.config import ScaleCalculationMode
        from torchao.prototype.mx_formats.mx_tensor import to_mx
        from torchao.prototype.mx_formats.nvfp4_tensor import nvfp4_quantize, per_tensor_amax_to_scale
    except ImportError as e:
        raise SystemExit(f"torch and torchao are needed for the quantizer rows ({e}); pip install -r "
                         "python/requirements-test.txt")
    warnings.simplefilter("ignore")
    if a.threads:
        torch.set_num_threads(a.threads)
    threads = a.threads or None
    t = torch.from_numpy(x)
    for scheme, dt in (("mxfp8", torch.float8_e4m3fn), ("mxfp4", torch.float4_e2m1fn_x2)):
        for mode, rule in ((ScaleCalculationMode.FLOOR, None), (ScaleCalculationMode.RCEIL, "rceil")):
            row(f"quantize {scheme} {mode.name.lower()}",
                lambda: minifloat.quantize(x, scheme, rule=rule, profile="torchao", threads=threads),
                lambda: to_mx(t, dt, 32, mode), "torchao to_mx")
    row("quantize nvfp4", lambda: minifloat.quantize(x, "nvfp4", profile="torchao", threads=threads),
        lambda: nvfp4_quantize(t, 16, per_tensor_amax_to_scale(t.abs().max())), "torchao nvfp4_quantize")
    q = minifloat.quantize(x, "mxfp4")
    s, d = to_mx(t, torch.float4_e2m1fn_x2, 32)
    from torchao.prototype.mx_formats.mx_tensor import to_dtype
    row("dequantize mxfp4 -> f32", lambda: q.dequantize(threads=threads),
        lambda: to_dtype(d, s, torch.float4_e2m1fn_x2, 32, torch.float32), "torchao to_dtype")

    report(a, x, cols, rows, f"torch threads {torch.get_num_threads()}, minifloat threads {a.threads or 'all'}; "
           f"torch {torch.__version__}, ")


def report(a, x, cols, rows, versions):
    print(f"{x.shape[0]} x {cols} f32 ({x.nbytes / 2**20:.0f} MiB), median of {a.repeat}; {versions}numpy "
          f"{np.__version__}, ml_dtypes {ml_dtypes.__version__}")
    print()
    print("| operation | other | minifloat ms | other ms | other / minifloat | minifloat GB/s of f32 |")
    print("|---|---|---:|---:|---:|---:|")
    for name, other, t_ours, t_theirs in rows:
        print(f"| {name} | {other} | {t_ours * 1e3:.2f} | {t_theirs * 1e3:.2f} | {t_theirs / t_ours:.2f} | "
              f"{x.nbytes / t_ours / 1e9:.2f} |")


if __name__ == "__main__":
    main()
