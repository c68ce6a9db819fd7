"""`minifloat inspect | verify --headers-only | memory` over HTTP range requests (docs/checkpoints.md, "Remote
checkpoints"), against a server this test starts on 127.0.0.1: Python's http.server with a Range handler written
here, which counts the bytes it serves and can misbehave on purpose.

The reference for every good run is the same command on the same files on disk: the output over HTTP must be
identical, and the bytes served a small share of the files' sizes (the shards' data sections are sparse holes: a
reading that touched them would be counted here).
"""
import http.server
import json
import os
import pathlib
import re
import subprocess
import threading
import time
import urllib.parse

import pytest

import header_replica as hr
from checkpoint_util import EXE, minifloat

TOKEN = "hf_remote_test_token_0123456789"
# Qwen3 MoE FP8 (header_replica.py, section 3 of checkpoints-in-the-wild.md) cut to 17 layers of 8 experts: 1,040
# tensors in 16 shards, 2.6 GB of sparse data.
SMALL_QWEN3 = dict(hr.QWEN3_235B, layers=17, experts=8)


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, root):
        super().__init__(("127.0.0.1", 0), Handler)
        self.root = pathlib.Path(root)
        self.mode = "good"
        self.served = 0  # body bytes written
        self.log = []  # (path, Authorization header or None)
        self.lock = threading.Lock()

    @property
    def base(self):
        return f"http://127.0.0.1:{self.server_address[1]}"

    @property
    def cdn(self):
        """The same server under another host name: the Hub's CDN stands for it (a different origin)."""
        return f"http://localhost:{self.server_address[1]}"


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def send_body(self, data):
        """False once the client has hung up."""
        try:
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            return False
        with self.server.lock:
            self.server.served += len(data)
        return True

    def do_GET(self):
        s = self.server
        with s.lock:
            s.log.append((self.path, self.headers.get("Authorization")))
        path = self.path
        m = re.fullmatch(r"/org/repo/resolve/([^/]+)/(.+)", path)
        if m:  # the Hub: /ORG/REPO/resolve/REV/FILE, branch main at commit 0123abcd, sent on to its CDN
            if m.group(1) not in ("main", "0123abcd"):
                return self.status(404)
            return self.redirect(f"{s.cdn}/cdn/{m.group(2)}", {"X-Repo-Commit": "0123abcd"})
        if s.mode == "redirect_loop":
            return self.redirect(f"{s.base}{path}")
        name = path.removeprefix("/cdn/").removeprefix("/files/")
        file = s.root / name
        if not file.is_file():
            return self.status(404)
        size = file.stat().st_size
        if s.mode == "stall":
            time.sleep(30)
            return self.status(500)
        rng = re.fullmatch(r"bytes=(\d+)-(\d+)", self.headers.get("Range", ""))
        if rng is None or s.mode == "ignore_range":
            return self.whole(file, size)
        first, last = int(rng.group(1)), min(int(rng.group(2)), size - 1)
        if first >= size:
            self.send_response(416)
            self.send_header("Content-Range", f"bytes */{size}")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        with open(file, "rb") as f:
            f.seek(first)
            data = f.read(last - first + 1)
        shown_first, shown_last = (first + 1, last + 1) if s.mode == "wrong_range" else (first, last)
        self.send_response(206)
        self.send_header("Content-Range", f"bytes {shown_first}-{shown_last}/{size}")
        etag = f'"{time.monotonic_ns()}"' if s.mode == "changing_etag" else f'"{size}"'
        self.send_header("ETag", etag)
        if s.mode == "truncate":
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.send_body(data[: len(data) // 2])
            self.close_connection = True
            return
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.send_body(data)

    def whole(self, file, size):
        self.send_response(200)
        self.send_header("Content-Length", str(size))
        self.end_headers()
        with open(file, "rb") as f:
            while (chunk := f.read(1 << 16)) and self.send_body(chunk):
                pass

    def redirect(self, location, headers=None):
        self.send_response(302)
        self.send_header("Location", location)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def status(self, code):
        self.send_response(code)
        self.send_header("Content-Length", "0")
        self.end_headers()


@pytest.fixture(scope="module")
def replica(tmp_path_factory):
    d = tmp_path_factory.mktemp("qwen3-remote")
    tensors = hr.qwen3_moe_fp8_tensors(SMALL_QWEN3)
    assert len(tensors) == 1040
    hr.write_replica(d, tensors, 16, hr.qwen3_config(SMALL_QWEN3))
    return d


@pytest.fixture()
def server(replica):
    s = Server(replica)
    t = threading.Thread(target=s.serve_forever, daemon=True)
    t.start()
    yield s
    s.shutdown()
    s.server_close()


def run(*args, env=None, cwd=None):
    """The command with HF_* and the bound of the test's choosing; HOME elsewhere so no real token is read."""
    e = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
    e.update({"HOME": "/nonexistent", "MINIFLOAT_HTTP_TIMEOUT": "5", "MINIFLOAT_HTTP_RETRIES": "1"})
    e.update(env or {})
    start = time.monotonic()
    r = subprocess.run([str(EXE), *map(str, args)], capture_output=True, text=True, env=e, cwd=cwd, timeout=60)
    return r, time.monotonic() - start


def file_bytes(d):
    return sum(f.stat().st_size for f in d.iterdir())


def test_inspect_over_http_reads_headers_only_and_prints_what_local_prints(replica, server):
    local = minifloat("inspect", "--headers-only", replica)
    assert local.returncode == 0, local.stderr
    # 17 layers x (4 attention + 8 experts x 3) FP8 pairs, worked from SMALL_QWEN3.
    assert "schemes (from tensor pairs): e4m3-128x128-bf16 x 476\n" in local.stdout, local.stdout
    r, _ = run("inspect", f"{server.base}/files/model.safetensors.index.json")
    assert r.returncode == 0, r.stderr
    assert r.stdout == local.stdout
    total = file_bytes(replica)
    assert server.served < total / 100, (server.served, total)
    # The report on stderr: what the server counted, of the files' sizes (16 shards, the index, config.json).
    m = re.search(r"over HTTP: read (\d+) bytes of the (\d+) bytes in (\d+) files", r.stderr)
    assert m, r.stderr
    assert int(m.group(1)) == server.served
    assert int(m.group(2)) == total
    assert int(m.group(3)) == 18


def test_verify_and_json_over_http_match_local(replica, server):
    for args in (["verify", "--headers-only"], ["inspect", "--json"]):
        local = minifloat(*args, replica) if args[0] == "verify" else minifloat(*args, "--headers-only", replica)
        assert local.returncode == 0, local.stderr
        r, _ = run(*args, f"{server.base}/files/model.safetensors.index.json")
        assert r.returncode == 0, r.stderr
        assert r.stdout == local.stdout


def test_verify_over_http_needs_headers_only(server):
    r, _ = run("verify", f"{server.base}/files/model.safetensors.index.json")
    assert r.returncode == 2, r.stderr
    assert "--headers-only" in r.stderr
    assert server.log == []


def test_single_shard_url(replica, server):
    name = hr.shard_name(3, 16)
    local = minifloat("inspect", "--headers-only", replica / name)
    r, _ = run("inspect", f"{server.base}/files/{name}")
    assert r.returncode == 0, r.stderr
    assert r.stdout == local.stdout


def test_hf_location_follows_the_hubs_redirect_and_keeps_the_token_on_its_host(replica, server):
    env = {"HF_ENDPOINT": server.base, "HF_TOKEN": TOKEN}
    local = minifloat("inspect", "--headers-only", replica)
    r, _ = run("inspect", "hf://org/repo@0123abcd", env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout == local.stdout
    assert TOKEN not in r.stdout + r.stderr
    hub = [(p, a) for p, a in server.log if p.startswith("/org/repo/resolve/0123abcd/")]
    cdn = [(p, a) for p, a in server.log if p.startswith("/cdn/")]
    assert hub and cdn
    assert all(a == f"Bearer {TOKEN}" for _, a in hub), hub
    assert all(a is None for _, a in cdn), cdn  # never forwarded to the CDN's host
    # Every file the command read came from the pinned revision, at the path huggingface_hub itself resolves
    # (hf_hub_url: {endpoint}/{repo_id}/resolve/{revision}/{filename}).
    from huggingface_hub import hf_hub_url
    files = ["config.json", "hf_quant_config.json", "model.safetensors.index.json"] + [
        hr.shard_name(i, 16) for i in range(16)]
    want = {urllib.parse.urlparse(hf_hub_url("org/repo", f, revision="0123abcd", endpoint=server.base)).path
            for f in files}
    assert {p for p, _ in hub} == want
    assert {p for p, _ in cdn} == {f"/cdn/{f}" for f in files}
    # The token file the Hub's login writes, when HF_TOKEN is not set.
    home = replica.parent / "hf-home"
    home.mkdir(exist_ok=True)
    (home / "token").write_text(TOKEN + "\n")
    server.log.clear()
    r, _ = run("verify", "--headers-only", "hf://org/repo@0123abcd", env={"HF_ENDPOINT": server.base,
                                                                          "HF_HOME": str(home)})
    assert r.returncode == 0, r.stderr
    assert TOKEN not in r.stdout + r.stderr
    assert any(a == f"Bearer {TOKEN}" for _, a in server.log)


def test_hf_revision_not_on_the_hub_is_an_error(server):
    r, _ = run("inspect", "hf://org/repo@v9", env={"HF_ENDPOINT": server.base})
    assert r.returncode == 2, r.stderr
    assert "/org/repo/resolve/v9/model.safetensors" in r.stderr, r.stderr
    assert "404" in r.stderr


def test_a_branch_is_pinned_to_the_commit_the_hub_names_first(replica, server):
    local = minifloat("inspect", "--headers-only", replica)
    r, _ = run("inspect", "hf://org/repo", env={"HF_ENDPOINT": server.base})
    assert r.returncode == 0, r.stderr
    assert r.stdout == local.stdout
    hub = [p for p, _ in server.log if p.startswith("/org/repo/resolve/")]
    # The first answer (the index, read alone) named commit 0123abcd; every later file was asked for at it.
    assert hub[0] == "/org/repo/resolve/main/model.safetensors.index.json"
    assert all(p.startswith("/org/repo/resolve/0123abcd/") for p in hub[1:]), hub


def test_memory_reads_config_over_http(replica, server):
    local = minifloat("memory", "--config", replica / "config.json", "--recipe", "fp8-block")
    assert local.returncode == 0, local.stderr
    r, _ = run("memory", "--config", "hf://org/repo@0123abcd", "--recipe", "fp8-block",
               env={"HF_ENDPOINT": server.base})
    assert r.returncode == 0, r.stderr
    assert r.stdout == local.stdout


HOSTILE = [
    ("ignore_range", "ignored the Range request"),
    ("wrong_range", "does not answer the request for bytes"),
    ("truncate", "truncated reply"),
    ("redirect_loop", "redirects (a loop?)"),
    ("stall", "time bound of 2 s"),
    ("changing_etag", "the file changed between two reads"),
]


@pytest.mark.parametrize("mode,message", HOSTILE, ids=[h[0] for h in HOSTILE])
def test_hostile_servers_are_named_errors_within_the_bound(replica, server, tmp_path, mode, message):
    server.mode = mode
    r, seconds = run("inspect", f"{server.base}/files/model.safetensors.index.json",
                     env={"MINIFLOAT_HTTP_TIMEOUT": "2"}, cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    assert message in r.stderr, r.stderr
    assert "Traceback" not in r.stderr and "terminate" not in r.stderr
    assert seconds < 10
    assert list(tmp_path.iterdir()) == []  # nothing written
    # A server that sends the whole file was stopped at its first bytes, not read to the end.
    assert server.served < file_bytes(replica) / 100


def test_a_header_length_over_the_limit_is_refused_before_it_is_fetched(tmp_path, server):
    bad = tmp_path / "huge.safetensors"
    with open(bad, "wb") as f:
        f.write((200_000_000).to_bytes(8, "little"))
        f.truncate(300_000_000)
    server.root = tmp_path
    r, _ = run("inspect", f"{server.base}/files/huge.safetensors")
    assert r.returncode == 2, r.stderr
    assert "header length 200000000 is over the limit" in r.stderr, r.stderr
    assert server.served <= 8


def test_no_such_server_is_a_named_error(tmp_path):
    r, seconds = run("inspect", "http://127.0.0.1:9/model.safetensors.index.json")
    assert r.returncode == 2, r.stderr
    assert "http://127.0.0.1:9/model.safetensors.index.json" in r.stderr
    assert seconds < 10


def test_a_shard_name_a_url_would_read_otherwise_is_refused(tmp_path, server):
    (tmp_path / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {}, "weight_map": {"w": "model?x=1.safetensors"}}))
    server.root = tmp_path
    r, _ = run("inspect", f"{server.base}/files/model.safetensors.index.json")
    assert r.returncode == 2, r.stderr
    assert "shard name 'model?x=1.safetensors' would change meaning in a URL" in r.stderr, r.stderr
    assert not any("model?x" in p for p, _ in server.log)


def write_gguf(path, vocab):
    """A GGUF file written by gguf-py's own writer: a tokenizer-sized string array (so that the header outgrows the
    first prefix read) and a few F16 tensors whose data dwarfs it."""
    import gguf
    import numpy as np
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_block_count(2)
    w.add_token_list([f"token-{i:06d}" for i in range(vocab)])
    for i in range(4):
        w.add_tensor(f"blk.{i}.ffn_up.weight", np.zeros((1024, 1024), dtype=np.float16))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def test_gguf_over_http_reads_its_header_only(tmp_path, server):
    path = tmp_path / "model.gguf"
    write_gguf(path, 20000)  # about 400 kB of metadata: the 64 KiB first read is doubled three times
    local = minifloat("inspect", path)
    assert local.returncode == 0, local.stderr
    server.root = tmp_path
    r, _ = run("inspect", f"{server.base}/files/model.gguf")
    assert r.returncode == 0, r.stderr
    assert r.stdout == local.stdout
    size = path.stat().st_size
    assert server.served < size / 8, (server.served, size)  # 8 MiB of data, none of it read
    assert f"bytes of the {size} bytes in 1 file" in r.stderr
    # verify decodes values: refused over HTTP, naming why.
    r, _ = run("verify", f"{server.base}/files/model.gguf")
    assert r.returncode == 2, r.stderr
    assert "over HTTP only a GGUF file's header is read" in r.stderr, r.stderr


def test_an_index_over_its_limit_is_refused_from_its_size(tmp_path, server):
    with open(tmp_path / "model.safetensors.index.json", "wb") as f:
        f.truncate(150_000_000)
    server.root = tmp_path
    r, _ = run("inspect", f"{server.base}/files/model.safetensors.index.json")
    assert r.returncode == 2, r.stderr
    assert "index of 150000000 bytes is over the limit of 100000000" in r.stderr, r.stderr
    assert server.served <= 1 << 16


def test_a_repo_with_one_model_safetensors_and_no_index(tmp_path, server):
    tensors = hr.qwen3_moe_fp8_tensors(SMALL_QWEN3)[:40]
    hr.write_shard(tmp_path / "model.safetensors", tensors)
    (tmp_path / "config.json").write_text(json.dumps(hr.qwen3_config(SMALL_QWEN3)))
    local = minifloat("inspect", "--headers-only", tmp_path)
    assert local.returncode == 0, local.stderr
    server.root = tmp_path
    r, _ = run("inspect", "hf://org/repo@0123abcd", env={"HF_ENDPOINT": server.base})
    assert r.returncode == 0, r.stderr
    assert r.stdout == local.stdout
    asked = [p for p, _ in server.log if p.startswith("/org/repo/")]
    assert asked[0] == "/org/repo/resolve/0123abcd/model.safetensors.index.json"  # a 404: then the one file
    assert "/org/repo/resolve/0123abcd/model.safetensors" in asked


def test_python_inspect_and_verify_take_a_url(replica, server, monkeypatch):
    """The package's functions run the same code over HTTP: the same report as the local headers."""
    mf = pytest.importorskip("minifloat")
    monkeypatch.setenv("MINIFLOAT_HTTP_TIMEOUT", "5")
    url = f"{server.base}/files/model.safetensors.index.json"
    local = mf.inspect(replica, headers_only=True)
    assert mf.inspect(url) == local
    assert local["schemes"]  # the FP8 pairs, named as the CLI names them (the test above)
    v = mf.verify(url, headers_only=True)
    assert v == mf.verify(replica, headers_only=True)
    assert server.served < file_bytes(replica) / 100
    with pytest.raises(Exception, match="--headers-only|headers"):
        mf.verify(url)
