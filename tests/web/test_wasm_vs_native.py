"""The WebAssembly codec against the native build, bit for bit (DESIGN house rule 1).

A random f32 sample (uniform bit patterns, plus values of everyday size where the narrow formats round rather than
saturate) is encoded into every format by the module under node and by the native `minifloat encode --bits`, with
each rounding and overflow option; every code of each format up to 16 bits is decoded by both. The page's JSON and
SVG writers are compared with `minifloat show --json`, `minifloat block --json` and `minifloat plot`.
"""
import json
import os
import pathlib
import subprocess

import numpy as np
import pytest

FORMATS = ["f32", "bf16", "f16", "e4m3", "e5m2", "e3m2", "e2m3", "e2m1", "ue8m0", "ue4m3", "e4m3fnuz", "e5m2fnuz",
           "e4m3b11fnuz", "e3m4", "e4m3ieee", "ue5m3"]
BITS = {"f32": 32, "bf16": 16, "f16": 16, "e4m3": 8, "e5m2": 8, "e3m2": 6, "e2m3": 6, "e2m1": 4, "ue8m0": 8,
        "ue4m3": 7, "e4m3fnuz": 8, "e5m2fnuz": 8, "e4m3b11fnuz": 8, "e3m4": 8, "e4m3ieee": 8, "ue5m3": 8}
# (rounding, overflow, seed) as mf::Rounding / mf::Overflow numbers and as the command's names.
OPTIONS = [(0, 0, 0), (1, 0, 0), (2, 0, 7), (0, 1, 0), (1, 1, 0), (2, 1, 7)]
ROUNDING = ["nearest_even", "toward_zero", "stochastic"]
OVERFLOW = ["default", "saturate"]
SAMPLE = int(os.environ.get("MF_WASM_SAMPLE", "200000"))  # per format, for the default options
SMALL = SAMPLE // 4                                        # per format, for each other option


