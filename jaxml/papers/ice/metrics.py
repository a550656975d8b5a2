"""Detection metrics of the ICE experiments: pure NumPy functions.

    auroc           area under the ROC curve of a score for binary labels (ties count one half)
    best_f1         the reference code's best F1 over thresholds 0.01..0.99 (positive when score > t)
    bootstrap_ci    percentile bootstrap interval of any metric over resampled examples
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np


def _check(labels, scores):
    y = np.asarray(labels).astype(bool).reshape(-1)
    s = np.asarray(scores, np.float64).reshape(-1)
    if y.shape != s.shape:
        raise ValueError(f"labels and scores differ in length: {y.size} vs {s.size}")
    if not np.all(np.isfinite(s)):
        raise ValueError("scores must be finite")
    return y, s


def auroc(labels, scores) -> float:
    """P(score of a positive > score of a negative) + 1/2 P(tie): the Mann-Whitney form of the AUROC.

    Raises ValueError when one class is missing (the AUROC is undefined)."""
    y, s = _check(labels, scores)
    n_pos, n_neg = int(y.sum()), int((~y).sum())
    if n_pos == 0 or n_neg == 0:
        raise ValueError(f"auroc needs both classes, got {n_pos} positives and {n_neg} negatives")
    order = np.argsort(s, kind="mergesort")
    ranks = np.empty(s.size)
    sorted_s = s[order]
    i = 0
    while i < s.size:                                   # average ranks over ties
        j = i
        while j + 1 < s.size and sorted_s[j + 1] == sorted_s[i]:
            j += 1
        ranks[order[i:j + 1]] = (i + j) / 2 + 1
        i = j + 1
    return float((ranks[y].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


class BestF1(NamedTuple):
    f1: float
    precision: float
    recall: float
    threshold: float
    positive_accuracy: float     # the share of positives predicted positive at the best threshold
    negative_accuracy: float     # the share of negatives predicted negative


THRESHOLDS = np.arange(1, 100) / 100


def best_f1(labels, scores, thresholds=THRESHOLDS) -> BestF1:
    """The F1 of 'score > t' against the labels at the t maximising it (the first such t), with its precision,
    recall and per-class accuracies. Precision with no predicted positives counts as 0 (sklearn's default)."""
    y, s = _check(labels, scores)
    best = None
    for t in np.asarray(thresholds, np.float64):
        pred = s > t
        tp = int((pred & y).sum())
        precision = tp / pred.sum() if pred.sum() else 0.0
        recall = tp / y.sum() if y.sum() else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        if best is None or f1 > best.f1:
            best = BestF1(f1, precision, recall, float(t),
                          float(pred[y].mean()) if y.any() else float("nan"),
                          float((~pred[~y]).mean()) if (~y).any() else float("nan"))
    return best


def bootstrap_ci(metric: Callable[..., float], *arrays, samples: int = 1000, level: float = 0.95,
                 seed: int = 0) -> tuple[float, float, float]:
    """(metric on the data, lo, hi): the percentile interval of `metric` over `samples` resamples of the
    examples (rows of every array together). Resamples where the metric raises ValueError (e.g. one class
    only for the AUROC) are redrawn."""
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level}")
    arrays = [np.asarray(a) for a in arrays]
    n = arrays[0].shape[0]
    if any(a.shape[0] != n for a in arrays):
        raise ValueError("bootstrap_ci: arrays differ in length")
    rng = np.random.default_rng(seed)
    values = []
    attempts = 0
    while len(values) < samples:
        attempts += 1
        if attempts > 20 * samples:
            raise ValueError("bootstrap_ci: the metric failed on almost every resample")
        idx = rng.integers(0, n, n)
        try:
            values.append(metric(*[a[idx] for a in arrays]))
        except ValueError:
            continue
    lo, hi = np.quantile(values, [(1 - level) / 2, (1 + level) / 2])
    return float(metric(*arrays)), float(lo), float(hi)
