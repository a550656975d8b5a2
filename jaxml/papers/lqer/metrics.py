"""The numbers LQER's experiments report beyond model outputs, as pure functions.

    paper_order(fp, l2qer, lqer, mxint)      the paper's ordering FP < L2QER <= LQER < MXINT
    relative_gap(ppl, fp)                    ppl / fp - 1 (0.12 = 12% above full precision)
    strictly_decreasing(values)              a rank sweep's perplexities fall at every step
    top_k_energy(singular_values, k)         share of ||M||_F^2 in the top k singular values
    relative_error(w, approx)                ||W - approx||_F / ||W||_F
    bits_per_weight(bits, sizes)             size-weighted average of per-kernel bits per weight
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

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
