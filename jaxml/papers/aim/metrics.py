"""The numbers AIM's study reports, as pure functions: correlations of loss and accuracy (scipy's), and
the mean and spread over seeds (`jaxml.core.metrics.mean_std`)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import scipy.stats

from jaxml.core.metrics import mean_std  # noqa: F401  (re-exported)


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
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        return float("nan")
    return float(scipy.stats.pearsonr(x, y).statistic)


def spearman(x: Sequence[float], y: Sequence[float]) -> float:
    """Spearman's rho (Pearson's r of the average ranks; nan when one sample is constant)."""
    x, y = _pair(x, y, "spearman")
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        return float("nan")
    return float(scipy.stats.spearmanr(x, y).statistic)
