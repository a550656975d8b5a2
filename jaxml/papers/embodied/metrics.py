"""Metrics of the embodied experiments: pure NumPy functions of recorded trajectories and parameters.

    cue_visit_rate, outcome_rate   per-agent indicators of T-maze trials (a visit, a reward)
    wilson_interval                95% Wilson score interval of a binomial rate
    mean_ci                        mean and normal 95% half-width over seeds
    categorical_kl                 KL(true || learned) of the categorical columns of A or B, nats
    block_rates                    reward rate per block of trials (and in the last part of each block)
    speed_ratio                    agent-steps per second of ours over the reference's
"""

from __future__ import annotations

import math

import numpy as np

Z95 = 1.959963984540054


def wilson_interval(successes: int, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval (lo, hi) for `successes` out of `n` (n >= 1)."""
    if n < 1 or not 0 <= successes <= n:
        raise ValueError(f"wilson_interval needs 0 <= successes <= n and n >= 1, got {successes}, {n}")
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def rate_with_ci(indicators) -> tuple[float, float, float]:
    """(rate, lo, hi) of a boolean array of independent trials, Wilson 95%."""
    x = np.asarray(indicators, bool).reshape(-1)
    lo, hi = wilson_interval(int(x.sum()), x.size)
    return float(x.mean()), lo, hi


def mean_ci(values, axis: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(mean, 1.96 * standard error) over `axis` (the seeds)."""
    x = np.asarray(values, np.float64)
    n = x.shape[axis]
    if n < 2:
        return x.mean(axis), np.zeros_like(x.mean(axis))
    return x.mean(axis), Z95 * x.std(axis, ddof=1) / math.sqrt(n)


def cue_visit_rate(locations, cue: int, before=None) -> np.ndarray:
    """Per trial, whether `locations` `[..., T]` visits `cue` (before the first of `before`, when given)."""
    loc = np.asarray(locations)
    at_cue = loc == cue
    if before is None:
        return at_cue.any(-1)
    stop = np.isin(loc, np.asarray(before))
    first_stop = np.where(stop.any(-1), stop.argmax(-1), loc.shape[-1])
    return (at_cue & (np.arange(loc.shape[-1]) < first_stop[..., None])).any(-1)


def outcome_rate(outcomes, value: int) -> np.ndarray:
    """Per trial, whether outcome `value` occurs in `outcomes` `[..., T]`."""
    return (np.asarray(outcomes) == value).any(-1)


def categorical_kl(p_true, p_learned, axis: int = 0, eps: float = 1e-16) -> float:
    """Mean over columns of KL(p_true || p_learned) in nats, the distributions along `axis`."""
    p, q = np.asarray(p_true, np.float64), np.asarray(p_learned, np.float64)
    if p.shape != q.shape:
        raise ValueError(f"categorical_kl: shapes differ, {p.shape} vs {q.shape}")
    terms = np.where(p > 0, p * (np.log(np.maximum(p, eps)) - np.log(np.maximum(q, eps))), 0.0)
    return float(terms.sum(axis).mean())


def block_rates(hits, trials_per_block: int, tail: float = 0.5) -> tuple[np.ndarray, np.ndarray]:
    """Per block, the rate of `hits` `[..., trials]` and its rate over the last `tail` of the block's trials.

    Returns (`[..., blocks]`, `[..., blocks]`); the number of trials must be a multiple of the block."""
    h = np.asarray(hits, np.float64)
    n = h.shape[-1]
    if trials_per_block < 1 or n % trials_per_block:
        raise ValueError(f"{n} trials do not split into blocks of {trials_per_block}")
    if not 0 < tail <= 1:
        raise ValueError(f"tail must be in (0, 1], got {tail}")
    blocks = h.reshape(h.shape[:-1] + (n // trials_per_block, trials_per_block))
    start = trials_per_block - max(1, int(round(tail * trials_per_block)))
    return blocks.mean(-1), blocks[..., start:].mean(-1)


def speed_ratio(ours_seconds: float, reference_seconds: float) -> float:
    """How many times faster ours is for the same work: reference time / our time."""
    if ours_seconds <= 0 or reference_seconds <= 0:
        raise ValueError(f"times must be > 0, got {ours_seconds}, {reference_seconds}")
    return reference_seconds / ours_seconds
