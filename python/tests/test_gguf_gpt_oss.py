"""`minifloat convert --format gguf` of a gpt-oss checkpoint (MoE experts as MXFP4 X_blocks / X_scales): the GGUF
that llama.cpp's convert_hf_to_gguf writes (arch gpt-oss), read back with the `gguf` package. Tensor names come from
gguf's own TensorNameMap for MODEL_ARCH.GPT_OSS; the experts, de-interleaved into gate and up as llama.cpp does,
dequantize (gguf.quants) bit for bit to transformers' own dequantize-on-load of the same checkpoint, and their ggml
blocks hold the checkpoint's E8M0 scales and e2m1 codes unchanged (no requantization)."""
import json
import os
import re

import numpy as np
import pytest

from checkpoint_util import load, minifloat, same_bits
from conftest import need
from test_convert_gpt_oss import EXPERTS, FF, HIDDEN, gpt_oss_blocks

os.environ.setdefault("HF_HUB_OFFLINE", "1")
LAYERS = 2


@pytest.fixture(scope="module")
def oss(tmp_path_factory):
    """The tiny gpt-oss with MXFP4 experts, its config, its tensors as stored, and transformers' load of it."""
    root = tmp_path_factory.mktemp("oss_gguf")
    loaded = gpt_oss_blocks(root)
    stored = load(root / "oss")
    config = json.loads((root / "oss" / "config.json").read_text())
    return root, config, stored, loaded


def convert(oss, recipe):
    root = oss[0]
    out = root / f"oss-{recipe}.gguf"
    if not out.exists():
        r = minifloat("convert", root / "oss", out, "--recipe", recipe, "--format", "gguf", "--no-tokenizer")
        assert r.returncode == 0, r.stderr
        # gate_up splits into gate and up, down goes as it is: three re-laid out per layer, none requantized
        assert r.stdout.count(" re-laid out") == 3 * LAYERS, r.stdout
        assert "(GGUF v3, gpt-oss)" in r.stdout, r.stdout
    gguf = need("gguf")
    return gguf.GGUFReader(str(out))


def field(reader, key):
    f = reader.fields[key]
    value = f.parts[f.data[0]]
    return bytes(value).decode() if f.types[0] == need("gguf").GGUFValueType.STRING else value[0].item()


def expected_names(gguf, names):
    """llama.cpp's name for each Hugging Face tensor, by gguf's TensorNameMap for gpt-oss, with convert_hf_to_gguf's
    GptOssModel steps: sinks get .weight, gate_up (and its bias) split into gate_proj and up_proj."""
    tmap = gguf.get_tensor_name_map(gguf.MODEL_ARCH.GPT_OSS, LAYERS)
    out = set()
    for name in names:
        name = name.removesuffix("_blocks").replace("_bias", ".bias")
        if name.endswith(".sinks"):
            name += ".weight"
        if "experts." in name and not name.endswith(".bias"):
            name += ".weight"
        for part in ([name.replace("gate_up_proj", p) for p in ("gate_proj", "up_proj")]
                     if "gate_up_proj" in name else [name]):
            mapped = tmap.get_name(part, try_suffixes=(".weight", ".bias"))
            assert mapped is not None, part
            out.add(mapped)
    return out


