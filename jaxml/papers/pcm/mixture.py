"""Mixtures of PCMs by spectral EM (the paper's Section on mixtures; official `SpectralEM`).

    fit = spectral_em(X, n_components=2, seed=0)
    fit.thresholds   # [C, m, L]; fit.weights [C]; fit.responsibilities [n, C]

* Initialisation: k-means on per-user embeddings of pairwise response differences X_ui - X_uj
  (i < j; missing entries contribute 0; at most the 100 highest-variance items), as the official code.
* E-step: q_uc proportional to pi_c * int P(x_u | theta, beta_c) N(theta; 0, sigma^2) dtheta, by
  Gauss-Hermite quadrature. Deviation from the official code, which plugs in per-component ability
  MLEs and has no mixing weights: here theta is integrated out and pi_c is estimated.
* M-step: the spectral estimator on q_c-weighted counts (`pairwise_counts(weights=q[:, c])`), then
  the component's location delta_c (the spectral estimate fixes only level-1 mean 0) by maximising
  the q_c-weighted marginal likelihood over a grid of shifts, as the official code does.
* Stop when sum_c ||beta_c_new - beta_c||^2 < tol (official: 1e-4) or after max_iters.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxml.papers.pcm.abilities import gauss_hermite, response_log_likelihood
from jaxml.papers.pcm.spectral import check_counts, pairwise_counts, thresholds_from_counts, validate_responses


class MixtureFit(NamedTuple):
    thresholds: np.ndarray        # [C, m, L]
    weights: np.ndarray           # [C]
    responsibilities: np.ndarray  # [n, C]
    log_likelihood: float         # marginal log-likelihood of the training data
    iterations: int


def _embed(x, max_items=100):
    obs = x >= 0
    var = np.where(obs, x, np.nan)
    var = np.nan_to_num(np.nanvar(var, axis=0), nan=0.0)
    items = np.sort(np.argsort(-var, kind="stable")[:max_items])
    xs, os_ = x[:, items].astype(np.float32), obs[:, items]
    i, j = np.triu_indices(len(items), 1)
    return np.where(os_[:, i] & os_[:, j], xs[:, i] - xs[:, j], 0.0)


def kmeans(points, k: int, seed: int = 0, iters: int = 30) -> np.ndarray:
    """Lloyd's k-means with k-means++ seeding; returns labels `[n]`."""
    rng = np.random.default_rng(seed)
    pts = jnp.asarray(points, jnp.float32)
    centres = [pts[rng.integers(len(pts))]]
    for _ in range(1, k):
        d2 = np.asarray(jnp.min(jnp.stack([((pts - c) ** 2).sum(1) for c in centres]), 0), np.float64)
        centres.append(pts[rng.choice(len(pts), p=d2 / d2.sum()) if d2.sum() > 0 else rng.integers(len(pts))])
    centres = jnp.stack(centres)

    @jax.jit
    def step(c):
        d2 = (pts ** 2).sum(1)[:, None] - 2 * pts @ c.T + (c ** 2).sum(1)[None]
        labels = jnp.argmin(d2, 1)
        onehot = jax.nn.one_hot(labels, k, dtype=pts.dtype)
        size = onehot.sum(0)
        new = (onehot.T @ pts) / jnp.maximum(size, 1)[:, None]
        return jnp.where(size[:, None] > 0, new, c), labels

    for _ in range(iters):
        centres, labels = step(centres)
    return np.asarray(labels)


@jax.jit
def _marginal_loglik(x, thresholds, nodes, log_w):
    """log int P(x_u | theta, beta) N(theta) dtheta `[n]` for one component."""
    return jax.nn.logsumexp(response_log_likelihood(x, thresholds, nodes) + log_w, -1)


@jax.jit
def _shift_scores(x, beta, q, nodes, log_w, shifts):
    return jax.lax.map(lambda s: (q * _marginal_loglik(x, beta + s, nodes, log_w)).sum(), shifts)


@jax.jit
def _component_log_likelihoods(x, thresholds, log_pi, nodes, log_w):
    """log pi_c + log int P(x_u | theta, beta_c) N(theta) dtheta, `[n, C]` (thresholds `[C, m, L]`)."""
    return jnp.stack([_marginal_loglik(x, b, nodes, log_w) for b in thresholds], 1) + log_pi


@jax.jit
def _posterior(x, thresholds, log_pi, nodes, log_w):
    """The E-step: responsibilities `[n, C]` and the marginal log-likelihood of the data (one program)."""
    comp = _component_log_likelihoods(x, thresholds, log_pi, nodes, log_w)
    norm = jax.nn.logsumexp(comp, 1, keepdims=True)
    return jnp.exp(comp - norm), norm.sum()


@jax.jit
def _quadrature(nodes, weights):
    return jnp.asarray(nodes, jnp.float32), jnp.log(jnp.asarray(weights, jnp.float32))


