"""The pure metric functions of `dipmark/watermark` and `dipmark/cost` on hand-computed cases, and
the claims' verdicts computed from metric values."""

import math

import jax.numpy as jnp
import ml_collections
import numpy as np
import pytest

from jaxml.core.experiment import DOES_NOT_HOLD, HOLDS, NOT_COMPARABLE
from jaxml.papers.dipmark import experiments, metrics


def test_bootstrap_ci_hand_cases():
    assert metrics.bootstrap_ci([2.0, 2.0, 2.0]) == (2.0, 2.0)
    # Two values 0 and 1: a resample's mean is 0, 0.5 or 1 with probabilities 1/4, 1/2, 1/4, so the
    # 2.5% and 97.5% quantiles are 0 and 1, and the 30% and 70% ones both 0.5.
    assert metrics.bootstrap_ci([0.0, 1.0]) == (0.0, 1.0)
    assert metrics.bootstrap_ci([0.0, 1.0], level=0.4) == (0.5, 0.5)
    with pytest.raises(ValueError, match="non-empty"):
        metrics.bootstrap_ci([])


def test_mean_and_paired_difference_skip_missing_texts():
    assert metrics.mean_ci([1.0, np.nan, 3.0])[0] == 2.0
    # pairs with a NaN on either side drop out: differences (1, 1)
    assert metrics.paired_difference_ci([1.0, 2.0, np.nan, 4.0], [0.0, 1.0, 1.0, np.nan]) == (1.0, 1.0, 1.0)
    with pytest.raises(ValueError, match="shape"):
        metrics.paired_difference_ci([1.0], [1.0, 2.0])


def test_nll_shift_hand_cases():
    p = jnp.log(jnp.asarray([[0.75, 0.25], [0.5, 0.5], [0.9, 0.1]]))
    q = jnp.log(jnp.asarray([[0.25, 0.75], [1.0, 1e-30], [0.9, 0.1]]))
    # row 0: (0.25 - 0.75) (-ln 0.75) + (0.75 - 0.25) (-ln 0.25) = 0.5 ln 3; row 1: uniform P, any P' -> 0
    np.testing.assert_allclose(metrics.nll_shift(p[:1], q[:1], [True]), 0.5 * math.log(3), rtol=1e-6)
    np.testing.assert_allclose(metrics.nll_shift(p, q, [True, True, True]), 0.5 * math.log(3) / 3, rtol=1e-6)
    np.testing.assert_allclose(metrics.nll_shift(p, q, [False, True, True]), 0.0, atol=1e-7)
    assert float(metrics.nll_shift(p, q, [False, False, False])) == 0.0
    # P' = (1, 0): (1 - 0.75) (-ln 0.75) + (0 - 0.25) (-ln 0.25) = -0.25 ln 3; and -inf logits give no NaN
    cut = jnp.asarray([[0.0, -jnp.inf]])
    np.testing.assert_allclose(metrics.nll_shift(p[:1], cut, [True]), -0.25 * math.log(3), rtol=1e-6)
    assert np.isfinite(float(metrics.nll_shift(cut, p[:1], [True])))


def test_empirical_threshold_and_detection_rate():
    # 1..100: the 99% quantile rounded up to an observed score is the maximum (index 98.01 -> 99)
    assert metrics.empirical_threshold(np.arange(1, 101)) == 100
    null = np.arange(1, 1001)
    threshold = metrics.empirical_threshold(null)    # index 989.01 -> 990, the score 991
    assert threshold == 991
    assert metrics.detection_rate(null, threshold) == 0.009       # at most the target 1% on its own sample
    assert metrics.empirical_threshold(null, fpr=0.1) == 901      # index 899.1 -> 900
    assert metrics.detection_rate([1, 2, 3], 2) == pytest.approx(1 / 3)
    assert metrics.detection_rate([1, 2, 3], 2, strict=False) == pytest.approx(2 / 3)
    assert math.isnan(metrics.detection_rate([], 2))
    with pytest.raises(ValueError, match="fpr"):
        metrics.empirical_threshold(null, fpr=1.0)


