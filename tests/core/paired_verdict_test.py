"""jaxml.core.metrics.paired_t_test and jaxml.core.experiment.paired_verdict: the seeds guard on
claims measured over paired seeds.

The expected p-values use the closed form of Student's t with 2 degrees of freedom,
P(|T| > t) = 1 - t / sqrt(2 + t^2), not scipy."""

import math

import pytest

from jaxml.core.experiment import DOES_NOT_HOLD, HOLDS, NOT_COMPARABLE, SUGGESTIVE, paired_verdict
from jaxml.core.metrics import paired_t_test


def _p_two_sided_df2(t):
    return 1 - t / math.sqrt(2 + t * t)


def test_t_and_p_against_the_closed_form_for_three_seeds():
    got = paired_t_test([1.0, 2.0, 3.0])                       # mean 2, sample std 1
    assert got["t"] == pytest.approx(2 * math.sqrt(3), rel=1e-12)
    assert got["p"] == pytest.approx(_p_two_sided_df2(2 * math.sqrt(3)), rel=1e-9)   # 0.0742
    # Momentor's 3-seed mIoU gain over discrete tokens: +6.4 ± 6.4 points -> t = sqrt(3), p = 0.225
    d = [6.4 - 6.4, 6.4, 6.4 + 6.4]
    got = paired_t_test(d)
    assert (got["mean"], got["std"]) == (pytest.approx(6.4), pytest.approx(6.4))
    assert got["p"] == pytest.approx(_p_two_sided_df2(math.sqrt(3)), rel=1e-9)
    assert got["positive"] == pytest.approx(2 / 3)


def test_degenerate_samples():
    assert math.isnan(paired_t_test([0.3])["p"])
    assert paired_t_test([0.5, 0.5, 0.5])["p"] == 0.0
    assert paired_t_test([0.0, 0.0])["p"] == 1.0
    with pytest.raises(ValueError, match="non-empty"):
        paired_t_test([])
    with pytest.raises(ValueError, match="finite"):
        paired_t_test([1.0, float("nan")])


def test_verdict_needs_seeds_and_significance():
    # consistent gains on 3 seeds: p = 0.074 and too few seeds -> suggestive, not holds
    v, words = paired_verdict([1.0, 2.0, 3.0])
    assert v == SUGGESTIVE and "needs 5 seeds" in words and "p = 0.074" in words
    # 6 seeds, p < 0.05
    assert paired_verdict([1.0, 2.0, 3.0, 1.5, 2.5, 2.0])[0] == HOLDS
    # 6 seeds, not significant: mean 0.5, std about 2.95
    v, words = paired_verdict([4.0, -3.0, 2.0, -2.0, 3.5, -1.5])
    assert v == SUGGESTIVE and "p < 0.05" in words
    assert paired_verdict([-1.0, -2.0, 0.5])[0] == DOES_NOT_HOLD
    assert paired_verdict([0.0, 0.0, 0.0])[0] == DOES_NOT_HOLD
    assert paired_verdict([2.0])[0] == NOT_COMPARABLE
    # the guard's thresholds are arguments
    assert paired_verdict([1.0, 2.0, 3.0], min_seeds=3, alpha=0.1)[0] == HOLDS
