#!/usr/bin/env bash
# Builds the converter page into build-web/site/: web/index.html, app.js, style.css and minifloat.js + .wasm, the
# library's scalar codec, reference block quantizer, JSON and SVG writers compiled by Debian's emscripten. The folder
# is the whole page: `minifloat serve` serves it, and it works offline.
# Only what the page needs is compiled: no Highway, no OpenMP (emscripten builds neither), no file I/O. The bulk
# casts (minifloat/bulk.h) are there, on their kernels for a build without Highway (src/cpu/bulk_scalar.cc).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:-$root/build-web/site}"
command -v emcc >/dev/null || { echo "build-web: emcc not found: run scripts/install-deps.sh --web" >&2; exit 1; }
# emcc's JavaScript step runs node scripts that need acorn; Debian installs node modules here.
export NODE_PATH="${NODE_PATH:-/usr/share/nodejs}"
# Debian's emcc runs "${EMSDK_PYTHON:-python3}": name the interpreter its package depends on, never the one on PATH.
export EMSDK_PYTHON="${EMSDK_PYTHON:-/usr/bin/python3}"

sources=(
  web/wasm.cc
  src/formats/text.cc src/formats/describe.cc src/present/describe_json.cc src/present/picture.cc
  src/blocks/scheme.cc src/blocks/rotation.cc src/blocks/blocking.cc src/blocks/pack.cc src/blocks/quantized_tensor.cc
  src/present/block_demo.cc src/ref/quantize_ref.cc src/ref/hadamard_ref.cc
  src/ops/bulk.cc src/cpu/bulk_scalar.cc
)
exports=_mf_describe,_mf_block,_mf_picture,_mf_random_values,_mf_encode_bits,_mf_decode_bits,_malloc,_free

# nlohmann/json is header-only; give emcc that one folder, not all of /usr/include (host headers would clash).
inc="$root/build-web/include"
mkdir -p "$inc" "$out"
ln -sfn /usr/include/nlohmann "$inc/nlohmann"

# Skip the compile when nothing it reads changed (the stamp lists the inputs' checksums).
stamp="$out/.inputs"
inputs="$(cd "$root" && cat "${sources[@]}" web/compat.h include/minifloat/*.h src/blocks/blocking.h \
  src/cpu/bulk_dispatch.h src/cpu/element_codec.h src/cpu/thread_count.h "$0" | sha256sum)"
if [ ! -f "$out/minifloat.wasm" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$inputs" ]; then
  (cd "$root" && emcc -std=c++20 -O2 -fexceptions -Wall -Wextra -Werror -include web/compat.h -Iinclude -I"$inc" "${sources[@]}" \
     -sMODULARIZE=1 -sEXPORT_NAME=createMinifloat -sENVIRONMENT=web,node -sALLOW_MEMORY_GROWTH=1 \
     -sEXPORTED_FUNCTIONS="$exports" -sEXPORTED_RUNTIME_METHODS=ccall,UTF8ToString,HEAPU32 \
     -o "$out/minifloat.js")
  echo "$inputs" > "$stamp"
fi
cp "$root"/web/index.html "$root"/web/app.js "$root"/web/style.css "$out"/
echo "build-web: $out"
