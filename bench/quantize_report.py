#!/usr/bin/env python3
"""Runs bench_quantize with repetitions and prints medians and ratios to memcpy as a Markdown table.

Usage: bench/quantize_report.py BUILD_DIR/bench/bench_quantize [REPETITIONS] [FILTER]
Every iteration of a kernel also times a single-thread memcpy of the input's size right before it (bench_quantize.cc),
so the ratios are interleaved measurements: kernel GB/s (bytes read + written) over that memcpy's GB/s, per thread at
2 threads. The machine's speed drifts between runs; the ratios of one run do not.
"""
import json
import subprocess
import sys


def main():
    exe = sys.argv[1]
    reps = sys.argv[2] if len(sys.argv) > 2 else "5"
    flt = sys.argv[3] if len(sys.argv) > 3 else "."
    out = subprocess.run([exe, f"--benchmark_repetitions={reps}", "--benchmark_report_aggregates_only=true",
                          f"--benchmark_filter={flt}", "--benchmark_format=json"],
                         check=True, capture_output=True, text=True).stdout
    rows = {}
    for b in json.loads(out)["benchmarks"]:
        if b.get("aggregate_name") == "median":
            rows[b["run_name"]] = b
    print(f"medians of {reps} repetitions; memcpy timed beside every iteration\n")
    print("| benchmark | threads | GB/s | memcpy GB/s | / memcpy | per thread / memcpy |")
    print("|---|---|---|---|---|---|")
    for name, b in rows.items():
        base, threads = name.replace("/manual_time", "").rsplit("/threads:", 1)
        print(f"| {base} | {threads} | {b['bytes_per_second'] / 1e9:.2f} | {b['memcpy_GBps']:.1f} | "
              f"{b['vs_memcpy']:.0%} | {b['per_thread_vs_memcpy']:.0%} |")


if __name__ == "__main__":
    main()
