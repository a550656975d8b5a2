"""The spectral estimator of the Partial Credit Model (Nguyen & Zhang, ICML 2024).

Model: item i has thresholds beta_i^1..beta_i^L and a user of ability theta answers k in {0..L} with

    P(X = k | theta) = exp(sum_{s<=k} (theta - beta_i^s)) / sum_k' exp(sum_{s<=k'} (theta - beta_i^s)).

Responses are a `[n_users, n_items]` integer matrix; a missing entry is `MISSING` (-1), girth's
`-99999`, or NaN in a float matrix (`validate_responses` maps all of them to -1).

The estimator reads the data once (`pairwise_counts`, chunked over users so the `[n, m, L+1]`
one-hot array is never built whole) into sufficient statistics of size O(L m^2):

    Y[l-1, i, j] = sum_u w_u 1[X_ui = l] 1[X_uj = l-1]          (l = 1..L)
    V[a, i, b]   = sum_u w_u 1[X_ui = a] #{j : X_uj = b}          (for the level shifts)
    N[i, a]      = sum_u w_u 1[X_ui = a]

then, for every level at once (`thresholds_from_counts`): lambda regularisation, the Markov chain with
degree normalisation, its stationary distribution by power iteration, beta~ = log(pi / d), and the
level-shift identification (level 1 centred at 0). Under the PCM Y_ij / Y_ji -> exp(beta_j - beta_i),
so detailed balance gives pi_i / d_i proportional to exp(beta_i^l) within each level.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

MISSING = -1
GIRTH_MISSING = -99999


class PairwiseCounts(NamedTuple):
    """Sufficient statistics of the spectral estimator (weighted counts).

    Y: [L, m, m], Y[l-1, i, j] = sum_u w_u 1[X_ui = l] 1[X_uj = l-1].
    V: [L+1, m, L+1], V[a, i, b] = sum_u w_u 1[X_ui = a] #{j: X_uj = b} (j = i included).
    N: [m, L+1], N[i, a] = sum_u w_u 1[X_ui = a].
    """

    Y: jax.Array
    V: jax.Array
    N: jax.Array

    @property
    def n_levels(self) -> int:
        return self.Y.shape[0]

    @property
    def n_items(self) -> int:
        return self.Y.shape[1]


def validate_responses(responses, n_levels: int | None = None, *, allow_empty_rows: bool = False,
                       name: str = "responses") -> tuple[np.ndarray, int]:
    """Checks a response matrix and returns `(int8/int16 matrix with -1 for missing, L)`.

    Args:
      responses: `[n_users, n_items]` array of scores in {0..L}; missing entries are -1, -99999 or NaN.
      n_levels: L, the highest score; None infers it as the largest observed score.
      allow_empty_rows: if False (default) a user with no observed response is an error; if True such
        rows are kept (they contribute nothing to the counts).

    Raises:
      TypeError: not a numeric array.
      ValueError: not 2-D, a non-integer score, a score outside {0..L} (or a negative value that is not
        a missing code), an all-missing row (unless allowed), L < 1, or no observed response at all.
    """
    x = np.asarray(responses)
    if x.dtype == object or not (np.issubdtype(x.dtype, np.integer) or np.issubdtype(x.dtype, np.floating)
                                 or x.dtype == bool):
        raise TypeError(f"{name}: expected a numeric [n_users, n_items] array, got dtype {x.dtype}")
    if x.ndim != 2:
        raise ValueError(f"{name}: expected a 2-D [n_users, n_items] array, got shape {x.shape}")
    if x.dtype.kind == "f":
        if np.isinf(x).any():
            u, i = np.argwhere(np.isinf(x))[0]
            raise ValueError(f"{name}: infinite value at (user {u}, item {i}); scores must be integers")
        nan = np.isnan(x)
        filled = np.where(nan, 0.0, x)
        frac = filled != np.round(filled)
        if frac.any():
            u, i = np.argwhere(frac)[0]
            raise ValueError(f"{name}: non-integer score {float(x[u, i])} at (user {u}, item {i}); "
                             f"scores must be integers 0..L (missing: NaN, -1 or -99999)")
        if filled.size and (filled.max() > np.iinfo(np.int16).max or filled.min() < GIRTH_MISSING):
            raise ValueError(f"{name}: scores must be integers 0..L (L < 32767), got values in "
                             f"[{filled.min()}, {filled.max()}]")
        x = np.where(nan, MISSING, filled).astype(np.int32)
    elif x.dtype == bool:
        x = x.astype(np.int8)
    if x.size == 0:
        raise ValueError(f"{name}: no observed response (shape {x.shape})")
    # Fast path: a few whole-array reductions; the slow searches below only run to name a bad entry.
    lo, top = int(x.min()), int(x.max())
    if lo < MISSING:
        girth = x == GIRTH_MISSING
        bad = (x < MISSING) & ~girth
        if bad.any():
            u, i = np.argwhere(bad)[0]
            raise ValueError(f"{name}: negative score {x[u, i]} at (user {u}, item {i}); scores are 0..L and "
                             f"missing entries are -1, -99999 or NaN")
        x = np.where(girth, MISSING, x)
    if top < 0:
        raise ValueError(f"{name}: no observed response")
    if n_levels is None:
        n_levels = top
    if n_levels < 1:
        raise ValueError(f"{name}: need at least two categories (L >= 1), got L = {n_levels}")
    if top > n_levels:
        u, i = np.argwhere(x > n_levels)[0]
        raise ValueError(f"{name}: score {x[u, i]} at (user {u}, item {i}) is above L = {n_levels}")
    if not allow_empty_rows:
        empty = x.max(axis=1) < 0
        if empty.any():
            rows = np.flatnonzero(empty)
            raise ValueError(f"{name}: {len(rows)} user(s) with no observed response (rows {rows[:10].tolist()}"
                             f"{' ...' if len(rows) > 10 else ''}); drop them or pass allow_empty_rows=True")
    dtype = np.int8 if n_levels < 127 else np.int16
    return x.astype(dtype, copy=False), int(n_levels)


@functools.partial(jax.jit, static_argnames=("n_levels", "chunk"))
def _counts(x, w, n_levels: int, chunk: int) -> PairwiseCounts:
    n, m = x.shape
    pad = (-n) % chunk
    x = jnp.pad(x, ((0, pad), (0, 0)), constant_values=MISSING).reshape(-1, chunk, m)
    w = jnp.pad(w, (0, pad)).reshape(-1, chunk)
    levels = jnp.arange(n_levels + 1, dtype=x.dtype)
    f = w.dtype

    def step(acc, batch):
        xb, wb = batch
        # level-major one-hot [L+1, c, m]: Y is one batched matmul over levels contracting users
        onehot = (xb[None] == levels[:, None, None]).astype(f)
        weighted = onehot * wb[None, :, None]
        y = jax.lax.dot_general(weighted[1:], onehot[:-1], (((1,), (1,)), ((0,), (0,))))    # [L, m, m]
        per_level = onehot @ jnp.ones((m,), f)                                            # [L+1, c]
        # V and N in one contraction: [per-level counts; ones] against the weighted one-hot
        vn = jnp.einsum("aui,bu->aib", weighted, jnp.concatenate([per_level, jnp.ones((1, chunk), f)], 0))
        return (acc[0] + y, acc[1] + vn[..., :-1], acc[2] + vn[..., -1].T), None

    zeros = (jnp.zeros((n_levels, m, m), f), jnp.zeros((n_levels + 1, m, n_levels + 1), f),
             jnp.zeros((m, n_levels + 1), f))
    (y, v, cnt), _ = jax.lax.scan(step, zeros, (x, w))
    return PairwiseCounts(y, v, cnt)


def pairwise_counts(responses, n_levels: int | None = None, weights=None, *, chunk: int = 8192,
                    validate: bool = True) -> PairwiseCounts:
    """The spectral sufficient statistics of a response matrix (see `PairwiseCounts`).

    Args:
      responses: `[n_users, n_items]` scores (missing: -1, -99999, NaN).
      n_levels: L (None: the largest observed score).
      weights: optional `[n_users]` non-negative per-user weights (the mixture M-step).
      chunk: users per step of the scan; memory is O(chunk * m * (L+1)), not O(n * m * (L+1)).
      validate: check the matrix (set False only for a matrix that came out of `validate_responses`).
    """
    if validate:
        x, n_levels = validate_responses(responses, n_levels, allow_empty_rows=True)
    else:
        x = jnp.asarray(responses)
        if n_levels is None:
            raise ValueError("pairwise_counts(validate=False) needs n_levels")
    n = x.shape[0]
    return _counts(jnp.asarray(x), _weights(weights, n), int(n_levels), int(min(chunk, max(n, 1))))


def _weights(weights, n):
    if weights is None:
        return jnp.ones((n,), jnp.result_type(float))
    w = np.asarray(weights)
    if w.shape != (n,):
        raise ValueError(f"weights: expected shape ({n},) (one per user), got {w.shape}")
    if not np.all(np.isfinite(w)) or (w < 0).any():
        raise ValueError("weights: must be finite and non-negative")
    return jnp.asarray(w, jnp.result_type(float))


def _regularised_chain(y, lam):
    """[L, m, m] counts -> (transition matrices M [L, m, m], degrees d [L, m]), anchors steps 2-3."""
    m = y.shape[-1]
    eye = jnp.eye(m, dtype=bool)
    y = jnp.where(eye, 0.0, y)
    compared = (y != 0) | (jnp.swapaxes(y, -1, -2) != 0)
    a = jnp.where(compared, y + lam, y)
    d = jnp.maximum(a.sum(-1), 1.0)
    mc = a / d[..., None]
    mc = jnp.where(eye, 1.0 - mc.sum(-1, keepdims=True), mc)
    return mc, d


def _stationary(mc, tol, max_iters):
    """Stationary distributions of L chains at once by power iteration (l2 tolerance per level)."""
    n_levels, m, _ = mc.shape
    pi0 = jnp.full((n_levels, m), 1.0 / m, mc.dtype)

    def cond(state):
        it, _, delta = state
        return (it < max_iters) & (delta >= tol)

    def body(state):
        it, pi, _ = state
        nxt = jnp.einsum("li,lij->lj", pi, mc)
        nxt = nxt / nxt.sum(-1, keepdims=True)
        return it + 1, nxt, jnp.max(jnp.linalg.norm(nxt - pi, axis=-1))

    iters, pi, delta = jax.lax.while_loop(cond, body, (0, pi0, jnp.asarray(jnp.inf, mc.dtype)))
    return pi, iters, delta


class SpectralFit(NamedTuple):
    """thresholds: [m, L] (level-1 mean 0); iterations: power iterations run; residual: last l2 step."""

    thresholds: jax.Array
    iterations: jax.Array
    residual: jax.Array


@functools.partial(jax.jit, static_argnames=("max_iters",))
def _fit(counts: PairwiseCounts, lam, tol, max_iters: int) -> SpectralFit:
    y, v, cnt = counts
    mc, d = _regularised_chain(y, lam)
    pi, iters, delta = _stationary(mc, tol, max_iters)
    tilde = jnp.log(pi / d)                                          # [L, m], each level up to a shift
    centred = tilde - tilde.mean(-1, keepdims=True)
    b1 = centred[0]
    n_levels = y.shape[0]
    # delta_k = log[sum_{i!=j} Y^(1,k-1)_ij e^{b1_i} / sum_{i!=j} Y^(0,k)_ij e^{centred_k j}], k = 2..L,
    # from P(X_i=1, X_j=k-1) / P(X_i=0, X_j=k) = exp(beta_j^k - beta_i^1); i = j only when k-1 = 1.
    k = jnp.arange(2, n_levels + 1)
    same = (k - 1 == 1)[:, None] * cnt[:, 1][None, :]                 # [L-1, m]
    num = (jnp.exp(b1)[None, :] * (v[1][:, k - 1].T - same)).sum(-1)
    den = (jnp.exp(centred[1:]) * v[k][:, :, 0]).sum(-1)
    shifts = jnp.concatenate([jnp.zeros((1,), y.dtype), jnp.log(num / den)])
    return SpectralFit((centred + shifts[:, None]).T, iters, delta)


def check_counts(counts: PairwiseCounts) -> None:
    """Raises ValueError if a level's chain has an isolated item or a level shift is undefined."""
    y = np.asarray(counts.Y)
    y = y * (1 - np.eye(y.shape[-1]))
    degree = y.sum(-1) + y.sum(-2)                                   # [L, m]
    isolated = np.argwhere(degree == 0)
    if len(isolated):
        lvl, item = isolated[0]
        raise ValueError(
            f"item {item} is never compared at level {lvl + 1}: no user scores {lvl + 1} on it together with "
            f"{lvl} on another item or vice versa ({len(isolated)} such (level, item) pairs); its threshold is "
            f"not identified. Drop the item, merge categories, or collect more responses.")
    v, cnt = np.asarray(counts.V), np.asarray(counts.N)
    for k in range(2, counts.n_levels + 1):
        num = v[1, :, k - 1] - (cnt[:, 1] if k == 2 else 0)
        if num.sum() <= 0 or v[k, :, 0].sum() <= 0:
            raise ValueError(f"the shift of level {k} is not identified: no user has both a 1 and a {k - 1}, or "
                             f"both a 0 and a {k}, on two items")


