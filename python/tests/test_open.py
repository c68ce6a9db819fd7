"""minifloat.open and the checkpoint commands as functions (minifloat/_open.py, minifloat/_checkpoint.py).

The reference for every value is outside the reader: the `minifloat dequantize` command's files (read back by
safetensors), each library's own dequantization (compressed-tensors, ModelOpt, gguf-py), and transformers' model of
the dequantized checkpoint. The miniatures are the CLI's own: `make-example-checkpoint --like X` for every X it
lists, and its --arch examples converted into every --format."""
import json
import os
import re
import pathlib
import subprocess
import sys
import threading

import numpy as np
import pytest

import minifloat
from checkpoint_util import minifloat as cli, same_bits
from conftest import need

os.environ.setdefault("HF_HUB_OFFLINE", "1")


LIKES = ["deepseek-v4-release", "deepseek-v4.1", "deepseek-v3", "qwen-fp8", "fp8-per-tensor", "modelopt-fp8-pc-pt",
         "modelopt-w4a16-awq", "modelopt-w8a16", "modelopt-w8a8-sq", "modelopt-w4a8-awq", "autoawq", "gptq",
         "gptq-v2", "compressed-tensors-w4a16", "compressed-tensors-w4a16-asym", "kimi-k2-thinking",
         "compressed-tensors-mixed-nvfp4"]


def test_every_like_is_tested():
    """LIKES is the CLI's own list (make-example-checkpoint --help: --like TEXT:{...}), so none goes untested."""
    r = cli("make-example-checkpoint", "--help")
    assert r.returncode == 0, r.stderr
    listed = re.search(r"--like TEXT:\{([^}]*)\}", r.stdout)
    assert listed, r.stdout
    assert listed.group(1).split(",") == LIKES


def load(path):
    """Every shard's tensors (safetensors' own reader)."""
    from safetensors.torch import load_file
    path, out = pathlib.Path(path), {}
    for f in [path] if path.is_file() else sorted(path.glob("*.safetensors")):
        out.update(load_file(str(f)))
    return out


def cli_dequantized(src, dst, dtype):
    """The command's output tensors, or None with its message when it refuses the checkpoint."""
    r = cli("dequantize", src, dst, "--dtype", dtype)
    if r.returncode != 0:
        return None, r.stderr
    return load(dst), ""


def assert_reads_like_the_cli(torch, src, tmp_path):
    """Every tensor of minifloat.open(src) bit for bit the command's f32 and bf16 outputs, the same names in order."""
    want32, err = cli_dequantized(src, tmp_path / "f32", "f32")
    if want32 is None:
        with pytest.raises(minifloat.CheckpointError) as e:
            minifloat.open(src)
        message = err.strip().removeprefix("minifloat: error: ").removeprefix("minifloat: ")
        assert str(e.value) in err, (str(e.value), err)
        assert message, err
        return False
    want16, _ = cli_dequantized(src, tmp_path / "bf16", "bf16")
    with minifloat.open(src, framework="pt") as ck:
        assert sorted(ck.keys()) == sorted(want32), (sorted(ck.keys()), sorted(want32))
        for name in ck:
            info = ck.info(name)
            assert list(info["shape"]) == list(want32[name].shape), name
            got32 = ck.get(name)
            if info["kept"]:
                assert torch.equal(got32, want32[name]), name
                continue
            same_bits(torch, got32, want32[name], name + " (f32)")
            same_bits(torch, ck.get(name, dtype="bfloat16"), want16[name], name + " (bf16)")
    return True


@pytest.mark.parametrize("like", LIKES)
def test_like_releases_read_as_the_cli_dequantizes(tmp_path, like):
    torch = need("torch")
    r = cli("make-example-checkpoint", tmp_path / "src", "--like", like)
    assert r.returncode == 0, r.stderr
    read = assert_reads_like_the_cli(torch, tmp_path / "src", tmp_path)
    assert read == (like != "modelopt-w4a8-awq")  # the one form minifloat refuses, by name


