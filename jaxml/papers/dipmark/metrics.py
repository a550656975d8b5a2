"""The numbers `dipmark/watermark` and `dipmark/cost` report, as pure functions (tested by hand cases
in `tests/papers/dipmark/metrics_test.py`); the experiments only wire them to generations.

* quality: `bootstrap_ci`, `mean_ci`, `paired_difference_ci` (perplexity and NLL of sampled
  text) and `nll_shift` (the expected NLL shift of a reweight, without sampling noise);
* detectability: `empirical_threshold` (a target false-positive rate on unwatermarked scores) and
  `detection_rate` (the TPR or FPR at a threshold);
* resilience: `untouched_fraction` (how many scored tokens keep their watermark signal under random
  substitution);
* cost: `throughput_ratio` (paired timings of the same work with and without a watermark).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np


def bootstrap_ci(values, n_boot: int = 2000, seed: int = 0, level: float = 0.95) -> tuple[float, float]:
    """Percentile bootstrap CI of the mean of `values` [n] (n >= 1): the (1 - level) / 2 and
    (1 + level) / 2 quantiles of the means of `n_boot` resamples with replacement."""
    values = np.asarray(values, np.float64)
    if values.ndim != 1 or not len(values):
        raise ValueError(f"bootstrap_ci needs a non-empty 1-D array, got shape {values.shape}")
    if not 0 < level < 1:
        raise ValueError(f"level={level} must be in (0, 1)")
    rng = np.random.default_rng(seed)
    means = values[rng.integers(0, len(values), (n_boot, len(values)))].mean(axis=1)
    lo, hi = np.quantile(means, [(1 - level) / 2, (1 + level) / 2])
    return float(lo), float(hi)


def mean_ci(values, **kwargs) -> tuple[float, float, float]:
    """`(mean, ci low, ci high)` of the finite entries of `values` (NaN marks a missing text)."""
    values = np.asarray(values, np.float64)
    ok = values[np.isfinite(values)]
    if not len(ok):
        raise ValueError("mean_ci: no finite values")
    return (float(ok.mean()), *bootstrap_ci(ok, **kwargs))


def paired_difference_ci(values, baseline, **kwargs) -> tuple[float, float, float]:
    """`(mean, ci low, ci high)` of values - baseline over the pairs where both are finite (the
    same prompt under two configurations)."""
    values, baseline = np.asarray(values, np.float64), np.asarray(baseline, np.float64)
    if values.shape != baseline.shape:
        raise ValueError(f"paired values {values.shape} and baseline {baseline.shape} differ in shape")
    both = np.isfinite(values) & np.isfinite(baseline)
    return mean_ci(np.where(both, values - baseline, np.nan), **kwargs)


def nll_shift(logits: jax.Array, new_logits: jax.Array, mask: jax.Array) -> jax.Array:
    """Expected NLL shift of a reweight, averaged over the positions where `mask` is True (nats).

    At each position, with P = softmax(logits) and P' = softmax(new_logits) [..., positions, V]:
    E_{x~P'}[-log P(x)] - E_{x~P}[-log P(x)] = sum_x (P'(x) - P(x)) (-log P(x)), how much less
    likely the reweighted token is under the original model. Linear in P', so a reweight with
    E_key[P'] = P has mean shift 0 over keys. Returns [...] (0 where no position is masked in).
    """
    logp = jax.nn.log_softmax(logits.astype(jnp.float32), -1)
    new = jax.nn.softmax(new_logits.astype(jnp.float32), -1)
    # tokens P' excludes (-inf logits) contribute -P * -log P; guard 0 * inf where P = 0 too
    per = jnp.sum(jnp.where(jnp.isfinite(logp), (new - jnp.exp(logp)) * -logp, 0.0), -1)
    mask = jnp.asarray(mask, bool)
    return jnp.sum(jnp.where(mask, per, 0.0), -1) / jnp.maximum(mask.sum(-1), 1)


def empirical_threshold(null_scores, fpr: float = 0.01) -> float:
    """The score threshold for a false-positive rate of at most `fpr` on these unwatermarked
    scores: their (1 - fpr) quantile, rounded up to an observed score ('higher'), used with a
    strict `score > threshold` (`detection_rate`). With fewer than 1 / fpr scores it is their
    maximum, so the FPR it stands for is only bounded by 1 / n."""
    null_scores = np.asarray(null_scores, np.float64)
    if null_scores.ndim != 1 or not len(null_scores):
        raise ValueError(f"empirical_threshold needs a non-empty 1-D array, got shape {null_scores.shape}")
    if not 0 < fpr < 1:
        raise ValueError(f"fpr={fpr} must be in (0, 1)")
    return float(np.quantile(null_scores, 1 - fpr, method="higher"))


def detection_rate(scores, threshold: float, *, strict: bool = True) -> float:
    """Fraction of `scores` above `threshold` (>= when not `strict`): the TPR on watermarked
    texts, the FPR on unwatermarked ones. NaN for no scores."""
    scores = np.asarray(scores, np.float64)
    if not scores.size:
        return float("nan")
    return float(np.mean(scores > threshold if strict else scores >= threshold))


def untouched_fraction(epsilon: float, context_width: int) -> float:
    """Expected fraction of scored tokens whose token and whole context code survive random
    substitution at rate `epsilon`, (1 - epsilon)^(context_width + 1): a substituted token also
    changes the permutation of the `context_width` tokens after it."""
    if not 0 <= epsilon <= 1:
        raise ValueError(f"epsilon={epsilon} must be in [0, 1]")
    return float((1 - epsilon) ** (context_width + 1))


def throughput_ratio(seconds_marked, seconds_plain) -> float:
    """Throughput with a watermark relative to without, from paired timings of the same work
    (round i timed both, back to back): the median over rounds of plain / marked seconds, so that
    a load change between rounds affects both sides of each ratio alike."""
    marked, plain = np.asarray(seconds_marked, np.float64), np.asarray(seconds_plain, np.float64)
    if marked.shape != plain.shape or marked.ndim != 1 or not len(marked):
        raise ValueError(f"need paired timings of one shape, got {marked.shape} and {plain.shape}")
    if (marked <= 0).any() or (plain <= 0).any():
        raise ValueError("timings must be positive")
    return float(np.median(plain / marked))