def thresholds_from_counts(counts: PairwiseCounts, *, lam: float = 0.1, tol: float = 1e-6,
                           max_iters: int = 10_000, check: bool = True) -> SpectralFit:
    """Spectral thresholds `[m, L]` from sufficient statistics (anchors steps 2-7).

    Args:
      counts: `pairwise_counts(...)` or exact expected counts.
      lam: the regulariser added to Y_ij wherever Y_ij or Y_ji is non-zero (paper/official code: 0.1).
      tol: l2 tolerance of the power iteration (per level); max_iters: its cap.
      check: raise ValueError on an unidentified threshold instead of returning an arbitrary number.
    """
    y, v, cnt = (np.shape(a) for a in counts)
    if len(y) != 3 or y[1] != y[2] or v != (y[0] + 1, y[1], y[0] + 1) or cnt != (y[1], y[0] + 1):
        raise ValueError(f"counts: expected Y [L, m, m], V [L+1, m, L+1], N [m, L+1]; got {y}, {v}, {cnt}")
    if check:
        check_counts(counts)
    dtype = counts.Y.dtype
    return _fit(counts, jnp.asarray(lam, dtype), jnp.asarray(tol, dtype), int(max_iters))


@functools.partial(jax.jit, static_argnames=("n_levels", "chunk", "max_iters"))
def _estimate(x, w, n_levels, chunk, lam, tol, max_iters):
    counts = _counts(x, w, n_levels, chunk)
    return counts, _fit(counts, lam.astype(w.dtype), tol.astype(w.dtype), max_iters)


