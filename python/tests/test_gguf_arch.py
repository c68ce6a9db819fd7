"""`minifloat convert --format gguf` of Qwen2, Qwen3, Qwen3-MoE and DeepSeek V3 checkpoints against llama.cpp's own
converter (convert_hf_to_gguf.py, pinned by python/requirements-llama-cpp.txt; see test_gguf_tokenizer.py).

Each architecture is a tiny random model built by transformers from its config class (a few layers, tiny dims, a few
experts for the MoE ones), saved as bf16 safetensors with SmolLM2's tokenizer beside it. minifloat (--recipe f32,
bf16, q8_0) and the converter (--outtype f32, bf16, q8_0) convert it, gguf-py's GGUFReader reads both, and they must
hold the same tensors in the same order with the same GGML types, shapes and bytes, and the same metadata keys, in
the same order, with the same types and values -- but for the general.* keys that gguf-py's Metadata derives from
the directory's name and the parameter count (general.name, general.size_label, general.basename, general.finetune,
...), which minifloat does not guess: general.name is the directory's name there, and minifloat writes no other.
Tensor names are also checked against gguf-py's MODEL_TENSORS for the architecture."""
import json
import os
import re
import shutil

import numpy as np
import pytest

from checkpoint_util import minifloat
from conftest import need
from test_gguf_tokenizer import PIECES, run_converter, sentencepiece_model, smollm_tokenizer  # noqa: F401 (a fixture)

os.environ.setdefault("HF_HUB_OFFLINE", "1")
VOCAB = 49152  # SmolLM2's tokenizer: llama.cpp's converter knows its pre-tokenizer
GENERAL_KEPT = {"general.architecture", "general.type", "general.file_type", "general.quantization_version"}
COMMON = dict(hidden_size=64, intermediate_size=128, num_attention_heads=4, num_key_value_heads=2, vocab_size=VOCAB,
              max_position_embeddings=256, rms_norm_eps=1e-5)


def qwen2(t):
    """With a SentencePiece tokenizer.model, which Qwen2Model.set_vocab reads before tokenizer.json (transformers
    gives model_type qwen2 its own Qwen2Tokenizer, whose pre-tokenizer over SmolLM2's vocabulary llama.cpp does not
    know)."""
    common = {**COMMON, "vocab_size": PIECES}
    return t.Qwen2ForCausalLM(t.Qwen2Config(num_hidden_layers=2, tie_word_embeddings=False, rope_theta=1e6,
                                            architectures=["Qwen2ForCausalLM"], **common))


def qwen3(t):
    return t.Qwen3ForCausalLM(t.Qwen3Config(num_hidden_layers=2, head_dim=32, tie_word_embeddings=True,
                                            architectures=["Qwen3ForCausalLM"], **COMMON))


def qwen3moe(t):
    return t.Qwen3MoeForCausalLM(t.Qwen3MoeConfig(num_hidden_layers=2, head_dim=32, num_experts=4,
                                                  num_experts_per_tok=2, moe_intermediate_size=64,
                                                  tie_word_embeddings=False, norm_topk_prob=True,
                                                  architectures=["Qwen3MoeForCausalLM"], **COMMON))


def deepseek_v3(t):
    """MLA with a q LoRA, one dense layer then MoE layers with a shared expert, grouped sigmoid routing with its
    score-correction bias, YaRN rotary scaling (mscale_all_dim: the converter's yarn_log_multiplier)."""
    common = {**COMMON, "num_key_value_heads": 4}
    rope = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 64, "beta_fast": 32.0,
            "beta_slow": 1.0, "mscale": 1.0, "mscale_all_dim": 1.0, "rope_theta": 10000.0}
    cfg = t.DeepseekV3Config(num_hidden_layers=3, first_k_dense_replace=1, n_routed_experts=4, num_experts_per_tok=2,
                             n_shared_experts=1, moe_intermediate_size=32, n_group=2, topk_group=1,
                             routed_scaling_factor=2.5, norm_topk_prob=True, q_lora_rank=32, kv_lora_rank=32,
                             qk_nope_head_dim=32, qk_rope_head_dim=16, v_head_dim=32, tie_word_embeddings=False,
                             rope_scaling=rope, scoring_func="sigmoid", architectures=["DeepseekV3ForCausalLM"],
                             **common)
    return t.DeepseekV3ForCausalLM(cfg)


