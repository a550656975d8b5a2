"""AsyncHow's metric, accuracy, with its spreads and breakdowns (pure functions of per-task outcomes).

    accuracy_table(rows, ("variant", "plan_type"))   # {(variant, type): Cell(acc, correct, count, lo, hi)}
    accuracy_by(bins, correct, COMPLEXITY_BINS)     # {bin: (accuracy, count)} from parallel arrays
    complexity_slope(ve_counts, correct)             # accuracy change per +10 of |V| + |E|, with its s.e.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import NamedTuple

import numpy as np


class Cell(NamedTuple):
    """Accuracy of one group: `correct` of `count`, with a 95% Wilson interval [lo, hi]."""

    accuracy: float
    correct: int
    count: int
    lo: float
    hi: float


def wilson_interval(correct: int, count: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """The Wilson score interval of a binomial proportion correct/count ((0, 1) for count 0)."""
    if not 0 <= correct <= count:
        raise ValueError(f"need 0 <= correct <= count, got {correct} of {count}")
    if count == 0:
        return 0.0, 1.0
    p = correct / count
    denom = 1 + z * z / count
    centre = (p + z * z / (2 * count)) / denom
    half = z * math.sqrt(p * (1 - p) / count + z * z / (4 * count * count)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def cell(correct: Sequence[bool]) -> Cell:
    k, n = int(np.sum(correct)), len(correct)
    lo, hi = wilson_interval(k, n)
    return Cell(k / n if n else float("nan"), k, n, lo, hi)


def accuracy_table(rows: Iterable[Mapping], keys: Sequence[str], outcome: str = "correct") -> dict[tuple, Cell]:
    """Accuracy of `rows` (dicts with the `keys` fields and a boolean `outcome`) grouped by `keys`, in order
    of first appearance."""
    groups: dict[tuple, list[bool]] = {}
    for row in rows:
        missing = [k for k in (*keys, outcome) if k not in row]
        if missing:
            raise ValueError(f"row {dict(row)!r} lacks {missing}")
        groups.setdefault(tuple(row[k] for k in keys), []).append(bool(row[outcome]))
    return {k: cell(v) for k, v in groups.items()}


def accuracy_by(keys: Sequence, correct: Sequence[bool], order: Sequence | None = None) -> dict:
    """{key: (mean of `correct` over the items with that key, count)}, keys in `order` (those present) or
    sorted: `accuracy_table` for parallel arrays instead of rows."""
    keys = list(keys)
    if len(keys) != len(correct):
        raise ValueError(f"accuracy_by: {len(keys)} keys but {len(correct)} values")
    table = accuracy_table(({"key": k, "correct": c} for k, c in zip(keys, correct)), ("key",))
    order = [k for k in order if (k,) in table] if order is not None else sorted(k for (k,) in table)
    return {k: (table[(k,)].accuracy, table[(k,)].count) for k in order}


def complexity_slope(ve_counts: Sequence[float], correct: Sequence[bool]) -> tuple[float, float]:
    """Least-squares slope of correctness (0/1) on |V| + |E|, per +10, and its standard error: how fast
    accuracy falls with complexity (negative: it falls). NaN when |V| + |E| does not vary."""
    x = np.asarray(ve_counts, np.float64)
    y = np.asarray(correct, np.float64)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError(f"ve_counts and correct must be 1-D of one length, got {x.shape} and {y.shape}")
    n = x.size
    sxx = ((x - x.mean()) ** 2).sum() if n else 0.0
    if n < 3 or sxx == 0:
        return float("nan"), float("nan")
    slope = ((x - x.mean()) * (y - y.mean())).sum() / sxx
    resid = y - y.mean() - slope * (x - x.mean())
    se = math.sqrt((resid ** 2).sum() / (n - 2) / sxx)
    return 10 * slope, 10 * se
