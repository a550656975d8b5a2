"""The numbers pcDEQ's experiments report, as pure functions (each tested against a hand-computed case).

    first_below([0.5, 0.1, 1e-5], 1e-4)          -> 3   (applications of f until the residual < tol)
    relative_error(a, b)                           -> ||a - b|| / ||b||
    accuracy_gap(0.89, [0.88, 0.90])               -> -0.01 (ours minus the best baseline)
    iterations_to(history, tol) / fewer_iterations -> the convergence comparison of two networks

The fitted geometric rate of a residual history is `solver.geometric_rate`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np

NOT_CONVERGED = -1


def first_below(history: Sequence[float], tol: float) -> int:
    """Applications of f until the residual history drops below `tol` (the k-th entry is the residual
    after k + 1 applications), or `NOT_CONVERGED` (-1) if it never does. NaN entries never count."""
    h = np.asarray(history, np.float64)
    hits = np.nonzero(h < tol)[0]
    return int(hits[0]) + 1 if hits.size else NOT_CONVERGED


def iterations_or_inf(iterations: float) -> float:
    """An iteration count with `NOT_CONVERGED` (any negative value) read as infinitely many."""
    return math.inf if iterations < 0 else float(iterations)


def relative_error(a, b) -> float:
    """||a - b|| / ||b|| over all entries (Frobenius), in float64; a and b have the same shape."""
    a, b = np.asarray(a, np.float64).ravel(), np.asarray(b, np.float64).ravel()
    if a.shape != b.shape:
        raise ValueError(f"relative_error: shapes differ, {a.shape} vs {b.shape}")
    denominator = np.linalg.norm(b)
    if denominator == 0:
        raise ValueError("relative_error: the reference b is zero")
    return float(np.linalg.norm(a - b) / denominator)


def accuracy_gap(ours: float | Iterable[float], baselines: Iterable[float]) -> float:
    """The best of `ours` minus the best baseline accuracy (positive: ours is better)."""
    ours = [ours] if isinstance(ours, (int, float)) else list(ours)
    baselines = list(baselines)
    if not ours or not baselines:
        raise ValueError(f"accuracy_gap needs accuracies on both sides, got {ours} and {baselines}")
    return float(max(ours) - max(baselines))


def fewer_iterations(ours: Iterable[float], baseline: Iterable[float]) -> bool:
    """Whether the slowest of `ours` needs fewer iterations than the slowest of `baseline`
    (`NOT_CONVERGED` counts as infinitely many; a baseline that never converges is always slower)."""
    ours, baseline = [iterations_or_inf(k) for k in ours], [iterations_or_inf(k) for k in baseline]
    if not ours or not baseline:
        raise ValueError("fewer_iterations needs iteration counts on both sides")
    return max(ours) < max(baseline)


def value_range(values: Iterable[float], fmt: str = "{:.2f}") -> str:
    """`"0.21-0.48"` (or one value when all are equal) for a report line."""
    values = sorted(float(v) for v in values)
    if not values:
        raise ValueError("value_range of no values")
    lo, hi = fmt.format(values[0]), fmt.format(values[-1])
    return lo if lo == hi else f"{lo}-{hi}"
