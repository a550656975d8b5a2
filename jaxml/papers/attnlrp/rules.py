"""AttnLRP's propagation rules as modified backward passes (`jax.custom_vjp`).

Relevance is computed as input x gradient of a function whose backward pass is modified (the
"efficient" formulation of LXT; Achtibat et al. 2024, Arras et al. 2025): with relevance R = x * g,

* linear layers and additions: the epsilon rule (Eq. 8) *is* the ordinary gradient (bias absorbs);
* softmax: the ordinary gradient x input equals the paper's Prop. 3.1 rule exactly;
* bilinear matmuls in attention (uniform rule, Prop. 3.3): q and k gradients / 4, v gradient / 2;
* products of activations, e.g. the SwiGLU gate (uniform rule, Prop. 3.2): each gradient / 2;
* elementwise nonlinearities (identity rule, Eq. 9): backward multiplies by f(x)/x;
* LayerNorm/RMSNorm (identity rule, Prop. 3.4): 1/sigma is held constant (stop_gradient);
* ViT linear layers: the generalized gamma rule (zennit's four-term form);
* CP-LRP (Ali et al. 2022), the baseline: no relevance through q, k and the MLP gate.

`attnlrp_ops()`, `cp_lrp_ops()` and `GRADIENT_OPS` are `jaxml.nn.ops.Ops` that switch a model
into a mode with `model.clone(ops=...)`. These ops are for explaining; their backward passes do
not give parameter gradients (those are returned as zeros by the gamma rule).
"""

from __future__ import annotations

import functools
from typing import Callable

import jax
import jax.numpy as jnp

from jaxml.nn.attention import dot_product_attention
from jaxml.nn.ops import DEFAULT_OPS, Ops, plain_linear

# |x| below this uses the derivative at 0 for f(x)/x (the identity rule's safe ratio).
IDENTITY_TAU = 1e-6


@functools.partial(jax.custom_vjp, nondiff_argnums=(1,))
def divide_gradient(x: jax.Array, factor: float) -> jax.Array:
    """Identity forward; the backward divides the cotangent by `factor` (the uniform rule)."""
    return x


def _divide_fwd(x, factor):
    return x, None


def _divide_bwd(factor, _, g):
    return (g / factor,)


divide_gradient.defvjp(_divide_fwd, _divide_bwd)


@functools.partial(jax.custom_vjp, nondiff_argnums=(0,))
def identity_rule(fn: Callable[[jax.Array], jax.Array], x: jax.Array) -> jax.Array:
    """fn(x) forward; backward multiplies the cotangent by fn(x)/x (so relevance passes unchanged).

    Near 0 the ratio is replaced by fn'(0) (its limit for fn(0) = 0), not by adding an epsilon.
    """
    return fn(x)


def _identity_fwd(fn, x):
    y = fn(x)
    return y, (x, y)


def _identity_bwd(fn, residuals, g):
    x, y = residuals
    slope0 = jax.grad(lambda t: fn(t))(jnp.zeros((), x.dtype))
    small = jnp.abs(x) < IDENTITY_TAU
    ratio = jnp.where(small, slope0, y / jnp.where(small, 1.0, x))
    return (ratio * g,)


identity_rule.defvjp(_identity_fwd, _identity_bwd)


def lrp_attention(q, k, v, mask=None, *, attention: Callable = dot_product_attention):
    """Attention with the AttnLRP backward: dq / 4, dk / 4, dv / 2; the forward is unchanged."""
    return attention(divide_gradient(q, 4.0), divide_gradient(k, 4.0), divide_gradient(v, 2.0), mask)


def cp_lrp_attention(q, k, v, mask=None, *, attention: Callable = dot_product_attention):
    """CP-LRP: relevance flows only through the values (q and k are constants)."""
    return attention(jax.lax.stop_gradient(q), jax.lax.stop_gradient(k), v, mask)


def _uniform_gate(gate, up):
    return divide_gradient(gate * up, 2.0)


