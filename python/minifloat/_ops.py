"""The operations of inference: act_quant, fp8_gemm, fp4_gemm and linear (docs/spec.md#gemm, minifloat/gemm.h), KV-cache
entries and pages (section 6, minifloat/kv.h), and block scales in the layouts GEMM kernels read (section 5,
minifloat/scale_layout.h). Arguments are checked and converted here; every number comes from minifloat._core."""
from __future__ import annotations

import math

import numpy as np

from . import _core
from ._arrays import as_array, ml_dtype, to_torch
from ._quantize import QuantizedTensor, _input, _int_or_none

_KV_VALUES = 512  # values per KV entry (one token's latent)
_PACKED_DTYPES = {1: np.dtype(np.uint8), 2: np.dtype("<i2"), 4: np.dtype("<i4")}


def _str(value, arg: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{arg}: a str is expected, not {type(value).__name__}")
    return value


def _quantized(value, arg: str, what: str):
    if not isinstance(value, QuantizedTensor):
        raise TypeError(f"{arg}: a QuantizedTensor ({what}) is expected, not {type(value).__name__}")
    return value._q


def _out_kind(dtype) -> str:
    """"f32" or "bf16" for the dtype= of a GEMM."""
    if isinstance(dtype, str):
        kinds = {"float32": "f32", "f32": "f32", "bfloat16": "bf16", "bf16": "bf16"}
        if dtype not in kinds:
            raise TypeError(f"dtype: '{dtype}' is not float32 or bfloat16")
        return kinds[dtype]
    try:
        dt = np.dtype(dtype)
    except TypeError:
        raise TypeError(f"dtype: {dtype!r} is not float32 or bfloat16") from None
    if dt == np.float32:
        return "f32"
    if dt == ml_dtype("bf16"):
        return "bf16"
    raise TypeError(f"dtype: {dt} is not float32 or bfloat16")


def _output(out, dtype, shape: tuple, accumulate: bool):
    """(the array the core writes: float32 or uint16 bf16 bits, the array returned)."""
    if not isinstance(accumulate, (bool, np.bool_)):
        raise TypeError(f"accumulate: a bool is expected, not {type(accumulate).__name__}")
    if out is None:
        if accumulate:
            raise ValueError("accumulate: needs out=, the array to add the product to")
        kind = "f32" if dtype is None else _out_kind(dtype)
        raw = np.empty(shape, dtype=np.float32 if kind == "f32" else np.uint16)
        return raw, (raw if kind == "f32" else raw.view(ml_dtype("bf16")))
    if not isinstance(out, np.ndarray):
        raise TypeError(f"out: a numpy array is expected, not {type(out).__name__}")
    if out.dtype == np.float32:
        kind = "f32"
    elif out.dtype == ml_dtype("bf16"):
        kind = "bf16"
    else:
        raise TypeError(f"out: float32 or bfloat16 (ml_dtypes) is expected, not {out.dtype}")
    if dtype is not None and _out_kind(dtype) != kind:
        raise TypeError(f"dtype: {dtype} differs from out's dtype {out.dtype}")
    if tuple(out.shape) != tuple(shape):
        raise ValueError(f"out: shape {tuple(out.shape)} is not the product's shape {tuple(shape)}")
    if not out.flags.c_contiguous or not out.flags.writeable:
        raise ValueError("out: a C-contiguous, writeable array is expected (the product is written into it)")
    return (out if kind == "f32" else out.view(np.uint16)), out


def act_quant(x, scale: str = "ue8m0", threads=None) -> QuantizedTensor:
    """DeepSeek's per-token FP8 quantization of activations x [..., K] (K a multiple of 128): e4m3 in 1x128 blocks,
    deepseek profile (amax clamped to >= 1e-4). scale: "ue8m0" (powers of two, rule rceil: V3.1+, DeepGEMM) or
    "f32" (amax / 448: V3). x: float32, bfloat16 or float16 (numpy, ml_dtypes or torch). The GIL is released."""
    a, _, _ = _input(x, "x", widen=True)
    return QuantizedTensor(_core.act_quant(a, _str(scale, "scale"), _int_or_none(threads, "threads")))


def _gemm(fn, a, w, w_what, out, accumulate, dtype, threads):
    qa = _quantized(a, "a", "act_quant's output")
    qw = _quantized(w, "w", w_what)
    shape = tuple(qa.shape[:-1]) + (math.prod(qw.shape[:-1]),)
    raw, result = _output(out, dtype, shape, accumulate)
    fn(qa, qw, raw, bool(accumulate), _int_or_none(threads, "threads"))
    return result


def fp8_gemm(a: QuantizedTensor, w: QuantizedTensor, out=None, accumulate: bool = False, dtype=None, threads=None):
    """C = a w^T for a = act_quant(x) [..., K] and w an e4m3 weight [N, K] (fp8-128x128, fp8-32x32, fp8-1x128, or
    e4m3 blocks with f32 scales): f32 accumulation in the order of minifloat/gemm.h, written as float32 or bfloat16
    (dtype=ml_dtypes.bfloat16 or "bfloat16", rounded to nearest even). out= writes into an existing array of shape
    [..., N]; accumulate=True adds to it (one rounded f32 add at the end). Returns C. ValueError naming both shapes
    when the operands do not fit."""
    return _gemm(_core.fp8_gemm, a, w, "an e4m3 weight from quantize()", out, accumulate, dtype, threads)


def fp4_gemm(a: QuantizedTensor, w: QuantizedTensor, out=None, accumulate: bool = False, dtype=None, threads=None):
    """C = a w^T for a = act_quant(x) [..., K] and w an e2m1 weight [N, K]: mxfp4 (1x32 blocks, ue8m0 scales, any
    rule) or nvfp4 (1x16 blocks, E4M3 scales, a finite non-zero tensor scale; docs/gemm.md). out, accumulate,
    dtype as in fp8_gemm."""
    return _gemm(_core.fp4_gemm, a, w, "an mxfp4 or nvfp4 weight from quantize()", out, accumulate, dtype, threads)


def linear(x, w, out=None, accumulate: bool = False, dtype=None, threads=None, weight_only: bool = False):
    """y = x w^T for x [..., K] (float32; bfloat16 / float16 are widened exactly) and a weight w [N, K]:
    a QuantizedTensor (e4m3 -> act_quant(x) and fp8_gemm, with f32 activation scales when w's scales are f32;
    e2m1, mxfp4 or nvfp4 -> act_quant(x) and fp4_gemm; weight_only=True: x as it is, not quantized, times the
    quantized weight, as W4A16 / W8A16 checkpoints run; K not a multiple of 128 takes the scalar definition), or
    a plain array: bfloat16 (ml_dtypes or torch; x is rounded to bfloat16, nearest even) or float32. out,
    accumulate, dtype as in fp8_gemm; a torch x without out= gives a torch tensor."""
    xa, _, from_torch = _input(x, "x", widen=True)
    shape_lead = tuple(xa.shape[:-1])
    if isinstance(w, QuantizedTensor):
        shape = shape_lead + (math.prod(w.shape[:-1]),)
        raw, result = _output(out, dtype, shape, accumulate)
        _core.linear_quantized(xa, w._q, raw, bool(accumulate), _int_or_none(threads, "threads"), bool(weight_only))
    else:
        wa, kind, _ = as_array(w, "w")
        if kind not in ("f32", "bf16"):
            raise TypeError(f"w: a QuantizedTensor, or a float32 or bfloat16 array is expected, not {kind}")
        if wa.ndim != 2:
            raise ValueError(f"w: a 2-D weight [N, K] is expected, not shape {tuple(wa.shape)}")
        shape = shape_lead + (wa.shape[0],)
        raw, result = _output(out, dtype, shape, accumulate)
        _core.linear_plain(xa, wa, raw, bool(accumulate), _int_or_none(threads, "threads"))
    if from_torch and out is None:
        import torch

        return to_torch(result) if raw is result else to_torch(raw.view(np.int16)).view(torch.bfloat16)
    return result


def kv_formats() -> list:
    """The KV entry formats: name, scheme, entry_bytes (288, 528, 584, 384, 400, 400), quantized_values, data_bytes,
    scale_bytes, scale_count, scale_footer (v4-mixed and v4-nvfp4 pages keep scales after the data rows), page_align."""
    return [_core.kv_format(n) for n in _core.kv_format_names()]


def kv_page_bytes(format: str, page_size: int) -> int:
    """Bytes of one KV page of page_size token slots."""
    return _core.kv_page_bytes(_str(format, "format"), _int_or_none(page_size, "page_size"))


def _kv_values(values):
    a, _, _ = _input(values, "values", widen=True)
    if a.shape[-1] != _KV_VALUES:
        raise ValueError(f"values: shape {tuple(a.shape)}: the last dimension must be {_KV_VALUES} (one token)")
    return a


def kv_encode(values, format: str = "fp4-e4m3-16") -> np.ndarray:
    """KV-cache entries of tokens: values [..., 512] (float32; bfloat16 / float16 widened exactly) -> uint8
    [..., entry_bytes]: 288 (fp4-e4m3-16), 528 (mxfp8), 584 (v4-mixed), 384 (v4-nvfp4) or 400 (mxfp6-e3m2,
    mxfp6-e2m3) bytes per token."""
    a = _kv_values(values)
    entry = _core.kv_format(_str(format, "format"))["entry_bytes"]
    return _core.kv_encode(a, format).reshape(a.shape[:-1] + (entry,))


def kv_decode(entries, format: str = "fp4-e4m3-16") -> np.ndarray:
    """The values of KV entries: uint8 [..., entry_bytes] -> float32 [..., 512]; a 1-D array is a run of entries
    back to back -> [tokens, 512]."""
    entry = _core.kv_format(_str(format, "format"))["entry_bytes"]
    e, kind, _ = as_array(entries, "entries")
    if kind != "u8":
        raise TypeError(f"entries: uint8 bytes are expected, not {e.dtype}")
    if e.ndim == 0:
        raise ValueError("entries: an array of bytes is expected, not a scalar")
    if e.ndim == 1:
        lead = (e.size // entry,)
    elif e.shape[-1] != entry:
        raise ValueError(f"entries: shape {tuple(e.shape)}: the last dimension must be {format}'s {entry} bytes")
    else:
        lead = tuple(e.shape[:-1])
    return _core.kv_decode(e, format).reshape(lead + (_KV_VALUES,))


def _slots(slots) -> np.ndarray:
    s, kind, _ = as_array(slots, "slots")
    if kind not in ("int", "u8", "u16", "u32"):
        raise TypeError(f"slots: integers are expected, not {s.dtype}")
    if s.ndim != 1:
        raise ValueError(f"slots: a 1-D array is expected, not shape {tuple(s.shape)}")
    return np.ascontiguousarray(s, dtype=np.int64)


class KvCache:
    """A paged KV cache that owns its buffer (zero-filled: a never-written slot reads as zeros). Slot s is token
    s % page_size of page s // page_size; the page layout of each format is minifloat/kv.h's."""

    def __init__(self, format: str = "fp4-e4m3-16", page_size: int = 64, pages: int = 1):
        self._c = _core.KvCache(_str(format, "format"), _int_or_none(page_size, "page_size"),
                                _int_or_none(pages, "pages"))

    format = property(lambda self: self._c.format, doc="the entry format")
    page_size = property(lambda self: self._c.page_size, doc="token slots per page")
    pages = property(lambda self: self._c.pages, doc="number of pages")
    slots = property(lambda self: self._c.slots, doc="pages * page_size")
    bytes = property(lambda self: self._c.bytes, doc="the whole buffer, a read-only uint8 view")

    def page(self, p: int) -> np.ndarray:
        """Page p's bytes, a read-only uint8 view."""
        return self._c.page(int(p))

    def write(self, values, slots) -> None:
        """Token t of values [tokens, 512] goes to slot slots[t]; repeated slots keep the last token."""
        a = _kv_values(values)
        s = _slots(slots)
        if a.size // _KV_VALUES != s.size:
            raise ValueError(f"values {tuple(a.shape)} and slots {tuple(s.shape)}: one slot per token is expected")
        self._c.write(a, s)

    def read(self, slots) -> np.ndarray:
        """The tokens at slots, decoded: float32 [len(slots), 512]."""
        s = _slots(slots)
        return self._c.read(s).reshape(s.size, _KV_VALUES)

    def __repr__(self):
        return f"KvCache(format={self.format!r}, page_size={self.page_size}, pages={self.pages})"


def _shape(value, arg: str) -> list:
    try:
        shape = [int(d) for d in value]
        if any(isinstance(d, bool) or not isinstance(d, (int, np.integer)) for d in value):
            raise TypeError
    except TypeError:
        raise TypeError(f"{arg}: a sequence of ints is expected, not {value!r}") from None
    return shape


def pack_scales(codes, platform: str) -> np.ndarray:
    """One-byte block-scale codes [..., rows, cols] (uint8, ml_dtypes float8_e8m0fnu / float8_e4m3fn, or a
    QuantizedTensor's scales) in the layout a GEMM kernel reads: "nvidia-int32" ("nvidia") int32 [rows,
    ceil(cols/4)], code c in bits 8*(c%4); "ascend-int16" ("ascend") int16 [rows, ceil(cols/2)]; "deepgemm" int32
    stored [ceil(cols/4), align(rows, 4)] (MN-major); "cublas-128x4" uint8 [align(rows, 128), align(cols, 4)] in
    128x4 tiles; "row-major" uint8 as given. Padding is zero bytes."""
    if isinstance(codes, QuantizedTensor):
        codes = codes.scales
    c, kind, _ = as_array(codes, "codes")
    if kind not in ("u8", "codes:ue8m0", "codes:e4m3"):
        raise TypeError(f"codes: one-byte scale codes (uint8) are expected, not {c.dtype}")
    data, shape, element_bytes = _core.pack_scales(c.view(np.uint8), _str(platform, "platform"))
    return data.view(_PACKED_DTYPES[element_bytes]).reshape(shape)


def unpack_scales(packed, platform: str, code_shape) -> np.ndarray:
    """The uint8 codes of shape code_shape back out of scales packed for `platform` (pack_scales' output, or the
    same tensor from a checkpoint or a kernel). ValueError naming both shapes when packed is not what the platform
    makes of such codes (and the platform it fits, when it fits another)."""
    p, _, _ = as_array(packed, "packed")
    if p.dtype.kind not in "iu" or p.dtype.itemsize not in (1, 2, 4):
        raise TypeError(f"packed: int32, int16 or uint8 packed scales are expected, not {p.dtype}")
    shape = _shape(code_shape, "code_shape")
    raw = np.ascontiguousarray(p.astype(p.dtype.newbyteorder("<"), copy=False)).reshape(-1).view(np.uint8)
    codes = _core.unpack_scales(raw, list(p.shape), p.dtype.itemsize, _str(platform, "platform"), shape)
    return codes.reshape(shape)


def scale_layouts() -> list:
    """The names pack_scales and unpack_scales take as platform."""
    return list(_core.scale_layout_names())
