"""Multi-host start-up: `jax.distributed.initialize()` before any other JAX call."""

from __future__ import annotations

import jax

from jaxml import progress


def initialize(enabled: bool) -> None:
    """Connects the processes of a multi-host job (TPU pod slice, multi-node GPU) when `enabled`.

    On Cloud TPU and SLURM the coordinator address, process count and id are detected by JAX.
    Must run before anything touches a JAX backend; calling it twice is harmless.
    """
    if not enabled or jax.distributed.is_initialized():
        return
    jax.distributed.initialize()
    progress.log(f"jax.distributed: process {jax.process_index()} of {jax.process_count()}, "
                 f"{jax.local_device_count()} local / {jax.device_count()} global devices")
