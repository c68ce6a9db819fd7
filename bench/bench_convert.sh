#!/usr/bin/env bash
# bench/bench_convert.sh [BUILD_DIR]: `minifloat convert` throughput (GB/s of bf16 input) for each recipe, next to a
# plain copy of the same shards (cp, then sync) measured in the same run as the yardstick. The input is a synthetic
# V4-shaped checkpoint from make-example-checkpoint (about 170 MB in 4 shards; MF_BENCH_SIZE="--hidden H --layers L
# --experts E --moe-intermediate I" changes it). Both read from the page cache: the input was just written.
# Prints a Markdown table for BENCHMARKS.md.
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
"$mf" make-example-checkpoint "$work/in" --shards 4 "${size[@]}" >/dev/null
bytes=$(cat "$work"/in/*.safetensors | wc -c)
now() { date +%s.%N; }
rate() { awk -v b="$bytes" -v t="$1" 'BEGIN { printf "%.3f", b / t / 1e9 }'; }
best_of_3() {  # runs "$@" three times (fresh output each time), prints the fastest wall time in seconds
  local best=""
  for _ in 1 2 3; do
    rm -rf "$work/out"
    local t0 t1
    t0=$(now)
    "$@" >/dev/null
    sync
    t1=$(now)
    best=$(awk -v a="$best" -v b="$(awk -v x="$t0" -v y="$t1" 'BEGIN { print y - x }')" \
           'BEGIN { print (a == "" || b < a) ? b : a }')
  done
  echo "$best"
}
copy_s=$(best_of_3 cp -r "$work/in" "$work/out")
echo "input: $(awk -v b="$bytes" 'BEGIN { printf "%.1f MB", b / 1e6 }') in 4 shards ($(nproc) cores; ${size[*]})"
echo
echo "| operation | seconds (best of 3) | GB/s of input | vs copy |"
echo "|---|---|---|---|"
echo "| cp -r + sync (yardstick) | $copy_s | $(rate "$copy_s") | 1.00 |"
for recipe in deepseek-v4 fp8-block mxfp8 mxfp4 nvfp4; do
  s=$(best_of_3 "$mf" convert "$work/in" "$work/out" --recipe "$recipe")
  echo "| convert --recipe $recipe | $s | $(rate "$s") | $(awk -v a="$copy_s" -v b="$s" 'BEGIN { printf "%.2f", a / b }') |"
done
"$mf" convert "$work/in" "$work/q" --recipe deepseek-v4 >/dev/null
s=$(best_of_3 "$mf" dequantize "$work/q" "$work/out" --dtype bf16)
echo "| dequantize deepseek-v4 -> bf16 | $s | $(rate "$s") (bf16 out) | $(awk -v a="$copy_s" -v b="$s" 'BEGIN { printf "%.2f", a / b }') |"
