"""What the checkpoint tests share: the built `minifloat` command run as a user runs it, safetensors loading, and
bit-for-bit comparison of torch tensors."""
import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXE = ROOT / "build" / "cli" / "minifloat"


def minifloat(*args):
    """The command's CompletedProcess (text stdout and stderr)."""
    if not EXE.exists():
        pytest.fail(f"{EXE} is missing: build the command first (./test does)")
    return subprocess.run([str(EXE), *map(str, args)], capture_output=True, text=True)


def load(path):
    from safetensors.torch import load_file
    return load_file(str(pathlib.Path(path) / "model.safetensors"))


def dequantize(src, dst, dtype="bf16"):
    r = minifloat("dequantize", src, dst, "--dtype", dtype)
    assert r.returncode == 0, r.stderr
    return load(dst)


def same_bits(torch, got, want, name, zero_sign=True):
    """Bit for bit; zero_sign=False lets -0 stand for +0 (ModelOpt decodes the e2m1 code 8, -0, as +0)."""
    assert got.dtype == want.dtype and tuple(got.shape) == tuple(want.shape), \
        f"{name}: {got.dtype} {tuple(got.shape)} != {want.dtype} {tuple(want.shape)}"
    bits = torch.int32 if got.dtype == torch.float32 else torch.int16
    differ = got.view(bits) != want.view(bits)
    if not zero_sign:
        differ &= ~((got == 0) & (want == 0))
    bad = int(differ.sum())
    assert bad == 0, f"{name}: {bad} of {got.numel()} values differ from the library's"


def assert_refused(src, out, recipe, fmt, can):
    """`convert SRC OUT --recipe R --format F` is refused: exit 2, naming the formats that can express R, and nothing
    written."""
    r = minifloat("convert", src, out, "--recipe", recipe, "--format", fmt)
    assert r.returncode == 2, r.stderr
    assert f"recipe {recipe} cannot be written as --format {fmt}" in r.stderr, r.stderr
    assert f"formats that can express it: {can}" in r.stderr, r.stderr
    assert not out.exists()
