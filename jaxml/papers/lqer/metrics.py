"""The numbers LQER's experiments report beyond model outputs, as pure functions.

    paper_order(fp, l2qer, lqer, mxint)      the paper's ordering FP < L2QER <= LQER < MXINT
    relative_gap(ppl, fp)                    ppl / fp - 1 (0.12 = 12% above full precision)
    strictly_decreasing(values)              a rank sweep's perplexities fall at every step
    top_k_energy(singular_values, k)         share of ||M||_F^2 in the top k singular values
    relative_error(w, approx)                ||W - approx||_F / ||W||_F
    bits_per_weight(bits, sizes)             size-weighted average of per-kernel bits per weight

Sentence embeddings of a quantized encoder against the float32 one (the MiniLM experiment):

    mean_cosine(reference, embeddings)       mean cosine between matching rows
    similarity_spearman(reference, emb)      Spearman correlation of the pairwise cosine similarities
    neighbour_agreement(reference, emb, k)   top-1 agreement and recall@k of the cosine nearest neighbours
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import scipy.stats

from jaxml.compress.lqer import bits_per_weight, relative_error  # noqa: F401  (shared; re-exported)


def paper_order(fp: float, l2qer: float, lqer: float, mxint: float) -> bool:
    """FP < L2QER <= LQER < plain MXINT (perplexities at one weight width): the ordering of the
    paper's ablation (OPT-1.3B, W4: 14.63 < 15.02 <= 15.28 < 16.12)."""
    return bool(fp < l2qer <= lqer < mxint)


def relative_gap(ppl: float, fp: float) -> float:
    """How far a perplexity sits above full precision, as a fraction of it: ppl / fp - 1."""
    if not fp > 0:
        raise ValueError(f"relative_gap: the full-precision perplexity must be positive, got {fp}")
    return float(ppl) / float(fp) - 1.0


def strictly_decreasing(values: Sequence[float]) -> bool:
    """Each value below the one before (True for fewer than two values)."""
    v = [float(x) for x in values]
    return all(b < a for a, b in zip(v, v[1:]))


def top_k_energy(singular_values: np.ndarray, k: int) -> float:
    """sum(sigma_1..k ^ 2) / sum(sigma^2): the share of the squared Frobenius norm that the best
    rank-k approximation captures (Eckart-Young). `singular_values` in any order."""
    sv = np.sort(np.abs(np.asarray(singular_values, np.float64)))[::-1]
    if sv.ndim != 1 or not 1 <= k <= len(sv):
        raise ValueError(f"top_k_energy: k={k} must be in [1, {sv.size}] for a 1-D spectrum")
    total = np.sum(sv ** 2)
    if total == 0:
        raise ValueError("top_k_energy: the spectrum is all zero")
    return float(np.sum(sv[:k] ** 2) / total)


def _unit_rows(x: np.ndarray, what: str) -> np.ndarray:
    x = np.asarray(x, np.float64)
    if x.ndim != 2 or not np.all(np.isfinite(x)):
        raise ValueError(f"{what}: expected a finite [n, dim] array, got shape {x.shape}")
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    if np.any(norms == 0):
        raise ValueError(f"{what}: rows {np.flatnonzero(norms[:, 0] == 0)[:5].tolist()} are all zero")
    return x / norms


def _pair(reference: np.ndarray, embeddings: np.ndarray, min_rows: int) -> tuple[np.ndarray, np.ndarray]:
    ref, emb = _unit_rows(reference, "reference"), _unit_rows(embeddings, "embeddings")
    if ref.shape != emb.shape or len(ref) < min_rows:
        raise ValueError(f"reference {ref.shape} and embeddings {emb.shape} must have the same shape with "
                         f">= {min_rows} rows")
    return ref, emb


def mean_cosine(reference: np.ndarray, embeddings: np.ndarray) -> float:
    """Mean over rows i of cos(reference_i, embeddings_i) ([n, dim] each; rows need not be unit norm)."""
    ref, emb = _pair(reference, embeddings, 1)
    return float(np.mean(np.sum(ref * emb, axis=1)))


def similarity_spearman(reference: np.ndarray, embeddings: np.ndarray) -> float:
    """Spearman rank correlation between the two sets' pairwise cosine similarities, over the
    n (n - 1) / 2 pairs i < j (ties get their average rank): 1 when the quantized model orders every
    pair of sentences as the reference does."""
    ref, emb = _pair(reference, embeddings, 3)
    i, j = np.triu_indices(len(ref), k=1)
    a = scipy.stats.rankdata(np.sum(ref[i] * ref[j], axis=1))
    b = scipy.stats.rankdata(np.sum(emb[i] * emb[j], axis=1))
    a, b = a - a.mean(), b - b.mean()
    denominator = np.sqrt(np.sum(a * a) * np.sum(b * b))
    if denominator == 0:
        raise ValueError("similarity_spearman: all pairwise similarities are tied in one of the sets")
    return float(np.sum(a * b) / denominator)


def _neighbours(unit: np.ndarray, k: int) -> np.ndarray:
    """[n, k]: each row's k most cosine-similar other rows, most similar first (ties: lower index)."""
    sim = unit @ unit.T
    np.fill_diagonal(sim, -np.inf)
    return np.argsort(-sim, axis=1, kind="stable")[:, :k]


def neighbour_agreement(reference: np.ndarray, embeddings: np.ndarray, k: int) -> dict[str, float]:
    """How often semantic search with the quantized embeddings finds what the reference finds, with
    every row a query against all the other rows (cosine similarity):

      top1: the share of queries whose nearest neighbour is the reference's nearest neighbour;
      recall_at_k: the mean share of the reference's k nearest neighbours among the quantized k nearest.
    """
    ref, emb = _pair(reference, embeddings, 2)
    if not 1 <= k < len(ref):
        raise ValueError(f"neighbour_agreement: k={k} must be in [1, n - 1 = {len(ref) - 1}]")
    want, got = _neighbours(ref, k), _neighbours(emb, k)
    recall = [len(np.intersect1d(w, g)) / k for w, g in zip(want, got)]
    return {"top1": float(np.mean(want[:, 0] == got[:, 0])), "recall_at_k": float(np.mean(recall))}
