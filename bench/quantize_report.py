#!/usr/bin/env python3
"""Runs bench_quantize with repetitions and prints medians and ratios to memcpy as a Markdown table.

Usage: bench/quantize_report.py BUILD_DIR/bench/bench_quantize [REPETITIONS] [FILTER]
Every iteration of a kernel also times a single-thread memcpy of the input's size right before it (bench_quantize.cc):
"beside" ratios are kernel GB/s (bytes read + written) over that memcpy's GB/s, per thread at 2 threads, immune to
the machine's drift between runs. With a DRAM-sized tensor (MF_BENCH_ROWS=32768) both stream from DRAM and this is
the fair ratio. With the default 32 MiB tensor the kernel reads from L3 while the memcpy beside it, run after the
kernel evicted its buffers, partly comes from DRAM: "alone" ratios use the Memcpy benchmark (buffers cached) of the
same run instead.
"""
import json
import subprocess
import sys


def main():
    exe = sys.argv[1]
    reps = sys.argv[2] if len(sys.argv) > 2 else "5"
    flt = sys.argv[3] if len(sys.argv) > 3 else "."
    out = subprocess.run([exe, f"--benchmark_repetitions={reps}", "--benchmark_report_aggregates_only=true",
                          f"--benchmark_filter={flt}|^Memcpy", "--benchmark_format=json"],
                         check=True, capture_output=True, text=True).stdout
    rows = {}
    for b in json.loads(out)["benchmarks"]:
        if b.get("aggregate_name") == "median":
            rows[b["run_name"]] = b
    alone = rows.pop("Memcpy/real_time")["bytes_per_second"] / 1e9
    print(f"medians of {reps} repetitions; memcpy alone: {alone:.1f} GB/s\n")
    print("| benchmark | threads | GB/s | memcpy beside, GB/s | per thread / memcpy beside | per thread / memcpy alone |")
    print("|---|---|---|---|---|---|")
    for name, b in rows.items():
        base, threads = name.replace("/manual_time", "").rsplit("/threads:", 1)
        gbps = b["bytes_per_second"] / 1e9
        print(f"| {base} | {threads} | {gbps:.2f} | {b['memcpy_GBps']:.1f} | {b['per_thread_vs_memcpy']:.0%} | "
              f"{gbps / int(threads) / alone:.0%} |")


if __name__ == "__main__":
    main()
