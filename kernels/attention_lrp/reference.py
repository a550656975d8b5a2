"""The specification of `kernels.attention_lrp`: plain-jnp attention and the AttnLRP gradients.

`attention_reference` is both the spec the Pallas kernel is tested against and the XLA
implementation behind `attention(..., implementation='xla')`. Its numerics follow
`jaxml.nn.attention.dot_product_attention`: logits in float32, masked logits *replaced* by
`MASK_VALUE = -1e30` (so a row whose keys are all masked is the mean of v, finite, and its
gradient is finite), the softmax weights cast to v's dtype before the product with v.

AttnLRP (Achtibat et al., ICML 2024) leaves the forward pass unchanged and, in the efficient
Input x Gradient form (`lxt.efficient`), scales the gradients reaching the attention inputs:
dq x 1/4, dk x 1/4 (two nested bilinear products: q k^T, then A v), dv x 1/2. The softmax
itself needs no rule, because its gradient x input is already the paper's Prop. 3.1.
`lrp_scale_gradients` is that rule as an identity with a custom VJP.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

# Same convention as jaxml.nn.attention.MASK_VALUE: a large negative logit instead of -inf.
MASK_VALUE = -1e30

# (dq, dk, dv) gradient factors of the AttnLRP attention rule.
LRP_GRAD_SCALES = (0.25, 0.25, 0.5)
EXACT_GRAD_SCALES = (1.0, 1.0, 1.0)


def combined_mask(q_len: int, kv_len: int, *, mask: jax.Array | None = None,
                  causal: bool = False, key_valid: jax.Array | None = None) -> jax.Array | None:
    """The AND of the three masks, bool broadcastable to [batch, heads, q_len, kv_len] (None: none).

    Args:
      mask: bool broadcastable to [batch, heads, q_len, kv_len]; True = attend.
      causal: query i sees keys j <= i + (kv_len - q_len) (queries aligned with the end of the
        keys, so a chunk of new queries attends to the whole cached prefix).
      key_valid: bool [batch, kv_len]; False = padding key.
    """
    out = None
    if causal:
        i = jnp.arange(q_len)[:, None]
        j = jnp.arange(kv_len)[None, :]
        out = (j <= i + (kv_len - q_len))[None, None]
    if key_valid is not None:
        kv = jnp.asarray(key_valid, bool)[:, None, None, :]
        out = kv if out is None else out & kv
    if mask is not None:
        m = jnp.asarray(mask, bool)
        m = m.reshape((1,) * (4 - m.ndim) + m.shape)
        out = m if out is None else out & m
    return out


def attention_reference(q: jax.Array, k: jax.Array, v: jax.Array, mask: jax.Array | None = None,
                        causal: bool = False, key_valid: jax.Array | None = None,
                        scale: float | None = None) -> jax.Array:
    """softmax(q k^T * scale, masked) v with grouped-query heads; differentiable by jax.grad.

    Args:
      q: [batch, q_len, heads, head_dim].
      k, v: [batch, kv_len, kv_heads, head_dim]; heads a multiple of kv_heads (query head
        h uses kv head h // (heads // kv_heads)).
      mask: bool broadcastable to [batch, heads, q_len, kv_len]; True = attend.
      causal: query i sees keys j <= i + (kv_len - q_len).
      key_valid: bool [batch, kv_len]; False = padding key.
      scale: default head_dim ** -0.5.
    Returns:
      [batch, q_len, heads, head_dim] in q's dtype.
    """
    b, t, h, d = q.shape
    s, kv_heads = k.shape[1], k.shape[2]
    groups = h // kv_heads
    scale = d ** -0.5 if scale is None else scale
    qg = q.reshape(b, t, kv_heads, groups, d)
    logits = jnp.einsum("btkgd,bskd->bkgts", qg, k, preferred_element_type=jnp.float32) * scale
    full = combined_mask(t, s, mask=mask, causal=causal, key_valid=key_valid)
    if full is not None:
        full = jnp.broadcast_to(full, (b, h, t, s)).reshape(b, kv_heads, groups, t, s)
        logits = jnp.where(full, logits, MASK_VALUE)
    weights = jax.nn.softmax(logits, axis=-1).astype(v.dtype)
    out = jnp.einsum("bkgts,bskd->btkgd", weights, v, preferred_element_type=jnp.float32)
    return out.reshape(b, t, h, d).astype(q.dtype)


@functools.partial(jax.custom_vjp, nondiff_argnums=(3,))
def scale_gradients(q: jax.Array, k: jax.Array, v: jax.Array,
                    grad_scales: tuple[float, float, float]) -> tuple[jax.Array, jax.Array, jax.Array]:
    """Identity on (q, k, v) whose backward multiplies their gradients by `grad_scales`."""
    return q, k, v


def _scale_fwd(q, k, v, grad_scales):
    return (q, k, v), None


def _scale_bwd(grad_scales, _, grads):
    return tuple((g * s).astype(g.dtype) for g, s in zip(grads, grad_scales))


scale_gradients.defvjp(_scale_fwd, _scale_bwd)


def lrp_scale_gradients(q: jax.Array, k: jax.Array, v: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
    """The AttnLRP rule on attention inputs: identity forward, gradients x (1/4, 1/4, 1/2)."""
    return scale_gradients(q, k, v, LRP_GRAD_SCALES)


def attention_lrp_reference(q, k, v, mask=None, causal=False, key_valid=None, scale=None):
    """`attention_reference` whose gradients are the AttnLRP ones (the spec for `lrp=True`)."""
    return attention_reference(*lrp_scale_gradients(q, k, v), mask, causal, key_valid, scale)
