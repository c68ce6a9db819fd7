#!/usr/bin/env python3
"""Runs bench_quantize with repetitions and prints medians and ratios to memcpy as a Markdown table.

Usage: bench/quantize_report.py BUILD_DIR/bench/bench_quantize [REPETITIONS] [FILTER]
Ratios: GB/s (bytes read + written) over single-thread memcpy GB/s from the same run; at 2 threads also per thread.
"""
import json
import subprocess
import sys


def main():
    exe = sys.argv[1]
    reps = sys.argv[2] if len(sys.argv) > 2 else "5"
    flt = sys.argv[3] if len(sys.argv) > 3 else "."
    out = subprocess.run([exe, f"--benchmark_repetitions={reps}", "--benchmark_report_aggregates_only=true",
                          f"--benchmark_filter={flt}|Memcpy", "--benchmark_format=json"],
                         check=True, capture_output=True, text=True).stdout
    rows = {}
    for b in json.loads(out)["benchmarks"]:
        if b.get("aggregate_name") == "median":
            rows[b["run_name"]] = b["bytes_per_second"] / 1e9
    memcpy = rows.pop("Memcpy/real_time")
    print(f"single-thread memcpy: {memcpy:.2f} GB/s (read + write, median of {reps})\n")
    print("| benchmark | threads | GB/s | / memcpy | per thread / memcpy |")
    print("|---|---|---|---|---|")
    for name, gbs in rows.items():
        base, threads = name.replace("/real_time", "").rsplit("/threads:", 1)
        t = int(threads)
        print(f"| {base} | {t} | {gbs:.2f} | {gbs / memcpy:.0%} | {gbs / t / memcpy:.0%} |")


if __name__ == "__main__":
    main()
