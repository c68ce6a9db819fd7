"""minifloat.open: a checkpoint's logical tensors as a read-only, lazy mapping (minifloat/checkpoint_reader.h).

The names are the ones `minifloat dequantize` writes (a quantized pair under its dequantized name: W, P.weight, X
for X_blocks), and get(name) is bit for bit the tensor dequantize writes, computed by the same C++ code, one tensor
at a time from the memory-mapped files. Nothing is computed here: arrays are only shaped and viewed.
"""
from __future__ import annotations

import builtins
import json
import os
from collections.abc import Mapping

import numpy as np

from . import _core
from ._arrays import ml_dtype, to_torch
from ._quantize import QuantizedTensor

_FLOAT_DTYPES = {"float32": "float32", "f32": "float32", "bfloat16": "bfloat16", "bf16": "bfloat16",
                 "float16": "float16", "f16": "float16"}
# Stored dtypes of the tensors kept as they are (not float, no pair), as numpy reads their little-endian bytes.
_KEPT_NUMPY = {"BOOL": "bool", "U8": "<u1", "I8": "<i1", "U16": "<u2", "I16": "<i2", "U32": "<u4", "I32": "<i4",
               "U64": "<u8", "I64": "<i8", "F64": "<f8"}


def _dtype_name(dtype) -> str:
    """'float32', 'bfloat16' or 'float16' from a name, a numpy / ml_dtypes dtype or a torch dtype."""
    if isinstance(dtype, str):
        name = _FLOAT_DTYPES.get(dtype)
    else:
        text = str(dtype).replace("torch.", "")
        try:
            text = np.dtype(dtype).name
        except TypeError:
            pass
        name = _FLOAT_DTYPES.get(text)
    if name is None:
        raise ValueError(f"dtype: expected 'float32', 'bfloat16' or 'float16', got {dtype!r}")
    return name


