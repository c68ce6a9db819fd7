#!/usr/bin/env python3
"""Every one of the 2^32 f32 inputs encoded by minifloat (the Python package's bulk casts) and by ml_dtypes'
astype, compared bit for bit; and every code decoded by both. By hand, not in ./test: the C++ exhaustive suite
(tests/exhaustive) sweeps the same inputs against the golden tables, and this run checks ml_dtypes itself agrees.

Usage: ml_dtypes_sweep.py [FORMAT ...]   (default: every format ml_dtypes has a dtype for; about 10 s a format)
"""
import sys
import time
import warnings

import ml_dtypes
import numpy as np

import minifloat

DTYPES = {
    "e4m3": "float8_e4m3fn", "e5m2": "float8_e5m2", "e4m3fnuz": "float8_e4m3fnuz", "e5m2fnuz": "float8_e5m2fnuz",
    "e4m3b11fnuz": "float8_e4m3b11fnuz", "e3m4": "float8_e3m4", "e4m3ieee": "float8_e4m3", "ue8m0": "float8_e8m0fnu",
}
CHUNK = 1 << 24


def sweep(fmt):
    dtype = getattr(ml_dtypes, DTYPES[fmt])
    mismatches = 0
    first = None
    for start in range(0, 1 << 32, CHUNK):
        bits = np.arange(start, start + CHUNK, dtype=np.uint64).astype(np.uint32)
        x = bits.view(np.float32)
        want = x.astype(dtype).view(np.uint8)
        got = minifloat.encode(x, fmt)
        bad = np.flatnonzero(got != want)
        if bad.size:
            mismatches += bad.size
            if first is None:
                i = bad[0]
                first = f"f32 0x{int(bits[i]):08x}: ml_dtypes 0x{int(want[i]):02x}, minifloat 0x{int(got[i]):02x}"
    codes = np.arange(256, dtype=np.uint8)
    want = codes.view(dtype).astype(np.float32).view(np.uint32)
    got = minifloat.decode(codes, fmt).view(np.uint32)
    bad_decode = int(np.count_nonzero(got != want))
    return mismatches, first, bad_decode


def main(formats):
    warnings.simplefilter("ignore")  # overflow and NaN casts are the point
    failed = False
    for fmt in formats:
        t = time.time()
        mismatches, first, bad_decode = sweep(fmt)
        print(f"{fmt}: {mismatches} encode mismatches over 2^32 inputs{'; first ' + first if first else ''}; "
              f"{bad_decode} decode mismatches over 256 codes ({time.time() - t:.0f} s; ml_dtypes "
              f"{ml_dtypes.__version__})", flush=True)
        failed |= mismatches != 0 or bad_decode != 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:] or list(DTYPES)))
