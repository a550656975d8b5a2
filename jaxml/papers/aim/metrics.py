"""The numbers AIM's study reports, as pure functions: correlations of loss and accuracy, and the
mean and spread over seeds."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def _pair(x: Sequence[float], y: Sequence[float], where: str) -> tuple[np.ndarray, np.ndarray]:
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    if x.ndim != 1 or x.shape != y.shape:
        raise ValueError(f"{where}: x and y must be 1-D of one length, got {x.shape} and {y.shape}")
    if len(x) < 3:
        raise ValueError(f"{where}: needs at least 3 points, got {len(x)}")
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(y))):
        raise ValueError(f"{where}: x and y must be finite")
    return x, y


def pearson(x: Sequence[float], y: Sequence[float]) -> float:
    """Pearson's r of two samples (nan when one of them is constant)."""
    x, y = _pair(x, y, "pearson")
    dx, dy = x - x.mean(), y - y.mean()
    denom = np.sqrt(np.sum(dx * dx) * np.sum(dy * dy))
    return float(np.sum(dx * dy) / denom) if denom > 0 else float("nan")


def _ranks(x: np.ndarray) -> np.ndarray:
    """Average ranks (1-based), ties sharing the mean of their positions."""
    order = np.argsort(x, kind="stable")
    ranks = np.empty(len(x))
    sorted_x = x[order]
    i = 0
    while i < len(x):
        j = i
        while j + 1 < len(x) and sorted_x[j + 1] == sorted_x[i]:
            j += 1
        ranks[order[i:j + 1]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def spearman(x: Sequence[float], y: Sequence[float]) -> float:
    """Spearman's rho: Pearson's r of the average ranks."""
    x, y = _pair(x, y, "spearman")
    return pearson(_ranks(x), _ranks(y))


def mean_std(values: Sequence[float]) -> tuple[float, float]:
    """(mean, sample standard deviation; 0 for a single value)."""
    v = np.asarray(values, np.float64)
    if v.ndim != 1 or len(v) == 0:
        raise ValueError(f"mean_std: needs a non-empty 1-D sample, got shape {v.shape}")
    return float(v.mean()), float(v.std(ddof=1)) if len(v) > 1 else 0.0
