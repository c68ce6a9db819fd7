#!/usr/bin/env bash
# scripts/fuzz.sh [SECONDS]: builds the libFuzzer targets of tests/fuzz with clang (libFuzzer + ASan + UBSan) into
# build-fuzz/ and runs each one for SECONDS / (number of targets) seconds (default SECONDS: 60), starting from the
# seed corpus in tests/fuzz/corpus/<target>. Fails on a crash, an uncaught exception, a hang (over 10 s for one
# input), a leak or any sanitizer report; libFuzzer then leaves the input as build-fuzz/crash-*.
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
declare -A sources=(
  [safetensors_fuzz]="src/io/safetensors.cc src/io/json_checked.cc src/formats/text.cc"
  [index_fuzz]="src/io/index.cc src/io/json_checked.cc"
  [hf_config_fuzz]="src/io/hf_config.cc"
  [gguf_fuzz]="src/io/gguf.cc src/io/gguf_dequantize.cc"
)
corpus_of() { case "$1" in safetensors_fuzz) echo safetensors;; index_fuzz) echo index;; *) echo "${1%_fuzz}";; esac; }
targets=("${!sources[@]}")
per_target=$(( seconds / ${#targets[@]} ))
[ "$per_target" -ge 1 ] || per_target=1
for t in "${targets[@]}"; do
  bin="$out/$t"
  deps=(tests/fuzz/$t.cc ${sources[$t]} include/minifloat/*.h src/io/*.h)
  stale=0
  [ -x "$bin" ] || stale=1
  for d in "${deps[@]}"; do [ "$stale" -eq 1 ] || [ "$d" -ot "$bin" ] || stale=1; done
  if [ "$stale" -eq 1 ]; then
    echo "fuzz: building $t" >&2
    "$cxx" "${flags[@]}" "tests/fuzz/$t.cc" ${sources[$t]} -o "$bin"
  fi
  work="$out/corpus/$t"
  mkdir -p "$work"
  cp -n tests/fuzz/corpus/"$(corpus_of "$t")"/* "$work"/ 2>/dev/null || true
  echo "fuzz: $t for ${per_target}s" >&2
  (cd "$out" && UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ASAN_OPTIONS=detect_leaks=1 \
     "$bin" -max_total_time="$per_target" -timeout=10 -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 \
     "$work" 2>"$out/$t.log") || { tail -40 "$out/$t.log" >&2; echo "fuzz: $t FAILED (log: $out/$t.log)" >&2; exit 1; }
  grep -E "^stat::number_of_executed_units|^Done" "$out/$t.log" | sed "s/^/fuzz: $t: /" >&2 || true
done
echo "fuzz: all targets ran ${per_target}s each with no failure" >&2