def test_untouched_fraction_and_throughput_ratio():
    assert metrics.untouched_fraction(0.1, 5) == pytest.approx(0.9 ** 6)      # 0.531441
    assert metrics.untouched_fraction(0.0, 5) == 1.0
    # rounds: plain/marked = 0.5, 0.5, 1.0 -> median 0.5
    assert metrics.throughput_ratio([2.0, 4.0, 3.0], [1.0, 2.0, 3.0]) == 0.5
    with pytest.raises(ValueError, match="paired"):
        metrics.throughput_ratio([1.0, 2.0], [1.0])


def _config(model="smollm2"):
    return ml_collections.ConfigDict(dict(
        model=model, max_new_tokens=64, temperature=1.0, alphas=(0.45,), deltas=(2.0,), lengths=(32, 64),
        headline_alpha=0.45, claim_epsilon=0.05, attack_length=64, n_human=0, batch_size=8,
        throughput_claim=True))


def _metrics(dip_shift=(-0.003, -0.02, 0.012), kgw_shift=(0.18, 0.17, 0.2), tpr=1.0, attacked=0.9, ratio=0.95,
             rounds=3, mode="ours"):
    m = {}
    for label, (mean, lo, hi) in (("dipmark_a0.45", dip_shift), ("kgw_d2", kgw_shift)):
        m.update({f"nll_shift/{label}": mean, f"nll_shift_ci99_low/{label}": lo, f"nll_shift_ci99_high/{label}": hi,
                  f"tpr_hoeffding/{mode}/L64/{label}": tpr, f"tpr_emp/{mode}/L64/{label}": tpr,
                  f"n/{mode}/L64/{label}": 16.0, f"tpr_attack_hoeffding/{mode}/eps0.05/{label}": attacked,
                  f"n_attack/{mode}/{label}": 16.0,
                  f"generation_throughput_ratio/{label}": ratio, f"n_timed_batches/{label}": float(rounds)})
    m.update({f"n_null/{mode}/L64": 16.0, f"untouched_fraction/{mode}/eps0.05": 0.95 ** 6})
    return m


def test_claims_verdicts_follow_the_measured_values():
    verdicts = lambda claims: [c.verdict for c in claims]
    assert verdicts(experiments.watermark_claims(_metrics(), _config(), 16)) == [HOLDS] * 4
    # DiPmark's CI excludes 0: not preserved; KGW's contains 0: no contrast either
    bad = _metrics(dip_shift=(0.05, 0.01, 0.09), tpr=0.5, attacked=0.3, ratio=0.7)
    assert verdicts(experiments.watermark_claims(bad, _config(), 16)) == [DOES_NOT_HOLD] * 4
    assert experiments.watermark_claims(_metrics(kgw_shift=(0.01, -0.01, 0.03)), _config(), 16)[0].verdict == DOES_NOT_HOLD
    # a tiny random model, or too few texts, cannot speak to the claims
    assert verdicts(experiments.watermark_claims(_metrics(), _config("tiny"), 16)) == [NOT_COMPARABLE] * 4
    assert verdicts(experiments.watermark_claims(_metrics(), _config(), 8)) == [NOT_COMPARABLE] * 4
    # one paired timing is too noisy for the cost claim
    assert verdicts(experiments.watermark_claims(_metrics(rounds=1), _config(), 16))[3] == NOT_COMPARABLE
    first = experiments.watermark_claims(_metrics(), _config(), 16)[0]
    assert "-0.0030 [-0.0200, +0.0120]" in first.ours and "+0.1800" in first.ours
    # the mode is read from the config and stated in every claim; detection metrics carry it in their names
    config = _config()
    config.mode = "official"
    claims = experiments.watermark_claims(_metrics(mode="official"), config, 16)
    assert verdicts(claims) == [HOLDS] * 4 and all("mode official" in c.ours for c in claims)
    assert len(experiments.watermark_claims(_metrics(mode="ours"), config, 16)) == 2   # no official TPRs: not claimed
