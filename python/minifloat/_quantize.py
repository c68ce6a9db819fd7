"""Block-scaled tensors: quantize, dequantize, fake_quantize, error_report and rotate (docs/spec.md#block-scaling,
docs/spec.md#schemes, docs/spec.md#layout, docs/spec.md#hadamard)."""
from __future__ import annotations

import math

import numpy as np

from . import _core
from ._arrays import as_array, is_torch_dtype, ml_dtype, to_torch, torch_dtype
from ._codec import unpack

_SCHEME_NAMES = tuple(_core.scheme_names())


def _str_or_none(value, arg: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise TypeError(f"{arg}: a str is expected, not {type(value).__name__}")
    return value


def _int_or_none(value, arg: str) -> int:
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{arg}: an int is expected, not {type(value).__name__}")
    if value < 0 or value > 1 << 30:
        raise ValueError(f"{arg}: {value} is out of range")
    return int(value)


def _input(array, arg: str = "array", widen: bool = False):
    """array as (contiguous f32 or bf16/f16 bits, kind, from_torch). widen: bf16/f16 become f32 (exactly)."""
    a, kind, from_torch = as_array(array, arg)
    if kind == "f64":
        raise TypeError(f"{arg}: float64 is not accepted: convert to float32 first (x.astype(numpy.float32) "
                        "rounds to nearest even), so that the rounding is yours to see")
    if kind not in ("f32", "bf16", "f16"):
        raise TypeError(f"{arg}: float32, bfloat16 or float16 values are expected, not {kind}")
    if a.ndim == 0:
        raise ValueError(f"{arg}: a tensor of at least one dimension is expected, not a scalar")
    if widen and kind != "f32":
        out = np.empty(a.shape, dtype=np.float32)
        _core.decode(a, out, kind, "f32")
        a, kind = out, "f32"
    return a, kind, from_torch


def _options(layout, rotate, threads, pad, nonfinite):
    return _core.Options(_str_or_none(layout, "layout") or "packed", _int_or_none(rotate, "rotate"),
                         _int_or_none(threads, "threads"), bool(pad), _str_or_none(nonfinite, "nonfinite"))


def _scheme_arg(scheme) -> str:
    if not isinstance(scheme, str):
        raise TypeError(f"scheme: a scheme name (str) is expected, not {type(scheme).__name__}")
    return scheme


class QuantizedTensor:
    """A tensor in a block-scaled scheme: element codes, block scales, and (NVFP4) a per-tensor scale.

    codes: uint8, laid out as `layout` says: "packed" (e2m1 two per byte, element 2i in the low nibble; 6-bit four
      per 3 bytes), shaped [..., bytes per row] when rows end on a byte, else flat; "unpacked" one code per byte,
      shaped like the tensor; "ggml" [..., cols / 32, 17] blocks (scale byte, then 16 bytes).
    scales: one per block, [rows, ceil(cols / Bc)] (or [ceil(rows / Br), ceil(cols / Bc)] for tiles): uint8 codes
      for ue8m0 / ue4m3 / ue5m3 scales, float32 for f32 scales.
    tensor_scale: the second-level float scale of two-level schemes (nvfp4), else None.
    """

    def __init__(self, core):
        self._q = core

    shape = property(lambda self: tuple(self._q.shape), doc="the original tensor's shape")
    scheme = property(lambda self: self._q.scheme, doc="the scheme's name (canonical spelling for custom ones)")
    rule = property(lambda self: self._q.rule, doc="the scale rule used")
    profile = property(lambda self: self._q.profile, doc="the compatibility profile used")
    layout = property(lambda self: self._q.layout, doc="packed, unpacked or ggml")
    rotate = property(lambda self: self._q.rotate, doc="the Hadamard group size applied before quantizing (0: none)")
    nbytes = property(lambda self: self._q.nbytes, doc="bytes of codes, scales and tensor scale")
    block = property(lambda self: tuple(self._q.block), doc="(block rows, block cols)")

    @property
    def tensor_scale(self):
        return float(self._q.tensor_scale) if self._q.has_tensor_scale else None

    @property
    def codes(self) -> np.ndarray:
        c = self._q.codes
        shape = self.shape
        lead, cols = shape[:-1], shape[-1]
        if self.layout == "ggml":
            return c.reshape(lead + (cols // 32, 17))
        bits = 8 if self.layout == "unpacked" else self._q.element_bits
        if (cols * bits) % 8 == 0 and (bits != 6 or cols % 4 == 0):
            return c.reshape(lead + (cols * bits // 8,))
        return c

    @property
    def scales(self) -> np.ndarray:
        if self.layout == "ggml":
            return self.scale_codes().astype(np.uint8)
        s = self._q.scales
        if self._q.scale_format == "f32":
            s = s.view("<f4")
        return s.reshape(tuple(self._q.scale_shape))

    def scale_codes(self) -> np.ndarray:
        """The scale of every block as its code (uint32; f32 scales as their bits), whatever the layout."""
        rows = math.prod(self.shape[:-1])
        br, bc = self.block
        out = np.empty(((rows + br - 1) // br, (self.shape[-1] + bc - 1) // bc), dtype=np.uint32)
        self._q.scale_codes(out)
        return out

    def dequantize(self, dtype=np.float32, threads=None):
        """The tensor back: float32 (exact products of code and scale), float64 (the same values), or bfloat16
        (ml_dtypes.bfloat16 or torch.bfloat16, rounded to nearest even); torch dtypes give torch tensors."""
        threads = _int_or_none(threads, "threads")
        if is_torch_dtype(dtype):
            import torch

            if dtype == torch.bfloat16:
                return to_torch(self._dequantize_bf16(threads).view(np.int16)).view(torch.bfloat16)
            if dtype in (torch.float32, torch.float64):
                return to_torch(self.dequantize(np.float32 if dtype == torch.float32 else np.float64, threads))
            raise TypeError(f"dtype: {dtype} is not torch.float32, torch.float64 or torch.bfloat16")
        dt = np.dtype(dtype)
        if dt == np.float32 or dt == np.float64:
            out = np.empty(self.shape, dtype=np.float32)
            self._q.dequantize(out, threads)
            return out if dt == np.float32 else out.astype(np.float64)
        if dt == ml_dtype("bf16"):
            return self._dequantize_bf16(threads).view(dt)
        raise TypeError(f"dtype: {dt} is not float32, float64 or bfloat16")

    def _dequantize_bf16(self, threads: int) -> np.ndarray:
        out = np.empty(self.shape, dtype=np.uint16)
        self._q.dequantize(out, threads)
        return out

    def codes_as(self, dtype):
        """The codes in a dtype of the element format, no copy where the layout allows: torch.float4_e2m1fn_x2
        (packed e2m1), torch.float8_e4m3fn / float8_e5m2, or ml_dtypes' one-per-element dtypes (packed e2m1 and
        6-bit codes are unpacked, a copy)."""
        fmt = self._q.element
        if self.layout == "ggml":
            raise ValueError("codes_as: the ggml layout mixes scales into the codes; quantize with layout='packed'")
        if is_torch_dtype(dtype):
            own = torch_dtype(fmt)
            if own is None or dtype != own:
                raise TypeError(f"dtype: {dtype} is not {fmt}'s torch dtype ({own})")
            if fmt == "e2m1" and self.layout != "packed":
                raise ValueError("codes_as: torch.float4_e2m1fn_x2 needs layout='packed'")
            return to_torch(self.codes).view(dtype)
        own = ml_dtype(fmt)
        if own is None or np.dtype(dtype) != own:
            raise TypeError(f"dtype: {dtype} is not {fmt}'s ml_dtypes dtype ({own})")
        if self.layout == "packed" and self._q.element_bits < 8:
            return unpack(self._q.codes, self._q.element_bits, math.prod(self.shape)).reshape(self.shape).view(own)
        return self.codes.view(own)

    def scales_as(self, dtype):
        """The block scales in a dtype of the scale format, a view: torch.float8_e8m0fnu / ml_dtypes.float8_e8m0fnu
        for ue8m0; torch.float8_e4m3fn / ml_dtypes.float8_e4m3fn for ue4m3 (the same bits with the sign 0)."""
        sf = self._q.scale_format
        s = self.scales
        if sf == "f32":
            raise TypeError("scales_as: f32 scales are float32 already (.scales)")
        if sf == "ue5m3":  # neither torch nor ml_dtypes has float8_e5m3fnu
            raise TypeError("scales_as: ue5m3 scales have no torch or ml_dtypes dtype; .scales holds their uint8 codes "
                            "(decode with minifloat.decode(codes, 'ue5m3'))")
        as_fmt = "e4m3" if sf == "ue4m3" else sf
        if is_torch_dtype(dtype):
            own = torch_dtype(as_fmt)
            if own is None or dtype != own:
                raise TypeError(f"dtype: {dtype} is not {sf}'s torch dtype ({own})")
            return to_torch(np.ascontiguousarray(s)).view(dtype)
        own = ml_dtype(as_fmt)
        if own is None or np.dtype(dtype) != own:
            raise TypeError(f"dtype: {dtype} is not {sf}'s ml_dtypes dtype ({own})")
        return s.view(own)

    def __repr__(self):
        ts = f", tensor_scale={self.tensor_scale!r}" if self.tensor_scale is not None else ""
        return (f"QuantizedTensor(scheme={self.scheme!r}, shape={self.shape}, rule={self.rule!r}, "
                f"profile={self.profile!r}, layout={self.layout!r}, nbytes={self.nbytes}{ts})")


def quantize(array, scheme: str, rule=None, profile=None, layout=None, rotate=None, threads=None, *, pad=False,
             nonfinite="nan") -> QuantizedTensor:
    """Quantize a float32 / bfloat16 / float16 tensor (numpy, ml_dtypes or torch) into a block-scaled scheme.

    scheme: a name from schemes() (mxfp8, mxfp4, nvfp4, nvfp4-4over6, nvfp4-ue5m3, fp8-1x128, ...) or
    ELEMENT-BLOCK[-SCALE[-RULE]].
    rule: scale rule (floor, rceil, even, f32, e4m3, mse, 4over6); profile: ocp, deepseek, torchao, te, ggml;
    layout: packed (default), unpacked, ggml; rotate: Hadamard group size applied first (undone on dequantize);
    threads: default all cores; pad: allow partial edge blocks; nonfinite: "nan" (NaN block scale) or "error".
    Blocks run along the last dimension. The GIL is released while the core works.
    """
    a, kind, _ = _input(array)
    opts = _options(layout, rotate, threads, pad, nonfinite)
    return QuantizedTensor(_core.quantize(a, kind, _scheme_arg(scheme), _str_or_none(rule, "rule"),
                                          _str_or_none(profile, "profile"), opts))


def fake_quantize(array, scheme: str, rule=None, profile=None, rotate=None, threads=None, *, pad=False,
                  nonfinite="nan"):
    """dequantize(quantize(array, ...)) in one pass, as float32 (a torch input gives a torch tensor)."""
    a, _, from_torch = _input(array, widen=True)
    out = np.empty(a.shape, dtype=np.float32)
    opts = _options("packed", rotate, threads, pad, nonfinite)
    _core.fake_quantize(a, out, _scheme_arg(scheme), _str_or_none(rule, "rule"), _str_or_none(profile, "profile"),
                        opts)
    return to_torch(out) if from_torch else out


def error_report(array, scheme: str, rule=None, profile=None, rotate=None, threads=None, *, pad=False,
                 worst_blocks: int = 5) -> dict:
    """What quantizing `array` into `scheme` costs: {"scheme", "rule", "profile", "bits_per_value",
    "stats": {count, nonfinite, mse, sqnr_db, mean_rel_error, max_rel_error, mean_abs_error_ratio, zeroed_fraction,
    clipped_fraction}, "worst_blocks": [{block_row, block_col, mse, max_abs_error, amax, scale_code}]}, the keys of
    `minifloat error --json`."""
    a, _, _ = _input(array, widen=True)
    q = quantize(a, scheme, rule, profile, None, rotate, threads, pad=pad)
    return q._q.error_report(a, _int_or_none(worst_blocks, "worst_blocks"))


def rotate(array, n: int):
    """The Hadamard rotation over consecutive groups of n values (n a power of two up to 4096), times n^-1/2, as
    float32; it is its own inverse. A new array (a torch input gives a torch tensor)."""
    a, _, from_torch = _input(array, widen=True)
    out = np.array(a, dtype=np.float32, copy=True)
    _core.rotate(out, _int_or_none(n, "n"))
    return to_torch(out) if from_torch else out


def schemes() -> list:
    """The named schemes: name, element, element_bits, block (rows, cols), scale_format, rule, profile,
    tensor_scale (two-level), bits_per_value."""
    return [_core.scheme(n) for n in _SCHEME_NAMES]
