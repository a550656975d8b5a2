"""The ICE decomposition against hand-computed entropies, its invariants, the reference code's special
cases, answer clustering on tricky pairs, and the detection metrics on hand-computed cases."""

import math

import numpy as np
import pytest

from jaxml.papers import ice


def h2(p):
    p = np.asarray(p, np.float64)
    p = p[p > 0] / p.sum()
    return float(-(p * np.log2(p)).sum())


def test_decomposition_by_hand():
    # clarification 1: answers A A A B (p = 3/4, 1/4); clarification 2: B B B B.
    f = np.array([[0.75, 0.25], [0.0, 1.0]])
    d = ice.decompose(f)
    model = (h2([3, 1]) + 0.0) / 2                        # 0.8113 / 2
    total = h2([0.375, 0.625])                            # the mean distribution
    assert abs(float(d.model) - model) < 1e-6 and abs(float(d.total) - total) < 1e-6
    assert abs(float(d.data) - (total - model)) < 1e-6
    assert abs(total - 0.954434) < 1e-6 and abs(model - 0.405639) < 1e-6
    swapped = ice.decompose(f, bnn=True)
    assert abs(float(swapped.model) - float(d.data)) < 1e-7 and abs(float(swapped.data) - float(d.model)) < 1e-7


def test_total_is_data_plus_model_and_data_is_a_mutual_information():
    rng = np.random.default_rng(0)
    f = rng.dirichlet(np.full(6, 0.5), size=(50, 4))      # 50 inputs, 4 clarifications, 6 answers
    valid = rng.random((50, 4)) < 0.8
    d = ice.decompose(f, valid)
    np.testing.assert_allclose(np.asarray(d.total), np.asarray(d.data + d.model), atol=1e-6)
    assert np.all(np.asarray(d.data) >= -1e-6)           # Jensen: H(mean) >= mean H
    for i in range(5):                                   # the batched version equals one input at a time
        one = ice.decompose(f[i], valid[i])
        assert abs(float(one.data) - float(d.data[i])) < 1e-6
    same = ice.decompose(np.tile(f[:1, :1], (1, 3, 1)))  # every clarification the same distribution
    assert abs(float(same.data[0])) < 1e-6


def test_no_valid_clarification_means_total_one_model_one_data_zero():
    d = ice.decompose(np.ones((2, 3)) / 3, valid=np.zeros(2, bool))
    assert (float(d.total), float(d.data), float(d.model)) == (1.0, 0.0, 1.0)
    d = ice.decompose_answers([["unknown"] * 10, ["Unknown."] * 4])
    assert (float(d.total), float(d.data), float(d.model)) == (1.0, 0.0, 1.0)


def test_answers_to_frequencies_with_the_unknown_rules():
    f, valid, labels = ice.answer_frequencies([["Paris"] * 8 + ["unknown"] * 2, ["Lyon", "the city of Lyon"]])
    assert labels == ["unknown", "paris", "city of lyon"] and valid.tolist() == [True, True]
    # each "unknown" adds 1/(V-1) = 1/2 to the two other answers; counts over the nominal 10 samples
    np.testing.assert_allclose(f, [[0.0, 0.9, 0.1], [0.0, 0.0, 0.2]])
    d = ice.decompose(f, valid)
    mean = (f[0] + f[1]) / 2
    assert abs(float(d.total) - h2(mean + 1e-10)) < 1e-6
    two_readings = ice.decompose_answers([["paris"] * 10, ["lyon"] * 10])
    assert abs(float(two_readings.data) - 1.0) < 1e-6 and abs(float(two_readings.model)) < 1e-6
    with pytest.raises(ValueError, match="more than samples=10"):
        ice.answer_frequencies([["a"] * 11])


@pytest.mark.parametrize("a, b, same", [
    ("The Eiffel Tower", "eiffel tower", True),            # articles, case
    ("1,000", "1000", True),                               # punctuation
    ("Barack Obama", "Obama", True),                       # containment
    ("New York City", "York", True),                       # containment inside a word sequence
    ("1999", "1998", False),
    ("red", "blue", False),
])
def test_clustering_of_answer_pairs(a, b, same):
    f, _, labels = ice.answer_frequencies([[a], [b]], samples=1, fallback="new")
    assert (len(labels) == 1) == same, labels


def test_fuzzy_matcher_picks_the_closest_candidate_and_the_reference_fallback():
    match = ice.FuzzyMatcher(["john f kennedy airport", "kennedy space center", "paris"])
    assert match("kennedy") == 1            # both contain it; word error rates 3/1 and 2/1: the smaller wins
    assert match("john f kennedy airport new york") == 0
    assert match("london") == 0                            # no candidate: the reference code takes label 0
    new = ice.FuzzyMatcher(["paris"], fallback="new")
    assert new("london") == 1 and new.labels == ["paris", "london"]
    assert ice.word_error_rate("a b c", "a x c") == pytest.approx(1 / 3)
    assert ice.word_error_rate("a b", "a b c d") == 1.0
    assert ice.normalize_answer("The (regarded) Answer!") == "answer"


def test_auroc_best_f1_and_bootstrap_by_hand():
    labels = np.array([1, 1, 0, 0, 1, 0])
    scores = np.array([0.9, 0.4, 0.4, 0.1, 0.8, 0.3])
    # positive-negative pairs: 9, ordered 8 and one tie (0.4 vs 0.4) -> (8 + 0.5) / 9
    assert ice.auroc(labels, scores) == pytest.approx(8.5 / 9)
    assert ice.auroc([1, 0], [0.2, 0.7]) == 0.0
    with pytest.raises(ValueError, match="both classes"):
        ice.auroc([1, 1], [0.1, 0.2])
    best = ice.best_f1(labels, scores)
    # t in [0.30, 0.39]: predicted {0.9, 0.4, 0.4, 0.8}: tp 3, precision 3/4, recall 1 -> F1 6/7
    assert best.f1 == pytest.approx(6 / 7) and best.threshold == pytest.approx(0.30)
    assert best.positive_accuracy == 1.0 and best.negative_accuracy == pytest.approx(2 / 3)
    value, lo, hi = ice.bootstrap_ci(ice.auroc, labels, scores, samples=200)
    assert value == pytest.approx(8.5 / 9) and lo <= value <= hi <= 1.0
    assert math.isfinite(lo)


def test_baselines_by_hand():
    from jaxml.papers.ice import baselines

    assert baselines.predictive_entropy(["Paris", "paris.", "Lyon", "the Lyon"]) == pytest.approx(1.0, abs=1e-6)
    assert baselines.predictive_entropy(["a", "b", "c", "d"]) == pytest.approx(2.0, abs=1e-6)
    table = {"paris": [1.0, 0.0], "paris france": [0.95, 0.31], "lyon": [0.0, 1.0]}
    embed = lambda texts: np.array([table[t] for t in texts])  # noqa: E731
    # paris and "paris france" share a cluster (cosine 0.95), lyon is alone: H(2/3, 1/3)
    assert baselines.cluster_entropy(["Paris", "Paris, France", "Lyon"], embed) == pytest.approx(h2([2, 1]), abs=1e-6)

    class Fixed:
        def logprobs(self, prompts, continuations):
            return [np.array([-0.5]) if c == " Yes" else np.array([-1.5, -0.25]) for c in continuations]

    scores = baselines.self_reported_ambiguity(Fixed(), ice.ambiguous_instructions(0, 1)[:2])
    np.testing.assert_allclose(scores, [-0.5 + 1.75] * 2)
    with pytest.raises(ValueError, match="no answers"):
        baselines.predictive_entropy([])
