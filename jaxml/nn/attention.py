"""Scaled dot-product attention with grouped-query heads and masks, shared by every model.

Models call attention through a module attribute (`attention_fn`, default
`dot_product_attention`), so a kernel (`kernels/`) or an explanation rule (AttnLRP) can replace it
without editing the model.
"""

from __future__ import annotations

from typing import Callable

import jax
import jax.numpy as jnp

AttentionFn = Callable[..., jax.Array]

# Large negative instead of -inf: rows with every key masked stay finite (they are padding).
MASK_VALUE = -1e30


def dot_product_attention(q: jax.Array, k: jax.Array, v: jax.Array, mask: jax.Array | None = None,
                          *, scale: float | None = None) -> jax.Array:
    """softmax(q k^T * scale + mask) v with grouped-query heads.

    Args:
      q: [batch, q_len, heads, head_dim].
      k, v: [batch, kv_len, kv_heads, head_dim]; `heads` must be a multiple of `kv_heads`.
      mask: bool, broadcastable to [batch, heads, q_len, kv_len]; True = attend.
      scale: default 1/sqrt(head_dim).
    Returns:
      [batch, q_len, heads, head_dim] in q's dtype (softmax in float32 or wider).
    """
    b, t, h, d = q.shape
    kv_heads = k.shape[2]
    if k.shape != v.shape or k.shape[0] != b or k.shape[3] != d:
        raise ValueError(f"attention: q {q.shape}, k {k.shape}, v {v.shape} do not fit "
                         "[batch, len, heads, head_dim] with shared batch and head_dim")
    if h % kv_heads:
        raise ValueError(f"attention: heads={h} must be a multiple of kv_heads={kv_heads}")
    scale = d ** -0.5 if scale is None else scale
    groups = h // kv_heads
    qg = q.reshape(b, t, kv_heads, groups, d)
    logits = jnp.einsum("btkgd,bskd->bkgts", qg, k) * scale
    compute = jnp.promote_types(logits.dtype, jnp.float32)
    logits = logits.astype(compute)
    if mask is not None:
        mask = jnp.broadcast_to(mask, (b, h, t, k.shape[1])).reshape(b, kv_heads, groups, t, k.shape[1])
        logits = jnp.where(mask, logits, MASK_VALUE)
    weights = jax.nn.softmax(logits, axis=-1).astype(v.dtype)
    out = jnp.einsum("bkgts,bskd->btkgd", weights, v)
    return out.reshape(b, t, h, d)


def attention_weights(q: jax.Array, k: jax.Array, mask: jax.Array | None = None, *,
                      scale: float | None = None) -> jax.Array:
    """softmax(q k^T * scale + mask): [batch, heads, q_len, kv_len] (kv heads repeated for GQA)."""
    b, t, h, d = q.shape
    kv_heads = k.shape[2]
    scale = d ** -0.5 if scale is None else scale
    k = jnp.repeat(k, h // kv_heads, axis=2)
    logits = jnp.einsum("bthd,bshd->bhts", q, k).astype(jnp.promote_types(q.dtype, jnp.float32)) * scale
    if mask is not None:
        logits = jnp.where(jnp.broadcast_to(mask, logits.shape), logits, MASK_VALUE)
    return jax.nn.softmax(logits, axis=-1)


def causal_mask(q_positions: jax.Array, kv_positions: jax.Array) -> jax.Array:
    """[batch, 1, q_len, kv_len] bool: query at buffer index i sees keys at indices <= i.

    Args:
      q_positions: [batch, q_len] int buffer indices of the queries.
      kv_positions: [batch, kv_len] int buffer indices of the keys.
    """
    return (kv_positions[:, None, None, :] <= q_positions[:, None, :, None])


def padding_mask(key_valid: jax.Array) -> jax.Array:
    """[batch, 1, 1, kv_len] bool from a [batch, kv_len] validity mask (False = padding)."""
    return key_valid.astype(bool)[:, None, None, :]


def prefix_causal_mask(prefix_lengths: jax.Array, length: int) -> jax.Array:
    """[batch, 1, length, length] bool prefix-LM mask (AIM, T5's prefix LM): query q sees key k iff
    k < prefix or k <= q.

    The first `prefix` positions attend to each other bidirectionally; every later position is
    causal. `prefix = 0` (or 1) is the plain causal mask, `prefix = length` full attention.

    Args:
      prefix_lengths: int [batch], each in [0, length].
      length: sequence length.
    """
    prefix_lengths = jnp.asarray(prefix_lengths)
    if prefix_lengths.ndim != 1 or not jnp.issubdtype(prefix_lengths.dtype, jnp.integer):
        raise ValueError(f"prefix_causal_mask: prefix_lengths must be int [batch], got "
                         f"{prefix_lengths.dtype}{tuple(prefix_lengths.shape)}")
    q = jnp.arange(length)[:, None]
    k = jnp.arange(length)[None, :]
    return ((k < prefix_lengths[:, None, None]) | (k <= q))[:, None]
