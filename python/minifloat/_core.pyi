"""Type stubs of minifloat._core, the private extension (use the minifloat package: its functions check arguments
and name them in errors). Arrays are C-contiguous CPU numpy arrays; outputs are written into `out`."""
from typing import Any, Callable, Optional

import numpy as np
import numpy.typing as npt

__version__: str
"""The core's version, from minifloat/version.h (the top CMakeLists.txt's project())."""

def formats() -> list[dict[str, Any]]:
    """The library's format table: name, also, bits, sign/exponent/mantissa bits, bias, specials, limits, codes."""
def scheme_names() -> list[str]: ...
def scheme(name: str) -> dict[str, Any]:
    """One scheme's data: name, element, element_bits, block, scale_format, rule, profile, tensor_scale,
    bits_per_value. ValueError for an unknown name."""

def encode(x: npt.NDArray[Any], input: str, out: npt.NDArray[np.unsignedinteger], fmt: str, overflow: str,
           rounding: str, seed: int) -> None:
    """out[i] = encode(fmt, x[i]); input is "f32", "f64", or "bf16"/"f16" (x holds uint16 bits). GIL released."""
def decode(codes: npt.NDArray[np.unsignedinteger], out: npt.NDArray[Any], fmt: str, into: str) -> None:
    """out[i] = decode(fmt, codes[i]) as float32 or float64 (into "f32", "f64"), or rounded to nearest even into bf16
    or f16 codes (into "bf16", "f16"; out uint16). GIL released."""
def encode_packed(x: npt.NDArray[np.float32], out: npt.NDArray[np.uint8], fmt: str, overflow: str, rounding: str,
                  seed: int) -> None:
    """out = the packed codes of float32 x (FP4 / FP6, pack.h's packing; out holds packed_size bytes). GIL released."""
def decode_packed(codes: npt.NDArray[np.uint8], out: npt.NDArray[np.float32], fmt: str) -> None:
    """out[i] = decode(fmt, code i of the packed bytes). GIL released."""
def packed_size(count: int, bits: int) -> int: ...
def pack(codes: npt.NDArray[np.uint8], bits: int, out: npt.NDArray[np.uint8]) -> None: ...
def unpack(packed: npt.NDArray[np.uint8], bits: int, out: npt.NDArray[np.uint8]) -> None: ...

class Options:
    """mf::QuantizeOptions: layout (packed, unpacked, ggml), rotate, threads, pad, nonfinite (nan, error)."""
    def __init__(self, layout: str, rotate: int, threads: int, pad: bool, nonfinite: str) -> None: ...

class QuantizedTensor:
    """mf::QuantizedTensor; codes and scales are numpy views of its buffers."""
    @property
    def shape(self) -> list[int]: ...
    @property
    def scheme(self) -> str: ...
    @property
    def scale_format(self) -> str: ...
    @property
    def element(self) -> str: ...
    @property
    def element_bits(self) -> int: ...
    @property
    def rule(self) -> str: ...
    @property
    def profile(self) -> str: ...
    @property
    def has_tensor_scale(self) -> bool: ...
    @property
    def layout(self) -> str: ...
    @property
    def rotate(self) -> int: ...
    @property
    def tensor_scale(self) -> float: ...
    @property
    def scale_shape(self) -> list[int]: ...
    @property
    def block(self) -> tuple[int, int]: ...
    @property
    def nbytes(self) -> int: ...
    @property
    def codes(self) -> npt.NDArray[np.uint8]: ...
    @property
    def scales(self) -> npt.NDArray[np.uint8]: ...
    def scale_codes(self, out: npt.NDArray[np.uint32]) -> None: ...
    def dequantize(self, out: npt.NDArray[Any], threads: int) -> None:
        """Into float32 out, or uint16 out for bfloat16 bits (RNE). GIL released."""
    def error_report(self, array: npt.NDArray[np.float32], worst_blocks: int) -> dict[str, Any]: ...

def quantize(x: npt.NDArray[Any], input: str, scheme: str, rule: str, profile: str, options: Options) -> QuantizedTensor:
    """input "f32", or "bf16"/"f16" with uint16 bits; rule/profile "" for the scheme's own. GIL released."""
