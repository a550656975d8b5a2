"""Accuracy, Wilson intervals, breakdowns and the complexity slope against independent references."""

import math

import numpy as np
import pytest
import scipy.stats

from jaxml.papers.asynchow import metrics


@pytest.mark.parametrize("k,n,lo,hi", [
    (0, 10, 0.0, 0.27753), (5, 10, 0.23659, 0.76341), (10, 10, 0.72247, 1.0), (81, 263, 0.25529, 0.36621),
])
def test_wilson_interval_known_values(k, n, lo, hi):
    # the Wilson score interval at z = 1.96: 81/263 is Newcombe (1998)'s worked example (0.2553, 0.3662); the
    # others from the closed form (2np + z^2 -+ z sqrt(z^2 + 4np(1 - p))) / (2(n + z^2))
    got = metrics.wilson_interval(k, n)
    assert got == pytest.approx((lo, hi), abs=1e-4)


def test_wilson_interval_validation_and_empty():
    assert metrics.wilson_interval(0, 0) == (0.0, 1.0)
    with pytest.raises(ValueError, match="0 <= correct <= count"):
        metrics.wilson_interval(3, 2)


def test_accuracy_table_groups_in_first_appearance_order():
    rows = [dict(method="a", plan_type="async", correct=True), dict(method="a", plan_type="async", correct=False),
            dict(method="b", plan_type="sequential", correct=True), dict(method="a", plan_type="sequential", correct=True)]
    table = metrics.accuracy_table(rows, ("method", "plan_type"))
    assert list(table) == [("a", "async"), ("b", "sequential"), ("a", "sequential")]
    assert table[("a", "async")][:3] == (0.5, 1, 2)
    assert table[("b", "sequential")].accuracy == 1.0
    by_method = metrics.accuracy_table(rows, ("method",))
    assert by_method[("a",)][:3] == (2 / 3, 2, 3)
    with pytest.raises(ValueError, match="lacks"):
        metrics.accuracy_table([dict(method="a")], ("method",))


def test_complexity_slope_matches_linear_regression():
    rng = np.random.default_rng(0)
    ve = rng.integers(9, 40, 300)
    correct = rng.random(300) < np.clip(1.2 - ve / 40, 0, 1)
    slope, se = metrics.complexity_slope(ve, correct)
    ref = scipy.stats.linregress(ve.astype(float), correct.astype(float))
    assert slope == pytest.approx(10 * ref.slope, rel=1e-12)
    assert se == pytest.approx(10 * ref.stderr, rel=1e-9)
    assert slope < 0
    assert all(math.isnan(v) for v in metrics.complexity_slope([10, 10, 10], [1, 0, 1]))
