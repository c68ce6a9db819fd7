"""Checkpoint conversion on a Dask cluster: one task per shard, then one merge.

    from dask.distributed import Client
    import minifloat.dask
    client = Client("tcp://scheduler:8786")          # or LocalCluster() on one machine
    minifloat.dask.convert(client, "/data/model-bf16", "/data/model-fp4", "deepseek-v4")

Every worker must see `input` and `output` at the same paths (a shared file system). Each task runs
minifloat.convert(..., shard_index=i, shard_count=n) for its shard, which writes that shard whole or not at all;
rerunning with resume=True skips shards already written. dask.distributed is imported only here."""
from . import _checkpoint


def convert(client, input, output, recipe, resume=False, threads=None):
    """Converts the checkpoint `input` into `output` with one Dask task per shard on `client`, then writes the index
    and config.json. Returns the per-shard reports (dicts, as minifloat.convert returns), in shard order."""
    n = len(_checkpoint.checkpoint_shards(input))
    futures = [
        client.submit(_checkpoint.convert, input, output, recipe, shard_index=i, shard_count=n, resume=resume,
                      write_index=False, threads=threads, key=f"minifloat-convert-{i}-of-{n}", pure=False)
        for i in range(n)
    ]
    reports = client.gather(futures)  # raises the first task's error, naming the shard's tensor or file
    _checkpoint.merge(input, output, recipe)
    return reports