def deepseek_v3_lite(t):
    """The other MLA form (no q LoRA: q_proj, as DeepSeek-V2-Lite), every layer MoE, softmax routing without groups,
    qk_nope_head_dim 16 (k_b's rows are not whole Q8_0 blocks: F16), tied embeddings with an lm_head in the file
    anyway (added by the fixture: the converter drops it)."""
    common = {**COMMON, "num_key_value_heads": 4}
    cfg = t.DeepseekV3Config(num_hidden_layers=2, first_k_dense_replace=0, n_routed_experts=4, num_experts_per_tok=2,
                             n_shared_experts=2, moe_intermediate_size=32, n_group=1, topk_group=1,
                             norm_topk_prob=False, q_lora_rank=None, kv_lora_rank=64, qk_nope_head_dim=16,
                             qk_rope_head_dim=16, v_head_dim=32, tie_word_embeddings=True, scoring_func="softmax",
                             architectures=["DeepseekV3ForCausalLM"], **common)
    return t.DeepseekV3ForCausalLM(cfg)


MODELS = {"qwen2": qwen2, "qwen3": qwen3, "qwen3moe": qwen3moe, "deepseek2": deepseek_v3,
          "deepseek2-lite": deepseek_v3_lite}
ARCH = {"qwen2": "QWEN2", "qwen3": "QWEN3", "qwen3moe": "QWEN3MOE", "deepseek2": "DEEPSEEK2",
        "deepseek2-lite": "DEEPSEEK2"}


def randomize(torch, model):
    """Every parameter and buffer random (transformers initialises norms to ones and biases to zeros): a misplaced
    tensor then shows."""
    g = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for p in list(model.parameters()) + list(model.buffers()):
            if p.is_floating_point():
                p.copy_(torch.randn(p.shape, generator=g) * 0.5)


@pytest.fixture(scope="session")
def models(tmp_path_factory, smollm_tokenizer):  # noqa: F811
    """arch -> the tiny checkpoint's directory (built once per session: test_llama_cpp_runs.py imports it; tests only
    read them, and write beside them only files named by arch and recipe, the same whichever test writes them)."""
    torch, transformers = need("torch"), need("transformers")
    root = tmp_path_factory.mktemp("gguf_arch")
    out = {}
    for arch, build in MODELS.items():
        torch.manual_seed(0)
        model = build(transformers)
        randomize(torch, model)
        d = out[arch] = root / arch
        model.to(torch.bfloat16).save_pretrained(d)
        if arch == "qwen2":
            (d / "tokenizer.model").write_bytes(sentencepiece_model())
            (d / "tokenizer_config.json").write_text(json.dumps({"bos_token": "<s>", "eos_token": "</s>",
                                                                 "unk_token": "<unk>", "add_prefix_space": True}))
            continue
        for f in smollm_tokenizer.iterdir():
            shutil.copy(f, d / f.name)
        if arch == "deepseek2-lite":
            from safetensors.torch import load_file, save_file
            tensors = load_file(str(d / "model.safetensors"))
            assert "lm_head.weight" not in tensors
            tensors["lm_head.weight"] = tensors["model.embed_tokens.weight"].clone()
            save_file(tensors, str(d / "model.safetensors"), metadata={"format": "pt"})
    return out


def llama_cpp(src, out, outtype):
    if not out.exists():
        r = run_converter(src, "--outfile", out, "--outtype", outtype)
        assert r.returncode == 0, r.stderr[-4000:]
    return need("gguf").GGUFReader(str(out))


def mine(src, out, recipe):
    if not out.exists():
        r = minifloat("convert", src, out, "--recipe", recipe, "--format", "gguf")
        assert r.returncode == 0, r.stderr
    return need("gguf").GGUFReader(str(out))


