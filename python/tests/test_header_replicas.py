"""`minifloat inspect --headers-only`, `verify --headers-only` and `memory` on header-only replicas of each family's
largest release (python/tests/header_replica.py: the real tensor names, dtypes, shapes and shard counts, the data
sections sparse holes). Each replica's description names its source; the expected counts below are worked from that
description (and the published totals quoted), never from minifloat's output.

What the replicas prove about reading: every tensor's data is a hole of zeros, so a reading that touched data would
see zeros; the compressed-tensors replica (Kimi K2-Thinking) makes that visible, since its weight_shape values (zeros
here) make the full reading refuse the pairs while --headers-only, which never reads them, names every one.
"""
import json
import math
import os
import re
import subprocess
import tempfile
from collections import Counter

import pytest

import header_replica as hr
from checkpoint_util import EXE, minifloat


def run_measured(*args):
    """The command's exit status, stdout, stderr, CPU seconds (user + system) and peak resident memory in MiB, as
    GNU time measures them (a child forked from this large Python process would report the parent's memory as its
    own; CPU time, not wall time, since the test machine's cores are shared)."""
    if not os.path.exists("/usr/bin/time"):
        pytest.fail("/usr/bin/time (GNU time) is needed to measure the command's peak memory")
    with tempfile.NamedTemporaryFile("r") as peak:
        r = subprocess.run(["/usr/bin/time", "-f", "%M %U %S", "-o", peak.name, str(EXE), *map(str, args)],
                           capture_output=True, text=True)
        kib, user, system = peak.read().split()[-3:]
        return r.returncode, r.stdout, r.stderr, float(user) + float(system), int(kib) / 1024


def disk_bytes(directory):
    return sum(os.stat(f).st_blocks * 512 for f in directory.iterdir())


def expected_schemes(tensors):
    """Pairs by minifloat's scheme names (docs/checkpoints.md), counted from the description's dtypes and grids."""
    by = {n: (d, s) for n, d, s in tensors}
    out = Counter()
    for name, dtype, shape in tensors:
        release_scale = name[: -len(".weight")] + ".scale"
        if dtype == "F8_E4M3" and (name + "_scale_inv" in by or (name.endswith(".weight") and release_scale in by)):
            sname = name + "_scale_inv" if name + "_scale_inv" in by else release_scale
            sd, ss = by[sname]
            br, bc = (1, 32) if ss[1] * 32 == shape[1] and ss[0] == shape[0] else (
                math.ceil(shape[0] / ss[0]), math.ceil(shape[1] / ss[1]))
            block = 128 if br > 32 else br  # a partial edge tile (V3's [576, 7168] over [5, 56]) is still 128
            label = {"F8_E8M0": "ue8m0-rceil", "F32": "f32-f32", "BF16": "bf16"}[sd]
            bc = 128 if bc > 32 else bc
            out[f"e4m3-{block}x{bc}-{label}"] += 1
        elif dtype == "I8" and name.endswith(".weight"):
            out["e2m1-1x32-ue8m0-rceil"] += 1
        elif name.endswith("_blocks"):
            out["e2m1-1x32-ue8m0"] += 1
        elif name.endswith(".weight_packed"):
            out["int4-1x32-bf16"] += 1
        elif dtype == "U8" and name.endswith(".weight") and by[name + "_scale"][0] == "F8_E4M3":
            out["nvfp4"] += 1  # ModelOpt's two-level form: minifloat's scheme nvfp4
        elif name.endswith(".qweight"):
            out["awq-int4-1x128-f16"] += 1
    return out


def schemes_of(summary):
    return Counter({m.group(1): int(m.group(2)) for m in re.finditer(r"([\w.-]+) x (\d+)", summary)})