def _cp_gate(gate, up):
    return jax.lax.stop_gradient(gate) * up


def _identity_activation(fn, x):
    return identity_rule(fn, x)


def gamma_linear(gamma: float) -> Callable:
    """The generalized gamma rule for `x @ kernel + bias` (zennit's `Gamma`), as a linear op.

    Forward: the plain product. Backward: with R = z * g at the output, positive outputs
    redistribute over x+ (w + gamma w+) + x- (w + gamma w-), negative outputs over
    x+ (w + gamma w-) + x- (w + gamma w+), and the input cotangent is R_in / x.
    """
    gamma = float(gamma)

    @jax.custom_vjp
    def linear(x, kernel, bias):
        return plain_linear(x, kernel, bias)

    def fwd(x, kernel, bias):
        return plain_linear(x, kernel, bias), (x, kernel, bias)

    def bwd(res, g):
        x, w, b = res
        wp, wn = w + gamma * jnp.maximum(w, 0), w + gamma * jnp.minimum(w, 0)
        xp, xn = jnp.maximum(x, 0), jnp.minimum(x, 0)
        bp = bn = 0.0
        if b is not None:
            bp, bn = b + gamma * jnp.maximum(b, 0), b + gamma * jnp.minimum(b, 0)
        z = plain_linear(x, w, b)
        z_pos = xp @ wp + xn @ wn + bp
        z_neg = xp @ wn + xn @ wp + bn
        r = z * g
        stab = lambda d: d + jnp.where(d >= 0, 1e-9, -1e-9)
        s_pos = jnp.where(z > 0, r / stab(z_pos), 0.0)
        s_neg = jnp.where(z > 0, 0.0, r / stab(z_neg))
        grad_pos_x = s_pos @ wp.T + s_neg @ wn.T      # weights seen by positive inputs
        grad_neg_x = s_pos @ wn.T + s_neg @ wp.T      # weights seen by negative inputs
        gx = jnp.where(x > 0, grad_pos_x, grad_neg_x)
        return gx, jnp.zeros_like(w), None if b is None else jnp.zeros_like(b)

    linear.defvjp(fwd, bwd)
    return linear


def _stop(x):
    return jax.lax.stop_gradient(x)


@functools.lru_cache(maxsize=None)
def attnlrp_ops(gamma: float | None = None, attention: Callable = dot_product_attention) -> Ops:
    """Ops implementing AttnLRP; `gamma` adds the gamma rule to `Linear` layers (ViT);
    `attention` is the attention implementation the rule wraps (e.g. a kernel)."""
    return Ops(attention=functools.partial(lrp_attention, attention=attention), norm_factor=_stop,
               activation=_identity_activation, gate=_uniform_gate,
               linear=plain_linear if gamma is None else gamma_linear(gamma))


@functools.lru_cache(maxsize=None)
def cp_lrp_ops(gamma: float | None = None, attention: Callable = dot_product_attention) -> Ops:
    """Ops implementing CP-LRP (the conservative-propagation baseline)."""
    return Ops(attention=functools.partial(cp_lrp_attention, attention=attention), norm_factor=_stop,
               activation=_identity_activation, gate=_cp_gate,
               linear=plain_linear if gamma is None else gamma_linear(gamma))


GRADIENT_OPS = DEFAULT_OPS   # plain gradients: Gradient x Input

RULES = {"attnlrp": attnlrp_ops, "cp_lrp": cp_lrp_ops, "gradient": lambda **kw: GRADIENT_OPS}


def resolve_rules(rules: str | Ops, **kwargs) -> Ops:
    """'attnlrp' | 'cp_lrp' | 'gradient' (Gradient x Input) or an Ops instance."""
    if isinstance(rules, Ops):
        return rules
    if rules not in RULES:
        raise ValueError(f"rules={rules!r}; accepted: {sorted(RULES)} or a jaxml.nn.ops.Ops")
    return RULES[rules](**kwargs)
