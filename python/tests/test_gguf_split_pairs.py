"""`minifloat convert --format gguf` of a checkpoint whose weights and scales sit in different shards (DeepSeek's
releases split them: vllm-project/compressed-tensors #641; checkpoints-in-the-wild.md 2.4): the GGUF path borrows a
pair's scale from the shard the index names, as convert to safetensors does (test_split_pairs.py), and writes the
file the unsplit checkpoint gives, byte for byte (both directories named alike: general.name is the directory's).

Split: the `--like deepseek-v3` miniature (F32 weight_scale_inv per 128x128) and test_gguf_deepseek4.py's V4 release
miniature (F8_E8M0 `.scale`, FP8 and MXFP4 experts), every scale moved to the shard its weight is not in. The V4
split file is also the one llama.cpp's converter writes from the split checkpoint."""
import json

import pytest

from checkpoint_util import minifloat
from test_gguf_arch import assert_same_metadata, assert_same_tensors, llama_cpp, mine
from test_gguf_deepseek4 import release_v4
from test_gguf_tokenizer import smollm_tokenizer  # noqa: F401 (a fixture)
from test_split_pairs import move_to_other_shard


def scales(d, suffix):
    names = json.loads((d / "model.safetensors.index.json").read_text())["weight_map"]
    return [n for n in names if n.endswith(suffix)]


def convert(src, out, *args):
    r = minifloat("convert", src, out, "--format", "gguf", *args)
    assert r.returncode == 0, r.stderr
    return out.read_bytes()


@pytest.mark.parametrize("args", [("--recipe", "q8_0", "--fp8-as-q8"), ("--recipe", "bf16"), ("--recipe", "f32")])
def test_deepseek_v3_split_equals_unsplit(tmp_path, args):
    whole, split = tmp_path / "whole" / "v3", tmp_path / "split" / "v3"
    for d in (whole, split):
        r = minifloat("make-example-checkpoint", d, "--like", "deepseek-v3", "--shards", "2")
        assert r.returncode == 0, r.stderr
    moved = scales(split, "_scale_inv")
    assert len(moved) > 10
    move_to_other_shard(split, moved)
    flags = (*args, "--no-tokenizer")
    assert convert(split, tmp_path / "split.gguf", *flags) == convert(whole, tmp_path / "whole.gguf", *flags)


def test_deepseek_v4_split_equals_unsplit_and_the_converter(tmp_path, smollm_tokenizer):  # noqa: F811
    whole = release_v4(tmp_path / "whole" / "v4", smollm_tokenizer)
    split = release_v4(tmp_path / "split" / "v4", smollm_tokenizer)
    moved = scales(split, ".scale")
    assert any(".experts." in n for n in moved) and any(".attn.wkv." in n for n in moved)
    move_to_other_shard(split, moved)
    got = convert(split, tmp_path / "split.gguf", "--recipe", "q8_0")
    assert got == convert(whole, tmp_path / "whole.gguf", "--recipe", "q8_0")
    theirs = llama_cpp(split, tmp_path / "theirs.gguf", "q8_0")
    ours = mine(split, tmp_path / "split.gguf", "q8_0")
    assert_same_metadata(ours, theirs)
    assert_same_tensors(ours, theirs)
