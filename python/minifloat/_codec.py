"""encode and decode over whole arrays: the C++ bulk casts, bit for bit the scalar codec."""
from __future__ import annotations

import numpy as np

from . import _core
from ._arrays import _STORAGE, as_array, is_torch_dtype, is_torch_tensor, ml_dtype, to_torch, torch_dtype

_FORMATS = {f["name"]: f for f in _core.formats()}


def format_info(fmt, arg: str = "fmt") -> dict:
    """The formats() entry of `fmt`; TypeError / ValueError naming the argument otherwise."""
    if not isinstance(fmt, str):
        raise TypeError(f"{arg}: a format name (str) is expected, not {type(fmt).__name__}")
    if fmt not in _FORMATS:
        raise ValueError(f"{arg}: unknown format '{fmt}' (known: {', '.join(_FORMATS)})")
    return _FORMATS[fmt]


def _check_out(out, dtypes, shape, what: str) -> np.ndarray:
    """`out` as a numpy array to write into: TypeError / ValueError naming the argument unless it is a writeable,
    C-contiguous numpy array of one of `dtypes` and of `shape`."""
    if not isinstance(out, np.ndarray):
        raise TypeError(f"out: a numpy array is expected, not {type(out).__name__}")
    if out.dtype not in [np.dtype(d) for d in dtypes]:
        names = " or ".join(str(np.dtype(d)) for d in dtypes)
        raise TypeError(f"out: dtype {out.dtype} given, {what} needs {names}")
    if out.shape != tuple(shape):
        raise ValueError(f"out: shape {out.shape} given, {what} needs {tuple(shape)}")
    if not out.flags.c_contiguous:
        raise ValueError("out: a C-contiguous array is expected")
    if not out.flags.writeable:
        raise ValueError("out: the array is read-only")
    return out


def _packed_bits(info: dict, fmt: str) -> int:
    """The code width of `fmt` when packed=True: ValueError unless FP4 or FP6."""
    if info["bits"] not in (4, 6):
        raise ValueError(f"packed: only 4- and 6-bit formats (FP4, FP6) pack; {fmt} has {info['bits']}-bit codes")
    return info["bits"]


