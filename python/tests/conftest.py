"""Shared helpers: bit comparisons that name the first differing element, and the optional oracles.

An oracle that is not installed fails the tests that need it (never a silent skip). To leave torch, torchao or
gguf out on purpose, set MINIFLOAT_SKIP=torch,torchao,gguf: those tests are then reported as skipped, with why.
"""
import importlib
import os

import numpy as np
import pytest

# f32 inputs of the C++ ml_dtypes test (tests/golden/ml_dtypes_expected.py): every f32 whose low 16 bits are 0x0000,
# 0x7FFF, 0x8000 or 0x8001 -- every exponent, both signs, ties and their neighbours, NaN and Inf.
F32_GRID = np.concatenate([(np.arange(1 << 16, dtype=np.uint32) << 16) | low
                           for low in (0x0000, 0x7FFF, 0x8000, 0x8001)]).astype(np.uint32)
ALL_16 = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)  # every bf16 / f16 pattern


def first_difference(actual, expected, inputs=None, what="codes", allowed=None):
    """None if equal; else a message naming how many elements differ and the first one (input, expected, got)."""
    actual, expected = np.asarray(actual).reshape(-1), np.asarray(expected).reshape(-1)
    if actual.shape != expected.shape:
        return f"{what}: shape {actual.shape} != expected {expected.shape}"
    diff = actual != expected
    if allowed is not None:
        diff &= ~np.asarray(allowed).reshape(-1)
    bad = np.flatnonzero(diff)
    if bad.size == 0:
        return None
    i = int(bad[0])
    inp = "" if inputs is None else f"input {_hex(np.asarray(inputs).reshape(-1)[i])}, "
    return (f"{what}: {bad.size} of {actual.size} differ; first at index {i}: {inp}expected "
            f"{_hex(expected[i])}, got {_hex(actual[i])}")


def _hex(v):
    return hex(int(v)) if np.issubdtype(np.asarray(v).dtype, np.integer) else repr(v)


def assert_same(actual, expected, inputs=None, what="codes", allowed=None):
    msg = first_difference(actual, expected, inputs, what, allowed)
    assert msg is None, msg


def need(module: str):
    """Import an oracle; fail (not skip) when it is missing, unless MINIFLOAT_SKIP names it."""
    skip = {s.strip() for s in os.environ.get("MINIFLOAT_SKIP", "").split(",") if s.strip()}
    if module.split(".")[0] in skip:
        pytest.skip(f"{module}: left out on purpose (MINIFLOAT_SKIP={os.environ['MINIFLOAT_SKIP']})")
    try:
        return importlib.import_module(module)
    except ImportError as e:
        pytest.fail(f"{module} is not installed ({e}); install python/requirements-test.txt, or set "
                    f"MINIFLOAT_SKIP={module.split('.')[0]} to leave it out on purpose", pytrace=False)


def pytest_configure(config):
    config.addinivalue_line("markers", "serial: measures wall time, so ./test runs it after the parallel (pytest-xdist) "
                                       "run, alone on the machine")
