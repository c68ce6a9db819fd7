"""compressed-tensors mixed precision: several config groups in one checkpoint, as NVIDIA's and Unsloth's NVFP4
releases store them (checkpoints-in-the-wild.md 5.7, 5.9): FP8 per channel for the attention projections, NVFP4 for
the MLP, `ignore` with plain names and `re:` regexes. Written by compressed-tensors itself (its presets, its qparam
math, its ModelCompressor), and every weight compared bit for bit with compressed-tensors' own decompressor of its
group's format. `verify` holds the config against the tensors: an ignored module that is quantized, and a group whose
targets match no quantized module, are named errors."""
import json
import os

import pytest

from checkpoint_util import dequantize, load, minifloat, same_bits
from conftest import need
from test_dialects import ct_checkpoint

os.environ.setdefault("HF_HUB_OFFLINE", "1")

ATTN = r"re:.*self_attn\.(q|k|v|o)_proj$"
MLP = r"re:.*mlp\.(gate|up|down)_proj$"
IGNORE = ["lm_head", r"re:.*layers\.1\.mlp\.down_proj$"]


def mixed(torch, out):
    need("compressed_tensors")
    from compressed_tensors.quantization import preset_name_to_scheme
    groups = {"group_0": preset_name_to_scheme("FP8_DYNAMIC", [ATTN]), "group_1": preset_name_to_scheme("NVFP4", [MLP])}
    return ct_checkpoint(torch, None, out, groups=groups, ignore=IGNORE)


def test_mixed_precision_dequantizes_as_compressed_tensors_does(tmp_path):
    torch = need("torch")
    from compressed_tensors.compressors import BaseCompressor
    from compressed_tensors.quantization import QuantizationConfig
    src = tmp_path / "ct"
    config = mixed(torch, src)
    qc = QuantizationConfig.model_validate(config)
    formats = {name: g.format or qc.format for name, g in qc.config_groups.items()}
    assert formats == {"group_0": "float-quantized", "group_1": "nvfp4-pack-quantized"}, config
    stored = load(src)
    out = dequantize(src, tmp_path / "bf16")
    assert "model.layers.1.mlp.down_proj.weight" in stored  # ignored by a regex: left BF16
    assert stored["model.layers.1.mlp.down_proj.weight"].dtype == torch.bfloat16
    seen = set()
    for name, group in qc.config_groups.items():
        compressor = BaseCompressor.get_value_from_registry(formats[name])
        pattern = group.targets[0][3:]
        import re
        modules = sorted({k.rsplit(".", 1)[0] for k in stored if k.endswith(".weight_scale")
                          and re.match(pattern, k.rsplit(".", 1)[0])})
        assert modules, name
        for mod in modules:
            parts = {k[len(mod) + 1:]: v for k, v in stored.items() if k.rsplit(".", 1)[0] == mod}
            want = compressor.decompress(parts, group)["weight"]
            same_bits(torch, out[mod + ".weight"], want, f"{name} {mod}")
            seen.add(mod)
    assert len(seen) == 13  # 2 layers x (q, k, v, o, gate, up, down), less the ignored down_proj of layer 1
    same_bits(torch, out["model.layers.1.mlp.down_proj.weight"], stored["model.layers.1.mlp.down_proj.weight"],
              "ignored")
    r = minifloat("inspect", src)
    assert r.returncode == 0, r.stderr
    assert "float-quantized" in r.stdout and "nvfp4-pack-quantized" in r.stdout, r.stdout
    v = minifloat("verify", src)
    assert v.returncode == 0, v.stderr


def rewrite(src, edit):
    path = src / "config.json"
    config = json.loads(path.read_text())
    edit(config["quantization_config"])
    path.write_text(json.dumps(config, indent=2))


def test_group_whose_targets_match_nothing_is_named(tmp_path):
    torch = need("torch")
    src = tmp_path / "ct"
    mixed(torch, src)

    def add_group(q):
        g = json.loads(json.dumps(q["config_groups"]["group_0"]))
        g["targets"] = [r"re:.*cross_attn\.q_proj$"]
        q["config_groups"]["group_2"] = g
    rewrite(src, add_group)
    v = minifloat("verify", src)
    assert v.returncode != 0, v.stdout
    assert "config group 'group_2'" in v.stderr and "match none of the 13 quantized modules" in v.stderr, v.stderr


def test_a_quantized_module_that_ignore_names_by_regex_is_named(tmp_path):
    torch = need("torch")
    src = tmp_path / "ct"
    mixed(torch, src)
    rewrite(src, lambda q: q["ignore"].append(r"re:.*layers\.0\.mlp\.up_proj$"))
    v = minifloat("verify", src)
    assert v.returncode != 0, v.stdout
    assert "leaves module 'model.layers.0.mlp.up_proj' unquantized" in v.stderr, v.stderr


def test_a_quantized_module_no_group_targets_is_named(tmp_path):
    torch = need("torch")
    src = tmp_path / "ct"
    mixed(torch, src)
    rewrite(src, lambda q: q["config_groups"]["group_1"].update(targets=[r"re:.*mlp\.(gate|up)_proj$"]))
    v = minifloat("verify", src)
    assert v.returncode != 0, v.stdout
    assert "quantizes module 'model.layers.0.mlp.down_proj', but none of its config groups targets it" in v.stderr, \
        v.stderr
