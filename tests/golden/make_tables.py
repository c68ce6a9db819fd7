#!/usr/bin/env python3
"""Writes tests/golden/<format>.txt: every code of every format of 8 bits or fewer and its exact value.

The values come from the standards' definitions, typed here field by field (OCP MX v1.0 for e2m1/e2m3/e3m2/ue8m0,
the OCP FP8 / NVIDIA-Arm-Intel "FP8 Formats for Deep Learning" paper for e4m3/e5m2, NVFP4's E4M3 scale for ue4m3,
arXiv:2206.02915 and LLVM's APFloat for the fnuz formats, e3m4 and e4m3ieee, PTX ISA 13.4 and LLVM's Float8E5M3FNU
for ue5m3),
in exact rational arithmetic. It shares nothing with minifloat's C++ code, which the tables then test.
Run once by hand; the outputs are committed:  python3 tests/golden/make_tables.py tests/golden
"""
import sys
from decimal import Decimal, getcontext
from fractions import Fraction

getcontext().prec = 200  # enough for 2^-149 exactly

# name: (sign bits, exponent bits, mantissa bits, bias, special rule)
STANDARDS = {
    "e4m3": (1, 4, 3, 7, "fn"),        # S.1111.111 is NaN; no Inf; max S.1111.110 = 448
    "e5m2": (1, 5, 2, 15, "ieee"),     # exponent 11111: mantissa 00 is Inf, else NaN
    "e3m2": (1, 3, 2, 3, "finite"),    # no Inf, no NaN; max 28
    "e2m3": (1, 2, 3, 1, "finite"),    # max 7.5
    "e2m1": (1, 2, 1, 1, "finite"),    # max 6
    "ue8m0": (0, 8, 0, 127, "e8m0"),   # 2^(code-127), 0xFF NaN, no zero, no sign
    "ue4m3": (0, 4, 3, 7, "fn"),       # E4M3 without sign: 0x7F NaN
    # arXiv:2206.02915 / LLVM Float8E4M3FNUZ, Float8E5M2FNUZ, Float8E4M3B11FNUZ: 0x80 (the -0 code) is the one NaN
    "e4m3fnuz": (1, 4, 3, 8, "fnuz"),      # max 0x7F = 1.875 x 2^7 = 240
    "e5m2fnuz": (1, 5, 2, 16, "fnuz"),     # max 0x7F = 1.75 x 2^15 = 57344
    "e4m3b11fnuz": (1, 4, 3, 11, "fnuz"),  # max 0x7F = 1.875 x 2^4 = 30
    # LLVM Float8E3M4 / Float8E4M3 (IEEE 754 conventions at 8 bits): exponent all ones is Inf or NaN
    "e3m4": (1, 3, 4, 3, "ieee"),      # max 0x6F = 1.9375 x 2^3 = 15.5
    "e4m3ieee": (1, 4, 3, 7, "ieee"),  # max 0x77 = 1.875 x 2^7 = 240
    # PTX ISA 13.4 ue5m3 / LLVM Float8E5M3FNU: no sign, bias 15, no Inf, 0xFF NaN, 0xFE = 1.75 x 2^16 = 114688
    "ue5m3": (0, 5, 3, 15, "fn"),
}


def exact_decimal(q: Fraction) -> str:
    if q == 0:
        return "0"
    d = Decimal(q.numerator) / Decimal(q.denominator)  # exact: the denominator is a power of two
    assert Fraction(d) == q
    s = format(d, "f")
    return s.rstrip("0").rstrip(".") if "." in s else s


def value(code, s_bits, e_bits, m_bits, bias, rule):
    sign = (code >> (e_bits + m_bits)) & 1 if s_bits else 0
    e = (code >> m_bits) & ((1 << e_bits) - 1)
    m = code & ((1 << m_bits) - 1)
    all_ones = (1 << e_bits) - 1
    if rule == "ieee" and e == all_ones:
        return ("-" if sign else "") + ("inf" if m == 0 else "nan")
    if rule in ("fn", "e8m0") and e == all_ones and m == (1 << m_bits) - 1:
        return ("-" if sign else "") + "nan"
    if rule == "fnuz" and sign and e == 0 and m == 0:
        return "-nan"  # the code's sign bit is set; ml_dtypes and torch decode it to a NaN with the sign
    if rule == "e8m0":
        q = Fraction(2) ** (e - bias)
    elif e == 0:  # subnormal: 0.m x 2^(1 - bias)
        q = Fraction(m, 1 << m_bits) * Fraction(2) ** (1 - bias)
    else:
        q = (1 + Fraction(m, 1 << m_bits)) * Fraction(2) ** (e - bias)
    if sign:
        return "-" + exact_decimal(q)
    return exact_decimal(q)


def main(out_dir):
    for name, (s_bits, e_bits, m_bits, bias, rule) in STANDARDS.items():
        n = 1 << (s_bits + e_bits + m_bits)
        digits = (s_bits + e_bits + m_bits + 3) // 4
        lines = [f"# {name}: every code and its exact value, from the standard's definition "
                 f"(sign/exp/mant {s_bits}/{e_bits}/{m_bits}, bias {bias}, {rule}).",
                 "# Written by tests/golden/make_tables.py; do not edit by hand."]
        for code in range(n):
            lines.append(f"0x{code:0{digits}x} {value(code, s_bits, e_bits, m_bits, bias, rule)}")
        with open(f"{out_dir}/{name}.txt", "w") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ".")