def sample(n, seed):
    rng = np.random.default_rng(seed)
    uniform = rng.integers(0, 2**32, size=n // 2, dtype=np.uint64).astype(np.uint32)
    # Exponents 2^-30 .. 2^20 with random mantissas and signs: where e4m3 ... e2m1 round, tie and saturate.
    k = n - n // 2
    exp = rng.integers(127 - 30, 127 + 21, size=k, dtype=np.uint32)
    everyday = (rng.integers(0, 2, size=k, dtype=np.uint32) << 31) | (exp << 23) | \
        rng.integers(0, 2**23, size=k, dtype=np.uint32)
    edges = np.array([0, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00001, 1, 0x007FFFFF,
                      0x7F7FFFFF, 0x3E99999A], dtype=np.uint32)
    return np.concatenate([edges, uniform, everyday]).astype("<u4")


def native_encode(cli_bin, fmt, bits, rounding, overflow, seed):
    text = "\n".join(f"0x{b:08x}" for b in bits.tolist()) + "\n"
    out = subprocess.run([str(cli_bin), "encode", fmt, "--bits", "--rounding", ROUNDING[rounding], "--overflow",
                          OVERFLOW[overflow], "--seed", str(seed)], input=text, capture_output=True, text=True,
                         check=True).stdout
    return np.array([int(c, 16) for c in out.split()], dtype=np.uint32)


def native_decode(cli_bin, fmt, codes):
    text = "\n".join(str(c) for c in codes.tolist()) + "\n"
    out = subprocess.run([str(cli_bin), "decode", fmt, "--bits"], input=text, capture_output=True, text=True,
                         check=True).stdout
    return np.array([int(c, 16) for c in out.split()], dtype=np.uint32)


def first_mismatch(what, inputs, got, want):
    bad = np.nonzero(got != want)[0]
    if bad.size:
        i = bad[0]
        pytest.fail(f"{what}: {bad.size} of {len(want)} differ; first at input 0x{int(inputs[i]):08x}: "
                    f"wasm 0x{int(got[i]):x}, native 0x{int(want[i]):x}")


@pytest.fixture(scope="module")
def wasm_run(site, tmp_path_factory):
    """Writes the inputs and a job list, runs node once over all of them, returns the job list with outputs."""
    d = tmp_path_factory.mktemp("wasm")
    jobs = {"encode": [], "decode": [], "text": []}
    for fi, fmt in enumerate(FORMATS):
        for oi, (r, o, seed) in enumerate(OPTIONS):
            bits = sample(SAMPLE if oi == 0 else SMALL, seed=100 * fi + oi)
            inp = d / f"{fmt}-{oi}.in"
            bits.tofile(inp)
            jobs["encode"].append({"format": fmt, "input": str(inp), "rounding": r, "overflow": o, "seed": seed,
                                   "output": str(d / f"{fmt}-{oi}.out"), "options": oi})
        if BITS[fmt] <= 16:
            codes = np.arange(2 ** BITS[fmt], dtype="<u4")
            inp = d / f"{fmt}-codes.in"
            codes.tofile(inp)
            jobs["decode"].append({"format": fmt, "input": str(inp), "output": str(d / f"{fmt}-decode.out")})
    texts = {
        "show": ("mf_describe", ["0.3", "bf16,f16,e4m3,e5m2,e3m2,e2m3,e2m1,ue8m0", 0.0625, 0, 1, 0]),
        "show-bits": ("mf_describe", ["0x3e99999a", "e4m3,e2m1", 1, 1, 0, 0]),
        "block": ("mf_block", ["0.1,-0.25,0.3,0.02,1.5,-0.7,0.05,2,1e-4,3.5", "mxfp4", "rceil", "40"]),
        "block-nvfp4": ("mf_block", ["0.1,-0.25,0.3,0.02,1.5,-0.7,0.05,2,1e-4,3.5", "nvfp4", "", ""]),
        "panel1": ("mf_picture", [1, "0.3", 0, 0, 0]),
        "panel2": ("mf_picture", [2, "0.3", 0, 0, 0]),
    }
    for name, (call, args) in texts.items():
        jobs["text"].append({"call": call, "args": args, "output": str(d / f"{name}.txt"), "name": name})
    (d / "jobs.json").write_text(json.dumps(jobs))
    subprocess.run(["node", str(pathlib.Path(__file__).with_name("wasm_codec.js")), str(site), str(d / "jobs.json")],
                   check=True, timeout=300)
    return jobs


@pytest.mark.parametrize("fmt", FORMATS)
def test_encode_matches_native(wasm_run, minifloat_bin, fmt):
    for job in (j for j in wasm_run["encode"] if j["format"] == fmt):
        bits = np.fromfile(job["input"], dtype="<u4")
        got = np.fromfile(job["output"], dtype="<u4")
        want = native_encode(minifloat_bin, fmt, bits, job["rounding"], job["overflow"], job["seed"])
        assert len(got) == len(want) == len(bits)
        first_mismatch(f"encode {fmt} options {OPTIONS[job['options']]}", bits, got, want)


@pytest.mark.parametrize("fmt", [f for f in FORMATS if BITS[f] <= 16])
def test_decode_matches_native(wasm_run, minifloat_bin, fmt):
    job = next(j for j in wasm_run["decode"] if j["format"] == fmt)
    codes = np.fromfile(job["input"], dtype="<u4")
    first_mismatch(f"decode {fmt}", codes, np.fromfile(job["output"], dtype="<u4"),
                   native_decode(minifloat_bin, fmt, codes))


def text_of(jobs, name):
    return pathlib.Path(next(j for j in jobs["text"] if j["name"] == name)["output"]).read_text()


def test_json_and_pictures_match_the_command(wasm_run, cli, tmp_path):
    assert json.loads(text_of(wasm_run, "show")) == cli(
        "show", "0.3", "--formats", "bf16,f16,e4m3,e5m2,e3m2,e2m3,e2m1,ue8m0", "--scale", "0.0625",
        "--overflow", "saturate", "--json")
    assert json.loads(text_of(wasm_run, "show-bits")) == cli(
        "show", "0x3e99999a", "--formats", "e4m3,e2m1", "--rounding", "toward_zero", "--json")
    values = "0.1,-0.25,0.3,0.02,1.5,-0.7,0.05,2,1e-4,3.5"
    assert json.loads(text_of(wasm_run, "block")) == cli(
        "block", values, "--scheme", "mxfp4", "--rule", "rceil", "--outlier", "40", "--json")
    assert json.loads(text_of(wasm_run, "block-nvfp4")) == cli("block", values, "--scheme", "nvfp4", "--json")
    cli("plot", "--out", str(tmp_path), "--x", "0.3")
    assert text_of(wasm_run, "panel1") == (tmp_path / "panel1-strips.svg").read_text()
    assert text_of(wasm_run, "panel2") == (tmp_path / "panel2-error.svg").read_text()
