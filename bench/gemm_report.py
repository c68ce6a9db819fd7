#!/usr/bin/env python3
"""Runs bench_gemm with repetitions and prints medians and ratios as a Markdown table (the tables behind
BENCHMARKS.md#the-current-figures).

Usage: bench/gemm_report.py BUILD_DIR/bench/bench_gemm [REPETITIONS] [FILTER]
Columns: GFLOP/s (2 M N K / time) of minifloat's bf16, fp8 (fp8-128x128) and mxfp4 GEMMs, of OpenBLAS (sgemv at
M = 1, sgemm otherwise) on the dequantized f32 weights and of dequantize-then-OpenBLAS; the ratios of fp8 and mxfp4
to OpenBLAS; weight bytes per second. FMA peak and read bandwidth come from the same run. A second table has the
decode shapes (M = 1, 8) with the weights streamed from memory (bench_gemm's GemmStreamed: each call on another copy
of the weight, twice the last-level cache in all), as a decode step over a model larger than the cache reads them.
A third has M = 1 as independent single-thread calls, one per thread at once (GemmIndependent): the ceiling of the
threaded call on this machine, and the threaded calls' share of it. A last one has the fp8 GEMV on weights with one
outlier per 128 x 128 block (GemmOutliers), whose e4m3 subnormal codes slow it down; and one has M = 1 on one
thread on a small LLM's Linear shapes with the weights in L2 (GemvSmall), where a decode step's per-call costs show.

The OpenBLAS kernels in use are printed: bench_gemm runs itself again with OPENBLAS_CORETYPE set when OpenBLAS fell
back to its generic SSE3 kernels on a CPU that has AVX-512 or AVX2 (bench/gemm_cases.h;
docs/benchmark-history.md#the-yardstick-openblas-ran-its-generic-kernels).
"""
import json
import os
import subprocess
import sys

WAYS = ["bf16", "fp8", "mxfp4", "openblas-f32", "dequant-fp8+openblas"]