def fake_quantize(x: npt.NDArray[np.float32], out: npt.NDArray[np.float32], scheme: str, rule: str, profile: str,
                  options: Options) -> None: ...
def rotate(x: npt.NDArray[np.float32], n: int) -> None:
    """In place; ValueError unless n is a power of two up to 4096 dividing the size."""

# ops.cc: act_quant, GEMMs, linear (minifloat/gemm.h); KV entries (kv.h); packed block scales (scale_layout.h).
# GEMM outputs: float32 out, or uint16 out for bfloat16 bits (RNE), holding exactly [..., N] values. Operands that do
# not fit raise ValueError naming both shapes. The GIL is released while the core works.
def act_quant(x: npt.NDArray[np.float32], scale: str, threads: int) -> QuantizedTensor:
    """mf::act_quant: x [..., K] (K a multiple of 128), scale "ue8m0" or "f32"."""
def fp8_gemm(a: QuantizedTensor, w: QuantizedTensor, out: npt.NDArray[Any], accumulate: bool, threads: int) -> None: ...
def fp4_gemm(a: QuantizedTensor, w: QuantizedTensor, out: npt.NDArray[Any], accumulate: bool, threads: int) -> None: ...
def linear_quantized(x: npt.NDArray[np.float32], w: QuantizedTensor, out: npt.NDArray[Any], accumulate: bool,
                     threads: int, weight_only: bool = False) -> None: ...
def linear_plain(x: npt.NDArray[np.float32], w: npt.NDArray[Any], out: npt.NDArray[Any], accumulate: bool,
                 threads: int) -> None:
    """w [N, K]: float32 values or uint16 bfloat16 bits."""

def kv_format_names() -> list[str]: ...
def kv_format(name: str) -> dict[str, Any]:
    """name, scheme, entry_bytes, quantized_values, data_bytes, scale_bytes, scale_count, scale_footer, page_align."""
def kv_page_bytes(format: str, page_size: int) -> int: ...
def kv_encode(values: npt.NDArray[np.float32], format: str) -> npt.NDArray[np.uint8]:
    """tokens x 512 values -> the entries back to back (flat)."""
def kv_decode(entries: npt.NDArray[np.uint8], format: str) -> npt.NDArray[np.float32]:
    """A whole number of entries -> tokens x 512 values (flat)."""

class KvCache:
    """mf::KvCache: a zero-filled paged buffer."""
    def __init__(self, format: str, page_size: int, pages: int) -> None: ...
    @property
    def format(self) -> str: ...
    @property
    def page_size(self) -> int: ...
    @property
    def pages(self) -> int: ...
    @property
    def slots(self) -> int: ...
    @property
    def bytes(self) -> npt.NDArray[np.uint8]:
        """The buffer, a read-only view."""
    def page(self, p: int) -> npt.NDArray[np.uint8]: ...
    def write(self, values: npt.NDArray[np.float32], slots: npt.NDArray[np.int64]) -> None: ...
    def read(self, slots: npt.NDArray[np.int64]) -> npt.NDArray[np.float32]: ...

# kv_vllm.cc: vLLM's NVFP4 KV cache (minifloat/kv_vllm.h). Scales are per tensor, finite and > 0 (ValueError naming
# k_scale / v_scale / scale otherwise); head_dim a multiple of 16.
def vllm_kv_format_names() -> list[str]: ...
def vllm_kv_entry_bytes(head_dim: int) -> int: ...
def vllm_kv_page_bytes(head_dim: int, num_kv_heads: int, block_size: int, swizzle_v_scales: bool) -> int: ...
def vllm_kv_encode(values: npt.NDArray[np.float32], format: str, head_dim: int, scale: float) -> npt.NDArray[np.uint8]:
    """n x head_dim values -> the entries back to back (flat)."""
def vllm_kv_decode(entries: npt.NDArray[np.uint8], format: str, head_dim: int, scale: float) -> npt.NDArray[np.float32]:
    """A whole number of entries -> n x head_dim values (flat)."""
