import numpy as np
import pytest

from jaxml.papers.pcm import sparse, spectral
from tests.papers.pcm import reference


def _triples(x):
    u, i = np.nonzero(x >= 0)
    return u, i, x[u, i]


def test_sparse_counts_equal_dense_counts_with_weights():
    rng = np.random.default_rng(0)
    x = rng.integers(0, 4, size=(70, 9))
    x[rng.random(x.shape) < 0.6] = -1
    x[5] = -1                                                        # a user with no ratings
    w = rng.random(70)
    u, i, s = _triples(x)
    perm = rng.permutation(len(u))                                    # order of the triples does not matter
    got = sparse.pairwise_counts_sparse(u[perm], i[perm], s[perm], 9, 3, w, n_users=70, chunk=16)
    want = spectral.pairwise_counts(x, 3, w)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


def test_sparse_estimate_equals_dense_estimate():
    rng = np.random.default_rng(1)
    beta = rng.normal(size=(12, 2))
    x = reference.sample_pcm(rng, rng.normal(size=2000), beta, missing=0.7)
    x = x[(x >= 0).any(1)]
    u, i, s = _triples(x)
    np.testing.assert_allclose(sparse.spectral_estimate_sparse(u, i, s, 12, 2), spectral.spectral_estimate(x, 2),
                               atol=1e-5)


@pytest.mark.parametrize("args, message", [
    (([0, 1], [0, 1], [0, 5]), "scores: value 5 at position 1 is outside \\[0, 2\\]"),
    (([0, 1], [0, 3], [0, 1]), "items: value 3 at position 1 is outside \\[0, 2\\]"),
    (([0, -1], [0, 1], [0, 1]), "users: value -1"),
    (([0, 0], [1, 1], [0, 1]), "user 0 rates item 1 more than once"),
    (([0, 1], [0, 1], [0.5, 1.0]), "non-integer value 0.5"),
    (([0, 1], [0, 1], [0]), "lengths 2, 2, 1"),
])
def test_bad_triples(args, message):
    with pytest.raises(ValueError, match=message):
        sparse.pairwise_counts_sparse(*args, n_items=3, n_levels=2)


def test_simulated_ratings_recovered_from_triples():
    from jaxml.papers.pcm import data

    r = data.simulate_ratings(0, 20_000, 15, 2, per_user=6)
    key = r.users.astype(np.int64) * 15 + r.items
    assert len(np.unique(key)) == len(key)                            # no repeated (user, item)
    # 6 draws with replacement from 15 items: E[distinct] = 15 (1 - (14/15)^6)
    np.testing.assert_allclose(len(key) / 20_000, 15 * (1 - (14 / 15) ** 6), rtol=0.01)
    assert r.scores.min() == 0 and r.scores.max() == 2
    est = sparse.spectral_estimate_sparse(r.users, r.items, r.scores, 15, 2)
    assert spectral.centred_rmse(est, r.thresholds) < 0.1