def fields(reader):
    """Every metadata key in file order, with its value types and value; the reader's own GGUF.* entries left out."""
    return [(k, [int(t) for t in f.types], f.contents()) for k, f in reader.fields.items() if not k.startswith("GGUF.")]


def assert_same_metadata(got, want):
    derived = {k for k, _, _ in fields(want) if k.startswith("general.") and k not in GENERAL_KEPT}
    assert "general.name" in derived
    have = [x for x in fields(got) if x[0] not in derived]
    ref = [x for x in fields(want) if x[0] not in derived]
    assert [k for k, _, _ in have] == [k for k, _, _ in ref]
    for (key, types, value), (_, want_types, want_value) in zip(have, ref):
        assert types == want_types, key
        if isinstance(value, float):
            assert np.float32(value) == np.float32(want_value), key
        else:
            assert value == want_value, key


def assert_same_tensors(got, want):
    assert [t.name for t in got.tensors] == [t.name for t in want.tensors]
    for a, b in zip(got.tensors, want.tensors):
        assert (a.tensor_type, list(a.shape)) == (b.tensor_type, list(b.shape)), a.name
        assert np.asarray(a.data).tobytes() == np.asarray(b.data).tobytes(), f"{a.name}: bytes differ"


@pytest.mark.parametrize("recipe", ["f32", "bf16", "q8_0"])
@pytest.mark.parametrize("arch", list(MODELS))
def test_written_as_llama_cpp_converts_it(models, arch, recipe):
    gguf = need("gguf")
    src = models[arch]
    want = llama_cpp(src, src.parent / f"{arch}-{recipe}.llama.cpp.gguf", recipe)
    got = mine(src, src.parent / f"{arch}-{recipe}.minifloat.gguf", recipe)
    assert got.fields["general.architecture"].contents() == gguf.MODEL_ARCH_NAMES[getattr(gguf.MODEL_ARCH, ARCH[arch])]
    assert_same_metadata(got, want)
    assert_same_tensors(got, want)
    model_arch = getattr(gguf.MODEL_ARCH, ARCH[arch])
    known = {gguf.TENSOR_NAMES[t] for t in gguf.MODEL_TENSORS[model_arch]}
    for t in got.tensors:
        assert re.sub(r"^blk\.\d+\.", "blk.{bid}.", t.name.rsplit(".", 1)[0]) in known, t.name


def test_moe_experts_are_stacked(models):
    """Independently of the converter: ffn_up_exps of a layer is every expert's up_proj stacked, in expert order."""
    from safetensors.torch import load_file
    src = models["qwen3moe"]
    stored = load_file(str(src / "model.safetensors"))
    got = {t.name: t for t in mine(src, src.parent / "qwen3moe-f32.minifloat.gguf", "f32").tensors}
    key = "model.layers.1.mlp.experts.{}.up_proj.weight"
    if key.format(0) not in stored:
        pytest.skip("transformers saved fused experts")
    want = np.stack([stored[key.format(e)].float().numpy() for e in range(4)])
    assert np.array_equal(np.asarray(got["blk.1.ffn_up_exps.weight"].data), want)


