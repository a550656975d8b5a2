"""The numbers PCM's experiments report, as pure functions (each tested against a hand-computed case).

    loglog_slope([1, 10], [2, 200])            -> 2.0  (time ~ n^slope)
    speedup(baseline_s=0.08, ours_s=0.002)     -> 40.0
    mean_and_se([1, 2, 3])                     -> (2.0, 0.577...)
    threshold_agreement(a, b)                  -> {"rmse", "corr", "max_abs"} after removing grand means
    assignment_accuracy(labels, truth, C)      -> the share of users in their true component, best relabelling

The centred RMSE of thresholds against the truth is `spectral.centred_rmse`; the mixture's parameter
error over component permutations is `mixture.permutation_error`.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import numpy as np


def loglog_slope(xs: Sequence[float], ys: Sequence[float]) -> float:
    """The least-squares slope of log y on log x (the exponent b of y ~ a x^b); needs >= 2 distinct x."""
    x, y = np.log(np.asarray(xs, np.float64)), np.log(np.asarray(ys, np.float64))
    if x.shape != y.shape or len(np.unique(x)) < 2:
        raise ValueError(f"loglog_slope needs >= 2 distinct x and one y per x, got {list(xs)} and {list(ys)}")
    return float(np.polyfit(x, y, 1)[0])


def speedup(baseline_s: float, ours_s: float) -> float:
    """How many times faster ours is: baseline seconds / our seconds."""
    if not ours_s > 0 or not baseline_s > 0:
        raise ValueError(f"speedup needs positive times, got baseline {baseline_s}, ours {ours_s}")
    return float(baseline_s / ours_s)


def mean_and_se(values: Sequence[float]) -> tuple[float, float]:
    """(mean, standard error of the mean with ddof = 1); the error is 0 for a single value."""
    v = np.asarray(values, np.float64)
    if v.size == 0:
        raise ValueError("mean_and_se of no values")
    return float(v.mean()), float(v.std(ddof=1) / math.sqrt(v.size)) if v.size > 1 else 0.0


def threshold_agreement(a, b) -> dict[str, float]:
    """Agreement of two threshold tables after removing each one's grand mean (the PCM's free shift):
    root mean square difference, Pearson correlation and largest absolute difference."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    if a.shape != b.shape:
        raise ValueError(f"threshold_agreement: shapes differ, {a.shape} vs {b.shape}")
    a, b = a - a.mean(), b - b.mean()
    return {"rmse": float(np.sqrt(np.mean((a - b) ** 2))), "corr": float(np.corrcoef(a.ravel(), b.ravel())[0, 1]),
            "max_abs": float(np.abs(a - b).max())}


def assignment_accuracy(labels, truth, n_components: int) -> float:
    """The largest share of users whose label equals their true component over all relabellings of the
    `n_components` labels (mixture components are identified only up to a permutation)."""
    labels, truth = np.asarray(labels), np.asarray(truth)
    if labels.shape != truth.shape:
        raise ValueError(f"assignment_accuracy: {labels.shape} labels for {truth.shape} users")
    return max(float(np.mean(np.asarray(p)[labels] == truth)) for p in itertools.permutations(range(n_components)))
