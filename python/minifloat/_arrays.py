"""Arrays in and out: numpy, ml_dtypes and torch, without copies where the memory allows.

Nothing here computes a number: values are only viewed, checked or handed to minifloat._core.
"""
from __future__ import annotations

import numpy as np

try:  # optional: named dtypes for the narrow formats
    import ml_dtypes
except ImportError:  # pragma: no cover - exercised only without ml_dtypes
    ml_dtypes = None

# ml_dtypes' (and numpy's) dtype for each format that has one: its codes, one per element, in the same bits.
_ML_DTYPE_NAMES = {
    "f32": "float32", "f16": "float16", "bf16": "bfloat16", "e4m3": "float8_e4m3fn", "e5m2": "float8_e5m2",
    "e3m2": "float6_e3m2fn", "e2m3": "float6_e2m3fn", "e2m1": "float4_e2m1fn", "ue8m0": "float8_e8m0fnu",
    "e4m3fnuz": "float8_e4m3fnuz", "e5m2fnuz": "float8_e5m2fnuz", "e4m3b11fnuz": "float8_e4m3b11fnuz",
    "e3m4": "float8_e3m4", "e4m3ieee": "float8_e4m3",  # ue5m3: ml_dtypes has no float8_e5m3fnu (0.6.0)
}
# torch's dtype names; e2m1 is torch.float4_e2m1fn_x2, two codes per byte (element 2i in the low nibble).
_TORCH_DTYPE_NAMES = {
    "f32": "float32", "f16": "float16", "bf16": "bfloat16", "e4m3": "float8_e4m3fn", "e5m2": "float8_e5m2",
    "ue8m0": "float8_e8m0fnu", "e2m1": "float4_e2m1fn_x2", "e4m3fnuz": "float8_e4m3fnuz",
    "e5m2fnuz": "float8_e5m2fnuz",
}
_STORAGE = {1: np.uint8, 2: np.uint16, 4: np.uint32}


def ml_dtype(fmt: str):
    """The numpy / ml_dtypes dtype holding `fmt`'s codes, or None."""
    name = _ML_DTYPE_NAMES.get(fmt)
    if name is None:
        return None
    if name in ("float32", "float16"):
        return np.dtype(name)
    if ml_dtypes is None or not hasattr(ml_dtypes, name):  # an older ml_dtypes without the dtype
        return None
    return np.dtype(getattr(ml_dtypes, name))


def is_torch_tensor(x) -> bool:
    return type(x).__module__.startswith("torch") and hasattr(x, "__dlpack__") and hasattr(x, "dtype")


def is_torch_dtype(d) -> bool:
    return type(d).__module__.startswith("torch") and type(d).__name__ == "dtype"


def torch_dtype(fmt: str):
    """torch's dtype for `fmt`, or None (torch missing, or no such dtype)."""
    import torch

    name = _TORCH_DTYPE_NAMES.get(fmt)
    return getattr(torch, name, None) if name else None


def torch_fmt(dtype):
    """The format whose codes a torch dtype holds, or None."""
    for fmt, name in _TORCH_DTYPE_NAMES.items():
        if str(dtype) == "torch." + name:
            return fmt
    return None


def from_torch(t, arg: str):
    """A CPU torch tensor as (numpy array, kind): float32/float64/float16 through DLPack; bfloat16 as its uint16
    bits ("bf16"); float8/float4 dtypes as their uint8 codes (kind "codes:<fmt>")."""
    import torch

    if t.device.type != "cpu":
        raise TypeError(f"{arg}: a torch tensor on {t.device} (move it to the CPU first)")
    t = t.detach().contiguous()
    if t.dtype in (torch.float32, torch.float64, torch.uint8):
        a = np.from_dlpack(t)
        return a, {np.float32: "f32", np.float64: "f64", np.uint8: "u8"}[a.dtype.type]
    if t.dtype == torch.float16:
        return np.from_dlpack(t).view(np.uint16), "f16"
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(np.uint16), "bf16"
    fmt = torch_fmt(t.dtype)
    if fmt is not None:
        return t.view(torch.uint8).numpy(), "codes:" + fmt
    if t.dtype in (torch.int8, torch.int16, torch.int32, torch.int64, torch.bool):
        return t.numpy(), "int"
    raise TypeError(f"{arg}: torch dtype {t.dtype} is not supported")


def _contiguous(a: np.ndarray) -> np.ndarray:
    return a if a.flags.c_contiguous else np.ascontiguousarray(a)  # (ascontiguousarray makes 0-d arrays 1-d)


def as_array(x, arg: str):
    """Any array-like as (C-contiguous numpy array, kind, came_from_torch). kind: "f32", "f64", "f16", "bf16"
    (f16 and bf16 as their uint16 bits), "int", "u8"/"u16"/"u32" (unsigned integers), or "codes:<fmt>" (an ml_dtypes/torch narrow dtype,
    viewed as its codes). Contiguous numpy and torch inputs are not copied."""
    if is_torch_tensor(x):
        a, kind = from_torch(x, arg)
        return _contiguous(a), kind, True
    try:
        a = np.asarray(x)
    except Exception as e:  # e.g. ragged lists
        raise TypeError(f"{arg}: cannot be read as an array ({e})") from None
    a = _contiguous(a)
    dt = a.dtype
    if dt == np.float32:
        return a, "f32", False
    if dt == np.float64:
        return a, "f64", False
    if dt == np.float16:
        return a.view(np.uint16), "f16", False
    for fmt, name in _ML_DTYPE_NAMES.items():
        if name == dt.name and fmt not in ("f32", "f16"):
            storage = _STORAGE[dt.itemsize]
            if fmt == "bf16":
                return a.view(storage), "bf16", False
            return a.view(storage), "codes:" + fmt, False
    if dt in (np.uint8, np.uint16, np.uint32):
        return a, {1: "u8", 2: "u16", 4: "u32"}[dt.itemsize], False
    if dt.kind in "iub":
        return a, "int", False
    raise TypeError(f"{arg}: dtype {dt} is not supported (float32, float64, float16, bfloat16, or integer codes)")


def to_torch(a: np.ndarray):
    import torch

    return torch.from_numpy(a)
