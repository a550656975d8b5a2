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

from jaxml.papers.attnlrp.explain import _add_shift, _select_target, default_logits, perturbation_spec, spec_zeros


@functools.lru_cache(maxsize=8)
def _forward(model, point: str, logits_fn):
    def run(params, args, kwargs, target, position, spec, shift):
        out = model.apply({"params": params, "perturbations": _add_shift(spec_zeros(spec), {point: shift})},
                          *args, **kwargs)
        return _select_target(logits_fn(out), target, position)

    return jax.jit(run, static_argnums=5)


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
      chunk: rows (perturbed inputs) per forward pass; every pass has this shape (one compile).
    Returns:
      {"morf": [batch, steps], "lerf": [batch, steps], "fractions": [steps]}.
    """
    return curves_for_methods(model, params, args, values, {"_": scores}, valid, target=target, position=position,
                              point=point, fractions=fractions, model_kwargs=model_kwargs, logits_fn=logits_fn,
                              chunk=chunk)["_"]


def curves_for_methods(model, params, args, values: np.ndarray, scores: dict[str, np.ndarray], valid: np.ndarray, *,
                       target, position=None, point="embeddings", fractions=np.linspace(0, 1, 9),
                       model_kwargs=None, logits_fn=default_logits, chunk=64,
                       replacement=None) -> dict[str, dict[str, np.ndarray]]:
    """`perturbation_curves` for several methods' scores on the same batch, {method: curves}.

    `replacement`: what a removed position's value becomes, broadcastable to `values` (default
    zeros; e.g. `data.mean_embedding`, which no method uses as its baseline).

    Each distinct perturbed input (example, set of zeroed positions) is evaluated once: nothing
    removed and everything removed are shared by MoRF, LeRF and all methods, and so is any other
    step where two orders remove the same positions.
    """
    fractions = np.asarray(fractions, np.float64)
    batch, length = valid.shape
    rows: dict[tuple[int, bytes], int] = {}
    row_example, row_removed = [], []
    plan = {}
    for method, s in scores.items():
        if s.shape != valid.shape:
            raise ValueError(f"{method}: scores {s.shape} must match valid {valid.shape} ([batch, len])")
        plan[method] = {}
        for name, first in (("morf", True), ("lerf", False)):
            index = np.zeros((batch, len(fractions)), int)
            for b in range(batch):
                order = removal_order(s[b], valid[b], first)
                for j, f in enumerate(fractions):
                    removed = np.zeros(length, bool)
                    removed[order[:int(round(f * len(order)))]] = True
                    key = (b, removed.tobytes())
                    if key not in rows:
                        rows[key] = len(row_example)
                        row_example.append(b)
                        row_removed.append(removed)
                    index[b, j] = rows[key]
            plan[method][name] = index
    fill = np.zeros_like(values) if replacement is None else np.broadcast_to(
        np.asarray(replacement, values.dtype), values.shape)
    logits = replaced_logits(model, params, args, values, fill, np.asarray(row_example), np.asarray(row_removed),
                             target=target, position=position, point=point, model_kwargs=model_kwargs,
                             logits_fn=logits_fn, chunk=chunk)
    return {m: {"morf": logits[p["morf"]], "lerf": logits[p["lerf"]], "fractions": fractions} for m, p in plan.items()}


def replaced_logits(model, params, args, values, replacement, examples, removed, *, target, position, point,
                    model_kwargs, logits_fn, chunk) -> np.ndarray:
    """The target logit of example `examples[r]` with the values at the positions `removed[r]` of `point`
    replaced by `replacement` (same shape as `values`), per row r."""
    run = _forward(model, point, logits_fn)
    kwargs = dict(model_kwargs or {})
    args = tuple(np.asarray(a) for a in args)
    kwargs = {k: np.asarray(v) for k, v in kwargs.items()}
    target = np.asarray(target)
    position = None if position is None else np.asarray(position)
    out = []
    for s in range(0, len(examples), chunk):
        idx = examples[s:s + chunk]
        pad = chunk - len(idx)    # a fixed batch shape keeps one compiled program
        take = np.concatenate([idx, np.full(pad, idx[0], int)])
        mask = np.concatenate([removed[s:s + chunk], np.zeros((pad,) + removed.shape[1:], bool)])
        shift = (replacement[take] - values[take]) * mask[..., None]
        p = None if position is None else jnp.asarray(position[take])
        chunk_args, chunk_kwargs = tuple(a[take] for a in args), {k: v[take] for k, v in kwargs.items()}
        spec = perturbation_spec(model, params, chunk_args, chunk_kwargs)
        res = run(params, chunk_args, chunk_kwargs, jnp.asarray(target[take]), p, spec, jnp.asarray(shift, values.dtype))
        out.append(np.asarray(res)[:len(idx)])
    return np.concatenate(out)


def area_between_curves(curves: dict[str, np.ndarray]) -> np.ndarray:
    """Per-example area between the LeRF and MoRF curves (trapezoid rule over the fractions)."""
    f = curves["fractions"]
    diff = curves["lerf"] - curves["morf"]
    return ((diff[:, 1:] + diff[:, :-1]) / 2 * np.diff(f)).sum(-1)


def mean_and_se(x) -> tuple[float, float]:
    """(mean, standard error of the mean = sample standard deviation / sqrt(n)); the SE is NaN for n < 2."""
    x = np.asarray(x, np.float64).ravel()
    if not len(x):
        raise ValueError("mean_and_se of an empty array")
    return float(x.mean()), float(x.std(ddof=1) / np.sqrt(len(x))) if len(x) > 1 else float("nan")


def summarise(abc: dict[str, np.ndarray], reference: str = "attnlrp") -> dict[str, float]:
    """Mean and SE of each method's per-example areas, and of the paired differences to `reference`.

    Returns {"abc_<m>", "abc_<m>_se"} for every method and {"<reference>_minus_<m>",
    "<reference>_minus_<m>_se"} for every other one (the difference on the same examples, so the
    variation between examples cancels).
    """
    out = {}
    for m, v in abc.items():
        out[f"abc_{m}"], out[f"abc_{m}_se"] = mean_and_se(v)
    if reference in abc:
        for m, v in abc.items():
            if m != reference:
                if np.shape(v) != np.shape(abc[reference]):
                    raise ValueError(f"paired difference {reference} - {m}: shapes {np.shape(abc[reference])} "
                                     f"and {np.shape(v)} differ")
                d = np.asarray(abc[reference], np.float64) - np.asarray(v, np.float64)
                out[f"{reference}_minus_{m}"], out[f"{reference}_minus_{m}_se"] = mean_and_se(d)
    return out


def clearly_positive(mean: float, se: float, k: float = 2.0) -> bool | None:
    """Whether a (paired) mean difference exceeds `k` standard errors: True / False, or None when the
    SE is not finite (fewer than two examples: no verdict possible)."""
    if not np.isfinite(se) or not np.isfinite(mean):
        return None
    return bool(mean > k * se)


def curve_areas(curves: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Per-example areas under the MoRF and the LeRF curve (trapezoid rule over the fractions) and
    their difference (LeRF - MoRF, the area between the curves). A faithful method has a small MoRF
    area (the logit falls fast when its most relevant tokens go) and a large LeRF area."""
    f = curves["fractions"]
    area = lambda y: ((y[:, 1:] + y[:, :-1]) / 2 * np.diff(f)).sum(-1)
    morf, lerf = area(curves["morf"]), area(curves["lerf"])
    return {"morf": morf, "lerf": lerf, "abc": lerf - morf}


def paired_bootstrap_ci(a, b, *, level: float = 0.95, resamples: int = 10_000, seed: int = 0
                        ) -> tuple[float, float, float]:
    """(mean of a - b, lower, upper): the percentile bootstrap interval of the mean paired difference
    over examples (the same examples resampled for both methods)."""
    if np.shape(a) != np.shape(b):
        raise ValueError(f"paired_bootstrap_ci: a {np.shape(a)} and b {np.shape(b)} must pair up example by example")
    d = np.asarray(a, np.float64).ravel() - np.asarray(b, np.float64).ravel()
    if d.size < 2:
        raise ValueError(f"paired_bootstrap_ci needs at least 2 paired examples, got {d.size}")
    if not 0 < level < 1:
        raise ValueError(f"level={level}: must be in (0, 1)")
    rng = np.random.default_rng(seed)
    means = np.empty(resamples)
    for s in range(0, resamples, 1000):                   # bounded memory for large n
        k = min(1000, resamples - s)
        means[s:s + k] = d[rng.integers(0, d.size, (k, d.size))].mean(1)
    lo, hi = np.quantile(means, [(1 - level) / 2, 1 - (1 - level) / 2])
    return float(d.mean()), float(lo), float(hi)
