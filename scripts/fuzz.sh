#!/usr/bin/env bash
# scripts/fuzz.sh [SECONDS]: builds the libFuzzer targets of tests/fuzz with clang (libFuzzer + ASan + UBSan) into
# build-fuzz/ and runs each one for SECONDS / (number of targets) seconds (default SECONDS: 60), as many at once as
# there are cores, starting from the seed corpus in tests/fuzz/corpus/<target>. Fails on a crash, an uncaught
# exception, a hang (over 10 s for one input), a leak or any sanitizer report; libFuzzer then leaves the input as
# build-fuzz/crash-*.
# The main g++ build is untouched: this compiles only the parsers' sources, with clang, here.
# Needs: apt-get install clang libclang-rt-14-dev (scripts/install-deps.sh installs them).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
seconds="${1:-60}"
out="$root/build-fuzz"
mkdir -p "$out"
cxx="${CXX_FUZZ:-$(command -v clang++-14 || command -v clang++)}"
flags=(-std=c++20 -O1 -g -fno-omit-frame-pointer -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
       -Iinclude -Isrc/io)
# target -> the library sources it parses with
# (src/io/remote.cc and http_none.cc: the byte source the readers take, with no HTTP: the targets parse bytes only.)
net="src/io/remote.cc src/io/http_none.cc"
declare -A sources=(
  [safetensors_fuzz]="src/io/safetensors.cc src/io/json_checked.cc src/formats/text.cc $net"
  [index_fuzz]="src/io/index.cc src/io/json_checked.cc $net"
  [hf_config_fuzz]="src/checkpoint/hf_config.cc $net"
  [gguf_fuzz]="src/io/gguf.cc src/io/gguf_dequantize.cc $net"
  [dialect_pairs_fuzz]="src/checkpoint/dialect_pairs.cc src/io/safetensors.cc src/io/json_checked.cc src/formats/text.cc
                        src/blocks/scheme.cc $net"
)
corpus_of() { case "$1" in safetensors_fuzz) echo safetensors;; index_fuzz) echo index;; *) echo "${1%_fuzz}";; esac; }
targets=("${!sources[@]}")
per_target=$(( seconds / ${#targets[@]} ))
[ "$per_target" -ge 1 ] || per_target=1
jobs=$(nproc)

# Each target compiles on its own core (one clang process per target) and runs on its own core, `jobs` at a time:
# the builds and runs are single-threaded, and in sequence they took twice the wall time on 2 cores.
build_one() {
  local t=$1 bin="$out/$1" stale=0 d
  local deps=(tests/fuzz/$t.cc ${sources[$t]} include/minifloat/*.h src/io/*.h src/checkpoint/*.h)
  [ -x "$bin" ] || stale=1
  for d in "${deps[@]}"; do [ "$stale" -eq 1 ] || [ "$d" -ot "$bin" ] || stale=1; done
  [ "$stale" -eq 1 ] || return 0
  echo "fuzz: building $t" >&2
  "$cxx" "${flags[@]}" "tests/fuzz/$t.cc" ${sources[$t]} -o "$bin.tmp" 2>"$out/$t.build.log" \
    || { cat "$out/$t.build.log" >&2; echo "fuzz: $t did not build" >&2; return 1; }
  mv "$bin.tmp" "$bin"
}
run_one() {
  local t=$1 work="$out/corpus/$1"
  mkdir -p "$work"
  cp -n tests/fuzz/corpus/"$(corpus_of "$t")"/* "$work"/ 2>/dev/null || true
  echo "fuzz: $t for ${per_target}s" >&2
  (cd "$out" && UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ASAN_OPTIONS=detect_leaks=1 \
     "$out/$t" -max_total_time="$per_target" -timeout=10 -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 \
     "$work" 2>"$out/$t.log") || { tail -40 "$out/$t.log" >&2; echo "fuzz: $t FAILED (log: $out/$t.log)" >&2; return 1; }
  grep -E "^stat::number_of_executed_units|^Done" "$out/$t.log" | sed "s/^/fuzz: $t: /" >&2 || true
}
# in_waves FUNCTION: FUNCTION on every target, `jobs` at a time; fails when any of them failed (after all ran).
in_waves() {
  local f=$1 failed=0 i pid
  for (( i = 0; i < ${#targets[@]}; i += jobs )); do
    local pids=()
    for t in "${targets[@]:i:jobs}"; do "$f" "$t" & pids+=($!); done
    for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
  done
  return "$failed"
}
in_waves build_one || exit 1
in_waves run_one || exit 1
echo "fuzz: all targets ran ${per_target}s each with no failure" >&2
