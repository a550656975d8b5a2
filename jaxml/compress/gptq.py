"""GPTQ: one-shot weight quantization with second-order error compensation (Frantar et al., 2023).

    kernel_q = gptq(kernel, stats.hessian, QuantFormat("int", width=4, group_size=128))

For a Flax kernel W [in, out] and the input second moment H = X^T X / n [in, in] (from
`calibration.calibrate(..., hessian=True)`), GPTQ quantizes the input rows of W one at a time and
spreads each row's rounding error over the rows not yet quantized, so that the output error
||X W - X Q||_F^2 = n tr((W - Q)^T H (W - Q)) stays small (the OBS update, paper eq. 2-3). It is
the reference algorithm (IST-DASLab/gptq `GPTQ.fasterquant`) in NumPy float64:

* dead inputs (H_ii = 0) get H_ii = 1 and their weights are set to 0 before anything else (their
  output rows are the quantized 0: exactly 0 on symmetric grids and on asymmetric grids whose
  range contains 0; they meet only zero inputs either way);
* dampening: `damp * mean(diag(H))` is added to the diagonal;
* act-order: rows are processed in order of decreasing diag(H) and the permutation is undone;
* the upper Cholesky factor U of H^-1 (H^-1 = U^T U) supplies the updates (paper eq. 4-5), and
  updates are applied lazily in blocks of `block_size` rows (paper "lazy batch updates");
* quantization parameters are those of `quantizers.integer` (same formulas, same float32
  arithmetic), per output channel (`group_size=0`) or per group of `group_size` consecutive input
  channels.

Groups. Without act-order the groups' parameters are computed as in the reference: when the
algorithm reaches the first row of a group, from that group's rows as they are then (already
updated by the errors of earlier rows). The block size is rounded down to a multiple of
`group_size` so that a group never straddles two blocks and its rows are fully updated at that
moment (the reference computes them from rows that may still miss the current block's updates).
With act-order (or `static_groups=True`) the groups are *static*: each group of `group_size`
consecutive input channels of the original kernel gets its parameters from the original (dead
inputs zeroed) weights before any update, as the reference's `static_groups=True` option does. We
do not follow the reference's default act-order grouping (groups of consecutive *permuted* rows,
stored with a `g_idx` map), because a `QuantFormat` group is a block of consecutive input channels:
with static groups the result is a kernel that `integer`'s storage layout (one scale, and zero
point, per contiguous group) represents exactly. Per-output-channel parameters (`group_size=0`)
always come from the original weights.

The `error` of `gptq_with_error` is the sum of the OBS losses, one per output channel:
sum_i (w_i - q_i)^2 / U_ii^2, which equals (w - q)^T H_d (w - q) for the dampened H_d exactly (the
quadratic is minimised exactly at every step); the reference reports half of its sum.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import scipy.linalg

from jaxml.compress.quantizers import QuantFormat


@dataclasses.dataclass(frozen=True)
class GPTQResult:
    """`kernel` float32 [in, out]: the dequantized GPTQ kernel (same layout as the input).
    `error` float64 [out]: (w - q)^T H_d (w - q) per output channel, H_d the dampened Hessian with
    dead inputs set to 1 and w the kernel with dead inputs zeroed (sum of the OBS losses)."""

    kernel: np.ndarray
    error: np.ndarray


def _grid(rows: np.ndarray, bits: int, symmetric: bool) -> tuple[np.ndarray, np.ndarray]:
    """The quantization grid of `rows` float32 [g, out] as `integer` computes it: (scale [out],
    zero point [out]) in float32 (zero point 0 when symmetric)."""
    # XLA compiles `integer`'s division by the constant level count as a multiplication by its
    # float32 reciprocal; doing the same keeps GPTQ with H = I bit-identical to `integer`.
    if symmetric:
        inv_levels = np.float32(1.0 / (2 ** (bits - 1) - 1))
        scale = np.max(np.abs(rows), axis=0) * inv_levels
        scale = np.where(scale > 0, scale, np.float32(1.0))
        return scale, np.zeros_like(scale)
    inv_levels = np.float32(1.0 / (2 ** bits - 1))
    lo, hi = np.min(rows, axis=0), np.max(rows, axis=0)
    scale = np.where(hi > lo, (hi - lo) * inv_levels, np.float32(1.0))
    return scale, np.round(-lo / scale)


def _quantize(row: np.ndarray, scale: np.ndarray, zero: np.ndarray, bits: int, symmetric: bool) -> np.ndarray:
    """Round-to-nearest of one input row [out] on the grid (scale, zero) [out], float32 as `integer`."""
    row = row.astype(np.float32)
    if symmetric:
        levels = np.float32(2 ** (bits - 1) - 1)
        return np.clip(np.round(row / scale), -levels, levels) * scale
    levels = np.float32(2 ** bits - 1)
    return (np.clip(np.round(row / scale) + zero, np.float32(0), levels) - zero) * scale


def _validate(kernel, hessian, fmt, damp, block_size) -> tuple[np.ndarray, np.ndarray]:
    if not isinstance(fmt, QuantFormat):
        raise TypeError(f"gptq: fmt must be a QuantFormat, got {type(fmt).__name__}")
    if fmt.kind != "int":
        raise ValueError(f"gptq: fmt.kind={fmt.kind!r}; GPTQ quantizes to integer grids, accepted 'int'")
    if not 2 <= fmt.width <= 8:
        raise ValueError(f"gptq: fmt.width={fmt.width} bits; accepted 2..8")
    w = np.asarray(kernel)
    h = np.asarray(hessian)
    if w.ndim != 2:
        raise ValueError(f"gptq: kernel must be 2-D [in, out], got shape {w.shape}")
    if h.shape != (w.shape[0], w.shape[0]):
        raise ValueError(f"gptq: hessian shape {h.shape} does not match kernel [in, out] = {w.shape}; "
                         f"expected [in, in] = {(w.shape[0], w.shape[0])}")
    for name, a in (("kernel", w), ("hessian", h)):
        if not np.issubdtype(a.dtype, np.floating):
            raise TypeError(f"gptq: {name} dtype {a.dtype}; accepted floating point")
        if not np.all(np.isfinite(a)):
            raise ValueError(f"gptq: {name} has non-finite values")
    if fmt.group_size < 0 or (fmt.group_size and w.shape[0] % fmt.group_size):
        raise ValueError(f"gptq: fmt.group_size={fmt.group_size} must divide in={w.shape[0]} (or be 0)")
    if not np.allclose(h, h.T, rtol=1e-5, atol=1e-8 * max(1.0, float(np.abs(h).max(initial=0.0)))):
        raise ValueError("gptq: hessian is not symmetric; expected X^T X / n")
    if np.any(np.diag(h) < 0):
        raise ValueError("gptq: hessian has negative diagonal entries; expected X^T X / n")
    if not damp >= 0:
        raise ValueError(f"gptq: damp={damp}; accepted >= 0 (a fraction of mean(diag(H)))")
    if int(block_size) != block_size or block_size < 1:
        raise ValueError(f"gptq: block_size={block_size}; accepted a positive integer")
    return w, h


def gptq_with_error(kernel, hessian, fmt: QuantFormat, *, damp: float = 0.01, act_order: bool = True,
                    block_size: int = 128, static_groups: bool | None = None) -> GPTQResult:
    """GPTQ of `kernel` [in, out] with `hessian` [in, in]; see the module docstring.

    Args:
      kernel: float [in, out] (Flax layout; the rows are the input channels).
      hessian: float [in, in], X^T X / n of the layer's inputs (any positive multiple works: GPTQ
        is invariant to the scale of H; `damp` is relative).
      fmt: QuantFormat(kind='int', width=bits, group_size, symmetric).
      damp: fraction of mean(diag(H)) added to the diagonal.
      act_order: process input channels by decreasing diag(H).
      block_size: rows per lazy batch update (does not change the result beyond float rounding).
      static_groups: group parameters from the original weights (default: when `act_order`).

    Returns:
      GPTQResult(kernel float32 [in, out], error float64 [out]).
    """
    w, h = _validate(kernel, hessian, fmt, damp, block_size)
    static = act_order if static_groups is None else bool(static_groups)
    bits, symmetric = fmt.width, fmt.symmetric
    n_in = w.shape[0]
    group = fmt.group_size

    W = w.astype(np.float64)            # a copy
    H = h.astype(np.float64)            # a copy
    dead = np.diag(H) == 0
    H[dead, dead] = 1.0
    W[dead, :] = 0.0

    # Parameters fixed before any update: per output channel, or per static group [n_groups, out].
    original = W.astype(np.float32)
    if group == 0:
        fixed = [_grid(original, bits, symmetric)]
    elif static:
        fixed = [_grid(original[g:g + group], bits, symmetric) for g in range(0, n_in, group)]

    if act_order:
        perm = np.argsort(-np.diag(H), kind="stable")
        W, H = W[perm], H[np.ix_(perm, perm)]
    else:
        perm = np.arange(n_in)

    H[np.diag_indices(n_in)] += damp * np.mean(np.diag(H))
    try:
        chol = scipy.linalg.cho_factor(H, lower=True)
        h_inv = scipy.linalg.cho_solve(chol, np.eye(n_in))
        U = scipy.linalg.cholesky(h_inv, lower=False)      # H^-1 = U^T U
    except np.linalg.LinAlgError as e:
        raise ValueError(f"gptq: the dampened hessian is not positive definite (damp={damp}); "
                         f"increase damp ({e})") from None

    block = int(block_size)
    if group and not static:
        block = max(block // group, 1) * group             # a group never straddles two blocks
    Q = np.zeros_like(W)
    errors = np.zeros_like(W)                               # (w - q) / U_ii, row by row
    scale = zero = None
    for i1 in range(0, n_in, block):
        i2 = min(i1 + block, n_in)
        for i in range(i1, i2):
            if group == 0:
                scale, zero = fixed[0]
            elif static:
                scale, zero = fixed[perm[i] // group]
            elif i % group == 0:
                scale, zero = _grid(W[i:i + group].astype(np.float32), bits, symmetric)
            q = _quantize(W[i], scale, zero, bits, symmetric).astype(np.float64)
            Q[i] = q
            err = (W[i] - q) / U[i, i]
            errors[i] = err
            W[i + 1:i2] -= np.outer(U[i, i + 1:i2], err)    # OBS update within the block (eq. 3)
        W[i2:] -= U[i1:i2, i2:].T @ errors[i1:i2]           # lazy batch update of the later rows

    inverse = np.argsort(perm)
    return GPTQResult(kernel=Q[inverse].astype(np.float32), error=np.sum(errors ** 2, axis=0))


def gptq(kernel, hessian, fmt: QuantFormat, *, damp: float = 0.01, act_order: bool = True,
         block_size: int = 128, static_groups: bool | None = None) -> np.ndarray:
    """GPTQ-quantized `kernel` [in, out] -> dequantized float32 [in, out]; see `gptq_with_error`."""
    return gptq_with_error(kernel, hessian, fmt, damp=damp, act_order=act_order, block_size=block_size,
                           static_groups=static_groups).kernel
