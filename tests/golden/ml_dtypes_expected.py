#!/usr/bin/env python3
"""Writes ml_dtypes' own answers for minifloat's tests to compare against (the oracle, not minifloat).

For each format ml_dtypes has (and f16 through numpy), two little-endian uint32 files in OUT_DIR:
  <fmt>.encode.u32: pairs (f32 input bits, code) for every f32 whose low 16 bits are 0x0000, 0x7FFF, 0x8000 or
                    0x8001 (262,144 inputs: every exponent, both signs, ties and their neighbours, NaN and Inf);
  <fmt>.decode.u32: pairs (code, f32 bits of the decoded value) for every code.
Usage: ml_dtypes_expected.py OUT_DIR
"""
import os
import sys
import warnings

import ml_dtypes
import numpy as np

FORMATS = {
    "bf16": ml_dtypes.bfloat16,
    "f16": np.float16,
    "e4m3": ml_dtypes.float8_e4m3fn,
    "e5m2": ml_dtypes.float8_e5m2,
    "e3m2": ml_dtypes.float6_e3m2fn,
    "e2m3": ml_dtypes.float6_e2m3fn,
    "e2m1": ml_dtypes.float4_e2m1fn,
    "ue8m0": ml_dtypes.float8_e8m0fnu,
    "e4m3fnuz": ml_dtypes.float8_e4m3fnuz,
    "e5m2fnuz": ml_dtypes.float8_e5m2fnuz,
    "e4m3b11fnuz": ml_dtypes.float8_e4m3b11fnuz,
    "e3m4": ml_dtypes.float8_e3m4,
    "e4m3ieee": ml_dtypes.float8_e4m3,
}
BITS = {"bf16": 16, "f16": 16, "e4m3": 8, "e5m2": 8, "e3m2": 6, "e2m3": 6, "e2m1": 4, "ue8m0": 8, "e4m3fnuz": 8,
        "e5m2fnuz": 8, "e4m3b11fnuz": 8, "e3m4": 8, "e4m3ieee": 8}


def main(out_dir):
    os.makedirs(out_dir, exist_ok=True)
    high = np.arange(1 << 16, dtype=np.uint32) << 16
    inputs = np.concatenate([high | low for low in (0x0000, 0x7FFF, 0x8000, 0x8001)]).astype(np.uint32)
    warnings.simplefilter("ignore")  # overflow and NaN casts are the point here
    for name, dtype in FORMATS.items():
        storage = np.uint8 if np.dtype(dtype).itemsize == 1 else np.uint16
        codes = inputs.view(np.float32).astype(dtype).view(storage).astype(np.uint32)
        pairs = np.stack([inputs, codes], axis=1).astype("<u4")
        pairs.tofile(os.path.join(out_dir, f"{name}.encode.u32"))
        all_codes = np.arange(1 << BITS[name], dtype=storage)
        values = all_codes.view(dtype).astype(np.float32).view(np.uint32)
        np.stack([all_codes.astype(np.uint32), values], axis=1).astype("<u4").tofile(
            os.path.join(out_dir, f"{name}.decode.u32"))
    print(f"ml_dtypes {ml_dtypes.__version__}, numpy {np.__version__}: wrote {len(FORMATS)} formats to {out_dir}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
