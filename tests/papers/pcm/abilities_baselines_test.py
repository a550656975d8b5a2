import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import optimize

from jaxml.papers.pcm import abilities, baselines, spectral
from tests.papers.pcm import reference


def test_mle_rasch_closed_form_and_bounds():
    # L = 1, m identical items of difficulty b: the score equation r = m sigma(theta - b) is solved by
    # theta = b + log(r / (m - r)); all-0 and all-1 users sit on the bounds.
    m, b = 8, 0.7
    x = np.array([[1] * r + [0] * (m - r) for r in range(m + 1)])
    x[2, 5] = -1                                                         # a missing answer: m - 1 items
    theta = np.asarray(abilities.mle_abilities(x, np.full((m, 1), b)))
    r = np.arange(m + 1)
    want = b + np.log(r[1:-1] / (m - r[1:-1]))
    want[1] = b + np.log(2 / 5)
    np.testing.assert_allclose(theta[1:-1], want, atol=1e-5)
    assert theta[0] == -6.0 and theta[-1] == 6.0


def test_mle_matches_fminbound_reference():
    rng = np.random.default_rng(0)
    beta = rng.normal(size=(7, 3))
    x = reference.sample_pcm(rng, rng.normal(size=12) * 2, beta, missing=0.2)
    x[x.max(1) < 0, 0] = 1
    got = np.asarray(abilities.mle_abilities(x, beta))
    for u in range(len(x)):
        obs = x[u] >= 0

        def nll(t):
            return -np.log(reference.pcm_probs(np.array([t]), beta[obs])[0, np.arange(obs.sum()), x[u, obs]]).sum()

        want = optimize.fminbound(nll, -6, 6, xtol=1e-10)
        assert abs(got[u] - want) < 1e-4, (u, got[u], want)


def test_eap_matches_dense_integration():
    rng = np.random.default_rng(1)
    beta = rng.normal(size=(5, 2))
    x = reference.sample_pcm(rng, rng.normal(size=6), beta)
    mean, std = abilities.eap_abilities(x, beta, prior_mean=0.5, prior_std=1.5, n_points=81)
    grid = np.linspace(-12, 12, 24001)
    p = reference.pcm_probs(grid, beta)                                   # [G, m, L+1]
    for u in range(len(x)):
        like = np.prod(p[:, np.arange(5), x[u]], -1) * np.exp(-0.5 * ((grid - 0.5) / 1.5) ** 2)
        mu = np.sum(like * grid) / like.sum()
        sd = np.sqrt(np.sum(like * (grid - mu) ** 2) / like.sum())
        np.testing.assert_allclose([mean[u], std[u]], [mu, sd], atol=2e-4)


def test_rating_log_probs_and_predictions():
    beta = jnp.array([[-0.5, 0.5], [0.0, 1.0]])
    theta = jnp.array([0.2, -1.0])
    lp = abilities.rating_log_probs(theta, beta, jnp.array([0, 1, 1]), jnp.array([1, 0, 1]), jnp.array([2, 0, 1]))
    full = reference.pcm_probs(np.asarray(theta), np.asarray(beta))
    np.testing.assert_allclose(np.exp(lp), [full[0, 1, 2], full[1, 0, 0], full[1, 1, 1]], rtol=1e-5)
    pred = abilities.predicted_scores(theta, beta, jnp.array([0, 1]), jnp.array([0, 1]))
    np.testing.assert_array_equal(pred, [full[0, 0].argmax(), full[1, 1].argmax()])


def _marginal_nll(beta_flat, x, shape, nodes, weights):
    beta = beta_flat.reshape(shape)
    p = reference.pcm_probs(nodes, beta)                                  # [Q, m, L+1]
    obs = x >= 0
    picked = p[:, np.arange(shape[0]), np.where(obs, x, 0)].transpose(1, 0, 2)       # [n, Q, m]
    logp = np.where(obs[:, None, :], np.log(picked), 0.0)
    ll = logp.sum(-1) + np.log(weights)
    top = ll.max(1, keepdims=True)
    return -(top[:, 0] + np.log(np.exp(ll - top).sum(1))).sum()


def test_mmle_maximises_the_marginal_likelihood_like_scipy():
    rng = np.random.default_rng(2)
    beta = rng.normal(size=(4, 2))
    x = reference.sample_pcm(rng, rng.normal(size=400), beta, missing=0.1)
    x[x.max(1) < 0, 0] = 0
    with jax.enable_x64(True):
        fit = baselines.mmle(x, 2, n_points=21, tol=1e-9)
        got = np.asarray(fit.thresholds)
    nodes, weights = abilities.gauss_hermite(21)
    ref = optimize.minimize(_marginal_nll, np.zeros(8), args=(x, (4, 2), nodes, weights), method="BFGS",
                            options={"gtol": 1e-8})
    np.testing.assert_allclose(got, ref.x.reshape(4, 2), atol=1e-4)
    np.testing.assert_allclose(-float(fit.log_likelihood), ref.fun, rtol=1e-8)


def test_jmle_solves_its_likelihood_equations():
    rng = np.random.default_rng(3)
    beta = rng.normal(size=(6, 2))
    x = reference.sample_pcm(rng, rng.normal(size=500), beta)
    with jax.enable_x64(True):
        fit = baselines.jmle(x, 2, tol=1e-10, max_iters=300)
    theta = np.asarray(fit.abilities)
    keep = ~np.isnan(theta)
    p = reference.pcm_probs(theta[keep], np.asarray(fit.thresholds))
    xs = x[keep]
    # item equations: observed count of X >= s equals its expectation; user equations: raw score = E.
    for s in (1, 2):
        np.testing.assert_allclose((xs >= s).sum(0), p[..., s:].sum(-1).sum(0), atol=1e-5)
    np.testing.assert_allclose(xs.sum(1), (p * np.arange(3)).sum(-1).sum(1), atol=1e-5)
    assert fit.iterations < 300
    assert keep.sum() == ((x > 0).any(1) & (x < 2).any(1)).sum()          # extreme patterns dropped


@pytest.mark.parametrize("method", ["mmle", "jmle"])
def test_baselines_recover_parameters(method):
    rng = np.random.default_rng(4)
    beta = rng.normal(size=(10, 3))
    x = reference.sample_pcm(rng, rng.normal(size=3000), beta)
    est = getattr(baselines, method)(x, 3).thresholds
    spec = spectral.spectral_estimate(x, 3)
    err, err_spec = spectral.centred_rmse(est, beta), spectral.centred_rmse(spec, beta)
    # JMLE's thresholds carry the known O(1/m) incidental-parameter bias (10 items); MMLE is consistent.
    # Measured on this sample: MMLE 0.066, JMLE 0.154, spectral 0.077.
    assert err < (0.08 if method == "mmle" else 0.2), err
    assert err_spec < 0.1, err_spec
