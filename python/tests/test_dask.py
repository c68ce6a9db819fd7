"""Checkpoint conversion split across a Dask LocalCluster (one task per shard, then a merge) gives the same files,
byte for byte, as one process converting everything, and as the `minifloat convert` command."""
import os
import pathlib
import subprocess

import pytest

import minifloat
from conftest import need

ROOT = pathlib.Path(__file__).resolve().parents[2]


def files(d):
    return {p.name: p.read_bytes() for p in sorted(pathlib.Path(d).iterdir()) if p.is_file()}


@pytest.fixture(scope="module")
def example(tmp_path_factory):
    d = tmp_path_factory.mktemp("bf16")
    minifloat.make_example_checkpoint(d, shards=4)
    assert len(minifloat.checkpoint_shards(d)) == 4
    return d


@pytest.fixture(scope="module")
def cluster():
    distributed = need("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as c:
        with distributed.Client(c) as client:
            yield client


@pytest.mark.parametrize("recipe", ["deepseek-v4", "mxfp4"])
def test_dask_matches_one_process(example, cluster, tmp_path, recipe):
    import minifloat.dask

    one = tmp_path / "one"
    report = minifloat.convert(example, one, recipe)
    assert report["shards_written"] == 4
    split = tmp_path / "split"
    reports = minifloat.dask.convert(cluster, example, split, recipe)
    assert [r["shards_written"] for r in reports] == [1, 1, 1, 1]
    # every shard converted exactly once, on the workers (separate processes)
    assert sum(len(r["tensors"]) for r in reports) == len(report["tensors"])
    assert files(split) == files(one)


def test_matches_the_command(example, tmp_path):
    exe = ROOT / "build" / "cli" / "minifloat"
    if not exe.exists():
        pytest.fail(f"{exe} is missing: build the command first (./test does)")
    cli = tmp_path / "cli"
    subprocess.run([str(exe), "convert", str(example), str(cli), "--recipe", "deepseek-v4"], check=True,
                   capture_output=True)
    ours = tmp_path / "py"
    minifloat.convert(example, ours, "deepseek-v4")
    assert files(ours) == files(cli)


def test_job_array_arguments(example, tmp_path):
    out = tmp_path / "out"
    for i in range(3):  # 4 shards over 3 jobs: 2, 1, 1
        r = minifloat.convert(example, out, "mxfp4", shard_index=i, shard_count=3)
        assert r["shards_written"] == (2 if i == 0 else 1)
    assert not (out / "model.safetensors.index.json").exists()
    minifloat.merge(example, out, "mxfp4")
    assert (out / "model.safetensors.index.json").exists()
    with pytest.raises(ValueError, match="shard_index"):
        minifloat.convert(example, out, "mxfp4", shard_index=3, shard_count=3)
    with pytest.raises(ValueError, match="recipe"):
        minifloat.convert(example, tmp_path / "x", "no-such-recipe")
    with pytest.raises(TypeError, match="input"):
        minifloat.convert(3, out, "mxfp4")
