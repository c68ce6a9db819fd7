#!/usr/bin/env bash
# Installs what minifloat needs on a fresh Debian 12 machine: the build's apt packages and, with --python, a
# virtual environment .venv with the test oracles (numpy, ml_dtypes). Fast and quiet when all is there already.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"

apt_packages=(cmake ninja-build g++ pkg-config libgtest-dev libgmock-dev libbenchmark-dev libcli11-dev libfmt-dev
              nlohmann-json3-dev libhwy-dev libomp-dev python3-venv
              clang libclang-rt-14-dev  # clang and libFuzzer: tests/fuzz (scripts/fuzz.sh)
              libopenblas-dev  # OpenBLAS: the GEMM benchmark's yardstick only
              ccache  # ./test: the Python package's build of the core hits the Release build's objects
              libcurl4-openssl-dev  # inspect/verify/memory over HTTP range requests (optional at build time)
              time)  # GNU time: the peak memory of inspect/verify on the header-only replicas (test_header_replicas.py)
missing=()
for p in "${apt_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "install-deps: apt-get install ${missing[*]}" >&2
  $sudo apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >&2
fi

if [ "${1:-}" = "--python" ]; then
  venv="$root/.venv"
  req="$root/tests/requirements.txt"
  if [ ! -x "$venv/bin/python" ]; then
    echo "install-deps: creating $venv" >&2
    python3 -m venv "$venv" >&2
  fi
  # Reinstall only when the requirements change.
  if ! cmp -s "$req" "$venv/.requirements.installed"; then
    echo "install-deps: pip install -r tests/requirements.txt" >&2
    "$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$req" >&2
    cp "$req" "$venv/.requirements.installed"
  fi
fi

# --web: the converter page's build and browser tests (scripts/test-web.sh): Debian's emscripten (its JavaScript step
# needs node-acorn) and chromium, without recommends (about a minute on a fresh machine), and Playwright for Python
# into .venv (it drives that chromium; no browser is downloaded).
if [[ " $* " == *" --web "* ]]; then
  web_missing=()
  for p in emscripten node-acorn chromium; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || web_missing+=("$p")
  done
  if [ ${#web_missing[@]} -gt 0 ]; then
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    echo "install-deps: apt-get install ${web_missing[*]}" >&2
    $sudo apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${web_missing[@]}" >&2
  fi
  webreq="$root/tests/web/requirements.txt"
  [ -x "$root/.venv/bin/python" ] || python3 -m venv "$root/.venv" >&2
  if ! cmp -s "$webreq" "$root/.venv/.web-requirements.installed"; then
    echo "install-deps: pip install -r tests/web/requirements.txt" >&2
    "$root/.venv/bin/python" -m pip install -q --disable-pip-version-check -r "$webreq" >&2
    cp "$webreq" "$root/.venv/.web-requirements.installed"
  fi
fi
