"""The swappable operations of the shared models.

A model built from `jaxml.nn` takes an `ops: Ops` attribute and routes the operations that
explanation rules (AttnLRP) or kernels need to change through it. Switching a model into another
mode is `model.clone(ops=...)`: no source is patched and the params do not change.

Fields (each a pure function; the defaults are the plain operations):
  attention(q, k, v, mask) -> out       scaled dot-product attention (see jaxml.nn.attention)
  norm_factor(inv_scale) -> inv_scale   applied to 1/sigma inside RMSNorm and LayerNorm
  activation(fn, x) -> fn(x)            an elementwise nonlinearity (SiLU, GELU, ...)
  gate(gate, up) -> gate * up           the product of two activations (gated MLPs)
  linear(x, kernel, bias[, lowrank=(a, b)]) -> y
                                        dense layers built with `jaxml.nn.layers.Linear`; `lowrank`
                                        is passed only when the params carry a low-rank term
"""

from __future__ import annotations

import dataclasses
from typing import Callable

import jax

from jaxml.nn.attention import dot_product_attention


def _identity(x):
    return x


def _apply(fn, x):
    return fn(x)


def _product(gate, up):
    return gate * up


def plain_linear(x: jax.Array, kernel: jax.Array, bias: jax.Array | None, lowrank=None) -> jax.Array:
    """x [..., in] @ kernel [in, out] (+ bias [out]) (+ (x @ a [in, k]) @ b [k, out])."""
    y = x @ kernel
    if lowrank is not None:
        a, b = lowrank
        y = y + (x @ a) @ b
    return y if bias is None else y + bias


@dataclasses.dataclass(frozen=True)
class Ops:
    attention: Callable[..., jax.Array] = dot_product_attention
    norm_factor: Callable[[jax.Array], jax.Array] = _identity
    activation: Callable[[Callable, jax.Array], jax.Array] = _apply
    gate: Callable[[jax.Array, jax.Array], jax.Array] = _product
    linear: Callable[[jax.Array, jax.Array, jax.Array | None], jax.Array] = plain_linear


DEFAULT_OPS = Ops()