def v4_family(tensors, v41):
    """inspect's family line for DeepSeek's release names (its wording, docs/checkpoints.md), counted here."""
    parts = Counter()
    by = {n: s for n, _, s in tensors}
    for name, dtype, shape in tensors:
        if dtype == "I8":
            parts["FP4 experts (I8 [R, C/2], 1x32 F8_E8M0 scales)"] += 1
        elif dtype == "F8_E4M3":
            grid = by[name[: -len(".weight")] + ".scale"]
            block = "1x32" if grid[0] == shape[0] else ("32x32" if v41 else "128x128")
            parts[f"FP8 {block} blocks with F8_E8M0 scales"] += 1
    return ("DeepSeek-V4.1" if v41 else "DeepSeek-V4") + " as released (X.weight + X.scale): " + \
        ", ".join(f"{k} x {n}" for k, n in sorted(parts.items()))


def pairs_family(prefix):
    return lambda tensors: f"{prefix} x {sum(expected_schemes(tensors).values())}"


V3_FAMILY = pairs_family("DeepSeek-V3 / R1 / V3.1 FP8 (also Kimi K2-Instruct; W + W_scale_inv F32, 128x128 blocks)")

# name: (tensors, shards, config, the family inspect names, given the tensors)
FAMILIES = {
    # 1.1 / 1.2; 46 shards is this replica's choice (the catalogue gives no shard count for Flash)
    "deepseek-v4-flash": (lambda: hr.v4_tensors(hr.V4_FLASH), 46, lambda: hr.v4_config(hr.V4_FLASH),
                          lambda t: v4_family(t, False)),
    "deepseek-v4-pro": (lambda: hr.v4_tensors(hr.V4_PRO), 64, lambda: hr.v4_config(hr.V4_PRO),
                        lambda t: v4_family(t, False)),
    "deepseek-v4.1-flash": (lambda: hr.v4_tensors(hr.V4_1_FLASH), 48, lambda: hr.v4_config(hr.V4_1_FLASH),
                            lambda t: v4_family(t, True)),
    "deepseek-v3": (lambda: hr.v3_tensors(hr.V3), 163, lambda: hr.v3_config(hr.V3, hr.V3_QUANT), V3_FAMILY),
    # 61 shards: this replica's choice
    "kimi-k2-instruct": (lambda: hr.v3_tensors(hr.K2), 61, lambda: hr.v3_config(hr.K2, hr.V3_QUANT), V3_FAMILY),
    "kimi-k2-thinking": (lambda: hr.v3_tensors(hr.K2, "int4"), 62,
                         lambda: hr.v3_config(hr.K2, hr.K2_THINKING_QUANT),
                         pairs_family("compressed-tensors pack-quantized")),
    "qwen3-235b-a22b-fp8": (lambda: hr.qwen3_moe_fp8_tensors(hr.QWEN3_235B), 24,
                            lambda: hr.qwen3_config(hr.QWEN3_235B),
                            pairs_family("Qwen FP8 release (W + W_scale_inv with BF16 block scales)")),
    "gpt-oss-120b": (lambda: hr.gpt_oss_tensors(hr.GPT_OSS_120B), 15, lambda: hr.gpt_oss_config(hr.GPT_OSS_120B),
                     pairs_family("gpt-oss MXFP4 experts (X_blocks + X_scales)")),
    # 80 shards: this replica's choice
    "deepseek-r1-0528-nvfp4": (lambda: hr.nvfp4_mlp(hr.v3_tensors(hr.R1_NVFP4)), 80,
                               lambda: hr.v3_config(hr.R1_NVFP4, hr.R1_NVFP4_QUANT),
                               pairs_family("NVIDIA ModelOpt NVFP4")),
    # 11 shards: this replica's choice
    "qwen2.5-72b-instruct-awq": (lambda: hr.awq_tensors(hr.QWEN25_72B), 11, lambda: hr.awq_config(hr.QWEN25_72B),
                                 pairs_family("AutoAWQ (qweight + qzeros + scales)")),
}


