"""Header-only replicas of published checkpoints: every shard's safetensors header exact (the release's tensor names,
dtypes, shapes and offsets), its data section a sparse hole (the file is truncated up to its full size, so it is as
large as the release's shard and takes no disk), plus model.safetensors.index.json and config.json.

A family is described compactly (layer and expert counts, dims, which modules are quantized how, shard count), each
field from /work/shared/checkpoints-in-the-wild.md or the other source named beside it; `tensors()` expands the
description into (name, dtype, shape) in the order the release stores them, and `write_replica` lays them out.
Nothing here calls minifloat: the replicas are what the tests hold `minifloat inspect/verify --headers-only` and
`minifloat memory` against.
"""
import json
import math
import pathlib

BYTES = {"F8_E4M3": 1, "F8_E8M0": 1, "I8": 1, "U8": 1, "BF16": 2, "F16": 2, "F32": 4, "I32": 4, "I64": 8}


def nbytes(dtype, shape):
    return BYTES[dtype] * math.prod(shape)


def shard_name(i, n):
    return f"model-{i + 1:05d}-of-{n:05d}.safetensors"


def module_of(name):
    """What a weight and its scale (and their other parts) share: the name less its last part (X.weight / X.scale,
    W.weight_scale_inv, P.weight_packed / .weight_scale / .weight_shape), or less _blocks / _scales / _bias."""
    for suffix in ("_blocks", "_scales", "_bias"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name.rsplit(".", 1)[0]


def split(tensors, shards):
    """Consecutive runs of about equal bytes (what save_pretrained's max_shard_size gives), `shards` of them, each
    cut between modules, so that a weight's scale stays in its shard (a release that splits them is
    python/tests/test_split_pairs.py's case); no shard empty, however large one tensor is."""
    groups = []
    for t in tensors:
        if groups and module_of(t[0]) == module_of(groups[-1][-1][0]):
            groups[-1].append(t)
        else:
            groups.append([t])
    assert len(groups) >= shards, "more shards than modules"
    total = sum(nbytes(d, s) for _, d, s in tensors)
    out, acc, k = [[] for _ in range(shards)], 0, 0
    for i, g in enumerate(groups):
        if out[k] and k < shards - 1 and (acc * shards >= (k + 1) * total or len(groups) - i <= shards - 1 - k):
            k += 1
        out[k] += g
        acc += sum(nbytes(d, s) for _, d, s in g)
    return out


def write_shard(path, tensors):
    header, offset = {}, 0
    for name, dtype, shape in tensors:
        n = nbytes(dtype, shape)
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + n]}
        offset += n
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(len(text).to_bytes(8, "little"))
        f.write(text)
        f.truncate(8 + len(text) + offset)  # the data section: a hole, no blocks on disk
    return offset


def write_replica(directory, tensors, shards, config, extra_files=None):
    """The replica in `directory`; returns the index's total_size. `config` is config.json's object."""
    d = pathlib.Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    weight_map, total = {}, 0
    for i, part in enumerate(split(tensors, shards)):
        name = shard_name(i, shards)
        total += write_shard(d / name, part)
        weight_map.update({t[0]: name for t in part})
    (d / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {"total_size": total}, "weight_map": weight_map}))
    (d / "config.json").write_text(json.dumps(config, indent=1))
    for name, text in (extra_files or {}).items():
        (d / name).write_text(text)
    return total


def fp8_block(weight, scale, shape, block, scale_dtype):
    """An FP8 weight and its block scales [ceil(R/B), ceil(C/B)]."""
    grid = [math.ceil(shape[0] / block), math.ceil(shape[1] / block)]
    return [(weight, "F8_E4M3", shape), (scale, scale_dtype, grid)]


# ---- DeepSeek-V4 / V4.1 as released (bare names; checkpoints-in-the-wild.md 1.1, 1.2) ----

