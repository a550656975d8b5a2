"""One process of the two-process training run of `multiprocess_test.py` (not a test module itself).

    JAX_COORDINATOR_ADDRESS=127.0.0.1:PORT JAX_NUM_PROCESSES=2 JAX_PROCESS_ID=i \
    XLA_FLAGS=--xla_force_host_platform_device_count=4 python multiprocess_worker.py WORKDIR OUT

trains `task()` with `config(distributed=True)` through `train.train_and_evaluate` (which calls
`jax.distributed.initialize` from the environment) in the shared WORKDIR, then writes to OUT
(`process_<i>.json` and `process_<i>.npz`) what this process saw: its device counts, the mesh's
process layout, the example indices it read, where its slice of a global batch landed, and the
final parameters and optimizer state gathered from both processes.

The test imports `task` and `config` from this file for its one-process reference run.
"""

from __future__ import annotations

import dataclasses
import json
import pathlib
import sys

import numpy as np

from jaxml.core.testing import RegressionTask, regression_config
from jaxml.data.pipeline import ArraySource

NUM_PROCESSES, LOCAL_DEVICES = 2, 4
GLOBAL_BATCH, PROBE_BATCH = 32, 32


class RecordingSource(ArraySource):
    """An ArraySource that appends the indices of every read to `log`."""

    def __init__(self, arrays, log: list):
        super().__init__(arrays)
        self.log = log

    def __getitem__(self, indices):
        self.log.append([int(i) for i in np.asarray(indices)])
        return super().__getitem__(indices)


@dataclasses.dataclass(frozen=True, eq=False)
class RecordingRegressionTask(RegressionTask):
    """RegressionTask whose train and eval sources record the indices this process reads."""

    train_reads: list = dataclasses.field(default_factory=list)
    eval_reads: list = dataclasses.field(default_factory=list)

    def train_data(self):
        return RecordingSource(self._arrays(), self.train_reads)

    def eval_data(self):
        return {"train": RecordingSource(self._arrays(), self.eval_reads)}


def task() -> RecordingRegressionTask:
    return RecordingRegressionTask(num_examples=256, dim=4, hidden=16)


def config(distributed: bool):
    """6 steps of global batch 32, a loss per step, checkpoints at steps 3 and 6, eval batch 48.

    The hidden kernel's 16 columns are split over the 8-device `data` axis (FSDP style), so
    columns 8-15 live only on the second process's devices: the checkpoint is complete only if
    both processes wrote their part.
    """
    return regression_config(
        batch_size=GLOBAL_BATCH, num_steps=6, log_every_steps=1, checkpoint_every_steps=3,
        eval_batch_size=48, param_sharding=(("hidden/kernel", (None, "data")),),
        jax_distributed=distributed)


def main(workdir: str, out: str) -> None:
    import jax

    # CPU collectives across processes (gloo is jax 0.10's default; set it anyway, before initialize).
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    from jax.experimental import multihost_utils

    from jaxml.core import mesh as mesh_lib
    from jaxml.core import train

    t, c = task(), config(distributed=True)
    outcome = train.train_and_evaluate(c, workdir, task=t)   # initializes jax.distributed first
    index = jax.process_index()

    # Where this process's slice of a global batch lands: global row r carries the value r.
    mesh = mesh_lib.mesh_from_config(c.mesh)
    rows = mesh_lib.process_slice(PROBE_BATCH)
    probe = mesh_lib.global_batch({"row": np.arange(PROBE_BATCH, dtype=np.int32)[rows]}, mesh)["row"]
    shards = [{"device": int(s.device.id), "start": s.index[0].start or 0,
               "stop": PROBE_BATCH if s.index[0].stop is None else s.index[0].stop,
               "values": [int(v) for v in np.asarray(s.data)]} for s in probe.addressable_shards]

    gathered = multihost_utils.process_allgather(
        {"params": outcome.state.params, "opt_state": outcome.state.opt_state}, tiled=True)
    flat = {mesh_lib.path_name(p): np.asarray(v) for p, v in jax.tree_util.tree_leaves_with_path(gathered)}

    out = pathlib.Path(out)
    np.savez(out / f"process_{index}.npz", **flat)
    record = {
        "process_index": index, "process_count": jax.process_count(),
        "device_count": jax.device_count(), "local_device_count": jax.local_device_count(),
        "mesh_shape": dict(mesh.shape),
        "mesh_process_of_device": [int(d.process_index) for d in mesh.devices.flat],
        "rows": [rows.start, rows.stop],
        "train_reads": t.train_reads, "eval_reads": t.eval_reads,
        "probe_shards": shards, "metrics": outcome.metrics,
        "step": int(jax.device_get(outcome.state.step)),
    }
    (out / f"process_{index}.json").write_text(json.dumps(record))
    multihost_utils.sync_global_devices("multiprocess_worker done")


if __name__ == "__main__":
    main(*sys.argv[1:])
