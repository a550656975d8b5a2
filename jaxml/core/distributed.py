"""Multi-host start-up: `jax.distributed.initialize()` before any other JAX call."""

from __future__ import annotations

import os

import jax

from jaxml import progress

# Environment variables read when the arguments are not given (JAX itself reads the first one).
ADDRESS_ENV, COUNT_ENV, ID_ENV = "JAX_COORDINATOR_ADDRESS", "JAX_NUM_PROCESSES", "JAX_PROCESS_ID"


def _env_int(value: int | None, name: str) -> int | None:
    if value is not None:
        return int(value)
    text = os.environ.get(name, "").strip()
    if not text:
        return None
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"{name}={text!r} must be an integer") from None


def initialize(enabled: bool, coordinator_address: str | None = None, num_processes: int | None = None,
               process_id: int | None = None) -> None:
    """Connects the processes of a multi-host job (TPU pod slice, multi-node GPU) when `enabled`.

    On Cloud TPU and SLURM the coordinator address, process count and id are detected by JAX.
    Elsewhere (several GPU nodes without SLURM, several processes on one machine) pass them, or set
    `JAX_COORDINATOR_ADDRESS=host:port`, `JAX_NUM_PROCESSES` and `JAX_PROCESS_ID` (0 on the host
    that runs the coordinator) in every process; arguments win over the environment.
    Must run before anything touches a JAX backend; calling it twice is harmless.

    Raises:
      ValueError: a process id outside `[0, num_processes)` or a non-integer environment value.
    """
    if not enabled or jax.distributed.is_initialized():
        return
    coordinator_address = coordinator_address or os.environ.get(ADDRESS_ENV) or None
    num_processes = _env_int(num_processes, COUNT_ENV)
    process_id = _env_int(process_id, ID_ENV)
    if num_processes is not None and num_processes < 1:
        raise ValueError(f"num_processes={num_processes} must be >= 1")
    if process_id is not None and num_processes is not None and not 0 <= process_id < num_processes:
        raise ValueError(f"process_id={process_id} must be in [0, num_processes={num_processes})")
    jax.distributed.initialize(coordinator_address=coordinator_address, num_processes=num_processes,
                               process_id=process_id)
    progress.log(f"jax.distributed: process {jax.process_index()} of {jax.process_count()}, "
                 f"{jax.local_device_count()} local / {jax.device_count()} global devices")