@jax.jit
def _shifted(beta, shift):
    return beta + shift


@functools.partial(jax.jit, static_argnames=("sigma", "points"))
def _best_shift(x, beta, q, nodes, log_w, sigma, points=41):
    """The shift delta maximising sum_u q_u log int P(x_u | theta, beta + delta) N(theta) dtheta: a grid
    over +-4 sigma, then a grid 20x finer around its best point."""
    coarse = jnp.linspace(-4 * sigma, 4 * sigma, points)
    best = coarse[jnp.argmax(_shift_scores(x, beta, q, nodes, log_w, coarse))]
    step = coarse[1] - coarse[0]
    fine = best + jnp.linspace(-step, step, points)
    return fine[jnp.argmax(_shift_scores(x, beta, q, nodes, log_w, fine))]


def spectral_em(responses, n_components: int, n_levels: int | None = None, *, seed: int = 0, sigma: float = 1.0,
                max_iters: int = 30, tol: float = 1e-4, lam: float = 0.1, n_points: int = 41,
                init_labels=None, validation=None) -> MixtureFit:
    """Fits a C-component mixture of PCMs (see the module docstring).

    validation: optional `[n_val, m]` responses of other users; as in the official code, EM stops early
    when their mean log-likelihood drops, and the previous iterate is returned.
    """
    x, n_levels = validate_responses(responses, n_levels)
    n, m = x.shape
    if n_components < 1 or n_components > n:
        raise ValueError(f"n_components must be in [1, n_users={n}], got {n_components}")
    nodes, log_w = _quadrature(*gauss_hermite(n_points, 0.0, sigma))
    xj = jnp.asarray(x)
    labels = kmeans(_embed(x), n_components, seed) if init_labels is None else np.asarray(init_labels)
    q = np.asarray(jax.nn.one_hot(labels, n_components), np.float64)
    q = 0.98 * q + 0.02 / n_components                             # soft start: no component is empty
    beta = np.zeros((n_components, m, n_levels))
    ll_total, it, best_val, previous = -np.inf, 0, -np.inf, None
    for it in range(1, max_iters + 1):
        new = np.empty_like(beta)
        for c in range(n_components):
            counts = pairwise_counts(x, n_levels, q[:, c], validate=False)
            check_counts(counts)
            b = thresholds_from_counts(counts, lam=lam, check=False).thresholds
            new[c] = np.asarray(_shifted(b, _best_shift(xj, b, jnp.asarray(q[:, c], jnp.float32), nodes, log_w,
                                                        float(sigma))))
        change = float(((new - beta) ** 2).sum())
        beta = new
        pi = q.mean(0)
        with np.errstate(divide="ignore"):          # an emptied component: log 0 = -inf, as before
            log_pi = np.log(pi)
        q, ll_total = _posterior(xj, jnp.asarray(beta, jnp.float32), jnp.asarray(log_pi, jnp.float32), nodes, log_w)
        q, ll_total = np.asarray(q, np.float64), float(ll_total)
        current = MixtureFit(beta.copy(), q.mean(0), q, ll_total, it)
        if validation is not None:
            val = float(mixture_log_likelihood(current, validation, sigma=sigma, n_points=n_points).mean())
            if val < best_val and previous is not None:
                return previous
            best_val, previous = val, current
        if change < tol:
            break
    return current


def mixture_log_likelihood(fit: MixtureFit, responses, *, sigma: float = 1.0, n_points: int = 41) -> np.ndarray:
    """log sum_c pi_c int P(x_u | theta, beta_c) N(theta; 0, sigma^2) dtheta per user `[n]` (held-out data)."""
    x, _ = validate_responses(responses, fit.thresholds.shape[-1], allow_empty_rows=True)
    nodes, log_w = _quadrature(*gauss_hermite(n_points, 0.0, sigma))
    with np.errstate(divide="ignore"):
        log_pi = np.log(np.asarray(fit.weights, np.float64))
    return np.asarray(_mixture_log_likelihood(jnp.asarray(x), jnp.asarray(fit.thresholds, jnp.float32),
                                              jnp.asarray(log_pi, jnp.float32), nodes, log_w))


@jax.jit
def _mixture_log_likelihood(x, thresholds, log_pi, nodes, log_w):
    return jax.nn.logsumexp(_component_log_likelihoods(x, thresholds, log_pi, nodes, log_w), 1)


def permutation_error(estimate, truth) -> float:
    """min over component permutations of the Frobenius norm of the (grand-mean centred) difference."""
    import itertools

    est, tru = np.asarray(estimate, np.float64), np.asarray(truth, np.float64)
    offset = tru.mean() - est.mean()       # one shift common to all components stays unidentified
    return min(float(np.linalg.norm(est[list(p)] + offset - tru)) for p in itertools.permutations(range(len(tru))))
