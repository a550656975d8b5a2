"""The perturbation test of faithfulness (the paper's protocol; LXT issue #40).

For one explained logit: order the input positions by relevance, set the input embeddings of the
most relevant (MoRF) or least relevant (LeRF) first to zero, a growing fraction at a time, and
record the logit. A faithful attribution makes the logit fall fast under MoRF and slowly under
LeRF; the score is the area between the two curves over the fraction removed (0..1), in logit
units (higher is better).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from jaxml.papers.attnlrp.explain import _add_shift, _select_target, default_logits


@functools.lru_cache(maxsize=8)
def _forward(model, point: str, logits_fn):
    def run(params, args, kwargs, target, position, shift):
        shapes = jax.eval_shape(lambda: model.apply({"params": params}, *args, mutable=["perturbations"],
                                                    **kwargs)[1]["perturbations"])
        zeros = jax.tree_util.tree_map(lambda s: jnp.zeros(s.shape, s.dtype), shapes)
        out = model.apply({"params": params, "perturbations": _add_shift(zeros, {point: shift})}, *args, **kwargs)
        return _select_target(logits_fn(out), target, position)

    return jax.jit(run)


def removal_order(scores: np.ndarray, valid: np.ndarray, most_relevant_first: bool) -> np.ndarray:
    """Indices of the valid positions sorted by score (descending for MoRF, ascending for LeRF);
    ties are broken by position so the order is deterministic."""
    idx = np.flatnonzero(valid)
    s = scores[idx]
    order = np.lexsort((idx, -s if most_relevant_first else s))
    return idx[order]


def perturbation_curves(model, params, args, values: np.ndarray, scores: np.ndarray, valid: np.ndarray, *,
                        target, position=None, point="embeddings", fractions=np.linspace(0, 1, 9),
                        model_kwargs=None, logits_fn=default_logits, chunk=64) -> dict[str, np.ndarray]:
    """MoRF and LeRF logit curves for a batch.

    Args:
      args: the model inputs for the batch (as in `explain.relevance`).
      values: the activations at `point` [batch, len, features] (zeroed positions get -values).
      scores: relevance per position [batch, len].
      valid: bool [batch, len], positions that may be removed (real tokens up to the target).
      fractions: fractions of the valid positions removed at each step (rounded to whole tokens).
    Returns:
      {"morf": [batch, steps], "lerf": [batch, steps], "fractions": [steps]}.
    """
    fractions = np.asarray(fractions, np.float64)
    batch, length = scores.shape
    run = _forward(model, point, logits_fn)
    kwargs = dict(model_kwargs or {})
    out = {}
    for name, first in (("morf", True), ("lerf", False)):
        rows, shifts, tgts, poss = [], [], [], []
        for b in range(batch):
            order = removal_order(scores[b], valid[b], first)
            for f in fractions:
                k = int(round(f * len(order)))
                removed = np.zeros(length, bool)
                removed[order[:k]] = True
                rows.append(b)
                shifts.append(-values[b] * removed[:, None])
                tgts.append(target[b])
                poss.append(0 if position is None else position[b])
        logits = []
        for s in range(0, len(rows), chunk):
            sl = slice(s, s + chunk)
            idx = np.asarray(rows[sl])
            pad = chunk - len(idx)    # a fixed batch shape keeps one compiled program
            take = np.concatenate([idx, np.full(pad, idx[0], int)])
            batch_args = tuple(np.asarray(a)[take] for a in args)
            batch_kwargs = {k: np.asarray(v)[take] for k, v in kwargs.items()}
            shift = np.concatenate([np.stack(shifts[sl]), np.zeros((pad,) + values.shape[1:], values.dtype)])
            t = np.concatenate([np.asarray(tgts[sl]), np.zeros(pad, int)])
            p = None if position is None else jnp.asarray(np.concatenate([np.asarray(poss[sl]), np.zeros(pad, int)]))
            res = run(params, batch_args, batch_kwargs, jnp.asarray(t), p, jnp.asarray(shift))
            logits.append(np.asarray(res)[:len(idx)])
        out[name] = np.concatenate(logits).reshape(batch, len(fractions))
    out["fractions"] = fractions
    return out


def area_between_curves(curves: dict[str, np.ndarray]) -> np.ndarray:
    """Per-example area between the LeRF and MoRF curves (trapezoid rule over the fractions)."""
    f = curves["fractions"]
    diff = curves["lerf"] - curves["morf"]
    return ((diff[:, 1:] + diff[:, :-1]) / 2 * np.diff(f)).sum(-1)
