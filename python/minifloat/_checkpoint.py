"""Whole checkpoints: every checkpoint command of the `minifloat` CLI as a function (minifloat/checkpoint_commands.h),
returning the structured report the CLI prints (inspect: the dict of `minifloat inspect --json`). The job-array
arguments let many processes or machines share one conversion: job i of n converts the shards whose index is i
modulo n, and one `merge` call writes the index and config.json.

Errors: a checkpoint minifloat refuses or cannot read raises CheckpointError (a RuntimeError) with .file and .tensor
naming where; a bad argument (recipe, format, rules name) raises ValueError naming the argument."""
import json
import os
import sys

from . import _core

CheckpointError = _core.CheckpointError


def _path(p, name):
    if not isinstance(p, (str, os.PathLike)):
        raise TypeError(f"{name}: expected a path, got {type(p).__name__}")
    return os.fspath(p)


def _threads(threads):
    if threads is None:
        return 0
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 0:
        raise ValueError(f"threads: expected an integer >= 0 (0: one per core), got {threads!r}")
    return threads


def _jobs(shard_index, shard_count):
    if not (isinstance(shard_count, int) and shard_count >= 1):
        raise ValueError(f"shard_count: expected an integer >= 1, got {shard_count!r}")
    if not (isinstance(shard_index, int) and 0 <= shard_index < shard_count):
        raise ValueError(f"shard_index: expected 0 <= shard_index < {shard_count}, got {shard_index!r}")


class _Tqdm:
    """A tqdm bar over input bytes, fed by the library's (done, total) calls; closed by the caller."""

    def __init__(self, desc):
        from tqdm.auto import tqdm

        self.bar = tqdm(desc=desc, unit="B", unit_scale=True, unit_divisor=1000)

    def __call__(self, done, total):
        if self.bar.total != total:
            self.bar.total = total
        self.bar.update(done - self.bar.n)

    def close(self):
        self.bar.close()


def _progress(progress, desc):
    """(callable or None, closer): progress=None / False: none; True: a tqdm bar (tqdm must be installed); "auto"
    (the default): a tqdm bar when tqdm is installed and stderr is a terminal, as the CLI draws its bar; a callable:
    called as progress(done_bytes, total_bytes) from the workers, one call at a time, done never decreasing."""
    if progress is None or progress is False:
        return None, lambda: None
    if progress == "auto":
        try:
            import tqdm  # noqa: F401
        except ImportError:
            return None, lambda: None
        if not (hasattr(sys.stderr, "isatty") and sys.stderr.isatty()):
            return None, lambda: None
        progress = True
    if progress is True:
        bar = _Tqdm(desc)
        return bar, bar.close
    if not callable(progress):
        raise TypeError(f"progress: expected None, True, 'auto' or a callable(done, total), got {progress!r}")
    return progress, lambda: None


def _run(progress, desc, call):
    fn, close = _progress(progress, desc)
    try:
        return call(fn)
    finally:
        close()


def checkpoint_shards(path):
    """The shard file names of a checkpoint (a .safetensors file, an index, or a directory), sorted."""
    return list(_core.checkpoint_shards(_path(path, "path")))


def convert(input, output, recipe, shard_index=0, shard_count=1, resume=False, write_index=None, threads=None,
            format="minifloat", progress="auto", no_tokenizer=False, fp8_as_q8=False, keep_quantized=False,
            lossless=False, allow_inexact=False):
    """`minifloat convert`: `input` to `output` under `recipe` (a built-in name such as "deepseek-v4", "mxfp4",
    "nvfp4", or a JSON rules file), written in `format`'s dialect ("minifloat", "compressed-tensors", "modelopt",
    "transformers-fp8", "gpt-oss", "deepseek", "awq", "gptq", or "gguf": one .gguf file, with recipe also f32, f16,
    bf16 or q8_0, and no_tokenizer / fp8_as_q8 / keep_quantized as the CLI's flags). A recipe the format cannot
    express is refused before anything is written. With shard_count > 1 only shards i with i % shard_count ==
    shard_index are written, and the index and config.json are left to merge() (unless write_index=True).
    Returns the per-tensor error report as a dict: input_bytes, output_bytes, shards_written, shards_skipped,
    tensors [{name, target, rmse, max_abs, rel_rmse}]. Each shard is written to a temporary name and renamed;
    resume=True keeps shards already written. lossless / allow_inexact: the CLI's --lossless / --allow-inexact (pairs
    cast between schemes without changing a value; each cast tensor's row adds blocks, exact_blocks, inexact_blocks
    and max_rel)."""
    if allow_inexact and not lossless:
        raise ValueError("allow_inexact goes with lossless=True")
    _jobs(shard_index, shard_count)
    if not isinstance(format, str):
        raise TypeError(f"format: expected a string, got {type(format).__name__}")
    input, output, threads = _path(input, "input"), _path(output, "output"), _threads(threads)
    if format == "gguf":
        if lossless:
            raise ValueError("lossless: not for format='gguf'")
        if shard_count != 1 or resume or write_index is False:
            raise ValueError("format='gguf' writes one file in one run: no shard_count, resume or write_index")
        return _run(progress, "convert", lambda fn: _core.convert_gguf(
            input, output, str(recipe), threads, bool(no_tokenizer), bool(fp8_as_q8), bool(keep_quantized), fn))
    if no_tokenizer or fp8_as_q8 or keep_quantized:
        raise ValueError("no_tokenizer, fp8_as_q8 and keep_quantized go with format='gguf'")
    if write_index is None:
        write_index = shard_count == 1
    return _run(progress, "convert", lambda fn: _core.convert(
        input, output, str(recipe), format, shard_index, shard_count, bool(resume), bool(write_index), threads,
        bool(lossless), bool(allow_inexact), fn))


