"""User abilities given item thresholds: bounded 1-D MLE per user (safeguarded Newton) and EAP.

Both are vectorised over users and chunked (`jax.lax.map` with `batch_size`), so the `[n, m, L+1]`
probability table is never built for all users at once.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from jaxml.papers.pcm.spectral import category_log_probs, validate_responses


def _moments(theta, thresholds):
    """E[X | theta] and Var[X | theta] per (user, item): `[c, m]` each."""
    p = jnp.exp(category_log_probs(theta, thresholds))                      # [c, m, L+1]
    k = jnp.arange(p.shape[-1], dtype=p.dtype)
    mean = (p * k).sum(-1)
    return mean, (p * k * k).sum(-1) - mean * mean


def _mle_chunk(x, thresholds, lo, hi, iters):
    obs = x >= 0
    raw = jnp.where(obs, x, 0).sum(-1).astype(thresholds.dtype)
    lo = jnp.full(x.shape[:1], lo, thresholds.dtype)
    hi = jnp.full(x.shape[:1], hi, thresholds.dtype)

    def body(_, state):
        theta, lo, hi = state
        mean, var = _moments(theta, thresholds)
        grad = raw - jnp.where(obs, mean, 0).sum(-1)        # d loglik / d theta: decreasing in theta
        hess = jnp.where(obs, var, 0).sum(-1)
        lo = jnp.where(grad > 0, theta, lo)
        hi = jnp.where(grad > 0, hi, theta)
        step = theta + grad / jnp.maximum(hess, 1e-12)
        inside = (step > lo) & (step < hi)
        return jnp.where(inside, step, 0.5 * (lo + hi)), lo, hi

    theta0 = jnp.clip(jnp.zeros_like(lo), lo, hi)
    theta, lo, hi = jax.lax.fori_loop(0, iters, body, (theta0, lo, hi))
    return theta


@functools.partial(jax.jit, static_argnames=("iters", "batch_size"))
def _mle(x, thresholds, lo, hi, iters, batch_size):
    return jax.lax.map(lambda xb: _mle_chunk(xb[None], thresholds, lo, hi, iters)[0], x, batch_size=batch_size)


def mle_abilities(responses, thresholds, *, bounds=(-6.0, 6.0), iters: int = 40, batch_size: int = 4096,
                  validate: bool = True) -> jax.Array:
    """Per-user maximum-likelihood ability on `bounds` (the official code: fminbound on [-6, 6]).

    The log-likelihood is concave in theta, so a Newton step that leaves the bracket [lo, hi] kept by the
    sign of the score is replaced by bisection; 40 iterations reach machine precision. A user with all
    answers at 0 (at L) gets the lower (upper) bound, as a bounded 1-D search does.

    Args:
      responses: `[n, m]` scores (-1, -99999 or NaN missing). thresholds: `[m, L]`.
    Returns:
      `[n]` abilities.
    """
    thresholds = jnp.asarray(thresholds)
    if validate:
        x, _ = validate_responses(responses, thresholds.shape[1], allow_empty_rows=True)
    else:
        x = responses
    x = jnp.asarray(x)
    if x.shape[1] != thresholds.shape[0]:
        raise ValueError(f"responses have {x.shape[1]} items but thresholds {thresholds.shape[0]}")
    dtype = thresholds.dtype if jnp.issubdtype(thresholds.dtype, jnp.floating) else jnp.float32
    return _mle(x, thresholds.astype(dtype), float(bounds[0]), float(bounds[1]), int(iters),
                int(min(batch_size, x.shape[0])))


def response_log_likelihood(responses, thresholds, nodes, batch_size: int = 4096) -> jax.Array:
    """log P(x_u | theta = nodes_q) `[n, Q]`: the sum over a user's observed items."""
    x = jnp.asarray(responses)
    logp = category_log_probs(jnp.asarray(nodes), jnp.asarray(thresholds))    # [Q, m, L+1]
    levels = jnp.arange(logp.shape[-1], dtype=x.dtype)

    def one(xb):
        onehot = (xb[:, None] == levels).astype(logp.dtype)                      # [m, L+1]
        return jnp.einsum("ik,qik->q", onehot, logp)

    return jax.lax.map(one, x, batch_size=min(batch_size, x.shape[0]))


def gauss_hermite(n_points: int, mean: float = 0.0, std: float = 1.0):
    """Nodes and weights (summing to 1) integrating against N(mean, std^2)."""
    nodes, weights = np.polynomial.hermite_e.hermegauss(n_points)
    return mean + std * nodes, weights / weights.sum()


def eap_abilities(responses, thresholds, *, prior_mean: float = 0.0, prior_std: float = 1.0,
                  n_points: int = 61, validate: bool = True) -> tuple[jax.Array, jax.Array]:
    """Posterior mean and standard deviation `[n]` of theta under a N(prior_mean, prior_std^2) prior,
    by Gauss-Hermite quadrature with `n_points` nodes."""
    thresholds = jnp.asarray(thresholds)
    if validate:
        x, _ = validate_responses(responses, thresholds.shape[1], allow_empty_rows=True)
    else:
        x = responses
    nodes, weights = gauss_hermite(n_points, prior_mean, prior_std)
    nodes = jnp.asarray(nodes, thresholds.dtype)
    ll = response_log_likelihood(jnp.asarray(x), thresholds, nodes) + jnp.log(jnp.asarray(weights, thresholds.dtype))
    post = jax.nn.softmax(ll, axis=-1)
    mean = post @ nodes
    return mean, jnp.sqrt(jnp.maximum(post @ nodes ** 2 - mean ** 2, 0.0))


@jax.jit   # one compiled program per shape (eagerly, each of its ~15 ops is compiled on its own)
def rating_log_probs(theta, thresholds, users, items, scores) -> jax.Array:
    """log P(X_{users, items} = scores) for triples `[T]` (held-out evaluation)."""
    th = jnp.asarray(theta)[jnp.asarray(users)]
    beta = jnp.asarray(thresholds)[jnp.asarray(items)]                        # [T, L]
    steps = th[:, None] - beta
    logits = jnp.concatenate([jnp.zeros_like(th)[:, None], jnp.cumsum(steps, -1)], -1)
    logp = logits - jax.nn.logsumexp(logits, -1, keepdims=True)
    return jnp.take_along_axis(logp, jnp.asarray(scores)[:, None], -1)[:, 0]


@jax.jit
def predicted_scores(theta, thresholds, users, items) -> jax.Array:
    """The most probable score (argmax over categories) for each (user, item) pair."""
    th = jnp.asarray(theta)[jnp.asarray(users)]
    beta = jnp.asarray(thresholds)[jnp.asarray(items)]
    logits = jnp.concatenate([jnp.zeros_like(th)[:, None], jnp.cumsum(th[:, None] - beta, -1)], -1)
    return jnp.argmax(logits, -1)
