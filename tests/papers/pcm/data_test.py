import numpy as np
import pytest

from jaxml.papers.pcm import data, spectral
from tests.papers.pcm import reference


def test_simulator_matches_pcm_marginals():
    sim = data.simulate(0, 40_000, 4, 3)
    assert sim.responses.shape == (40_000, 4) and sim.responses.dtype == np.int8
    nodes, w = np.polynomial.hermite_e.hermegauss(60)
    want = np.einsum("q,qik->ik", w / w.sum(), reference.pcm_probs(nodes, sim.thresholds))
    got = np.stack([(sim.responses == k).mean(0) for k in range(4)], 1)
    np.testing.assert_allclose(got, want, atol=0.012)                     # ~5 binomial standard errors
    assert abs(sim.abilities.mean()) < 0.03 and abs(sim.abilities.std() - 1) < 0.02


def test_simulator_missingness_keeps_every_user():
    sim = data.simulate(1, 5000, 3, 2, missing=0.6)
    obs = sim.responses >= 0
    assert obs.any(1).all()
    # P(missing) = 0.6, except that users who lost all three (0.6^3 = 0.216) get one back.
    np.testing.assert_allclose(1 - obs.mean(), 0.6 - 0.216 / 3, atol=0.01)


def test_heldout_split_one_rating_per_user():
    rng = np.random.default_rng(2)
    x = rng.integers(0, 3, size=(200, 5))
    x[rng.random(x.shape) < 0.5] = -1
    split = data.heldout_split(x, seed=0)
    counts = (x >= 0).sum(1)
    np.testing.assert_array_equal(split.test_users, np.flatnonzero(counts >= 2))
    np.testing.assert_array_equal(x[split.test_users, split.test_items], split.test_scores)
    assert (split.train[split.test_users, split.test_items] == -1).all()
    np.testing.assert_array_equal((split.train >= 0).sum(1), counts - np.isin(np.arange(200), split.test_users))
    # The held-out item is uniform over the user's observed items: each of 5 items ~ equally often.
    many = data.heldout_split(np.zeros((20_000, 5), int), seed=1)
    np.testing.assert_allclose(np.bincount(many.test_items) / 20_000, 0.2, atol=0.015)


@pytest.mark.parametrize("name, shape, top, n_missing", [
    ("verbal_aggression", (316, 24), 2, 0),
    ("conspiracist_beliefs", (2449, 15), 4, 106),
    ("math_exam", (729, 13), 2, 0),
])
def test_real_data_sets(name, shape, top, n_missing):
    d = data.load(name)
    assert d.responses.shape == shape and d.n_levels == top
    assert (d.responses < 0).sum() == n_missing
    assert d.responses.max() == top and len(d.items) == shape[1]


def test_verbal_aggression_known_counts():
    d = data.load("verbal_aggression")
    assert d.items[0] == "S1WantCurse"
    # category totals of the classic 316 x 24 matrix (0: 3973, 1: 2081, 2: 1530)
    np.testing.assert_array_equal(np.bincount(d.responses.ravel()), [3973, 2081, 1530])
    beta = spectral.spectral_estimate(d.responses)
    # Wanting to curse is the most endorsed behaviour and doing shout the least: the ordering of the
    # item means must come out of the first thresholds as well.
    mean_score = d.responses.mean(0)
    assert np.corrcoef(mean_score, -np.asarray(beta).mean(1))[0, 1] > 0.9


def test_unknown_data_set():
    with pytest.raises(ValueError, match="unknown PCM data set 'lsat'"):
        data.load("lsat")