def main():
    exe = sys.argv[1]
    reps = sys.argv[2] if len(sys.argv) > 2 else "3"
    flt = sys.argv[3] if len(sys.argv) > 3 else "."
    out = subprocess.run([exe, f"--benchmark_repetitions={reps}", "--benchmark_report_aggregates_only=true",
                          f"--benchmark_filter={flt}|FmaPeak|ReadBandwidth", "--benchmark_format=json"],
                         check=True, capture_output=True, text=True).stdout
    doc = json.loads(out)
    cells, machine, outliers = {}, {}, {}
    for b in doc["benchmarks"]:
        if b.get("aggregate_name") != "median":
            continue
        name = b["run_name"]
        if name.startswith("FmaPeak"):
            machine["fma"] = b["GFLOPs"]
        elif name.startswith("ReadBandwidth"):
            machine["read"] = b["GBs"]
        elif name.startswith("GemmOutliers"):  # GemmOutliers/fp8/N4096xK4096/threads:<t>/<outlier sigma>/...
            parts = name.split("/")
            outliers[(int(parts[3].split(":")[1]), int(parts[4]))] = (b["GFLOPs"], b["subnormal"])
        else:  # Gemm/<way>/N<n>xK<k>/threads:<t>/<m>/... or GemmStreamed/...
            parts = name.split("/")
            way, shape, threads, m = parts[1], parts[2], parts[3], int(parts[4])
            cells.setdefault(parts[0], {})[(shape, m, way)] = (b["GFLOPs"], b["wGBs"])
            if parts[0] != "GemvSmall":  # one thread by definition
                machine["threads"] = threads.split(":")[1]
    print(f"threads: {machine.get('threads')} (minifloat and OpenBLAS); median of {reps}; "
          f"load average at the end: {os.getloadavg()[0]:.1f}")
    print(f"FMA peak {machine.get('fma', 0):.1f} GFLOP/s, memory read bandwidth {machine.get('read', 0):.1f} GB/s; "
          f"OpenBLAS kernels: {doc.get('context', {}).get('openblas_core', '-')}\n")
    for kind, title in (("Gemm", "Weights as the benchmark repeats them (in the last-level cache)"),
                        ("GemmStreamed", "Weights streamed from memory"),
                        ("GemmIndependent", "M = 1 as one single-thread call per thread at once, weights cached "
                                            "(the threaded calls' ceiling: no fork, join or shared columns)")):
        if kind in cells:
            table(title, cells[kind], machine)
    if "GemmIndependent" in cells and "Gemm" in cells:
        print("Threaded M = 1 calls (first table) as a share of that ceiling:\n")
        print("| N x K | bf16 | fp8 | mxfp4 | OpenBLAS f32 |")
        print("|---|---|---|---|---|")
        for shape in sorted({k[0] for k in cells["GemmIndependent"]}, key=lambda s: s != "N4096xK4096"):
            share = []
            for w in ("bf16", "fp8", "mxfp4", "openblas-f32"):
                t, c = cells["Gemm"].get((shape, 1, w)), cells["GemmIndependent"].get((shape, 1, w))
                share.append(f"{t[0] / c[0]:.0%}" if t and c and c[0] else "-")
            print(f"| {shape[1:].replace('xK', 'x')} | " + " | ".join(share) + " |")
        print()
    if "Linear" in cells and "Gemm" in cells:
        print("linear() (act_quant of the f32 activations, then the GEMM) as a share of the GEMM's time on activations "
              "quantized once, weights cached (1.05 = 5% over):\n")
        print("| N x K | M | fp8 | mxfp4 |")
        print("|---|---|---|---|")
        for shape, m in sorted({k[:2] for k in cells["Linear"]}, key=lambda s: (s[0] != "N4096xK4096", s[1])):
            share = []
            for w in ("fp8", "mxfp4"):
                lin, gemm = cells["Linear"].get((shape, m, w)), cells["Gemm"].get((shape, m, w))
                share.append(f"{gemm[0] / lin[0]:.2f}" if lin and gemm and lin[0] else "-")
            print(f"| {shape[1:].replace('xK', 'x')} | {m} | " + " | ".join(share) + " |")
        print()
    if "GemvSmall" in cells:
        print("M = 1 on one thread, on a small LLM's Linear shapes (weights in L2), GFLOP/s:\n")
        print("| N x K | bf16 | fp8 | mxfp4 | OpenBLAS f32 | fp8 / OpenBLAS | mxfp4 / OpenBLAS | fp8 / bf16 |")
        print("|---|---|---|---|---|---|---|---|")
        small = cells["GemvSmall"]
        for shape in sorted({k[0] for k in small}, key=lambda s: [int(x) for x in s[1:].split("xK")]):
            g = {w: small.get((shape, 1, w), (0, 0))[0] for w in WAYS}
            over = lambda a, b: f"{g[a] / g[b]:.2f}" if g[b] else "-"
            print(f"| {shape[1:].replace('xK', 'x')} | {g['bf16']:.1f} | {g['fp8']:.1f} | {g['mxfp4']:.1f} | "
                  f"{g['openblas-f32']:.1f} | {over('fp8', 'openblas-f32')} | {over('mxfp4', 'openblas-f32')} | "
                  f"{over('fp8', 'bf16')} |")
        print()
    formats = ("fp8", "mxfp8", "mxfp4", "nvfp4")
    if machine.get("read") and any(k[2] in formats for kind in ("Gemm", "GemmStreamed") for k in cells.get(kind, {})):
        # issue 46's targets: every weight format at M = 1 as a share of the read bandwidth, M = 512 against OpenBLAS
        print("Every weight format: weight bytes per second as a share of the read bandwidth (of read), and GFLOP/s "
              "against OpenBLAS's on the same shape (x BLAS):\n")
        print("| case | N x K | M | " + " | ".join(f"{w} of read | {w} x BLAS" for w in formats) + " |")
        print("|---|---|---|" + "---|---|" * len(formats))
        for kind in ("Gemm", "GemmStreamed"):
            kc = cells.get(kind, {})
            for shape, m in sorted({k[:2] for k in kc}, key=lambda s: (s[0] != "N4096xK4096", s[1])):
                blas = kc.get((shape, m, "openblas-f32"), (0, 0))[0]
                row = []
                for w in formats:
                    g = kc.get((shape, m, w))
                    row += [f"{g[1] / machine['read']:.2f}" if g else "-", f"{g[0] / blas:.2f}" if g and blas else "-"]
                print(f"| {kind} | {shape[1:].replace('xK', 'x')} | {m} | " + " | ".join(row) + " |")
        print()
    mx = [(kind, key) for kind in ("Gemm", "GemmStreamed", "GemvSmall", "Linear") for key in sorted(cells.get(kind, {}))
          if key[2] == "mxfp8" and (key[0], key[1], "fp8") in cells[kind]]
    if mx:  # the task of issue 46: mxfp8 (e4m3 1x32 ue8m0) within 10% of fp8-128x128 on the same shape
        print("mxfp8 (e4m3 1x32 ue8m0 weights) beside fp8 (fp8-128x128) on the same shape, GFLOP/s (1.00: as fast):\n")
        print("| case | N x K | M | fp8 | mxfp8 | mxfp8 / fp8 |")
        print("|---|---|---|---|---|---|")
        for kind, (shape, m, _) in mx:
            f, x = cells[kind][(shape, m, "fp8")][0], cells[kind][(shape, m, "mxfp8")][0]
            print(f"| {kind} | {shape[1:].replace('xK', 'x')} | {m} | {f:.1f} | {x:.1f} | "
                  f"{x / f if f else 0:.2f} |")
        print()
    if outliers:
        print("fp8 GEMV (M = 1, 4096 x 4096, fp8-128x128) with one outlier per 128 x 128 block, GFLOP/s "
              "(e4m3 subnormal codes, % of all):\n")
        sigmas = sorted({s for _, s in outliers})
        print("| threads | " + " | ".join(f"outlier {s} sigma" if s else "no outlier" for s in sigmas) + " |")
        print("|---|" + "---|" * len(sigmas))
        for t in sorted({t for t, _ in outliers}):
            print(f"| {t} | " + " | ".join(f"{outliers[(t, s)][0]:.1f} ({outliers[(t, s)][1]:.3f}%)"
                                           if (t, s) in outliers else "-" for s in sigmas) + " |")
        print()


