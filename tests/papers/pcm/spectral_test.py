import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxml.papers.pcm import spectral
from tests.papers.pcm import reference


def _truth(seed=0, m=10, n_levels=3):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(m, n_levels))


def test_exact_expected_counts_recover_thresholds_to_1e6():
    beta = _truth(0, m=10, n_levels=3)
    nodes, weights = np.polynomial.hermite_e.hermegauss(60)          # theta ~ N(0, 1), exactly integrated
    y, v, cnt = reference.expected_counts(nodes, weights / weights.sum() * 1e6, beta)
    with jax.enable_x64(True):
        counts = spectral.PairwiseCounts(jnp.asarray(y), jnp.asarray(v), jnp.asarray(cnt))
        fit = spectral.thresholds_from_counts(counts, lam=0.0, tol=1e-15, max_iters=100_000)
        got = np.asarray(fit.thresholds)
        assert int(fit.iterations) < 100_000 and float(fit.residual) < 1e-15     # converged, not capped
    want = beta - beta[:, 0].mean()                                   # identified: level-1 mean 0
    np.testing.assert_allclose(got, want, atol=1e-6, rtol=0)
    assert got.dtype == np.float64


def test_counts_match_loops_with_missing_and_weights():
    rng = np.random.default_rng(1)
    x = rng.integers(0, 4, size=(57, 6))
    x[rng.random(x.shape) < 0.3] = -1
    w = rng.random(57)
    counts = spectral.pairwise_counts(x, 3, w, chunk=16)   # 57 users: 4 chunks, the last one padded
    for level in range(1, 4):
        want = np.einsum("u,ui,uj->ij", w, x == level, x == level - 1)
        np.testing.assert_allclose(counts.Y[level - 1], want, rtol=1e-5)
    per_level = np.stack([(x == b).sum(1) for b in range(4)], 1)
    for a in range(4):
        np.testing.assert_allclose(counts.V[a], np.einsum("u,ui,ub->ib", w, x == a, per_level), rtol=1e-5)
    np.testing.assert_allclose(counts.N, np.einsum("u,uia->ia", w, x[:, :, None] == np.arange(4)), rtol=1e-5)


def test_matches_loop_reference_on_sampled_data():
    rng = np.random.default_rng(2)
    beta = _truth(2, m=8, n_levels=3)
    x = reference.sample_pcm(rng, rng.normal(size=3000), beta, missing=0.2)
    want = reference.spectral_loops(x, lam=0.1, tol=1e-10)
    with jax.enable_x64(True):
        got = np.asarray(spectral.spectral_estimate(x, 3, tol=1e-10))
    np.testing.assert_allclose(got, want, atol=1e-8)


def test_weights_equal_repetition():
    rng = np.random.default_rng(3)
    beta = _truth(3, m=6, n_levels=2)
    x = reference.sample_pcm(rng, rng.normal(size=400), beta)
    reps = rng.integers(1, 4, size=400)
    a = spectral.spectral_estimate(x, 2, weights=reps.astype(float))
    b = spectral.spectral_estimate(np.repeat(x, reps, axis=0), 2)
    np.testing.assert_allclose(a, b, atol=1e-4)


def test_error_falls_with_n():
    rng = np.random.default_rng(4)
    beta = _truth(4, m=10, n_levels=3)
    errors = []
    for n in (500, 50_000):
        x = reference.sample_pcm(rng, rng.normal(size=n), beta)
        errors.append(spectral.centred_rmse(spectral.spectral_estimate(x, 3), beta))
    assert errors[1] < 0.06 and errors[1] < errors[0] / 4, errors   # ~1/sqrt(n): a factor 10 in expectation


def test_missing_codes_are_equivalent():
    rng = np.random.default_rng(5)
    x = reference.sample_pcm(rng, rng.normal(size=300), _truth(5, m=5, n_levels=2), missing=0.2)
    a = spectral.spectral_estimate(x, 2)
    b = spectral.spectral_estimate(np.where(x < 0, -99999, x), 2)
    c = spectral.spectral_estimate(np.where(x < 0, np.nan, x.astype(float)), 2)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a, c)


@pytest.mark.parametrize("bad, message", [
    (np.array([[0, 1, 5], [1, 2, 0]]), "above L = 2"),
    (np.array([[0, 1, -3], [1, 2, 0]]), "negative score -3 at \\(user 0, item 2\\)"),
    (np.array([[0, 1.5, 2], [1, 2, 0]]), "non-integer score 1.5 at \\(user 0, item 1\\)"),
    (np.array([[0, 1, 2], [-1, -1, -1]]), "1 user\\(s\\) with no observed response \\(rows \\[1\\]"),
    (np.array([[0, 1, 2]]).reshape(3), "2-D"),
    (np.full((2, 2), np.nan), "no observed response"),
])
def test_bad_matrices_get_clear_errors(bad, message):
    with pytest.raises(ValueError, match=message):
        spectral.validate_responses(bad, 2)


def test_empty_rows_allowed_on_request_and_contribute_nothing():
    x = np.array([[0, 1, 2], [2, 1, 0], [1, 1, 1]])
    padded = np.vstack([x, -np.ones((2, 3), int)])
    got, n_levels = spectral.validate_responses(padded, allow_empty_rows=True)
    assert n_levels == 2 and got.shape == (5, 3)
    a, b = spectral.pairwise_counts(x, 2), spectral.pairwise_counts(padded, 2)
    for u, v in zip(a, b):
        np.testing.assert_array_equal(u, v)


def test_unidentified_item_is_an_error():
    x = np.array([[0, 1, -1], [1, 0, -1], [-1, -1, 1], [-1, -1, 0]])   # item 2 is never seen with another
    with pytest.raises(ValueError, match="item 2 is never compared at level 1"):
        spectral.spectral_estimate(x, 1)


def test_count_shapes_are_checked():
    counts = spectral.pairwise_counts(np.array([[0, 1, 2], [2, 1, 0]]), 2)
    with pytest.raises(ValueError, match="expected Y \\[L, m, m\\]"):
        spectral.thresholds_from_counts(counts._replace(N=counts.N[:2]))


def test_bad_weights():
    x = np.array([[0, 1], [1, 0]])
    with pytest.raises(ValueError, match="one per user"):
        spectral.pairwise_counts(x, 1, np.ones(3))
    with pytest.raises(ValueError, match="non-negative"):
        spectral.pairwise_counts(x, 1, np.array([1.0, -1.0]))


def test_category_log_probs_normalised_and_pcm():
    beta = jnp.asarray(_truth(6, m=4, n_levels=3))
    lp = spectral.category_log_probs(jnp.array([-1.0, 0.3]), beta)
    assert lp.shape == (2, 4, 4)
    np.testing.assert_allclose(jnp.exp(lp).sum(-1), 1.0, rtol=1e-6)
    np.testing.assert_allclose(np.exp(lp), reference.pcm_probs(np.array([-1.0, 0.3]), beta), atol=1e-6)