def test_sharded_and_fused_experts_as_llama_cpp_converts_them(models, tmp_path):
    """The Qwen3-MoE in shards small enough that a layer's experts straddle them, and with transformers' fused
    experts (mlp.experts.gate_up_proj [E, 2I, H] = gate then up, mlp.experts.down_proj [E, H, I], which
    Qwen2MoeModel splits at the half): both as llama.cpp's converter writes them, and the same tensors as the
    per-expert single file."""
    from safetensors.torch import load_file, save_file
    torch, transformers = need("torch"), need("transformers")
    src = models["qwen3moe"]
    sharded = tmp_path / "sharded"
    model = transformers.AutoModelForCausalLM.from_pretrained(str(src), dtype=torch.bfloat16)
    model.save_pretrained(sharded, max_shard_size="40KB")
    shards = sorted(sharded.glob("model-*.safetensors"))
    assert len(shards) > 3
    for f in src.iterdir():
        if f.name.startswith(("tokenizer", "chat_template")):
            shutil.copy(f, sharded / f.name)
    fused = tmp_path / "fused"
    shutil.copytree(src, fused)
    tensors = load_file(str(src / "model.safetensors"))
    for layer in range(2):
        p = f"model.layers.{layer}.mlp.experts."
        stack = {w: torch.stack([tensors.pop(f"{p}{e}.{w}.weight") for e in range(4)]) for w in
                 ("gate_proj", "up_proj", "down_proj")}
        tensors[p + "gate_up_proj"] = torch.cat([stack["gate_proj"], stack["up_proj"]], dim=1).contiguous()
        tensors[p + "down_proj"] = stack["down_proj"]
    save_file(tensors, str(fused / "model.safetensors"), metadata={"format": "pt"})
    direct = mine(src, src.parent / "qwen3moe-q8_0.minifloat.gguf", "q8_0")
    for d in (sharded, fused):
        got = mine(d, tmp_path / f"{d.name}.minifloat.gguf", "q8_0")
        assert_same_tensors(got, llama_cpp(d, tmp_path / f"{d.name}.llama.cpp.gguf", "q8_0"))
        assert {t.name: np.asarray(t.data).tobytes() for t in got.tensors} == \
               {t.name: np.asarray(t.data).tobytes() for t in direct.tensors}, d.name


def test_deepseek_mtp_layers_are_dropped(models, tmp_path):
    """A DeepSeek V3 checkpoint's multi-token-prediction layer (model.layers.N past num_hidden_layers) is not written,
    as llama.cpp's converter drops it."""
    from safetensors.torch import load_file, save_file
    src = models["deepseek2"]
    d = tmp_path / "with-mtp"
    shutil.copytree(src, d)
    tensors = load_file(str(d / "model.safetensors"))
    tensors["model.layers.3.embed_tokens.weight"] = tensors["model.embed_tokens.weight"].clone()
    tensors["model.layers.3.eh_proj.weight"] = tensors["model.layers.0.mlp.up_proj.weight"].clone()
    save_file(tensors, str(d / "model.safetensors"), metadata={"format": "pt"})
    direct = mine(src, src.parent / "deepseek2-bf16.minifloat.gguf", "bf16")
    got = mine(d, tmp_path / "out.gguf", "bf16")
    assert_same_tensors(got, direct)


def test_refusals(models, tmp_path):
    """An architecture llama.cpp has no converter for, or one minifloat does not write (Qwen2-MoE), is a named error;
    so are an MXFP4 recipe and a missing expert. Nothing is written. (DeepSeek V4: test_gguf_deepseek4.py.)"""
    from safetensors.torch import load_file, save_file
    src = tmp_path / "src"
    shutil.copytree(models["qwen3moe"], src)
    out = tmp_path / "out.gguf"
    r = minifloat("convert", src, out, "--recipe", "mxfp4", "--format", "gguf")
    assert r.returncode == 2 and "--recipe mxfp4: --format gguf writes qwen3moe with --recipe f32" in r.stderr, r.stderr
    tensors = load_file(str(src / "model.safetensors"))
    gone = "model.layers.1.mlp.experts.2.down_proj.weight"
    if gone in tensors:
        del tensors[gone]
        save_file(tensors, str(src / "model.safetensors"), metadata={"format": "pt"})
        r = minifloat("convert", src, out, "--recipe", "bf16", "--format", "gguf")
        assert r.returncode == 2, r.stderr
        assert "expert 2's weight of blk.1.ffn_down_exps.weight is missing" in r.stderr, r.stderr
    config = json.loads((src / "config.json").read_text())
    for archs, model_type in ((["Qwen2MoeForCausalLM"], "qwen2_moe"), (["FooForCausalLM"], "foo")):
        (src / "config.json").write_text(json.dumps({**config, "architectures": archs, "model_type": model_type}))
        r = minifloat("convert", src, out, "--recipe", "bf16", "--format", "gguf")
        assert r.returncode == 2, r.stderr
        assert f'architecture "{archs[0]}": --format gguf writes Llama' in r.stderr, r.stderr
    assert not any(tmp_path.glob("out*"))