@pytest.mark.parametrize("recipe", ["bf16", "mxfp4"])
def test_gpt_oss_gguf_names_and_metadata(oss, recipe):
    gguf = need("gguf")
    _, config, stored, _ = oss
    reader = convert(oss, recipe)
    assert field(reader, "general.architecture") == gguf.MODEL_ARCH_NAMES[gguf.MODEL_ARCH.GPT_OSS] == "gpt-oss"
    rope = config.get("rope_scaling") or config["rope_parameters"]
    want = {"block_count": LAYERS, "embedding_length": HIDDEN, "feed_forward_length": FF,
            "expert_feed_forward_length": FF, "expert_count": EXPERTS, "expert_used_count": 2,
            "attention.head_count": 4, "attention.head_count_kv": 2, "attention.key_length": 16,
            "attention.value_length": 16, "attention.sliding_window": config["sliding_window"],
            "context_length": 128, "rope.scaling.type": "yarn", "rope.scaling.factor": rope["factor"],
            "rope.scaling.original_context_length": rope["original_max_position_embeddings"],
            "rope.freq_base": rope.get("rope_theta", config.get("rope_theta"))}
    for key, value in want.items():
        assert field(reader, f"gpt-oss.{key}") == pytest.approx(value), key
    names = [n for n in stored if not n.endswith("_scales")]
    assert {t.name for t in reader.tensors} == expected_names(gguf, names)
    arch_names = {gguf.TENSOR_NAMES[t] for t in gguf.MODEL_TENSORS[gguf.MODEL_ARCH.GPT_OSS]}
    for t in reader.tensors:
        assert re.sub(r"^blk\.\d+\.", "blk.{bid}.", t.name.rsplit(".", 1)[0]) in arch_names, t.name
        q = gguf.GGMLQuantizationType
        if "_exps.weight" in t.name:
            assert t.tensor_type == q.MXFP4, t.name
        elif t.name.endswith(".bias") or "ffn_gate_inp" in t.name or len(t.shape) == 1 or "norm" in t.name:
            assert t.tensor_type == q.F32, t.name  # as convert_hf_to_gguf keeps them


def ggml_blocks(blocks, scales):
    """gpt-oss's blocks (element 2k in byte k's low nibble) and scales as ggml's block_mxfp4 bytes: the E8M0 byte,
    then element j in byte j's low nibble and element j + 16 in its high one."""
    codes = np.stack([blocks & 0x0F, blocks >> 4], axis=-1).reshape(*blocks.shape[:-1], 32)
    packed = (codes[..., :16] | (codes[..., 16:] << 4)).astype(np.uint8)
    return np.concatenate([scales[..., None], packed], axis=-1)


@pytest.mark.parametrize("recipe", ["bf16", "mxfp4"])
def test_gpt_oss_gguf_experts_bit_identical(oss, recipe):
    torch = need("torch")
    gguf = need("gguf")
    _, _, stored, loaded = oss
    tensors = {t.name: t for t in convert(oss, recipe).tensors}
    for layer in range(LAYERS):
        p = f"model.layers.{layer}.mlp.experts."
        gate_up = loaded[p + "gate_up_proj"].float()  # [E, H, 2I], gate and up interleaved
        want = {"ffn_gate_exps": gate_up[:, :, 0::2], "ffn_up_exps": gate_up[:, :, 1::2],
                "ffn_down_exps": loaded[p + "down_proj"].float()}
        bias = loaded[p + "gate_up_proj_bias"].float()
        want_bias = {"ffn_gate_exps": bias[:, 0::2], "ffn_up_exps": bias[:, 1::2],
                     "ffn_down_exps": loaded[p + "down_proj_bias"].float()}
        split = {"ffn_gate_exps": 0, "ffn_up_exps": 1, "ffn_down_exps": None}
        for name, rows in split.items():
            t = tensors[f"blk.{layer}.{name}.weight"]
            assert t.tensor_type == gguf.GGMLQuantizationType.MXFP4
            got = gguf.quants.dequantize(t.data, t.tensor_type)
            ref = want[name].transpose(1, 2).contiguous().numpy()  # transformers' [E, in, out]: ggml's [E, out, in]
            # ggml decodes the e2m1 code 8 (-0) as +0 (kvalues_mxfp4); every other value bit for bit
            same_bits(torch, torch.from_numpy(got), torch.from_numpy(ref), f"{name} of layer {layer}", zero_sign=False)
            src = "gate_up_proj" if rows is not None else "down_proj"
            blocks, scales = stored[p + src + "_blocks"].numpy(), stored[p + src + "_scales"].numpy()
            if rows is not None:
                blocks, scales = blocks[:, rows::2], scales[:, rows::2]
            assert np.array_equal(np.asarray(t.data).reshape(-1), ggml_blocks(blocks, scales).reshape(-1)), name
            b = tensors[f"blk.{layer}.{name}.bias"]
            assert np.array_equal(np.asarray(b.data), want_bias[name].numpy()), f"{name}.bias of layer {layer}"
    torch.testing.assert_close(torch.from_numpy(np.asarray(tensors["blk.0.attn_sinks.weight"].data).copy()),
                               loaded["model.layers.0.self_attn.sinks"].float(), rtol=0, atol=0)