# Every --format convert writes, from the --arch examples: the dialects beyond the --like releases.
FORMATS = [("llama", "nvfp4", "compressed-tensors"), ("llama", "mxfp4", "compressed-tensors"),
           ("llama", "mxfp8", "compressed-tensors"), ("llama", "fp8-block", "compressed-tensors"),
           ("llama", "nvfp4", "modelopt"), ("llama", "mxfp4", "modelopt"), ("llama", "mxfp8", "modelopt"),
           ("llama", "fp8-block", "transformers-fp8"), ("llama", "mxfp8", "transformers-fp8"),
           ("llama", "nvfp4", "minifloat"), ("llama", "mxfp4", "minifloat"),
           ("deepseek-v4", "deepseek-v4", "deepseek"), ("v4-like", "deepseek-v4", "minifloat"),
           ("qwen-moe", "fp8-block", "deepseek")]


@pytest.mark.parametrize("arch,recipe,fmt", FORMATS, ids=[f"{a}-{r}-{f}" for a, r, f in FORMATS])
def test_converted_formats_read_as_the_cli_dequantizes(tmp_path, arch, recipe, fmt):
    torch = need("torch")
    r = cli("make-example-checkpoint", tmp_path / "src", "--arch", arch)
    assert r.returncode == 0, r.stderr
    r = cli("convert", tmp_path / "src", tmp_path / "q", "--recipe", recipe, "--format", fmt)
    assert r.returncode == 0, r.stderr
    assert assert_reads_like_the_cli(torch, tmp_path / "q", tmp_path)


def test_gpt_oss_blocks_read_as_the_cli_dequantizes(tmp_path):
    """gpt-oss's MXFP4 experts (X_blocks + X_scales), from a GptOss model transformers builds."""
    torch = need("torch")
    from test_convert_gpt_oss import tiny_gpt_oss
    tiny_gpt_oss(torch, tmp_path / "src")
    r = cli("convert", tmp_path / "src", tmp_path / "q", "--recipe", "mxfp4", "--format", "gpt-oss")
    assert r.returncode == 0, r.stderr
    assert assert_reads_like_the_cli(torch, tmp_path / "q", tmp_path)
    with minifloat.open(tmp_path / "q") as ck:
        assert {ck.info(n)["dialect"] for n in ck} >= {"blocks", "plain"}


@pytest.mark.parametrize("scheme", ["mxfp4", "nvfp4", "fp8-1x128"])
def test_quantize_output_reads_as_the_cli_dequantizes(tmp_path, scheme):
    """A file `minifloat quantize` wrote (NAME, NAME_scale, scheme in __metadata__): read as dequantize reads it."""
    torch = need("torch")
    from safetensors.numpy import save_file
    rng = np.random.default_rng(0)
    save_file({"a": rng.standard_normal((64, 256)).astype(np.float32),
               "b": rng.standard_normal((32, 128)).astype(np.float32)}, str(tmp_path / "in.safetensors"))
    r = cli("quantize", "--scheme", scheme, tmp_path / "in.safetensors", tmp_path / "q.safetensors")
    assert r.returncode == 0, r.stderr
    want, err = cli_dequantized(tmp_path / "q.safetensors", tmp_path / "out.safetensors", "f32")
    assert want is not None, err
    with minifloat.open(tmp_path / "q.safetensors", framework="pt") as ck:
        assert sorted(ck.keys()) == sorted(want) == ["a", "b"]
        for name in ck:
            assert ck.info(name)["dialect"] == "quantize" and ck.info(name)["stored"][:2] == [name, name + "_scale"]
            same_bits(torch, ck.get(name), want[name], name)
            q = ck.get_raw(name)
            np.testing.assert_array_equal(q.dequantize().view(np.uint32), ck.get(name).numpy().view(np.uint32))


def llama_gguf(tmp_path, recipe):
    r = cli("make-example-checkpoint", tmp_path / "src", "--arch", "llama")
    assert r.returncode == 0, r.stderr
    out = tmp_path / f"m-{recipe}.gguf"
    r = cli("convert", tmp_path / "src", out, "--recipe", recipe, "--format", "gguf", "--no-tokenizer")
    assert r.returncode == 0, r.stderr
    return out