def packed_shape(shape, bits: int) -> tuple:
    """The shape of packed codes of values shaped `shape`: rows packed along the last dimension where each row ends
    on a byte (FP4: an even last dimension, as torch.float4_e2m1fn_x2; FP6: a multiple of 4), else flat."""
    shape = tuple(shape)
    if shape and shape[-1] * bits % 8 == 0:
        return shape[:-1] + (shape[-1] * bits // 8,)
    return (_core.packed_size(int(np.prod(shape)), bits),)


def encode(array, fmt: str, overflow: str = "default", rounding: str = "nearest_even", seed=None, out=None,
           packed: bool = False):
    """Encode every value of `array` into `fmt` codes.

    array: float32, float64 (rounded once, directly), float16 or bfloat16 (numpy, ml_dtypes or torch), or integers.
    overflow: "default" (what the format does: Inf, NaN or saturation, as ml_dtypes), "saturate" (+-max finite),
    "clamp" (saturate at both ends: below an unsigned format's smallest value gives code 0) or "nan_outside_range"
    (NaN for a value outside [lowest, max], checked before rounding); clamp / nan_outside_range are ONNX Cast's
    saturate=1 / 0 for ue8m0 (docs/encoding.md).
    rounding: "nearest_even", "toward_zero", "stochastic" (random bits of element i, in row-major order, from
    `seed`, default 0, exactly as `minifloat encode --seed`), "away_from_zero" (the magnitude rounded up; ONNX
    round_mode "up") or "nearest_away" (ties away from zero; ONNX "nearest").
    Returns the codes in the smallest unsigned type that holds them (uint8, uint16 for bf16/f16, uint32 for f32),
    shaped like `array`; a torch input gives a torch tensor, in torch's own dtype where torch has the format
    (float8_e4m3fn, float8_e5m2, float8_e8m0fnu, float8_e4m3fnuz, float8_e5m2fnuz, bfloat16, float16; e2m1 stays
    uint8, one code per element:
    decode(codes, "e2m1", dtype=torch.float4_e2m1fn_x2) packs them).
    out: a numpy array to write the codes into and return, instead of a new one: C-contiguous, shaped like `array`,
    of the codes' dtype (or the format's own ml_dtypes dtype, e.g. ml_dtypes.float8_e4m3fn); reusing one buffer
    across calls saves the allocation.
    packed: FP4 / FP6 codes packed (uint8, minifloat's packing, docs/spec.md#packing): e2m1 two per byte, element 2i in
    the low nibble (OCP MX, torch.float4_e2m1fn_x2); 6-bit codes four per 3 bytes. Shaped packed_shape(array.shape):
    along the last dimension where each row ends on a byte, else flat (a final partial byte or group padded with
    zero bits). A torch input gives a uint8 tensor (torch.float4_e2m1fn_x2 for e2m1 rows); out= must be uint8 of
    that shape.
    """
    info = format_info(fmt)
    if not isinstance(overflow, str):
        raise TypeError(f"overflow: a str is expected, not {type(overflow).__name__}")
    if not isinstance(rounding, str):
        raise TypeError(f"rounding: a str is expected, not {type(rounding).__name__}")
    if seed is not None and rounding != "stochastic":
        raise ValueError("seed: only used with rounding='stochastic'")
    if seed is None:
        seed = 0
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or not 0 <= int(seed) < 2**64:
        raise ValueError(f"seed: an integer in [0, 2^64) is expected, not {seed!r}")
    a, kind, from_torch = as_array(array, "array")
    if kind.startswith("codes:") or kind in ("u8",):
        raise TypeError(f"array: {'codes of ' + kind[6:] if kind.startswith('codes:') else 'uint8'} given; "
                        "encode takes values (decode takes codes)")
    if kind in ("int", "u16", "u32"):
        a, kind = a.astype(np.float64), "f64"
    if not isinstance(packed, bool):
        raise TypeError(f"packed: a bool is expected, not {type(packed).__name__}")
    if packed:
        return _encode_packed(a, kind, from_torch, fmt, info, overflow, rounding, int(seed), out)
    storage = _STORAGE[info["storage_bytes"]]
    if out is not None:
        own = ml_dtype(fmt)
        given = _check_out(out, [storage] + ([own] if own is not None and own.itemsize == np.dtype(storage).itemsize
                                             else []), a.shape, f"encode into {fmt}")
        _core.encode(a, kind, given.view(storage), fmt, overflow, rounding, int(seed))
        return given
    out = np.empty(a.shape, dtype=storage)
    _core.encode(a, kind, out, fmt, overflow, rounding, int(seed))
    if from_torch:
        td = torch_dtype(fmt)
        t = to_torch(out.view({1: np.uint8, 2: np.int16, 4: np.int32}[out.itemsize]))
        return t.view(td) if td is not None and fmt != "e2m1" else t
    return out


def _encode_packed(a, kind, from_torch, fmt, info, overflow, rounding, seed, out):
    bits = _packed_bits(info, fmt)
    shape = packed_shape(a.shape, bits)
    target = np.empty(shape, dtype=np.uint8) if out is None else _check_out(out, [np.uint8], shape,
                                                                            f"packed {fmt} codes")
    if kind == "f32":
        _core.encode_packed(a, target, fmt, overflow, rounding, seed)
    else:  # f64, bf16, f16: their codes as encode gives them, then the same packing
        codes = np.empty(a.shape, dtype=np.uint8)
        _core.encode(a, kind, codes, fmt, overflow, rounding, seed)
        _core.pack(codes, bits, target)
    if from_torch and out is None:
        t = to_torch(target)
        return t.view(torch_dtype(fmt)) if fmt == "e2m1" and len(shape) == a.ndim and torch_dtype(fmt) else t
    return target


def _codes_of(codes, fmt: str, info: dict) -> np.ndarray:
    """Codes of `fmt` as a numpy unsigned array, range-checked."""
    a, kind, _ = as_array(codes, "codes")
    if kind.startswith("codes:"):
        if kind[6:] != fmt:
            raise ValueError(f"codes: an array of {kind[6:]} codes given for format {fmt}")
        return a
    if kind == fmt and kind in ("bf16", "f16"):  # an array of the format itself: its bits are the codes
        return a
    if kind in ("f32", "f64", "f16", "bf16"):
        raise TypeError(f"codes: dtype {kind} holds values, not codes (encode turns values into codes)")
    bits = info["bits"]
    # Only where the dtype can hold more than a code (a uint16 array always holds bf16 codes), and cheaply first.
    if a.size and (kind == "int" or np.iinfo(a.dtype).max >= (1 << bits)) and (
            a.max() >= (1 << bits) or (kind == "int" and a.min() < 0)):
        bad = np.flatnonzero((a < 0) | (a >= (1 << bits)))
        if bad.size:
            i = int(bad[0])
            raise ValueError(f"codes: element {i} is {a.reshape(-1)[i]}, not a code of {fmt} (0 .. {(1 << bits) - 1})")
    if kind == "int":
        a = a.astype(_STORAGE[info["storage_bytes"]])
    return a


def _value_dtypes() -> dict:
    """The dtypes decode writes values into, by the name _core.decode takes."""
    dtypes = {np.dtype(np.float32): "f32", np.dtype(np.float64): "f64", np.dtype(np.float16): "f16"}
    bf16 = ml_dtype("bf16")
    if bf16 is not None:
        dtypes[bf16] = "bf16"
    return dtypes


def decode(codes, fmt: str, dtype=np.float32, out=None, packed: bool = False, count=None):
    """The values of `fmt` codes.

    codes: unsigned (or non-negative) integers below 2^bits, or an ml_dtypes / torch array of the format itself.
    dtype: numpy.float32 or numpy.float64 (or torch.float32 / torch.float64) for the values exactly; numpy.float16 or
    ml_dtypes.bfloat16 for them rounded to nearest even (exact wherever they fit, as ml_dtypes' astype); or the
    format's own dtype (ml_dtypes.float8_e4m3fn, torch.float8_e4m3fn, ...), which returns the codes as a view in that
    dtype, no copy; torch.float4_e2m1fn_x2 packs e2m1 codes two per byte (element 2i in the low nibble), along the
    last dimension.
    out: a numpy array of `dtype` (C-contiguous, shaped like `codes`) to write the values into and return, instead of
    a new one.
    packed: `codes` are packed FP4 / FP6 bytes (uint8, or torch.float4_e2m1fn_x2), as encode(..., packed=True) gives
    them. count: how many values they hold, returned flat; by default each row's bytes along the last dimension
    (e2m1: two values per byte; 6-bit: four per 3 bytes, so the last dimension must be a multiple of 3).
    """
    info = format_info(fmt)
    if not isinstance(packed, bool):
        raise TypeError(f"packed: a bool is expected, not {type(packed).__name__}")
    if packed:
        return _decode_packed(codes, fmt, info, dtype, out, count)
    if count is not None:
        raise ValueError("count: only with packed=True")
    if is_torch_tensor(codes) and fmt == "e2m1" and codes.dtype == torch_dtype("e2m1"):
        raise ValueError("codes: torch.float4_e2m1fn_x2 holds two e2m1 codes per byte: pass packed=True")
    a = _codes_of(codes, fmt, info)
    if info["bits"] <= 8 and a.dtype != np.uint8:  # range-checked: the bulk casts read codes in their own storage
        a = a.astype(np.uint8)
    if is_torch_dtype(dtype):
        if out is not None:
            raise TypeError("out: only with a numpy dtype (a torch dtype returns a new tensor)")
        return _decode_torch(a, fmt, info, dtype)
    try:
        dt = np.dtype(dtype)
    except TypeError:
        raise TypeError(f"dtype: {dtype!r} is not a dtype") from None
    own = ml_dtype(fmt)
    if own is not None and dt == own:
        view = a.astype(_STORAGE[dt.itemsize], copy=False).view(dt)
        if out is None:
            return view
        _check_out(out, [dt], a.shape, f"decode of {fmt}")[...] = view
        return out
    into = _value_dtypes().get(dt)
    if into is None:
        raise TypeError(f"dtype: {dt} is neither float32, float64, float16, bfloat16 nor {fmt}'s own dtype ({own})")
    target = np.empty(a.shape, dtype=dt) if out is None else _check_out(out, [dt], a.shape, f"decode into {dt}")
    _core.decode(a, target.view(np.uint16) if into in ("bf16", "f16") else target, fmt, into)
    return target


def _decode_packed(codes, fmt: str, info: dict, dtype, out, count):
    bits = _packed_bits(info, fmt)
    a, kind, _ = as_array(codes, "codes")
    if kind not in ("u8", "codes:e2m1") or (kind == "codes:e2m1" and fmt != "e2m1"):
        raise TypeError(f"codes: packed {fmt} codes are uint8 bytes, not {kind}")
    if count is None:
        if a.ndim == 0 or a.shape[-1] * 8 % bits:
            raise ValueError(f"codes: shape {a.shape} does not hold whole rows of {bits}-bit codes; pass count=")
        shape = a.shape[:-1] + (a.shape[-1] * 8 // bits,)
    else:
        if isinstance(count, bool) or not isinstance(count, (int, np.integer)) or count < 0:
            raise ValueError(f"count: a non-negative integer is expected, not {count!r}")
        shape = (int(count),)
        if a.size != _core.packed_size(int(count), bits):
            raise ValueError(f"codes: {a.size} bytes given, {count} {fmt} codes pack into "
                             f"{_core.packed_size(int(count), bits)}")
    n = int(np.prod(shape))
    try:
        f32 = not is_torch_dtype(dtype) and np.dtype(dtype) == np.float32
    except TypeError:
        raise TypeError(f"dtype: {dtype!r} is not a dtype") from None
    if not f32:  # unpacked by the library, then decode as usual
        return decode(unpack(a, bits, n).reshape(shape), fmt, dtype=dtype, out=out)
    target = np.empty(shape, dtype=np.float32) if out is None else _check_out(out, [np.float32], shape,
                                                                              f"decode of packed {fmt}")
    _core.decode_packed(a, target, fmt)
    return target


def _decode_torch(a: np.ndarray, fmt: str, info: dict, dtype):
    import torch

    if dtype in (torch.float32, torch.float64):
        return to_torch(decode(a, fmt, np.float32 if dtype == torch.float32 else np.float64))
    own = torch_dtype(fmt)
    if own is None or dtype != own:
        raise TypeError(f"dtype: {dtype} is neither torch.float32, torch.float64 nor {fmt}'s own torch dtype ({own})")
    if fmt == "e2m1":
        return to_torch(pack_e2m1(a)).view(dtype)
    storage = {1: np.uint8, 2: np.int16, 4: np.int32}[info["storage_bytes"]]
    return to_torch(a.astype(_STORAGE[info["storage_bytes"]], copy=False).view(storage)).view(dtype)


def pack_e2m1(codes: np.ndarray) -> np.ndarray:
    """e2m1 codes (one per byte) packed two per byte along the last dimension, element 2i in the low nibble."""
    codes = np.ascontiguousarray(codes, dtype=np.uint8)
    if codes.ndim == 0 or codes.shape[-1] % 2:
        raise ValueError(f"codes: packing e2m1 two per byte needs an even last dimension, not shape {codes.shape}")
    out = np.empty(codes.shape[:-1] + (codes.shape[-1] // 2,), dtype=np.uint8)
    _core.pack(codes, 4, out)
    return out


def unpack(packed: np.ndarray, bits: int, count: int) -> np.ndarray:
    """`count` codes of `bits` bits out of packed bytes (the inverse of the library's packing)."""
    out = np.empty(count, dtype=np.uint8)
    _core.unpack(np.ascontiguousarray(packed, dtype=np.uint8), bits, out)
    return out
