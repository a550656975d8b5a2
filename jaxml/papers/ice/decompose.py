"""The uncertainty decomposition of input clarification ensembling (Hou et al., ICML 2024), in bits.

For an input X with K clarifications C_1..C_K (uniform weights) and answers sampled for each clarified
input, with p_k(y) the answer frequencies under clarification k:

    total = H( (1/K) sum_k p_k )                 predictive entropy of the ensemble
    model = (1/K) sum_k H(p_k)                   expected entropy given a clarification (epistemic)
    data  = total - model = I(Y; C | X)          the mutual information (aleatoric: the input's ambiguity)

H uses log2 on p + 1e-10, renormalised (the reference code's `compute_entropy`); note that this reading
calls the mutual information *aleatoric*, the reverse of the Bayesian-ensemble reading (`bnn=True`
swaps the two, as the code's `--bnn` flag).

Special cases of the reference code (`evaluate_uq_qa.py`), kept in `answer_frequencies`:
- every answer "unknown" across all clarifications (an answer space of size <= 1 that contains
  "unknown"): those clarifications are invalid and skipped; if no clarification is valid, total = 1,
  data = 0, model = 1 (the model is taken not to know);
- an "unknown" answer among other answers adds 1 / (V - 1) to each of the other V - 1 answers' counts.
Frequencies are counts divided by the nominal number of samples per clarification (10), as in the code;
the entropy renormalises each vector, but the ensemble mean weighs a clarification with fewer valid
samples less.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxml.papers.ice.clustering import FuzzyMatcher, answer_labels, normalize_answer

SMOOTHING = 1e-10
UNKNOWN = "unknown"
SAMPLES_PER_CLARIFICATION = 10


class Decomposition(NamedTuple):
    """total, data (aleatoric, the mutual information) and model (epistemic) uncertainty in bits; with a
    batch, each has the batch's shape. `per_clarification` `[..., K]`: H(p_k) (0 where invalid)."""

    total: jax.Array
    data: jax.Array
    model: jax.Array
    per_clarification: jax.Array


def entropy_bits(p, axis: int = -1):
    """The reference code's entropy: -sum q log2 q with q = (p + 1e-10) / sum(p + 1e-10)."""
    q = jnp.asarray(p, jnp.float64 if jax.config.jax_enable_x64 else jnp.float32) + SMOOTHING
    q = q / q.sum(axis=axis, keepdims=True)
    return -(q * jnp.log2(q)).sum(axis=axis)


@functools.partial(jax.jit, static_argnames=("bnn",))
def decompose(frequencies, valid=None, bnn: bool = False) -> Decomposition:
    """The decomposition of `frequencies` `[..., K, V]` (answer frequencies per clarification).

    `valid` `[..., K]` bool marks the clarifications that count (default all); with none valid, total 1,
    data 0, model 1. Batched over any leading axes and jitted."""
    f = jnp.asarray(frequencies, jnp.float32)
    if f.ndim < 2:
        raise ValueError(f"frequencies must be [..., K, V], got shape {f.shape}")
    valid = jnp.ones(f.shape[:-1], bool) if valid is None else jnp.asarray(valid, bool)
    if valid.shape != f.shape[:-1]:
        raise ValueError(f"valid has shape {valid.shape}; expected {f.shape[:-1]}")
    w = valid.astype(jnp.float32)
    count = w.sum(-1)
    per = entropy_bits(f) * w
    mean = (f * w[..., None]).sum(-2) / jnp.maximum(count, 1.0)[..., None]
    total = entropy_bits(mean)
    model = per.sum(-1) / jnp.maximum(count, 1.0)
    none = count == 0
    total, model = jnp.where(none, 1.0, total), jnp.where(none, 1.0, model)
    data = jnp.where(none, 0.0, total - model)
    if bnn:
        data, model = model, data
    return Decomposition(total=total, data=data, model=model, per_clarification=per)


def answer_frequencies(answer_sets: Sequence[Sequence[str]], samples: int = SAMPLES_PER_CLARIFICATION,
                       normalise: bool = True, fallback: str = "first"):
    """(frequencies `[K, V]`, valid `[K]`, labels) from the sampled answers of each clarification.

    Follows the reference code: normalisation, containment labels, fuzzy assignment, the two "unknown"
    rules (module docstring) and counts divided by `samples`."""
    if samples < 1:
        raise ValueError(f"samples must be >= 1, got {samples}")
    sets = [[normalize_answer(a) if normalise else a for a in answers] for answers in answer_sets]
    for k, answers in enumerate(sets):
        if len(answers) > samples:
            raise ValueError(f"clarification {k} has {len(answers)} answers, more than samples={samples}")
    labels = answer_labels(sets)
    if not sets or not labels:
        return np.zeros((len(sets), 1)), np.zeros(len(sets), bool), labels
    match = FuzzyMatcher(labels, fallback)
    for answers in sets:                      # with fallback='new', unmatched answers add labels first
        for a in answers:
            if a != UNKNOWN:
                match(a)
    labels = match.labels
    V = len(labels)
    rows, valid = [], []
    for answers in sets:
        row = np.zeros(V)
        if V <= 1 and UNKNOWN in answers:     # only "unknown" anywhere: an invalid clarification
            rows.append(row)
            valid.append(False)
            continue
        for a in answers:
            if a == UNKNOWN:
                row += 1.0 / (V - 1)
                row[match(UNKNOWN)] -= 1.0 / (V - 1)
            else:
                row[match(a)] += 1.0
        rows.append(row / samples)
        valid.append(True)
    return np.stack(rows), np.asarray(valid), labels


def decompose_answers(answer_sets: Sequence[Sequence[str]], samples: int = SAMPLES_PER_CLARIFICATION,
                      bnn: bool = False, **kw) -> Decomposition:
    """`decompose` of `answer_frequencies(answer_sets)`: one input's decomposition from its answers."""
    frequencies, valid, _ = answer_frequencies(answer_sets, samples, **kw)
    return decompose(frequencies, valid, bnn=bnn)
