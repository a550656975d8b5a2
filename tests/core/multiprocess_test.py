"""The multi-host path for real: two JAX processes on 127.0.0.1 (gloo CPU collectives), 4 devices each.

`multiprocess_worker.py` is started twice with `JAX_COORDINATOR_ADDRESS`, `JAX_NUM_PROCESSES=2` and
`JAX_PROCESS_ID=i`; `train.train_and_evaluate` (with `config.jax_distributed=True`) connects them
through `jaxml.core.distributed.initialize`. The test compares what they did with the same run in
this one process on 8 devices, and restores their checkpoint here.
"""

import importlib.util
import json
import os
import pathlib
import re
import socket
import subprocess
import sys
import time

import chex
import jax
import numpy as np
import pytest

from jaxml.core import distributed
from jaxml.core import mesh as mesh_lib
from jaxml.core import train
from jaxml.core.metrics import read_metrics

_WORKER_PATH = pathlib.Path(__file__).resolve().with_name("multiprocess_worker.py")
_spec = importlib.util.spec_from_file_location("multiprocess_worker", _WORKER_PATH)
worker = sys.modules.setdefault(_spec.name, importlib.util.module_from_spec(_spec))  # dataclasses need it there
_spec.loader.exec_module(worker)

_TIMEOUT_S = 240    # both processes together; a run on 2 loaded cores takes about 30 s
# Float32 reduction order: the gloo all-reduce across processes sums in another order than the
# in-process one. Measured (3 runs, the same each time): per-step loss, gradient and parameter norms
# within 1.1e-7 relative (1 ulp); final parameters and Adam moments within 6.2e-7 of each leaf's
# largest magnitude (params/out/bias, 5 ulps).
_SCALAR_RTOL, _LEAF_TOL = 1e-6, 5e-6


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _worker_env(port: int, process_id: int) -> dict[str, str]:
    flags = re.sub(r"--xla_force_host_platform_device_count=\d+", "", os.environ.get("XLA_FLAGS", ""))
    return dict(os.environ, JAX_PLATFORMS="cpu", JAXML_QUIET="1",
                XLA_FLAGS=f"{flags} --xla_force_host_platform_device_count={worker.LOCAL_DEVICES}".strip(),
                JAX_COORDINATOR_ADDRESS=f"127.0.0.1:{port}",
                JAX_NUM_PROCESSES=str(worker.NUM_PROCESSES), JAX_PROCESS_ID=str(process_id))


def _start_workers(workdir: pathlib.Path, out: pathlib.Path) -> list[tuple[subprocess.Popen, pathlib.Path]]:
    out.mkdir(parents=True)
    port = _free_port()
    started = []
    try:
        for i in range(worker.NUM_PROCESSES):
            log = out / f"process_{i}.log"
            with open(log, "w") as f:
                proc = subprocess.Popen([sys.executable, str(_WORKER_PATH), str(workdir), str(out)],
                                        env=_worker_env(port, i), cwd=out, stdout=f, stderr=subprocess.STDOUT)
            started.append((proc, log))
    except BaseException:
        _stop(started)
        raise
    return started


def _wait(started, deadline: float) -> None:
    """Returns when every worker exited with 0; fails as soon as one fails or at the deadline."""
    while True:
        codes = [proc.poll() for proc, _ in started]
        if all(c == 0 for c in codes):
            return
        failed = [i for i, c in enumerate(codes) if c not in (None, 0)]
        if failed or time.monotonic() > deadline:
            what = (f"worker {failed[0]} exited with {codes[failed[0]]}" if failed
                    else f"workers still running after {_TIMEOUT_S} s: {codes}")
            tails = "\n".join(f"--- process {i} ---\n{log.read_text()[-3000:]}" for i, (_, log) in enumerate(started))
            pytest.fail(f"{what}\n{tails}")
        time.sleep(0.1)


def _stop(started) -> None:
    for proc, _ in started:
        if proc.poll() is None:
            proc.kill()
    for proc, _ in started:
        proc.wait()


def _halves(batch: list[int], n: int) -> list[list[int]]:
    per = len(batch) // n
    return [batch[i * per:(i + 1) * per] for i in range(n)]


def _leaf_error(a: np.ndarray, b: np.ndarray) -> float:
    """max |a - b| relative to max |b| (0 for integer leaves that agree exactly)."""
    if a.dtype.kind != "f":
        return 0.0 if np.array_equal(a, b) else np.inf
    return float(np.max(np.abs(a - b)) / np.max(np.abs(b)))


def _leaves(tree) -> dict[str, np.ndarray]:
    return {mesh_lib.path_name(p): np.asarray(v) for p, v in jax.tree_util.tree_leaves_with_path(tree)}