@pytest.fixture(scope="module")
def replicas(tmp_path_factory):
    made = {}

    def make(name):
        if name not in made:
            tensors_of, shards, config_of, family = FAMILIES[name]
            d = tmp_path_factory.mktemp(name)
            tensors = tensors_of()
            total = hr.write_replica(d, tensors, shards, config_of())
            made[name] = (d, tensors, total, family)
        return made[name]
    return make


@pytest.mark.parametrize("name", list(FAMILIES))
def test_inspect_and_verify_headers_only(replicas, name):
    d, tensors, total, family = replicas(name)
    shards = FAMILIES[name][1]
    heads = sum(8 + int.from_bytes(open(f, "rb").read(8), "little") for f in d.glob("*.safetensors"))
    # The files are as large as the release's, on almost no disk: the headers, with the file system's rounding
    # (ext4 here allocates about 1.7 x the header bytes) and at most 1 MiB a shard more.
    assert sum(f.stat().st_size for f in d.glob("*.safetensors")) == heads + total
    assert disk_bytes(d) < 2 * heads + shards * 2**20, (disk_bytes(d), heads)

    rc, out, err, seconds, rss = run_measured("inspect", d, "--headers-only", "--json")
    assert rc == 0, err
    r = INSPECTED[d] = json.loads(out)
    print(f"{name}: {len(tensors)} tensors in {shards} shards, {total / 1e9:.2f} GB: inspect --headers-only "
          f"{seconds:.2f} CPU s, peak RSS {rss:.0f} MiB; headers {heads / 1e6:.1f} MB, disk {disk_bytes(d) / 1e6:.1f} MB")
    assert len(r["tensors"]) == len(tensors) and len(r["shards"]) == shards
    assert [t["name"] for t in r["tensors"]] == [t[0] for t in tensors]
    assert r["bytes"] == total
    assert r["not_understood"] == ""
    assert r["family"] == family(tensors)
    assert schemes_of(r["schemes"]) == expected_schemes(tensors)
    # Bounded by the tensor count, not the data: the table and its JSON take about 2 KiB a tensor (K2-Thinking's
    # 208,215 tensors: 469 MiB), against shards of gigabytes.
    assert rss < 100 + 3 * len(tensors) / 1024, rss

    rc, out, err, seconds, rss = run_measured("verify", d, "--headers-only")
    assert rc == 0, err
    pairs = sum(expected_schemes(tensors).values())
    assert out.startswith(f"ok: {len(tensors)} tensors, {pairs} quantized pairs, headers only"), out
    assert rss < 100 + len(tensors) / 1024, rss  # verify keeps no table: about 0.3 KiB a tensor
    print(f"{name}: verify --headers-only {seconds:.2f} CPU s, peak RSS {rss:.0f} MiB")


def test_v41_flash_holds_the_catalogues_expert_keys(replicas):
    """checkpoints-in-the-wild.md 1.2: 46,080 + 46,080 routed-expert keys and 1,152 + 1,152 MTP expert keys, the
    engram tables [384006168, 256] and [384016682, 256] with [rows, 8] scales; the whole release has 96,085 tensors
    in 48 shards (1.1). The catalogue does not give the shapes of the vision tower, of the engram's q_weight, k_weight
    and wkv, or of the indexer's wk and k_norm: the replica leaves those out, 120 tensors short of 96,085."""
    d, tensors, total, _ = replicas("deepseek-v4.1-flash")
    names = [t[0] for t in tensors]
    layer_experts = [n for n in names if re.fullmatch(r"layers\.\d+\.ffn\.experts\.\d+\.w[123]\.(weight|scale)", n)]
    mtp_experts = [n for n in names if re.fullmatch(r"mtp\.\d+\.ffn\.experts\.\d+\.w[123]\.(weight|scale)", n)]
    assert len(layer_experts) == 46_080 * 2 and len(mtp_experts) == 1_152 * 2
    assert len(tensors) == 96_085 - 120
    r = inspected(d)
    engram = {t["name"]: t["shape"] for t in r["tensors"] if ".engram." in t["name"]}
    assert engram == {"layers.1.engram.embed.weight": [384006168, 256], "layers.1.engram.embed.scale": [384006168, 8],
                      "layers.2.engram.embed.weight": [384016682, 256], "layers.2.engram.embed.scale": [384016682, 8]}