@pytest.mark.parametrize("recipe", ["q8_0", "mxfp4", "bf16"])
def test_gguf_reads_as_the_cli_and_gguf_py(tmp_path, recipe):
    """A GGUF file: the CLI's dequantized tensors, and gguf-py's own dequantize of each tensor."""
    torch = need("torch")
    gguf = need("gguf")
    from gguf.quants import dequantize
    path = llama_gguf(tmp_path, recipe)
    want, err = cli_dequantized(path, tmp_path / "out.safetensors", "f32")
    assert want is not None, err
    reader = gguf.GGUFReader(str(path))
    with minifloat.open(path) as ck:
        assert ck.keys() == [t.name for t in reader.tensors]
        assert ck.metadata == minifloat.inspect(path)["metadata"]  # as inspect --json shows it
        assert ck.metadata["general.architecture"] == '"llama"'
        for t in reader.tensors:
            got = ck.get(t.name)
            ref = dequantize(t.data, t.tensor_type).reshape(got.shape)
            assert ck.info(t.name)["scheme"] == t.tensor_type.name
            np.testing.assert_array_equal(got.view(np.uint32), np.asarray(ref, np.float32).view(np.uint32),
                                          err_msg=t.name)
            same_bits(torch, torch.from_numpy(got), want[t.name], t.name)


# ---- against each library's own dequantization (python/tests/test_dialects.py builds the checkpoints) ----

@pytest.mark.parametrize("preset", ["NVFP4", "MXFP4", "FP8_BLOCK", "W4A16_ASYM"])
def test_compressed_tensors_library(tmp_path, preset):
    torch = need("torch")
    from compressed_tensors.compressors import BaseCompressor
    from compressed_tensors.quantization import QuantizationConfig
    from test_dialects import ct_checkpoint
    src = tmp_path / "ct"
    qc = QuantizationConfig.model_validate(ct_checkpoint(torch, preset, src))
    scheme, compressor = qc.config_groups["group_0"], BaseCompressor.get_value_from_registry(qc.format)
    stored = load(src)
    modules = sorted({k.rsplit(".", 1)[0] for k in stored if k.endswith(".weight_scale")})
    assert len(modules) == 14
    with minifloat.open(src, framework="pt") as ck:
        for mod in modules:
            parts = {k[len(mod) + 1:]: v for k, v in stored.items() if k.rsplit(".", 1)[0] == mod}
            want = compressor.decompress(parts, scheme)["weight"]
            same_bits(torch, ck.get(mod + ".weight", dtype="bfloat16"), want, mod)
            same_bits(torch, ck.get(mod + ".weight").to(torch.bfloat16), want, mod + " (f32 rounded)")


@pytest.mark.parametrize("algo", ["NVFP4", "MXFP8"])
def test_modelopt_library(tmp_path, algo):
    torch = need("torch")
    qt = need("modelopt.torch.quantization.qtensor")
    from test_dialects import modelopt_checkpoint
    src = tmp_path / "mo"
    modelopt_checkpoint(torch, algo, src)
    stored = load(src)
    modules = sorted({k[:-7] for k in stored if k.endswith(".weight") and k[:-7] + ".weight_scale" in stored})
    assert len(modules) == 14
    with minifloat.open(src, framework="pt") as ck:
        for mod in modules:
            w, s = stored[mod + ".weight"], stored[mod + ".weight_scale"]
            if algo == "NVFP4":
                want = qt.NVFP4QTensor(torch.Size([w.shape[0], w.shape[1] * 2]), torch.bfloat16, w).dequantize(
                    dtype=torch.bfloat16, scale=s, double_scale=stored[mod + ".weight_scale_2"],
                    block_sizes={-1: 16})
            else:
                want = qt.MXFP8QTensor(w.shape, torch.bfloat16, w).dequantize(dtype=torch.bfloat16, scale=s,
                                                                              block_sizes={-1: 32})
            same_bits(torch, ck.get(mod + ".weight", dtype="bfloat16"), want, mod, zero_sign=algo != "NVFP4")


# ---- info, get_raw, dtypes, threads, errors ----

def nvfp4_llama(tmp_path):
    r = cli("make-example-checkpoint", tmp_path / "src", "--arch", "llama")
    assert r.returncode == 0, r.stderr
    r = cli("convert", tmp_path / "src", tmp_path / "q", "--recipe", "nvfp4", "--format", "modelopt")
    assert r.returncode == 0, r.stderr
    return tmp_path / "q"


