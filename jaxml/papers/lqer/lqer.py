"""LQER and L2QER: low-rank reconstruction of the weight quantization error (Zhang et al. 2024).

For a kernel W [in, out] (Flax layout; y = x W) and a weight quantizer Q_W:

    W_q = Q_W(W),  E = W - W_q                                   (Eq. 2)
    LQER:   E = U S V^T,          A = Q_A(U_k),         B = Q_B(S_k V_k^T)
    L2QER:  diag(s) E = U S V^T,  A = Q_A(diag(1/s) U_k), B = Q_B(S_k V_k^T)   (Eq. 8-9)

with s the activation-induced scale: per input channel the max over calibration batches of the
mean |x|, clamped at 1e-4 and normalised by sqrt(min(s) max(s)) (the official code). Inference is
Y = Q_x(X) W_q + Q_x(Q_x(Q_x(X) A) B) (see `jaxml.compress.linear`).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from jaxml.compress.quantizers import QuantFormat

MXINT8 = QuantFormat("mxint", 8, 16)


def activation_scale(mean_abs_max: np.ndarray, floor: float = 1e-4) -> np.ndarray:
    """s = clamp(mean_abs_max, floor) / sqrt(min * max): L2QER's diagonal scale [in]."""
    s = np.maximum(np.asarray(mean_abs_max, np.float64), floor)
    return s / np.sqrt(s.min() * s.max())


@dataclasses.dataclass
class LowRank:
    """The quantized low-rank terms of one layer and the spectrum they came from.

    Attributes:
      a: [in, k] (quantized), b: [k, out] (quantized).
      singular_values: all singular values of the decomposed matrix (E or diag(s) E).
    """

    a: np.ndarray
    b: np.ndarray
    singular_values: np.ndarray


def decompose(error: np.ndarray, rank: int, *, scale: np.ndarray | None = None,
              a_format: QuantFormat = MXINT8, b_format: QuantFormat = MXINT8) -> LowRank:
    """Rank-`rank` factors of the quantization error E [in, out] (scaled SVD when `scale` [in] is given).

    A and B are quantized along their reduction axis (axis 0: in for A, k for B), blocks of 16.
    """
    error = np.asarray(error, np.float32)    # float32 SVD: ample for a rank-k error term, 2x faster
    n_in, n_out = error.shape
    if not 0 <= rank <= min(n_in, n_out):
        raise ValueError(f"rank={rank} must be in [0, min(in, out) = {min(n_in, n_out)}]")
    target = error if scale is None else np.asarray(scale, np.float32)[:, None] * error
    if scale is not None and np.asarray(scale).shape != (n_in,):
        raise ValueError(f"scale has shape {np.asarray(scale).shape}, expected ({n_in},)")
    u, sv, vt = np.linalg.svd(target, full_matrices=False)
    a = u[:, :rank] if scale is None else u[:, :rank] / np.asarray(scale, np.float32)[:, None]
    b = sv[:rank, None] * vt[:rank]
    import jax.numpy as jnp  # quantizers are jnp functions; keep numpy at the boundary
    a_q = np.asarray(a_format(jnp.asarray(a, jnp.float32), axis=0)) if rank else a.astype(np.float32)
    b_q = np.asarray(b_format(jnp.asarray(b, jnp.float32), axis=0)) if rank else b.astype(np.float32)
    return LowRank(a=a_q.astype(np.float32), b=b_q.astype(np.float32), singular_values=sv)


def average_bits(shape: tuple[int, int], w_format: QuantFormat, rank: int,
                 a_format: QuantFormat = MXINT8, b_format: QuantFormat = MXINT8) -> float:
    """Storage bits per weight of W_q plus the low-rank factors (shared exponents included)."""
    n_in, n_out = shape
    bits = n_in * n_out * w_format.bits_per_element(shape, 0)
    if rank:
        bits += n_in * rank * a_format.bits_per_element((n_in, rank), 0)
        bits += rank * n_out * b_format.bits_per_element((rank, n_out), 0)
    return bits / (n_in * n_out)
