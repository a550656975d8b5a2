"""Pure metrics of the trust study: bootstrap confidence intervals over resampling units, pooling
of seeds, relative drops and the trust/utility summary.

    lo, hi = bootstrap_ci(probe.score, items, answers, n_boot=1000, seed=0)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from jaxml.core.metrics import mean_std as seed_spread  # noqa: F401  (mean and spread over calibration seeds)


def bootstrap_ci(score: Callable, items: Sequence, answers: Sequence, *, n_boot: int = 1000, seed: int = 0,
                 level: float = 0.95, key: str = "score") -> tuple[float, float]:
    """Percentile bootstrap interval of `score(items, answers)[key]`, resampling whole units
    (`item.unit`: a counterfactual pair or a sentence with its perturbations stays together).

    Items whose unit appears in several groups (e.g. the same probe answered under several
    calibration seeds) can be made distinct by the caller (units are compared as given)."""
    if len(items) != len(answers) or not items:
        raise ValueError(f"bootstrap_ci: {len(items)} items and {len(answers)} answers; need equal and > 0")
    if not 0 < level < 1 or n_boot < 1:
        raise ValueError(f"bootstrap_ci: level={level} must be in (0, 1) and n_boot={n_boot} >= 1")
    groups: dict = {}
    for i, item in enumerate(items):
        groups.setdefault(item.unit, []).append(i)
    units = list(groups.values())
    rng = np.random.default_rng(seed)
    values = []
    for _ in range(n_boot):
        pick = rng.integers(0, len(units), size=len(units))
        idx = [i for u in pick for i in units[u]]
        v = score([items[i] for i in idx], [answers[i] for i in idx])[key]
        if math.isfinite(v):
            values.append(v)
    if not values:
        return (float("nan"), float("nan"))
    alpha = (1 - level) / 2
    return float(np.quantile(values, alpha)), float(np.quantile(values, 1 - alpha))


def relative_change(value: float, reference: float) -> float:
    """(value - reference) / |reference| (nan when the reference is 0)."""
    return (value - reference) / abs(reference) if reference else float("nan")


def trust_average(scores: Mapping[str, float], dimensions: Sequence[str]) -> float:
    """The mean of the 0-100 scores of `dimensions` (the paper's radar-plot average); nan if any is missing."""
    vals = [scores.get(d, float("nan")) for d in dimensions]
    return float(np.mean(vals)) if vals and all(math.isfinite(v) for v in vals) else float("nan")


def multiple_choice_accuracy(option_logprobs: Sequence[Sequence[float]], correct: Sequence[int]) -> float:
    """Share of questions whose highest-scoring option is the correct one (ties: the first maximum)."""
    if len(option_logprobs) != len(correct) or not correct:
        raise ValueError(f"{len(option_logprobs)} questions scored but {len(correct)} answers; need equal and > 0")
    return float(np.mean([int(np.argmax(s)) == c for s, c in zip(option_logprobs, correct)]))
