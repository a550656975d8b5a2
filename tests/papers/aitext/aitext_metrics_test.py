"""The validation summaries of `aitext/validate` on hand-computed cases."""

import math

import numpy as np
import pytest

from jaxml.papers.aitext import metrics as M


def test_mean_abs_error_by_hand():
    # |0.12 - 0.1| + |0.0 - 0.05| + |0.2 - 0.2| = 0.02 + 0.05 + 0 = 0.07, over 3 sets
    assert M.mean_abs_error([0.12, 0.0, 0.2], [0.1, 0.05, 0.2]) == pytest.approx(0.07 / 3, abs=1e-15)
    with pytest.raises(ValueError, match="same, non-empty shape"):
        M.mean_abs_error([0.1], [0.1, 0.2])
    with pytest.raises(ValueError, match="same, non-empty shape"):
        M.mean_abs_error([], [])


def test_ci_coverage_counts_closed_intervals():
    low = [0.00, 0.05, 0.11, 0.20]
    high = [0.02, 0.10, 0.15, 0.30]
    truth = [0.00, 0.10, 0.10, 0.25]
    # set 1: 0 in [0, 0.02] yes (left end); set 2: 0.1 in [0.05, 0.1] yes (right end);
    # set 3: 0.1 in [0.11, 0.15] no; set 4: 0.25 in [0.2, 0.3] yes  ->  3 of 4
    assert M.ci_coverage(low, high, truth) == 0.75
    # an end off by float rounding still counts; one off by 1e-6 does not
    assert M.ci_coverage([0.1 + 1e-12], [0.2], [0.1]) == 1.0
    assert M.ci_coverage([0.1 + 1e-6], [0.2], [0.1]) == 0.0
    with pytest.raises(ValueError, match="same, non-empty shape"):
        M.ci_coverage([0.0], [0.1, 0.2], [0.0])


def test_coverage_floor_is_a_two_sigma_binomial_band():
    # 95% over 100 sets: sigma = sqrt(0.95 * 0.05 / 100) = 0.021794...; 0.95 - 2 sigma = 0.906411...
    assert M.coverage_floor(0.95, 100) == pytest.approx(0.95 - 2 * 0.0217944947, abs=1e-9)
    # 33 sets (the quick validation per split): sigma = sqrt(0.0475 / 33) = 0.0379393...
    assert M.coverage_floor(0.95, 33) == pytest.approx(0.8741214, abs=1e-6)
    with pytest.raises(ValueError):
        M.coverage_floor(1.0, 10)
    with pytest.raises(ValueError):
        M.coverage_floor(0.95, 0)


def test_flagged_fraction_is_strictly_above_the_threshold():
    assert M.flagged_fraction([-1.0, 0.0, 0.5, 2.0], 0.0) == 0.5      # 0.0 itself is not flagged
    assert M.flagged_fraction(np.array([3.0, 4.0]), 5.0) == 0.0
    with pytest.raises(ValueError, match="no scores"):
        M.flagged_fraction([], 0.0)


def test_balanced_threshold_by_hand():
    # Separable: any t in [-3.5, -2) flags every AI score and no human one; the smallest candidate is -3.5.
    assert M.balanced_threshold([-5.0, -4.0, -3.5], [-2.0, -1.0]) == -3.5
    # Overlapping: human {1, 2, 3, 4}, AI {3, 5}. Candidates t and (TPR + TNR):
    # t=1: 2/2 + 1/4 = 1.25; t=2: 1 + 2/4 = 1.5; t=3: 1/2 + 3/4 = 1.25; t=4: 1/2 + 1 = 1.5; t=5: 0 + 1 = 1
    # the first maximum is t = 2
    assert M.balanced_threshold([1.0, 2.0, 3.0, 4.0], [3.0, 5.0]) == 2.0
    with pytest.raises(ValueError, match="calibration"):
        M.balanced_threshold([], [1.0])


def test_error_ratio():
    assert M.error_ratio(0.2, 0.01) == pytest.approx(20.0)
    assert M.error_ratio(0.05, 0.0) == math.inf
    with pytest.raises(ValueError):
        M.error_ratio(-0.1, 0.1)


def test_each_adjective_reading_gets_its_own_verdicts():
    """A vocabulary that misses the bar fails only its own claims: the WordNet list's numbers here
    are inside every threshold (error 0.01, coverage 95%, classifier 10x worse), the tagger's are
    outside (error 0.05, coverage 40%, classifier 1.5x); 'all' is reported but judged only when no
    adjective vocabulary ran."""
    import ml_collections
    from jaxml.papers.aitext import experiments as ex

    splits = ("test", "shift_genre")
    values = {"adjectives": (0.01, 0.95, 0.10), "pos": (0.05, 0.40, 0.075), "all": (0.20, 0.0, 0.0)}
    m = {f"sets/{s}": 100.0 for s in splits}
    for v, (mae, cov, clf) in values.items():
        for s in splits:
            m.update({f"{s}/{v}/mae_mle": mae, f"{s}/{v}/ci_coverage": cov, f"{s}/{v}/mae_classifier": clf})
    config = ml_collections.ConfigDict(dict(vocabularies=("adjectives", "pos", "all"), splits=splits,
                                            alphas=(0.0, 0.25), scale="quick"))
    claims = ex.validation_claims(m, config)
    by_vocab = {v: [c.verdict for c in claims if ex.VOCAB_WORDS[v] in c.text] for v in values}
    assert by_vocab["adjectives"] == ["holds"] * 4
    assert by_vocab["pos"] == ["does not hold"] * 4
    assert by_vocab["all"] == []
    config.vocabularies = ("all",)
    assert [c.verdict for c in ex.validation_claims(m, config)][:4] == ["does not hold"] * 4
