"""Wall-clock timing for the `scripts/bench_*.py` benchmarks (speed is measured there, never in tests)."""

from __future__ import annotations

import time
from typing import Any, Callable

import jax


def median_ms(fn: Callable[[], Any], reps: int) -> float:
    """Median over `reps` calls of `fn()` in milliseconds, each waited for with `block_until_ready`."""
    if reps < 1:
        raise ValueError(f"reps={reps} must be >= 1")
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        jax.block_until_ready(fn())
        times.append(time.perf_counter() - t0)
    return 1e3 * sorted(times)[len(times) // 2]


def call_seconds(fn: Callable[[], Any]) -> tuple[float, Any]:
    """`(seconds, result)` of one call of `fn()`, waited for with `block_until_ready`."""
    t0 = time.perf_counter()
    result = jax.block_until_ready(fn())
    return time.perf_counter() - t0, result


def timed(fn: Callable[[], Any], reps: int) -> tuple[float, float, Any]:
    """`(first call in seconds, compilation included; median ms of the next reps calls; first result)`."""
    first, result = call_seconds(fn)
    return first, median_ms(fn, reps), result
