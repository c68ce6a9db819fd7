"""vLLM's NVFP4 KV cache (kv_cache_dtype "nvfp4" / "nvfp4_4over6"; minifloat/kv_vllm.h, docs/kv.md#vllm-nvfp4):
entries of one KV head's vector of head_dim values with a per-tensor scale (vLLM's k_scale / v_scale), and vLLM's
[K_data | K_scale | V_data | V_scale] pages in a caller's uint8 buffer. Every number comes from minifloat._core."""
from __future__ import annotations

import numpy as np

from . import _core
from ._arrays import as_array
from ._ops import _slots, _str
from ._quantize import _input, _int_or_none


def _scale(value, arg: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)):
        raise TypeError(f"{arg}: a float is expected, not {type(value).__name__}")
    return float(value)  # the library names a scale that is 0, negative, NaN or Inf


def vllm_kv_encode(values, format: str = "vllm-nvfp4", scale: float = 1.0) -> np.ndarray:
    """Entries of head vectors: values [..., head_dim] (float32; bfloat16 / float16 widened exactly; head_dim a
    multiple of 16) -> uint8 [..., head_dim / 2 + head_dim / 16]: e2m1 codes then ue4m3 block scales, quantized with
    `scale` as the tensor scale ("vllm-nvfp4": scheme nvfp4, "vllm-nvfp4-4over6": nvfp4-4over6)."""
    a, _, _ = _input(values, "values", widen=True)
    head_dim = int(a.shape[-1])
    entry = _core.vllm_kv_entry_bytes(head_dim)
    out = _core.vllm_kv_encode(a, _str(format, "format"), head_dim, _scale(scale, "scale"))
    return out.reshape(a.shape[:-1] + (entry,))


def vllm_kv_decode(entries, head_dim: int, format: str = "vllm-nvfp4", scale: float = 1.0) -> np.ndarray:
    """The values of entries: uint8 [..., head_dim / 2 + head_dim / 16] -> float32 [..., head_dim]; a 1-D array is
    a run of entries back to back."""
    head_dim = _int_or_none(head_dim, "head_dim")
    entry = _core.vllm_kv_entry_bytes(head_dim)
    e, kind, _ = as_array(entries, "entries")
    if kind != "u8":
        raise TypeError(f"entries: uint8 bytes are expected, not {e.dtype}")
    if e.ndim == 0:
        raise ValueError("entries: an array of bytes is expected, not a scalar")
    if e.ndim > 1 and e.shape[-1] != entry:
        raise ValueError(f"entries: shape {tuple(e.shape)}: the last dimension must be {entry} bytes (head_dim "
                         f"{head_dim})")
    lead = (e.size // entry,) if e.ndim == 1 else tuple(e.shape[:-1])
    values = _core.vllm_kv_decode(e, _str(format, "format"), head_dim, _scale(scale, "scale"))
    return values.reshape(lead + (head_dim,))


def vllm_kv_page_bytes(head_dim: int, num_kv_heads: int, block_size: int, swizzle_v_scales: bool = True) -> int:
    """Bytes of one page (one layer's block of block_size token slots): 2 * num_kv_heads * block_size * (head_dim / 2
    + head_dim / 16). swizzle_v_scales: V scales in SM100's trtllm-gen order (head_dim a multiple of 64, block_size
    of 4); False: linear, as on SM120."""
    return _core.vllm_kv_page_bytes(_int_or_none(head_dim, "head_dim"), _int_or_none(num_kv_heads, "num_kv_heads"),
                                    _int_or_none(block_size, "block_size"), bool(swizzle_v_scales))


def _pages(pages) -> np.ndarray:
    if not isinstance(pages, np.ndarray) or pages.dtype != np.uint8 or not pages.flags.c_contiguous:
        raise TypeError("pages: a C-contiguous numpy uint8 array is expected (written in place)")
    if not pages.flags.writeable:
        raise ValueError("pages: the array is read-only")
    return pages.reshape(-1)


def vllm_kv_write_pages(pages, key, value, slots, k_scale: float = 1.0, v_scale: float = 1.0,
                        format: str = "vllm-nvfp4", block_size: int = 16, swizzle_v_scales: bool = True) -> None:
    """reshape_and_cache_flash: key and value [tokens, num_kv_heads, head_dim] quantized into `pages` (a uint8
    buffer of whole pages, written in place) at slots[t] (page slots[t] // block_size, token slots[t] % block_size).
    Other slots are left as they are."""
    p = _pages(pages)
    k, _, _ = _input(key, "key", widen=True)
    v, _, _ = _input(value, "value", widen=True)
    if k.ndim != 3 or v.shape != k.shape:
        raise ValueError(f"key {tuple(k.shape)} and value {tuple(v.shape)}: the same [tokens, num_kv_heads, "
                         "head_dim] shape is expected")
    s = _slots(slots)
    if s.size != k.shape[0]:
        raise ValueError(f"key {tuple(k.shape)} and slots {tuple(s.shape)}: one slot per token is expected")
    _core.vllm_kv_write_pages(p, k, v, s, _scale(k_scale, "k_scale"), _scale(v_scale, "v_scale"),
                              _str(format, "format"), int(k.shape[2]), int(k.shape[1]),
                              _int_or_none(block_size, "block_size"), bool(swizzle_v_scales))


def vllm_kv_read_pages(pages, slots, num_kv_heads: int, head_dim: int, k_scale: float = 1.0, v_scale: float = 1.0,
                       format: str = "vllm-nvfp4", block_size: int = 16,
                       swizzle_v_scales: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """The tokens at slots, decoded: (key, value), each float32 [len(slots), num_kv_heads, head_dim]."""
    p, kind, _ = as_array(pages, "pages")
    if kind != "u8":
        raise TypeError(f"pages: uint8 bytes are expected, not {p.dtype}")
    s = _slots(slots)
    heads, dim = _int_or_none(num_kv_heads, "num_kv_heads"), _int_or_none(head_dim, "head_dim")
    k, v = _core.vllm_kv_read_pages(p.reshape(-1), s, _scale(k_scale, "k_scale"), _scale(v_scale, "v_scale"),
                                    _str(format, "format"), dim, heads, _int_or_none(block_size, "block_size"),
                                    bool(swizzle_v_scales))
    shape = (s.size, heads, dim)
    return k.reshape(shape), v.reshape(shape)


def vllm_kv_formats() -> list:
    """The names vllm_kv_encode and friends take as format."""
    return list(_core.vllm_kv_format_names())


__all__ = ["vllm_kv_encode", "vllm_kv_decode", "vllm_kv_page_bytes", "vllm_kv_write_pages", "vllm_kv_read_pages",
           "vllm_kv_formats"]