def vllm_kv_write_pages(pages: npt.NDArray[np.uint8], key: npt.NDArray[np.float32], value: npt.NDArray[np.float32],
                        slots: npt.NDArray[np.int64], k_scale: float, v_scale: float, format: str, head_dim: int,
                        num_kv_heads: int, block_size: int, swizzle_v_scales: bool) -> None:
    """key, value: tokens x num_kv_heads x head_dim (flat); pages written in place."""
def vllm_kv_read_pages(pages: npt.NDArray[np.uint8], slots: npt.NDArray[np.int64], k_scale: float, v_scale: float,
                       format: str, head_dim: int, num_kv_heads: int, block_size: int,
                       swizzle_v_scales: bool) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]:
    """(key, value), each len(slots) x num_kv_heads x head_dim (flat)."""

def scale_layout_names() -> list[str]: ...
def packed_scale_shape(platform: str, code_shape: list[int]) -> list[int]: ...
def pack_scales(codes: npt.NDArray[np.uint8], platform: str) -> tuple[npt.NDArray[np.uint8], list[int], int]:
    """(little-endian bytes, stored shape, element bytes 1/2/4)."""
def unpack_scales(packed: npt.NDArray[np.uint8], packed_shape: list[int], element_bytes: int, platform: str,
                  code_shape: list[int]) -> npt.NDArray[np.uint8]:
    """packed: the stored tensor's bytes; ValueError naming both shapes unless they fit the platform."""

class CheckpointError(RuntimeError):
    """A checkpoint minifloat refuses or cannot read: .file and .tensor name where (None when not known)."""
    file: str | None
    tensor: str | None

Progress = Optional[Callable[[int, int], None]]

def convert(input: str, output: str, recipe: str, format: str, job_index: int, job_count: int, resume: bool,
            write_index: bool, threads: int, lossless: bool, allow_inexact: bool, progress: Progress) -> dict: ...
def convert_gguf(input: str, output: str, recipe: str, threads: int, no_tokenizer: bool, fp8_as_q8: bool,
                 keep_quantized: bool, progress: Progress) -> dict: ...
def dequantize(input: str, output: str, bf16: bool, threads: int, job_index: int, job_count: int, resume: bool,
               passthrough: list[str], progress: Progress) -> dict: ...
def inspect(path: str, stats: bool, rules: str, threads: int, headers_only: bool) -> str:
    """`minifloat inspect --json`'s text."""
def verify(path: str, rules: str, fp4_qat: bool, threads: int, headers_only: bool) -> dict: ...
def memory(config: str, recipe: str) -> dict: ...

class CheckpointReader:
    """A checkpoint's logical tensors (minifloat/checkpoint_reader.h); minifloat.open wraps it."""
    def __init__(self, path: str) -> None: ...
    @property
    def is_gguf(self) -> bool: ...
    def names(self) -> list[str]: ...
    def info(self, name: str) -> dict: ...
    def metadata(self) -> dict[str, str]: ...
    def values(self, name: str, dtype: str, threads: int) -> npt.NDArray[np.float32] | npt.NDArray[np.uint16]:
        """float32 values, or the bfloat16 / float16 bits rounded from them."""
    def stored(self, name: str) -> tuple[str, npt.NDArray[np.uint8]]:
        """A kept tensor's (safetensors dtype name, bytes)."""
    def quantized(self, name: str) -> QuantizedTensor: ...

def checkpoint_shards(path: str) -> list[str]: ...
def merge_index(input: str, output: str, recipe: str, format: str) -> None: ...
def recipe_targets(recipe: str, names: list[str]) -> tuple[str, str, list[str]]:
    """(recipe name, profile, the target of each name as a floating 2-D tensor: a scheme, bf16, f32 or keep)."""
def gguf_tensors(path: str) -> list[tuple[str, npt.NDArray[np.float32]]]:
    """Every tensor of a GGUF file dequantized (numpy shape order); RuntimeError naming one it cannot decode."""
def make_example_checkpoint(dir: str, shards: int, arch: str) -> None: ...
