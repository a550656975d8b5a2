"""The numbers `aitext/validate` reports from its validation sets, as pure functions (NumPy in, float out).

A validation set mixes human and AI sentences at a known fraction alpha; each estimator returns an
estimate of alpha per set (the MLE, the CI midpoint, the share of sentences a per-sentence rule flags),
and these functions summarise the estimates over the sets.
"""

from __future__ import annotations

import math

import numpy as np


def mean_abs_error(estimates, truth) -> float:
    """mean_i |estimates_i - truth_i| over the validation sets (truth: the known alphas)."""
    est, true = np.asarray(estimates, float), np.asarray(truth, float)
    if est.shape != true.shape or est.size == 0:
        raise ValueError(f"estimates {est.shape} and truth {true.shape} must have the same, non-empty shape")
    return float(np.mean(np.abs(est - true)))


def ci_coverage(low, high, truth, tol: float = 1e-9) -> float:
    """The share of sets whose interval [low_i, high_i] contains truth_i (ends included, to `tol`)."""
    lo, hi, true = (np.asarray(x, float) for x in (low, high, truth))
    if not lo.shape == hi.shape == true.shape or true.size == 0:
        raise ValueError(f"low {lo.shape}, high {hi.shape} and truth {true.shape} must have the same, non-empty shape")
    return float(np.mean((lo <= true + tol) & (true - tol <= hi)))


def coverage_floor(nominal: float, n_sets: int, z: float = 2.0) -> float:
    """The lowest coverage over `n_sets` independent sets consistent with intervals of `nominal`
    coverage: nominal - z * sqrt(nominal (1 - nominal) / n_sets) (a binomial z-sigma band)."""
    if not 0 < nominal < 1 or n_sets < 1:
        raise ValueError(f"nominal={nominal} must be in (0, 1) and n_sets={n_sets} >= 1")
    return nominal - z * math.sqrt(nominal * (1 - nominal) / n_sets)


def flagged_fraction(scores, threshold: float) -> float:
    """A per-sentence detector's estimate of alpha: the share of sentences with score > threshold."""
    s = np.asarray(scores, float)
    if s.size == 0:
        raise ValueError("no scores")
    return float(np.mean(s > threshold))


def balanced_threshold(human_scores, ai_scores) -> float:
    """The threshold t (flag a sentence when its score > t) that maximises balanced accuracy
    (TPR + TNR) / 2 on calibration scores; among ties, the smallest such score."""
    h, a = np.asarray(human_scores, float), np.asarray(ai_scores, float)
    if h.size == 0 or a.size == 0:
        raise ValueError("balanced_threshold needs human and AI calibration scores")
    cand = np.unique(np.concatenate([h, a]))
    tpr = 1 - np.searchsorted(np.sort(a), cand, side="right") / a.size
    tnr = np.searchsorted(np.sort(h), cand, side="right") / h.size
    return float(cand[np.argmax(tpr + tnr)])


def error_ratio(baseline_error: float, estimator_error: float) -> float:
    """How many times larger the baseline's error is than the estimator's (inf when the estimator's is 0)."""
    if baseline_error < 0 or estimator_error < 0:
        raise ValueError("errors are non-negative")
    return math.inf if estimator_error == 0 else baseline_error / estimator_error