def test_info_and_get_raw(tmp_path):
    torch = need("torch")
    src = nvfp4_llama(tmp_path)
    stored = load(src)
    name = "model.layers.0.mlp.down_proj.weight"
    with minifloat.open(src) as ck:
        info = ck.info(name)
        assert info["dialect"] == "nvfp4" and info["scheme"] == "nvfp4" and info["form"] == "W + W_scale + W_scale_2"
        assert info["stored"][:3] == [name, name + "_scale", name + "_scale_2"]
        assert info["dtype"] == "U8" and info["shape"] == [stored[name].shape[0], stored[name].shape[1] * 2]
        assert info["bytes"] == sum(stored[n].numel() * stored[n].element_size() for n in info["stored"])
        q = ck.get_raw(name)
        assert q.shape == tuple(info["shape"]) and q.block == (1, 16)
        # the stored bytes, as they are: codes, E4M3 block scales, the F32 second level
        assert torch.equal(q.codes_as(torch.float4_e2m1fn_x2).view(torch.uint8), stored[name])
        assert torch.equal(q.scales_as(torch.float8_e4m3fn), stored[name + "_scale"])
        assert q.tensor_scale == float(stored[name + "_scale_2"])
        # and its dequantization is get()'s
        np.testing.assert_array_equal(q.dequantize().view(np.uint32), ck.get(name).view(np.uint32))
        norm = "model.norm.weight"
        assert ck.info(norm)["dialect"] == "plain"
        with pytest.raises(minifloat.CheckpointError) as e:
            ck.get_raw(norm)
        assert e.value.tensor == norm and e.value.file.endswith(".safetensors")
        f16 = ck.get(name, dtype="float16")
        assert f16.dtype == np.float16
        np.testing.assert_array_equal(f16, ck.get(name).astype(np.float16))  # one rounding of the exact value
        with pytest.raises(KeyError):
            ck.get(name + "_scale")  # a pair's part is no tensor of the model
        with pytest.raises(ValueError, match="dtype"):
            ck.get(name, dtype="int8")
        assert name in ck and len(ck) == len(ck.keys())
    with pytest.raises(ValueError, match="closed"):
        ck.get(name)


def test_integer_pairs_have_no_quantized_tensor(tmp_path):
    r = cli("make-example-checkpoint", tmp_path / "src", "--like", "gptq")
    assert r.returncode == 0, r.stderr
    with minifloat.open(tmp_path / "src") as ck:
        name = next(n for n in ck if ck.info(n)["dialect"] == "integer")
        with pytest.raises(minifloat.CheckpointError, match="no QuantizedTensor form") as e:
            ck.get_raw(name)
        assert e.value.tensor == name


