"""The spectral estimator on sparse ratings: (user, item, score) triples, never a dense user x item matrix.

    beta = spectral_estimate_sparse(users, items, scores, n_items=m)

The triples are packed per user into a padded `[n_users, R]` layout (R = the most ratings any user has)
and read in chunks of users by a `lax.scan`. Each chunk scatter-adds the weight of every ordered pair of
its users' ratings (cost sum_u R^2 per chunk, not n m^2) into the same sufficient statistics as the dense
path (`spectral.PairwiseCounts`). Those statistics are dense `[L, m, m]`, so this suits up to a few
thousand items; a user with many more ratings than the others inflates R for everyone.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from jaxml.papers.pcm.spectral import PairwiseCounts, _fit, _weights, check_counts


def _validate(users, items, scores, n_items, n_levels, n_users):
    arrays = []
    for name, a in (("users", users), ("items", items), ("scores", scores)):
        a = np.asarray(a)
        if a.ndim != 1:
            raise ValueError(f"{name}: expected a 1-D array of triples, got shape {a.shape}")
        if a.dtype.kind == "f":
            if not np.all(np.isfinite(a)) or np.any(a != np.round(a)):
                bad = np.flatnonzero(~np.isfinite(a) | (a != np.round(a)))[0]
                raise ValueError(f"{name}: non-integer value {a[bad]} at position {bad}")
            a = a.astype(np.int64)
        elif a.dtype.kind not in "iu":
            raise TypeError(f"{name}: expected integers, got dtype {a.dtype}")
        arrays.append(a.astype(np.int64))
    users, items, scores = arrays
    if not len(users) == len(items) == len(scores):
        raise ValueError(f"users, items, scores have lengths {len(users)}, {len(items)}, {len(scores)}")
    if len(users) == 0:
        raise ValueError("no observed response")
    n_levels = int(scores.max()) if n_levels is None else int(n_levels)
    n_users = int(users.max()) + 1 if n_users is None else int(n_users)
    for name, a, hi in (("users", users, n_users), ("items", items, n_items), ("scores", scores, n_levels + 1)):
        bad = np.flatnonzero((a < 0) | (a >= hi))
        if len(bad):
            raise ValueError(f"{name}: value {a[bad[0]]} at position {bad[0]} is outside [0, {hi - 1}]")
    if n_levels < 1:
        raise ValueError(f"need at least two categories (L >= 1), got L = {n_levels}")
    key = users * n_items + items
    order = np.argsort(key, kind="stable")
    dup = np.flatnonzero(np.diff(key[order]) == 0)
    if len(dup):
        p = order[dup[0] + 1]
        raise ValueError(f"user {users[p]} rates item {items[p]} more than once (position {p})")
    return users[order], items[order], scores[order], n_levels, n_users


def pack_ratings(users, items, scores, n_items: int, n_levels: int | None = None, n_users: int | None = None):
    """Validated triples -> (`items [n_users, R]`, `scores [n_users, R]` with -1 padding, L)."""
    users, items, scores, n_levels, n_users = _validate(users, items, scores, n_items, n_levels, n_users)
    per_user = np.bincount(users, minlength=n_users)
    width = max(int(per_user.max()), 1)
    start = np.concatenate([[0], np.cumsum(per_user)[:-1]])
    slot = np.arange(len(users)) - start[users]
    item_slots = np.zeros((n_users, width), np.int32)
    score_slots = np.full((n_users, width), -1, np.int8 if n_levels < 127 else np.int16)
    item_slots[users, slot] = items
    score_slots[users, slot] = scores
    return item_slots, score_slots, n_levels


@functools.partial(jax.jit, static_argnames=("n_items", "n_levels", "chunk"))
def _sparse_counts(item_slots, score_slots, w, n_items, n_levels, chunk):
    n, width = item_slots.shape
    pad = (-n) % chunk
    item_slots = jnp.pad(item_slots, ((0, pad), (0, 0))).reshape(-1, chunk, width)
    score_slots = jnp.pad(score_slots, ((0, pad), (0, 0)), constant_values=-1).reshape(-1, chunk, width)
    w = jnp.pad(w, (0, pad)).reshape(-1, chunk)
    f, m, k1 = w.dtype, n_items, n_levels + 1
    levels = jnp.arange(k1, dtype=score_slots.dtype)

    def step(acc, batch):
        it, sc, wb = batch
        onehot = (sc[..., None] == levels).astype(f)                          # [c, R, L+1]
        per_level = onehot.sum(1)                                             # [c, L+1]
        stats = jnp.concatenate([per_level, jnp.ones((chunk, 1), f)], -1)     # [c, L+2]
        upd = (wb[:, None, None, None] * onehot[..., :, None] * stats[:, None, None, :])  # [c, R, L+1, L+2]
        vn = acc[1].at[it].add(upd)                                           # [m, L+1, L+2]
        # ordered pairs (a, b) of one user's ratings with score_a = score_b + 1 -> Y[score_a - 1, i_a, i_b]
        sa, sb = sc[:, :, None].astype(jnp.int32), sc[:, None, :].astype(jnp.int32)
        pair = (sb >= 0) & (sa == sb + 1)
        flat = ((jnp.maximum(sa, 1) - 1) * m + it[:, :, None]) * m + it[:, None, :]
        y = acc[0].at[jnp.where(pair, flat, 0).ravel()].add(jnp.where(pair, wb[:, None, None], 0.0).ravel())
        return (y, vn), None

    init = (jnp.zeros((n_levels * m * m,), f), jnp.zeros((m, k1, k1 + 1), f))
    (y, vn), _ = jax.lax.scan(step, init, (item_slots, score_slots, w))
    return PairwiseCounts(y.reshape(n_levels, m, m), jnp.transpose(vn[..., :-1], (1, 0, 2)), vn[..., -1])


def pairwise_counts_sparse(users, items, scores, n_items: int, n_levels: int | None = None, weights=None, *,
                           n_users: int | None = None, chunk: int = 1024) -> PairwiseCounts:
    """`spectral.pairwise_counts` from triples: user u gave item i the score s (0..L).

    Raises ValueError on out-of-range or non-integer values, unequal lengths, or a repeated (user, item).
    Users without ratings (ids below n_users that never appear) contribute nothing.
    """
    item_slots, score_slots, n_levels = pack_ratings(users, items, scores, n_items, n_levels, n_users)
    w = _weights(weights, item_slots.shape[0])
    return _sparse_counts(jnp.asarray(item_slots), jnp.asarray(score_slots), w, int(n_items), int(n_levels),
                          int(min(chunk, item_slots.shape[0])))


def spectral_estimate_sparse(users, items, scores, n_items: int, n_levels: int | None = None, weights=None, *,
                             n_users: int | None = None, lam: float = 0.1, tol: float = 1e-6,
                             max_iters: int = 10_000, chunk: int = 1024) -> jax.Array:
    """Spectral thresholds `[n_items, L]` from (user, item, score) triples (see `spectral_estimate`)."""
    counts = pairwise_counts_sparse(users, items, scores, n_items, n_levels, weights, n_users=n_users, chunk=chunk)
    check_counts(counts)
    dtype = counts.Y.dtype
    return _fit(counts, jnp.asarray(lam, dtype), jnp.asarray(tol, dtype), int(max_iters)).thresholds