def spectral_estimate(responses, n_levels: int | None = None, weights=None, *, lam: float = 0.1,
                      tol: float = 1e-6, max_iters: int = 10_000, chunk: int = 8192) -> jax.Array:
    """Item thresholds `[n_items, L]` of the PCM by the spectral method (level-1 mean is 0).

    Users without any observed response are allowed and contribute nothing (`validate_responses`
    rejects them by default). One compiled program reads the data and solves the chains; the identifiability check
    (`check_counts`) runs on the small count matrices afterwards and raises ValueError if it fails.

    Example:
        beta = spectral_estimate(X)      # X: [n_users, n_items] ints, -1 for missing
    """
    x, n_levels = validate_responses(responses, n_levels, allow_empty_rows=True)
    w = _weights(weights, x.shape[0])
    counts, fit = _estimate(jnp.asarray(x), w, int(n_levels), int(min(chunk, max(x.shape[0], 1))),
                            jnp.asarray(lam), jnp.asarray(tol), int(max_iters))
    check_counts(counts)
    return fit.thresholds


# --- the PCM likelihood, shared by abilities, baselines and evaluation ------------------------------

def category_logits(theta, thresholds):
    """Unnormalised log-probabilities `[..., m, L+1]`: sum_{s<=k}(theta - beta^s) (0 for k = 0).

    theta: `[...]` (broadcast against items as `[..., 1]`); thresholds: `[m, L]`.
    """
    steps = jnp.asarray(theta)[..., None, None] - thresholds                # [..., m, L]
    zero = jnp.zeros(steps.shape[:-1] + (1,), steps.dtype)
    return jnp.concatenate([zero, jnp.cumsum(steps, -1)], -1)


def category_log_probs(theta, thresholds):
    """log P(X = k | theta) `[..., m, L+1]`."""
    z = category_logits(theta, thresholds)
    return z - jax.nn.logsumexp(z, -1, keepdims=True)


def centred_rmse(estimate, truth) -> float:
    """RMSE of thresholds after removing each matrix's grand mean (the PCM's one free shift)."""
    e, t = np.asarray(estimate, np.float64), np.asarray(truth, np.float64)
    return float(np.sqrt(np.mean(((e - e.mean()) - (t - t.mean())) ** 2)))
