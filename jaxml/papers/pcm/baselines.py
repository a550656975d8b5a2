"""Likelihood baselines for the PCM in JAX, discrimination fixed to 1: joint MLE and marginal MLE.

* `mmle`: EM over a Gauss-Hermite grid for theta ~ N(0, 1) (Bock-Aitkin); the M-step is Newton on each
  item's expected complete-data log-likelihood, which is concave in its thresholds.
* `jmle`: alternates bounded per-user ability MLEs (`abilities.mle_abilities`) and per-item Newton
  steps with the abilities fixed; users with all-minimum or all-maximum answers are dropped, as girth's
  `condition_polytomous_response(trim_ends=True)` does, and abilities are centred every iteration.

Thresholds are kept in `[-BETA_BOUND, BETA_BOUND]` so that a category nobody used gives a finite
(bounded) estimate instead of a divergence.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxml.papers.pcm.abilities import gauss_hermite, mle_abilities
from jaxml.papers.pcm.spectral import MISSING, category_log_probs, validate_responses

BETA_BOUND = 10.0


def _item_newton(nodes, r, beta, damping=1e-6, max_step=1.0):
    """One Newton step per item on sum_{q,k} r[i,q,k] log P(k | nodes_q, beta_i).

    nodes: [Q]; r: [m, Q, L+1] (expected) counts; beta: [m, L]. d log P(k)/d beta^s = P(X>=s) - [k>=s];
    d P(X>=s)/d beta^t = -(P(X>=max(s,t)) - P(X>=s) P(X>=t)).
    """
    p = jnp.exp(category_log_probs(nodes, beta))                          # [Q, m, L+1]
    p = jnp.swapaxes(p, 0, 1)                                             # [m, Q, L+1]
    tail = jnp.flip(jnp.cumsum(jnp.flip(p, -1), -1), -1)[..., 1:]          # P(X >= s), s = 1..L
    r_tail = jnp.flip(jnp.cumsum(jnp.flip(r, -1), -1), -1)[..., 1:]       # counts with k >= s
    total = r.sum(-1)                                                     # [m, Q]
    grad = (total[..., None] * tail - r_tail).sum(1)                      # [m, L]
    n_levels = beta.shape[1]
    idx = jnp.arange(n_levels)
    joint = tail[..., jnp.maximum(idx[:, None], idx[None, :])]            # [m, Q, L, L]
    cov = joint - tail[..., :, None] * tail[..., None, :]
    neg_hess = (total[..., None, None] * cov).sum(1) + damping * jnp.eye(n_levels)
    step = jnp.linalg.solve(neg_hess, grad[..., None])[..., 0]           # ascent: beta + H^-1 grad
    scale = jnp.minimum(1.0, max_step / jnp.maximum(jnp.abs(step).max(-1, keepdims=True), 1e-30))
    return jnp.clip(beta + scale * step, -BETA_BOUND, BETA_BOUND)


def _onehot(x, n_levels, dtype):
    return (x[..., None] == jnp.arange(n_levels + 1, dtype=x.dtype)).astype(dtype)


class MMLEFit(NamedTuple):
    thresholds: jax.Array        # [m, L]
    log_likelihood: jax.Array    # marginal log-likelihood at the estimate
    iterations: jax.Array


@functools.partial(jax.jit, static_argnames=("n_levels", "n_points", "max_iters"))
def _mmle(x, n_levels, n_points, max_iters, tol, prior_mean, prior_std):
    dtype = jnp.result_type(float)
    onehot = _onehot(x, n_levels, dtype)                                  # [n, m, L+1], zero where missing
    nodes, weights = gauss_hermite(n_points)
    nodes = prior_mean + prior_std * jnp.asarray(nodes, dtype)
    log_w = jnp.log(jnp.asarray(weights, dtype))
    m = x.shape[1]
    beta0 = jnp.tile(jnp.linspace(-1.0, 1.0, n_levels, dtype=dtype), (m, 1))

    def e_step(beta):
        logp = category_log_probs(nodes, beta)                            # [Q, m, L+1]
        ll = jnp.einsum("uik,qik->uq", onehot, logp) + log_w
        norm = jax.nn.logsumexp(ll, -1, keepdims=True)
        post = jnp.exp(ll - norm)
        return jnp.einsum("uq,uik->iqk", post, onehot), norm.sum()

    def cond(state):
        it, _, change, _ = state
        return (it < max_iters) & (change > tol)

    def body(state):
        it, beta, _, _ = state
        r, ll = e_step(beta)
        new = _item_newton(nodes, r, beta)
        return it + 1, new, jnp.max(jnp.abs(new - beta)), ll

    it, beta, _, _ = jax.lax.while_loop(cond, body, (0, beta0, jnp.asarray(jnp.inf, dtype), jnp.asarray(0.0, dtype)))
    return MMLEFit(beta, e_step(beta)[1], it)


def mmle(responses, n_levels: int | None = None, *, n_points: int = 41, max_iters: int = 500, tol: float = 1e-6,
         prior_mean: float = 0.0, prior_std: float = 1.0) -> MMLEFit:
    """Marginal MLE of PCM thresholds `[m, L]` with theta ~ N(prior_mean, prior_std^2) (EM + Newton)."""
    x, n_levels = validate_responses(responses, n_levels)
    return _mmle(jnp.asarray(x), int(n_levels), int(n_points), int(max_iters), tol, prior_mean, prior_std)


class JMLEFit(NamedTuple):
    thresholds: jax.Array        # [m, L]
    abilities: jax.Array         # [n] (NaN for dropped extreme users)
    iterations: int


@functools.partial(jax.jit, static_argnames=("n_levels", "newton_steps"))
def _jmle_items(x, theta, beta, n_levels, newton_steps):
    r = jnp.swapaxes(_onehot(x, n_levels, beta.dtype), 0, 1)              # [m, n, L+1]
    for _ in range(newton_steps):
        beta = _item_newton(theta, r, beta)
    return beta


def jmle(responses, n_levels: int | None = None, *, max_iters: int = 100, tol: float = 1e-5,
         newton_steps: int = 2, bounds=(-6.0, 6.0)) -> JMLEFit:
    """Joint MLE of thresholds `[m, L]` and abilities (alternating; extreme users dropped)."""
    x, n_levels = validate_responses(responses, n_levels)
    obs = x >= 0
    lo_all = np.where(obs, x == 0, True).all(1)
    hi_all = np.where(obs, x == n_levels, True).all(1)
    keep = ~(lo_all | hi_all)
    if keep.sum() < 2:
        raise ValueError("jmle: fewer than two users without an all-minimum or all-maximum response pattern")
    # Dropped users become all-missing rows rather than being removed, so that the array shapes (and
    # the compiled programs) do not depend on how many users were trimmed.
    xk = jnp.asarray(np.where(keep[:, None], x, MISSING).astype(x.dtype))
    kept = jnp.asarray(keep)
    dtype = jnp.result_type(float)
    beta = jnp.tile(jnp.linspace(-1.0, 1.0, n_levels, dtype=dtype), (x.shape[1], 1))
    it = 0
    for it in range(1, max_iters + 1):
        theta = mle_abilities(xk, beta, bounds=bounds, validate=False)
        theta = theta - jnp.sum(jnp.where(kept, theta, 0.0)) / kept.sum()
        new = _jmle_items(xk, theta, beta, n_levels, newton_steps)
        change = float(jnp.max(jnp.abs(new - beta)))
        beta = new
        if change < tol:
            break
    theta = np.asarray(mle_abilities(xk, beta, bounds=bounds, validate=False))
    full = np.where(keep, theta, np.nan)
    return JMLEFit(beta, jnp.asarray(full), it)
