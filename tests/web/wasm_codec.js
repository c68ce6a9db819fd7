// Runs the page's WebAssembly module under node for tests/web/test_wasm_vs_native.py, which compares every result
// with the native build. Usage: node wasm_codec.js SITE_DIR JOBS.json OUT_DIR
// JOBS.json: {"encode": [{"format", "input", "rounding", "overflow", "seed", "output"}],   (u32 little-endian files)
//             "decode": [{"format", "input", "output"}],
//             "text": [{"call", "args", "output"}]}                                      (a string result per call)
"use strict";
const fs = require("fs");
const path = require("path");

const [site, jobsFile] = process.argv.slice(2);
const create = require(path.resolve(site, "minifloat.js"));
const jobs = JSON.parse(fs.readFileSync(jobsFile, "utf8"));

function readU32(file) {
  const b = fs.readFileSync(file);
  return new Uint32Array(b.buffer, b.byteOffset, b.byteLength / 4);
}

// Debian's emscripten 3.1.6 would fetch() the .wasm, which node's fetch cannot do from a path: hand it the bytes.
create({ wasmBinary: fs.readFileSync(path.resolve(site, "minifloat.wasm")) }).then((M) => {
  const bulk = (fn, fmt, input, extra) => {
    const n = input.length;
    const inp = M._malloc(4 * n), out = M._malloc(4 * n);
    M.HEAPU32.set(input, inp / 4);
    const rc = M.ccall(fn, "number", ["string", "number", "number", "number", ...extra.map(() => "number")],
                       [fmt, inp, out, n, ...extra]);
    if (rc !== 0) throw new Error(`${fn}(${fmt}) returned ${rc}`);
    const result = new Uint32Array(M.HEAPU32.buffer, out, n).slice();  // copy before free (the heap may grow)
    M._free(inp);
    M._free(out);
    return result;
  };
  for (const j of jobs.encode || []) {
    const codes = bulk("mf_encode_bits", j.format, readU32(j.input), [j.rounding, j.overflow, j.seed]);
    fs.writeFileSync(j.output, Buffer.from(codes.buffer));
  }
  for (const j of jobs.decode || []) {
    fs.writeFileSync(j.output, Buffer.from(bulk("mf_decode_bits", j.format, readU32(j.input), []).buffer));
  }
  for (const j of jobs.text || []) {
    const types = j.args.map((a) => (typeof a === "number" ? "number" : "string"));
    fs.writeFileSync(j.output, M.ccall(j.call, "string", types, j.args));
  }
}).catch((e) => {
  console.error(e);
  process.exit(1);
});