def test_threads_read_the_same_values(tmp_path):
    src = nvfp4_llama(tmp_path)
    with minifloat.open(src) as ck:
        want = {n: ck.get(n) for n in ck}
        got, errors = {}, []

        def read(names):
            try:
                for n in names:
                    got[n] = ck.get(n, threads=2)
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(e)
        names = ck.keys()
        threads = [threading.Thread(target=read, args=(names[i::4],)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, errors
        for n in names:
            np.testing.assert_array_equal(got[n].view(np.uint8), want[n].view(np.uint8), err_msg=n)


def test_refused_checkpoint_names_the_tensor(tmp_path):
    """A tensor that looks quantized and pairs with nothing: CheckpointError at open, as dequantize refuses it."""
    from safetensors.numpy import save_file
    src = tmp_path / "bad"
    src.mkdir()
    save_file({"a.weight": np.zeros((4, 32), np.uint8), "b.weight": np.ones((4, 4), np.float32)},
              str(src / "model.safetensors"))
    (src / "config.json").write_text(json.dumps({"model_type": "llama"}))
    r = cli("dequantize", src, tmp_path / "out")
    with pytest.raises(minifloat.CheckpointError) as e:
        minifloat.open(src)
    if r.returncode != 0:
        assert str(e.value) in r.stderr
        assert e.value.file is not None


# ---- the commands as functions ----

def test_inspect_is_the_cli_json(tmp_path):
    src = nvfp4_llama(tmp_path)
    r = cli("inspect", src, "--json")
    assert r.returncode == 0, r.stderr
    assert minifloat.inspect(src) == json.loads(r.stdout)
    gguf_path = llama_gguf(tmp_path, "q8_0")
    r = cli("inspect", gguf_path, "--json")
    assert minifloat.inspect(gguf_path) == json.loads(r.stdout)


def test_verify_dequantize_memory_convert(tmp_path):
    src = tmp_path / "src"
    minifloat.make_example_checkpoint(src, arch="llama")
    calls = []
    report = minifloat.convert(src, tmp_path / "q", "nvfp4", format="compressed-tensors",
                               progress=lambda done, total: calls.append((done, total)))
    assert report["shards_written"] == 2 and report["tensors"]
    assert calls and calls[-1][0] == calls[-1][1] and all(a[0] <= b[0] for a, b in zip(calls, calls[1:]))
    assert json.loads((tmp_path / "q" / "config.json").read_text())["quantization_config"]["format"] == \
        "nvfp4-pack-quantized"
    v = minifloat.verify(tmp_path / "q")
    r = cli("verify", tmp_path / "q")
    assert r.returncode == 0 and f"{v['tensors']} tensors, {v['pairs']} quantized pairs" in r.stdout, (v, r.stdout)
    assert v["config_rules"] == "compressed-tensors"
    d = minifloat.dequantize(tmp_path / "q", tmp_path / "deq", dtype="bf16")
    assert d["shards_written"] == 2
    r = cli("dequantize", tmp_path / "q", tmp_path / "deq-cli", "--dtype", "bf16")
    assert r.returncode == 0, r.stderr
    for f in sorted((tmp_path / "deq").glob("*.safetensors")):
        assert f.read_bytes() == (tmp_path / "deq-cli" / f.name).read_bytes(), f.name
    m = minifloat.memory(src / "config.json", "nvfp4")
    r = cli("memory", "--config", src / "config.json", "--recipe", "nvfp4")
    assert r.returncode == 0, r.stderr
    assert f"total: {m['params']} parameters" in r.stdout
    with pytest.raises(ValueError, match="format"):
        minifloat.convert(src, tmp_path / "x", "nvfp4", format="no-such-format")
    assert not (tmp_path / "x").exists()


def test_inspect_refusal_carries_the_listing(tmp_path):
    """A checkpoint the other commands refuse: the CLI lists it and exits 2; inspect raises with the listing."""
    r = cli("make-example-checkpoint", tmp_path / "src", "--like", "modelopt-w4a8-awq")
    assert r.returncode == 0, r.stderr
    r = cli("inspect", tmp_path / "src", "--json")
    assert r.returncode == 2
    with pytest.raises(minifloat.CheckpointError) as e:
        minifloat.inspect(tmp_path / "src")
    assert e.value.report == json.loads(r.stdout)
    assert str(e.value) == e.value.report["not_understood"] and str(e.value) in r.stderr


def test_progress_bar_with_tqdm(tmp_path, capsys):
    need("tqdm")
    src = tmp_path / "src"
    minifloat.make_example_checkpoint(src, arch="llama")
    minifloat.dequantize(src, tmp_path / "deq", progress=True)
    err = capsys.readouterr().err
    assert "dequantize" in err and "100%" in err, err


def test_progress_callback_errors_are_raised(tmp_path):
    src = tmp_path / "src"
    minifloat.make_example_checkpoint(src, arch="llama")

    def stop(done, total):
        raise RuntimeError("stop here")
    with pytest.raises(RuntimeError, match="stop here"):
        minifloat.dequantize(src, tmp_path / "deq", progress=stop, threads=1)
    # stopped at the first call: no shard whole, so none written (and no temporary file left)
    assert not list((tmp_path / "deq").glob("*")) if (tmp_path / "deq").exists() else True


def test_verify_names_the_tensor(tmp_path):
    """A NaN block scale: verify's CheckpointError carries the tensor, as the CLI names it."""
    from safetensors.torch import load_file, save_file
    torch = need("torch")
    src = nvfp4_llama(tmp_path)
    shard = sorted(src.glob("*.safetensors"))[0]
    tensors = load_file(str(shard))
    name = next(k for k in tensors if k.endswith("_scale_2"))
    tensors[name] = torch.tensor(float("nan"), dtype=torch.float32).reshape(tensors[name].shape)
    save_file(tensors, str(shard), metadata={"format": "pt"})
    r = cli("verify", src)
    assert r.returncode != 0
    with pytest.raises(minifloat.CheckpointError) as e:
        minifloat.verify(src)
    assert e.value.tensor and e.value.tensor in r.stderr


# ---- transformers: a model loaded through minifloat.open, no dequantized copy written ----

def load_through_open(transformers, torch, path):
    """docs/python.md's recipe: config.json less its quantization_config, and the weights from minifloat.open."""
    config = transformers.AutoConfig.from_pretrained(path)
    if hasattr(config, "quantization_config"):
        del config.quantization_config  # the weights arrive dequantized
    with minifloat.open(path) as ck:
        model_class = getattr(transformers, config.architectures[0])  # LlamaForCausalLM, ...
        model, info = model_class.from_pretrained(None, config=config, state_dict=ck.state_dict("bfloat16"),
                                                  dtype=torch.bfloat16, output_loading_info=True)
    return model.eval(), info


@pytest.mark.parametrize("recipe,fmt", [("nvfp4", "compressed-tensors"), ("mxfp4", "modelopt"),
                                        ("fp8-block", "transformers-fp8")])
def test_transformers_logits_through_open(tmp_path, recipe, fmt):
    torch = need("torch")
    transformers = need("transformers")
    minifloat.make_example_checkpoint(tmp_path / "src", arch="llama")
    minifloat.convert(tmp_path / "src", tmp_path / "q", recipe, format=fmt)
    r = cli("dequantize", tmp_path / "q", tmp_path / "deq", "--dtype", "bf16")
    assert r.returncode == 0, r.stderr
    want = transformers.AutoModelForCausalLM.from_pretrained(tmp_path / "deq", dtype=torch.bfloat16).eval()
    got, info = load_through_open(transformers, torch, tmp_path / "q")
    assert not info["missing_keys"] and not info["unexpected_keys"], info
    for k, v in want.state_dict().items():
        same_bits(torch, got.state_dict()[k], v, k)
    ids = torch.tensor([[3, 1, 4, 1, 5, 9, 2, 6]])
    with torch.no_grad():
        a, b = got(ids).logits, want(ids).logits
    assert torch.isfinite(b).all()
    same_bits(torch, a, b, "logits")


# ---- bounded memory on a checkpoint larger than the process may allocate ----

BOUNDED = r"""
import resource, sys
import numpy as np
import minifloat
limit = int(sys.argv[2])
resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))
try:  # the limit works: one allocation of the checkpoint's size fails
    np.ones(int(sys.argv[3]), np.uint8)
    print("limit not enforced"); sys.exit(3)
except MemoryError:
    pass
n = 0
with minifloat.open(sys.argv[1]) as ck:
    for name in ck:
        a = ck.get(name)
        assert a.shape == tuple(ck.info(name)["shape"]) and float(a[-1, -1]) == 0.0
        n += 1
        del a
print("read", n)
"""


def test_memory_stays_bounded(tmp_path):
    """8 BF16 tensors of 256 MiB in a sparse file (2 GiB), read one at a time by a process whose data segment may
    not pass 1.5 GiB: the shards are mapped, not copied, and each f32 result (512 MiB) is freed before the next."""
    rows, cols, count = 8192, 16384, 8
    header = {f"layers.{i}.weight": {"dtype": "BF16", "shape": [rows, cols],
                                     "data_offsets": [i * rows * cols * 2, (i + 1) * rows * cols * 2]}
              for i in range(count)}
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    path = tmp_path / "model.safetensors"
    with open(path, "wb") as f:
        f.write(len(text).to_bytes(8, "little") + text)
        f.truncate(8 + len(text) + count * rows * cols * 2)  # sparse: no disk used
    script = tmp_path / "bounded.py"
    script.write_text(BOUNDED)
    limit = 3 << 29  # 1.5 GiB
    total = count * rows * cols * 2
    assert total > limit
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    r = subprocess.run([sys.executable, str(script), str(path), str(limit), str(total)], capture_output=True,
                       text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"read {count}" in r.stdout
