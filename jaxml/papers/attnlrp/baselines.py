"""Attribution baselines on the same API as AttnLRP: each returns relevance [batch, len, features]
(or [batch, len] for rollout and random) at an explanation point.

* Gradient x Input: `explain.relevance(..., rules="gradient")`;
* Integrated Gradients (Sundararajan et al. 2017): zero baseline, midpoint Riemann sum;
* SmoothGrad x Input (Smilkov et al. 2017): gradients averaged over Gaussian input noise;
* attention rollout (Abnar & Zuidema 2020): heads averaged, residual added, layers multiplied;
* CP-LRP: `explain.relevance(..., rules="cp_lrp")`;
* random: uniform noise (the floor of the perturbation test).
"""

from __future__ import annotations

import dataclasses
import functools
import math

import jax
import jax.numpy as jnp
import numpy as np

from jaxml.nn.attention import dot_product_attention
from jaxml.papers.attnlrp import explain, faithfulness
from jaxml.papers.attnlrp.rules import resolve_rules


@functools.lru_cache(maxsize=16)
def _path_program(model, point: str, logits_fn, kwarg_names: tuple[str, ...], chunk: int):
    """Jitted `(params, args, kwargs, target, position, spec, x, scales, noises) -> mean gradient`.

    The gradient of the target logit is evaluated at `point` moved from its value `x` to
    `scale * x + noise` for each of the path points, `chunk` of them per step of a `lax.map`:
    Integrated Gradients uses scales on [0, 1] and zero noise, SmoothGrad scale 1 and Gaussian noise.
    """
    inner = explain._program(model, (point,), logits_fn, kwarg_names)

    def run(params, args, kwargs, target, position, spec, x, scales, noises):
        def grad_at(scale, noise):
            shift = (scale - 1.0) * x + noise
            return inner(params, args, kwargs, target, position, spec, {point: shift})[2][point]

        def chunk_sum(c):
            s, n = c
            return jax.vmap(grad_at)(s, n).sum(0)

        steps = scales.shape[0]
        sums = jax.lax.map(chunk_sum, (scales.reshape(steps // chunk, chunk),
                                       noises.reshape((steps // chunk, chunk) + noises.shape[1:])))
        return sums.sum(0) / steps

    return jax.jit(run, static_argnums=5)


def _path_gradients(model, params, args, *, target, position, point, scales, noise_fn, chunk, model_kwargs,
                    logits_fn=explain.default_logits):
    model = model.clone(ops=resolve_rules("gradient"))
    kwargs = dict(model_kwargs or {})
    steps = len(scales)
    chunk = min(chunk, steps)
    if steps % chunk:
        raise ValueError(f"steps={steps} must be a multiple of chunk={chunk}")
    target = jnp.asarray(target, jnp.int32)
    position = None if position is None else jnp.asarray(position, jnp.int32)
    # The path starts from the activation at `point` (and the noise needs its shape and scale): a plain pass.
    _, values, _ = explain.gradients(model, params, args, target=target, position=position, rules="gradient",
                                     points=(point,), model_kwargs=kwargs, logits_fn=logits_fn)
    x = values[point]
    noises = noise_fn(x, steps)
    if chunk == 1:
        # One path point per call of the plain gradient program (the one Gradient x Input compiled):
        # nothing new to compile, the same sum as the vmapped program.
        x, noises = np.asarray(x), np.asarray(noises)
        total = np.zeros(x.shape, np.float32)
        for scale, noise in zip(np.asarray(scales, np.float32), noises):
            total += np.asarray(explain.gradients(model, params, args, target=target, position=position, rules="gradient",
                                                  points=(point,), shift={point: (scale - 1.0) * x + noise},
                                                  model_kwargs=kwargs, logits_fn=logits_fn)[2][point])
        return x * total / steps
    run = _path_program(model, point, logits_fn, tuple(sorted(kwargs)), chunk)
    spec = explain.perturbation_spec(model, params, tuple(args), kwargs)
    mean_grad = run(params, tuple(args), kwargs, target, position, spec, x, jnp.asarray(scales, jnp.float32), noises)
    return np.asarray(x) * np.asarray(mean_grad)


def integrated_gradients(model, params, args, *, target, position=None, point="embeddings", steps=32,
                         chunk=8, model_kwargs=None) -> np.ndarray:
    """x * mean_k grad f(alpha_k x), alpha_k = (k + 1/2) / steps (zero baseline at `point`).

    One jitted program; `chunk` path points are evaluated together (vmapped). `chunk=1` instead
    calls the plain gradient program once per path point (no program of its own to compile: cheaper
    for few steps on a large model). Completeness: the relevance sums to about f(x) - f(0).
    """
    scales = (np.arange(steps) + 0.5) / steps
    zeros = lambda x, n: np.zeros((n,) + x.shape, x.dtype)
    return _path_gradients(model, params, args, target=target, position=position, point=point, scales=scales,
                           noise_fn=zeros, chunk=chunk, model_kwargs=model_kwargs)


def smoothgrad(model, params, args, *, target, position=None, point="embeddings", samples=16, noise=0.1,
               seed=0, chunk=8, model_kwargs=None) -> np.ndarray:
    """x * mean_n grad f(x + eps_n), eps_n ~ N(0, (noise * (max x - min x))^2) per example."""

    def gaussian(x, n):
        axes = tuple(range(1, x.ndim))
        sigma = noise * (x.max(axis=axes, keepdims=True) - x.min(axis=axes, keepdims=True))
        return sigma * jax.random.normal(jax.random.PRNGKey(seed), (n,) + x.shape, x.dtype)

    return _path_gradients(model, params, args, target=target, position=position, point=point,
                           scales=np.ones(samples), noise_fn=gaussian, chunk=chunk, model_kwargs=model_kwargs)


@functools.lru_cache(maxsize=8)
def _weights_program(model):
    def run(params, args, kwargs):
        _, state = model.apply({"params": params}, *args, mutable=["attention_weights"], **kwargs)
        leaves = [v for _, v in sorted(jax.tree_util.tree_leaves_with_path(state["attention_weights"]),
                                       key=lambda kv: _layer_index(kv[0]))]
        return jnp.stack(leaves)   # [layers, batch, heads, len, len]

    return jax.jit(run)


def _layer_index(path) -> int:
    for k in path:
        name = str(getattr(k, "key", ""))
        if name.startswith("layers_"):
            return int(name.split("_")[1])
    return 0


def attention_rollout(model, params, args, *, position, model_kwargs=None) -> np.ndarray:
    """Rollout relevance [batch, len] of each token for the query at `position`.

    Each layer's map is 0.5 * mean-over-heads attention + 0.5 * identity, rows renormalised; the
    maps are multiplied from the first layer to the last. Needs a model that sows its weights into
    the `attention_weights` collection (Llama does).
    """
    w = np.asarray(_weights_program(model)(params, tuple(args), dict(model_kwargs or {})), np.float64)
    a = w.mean(axis=2)                                   # [layers, batch, len, len]
    a = 0.5 * a + 0.5 * np.eye(a.shape[-1])
    a = a / a.sum(-1, keepdims=True)
    rollout = a[0]
    for layer in range(1, a.shape[0]):
        rollout = a[layer] @ rollout
    position = np.asarray(position)
    return np.take_along_axis(rollout, position[:, None, None], axis=1)[:, 0].astype(np.float32)


def random_relevance(shape, seed=0) -> np.ndarray:
    """Uniform [0, 1) noise of `shape`: the random baseline."""
    return np.random.default_rng(seed).random(shape)


# ------------------------------------------------------------------------------------------------ AtMan


def suppressed_key_attention(q, k, v, mask=None, *, factors, scale=None):
    """Attention whose pre-softmax scores for key j are multiplied by `factors[b, j]` (AtMan's
    H_{:, j} <- H_{:, j} (1 - f)). Scaling a score column equals scaling that key, so this is
    `dot_product_attention` with k * factors.  factors: [batch, kv_len]."""
    return dot_product_attention(q, k * factors[:, :, None, None].astype(k.dtype), v, mask, scale=scale)


@functools.lru_cache(maxsize=8)
def _atman_program(model, logits_fn, kwarg_names: tuple[str, ...]):
    def run(params, args, kwargs, target, position, factors):
        ops = dataclasses.replace(model.ops, attention=functools.partial(suppressed_key_attention, factors=factors))
        out = model.clone(ops=ops).apply({"params": params}, *args, **kwargs)
        rows = jnp.arange(factors.shape[0])
        logp = jax.nn.log_softmax(logits_fn(out)[rows, position], -1)
        return -logp[rows, target]          # cross-entropy of the target per row

    return jax.jit(run)


def atman(model, params, args, *, target, position, suppression: float = 0.9, model_kwargs=None,
          logits_fn=explain.default_logits) -> np.ndarray:
    """AtMan (Deb et al., NeurIPS 2023): the relevance of token i is the increase of the target's
    cross-entropy when every layer's and head's attention score to token i is multiplied by
    (1 - suppression). One forward pass per token, batched per example: cost `len` forwards.

    Args:
      args: the model inputs (e.g. `(tokens [batch, len], positions [batch, len])`); model_kwargs
        e.g. `key_valid=`; target, position: int [batch].
    Returns:
      float32 [batch, len] (padding positions get whatever suppressing a masked key does: nothing).
    """
    if not 0.0 <= suppression <= 1.0:
        raise ValueError(f"suppression={suppression}: must be in [0, 1]")
    args = tuple(np.asarray(a) for a in args)
    kwargs = {k: np.asarray(v) for k, v in dict(model_kwargs or {}).items()}
    b, n = args[0].shape[:2]
    run = _atman_program(model, logits_fn, tuple(sorted(kwargs)))
    factors = np.ones((n + 1, n), np.float32)
    factors[np.arange(1, n + 1), np.arange(n)] = 1.0 - suppression     # row 0: nothing suppressed
    target, position = np.asarray(target), np.asarray(position)
    out = np.zeros((b, n), np.float32)
    tile = lambda x, i: jnp.asarray(np.broadcast_to(x[i], (n + 1,) + x.shape[1:]))
    for i in range(b):
        ce = np.asarray(run(params, tuple(tile(a, i) for a in args), {k: tile(v, i) for k, v in kwargs.items()},
                            jnp.full((n + 1,), int(target[i]), jnp.int32),
                            jnp.full((n + 1,), int(position[i]), jnp.int32), jnp.asarray(factors)))
        out[i] = ce[1:] - ce[0]
    return out


# ------------------------------------------------------------------------------------------------ KernelSHAP


def shapley_kernel_weight(m: int, size) -> np.ndarray:
    """The Shapley kernel pi(z) = (M - 1) / (C(M, |z|) |z| (M - |z|)) for coalition sizes 0 < |z| < M."""
    from scipy.special import comb
    size = np.asarray(size)
    return (m - 1) / (comb(m, size) * size * (m - size))


def coalitions(m: int, budget: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(masks bool [S, M], weights [S]) of coalitions other than the empty and full one.

    budget >= 2^M - 2: every coalition with its kernel weight (exact Shapley values). Otherwise
    `budget` coalitions in complementary pairs, sizes drawn with probability proportional to the
    kernel's total weight per size, members uniformly; equal weights (the sampling carries the kernel).
    """
    if m < 2:
        raise ValueError(f"KernelSHAP needs at least 2 features, got {m}")
    if budget < 2:
        raise ValueError(f"budget={budget}: need at least 2 coalitions")
    if budget >= 2 ** m - 2:
        ints = np.arange(1, 2 ** m - 1)
        masks = ((ints[:, None] >> np.arange(m)) & 1).astype(bool)
        return masks, shapley_kernel_weight(m, masks.sum(1))
    rng = np.random.default_rng(seed)
    sizes = np.arange(1, m)
    p = shapley_kernel_weight(m, sizes) * np.array([math.comb(m, int(k)) for k in sizes])
    p = p / p.sum()
    masks = []
    while len(masks) < budget:
        k = int(rng.choice(sizes, p=p))
        z = np.zeros(m, bool)
        z[rng.choice(m, k, replace=False)] = True
        masks.append(z)
        if len(masks) < budget:
            masks.append(~z)
    return np.asarray(masks), np.ones(len(masks))


def kernel_shap_solve(masks, values, f_empty: float, f_full: float, weights) -> np.ndarray:
    """phi [M] minimising sum_s w_s (v(z_s) - f_empty - z_s . phi)^2 subject to sum(phi) = f_full - f_empty
    (the last feature eliminated by the constraint, then weighted least squares)."""
    z = np.asarray(masks, np.float64)
    v = np.asarray(values, np.float64)
    w = np.asarray(weights, np.float64)
    total = f_full - f_empty
    y = v - f_empty - z[:, -1] * total
    x = z[:, :-1] - z[:, -1:]
    sw = np.sqrt(w)[:, None]
    head, *_ = np.linalg.lstsq(x * sw, y * sw[:, 0], rcond=None)
    return np.concatenate([head, [total - head.sum()]])


def kernel_shap(model, params, args, values, *, target, position, budget: int = 256, seed: int = 0,
                baseline=None, features=None, point: str = "embeddings", model_kwargs=None,
                logits_fn=explain.default_logits, chunk: int = 64) -> np.ndarray:
    """KernelSHAP (Lundberg & Lee 2017) over tokens: a coalition keeps its tokens' values at `point`
    and replaces the others by `baseline` (default zeros: the faithfulness test's removal); the
    target logit is the value function. Cost: budget + 2 forward passes per example (fewer when an
    example has so few features that all 2^M - 2 coalitions fit the budget: exact Shapley values).

    Args:
      values: float [batch, len, features], the values at `point` (e.g. `Explanation.values`).
      features: bool [batch, len], the positions that are players (default: all). The others (padding,
        a BOS token the perturbation test never removes) keep their values in every coalition and
        get relevance 0.
    Returns:
      float32 [batch, len].
    """
    values = np.asarray(values)
    b, n = values.shape[:2]
    features = np.ones((b, n), bool) if features is None else np.asarray(features, bool)
    if features.shape != (b, n):
        raise ValueError(f"features {features.shape} must be [batch, len] = {(b, n)}")
    base = np.zeros_like(values) if baseline is None else np.broadcast_to(np.asarray(baseline, values.dtype),
                                                                          values.shape)
    plans, examples, removed = [], [], []
    for i in range(b):                             # every example's coalitions in one batched evaluation
        players = np.flatnonzero(features[i])
        masks, weights = coalitions(len(players), budget, seed)
        kept = np.concatenate([np.zeros((1, len(players)), bool), np.ones((1, len(players)), bool), masks])
        rows = np.zeros((len(kept), n), bool)
        rows[:, players] = ~kept                   # empty, full, then the sampled coalitions
        plans.append((players, masks, weights, sum(len(r) for r in removed)))
        examples.append(np.full(len(kept), i))
        removed.append(rows)
    f = faithfulness.replaced_logits(model, params, args, values, base, np.concatenate(examples),
                                     np.concatenate(removed), target=target, position=position, point=point,
                                     model_kwargs=model_kwargs, logits_fn=logits_fn, chunk=chunk)
    out = np.zeros((b, n), np.float32)
    for i, (players, masks, weights, start) in enumerate(plans):
        v = f[start:start + len(masks) + 2]
        out[i, players] = kernel_shap_solve(masks, v[2:], v[0], v[1], weights)
    return out
