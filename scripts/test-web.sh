#!/usr/bin/env bash
# scripts/test-web.sh [BUILD_DIR]: the converter page's tests (docs/web.md). Installs what they need (emscripten,
# node-acorn, chromium from Debian; Playwright and pytest from PyPI into .venv; no downloaded browser), builds the
# page with scripts/build-web.sh, then runs tests/web: the page in headless chromium served by `minifloat serve`,
# and the WebAssembly codec against the native build bit for bit. Uses the native command in BUILD_DIR (default
# build/, configured and built by ./test before this runs). Starts nothing that outlives it; exits non-zero on failure.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$root/build}"
cd "$root"

scripts/install-deps.sh --python --web
echo "== web: build the page (emscripten)"
scripts/build-web.sh
[ -f "$build/build.ninja" ] || cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" --target minifloat_cli >/dev/null
echo "== web: browser and WebAssembly-against-native tests"
MINIFLOAT_BIN="$build/cli/minifloat" MINIFLOAT_WEB_SITE="$root/build-web/site" \
MINIFLOAT_WEB_ARTIFACTS="$root/build-web/artifacts" \
  "$root/.venv/bin/python" -m pytest -q -rsx -p no:cacheprovider "$root/tests/web"
echo "== web: screenshots in build-web/artifacts/"
