"""Test set-up: 8 fake CPU devices (set before JAX starts), one XLA compilation cache shared by
the test processes of a run, and skips for hardware markers.

The cache: most of a CPU test's time is XLA compilation, and the same programs (SmolLM2's forward
pass, the tiny training steps) are compiled again in each pytest-xdist worker, in each notebook
kernel and in each script a test starts. `JAX_COMPILATION_CACHE_DIR` (inherited by those
subprocesses) points them all at one folder for the run, removed at the end. A run that sets the
variable itself keeps its own folder.

The backend optimisation level: tests compile far more programs than they run steps, so LLVM's
optimisation passes cost more than they save. `--xla_backend_optimization_level=0` (inherited by
subprocesses too) took the default suite from 7m20s to 6m54s on 2 cores, every test passing at
its tolerance (the level changes code generation, not the floating-point semantics: fast math
stays off). `JAXML_TEST_XLA_OPT=1` (or an
`XLA_FLAGS` that sets the level) keeps the default, for timing-sensitive runs.
"""

import os
import shutil
import tempfile

_FLAGS = ["--xla_force_host_platform_device_count=8"]
if os.environ.get("JAXML_TEST_XLA_OPT", "0") == "0" and "xla_backend_optimization_level" not in os.environ.get(
        "XLA_FLAGS", ""):
    _FLAGS.append("--xla_backend_optimization_level=0")
for _flag in _FLAGS:
    if _flag not in os.environ.get("XLA_FLAGS", ""):
        os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " " + _flag).strip()

_RUN = os.environ.get("PYTEST_XDIST_TESTRUNUID") or f"pid{os.getpid()}"
_OWN_CACHE = "JAX_COMPILATION_CACHE_DIR" not in os.environ
if _OWN_CACHE:
    os.environ["JAX_COMPILATION_CACHE_DIR"] = os.path.join(tempfile.gettempdir(), f"jaxml-test-xla-{_RUN}")
    os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0.3")

import jax  # noqa: E402
import pytest  # noqa: E402


def pytest_sessionfinish(session, exitstatus):
    # The controller (or a run without xdist) removes the run's cache; workers leave it to the controller.
    if _OWN_CACHE and not os.environ.get("PYTEST_XDIST_WORKER"):
        shutil.rmtree(os.environ["JAX_COMPILATION_CACHE_DIR"], ignore_errors=True)


def pytest_collection_modifyitems(config, items):
    has_accelerator = jax.default_backend() in ("gpu", "tpu")
    for item in items:
        if "gpu" in item.keywords and not has_accelerator:
            item.add_marker(pytest.mark.skip(reason="needs a GPU or TPU (run scripts/device_check.sh)"))
        if "torch_ref" in item.keywords:
            try:
                import torch  # noqa: F401
            except ImportError:
                item.add_marker(pytest.mark.skip(reason="needs the [torch-ref] extra (torch)"))
        if "release" in item.keywords and not os.environ.get("JAXML_RELEASES"):
            item.add_marker(pytest.mark.skip(reason="needs JAXML_RELEASES (a folder of official checkouts; BUILD.md)"))
        if "pymdp_ref" in item.keywords:
            try:
                import pymdp  # noqa: F401
            except ImportError:
                item.add_marker(pytest.mark.skip(reason="needs the [pymdp-ref] extra (inferactively-pymdp)"))


def release_checkout(repository, *required):
    """The folder of an official release's checkout: `$JAXML_RELEASES/<repository>` (e.g.
    'graph-llm-asynchow-plan'), with the relative paths in `required` present in it. Skips the calling
    test, naming what is missing and how to provide it, when the variable, the folder or a path is absent.
    The `release` and `official_ref` tests call it; the default suite never depends on a checkout."""
    import pathlib

    root = os.environ.get("JAXML_RELEASES")
    if not root:
        pytest.skip(f"needs JAXML_RELEASES: a folder holding a checkout of {repository!r} (BUILD.md, "
                    "'Official releases')")
    folder = pathlib.Path(root) / repository
    if not folder.is_dir():
        pytest.skip(f"JAXML_RELEASES={root} has no checkout {repository!r}")
    missing = [r for r in required if not (folder / r).exists()]
    if missing:
        pytest.skip(f"the checkout {folder} lacks {', '.join(missing)}")
    return folder


@pytest.fixture
def release():
    """`release(repository, *required)` -> the checkout's folder, or a skip with the reason (see
    `release_checkout`)."""
    return release_checkout


@pytest.fixture
def official_module(release, monkeypatch):
    """`official_module(repository, module, subdir='')` imports a module of an official checkout (its
    folder, or `subdir` inside it, first on sys.path for the test), skipping with the reason when the
    checkout or one of the module's own imports (torch, transformers, ...) is absent."""
    import importlib
    import sys

    def load(repository, module, subdir=""):
        folder = release(repository) / subdir
        monkeypatch.syspath_prepend(str(folder))
        for name in [m for m in sys.modules if m == module or m.startswith(module + ".")]:
            monkeypatch.delitem(sys.modules, name)
        try:
            return importlib.import_module(module)
        except ImportError as e:
            pytest.skip(f"the official module {module!r} of {repository!r} does not import here: {e}")

    return load


@pytest.fixture(scope="session")
def devices8():
    devices = jax.devices()
    if len(devices) < 8:
        pytest.fail(f"expected 8 fake CPU devices from XLA_FLAGS, got {len(devices)}: was jax imported "
                    "before tests/conftest.py?")
    return devices[:8]


class _StubServer:
    """An OpenAI-compatible server on 127.0.0.1 for tests: every POST's JSON body goes to `answer(path, body)`,
    whose dict is the JSON reply; `requests` holds (path, body) in arrival order."""

    def __init__(self, answer):
        import http.server
        import json
        import threading

        stub = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                stub.requests.append((self.path, body))
                data = json.dumps(answer(self.path, body)).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.requests = []
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def openai_stub():
    """`openai_stub(answer)` starts a `_StubServer` (closed after the test) and returns it: `.url` is its
    base URL ('http://127.0.0.1:PORT/v1'), `.requests` the (path, body) pairs it received."""
    servers = []

    def start(answer):
        servers.append(_StubServer(answer))
        return servers[-1]

    yield start
    for s in servers:
        s.close()