def merge(input, output, recipe, format="minifloat"):
    """After the jobs of a split convert(): writes output's model.safetensors.index.json and config.json (in
    `format`'s dialect). Raises CheckpointError if a shard of the input is missing from output."""
    _core.merge_index(_path(input, "input"), _path(output, "output"), str(recipe), str(format))


def dequantize(input, output, dtype="f32", shard_index=0, shard_count=1, resume=False, passthrough=(), threads=None,
               progress="auto"):
    """`minifloat dequantize`: every quantized pair of `input` (every dialect minifloat reads) written as a plain
    tensor, every other float tensor cast, into `output` (a directory; one .safetensors file for a .gguf input).
    dtype: "f32" or "bf16" (rounded to nearest even). A tensor that looks quantized and pairs with nothing raises
    CheckpointError naming it, before anything is written, unless a `passthrough` glob names it. Returns the report
    dict (input_bytes, output_bytes, shards_written, shards_skipped, tensors; a .gguf input: tensors, input_bytes,
    output_bytes)."""
    _jobs(shard_index, shard_count)
    if dtype not in ("f32", "bf16"):
        raise ValueError(f"dtype: expected 'f32' or 'bf16', got {dtype!r}")
    if isinstance(passthrough, str):
        passthrough = [passthrough]
    input, output, threads = _path(input, "input"), _path(output, "output"), _threads(threads)
    return _run(progress, "dequantize", lambda fn: _core.dequantize(
        input, output, dtype == "bf16", threads, shard_index, shard_count, bool(resume), list(passthrough), fn))


def inspect(path, stats=False, rules="auto", headers_only=False, threads=None):
    """`minifloat inspect --json`, parsed: {shards, params, bytes, bits_per_param, schemes, family, not_understood,
    config, tensors: [{name, shard, dtype, shape, bytes, params, role, stats?}]} (a .gguf file: {format, version,
    alignment, params, bytes, bits_per_param, metadata, tensors}). A checkpoint the other commands would refuse
    raises CheckpointError with the listing as .report, as the CLI prints it and exits 2."""
    report = json.loads(_core.inspect(_path(path, "path"), bool(stats), str(rules), _threads(threads),
                                      bool(headers_only)))
    if report.get("not_understood"):
        e = CheckpointError(report["not_understood"])
        e.file, e.tensor, e.report = os.fspath(path), None, report
        raise e
    return report


def verify(path, rules="auto", fp4_qat=False, headers_only=False, threads=None):
    """`minifloat verify`: the index against the shards, config.json by its rules, every pair's scales and codes
    (and FP4-QAT experts). Returns {format, tensors, tensor_bytes, file_bytes, pairs, qat_tensors, headers_only,
    config_rules} ({format: "gguf", tensors, decoded} for a .gguf file); raises CheckpointError naming the tensor
    that fails."""
    return _core.verify(_path(path, "path"), str(rules), bool(fp4_qat), _threads(threads), bool(headers_only))


def memory(config, recipe="deepseek-v4"):
    """`minifloat memory`: parameters and bytes per precision class of the model `config` (a config.json path)
    describes, under `recipe`: {classes: [{target, tensors, params, data_bytes, scale_bytes}], params, bytes}."""
    return _core.memory(_path(config, "config"), str(recipe))


def make_example_checkpoint(dir, shards=2, arch="v4-like"):
    """A tiny bf16 checkpoint in `dir` (config.json, `shards` shards, index): the same bytes every time (what
    `minifloat make-example-checkpoint --arch ARCH` writes). arch: "v4-like" (DeepSeek-V4's names with simplified
    shapes), or "deepseek-v4", "llama", "qwen-moe", which load in transformers' DeepseekV4ForCausalLM,
    LlamaForCausalLM and Qwen3MoeForCausalLM."""
    if not (isinstance(shards, int) and shards >= 1):
        raise ValueError(f"shards: expected an integer >= 1, got {shards!r}")
    if not isinstance(arch, str):
        raise TypeError(f"arch: expected a string, got {type(arch).__name__}")
    _core.make_example_checkpoint(_path(dir, "dir"), shards, arch)