class Checkpoint:
    """What minifloat.open returns: a read-only mapping from tensor names to exact values, read on demand.

    keys() / iter / len / `in`: the logical tensors, in checkpoint order; ckpt[name] is get(name).
    get(name, dtype="float32"): the values; info(name): how they are stored; get_raw(name): the stored codes and
    scales. metadata: the files' metadata (safetensors __metadata__, or a GGUF file's key-value pairs as text);
    config: config.json (None when absent or for a GGUF file).
    Reads release the GIL and may run from several threads at once. Use as a context manager, or call close().
    """

    def __init__(self, path, framework="np"):
        if not isinstance(path, (str, os.PathLike)):
            raise TypeError(f"path: expected a path, got {type(path).__name__}")
        if framework not in ("np", "numpy", "pt", "torch"):
            raise ValueError(f"framework: expected 'np' or 'pt', got {framework!r}")
        self._path = os.fspath(path)
        self._framework = "pt" if framework in ("pt", "torch") else "np"
        self._reader = _core.CheckpointReader(self._path)
        self._names = list(self._reader.names())
        self._index = set(self._names)

    # ---- the mapping ----
    def keys(self):
        return list(self._names)

    def __iter__(self):
        return iter(self._names)

    def __len__(self):
        return len(self._names)

    def __contains__(self, name):
        return name in self._index

    def __getitem__(self, name):
        return self.get(name)

    def items(self):
        """(name, get(name)) one tensor at a time."""
        return ((n, self.get(n)) for n in self._names)

    # ---- what is stored ----
    @property
    def metadata(self) -> dict:
        return dict(self._open().metadata())

    @property
    def config(self):
        if self._reader is not None and self._reader.is_gguf:
            return None
        base = self._path if os.path.isdir(self._path) else os.path.dirname(self._path)
        path = os.path.join(base, "config.json")
        if not os.path.exists(path):
            return None
        with builtins.open(path, encoding="utf-8") as f:
            return json.load(f)

    def info(self, name) -> dict:
        """{name, file, dialect (a pair form such as "deepseek", "nvfp4", "scaled", "integer", ..., or "plain", or
        "gguf"), form (a pair's parts, e.g. "W + W_scale + W_scale_2"; "" otherwise), scheme (e.g. "e4m3-128x128-f32", "Q4_0"; "" for a plain tensor), stored (the stored tensors read:
        weight first, then scales and other parts), shape (the logical shape), dtype (the weight's stored dtype),
        bytes (stored bytes of every part), kept (not float: read as stored)}."""
        return self._open().info(self._name(name))

    # ---- values ----
    def get(self, name, dtype="float32", framework=None, threads=1):
        """The tensor's exact values: float32 (bit for bit what `minifloat dequantize --dtype f32` writes),
        bfloat16 (what `--dtype bf16` writes: the f32 value rounded once, nearest even) or float16 (the same rounding
        to f16). numpy (bfloat16 as ml_dtypes.bfloat16) or, with framework="pt", a torch tensor sharing the array's
        memory. A tensor that is neither float nor a quantized pair (an integer table) comes back as stored, in its
        own dtype, whatever `dtype` says, as dequantize copies it. KeyError for a name that is not a tensor;
        CheckpointError (naming file and tensor) for bytes that do not decode."""
        name = self._name(name)
        reader = self._open()
        fw = self._framework if framework is None else ("pt" if framework in ("pt", "torch") else "np")
        if reader.info(name)["kept"]:
            return self._kept(name, fw)
        which = _dtype_name(dtype)
        if isinstance(threads, bool) or not isinstance(threads, int) or threads < 0:
            raise ValueError(f"threads: expected an integer >= 0 (0: one per core), got {threads!r}")
        a = reader.values(name, which, threads)
        if which == "float32":
            return to_torch(a) if fw == "pt" else a
        if fw == "pt":
            import torch

            return to_torch(a).view(torch.bfloat16 if which == "bfloat16" else torch.float16)
        if which == "float16":
            return a.view(np.float16)
        own = ml_dtype("bf16")
        if own is None:
            raise TypeError("dtype='bfloat16' in numpy needs ml_dtypes (pip install ml_dtypes), or framework='pt'")
        return a.view(own)

    def state_dict(self, dtype="bfloat16"):
        """A read-only Mapping of torch tensors in `dtype` over this checkpoint, each read when it is looked up and
        not kept: what transformers' from_pretrained(None, config=..., state_dict=...) takes (docs/python.md)."""
        return _StateDict(self, _dtype_name(dtype))

    def get_raw(self, name):
        """What is stored: a pair of the deepseek, deepseek_v4 or nvfp4 form as a QuantizedTensor (its codes and
        block scales as stored, .codes_as(torch.float4_e2m1fn_x2 / float8_e4m3fn), .scales_as(...)); a kept tensor
        as its numpy array. CheckpointError for the other forms (integer groups, compressed-tensors' packed forms,
        GGUF blocks), whose scales are no QuantizedTensor: read their values with get()."""
        name = self._name(name)
        reader = self._open()
        if reader.info(name)["kept"]:
            return self._kept(name, "np")
        return QuantizedTensor(reader.quantized(name))

    def _kept(self, name, fw):
        dtype, raw = self._open().stored(name)
        a = raw.view(np.dtype(_KEPT_NUMPY[dtype])).reshape(self.info(name)["shape"])
        return to_torch(a) if fw == "pt" else a

    def _name(self, name):
        if name not in self._index:
            raise KeyError(name)
        return name

    def _open(self):
        if self._reader is None:
            raise ValueError(f"{self._path}: the checkpoint is closed")
        return self._reader

    # ---- lifetime ----
    def close(self):
        """Unmaps the files (arrays already returned stay valid: they own their memory)."""
        self._reader = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __repr__(self):
        state = "closed" if self._reader is None else f"{len(self._names)} tensors"
        return f"minifloat.open({self._path!r}, framework={self._framework!r}): {state}"


class _StateDict(Mapping):
    """Checkpoint.state_dict(): a Mapping whose values are read on lookup (torch), nothing cached."""

    def __init__(self, checkpoint, dtype):
        self._checkpoint, self._dtype = checkpoint, dtype

    def __getitem__(self, name):
        return self._checkpoint.get(name, dtype=self._dtype, framework="pt")

    def __iter__(self):
        return iter(self._checkpoint)

    def __len__(self):
        return len(self._checkpoint)

    def __contains__(self, name):
        return name in self._checkpoint


def open(path, framework="np"):  # noqa: A001 - the name of the thing it does, as safetensors.safe_open
    """A checkpoint (a directory, an index, a .safetensors file, or a .gguf file) as a lazy, read-only mapping of
    its logical tensors: minifloat.open(path).get(name) equals `minifloat dequantize`'s tensor bit for bit, read
    one tensor at a time from the memory-mapped files. A checkpoint dequantize refuses raises CheckpointError here
    (naming the file and tensor). framework="pt" returns torch tensors."""
    return Checkpoint(path, framework)