def test_gpt_oss_gguf_refuses_unquantized_experts(oss, tmp_path):
    root = oss[0]
    r = minifloat("convert", root / "src", tmp_path / "out.gguf", "--recipe", "bf16", "--format", "gguf", "--no-tokenizer")
    assert r.returncode == 2, r.stderr
    assert "mlp.experts." in r.stderr and "not MXFP4 blocks" in r.stderr, r.stderr
    assert "--format gpt-oss --recipe mxfp4 first" in r.stderr, r.stderr
    assert not (tmp_path / "out.gguf").exists()


@pytest.mark.parametrize("fmt", ["minifloat", "compressed-tensors", "modelopt"])
def test_gpt_oss_per_expert_weights_into_gguf(oss, fmt):
    """gpt-oss's experts split into per-expert MXFP4 weights of another dialect (gate_proj, up_proj, down_proj of each
    expert), then into GGUF: gathered back, every tensor's bytes equal those of the blocks' direct conversion."""
    from test_convert_gpt_oss import EXPERTS_ONLY
    root = oss[0]
    recipe = root / "experts.json"
    recipe.write_text(json.dumps(EXPERTS_ONLY))
    r = minifloat("convert", root / "oss", root / f"split-{fmt}", "--recipe", recipe, "--format", fmt)
    assert r.returncode == 0, r.stderr
    out = root / f"split-{fmt}.gguf"
    r = minifloat("convert", root / f"split-{fmt}", out, "--recipe", "bf16", "--format", "gguf", "--no-tokenizer")
    assert r.returncode == 0, r.stderr
    assert r.stdout.count(" re-laid out") == 3 * LAYERS, r.stdout
    direct = {t.name: t for t in convert(oss, "bf16").tensors}
    got = {t.name: t for t in need("gguf").GGUFReader(str(out)).tensors}
    assert set(got) == set(direct)
    for name, t in got.items():
        assert t.tensor_type == direct[name].tensor_type, name
        assert np.asarray(t.data).tobytes() == np.asarray(direct[name].data).tobytes(), name


def test_gpt_oss_incomplete_experts_refused(oss, tmp_path):
    """Per-expert MXFP4 weights with one expert's up_proj missing cannot be gathered: refused naming it, nothing
    written."""
    from safetensors.torch import save_file
    from test_convert_gpt_oss import EXPERTS_ONLY
    root = oss[0]
    recipe = tmp_path / "experts.json"
    recipe.write_text(json.dumps(EXPERTS_ONLY))
    r = minifloat("convert", root / "oss", tmp_path / "split", "--recipe", recipe, "--format", "minifloat")
    assert r.returncode == 0, r.stderr
    gone = "model.layers.1.mlp.experts.3.up_proj.weight"
    tensors = {k: v for k, v in load(tmp_path / "split").items() if not k.startswith(gone)}
    assert len(tensors) < len(load(tmp_path / "split"))
    (tmp_path / "cut").mkdir()
    save_file(tensors, str(tmp_path / "cut" / "model.safetensors"))
    (tmp_path / "cut" / "config.json").write_bytes((tmp_path / "split" / "config.json").read_bytes())
    r = minifloat("convert", tmp_path / "cut", tmp_path / "out.gguf", "--recipe", "bf16", "--format", "gguf", "--no-tokenizer")
    assert r.returncode == 2, r.stderr
    assert gone in r.stderr and "is missing" in r.stderr, r.stderr
    assert not (tmp_path / "out.gguf").exists()
