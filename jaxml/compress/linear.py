"""Quantized linear layers and attention as `jaxml.nn.ops.Ops`, so any model built from
`jaxml.nn.layers.Linear` (Llama, ViT) runs quantized with `model.clone(ops=quantized_ops(...))`
and the quantized params from `jaxml.compress` (weights stored already quantized-dequantized).

    Y = Q_x(X) W_q [+ Q_x(Q_x(Q_x(X) A) B)] + bias        (LQER's compute pattern)

`W_q` sits in the params (quantized once, offline); activations are quantized on the fly along
their last (reduction) axis. With `attention=True` the two attention matmuls take quantized
inputs too (q and k blocked along head_dim; the probabilities and v along the keys).
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp

from jaxml.compress.quantizers import NONE, QuantFormat
from jaxml.nn.attention import MASK_VALUE
from jaxml.nn.ops import DEFAULT_OPS, Ops


def quantized_linear(x, kernel, bias=None, lowrank=None, *, act: QuantFormat):
    """LQER's compute pattern `Q(X) W [+ Q(Q(Q(X) A) B)] + bias`, the specification of the kernel.

    Args:
      x: activations [..., in]; quantized along the last axis by `act`.
      kernel: the (already quantized-dequantized) weight [in, out].
      bias: [out] or None.
      lowrank: `(A [in, k], B [k, out])` or None.
      act: the activation format (`jaxml.compress.quantizers.NONE` for no quantization).
    Returns:
      [..., out].
    """
    xq = act(x, axis=-1)
    y = xq @ kernel
    if lowrank is not None:
        a, b = lowrank
        y = y + act(act(xq @ a, axis=-1) @ b, axis=-1)
    return y if bias is None else y + bias


def _quantized_attention(q, k, v, mask=None, *, act: QuantFormat):
    """Grouped-query attention whose two matmuls take `act`-quantized inputs."""
    b, t, h, d = q.shape
    kv_heads = k.shape[2]
    k = jnp.repeat(k, h // kv_heads, axis=2)
    v = jnp.repeat(v, h // kv_heads, axis=2)
    logits = jnp.einsum("bthd,bshd->bhts", act(q, axis=-1), act(k, axis=-1)) * d ** -0.5
    logits = logits.astype(jnp.promote_types(logits.dtype, jnp.float32))
    if mask is not None:
        logits = jnp.where(jnp.broadcast_to(mask, logits.shape), logits, MASK_VALUE)
    probs = jax.nn.softmax(logits, axis=-1).astype(v.dtype)
    return jnp.einsum("bhts,bshd->bthd", act(probs, axis=-1), act(v, axis=1))


@functools.lru_cache(maxsize=None)
def quantized_ops(act: QuantFormat = NONE, attention: bool = True, base: Ops = DEFAULT_OPS) -> Ops:
    """Ops whose linear layers (and, with `attention`, attention matmuls) quantize activations."""
    ops = dataclasses.replace(base, linear=functools.partial(quantized_linear, act=act))
    if attention and act.kind != "none":
        ops = dataclasses.replace(ops, attention=functools.partial(_quantized_attention, act=act))
    return ops