def test_full_reading_would_read_data_headers_only_does_not(replicas):
    """K2-Thinking's weight_shape [2] holds (R, C) in its data: the replica's are zeros, so the reading that reads them
    refuses the first pair, and --headers-only, which takes C from config.json's num_bits, reads every pair."""
    d, tensors, _, _ = replicas("kimi-k2-thinking")
    r = minifloat("inspect", d)
    assert r.returncode != 0
    assert "model.layers.1.mlp.experts.0.gate_proj.weight_packed" in r.stderr, r.stderr
    r = inspected(d)
    roles = {t["name"]: t["role"] for t in r["tensors"]}
    assert roles["model.layers.60.mlp.experts.383.down_proj.weight_packed"].startswith("weight of int4-1x32-bf16")
    # params: an int4 expert [2048, 7168] counts 2048 x 7168 parameters (32 / 4 per word), not its words
    row = next(t for t in r["tensors"] if t["name"] == "model.layers.1.mlp.experts.0.gate_proj.weight_packed")
    assert row["params"] == 2048 * 7168


def test_published_totals(replicas):
    """The replicas' bytes (the sum of their headers' tensor sizes) and minifloat's parameter counts against the
    published totals, each within the tolerance stated:
    - DeepSeek-V4-Pro: 1.6T parameters, about 865 GB in 64 shards (docs/spec.md#v4-memory, decimal GB): within 1%
      (this replica: 868.4 GB, 0.4% over: its 61 layers and 384 experts are assumed, see header_replica.py);
    - gpt-oss-120b: 116.8B parameters, a 60.8 GiB checkpoint (openai/gpt-oss-120b model card): within 0.1%;
    - Qwen2.5-72B: 72.7B parameters (its model card; inspect counts an AWQ weight's R x C): within 0.1%;
    - DeepSeek-R1-0528 in NVFP4: V3's 671B in the main model (the MTP layer left out), within 0.1%."""
    d, _, total, _ = replicas("deepseek-v4-pro")
    assert abs(total / 865e9 - 1) < 0.01, total
    r = inspected(d)
    assert abs(r["params"] / 1.6e12 - 1) < 0.03, r["params"]
    d, _, total, _ = replicas("gpt-oss-120b")
    assert abs(total / (60.8 * 2**30) - 1) < 0.001, total
    r = inspected(d)
    assert abs(r["params"] / 116.8e9 - 1) < 0.001, r["params"]
    r = inspected(replicas("qwen2.5-72b-instruct-awq")[0])
    assert abs(r["params"] / 72.7e9 - 1) < 0.001, r["params"]
    r = inspected(replicas("deepseek-r1-0528-nvfp4")[0])
    assert abs(r["params"] / 671e9 - 1) < 0.001, r["params"]


INSPECTED = {}


def inspected(d):
    """`inspect --headers-only --json` of replica d, run once per replica."""
    if d not in INSPECTED:
        r = minifloat("inspect", d, "--headers-only", "--json")
        assert r.returncode == 0, r.stderr
        INSPECTED[d] = json.loads(r.stdout)
    return INSPECTED[d]


def memory_total(config_path, recipe):
    r = minifloat("memory", "--config", config_path, "--recipe", recipe)
    assert r.returncode == 0, r.stderr
    m = re.search(r"total: (\d+) parameters .*?, .*?\(([\d.]+) GiB\)", r.stdout)
    return int(m.group(1)), float(m.group(2)) * 2**30


