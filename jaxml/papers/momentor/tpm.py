"""Momentor's Temporal Perception Module (TPM): a continuous temporal token space.

M temporal tokens `<TEMP-000>` ... `<TEMP-(M-1)>` get two embedding tables, E_in [M, d] (what the
language model reads) and E_out [M, d] (extra rows of its output head). A timestamp t in a video
of duration T sits at the continuous position

    p = clip(t / T, 0, 1) * (M - 1)                                     (official `position_transfer`)

and is written in a prompt as the linear interpolation of its two neighbouring tokens,

    e(p) = (1 - r) E[floor(p)] + r E[ceil(p)],   r = p - floor(p),

and in a target as the soft two-token distribution {floor(p): 1 - r, ceil(p): r} over the
extended vocabulary, trained with cross-entropy. `decode_position` inverts both: the argmax token
and its stronger neighbour, weighted by their probabilities, give p back exactly for a soft target.

Neighbouring token propagation reparametrises each table as W' = W + R W - sg(R W) with
R_ij = 2^-|i-j|: the value is W, the gradient reaching row j is sum_i (I + R)_ij dL/dW'_i, so a
token's update spreads to its neighbours with weights 1/2, 1/4, ... `propagate` implements it with
a custom VJP so that the forward value is W bit for bit (W + RW - RW in floating point is not).

Temporal infusion: frame i of the M uniformly sampled frames enters the LM as
proj(frame_i) + (E_in[i] + E_out[i]) / 2, tying frame i to temporal token i.

Timestamp encodings compared in the experiments (`ENCODINGS`):
  'discrete'      one token per timestamp (round(p)); one-hot targets; decode = argmax.
  'interpolate'   interpolated inputs, soft targets, neighbour-weighted decoding.
  'propagate'     'interpolate' + neighbouring token propagation (Momentor's full TPM).
  'text'          timestamps written as decimal text in seconds (no temporal tokens in the text;
                  the tables still carry the frames' temporal infusion).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

ENCODINGS = ("discrete", "interpolate", "propagate", "text")
TOKEN_ENCODINGS = ("discrete", "interpolate", "propagate")


def check_encoding(encoding: str) -> str:
    if encoding not in ENCODINGS:
        raise ValueError(f"timestamp encoding {encoding!r} is not known; accepted: {', '.join(ENCODINGS)}")
    return encoding


def position(t, duration, num_tokens: int):
    """Continuous token position p = clip(t / duration, 0, 1) * (M - 1); works on numpy or jax arrays."""
    if num_tokens < 2:
        raise ValueError(f"num_tokens={num_tokens}: need at least 2 temporal tokens")
    xp = jnp if isinstance(t, jax.Array) or isinstance(duration, jax.Array) else np
    return xp.clip(xp.asarray(t) / duration, 0.0, 1.0) * (num_tokens - 1)


def seconds(p, duration, num_tokens: int):
    """The inverse of `position`: t = p / (M - 1) * duration."""
    return p / (num_tokens - 1) * duration


def neighbours(p, num_tokens: int):
    """(floor, ceil, r) of positions p (float [...]); floor/ceil int32 in [0, M-1], r in [0, 1)."""
    p = jnp.clip(jnp.asarray(p, jnp.float32), 0.0, num_tokens - 1)
    lo = jnp.floor(p)
    hi = jnp.ceil(p)
    return lo.astype(jnp.int32), hi.astype(jnp.int32), p - lo


def interpolate(table, p):
    """e(p) = (1 - r) E[floor p] + r E[ceil p].  table [M, d], p float [...] -> [..., d]."""
    lo, hi, r = neighbours(p, table.shape[0])
    r = r[..., None].astype(table.dtype)
    return (1 - r) * table[lo] + r * table[hi]


def soft_targets(p, num_tokens: int):
    """The soft two-token target over the M temporal tokens: float [..., M], rows sum to one."""
    lo, hi, r = neighbours(p, num_tokens)
    return jax.nn.one_hot(lo, num_tokens) * (1 - r)[..., None] + jax.nn.one_hot(hi, num_tokens) * r[..., None]


def hard_targets(p, num_tokens: int):
    """The discrete baseline's target: one-hot at round(p).  float [..., M]."""
    idx = jnp.clip(jnp.round(jnp.asarray(p, jnp.float32)), 0, num_tokens - 1).astype(jnp.int32)
    return jax.nn.one_hot(idx, num_tokens)


def decode_position(probs, interpolated: bool = True):
    """A position from a distribution over the temporal tokens.  probs float [..., M] -> [...].

    interpolated=False: the argmax token. True: the argmax token i and its stronger neighbour j,
    p = (q_i i + q_j j) / (q_i + q_j), which returns floor(p) + r exactly for a soft target.
    """
    m = probs.shape[-1]
    i = jnp.argmax(probs, axis=-1)
    if not interpolated:
        return i.astype(jnp.float32)
    take = lambda k: jnp.take_along_axis(probs, jnp.clip(k, 0, m - 1)[..., None], axis=-1)[..., 0]
    left = jnp.where(i > 0, take(i - 1), -1.0)
    right = jnp.where(i < m - 1, take(i + 1), -1.0)
    j = jnp.where(right >= left, i + 1, i - 1)
    j = jnp.clip(j, 0, m - 1)
    qi, qj = take(i), jnp.maximum(take(j), 0.0)
    return (qi * i + qj * j) / jnp.maximum(qi + qj, 1e-30)


def propagation_matrix(num_tokens: int, dtype=jnp.float32):
    """R_ij = 2^-|i-j|, [M, M]."""
    idx = np.arange(num_tokens)
    return jnp.asarray(2.0 ** (-np.abs(idx[:, None] - idx[None, :])), dtype)


@jax.custom_vjp
def propagate(table):
    """Neighbouring token propagation: value `table` unchanged; gradient (I + R)^T g.  table [M, d]."""
    return table


def _propagate_fwd(table):
    return table, table.shape[0]


def _propagate_bwd(m, g):
    return (g + propagation_matrix(m, g.dtype) @ g,)   # R is symmetric


propagate.defvjp(_propagate_fwd, _propagate_bwd)


def propagate_reference(table):
    """The official formula W + R W - sg(R W), for tests (its value differs from W by rounding)."""
    rw = propagation_matrix(table.shape[0], table.dtype) @ table
    return table + rw - jax.lax.stop_gradient(rw)


@functools.partial(jax.jit, static_argnames=("num_tokens",))
def roundtrip(t, duration, num_tokens: int):
    """seconds -> soft target -> decoded seconds (a self-check used by tests and the runbook)."""
    p = position(jnp.asarray(t, jnp.float32), duration, num_tokens)
    return seconds(decode_position(soft_targets(p, num_tokens)), duration, num_tokens)
