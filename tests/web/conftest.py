"""Fixtures for the page's tests: the native command, the built page, a `minifloat serve` on a free port, and
Debian's chromium driven by Playwright (never a downloaded browser).

Paths come from the environment that scripts/test-web.sh sets, with defaults for a run from the repository root:
MINIFLOAT_BIN (build/cli/minifloat), MINIFLOAT_WEB_SITE (build-web/site), MINIFLOAT_WEB_ARTIFACTS (build-web/artifacts),
CHROMIUM (/usr/bin/chromium).
"""
import json
import os
import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _path(env, default):
    return pathlib.Path(os.environ.get(env, str(ROOT / default)))


@pytest.fixture(scope="session")
def minifloat_bin():
    path = _path("MINIFLOAT_BIN", "build/cli/minifloat")
    assert path.is_file(), f"{path}: build the command first (cmake --build build --target minifloat_cli)"
    return path


@pytest.fixture(scope="session")
def site():
    path = _path("MINIFLOAT_WEB_SITE", "build-web/site")
    assert (path / "minifloat.wasm").is_file(), f"{path}: build the page first (scripts/build-web.sh)"
    return path


@pytest.fixture(scope="session")
def artifacts():
    path = _path("MINIFLOAT_WEB_ARTIFACTS", "build-web/artifacts")
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture(scope="session")
def cli(minifloat_bin):
    """Runs the native command; returns stdout (parsed when --json is among the arguments)."""
    def run(*args, stdin=None):
        r = subprocess.run([str(minifloat_bin), *args], input=stdin, capture_output=True, text=True, check=True)
        return json.loads(r.stdout) if "--json" in args else r.stdout
    return run


@pytest.fixture(scope="session")
def server(minifloat_bin, site):
    """`minifloat serve --port 0` on the built page; yields its URL (from the line it prints)."""
    proc = subprocess.Popen([str(minifloat_bin), "serve", "--port", "0", "--root", str(site)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        assert "http://127.0.0.1:" in line, f"serve printed {line!r}; stderr: {proc.stderr.read()}"
        yield line[line.index("http://"):].split()[0]
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.fixture(scope="session")
def browser():
    from playwright.sync_api import sync_playwright
    executable = os.environ.get("CHROMIUM", "/usr/bin/chromium")
    with sync_playwright() as p:
        # --no-sandbox: CI and these machines run as root, where chromium refuses its sandbox.
        b = p.chromium.launch(executable_path=executable, headless=True, args=["--no-sandbox"])
        yield b
        b.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    pg = context.new_page()
    errors = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    yield pg
    context.close()
    assert not errors, f"JavaScript errors on the page: {errors}"
