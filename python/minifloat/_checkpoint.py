"""Whole checkpoints: convert a bf16/f16/f32 checkpoint to a quantized one, shard by shard (minifloat/checkpoint_commands.h;
the same work as `minifloat convert`). The job-array arguments let many processes or machines share one conversion:
job i of n converts the shards whose index is i modulo n, and one `merge` call writes the index and config.json."""
import os

from . import _core


def _path(p, name):
    if not isinstance(p, (str, os.PathLike)):
        raise TypeError(f"{name}: expected a path, got {type(p).__name__}")
    return os.fspath(p)


def checkpoint_shards(path):
    """The shard file names of a checkpoint (a .safetensors file, an index, or a directory), sorted."""
    return list(_core.checkpoint_shards(_path(path, "path")))


def convert(input, output, recipe, shard_index=0, shard_count=1, resume=False, write_index=None, threads=None):
    """Converts `input` to `output` under `recipe` (a built-in name such as "deepseek-v4", "mxfp4", "nvfp4", or a
    JSON rules file). With shard_count > 1 only shards i with i % shard_count == shard_index are written, and the
    index and config.json are left to merge() (unless write_index=True). Returns the per-tensor error report as a
    dict: input_bytes, output_bytes, shards_written, shards_skipped, tensors [{name, target, rmse, max_abs,
    rel_rmse}]. Each shard is written to a temporary name and renamed; resume=True keeps shards already written."""
    if not (isinstance(shard_count, int) and shard_count >= 1):
        raise ValueError(f"shard_count: expected an integer >= 1, got {shard_count!r}")
    if not (isinstance(shard_index, int) and 0 <= shard_index < shard_count):
        raise ValueError(f"shard_index: expected 0 <= shard_index < {shard_count}, got {shard_index!r}")
    if write_index is None:
        write_index = shard_count == 1
    return _core.convert_checkpoint(_path(input, "input"), _path(output, "output"), str(recipe), shard_index,
                                    shard_count, bool(resume), bool(write_index), int(threads or 0))


def merge(input, output, recipe):
    """After the jobs of a split convert(): writes output's model.safetensors.index.json and config.json. Raises if
    a shard of the input is missing from output."""
    _core.merge_index(_path(input, "input"), _path(output, "output"), str(recipe))


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