def test_two_processes_equal_one(tmp_path):
    cpu8 = jax.devices("cpu")[:8]
    assert len(cpu8) == 8, "tests/conftest.py should give this process 8 fake CPU devices"
    deadline = time.monotonic() + _TIMEOUT_S
    started = _start_workers(tmp_path / "two", tmp_path / "out")
    try:
        # The one-process reference runs here while the two workers start up.
        one_task = worker.task()
        one = train.train_and_evaluate(worker.config(distributed=False), tmp_path / "one", task=one_task,
                                       devices=cpu8)
        _wait(started, deadline)
    finally:
        _stop(started)
    n = worker.NUM_PROCESSES
    records = [json.loads((tmp_path / "out" / f"process_{i}.json").read_text()) for i in range(n)]
    gathered = [dict(np.load(tmp_path / "out" / f"process_{i}.npz")) for i in range(n)]

    # The 8-device mesh spans both processes, 4 devices each, in process order along `data`.
    for i, r in enumerate(records):
        assert (r["process_index"], r["process_count"]) == (i, n)
        assert (r["device_count"], r["local_device_count"]) == (8, 4)
        assert r["mesh_shape"] == {"data": 8, "model": 1}
        assert r["mesh_process_of_device"] == [0, 0, 0, 0, 1, 1, 1, 1]

    # Each process read only its half of every global batch the one-process run read (after the
    # 2-row shape sample every process reads for initialization), and its half of every eval batch.
    one_train, one_eval = one_task.train_reads, one_task.eval_reads
    assert one_train[0] == [0, 1] and len(one_train) == 1 + 6 and len(one_eval) == 6   # 256 = 5*48 + 16
    for i, r in enumerate(records):
        assert r["train_reads"][0] == [0, 1]
        assert r["train_reads"][1:] == [_halves(b, n)[i] for b in one_train[1:]]
        assert r["eval_reads"] == [_halves(b, n)[i] for b in one_eval]

    # The slice a process reads lands on its own devices, at its rows of the global batch.
    for i, r in enumerate(records):
        assert r["rows"] == [16 * i, 16 * (i + 1)]
        shards = sorted(r["probe_shards"], key=lambda s: s["start"])
        assert [(s["start"], s["stop"]) for s in shards] == [(16 * i + 4 * k, 16 * i + 4 * k + 4) for k in range(4)]
        for s in shards:
            assert s["values"] == list(range(s["start"], s["stop"]))

    # Same per-step losses and gradient norms, final parameters, optimizer state and evaluation,
    # up to float32 reduction order.
    two_log, one_log = read_metrics(tmp_path / "two", "train"), read_metrics(tmp_path / "one", "train")
    assert [r["step"] for r in two_log] == [r["step"] for r in one_log] == [1, 2, 3, 4, 5, 6]
    for key in ("loss", "grad_norm", "param_norm"):
        np.testing.assert_allclose([r[key] for r in two_log], [r[key] for r in one_log], rtol=_SCALAR_RTOL,
                                   err_msg=key)
    assert one_log[-1]["loss"] < 0.6 * one_log[0]["loss"]   # it trained: the comparison is not vacuous
    one_state = _leaves({"params": jax.device_get(one.state.params),
                         "opt_state": jax.device_get(one.state.opt_state)})
    for g in gathered:
        assert g.keys() == one_state.keys()
        errors = {name: _leaf_error(g[name], one_state[name]) for name in one_state}
        print("two vs one process, max error relative to each leaf's scale:", max(errors.values()))
        assert max(errors.values()) <= _LEAF_TOL, errors
    for r in records:
        assert r["step"] == 6
        np.testing.assert_allclose(r["metrics"]["train/mse"], one.metrics["train/mse"], rtol=_SCALAR_RTOL)

    # The checkpoint both processes wrote restores in this single process. Columns 8-15 of the hidden
    # kernel (and of its Adam moments) lived only on process 1's devices, so process 1 wrote them.
    steps = sorted(int(p.name) for p in (tmp_path / "two" / "checkpoints").iterdir() if p.name.isdigit())
    assert steps == [3, 6]
    restored = train.load_train_state(tmp_path / "two", worker.task(), worker.config(distributed=False), cpu8)
    assert int(restored.step) == 6
    chex.assert_trees_all_equal(_leaves(jax.device_get({"params": restored.params, "opt_state": restored.opt_state})),
                                gathered[0])


@pytest.fixture
def fake_initialize(monkeypatch):
    """Records the arguments `jax.distributed.initialize` would get, without connecting anything."""
    calls = []
    monkeypatch.setattr(jax.distributed, "is_initialized", lambda: False)
    monkeypatch.setattr(jax.distributed, "initialize", lambda **kw: calls.append(kw))
    for name in (distributed.ADDRESS_ENV, distributed.COUNT_ENV, distributed.ID_ENV):
        monkeypatch.delenv(name, raising=False)
    return calls


def test_initialize_reads_the_environment_and_arguments_win(fake_initialize, monkeypatch):
    distributed.initialize(False)
    assert fake_initialize == []
    distributed.initialize(True)   # TPU / SLURM: JAX detects everything
    assert fake_initialize[-1] == dict(coordinator_address=None, num_processes=None, process_id=None)
    monkeypatch.setenv(distributed.ADDRESS_ENV, "10.0.0.1:1234")
    monkeypatch.setenv(distributed.COUNT_ENV, "4")
    monkeypatch.setenv(distributed.ID_ENV, "3")
    distributed.initialize(True)
    assert fake_initialize[-1] == dict(coordinator_address="10.0.0.1:1234", num_processes=4, process_id=3)
    distributed.initialize(True, coordinator_address="h:1", num_processes=2, process_id=0)
    assert fake_initialize[-1] == dict(coordinator_address="h:1", num_processes=2, process_id=0)


def test_initialize_rejects_bad_process_ids(fake_initialize, monkeypatch):
    with pytest.raises(ValueError, match=r"process_id=2 must be in \[0, num_processes=2\)"):
        distributed.initialize(True, "h:1", num_processes=2, process_id=2)
    monkeypatch.setenv(distributed.ID_ENV, "first")
    with pytest.raises(ValueError, match="JAX_PROCESS_ID='first' must be an integer"):
        distributed.initialize(True, "h:1", num_processes=2)
    assert fake_initialize == []
