"""minifloat: exact low-precision number formats for LLM inference.

The same verbs as the C++ API and the `minifloat` command:
  encode(array, fmt) / decode(codes, fmt)     one value at a time (bit-exact with ml_dtypes by default)
  quantize(array, scheme) -> QuantizedTensor  block scaling: mxfp8, mxfp6, mxfp4, nvfp4, DeepSeek fp8-1x128, ...
  fake_quantize, error_report, rotate         quantize-dequantize, its error statistics, Hadamard rotation
  formats(), schemes()                        the tables the library is built from
  act_quant, fp8_gemm, fp4_gemm, linear       DeepSeek activation quantization, block-scaled GEMMs, linear layers
  kv_encode, kv_decode, KvCache               KV-cache entries (288 / 528 / 584 bytes per token) and pages
  vllm_kv_encode, vllm_kv_write_pages, ...    vLLM's NVFP4 KV cache: one head vector per entry, its pages
  pack_scales, unpack_scales                  block scales in GEMM kernels' layouts (nvidia-int32, deepgemm, ...)
  open(path) -> Checkpoint                    a checkpoint's tensors, exact and lazy: .get(name), .info, .get_raw
  inspect, verify, dequantize, memory,        the checkpoint commands as functions, returning their reports
  convert, merge, make_example_checkpoint     (convert shard by shard; minifloat.dask: one task per shard)
Every number is computed by the C++ core (minifloat._core); this package converts arguments and arrays only.
"""
from ._checkpoint import (CheckpointError, checkpoint_shards, convert, dequantize, inspect, make_example_checkpoint,
                          memory, merge, verify)
from ._codec import decode, encode
from ._core import __version__, formats  # __version__: the core's, CMakeLists.txt's project()
from ._kv_vllm import (vllm_kv_decode, vllm_kv_encode, vllm_kv_formats, vllm_kv_page_bytes, vllm_kv_read_pages,
                       vllm_kv_write_pages)
from ._ops import (KvCache, act_quant, fp4_gemm, fp8_gemm, kv_decode, kv_encode, kv_formats, kv_page_bytes, linear,
                   pack_scales, scale_layouts, unpack_scales)
from ._open import Checkpoint, open
from ._quantize import QuantizedTensor, error_report, fake_quantize, quantize, rotate, schemes

__all__ = ["encode", "decode", "quantize", "fake_quantize", "error_report", "rotate", "formats", "schemes",
           "QuantizedTensor", "act_quant", "fp8_gemm", "fp4_gemm", "linear", "kv_encode", "kv_decode", "kv_formats",
           "kv_page_bytes", "KvCache", "pack_scales", "unpack_scales", "scale_layouts", "convert", "merge",
           "make_example_checkpoint", "checkpoint_shards", "open", "Checkpoint", "CheckpointError", "inspect", "verify",
           "dequantize", "memory", "vllm_kv_encode", "vllm_kv_decode", "vllm_kv_formats", "vllm_kv_page_bytes",
           "vllm_kv_write_pages", "vllm_kv_read_pages"]
