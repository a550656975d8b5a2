import numpy as np
import pytest

from jaxml.papers.pcm import data, mixture


def _two_groups(n=1500, m=10, n_levels=2, seed=0, users=0):
    rng = np.random.default_rng(seed)
    b1 = rng.normal(size=(m, n_levels))
    b2 = b1[::-1].copy()                                  # same items, reversed difficulty ordering
    s1 = data.simulate(users + 1, n, m, n_levels, thresholds=b1)
    s2 = data.simulate(users + 2, n, m, n_levels, thresholds=b2)
    return np.concatenate([s1.responses, s2.responses]), np.repeat([0, 1], n), np.stack([b1, b2])


def test_two_component_recovery_and_model_choice():
    x, z, truth = _two_groups()
    fit = mixture.spectral_em(x, 2, seed=0)
    labels = fit.responsibilities.argmax(1)
    accuracy = max((labels == z).mean(), (labels != z).mean())
    # Measured on these seeds: 90.8% assigned, weights 0.503/0.497, per-threshold RMSE 0.084, held-out
    # log-likelihood per user +0.37 for two components over one.
    assert accuracy > 0.88, accuracy
    np.testing.assert_allclose(np.sort(fit.weights), [0.5, 0.5], atol=0.01)
    # RMSE per threshold after the best permutation: Frobenius / sqrt(2 * 10 * 2)
    assert mixture.permutation_error(fit.thresholds, truth) / np.sqrt(truth.size) < 0.1
    # held-out users: two components explain them better than one
    xt, _, _ = _two_groups(seed=0, users=10)                        # same items, fresh users (same shape: no recompile)
    one = mixture.spectral_em(x, 1)
    assert mixture.mixture_log_likelihood(fit, xt).mean() > mixture.mixture_log_likelihood(one, xt).mean() + 0.3


def test_single_component_location_maximises_marginal_likelihood():
    x = data.simulate(3, 3000, 10, 2).responses
    fit = mixture.spectral_em(x, 1)
    assert fit.iterations == 2 and fit.weights.tolist() == [1.0]      # one component: converged at once
    base = mixture.mixture_log_likelihood(fit, x).sum()
    for delta in (-0.03, 0.03):
        moved = fit._replace(thresholds=fit.thresholds + delta)
        assert mixture.mixture_log_likelihood(moved, x).sum() < base


def test_permutation_error_is_permutation_and_shift_invariant():
    truth = np.random.default_rng(0).normal(size=(3, 4, 2))
    assert mixture.permutation_error(truth[[2, 0, 1]] + 0.7, truth) < 1e-12
    assert mixture.permutation_error(truth * 0, truth) > 1


def test_bad_component_count():
    with pytest.raises(ValueError, match="n_components"):
        mixture.spectral_em(np.array([[0, 1], [1, 0]]), 3)


def test_validation_early_stop_returns_the_best_iterate():
    x, _, _ = _two_groups()
    xv, _, _ = _two_groups(seed=0, users=20)
    stopped = mixture.spectral_em(x, 2, seed=0, tol=0.0, max_iters=8, validation=xv)
    # Reference, independent of the early-stopping code: plain EM (same start, same updates) run for
    # k = 1, 2, ... iterations and the validation log-likelihood of each iterate, up to its first drop.
    fits, vals = [], []
    for k in range(1, 9):
        fits.append(mixture.spectral_em(x, 2, seed=0, tol=0.0, max_iters=k))
        vals.append(float(mixture.mixture_log_likelihood(fits[-1], xv).mean()))
        if k > 1 and vals[-1] < vals[-2]:
            break
    assert vals[-1] < vals[-2], vals               # the validation likelihood drops within 8 iterations here
    best = len(vals) - 1                           # the iterate before the drop (4 on these data)
    assert stopped.iterations == best < 8, (stopped.iterations, vals)
    np.testing.assert_allclose(stopped.thresholds, fits[best - 1].thresholds, atol=1e-6)
    np.testing.assert_allclose(stopped.weights, fits[best - 1].weights, atol=1e-6)
