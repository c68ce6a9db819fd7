#!/usr/bin/env bash
# bench/bench_convert.sh [BUILD_DIR]: `minifloat convert` throughput (GB/s of bf16 input) for each recipe, next to a
# plain copy of the same shards (cp, then sync) measured in the same run as the yardstick. The input is a synthetic
# V4-shaped checkpoint from make-example-checkpoint (about 170 MB in 4 shards; MF_BENCH_SIZE="--hidden H --layers L
# --experts E --moe-intermediate I" changes it). Both read from the page cache: the input was just written.
#   MF_BENCH_THREADS="1 2"  the --threads values to compare (default: just the command's default, all cores)
#   MF_BENCH_RUNS=5         runs per figure; the median is printed (the machine may be shared)
#   MF_BENCH_RECIPES="..."  recipes to run (default: deepseek-v4 fp8-block mxfp8 mxfp4 nvfp4)
# Prints a Markdown table (the latest: BENCHMARKS.md#the-current-figures; the command:
# BENCHMARKS.md#sapphire-rapids-class-xeon-avx-512).
set -euo pipefail
# Idle OpenMP threads sleep instead of spinning between tensors (a convert is many small parallel regions).
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-passive}"
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$root/build}"
mf="$build/cli/minifloat"
[ -x "$mf" ] || { echo "bench_convert: no $mf (build the CLI first)" >&2; exit 1; }
work="$(mktemp -d "${TMPDIR:-/tmp}/mf_bench_convert.XXXXXX")"
trap 'rm -rf "$work"' EXIT
size=(${MF_BENCH_SIZE:---hidden 1024 --layers 4 --experts 8 --moe-intermediate 512})
runs="${MF_BENCH_RUNS:-5}"
thread_counts=(${MF_BENCH_THREADS:-default})
recipes=(${MF_BENCH_RECIPES:-deepseek-v4 fp8-block mxfp8 mxfp4 nvfp4})
"$mf" make-example-checkpoint "$work/in" --shards 4 "${size[@]}" >/dev/null
bytes=$(cat "$work"/in/*.safetensors | wc -c)
now() { date +%s.%N; }
rate() { awk -v b="$bytes" -v t="$1" 'BEGIN { printf "%.3f", b / t / 1e9 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
median_of_runs() {  # runs "$@" $runs times (fresh output each time), prints the median wall time in seconds
  local times=()
  for ((i = 0; i < runs; ++i)); do
    rm -rf "$work/out"
    local t0 t1
    t0=$(now)
    "$@" >/dev/null
    sync
    t1=$(now)
    times+=("$(awk -v x="$t0" -v y="$t1" 'BEGIN { printf "%.4f", y - x }')")
  done
  printf '%s\n' "${times[@]}" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
threads_flag() { [ "$1" = default ] || echo "--threads $1"; }
copy_s=$(median_of_runs cp -r "$work/in" "$work/out")
echo "input: $(awk -v b="$bytes" 'BEGIN { printf "%.1f MB", b / 1e6 }') in 4 shards ($(nproc) cores; ${size[*]});" \
     "median of $runs runs"
echo
echo "| operation | threads | seconds | GB/s of input | vs copy | vs first thread count |"
echo "|---|---|---|---|---|---|"
echo "| cp -r + sync (yardstick) | - | $copy_s | $(rate "$copy_s") | 1.00 | - |"
declare -A first
for recipe in "${recipes[@]}"; do
  for t in "${thread_counts[@]}"; do
    # shellcheck disable=SC2046  # the flag is empty or two words
    s=$(median_of_runs "$mf" convert "$work/in" "$work/out" --recipe "$recipe" $(threads_flag "$t"))
    first[$recipe]="${first[$recipe]:-$s}"
    echo "| convert --recipe $recipe | $t | $s | $(rate "$s") | $(ratio "$copy_s" "$s") | $(ratio "${first[$recipe]}" "$s") |"
  done
done
"$mf" convert "$work/in" "$work/q" --recipe deepseek-v4 >/dev/null
for t in "${thread_counts[@]}"; do
  # shellcheck disable=SC2046
  s=$(median_of_runs "$mf" dequantize "$work/q" "$work/out" --dtype bf16 $(threads_flag "$t"))
  first[dequantize]="${first[dequantize]:-$s}"
  echo "| dequantize deepseek-v4 -> bf16 | $t | $s | $(rate "$s") (bf16 out) | $(ratio "$copy_s" "$s") |" \
       "$(ratio "${first[dequantize]}" "$s") |"
done