@pytest.mark.parametrize("name, recipe, mtp, published, published_bytes", [
    # config_671B: 671B in the main model (the model card: 671B, plus 14B in the MTP module)
    ("deepseek-v3", "fp8-block", "model.layers.61.", 671e9, None),
    # Kimi K2: 1T total parameters (moonshotai/Kimi-K2-Instruct model card); no MTP layer
    ("kimi-k2-instruct", "fp8-block", "-", 1.0e12, None),
    # Qwen3-235B-A22B: 235B total parameters (its model card)
    ("qwen3-235b-a22b-fp8", "fp8-block", "-", 235e9, None),
    # DeepSeek-V4-Pro: 1.6T parameters, about 865 GB (docs/spec.md#v4-memory)
    ("deepseek-v4-pro", "deepseek-v4", "mtp.", 1.6e12, 865e9),
])
def test_memory_gives_the_real_footprint(replicas, name, recipe, mtp, published, published_bytes):
    """`memory --config` (from config.json alone) against the replica's own parameter count (its description, less
    the MTP layers memory does not model) exactly, and against the published totals within 3% (the published figures
    are rounded: 1T, 1.6T, "about 865 GB"; memory's V4-Pro bytes, 852 GB, leave out the MTP layer and keep the
    compressors in F32 as the deepseek-v4 recipe says, where the release stores them in BF16)."""
    d, tensors, _, _ = replicas(name)
    params, nbytes = memory_total(d / "config.json", recipe)
    r = inspected(d)
    mtp_params = sum(t["params"] for t in r["tensors"] if t["name"].startswith(mtp))
    assert params == r["params"] - mtp_params
    assert abs(params / published - 1) < 0.03, params
    if published_bytes:
        assert abs(nbytes / published_bytes - 1) < 0.03, nbytes


def corrupt(tmp_path, tensors, change):
    tensors = change(list(tensors))
    d = tmp_path / "bad"
    hr.write_replica(d, tensors, 46, hr.v4_config(hr.V4_FLASH))
    return d


def test_a_missing_scale_is_named(tmp_path):
    gone = "layers.7.attn.wo_b.scale"
    d = corrupt(tmp_path, hr.v4_tensors(hr.V4_FLASH), lambda ts: [t for t in ts if t[0] != gone])
    r = minifloat("verify", d, "--headers-only")
    assert r.returncode == 2 and "layers.7.attn.wo_b.weight" in r.stderr, r.stderr
    r = minifloat("inspect", d, "--headers-only")
    assert r.returncode == 2 and "layers.7.attn.wo_b.weight" in r.stderr, r.stderr


def test_a_wrong_shape_is_named(tmp_path):
    bad = "layers.20.ffn.experts.100.w2.scale"  # [4096, 64] -> [4096, 63]: no 1x32 grid over [4096, 2048]
    d = corrupt(tmp_path, hr.v4_tensors(hr.V4_FLASH),
                lambda ts: [(n, dt, [4096, 63] if n == bad else s) for n, dt, s in ts])
    for command in ("verify", "inspect"):
        r = minifloat(command, d, "--headers-only")
        assert r.returncode != 0 and "layers.20.ffn.experts.100.w2.weight" in r.stderr, (command, r.stderr)


def test_an_index_that_misplaces_a_tensor_is_named(tmp_path):
    d = corrupt(tmp_path, hr.v4_tensors(hr.V4_FLASH), lambda ts: ts)
    idx = json.loads((d / "model.safetensors.index.json").read_text())
    idx["weight_map"]["layers.7.attn.wo_b.scale"] = hr.shard_name(0, 46)
    (d / "model.safetensors.index.json").write_text(json.dumps(idx))
    r = minifloat("verify", d, "--headers-only")
    assert r.returncode != 0 and "layers.7.attn.wo_b.scale" in r.stderr, r.stderr


def test_stats_and_headers_only_do_not_mix(replicas):
    d, _, _, _ = replicas("gpt-oss-120b")
    r = minifloat("inspect", d, "--headers-only", "--stats")
    assert r.returncode == 2 and "--headers-only does not" in r.stderr, r.stderr
