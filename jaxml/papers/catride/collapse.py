"""CA-TRIDE's collapseness: how close a batch of triplets is to collapse, with the hardest triplets
weighted most (the official `defenses/pnp.py`, as the anchors describe it).

    c = collapseness(d_ap, d_an, lam=10.0)

For the batch distances d_ap [B] and d_an [B], each is soft-max pooled with weights
w = exp(lam * (d - max d)): d~ = sum(w d) / sum(w), and c = d~_ap - d~_an. A large lam approaches
max(d_ap) - max(d_an); lam = 0 gives mean(d_ap) - mean(d_an). c > 0 means the pooled positive
distance exceeds the pooled negative one: the triplets have collapsed (or been inverted).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp


def softmax_pool(d: jax.Array, lam: float) -> jax.Array:
    """sum(w d) / sum(w) with w = exp(lam (d - max d)) over the last axis."""
    w = jnp.exp(lam * (d - jnp.max(d, axis=-1, keepdims=True)))
    return jnp.sum(w * d, axis=-1) / jnp.sum(w, axis=-1)


def collapseness(d_ap: jax.Array, d_an: jax.Array, lam: float) -> jax.Array:
    """d~_ap - d~_an for batch distances d_ap, d_an [..., B]."""
    return softmax_pool(d_ap, lam) - softmax_pool(d_an, lam)