def v4_tensors(c):
    """c: dim, heads, hd, q_lora, o_lora, o_groups, experts, inter, layers, hc, vocab, topk, hash_layers, idx_heads,
    idx_dim, block, ratios (per layer: 0, 4 or 128), mtp (layers), mtp_experts, v41, engram (layer -> rows)."""
    dim, hc, block, v41 = c["dim"], c["hc"], c["block"], c["v41"]

    def fp8(name, shape):
        return fp8_block(name + ".weight", name + ".scale", shape, block, "F8_E8M0")

    def fp4(name, shape):  # I8 [R, C/2] + F8_E8M0 [R, C/32]
        return [(name + ".weight", "I8", [shape[0], shape[1] // 2]),
                (name + ".scale", "F8_E8M0", [shape[0], shape[1] // 32])]

    def block_tensors(p, ratio, hashed, experts, engram_rows):
        t = [(p + "attn_norm.weight", "BF16", [dim]), (p + "ffn_norm.weight", "BF16", [dim])]
        for m in ("attn", "ffn"):
            t += [(f"{p}hc_{m}_fn", "F32", [(2 + hc) * hc, hc * dim]), (f"{p}hc_{m}_base", "F32", [(2 + hc) * hc]),
                  (f"{p}hc_{m}_scale", "F32", [3])]
        a, heads, hd = p + "attn.", c["heads"], c["hd"]
        t += [(a + "attn_sink", "F32", [heads])]
        t += fp8(a + "wq_a", [c["q_lora"], dim]) + [(a + "q_norm.weight", "BF16", [c["q_lora"]])]
        t += fp8(a + "wq_b", [heads * hd, c["q_lora"]]) + fp8(a + "wkv", [hd, dim])
        t += [(a + "kv_norm.weight", "BF16", [hd])]
        t += fp8(a + "wo_a", [c["o_groups"] * c["o_lora"], heads * hd // c["o_groups"]])
        t += fp8(a + "wo_b", [dim, c["o_groups"] * c["o_lora"]])
        if ratio:
            coff = 2 if ratio == 4 else 1
            k = a + "compressor."
            t += [] if v41 else [(k + "ape", "F32", [ratio, coff * hd])]
            t += [(k + "wkv.weight", "BF16", [coff * hd, dim]), (k + "wgate.weight", "BF16", [coff * hd, dim]),
                  (k + "norm.weight", "BF16", [hd])]
        if ratio == 4:
            i, ih, idim = a + "indexer.", c["idx_heads"], c["idx_dim"]
            t += fp8(i + "wq_b", [ih * idim, c["q_lora"]]) + [(i + "weights_proj.weight", "BF16", [ih, dim])]
            if not v41:
                k = i + "compressor."
                t += [(k + "ape", "F32", [4, 2 * idim]), (k + "wkv.weight", "BF16", [2 * idim, dim]),
                      (k + "wgate.weight", "BF16", [2 * idim, dim]), (k + "norm.weight", "BF16", [idim])]
        if engram_rows:  # V4.1's engram table: FP8 with one scale per 32 along a row (1.2, "V4.1 differences")
            t += [(p + "engram.embed.weight", "F8_E4M3", [engram_rows, 256]),
                  (p + "engram.embed.scale", "F8_E8M0", [engram_rows, 8])]
        f = p + "ffn."
        t += [(f + "gate.weight", "BF16", [experts, dim])]
        t += [(f + "gate.tid2eid", "I64", [c["vocab"], c["topk"]])] if hashed else [(f + "gate.bias", "F32", [experts])]
        t += [(f + "gate.bias_vl", "F32", [experts])] if v41 and not hashed else []
        for w, shape in (("w1", [c["inter"], dim]), ("w2", [dim, c["inter"]]), ("w3", [c["inter"], dim])):
            t += fp8(f"{f}shared_experts.{w}", shape)
        for e in range(experts):
            for w, shape in (("w1", [c["inter"], dim]), ("w2", [dim, c["inter"]]), ("w3", [c["inter"], dim])):
                t += fp4(f"{f}experts.{e}.{w}", shape)
        return t

    t = [("embed.weight", "BF16", [c["vocab"], dim])]
    for n in range(c["layers"]):
        t += block_tensors(f"layers.{n}.", c["ratios"][n], n < c["hash_layers"], c["experts"],
                           c["engram"].get(n, 0))
    for m in range(c["mtp"]):
        p = f"mtp.{m}."
        t += block_tensors(p, 0, False, c["mtp_experts"], 0)
        t += [(p + "enorm.weight", "BF16", [dim]), (p + "hnorm.weight", "BF16", [dim])]
        t += fp8(p + "e_proj", [dim, dim]) + fp8(p + "h_proj", [dim, dim])
        t += [] if v41 else [(p + "hc_head_fn", "F32", [hc, hc * dim]), (p + "hc_head_base", "F32", [hc]),
                             (p + "hc_head_scale", "F32", [1])]
        t += [(p + "norm.weight", "BF16", [dim]), (p + "emb.tok_emb.weight", "BF16", [c["vocab"], dim]),
              (p + "head.weight", "BF16", [c["vocab"], dim])]
    t += [("norm.weight", "BF16", [dim]), ("head.weight", "BF16", [c["vocab"], dim])]
    t += [] if v41 else [("hc_head_fn", "F32", [hc, hc * dim]), ("hc_head_base", "F32", [hc]),
                         ("hc_head_scale", "F32", [1])]
    return t


def v4_config(c):
    q = {"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic", "scale_fmt": "ue8m0",
         "weight_block_size": [c["block"], c["block"]]}
    text = {"hidden_size": c["dim"], "num_attention_heads": c["heads"], "head_dim": c["hd"],
            "q_lora_rank": c["q_lora"], "o_lora_rank": c["o_lora"], "o_groups": c["o_groups"],
            "n_routed_experts": c["experts"], "n_shared_experts": 1, "moe_intermediate_size": c["inter"],
            "num_hidden_layers": c["layers"], "hc_mult": c["hc"], "vocab_size": c["vocab"],
            "num_experts_per_tok": c["topk"], "index_n_heads": c["idx_heads"], "index_head_dim": c["idx_dim"],
            "compress_ratios": c["ratios"] + [0], "num_nextn_predict_layers": c["mtp"]}
    if c["v41"]:  # 1.1: model_type deepseek_v41; the quantization_config (with expert_dtype) under text_config
        q.pop("fmt")  # whether V4.1 has fmt is [unverified]; FreeToken #444's listing has none
        q["expert_dtype"] = "fp4"
        return {"architectures": ["DeepseekV41ForCausalLM"], "model_type": "deepseek_v41",
                "text_config": dict(text, dtype="bfloat16", quantization_config=q)}
    return dict(text, architectures=["DeepseekV4ForCausalLM"], model_type="deepseek_v4", expert_dtype="fp4",
                num_hash_layers=c["hash_layers"], torch_dtype="bfloat16", quantization_config=q)


# Which layers compress how is not in the catalogue: transformers' DeepseekV4Config default is this replica's choice
# (two heavily compressed layers, ratio 128, then compressed sparse, ratio 4, and heavily compressed alternating).
def alternating(n):
    return [128 if i < 2 or i % 2 == 0 else 4 for i in range(n)]


V4_FLASH = dict(  # 1.1 "Shape-relevant fields for Flash"; vocab 129280 is V3's (config_671B), V4's [unverified]
    dim=4096, heads=64, hd=512, q_lora=1024, o_lora=1024, o_groups=8, experts=256, inter=2048, layers=43, hc=4,
    vocab=129280, topk=6, hash_layers=3, idx_heads=64, idx_dim=128, block=128, ratios=alternating(43), mtp=1,
    mtp_experts=256, v41=False, engram={})
# V4-Pro: hidden 7168, 128 heads, q_lora 1536, o_groups 16 (1.1); experts of width 3072 (docs/spec.md#v4-geometry:
# an expert w1 [3072, 7168]); 64 shards, 1.6T parameters, about 865 GB (docs/spec.md#v4-memory). 61 layers and 384
# experts are this replica's assumption (V3's depth, K2's expert count: the catalogue gives neither for Pro).
V4_PRO = dict(V4_FLASH, dim=7168, heads=128, q_lora=1536, o_groups=16, inter=3072, layers=61, experts=384,
              mtp_experts=384, ratios=alternating(61))
# V4.1-Flash: 40 layers, 384 experts, 32x32 tiles, 48 shards (1.1); MTP 3 stages of 128 experts (1.2: 1,152 + 1,152
# MTP expert keys); two engram tables [384006168, 256] and [384016682, 256] (1.2; which layers hold them is not
# given: layers 1 and 2 here).
V4_1_FLASH = dict(V4_FLASH, layers=40, experts=384, block=32, ratios=alternating(40), mtp=3, mtp_experts=128,
                  v41=True, hash_layers=0, engram={1: 384006168, 2: 384016682})


# ---- DeepSeek-V3 / R1 and Kimi K2 in Hugging Face names (2.2), FP8 W_scale_inv F32 per 128x128 ----

def v3_tensors(c, expert_form="fp8"):
    """c: hidden, layers, dense, experts, shared, inter, moe_inter, heads, q_lora, kv_lora, nope, rope, v, vocab, mtp.
    expert_form "fp8" (V3, K2-Instruct) or "int4" (K2-Thinking: compressed-tensors pack-quantized, 4.2)."""
    h = c["hidden"]

    def fp8(name, shape):
        return fp8_block(name + ".weight", name + ".weight_scale_inv", shape, 128, "F32")

    def bf16(name, shape):
        return [(name + ".weight", "BF16", shape)]

    def int4(name, shape):  # 4.2: weight_packed I32 [R, C/8], weight_scale BF16 [R, C/32], weight_shape [2]
        return [(name + ".weight_packed", "I32", [shape[0], shape[1] // 8]),
                (name + ".weight_scale", "BF16", [shape[0], shape[1] // 32]), (name + ".weight_shape", "I64", [2])]

    linear = fp8 if expert_form == "fp8" else bf16  # K2-Thinking leaves all but the routed experts BF16 (4.1)
    expert = fp8 if expert_form == "fp8" else int4

    def block(p, dense_mlp):
        t = bf16(p + "input_layernorm", [h]) + bf16(p + "post_attention_layernorm", [h])
        a, heads = p + "self_attn.", c["heads"]
        t += linear(a + "q_a_proj", [c["q_lora"], h]) + bf16(a + "q_a_layernorm", [c["q_lora"]])
        t += linear(a + "q_b_proj", [heads * (c["nope"] + c["rope"]), c["q_lora"]])
        t += linear(a + "kv_a_proj_with_mqa", [c["kv_lora"] + c["rope"], h]) + bf16(a + "kv_a_layernorm", [c["kv_lora"]])
        t += linear(a + "kv_b_proj", [heads * (c["nope"] + c["v"]), c["kv_lora"]])
        t += linear(a + "o_proj", [h, heads * c["v"]])
        m = p + "mlp."
        if dense_mlp:
            return t + linear(m + "gate_proj", [c["inter"], h]) + linear(m + "up_proj", [c["inter"], h]) + \
                linear(m + "down_proj", [h, c["inter"]])
        t += bf16(m + "gate", [c["experts"], h]) + [(m + "gate.e_score_correction_bias", "F32", [c["experts"]])]
        si = c["moe_inter"] * c["shared"]
        t += linear(m + "shared_experts.gate_proj", [si, h]) + linear(m + "shared_experts.up_proj", [si, h])
        t += linear(m + "shared_experts.down_proj", [h, si])
        for e in range(c["experts"]):
            q = f"{m}experts.{e}."
            t += expert(q + "gate_proj", [c["moe_inter"], h]) + expert(q + "up_proj", [c["moe_inter"], h])
            t += expert(q + "down_proj", [h, c["moe_inter"]])
        return t

    t = bf16("model.embed_tokens", [c["vocab"], h])
    for n in range(c["layers"]):
        t += block(f"model.layers.{n}.", n < c["dense"])
    for m in range(c["mtp"]):  # 2.2: the MTP layer, index num_hidden_layers
        p = f"model.layers.{c['layers'] + m}."
        t += block(p, False) + bf16(p + "enorm", [h]) + bf16(p + "hnorm", [h])
        t += linear(p + "eh_proj", [h, 2 * h])  # FP8 here; whether V3 quantizes it is [unverified] (2.2)
        t += bf16(p + "embed_tokens", [c["vocab"], h]) + bf16(p + "shared_head.norm", [h])
        t += bf16(p + "shared_head.head", [c["vocab"], h])
    return t + bf16("model.norm", [h]) + bf16("lm_head", [c["vocab"], h])


def v3_config(c, quantization):
    return {"architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3", "hidden_size": c["hidden"],
            "num_hidden_layers": c["layers"], "first_k_dense_replace": c["dense"], "n_routed_experts": c["experts"],
            "n_shared_experts": c["shared"], "intermediate_size": c["inter"],
            "moe_intermediate_size": c["moe_inter"], "num_attention_heads": c["heads"], "q_lora_rank": c["q_lora"],
            "kv_lora_rank": c["kv_lora"], "qk_nope_head_dim": c["nope"], "qk_rope_head_dim": c["rope"],
            "v_head_dim": c["v"], "vocab_size": c["vocab"], "num_nextn_predict_layers": c["mtp"],
            "torch_dtype": "bfloat16", "quantization_config": quantization}


# DeepSeek-V3 / R1 671B: deepseek-ai/DeepSeek-V3 inference/configs/config_671B.json (dim 7168, 61 layers, 3 dense,
# 256 routed + 1 shared expert, inter 18432, moe_inter 2048, 128 heads, q_lora 1536, kv_lora 512, nope 128, rope 64,
# v 128, vocab 129280) and one MTP layer (2.2); 163 shards (the release's file names, model-000NN-of-000163).
V3 = dict(hidden=7168, layers=61, dense=3, experts=256, shared=1, inter=18432, moe_inter=2048, heads=128,
          q_lora=1536, kv_lora=512, nope=128, rope=64, v=128, vocab=129280, mtp=1)
V3_QUANT = {"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8", "weight_block_size": [128, 128]}
# Kimi K2 (section 4): V3's layout with 384 experts, one dense layer, 64 heads and a 163,840-token vocabulary
# (moonshotai/Kimi-K2-Instruct config.json; no MTP layer); K2-Thinking's routed experts INT4 (4.1, 4.2).
K2 = dict(V3, experts=384, dense=1, heads=64, vocab=163840, mtp=0)
K2_THINKING_QUANT = {  # 4.1, as reproduced there
    "quant_method": "compressed-tensors", "format": "pack-quantized", "quantization_status": "compressed",
    "kv_cache_scheme": None,
    "config_groups": {"group_0": {
        "targets": ["Linear"], "input_activations": None, "output_activations": None,
        "weights": {"num_bits": 4, "type": "int", "symmetric": True, "strategy": "group", "group_size": 32,
                    "dynamic": False, "actorder": None, "block_structure": None, "observer": "minmax",
                    "observer_kwargs": {}}}},
    "ignore": ["lm_head", "re:.*self_attn.*", "re:.*shared_experts.*", "re:.*mlp\\.(gate|up|gate_up|down)_proj.*"]}


# ---- Qwen3 MoE FP8 (section 3): W_scale_inv BF16 per 128x128 ----

def qwen3_moe_fp8_tensors(c):
    h, hd = c["hidden"], c["head_dim"]

    def fp8(name, shape):
        return fp8_block(name + ".weight", name + ".weight_scale_inv", shape, 128, "BF16")

    t = [("model.embed_tokens.weight", "BF16", [c["vocab"], h])]
    for n in range(c["layers"]):
        p = f"model.layers.{n}."
        t += [(p + "input_layernorm.weight", "BF16", [h]), (p + "post_attention_layernorm.weight", "BF16", [h])]
        a = p + "self_attn."
        t += fp8(a + "q_proj", [c["heads"] * hd, h]) + fp8(a + "k_proj", [c["kv_heads"] * hd, h])
        t += fp8(a + "v_proj", [c["kv_heads"] * hd, h]) + fp8(a + "o_proj", [h, c["heads"] * hd])
        t += [(a + "q_norm.weight", "BF16", [hd]), (a + "k_norm.weight", "BF16", [hd])]
        t += [(p + "mlp.gate.weight", "BF16", [c["experts"], h])]
        for e in range(c["experts"]):
            q = f"{p}mlp.experts.{e}."
            t += fp8(q + "gate_proj", [c["moe_inter"], h]) + fp8(q + "up_proj", [c["moe_inter"], h])
            t += fp8(q + "down_proj", [h, c["moe_inter"]])
    return t + [("model.norm.weight", "BF16", [h]), ("lm_head.weight", "BF16", [c["vocab"], h])]


# Qwen3-235B-A22B (Qwen/Qwen3-235B-A22B-FP8 config.json: hidden 4096, 94 layers, 64 heads, 4 KV heads of 128, 128
# experts of width 1536, vocabulary 151936).
QWEN3_235B = dict(hidden=4096, layers=94, heads=64, kv_heads=4, head_dim=128, experts=128, moe_inter=1536,
                  vocab=151936)


def qwen3_config(c):
    return {"architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe", "hidden_size": c["hidden"],
            "num_hidden_layers": c["layers"], "num_attention_heads": c["heads"],
            "num_key_value_heads": c["kv_heads"], "head_dim": c["head_dim"], "num_experts": c["experts"],
            "moe_intermediate_size": c["moe_inter"], "intermediate_size": 12288, "num_experts_per_tok": 8,
            "vocab_size": c["vocab"], "tie_word_embeddings": False, "torch_dtype": "bfloat16",
            "quantization_config": {"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8",
                                    "weight_block_size": [128, 128]}}


# ---- gpt-oss (9.1): MXFP4 experts as _blocks U8 [E, R, C/32, 16] + _scales U8 [E, R, C/32] ----

def gpt_oss_tensors(c):
    h, hd, e, i = c["hidden"], c["head_dim"], c["experts"], c["inter"]
    t = [("model.embed_tokens.weight", "BF16", [c["vocab"], h])]
    for n in range(c["layers"]):
        p = f"model.layers.{n}."
        t += [(p + "input_layernorm.weight", "BF16", [h]), (p + "post_attention_layernorm.weight", "BF16", [h])]
        a = p + "self_attn."
        for proj, rows in (("q_proj", c["heads"] * hd), ("k_proj", c["kv_heads"] * hd), ("v_proj", c["kv_heads"] * hd)):
            t += [(a + proj + ".weight", "BF16", [rows, h]), (a + proj + ".bias", "BF16", [rows])]
        t += [(a + "o_proj.weight", "BF16", [h, c["heads"] * hd]), (a + "o_proj.bias", "BF16", [h]),
              (a + "sinks", "BF16", [c["heads"]])]
        m = p + "mlp."
        t += [(m + "router.weight", "BF16", [e, h]), (m + "router.bias", "BF16", [e])]
        t += [(m + "experts.gate_up_proj_blocks", "U8", [e, 2 * i, h // 32, 16]),
              (m + "experts.gate_up_proj_scales", "U8", [e, 2 * i, h // 32]),
              (m + "experts.gate_up_proj_bias", "BF16", [e, 2 * i]),
              (m + "experts.down_proj_blocks", "U8", [e, h, i // 32, 16]),
              (m + "experts.down_proj_scales", "U8", [e, h, i // 32]),
              (m + "experts.down_proj_bias", "BF16", [e, h])]
    return t + [("model.norm.weight", "BF16", [h]), ("lm_head.weight", "BF16", [c["vocab"], h])]


# gpt-oss-120b (openai/gpt-oss-120b config.json: hidden 2880, 36 layers, 64 heads and 8 KV heads of 64, 128 experts
# of width 2880, vocabulary 201088).
GPT_OSS_120B = dict(hidden=2880, layers=36, heads=64, kv_heads=8, head_dim=64, experts=128, inter=2880, vocab=201088)


def gpt_oss_config(c):
    return {"architectures": ["GptOssForCausalLM"], "model_type": "gpt_oss", "hidden_size": c["hidden"],
            "num_hidden_layers": c["layers"], "num_attention_heads": c["heads"],
            "num_key_value_heads": c["kv_heads"], "head_dim": c["head_dim"], "num_local_experts": c["experts"],
            "intermediate_size": c["inter"], "vocab_size": c["vocab"], "torch_dtype": "bfloat16",
            "quantization_config": {"quant_method": "mxfp4", "modules_to_not_convert": [
                "model.layers.*.self_attn", "model.layers.*.mlp.router", "model.embed_tokens", "lm_head"]}}


# ---- ModelOpt NVFP4 (section 6): W U8 [R, C/2] + W_scale F8_E4M3 [R, C/16] + W_scale_2 F32 [] (+ input_scale) ----

def nvfp4_parts(name, shape):
    return [(name + ".weight", "U8", [shape[0], shape[1] // 2]),
            (name + ".weight_scale", "F8_E4M3", [shape[0], shape[1] // 16]),
            (name + ".weight_scale_2", "F32", []), (name + ".input_scale", "F32", [])]


# nvidia/DeepSeek-R1-0528-FP4: DeepSeek-V3's layout (V3 above, without the MTP layer) with every MLP linear (dense,
# shared and routed experts) NVFP4, as the catalogue's listing shows for the dense layer's down_proj [7168, 9216] U8
# with weight_scale [7168, 1152] and gate_proj [18432, 3584] (6.2); attention, router, embeddings and head BF16 (the
# attention's form is this replica's assumption).
R1_NVFP4 = dict(V3, mtp=0)
R1_NVFP4_QUANT = {"quant_method": "modelopt", "quant_algo": "NVFP4", "producer": {"name": "modelopt"},
                  "config_groups": {"group_0": {"weights": {"dynamic": False, "num_bits": 4, "type": "float",
                                                            "group_size": 16}, "targets": ["Linear"]}},
                  "ignore": ["lm_head", "model.embed_tokens", "model.layers.*.self_attn", "model.layers.*.mlp.gate"]}


def nvfp4_mlp(tensors):
    """V3's tensors with every MLP linear's FP8 weight and scale replaced by ModelOpt's NVFP4 parts, the rest of the
    FP8 (attention) dequantized to BF16."""
    out = []
    for name, dtype, shape in tensors:
        if name.endswith("_scale_inv"):
            continue
        if dtype == "F8_E4M3" and ".mlp." in name:
            out += nvfp4_parts(name[: -len(".weight")], shape)
        else:
            out.append((name, "BF16" if dtype == "F8_E4M3" else dtype, shape))
    return out


# ---- AutoAWQ GEMM (section 7.1): M.qweight I32 [C, R/8], M.qzeros I32 [C/G, R/8], M.scales F16 [C/G, R] ----

def awq_tensors(c, group=128):
    h, hd = c["hidden"], c["head_dim"]

    def awq(name, rows, cols):
        return [(name + ".qweight", "I32", [cols, rows // 8]), (name + ".qzeros", "I32", [cols // group, rows // 8]),
                (name + ".scales", "F16", [cols // group, rows])]

    t = [("model.embed_tokens.weight", "F16", [c["vocab"], h])]
    for n in range(c["layers"]):
        p = f"model.layers.{n}."
        a = p + "self_attn."
        q, kv = c["heads"] * hd, c["kv_heads"] * hd
        for proj, rows in (("q_proj", q), ("k_proj", kv), ("v_proj", kv)):
            t += awq(a + proj, rows, h) + [(a + proj + ".bias", "F16", [rows])]
        t += awq(a + "o_proj", h, q)
        m = p + "mlp."
        t += awq(m + "gate_proj", c["inter"], h) + awq(m + "up_proj", c["inter"], h) + awq(m + "down_proj", h, c["inter"])
        t += [(p + "input_layernorm.weight", "F16", [h]), (p + "post_attention_layernorm.weight", "F16", [h])]
    return t + [("model.norm.weight", "F16", [h]), ("lm_head.weight", "F16", [c["vocab"], h])]


# Qwen/Qwen2.5-72B-Instruct-AWQ (its config.json: hidden 8192, 80 layers, 64 heads and 8 KV heads of 128,
# intermediate 29568, vocabulary 152064; quantization_config as 7.1 gives AutoAWQ's, group 128).
QWEN25_72B = dict(hidden=8192, layers=80, heads=64, kv_heads=8, head_dim=128, inter=29568, vocab=152064)


def awq_config(c):
    return {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": c["hidden"],
            "num_hidden_layers": c["layers"], "num_attention_heads": c["heads"],
            "num_key_value_heads": c["kv_heads"], "intermediate_size": c["inter"], "vocab_size": c["vocab"],
            "torch_dtype": "float16", "tie_word_embeddings": False,
            "quantization_config": {"bits": 4, "group_size": 128, "modules_to_not_convert": None,
                                    "quant_method": "awq", "version": "gemm", "zero_point": True}}