def table(title, cells, machine):
    print(f"{title}:\n")
    print("| N x K | M | bf16 | fp8 | mxfp4 | OpenBLAS f32 | dequant+OpenBLAS | fp8 / OpenBLAS | mxfp4 / OpenBLAS "
          "| fp8 / peak | fp8 weight GB/s (of read) | mxfp4 weight GB/s (of read) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for shape in sorted({k[0] for k in cells}, key=lambda s: s != "N4096xK4096"):
        for m in sorted({k[1] for k in cells if k[0] == shape}):
            g = {w: cells.get((shape, m, w), (0, 0)) for w in WAYS}
            blas = g["openblas-f32"][0]
            ratio = lambda w: f"{g[w][0] / blas:.2f}" if blas else "-"
            peak = f"{g['fp8'][0] / machine['fma']:.0%}" if machine.get("fma") else "-"
            cell = lambda w: f"{g[w][0]:.1f}" if g[w][0] else "-"
            read = lambda w: f"{g[w][1]:.1f} ({g[w][1] / machine['read']:.0%})" if machine.get("read") else \
                f"{g[w][1]:.1f}"
            print(f"| {shape[1:].replace('xK', 'x')} | {m} | " + " | ".join(cell(w) for w in WAYS) +
                  f" | {ratio('fp8')} | {ratio('mxfp4')} | {peak} | {read('fp8')} | {read('mxfp4')} |")
    print()

if __name__ == "__main__":
    main()
