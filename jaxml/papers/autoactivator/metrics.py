"""Class-incremental metrics over an accuracy matrix (pure NumPy functions).

`acc[i, j]` is the accuracy on session j's test set after learning session i (only j <= i is
read); `test_sizes[j]` is the number of test examples of session j.

    average_incremental_accuracy(acc, sizes)   # mean over i of the accuracy on all seen test data
    final_accuracy(acc, sizes)                 # the accuracy on every test example after the last session
    forgetting(acc)                            # mean over j < T-1 of max_{j<=i<T-1} acc[i, j] - acc[T-1, j]
"""

from __future__ import annotations

import numpy as np


def _check(acc) -> np.ndarray:
    acc = np.asarray(acc, np.float64)
    if acc.ndim != 2 or acc.shape[0] != acc.shape[1] or acc.shape[0] == 0:
        raise ValueError(f"acc must be a square [T, T] matrix with T >= 1, got shape {acc.shape}")
    return acc


def _sizes(sizes, T: int) -> np.ndarray:
    sizes = np.ones(T) if sizes is None else np.asarray(sizes, np.float64)
    if sizes.shape != (T,) or np.any(sizes <= 0):
        raise ValueError(f"test_sizes must be {T} positive counts, got {sizes}")
    return sizes


def step_accuracies(acc, test_sizes=None) -> np.ndarray:
    """[T]: after session i, the accuracy on the union of the test sets of sessions 0..i."""
    acc = _check(acc)
    sizes = _sizes(test_sizes, len(acc))
    return np.array([np.dot(acc[i, :i + 1], sizes[:i + 1]) / sizes[:i + 1].sum() for i in range(len(acc))])


def average_incremental_accuracy(acc, test_sizes=None) -> float:
    """The mean over sessions of `step_accuracies` (Rebuffi et al. 2017)."""
    return float(step_accuracies(acc, test_sizes).mean())


def final_accuracy(acc, test_sizes=None) -> float:
    """The accuracy on all test data after the last session."""
    return float(step_accuracies(acc, test_sizes)[-1])


def forgetting(acc) -> float:
    """Average forgetting (Chaudhry et al. 2018): mean over the sessions j before the last of the
    drop from the best accuracy ever reached on j (before the last session) to the final one.
    0 for a single session."""
    acc = _check(acc)
    T = len(acc)
    if T == 1:
        return 0.0
    drops = [acc[j:T - 1, j].max() - acc[T - 1, j] for j in range(T - 1)]
    return float(np.mean(drops))
