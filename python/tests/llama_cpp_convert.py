"""llama.cpp's convert_hf_to_gguf.py run as its command, its imports paid once per test process.

`python convert_hf_to_gguf.py ARGS` spends 3-5 CPU seconds importing torch, transformers and the converter's own
packages before it reads anything: more than half of a tiny model's conversion, and the GGUF tests run it about forty
times. Here one server process (this file run as a script) imports the converter once, as the script's own imports
would, and answers each conversion from a child forked from it: the child runs the script's main() with sys.argv set,
its stdout and stderr in files, and exits with the status the command would have (1 and the traceback on an uncaught
exception, SystemExit's code otherwise). Every conversion starts from the same just-imported state, none sees
another's. The server imports nothing of the test process (which holds another gguf than the converter's own
gguf-py), and the parent never runs torch, so no thread pool is forked."""
import atexit
import json
import os
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

_server = None
_lock = threading.Lock()


def run(converter: Path, *args) -> subprocess.CompletedProcess:
    """What subprocess.run([sys.executable, converter, *args], capture_output=True, text=True) returns."""
    global _server
    with _lock:
        if _server is None or _server.poll() is not None:
            _server = subprocess.Popen([sys.executable, __file__, str(converter)], stdin=subprocess.PIPE,
                                       stdout=subprocess.PIPE, text=True)
            atexit.register(_stop, _server)
        with tempfile.TemporaryDirectory() as d:
            out, err = Path(d) / "stdout", Path(d) / "stderr"
            _server.stdin.write(json.dumps({"args": [str(a) for a in args], "stdout": str(out), "stderr": str(err),
                                            "cwd": os.getcwd()}) + "\n")
            _server.stdin.flush()
            line = _server.stdout.readline()
            if not line:
                raise RuntimeError(f"the converter's server ({__file__}) exited with status {_server.wait()}")
            code = json.loads(line)["returncode"]
            return subprocess.CompletedProcess([sys.executable, str(converter), *map(str, args)], code,
                                               out.read_text(errors="replace"), err.read_text(errors="replace"))


def _stop(server):
    """End of input ends the server; waiting for it counts its CPU time in this process's children."""
    server.stdin.close()
    server.wait()


def _serve(script: Path):
    import importlib.util
    import traceback
    # As `python convert_hf_to_gguf.py` sets it up: the script's folder first on sys.path, then its imports.
    sys.path.insert(0, str(script.parent))
    spec = importlib.util.spec_from_file_location("convert_hf_to_gguf", script)
    module = importlib.util.module_from_spec(spec)
    sys.modules["convert_hf_to_gguf"] = module
    spec.loader.exec_module(module)
    import transformers  # what every conversion's vocabulary step imports (AutoTokenizer, AutoConfig)
    transformers.AutoTokenizer, transformers.AutoConfig, transformers.PreTrainedTokenizerFast  # noqa: B018 (lazy)
    requests, replies = sys.stdin, sys.stdout
    for line in requests:
        req = json.loads(line)
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                os.chdir(req["cwd"])
                null = os.open(os.devnull, os.O_RDONLY)
                os.dup2(null, 0)
                for fd, path in ((1, req["stdout"]), (2, req["stderr"])):
                    f = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
                    os.dup2(f, fd)
                    os.close(f)
                sys.argv = [str(script), *req["args"]]
                try:
                    module.main()
                    code = 0
                except SystemExit as e:
                    if e.code is None or isinstance(e.code, int):
                        code = e.code or 0
                    else:
                        print(e.code, file=sys.stderr)
                except BaseException:
                    traceback.print_exc()
            finally:
                try:
                    sys.stdout.flush()
                    sys.stderr.flush()
                finally:
                    os._exit(code)
        _, status = os.waitpid(pid, 0)
        code = os.waitstatus_to_exitcode(status)
        replies.write(json.dumps({"returncode": code}) + "\n")
        replies.flush()


if __name__ == "__main__":
    _serve(Path(sys.argv[1]))
