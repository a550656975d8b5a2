"""Weight pruning: magnitude, Wanda (Sun et al., 2024) and SparseGPT (Frantar & Alistarh, 2023), unstructured
or semi-structured N:M, on Flax kernels [in, out].

    pattern = SparsityPattern.parse("2:4")                   # keep 2 of every 4 consecutive input weights
    w = magnitude_prune(kernel, pattern)
    w = wanda_prune(kernel, stats.sq_mean, pattern)         # |W_ij| * ||X_i||_2 per output column
    w = sparsegpt_prune(kernel, stats.hessian, pattern)     # OBS updates with H = X^T X / n

Patterns (`SparsityPattern.parse`): 'unstructured' / '50%' / 'unstructured:0.5' (a fraction of the weights set
to zero) and 'N:M' (N of every M consecutive weights along the input axis kept, as NVIDIA's 2:4 sparse
tensor cores and the papers count: for a PyTorch weight [out, in] the groups run along a row). A mask is
`True` where a weight is kept. Ties are broken by position (stable sort: among equal scores the earlier
position is pruned first), so masks meet their pattern exactly: an N:M group keeps exactly N; an unstructured mask prunes exactly floor(sparsity x size) of its
comparison group.

Comparison groups (`group`) for unstructured masks: 'output' (each output column separately: Wanda's
per-output comparison) or 'layer' (the whole kernel: the magnitude baseline of the Wanda and SparseGPT
papers). SparseGPT follows the reference `SparseGPT.fasterprune`: in NumPy float64, dead inputs (H_ii = 0)
get H_ii = 1 and zero weights, `damp x mean(diag H)` on the diagonal, the upper Cholesky factor of H^-1;
columns of W^T (input channels) are processed in blocks of `block_size`; an unstructured block selects its
mask adaptively over the whole block by w^2 / [H^-1]_ii^2 (exactly floor(sparsity x size) per block), an N:M
pattern selects per group of M columns; each pruned weight's error is spread over the later columns.
"""

from __future__ import annotations

import dataclasses
import re

import numpy as np

GROUPS = ("output", "layer")


@dataclasses.dataclass(frozen=True)
class SparsityPattern:
    """Unstructured (`n = m = 0`, `sparsity` the fraction pruned) or N:M (keep `n` of every `m`)."""

    sparsity: float = 0.5
    n: int = 0
    m: int = 0

    def __post_init__(self):
        if self.m:
            if not (isinstance(self.n, int) and isinstance(self.m, int) and 0 < self.n < self.m):
                raise ValueError(f"N:M pattern {self.n}:{self.m}: need integers 0 < N < M")
            object.__setattr__(self, "sparsity", 1 - self.n / self.m)
        elif not 0 <= self.sparsity < 1:
            raise ValueError(f"sparsity={self.sparsity}; accepted 0 <= sparsity < 1")

    @property
    def structured(self) -> bool:
        return bool(self.m)

    def __str__(self) -> str:
        return f"{self.n}:{self.m}" if self.m else f"unstructured {self.sparsity:.0%}"

    @classmethod
    def parse(cls, spec: "str | SparsityPattern") -> "SparsityPattern":
        """'2:4', 'unstructured' (50%), 'unstructured:0.6', '60%'."""
        if isinstance(spec, SparsityPattern):
            return spec
        text = str(spec).strip().lower()
        if m := re.fullmatch(r"(\d+):(\d+)", text):
            return cls(n=int(m.group(1)), m=int(m.group(2)))
        if text == "unstructured":
            return cls(0.5)
        if m := re.fullmatch(r"unstructured:([0-9.]+)", text):
            return cls(float(m.group(1)))
        if m := re.fullmatch(r"([0-9.]+)%", text):
            return cls(float(m.group(1)) / 100)
        raise ValueError(f"sparsity pattern {spec!r}; accepted 'N:M' (e.g. '2:4'), 'unstructured', "
                         f"'unstructured:0.5' or '50%'")


def _kernel(kernel, name: str) -> np.ndarray:
    w = np.asarray(kernel)
    if w.ndim != 2:
        raise ValueError(f"{name}: kernel must be 2-D [in, out], got shape {w.shape}")
    if not np.issubdtype(w.dtype, np.floating):
        raise TypeError(f"{name}: kernel dtype {w.dtype}; accepted floating point")
    if not np.all(np.isfinite(w)):
        raise ValueError(f"{name}: kernel has non-finite values")
    return w


def _check_nm(pattern: SparsityPattern, n_in: int, name: str) -> None:
    if pattern.structured and n_in % pattern.m:
        raise ValueError(f"{name}: {pattern} needs the input size {n_in} to be a multiple of {pattern.m}")


def mask_from_scores(scores, pattern: "str | SparsityPattern", group: str = "output") -> np.ndarray:
    """bool [in, out], True where kept: the lowest scores pruned per `pattern` (N:M along the input axis;
    unstructured per output column or over the whole layer, `group`)."""
    pattern = SparsityPattern.parse(pattern)
    s = _kernel(scores, "mask_from_scores")
    n_in, n_out = s.shape
    if group not in GROUPS:
        raise ValueError(f"group={group!r}; accepted {GROUPS}")
    keep = np.ones(s.shape, bool)
    if pattern.structured:
        _check_nm(pattern, n_in, "mask_from_scores")
        blocks = s.reshape(n_in // pattern.m, pattern.m, n_out)
        order = np.argsort(blocks, axis=1, kind="stable")[:, :pattern.m - pattern.n]     # the lowest m - n
        kb = np.ones(blocks.shape, bool)
        np.put_along_axis(kb, order, False, axis=1)
        return kb.reshape(n_in, n_out)
    if group == "output":
        k = int(n_in * pattern.sparsity)
        order = np.argsort(s, axis=0, kind="stable")[:k]
        np.put_along_axis(keep, order, False, axis=0)
    else:
        k = int(s.size * pattern.sparsity)
        flat = keep.reshape(-1)
        flat[np.argsort(s.reshape(-1), kind="stable")[:k]] = False
    return keep


def magnitude_prune(kernel, pattern: "str | SparsityPattern", group: str = "layer") -> np.ndarray:
    """The kernel with the smallest |W| set to zero (per layer by default; N:M per group)."""
    w = _kernel(kernel, "magnitude_prune")
    return np.where(mask_from_scores(np.abs(w), pattern, group), w, 0).astype(w.dtype)


def wanda_scores(kernel, input_sq_mean) -> np.ndarray:
    """|W_ij| * ||X_i||_2 (up to the constant sqrt(tokens)): `input_sq_mean` [in] is the mean of x_i^2 over
    the calibration tokens (`LayerStats.sq_mean`, or diag(H))."""
    w = _kernel(kernel, "wanda_scores")
    norms = np.asarray(input_sq_mean, np.float64)
    if norms.shape != (w.shape[0],):
        raise ValueError(f"wanda: input_sq_mean shape {norms.shape}; expected [in] = ({w.shape[0]},)")
    if np.any(norms < 0) or not np.all(np.isfinite(norms)):
        raise ValueError("wanda: input_sq_mean must be finite and >= 0 (a mean of squares)")
    return np.abs(w.astype(np.float64)) * np.sqrt(norms)[:, None]


def wanda_prune(kernel, input_sq_mean, pattern: "str | SparsityPattern", group: str = "output") -> np.ndarray:
    """Wanda: prune the lowest |W_ij| * ||X_i||_2, compared per output column (the paper's choice)."""
    w = _kernel(kernel, "wanda_prune")
    return np.where(mask_from_scores(wanda_scores(w, input_sq_mean), pattern, group), w, 0).astype(w.dtype)


def sparsegpt_prune(kernel, hessian, pattern: "str | SparsityPattern", *, damp: float = 0.01,
                    block_size: int = 128) -> np.ndarray:
    """SparseGPT: prune and update the remaining weights to compensate (see the module docstring).

    Args:
      kernel: [in, out]; hessian: H = X^T X / n [in, in] (`calibrate(..., hessian=True)`).
      block_size: input channels per lazy-update block (an N:M pattern needs a multiple of M).
    Returns the pruned kernel [in, out] in the kernel's dtype.
    """
    pattern = SparsityPattern.parse(pattern)
    w0 = _kernel(kernel, "sparsegpt_prune")
    h = np.array(hessian, np.float64)
    n_in = w0.shape[0]
    if h.shape != (n_in, n_in):
        raise ValueError(f"sparsegpt: hessian shape {h.shape}; expected [in, in] = {(n_in, n_in)}")
    if not np.all(np.isfinite(h)) or np.any(np.diag(h) < 0):
        raise ValueError("sparsegpt: hessian must be finite with a non-negative diagonal (X^T X / n)")
    if not damp >= 0:
        raise ValueError(f"sparsegpt: damp={damp}; accepted >= 0")
    if int(block_size) != block_size or block_size < 1 or (pattern.structured and block_size % pattern.m):
        raise ValueError(f"sparsegpt: block_size={block_size}; accepted a positive integer (a multiple of M for N:M)")
    _check_nm(pattern, n_in, "sparsegpt_prune")
    W = w0.astype(np.float64).T.copy()                      # [out, in]: the reference's layout
    dead = np.diag(h) == 0
    h[dead, dead] = 1.0
    W[:, dead] = 0.0
    h[np.diag_indices(n_in)] += damp * np.mean(np.diag(h))
    hinv = np.linalg.cholesky(np.linalg.inv(h)).T           # upper U with H^-1 = U^T U
    for i1 in range(0, n_in, block_size):
        i2 = min(i1 + block_size, n_in)
        W1 = W[:, i1:i2].copy()
        Q1 = np.zeros_like(W1)
        Err1 = np.zeros_like(W1)
        Hinv1 = hinv[i1:i2, i1:i2]
        d = np.diag(Hinv1)
        pruned = np.zeros(W1.shape, bool)
        if not pattern.structured:
            score = (W1 ** 2 / d[None, :] ** 2).reshape(-1)
            k = int(score.size * pattern.sparsity)
            pruned.reshape(-1)[np.argsort(score, kind="stable")[:k]] = True
        for i in range(i2 - i1):
            if pattern.structured and i % pattern.m == 0:
                score = W1[:, i:i + pattern.m] ** 2 / d[i:i + pattern.m][None, :] ** 2
                low = np.argsort(score, axis=1, kind="stable")[:, :pattern.m - pattern.n]
                np.put_along_axis(pruned[:, i:i + pattern.m], low, True, axis=1)
            w = W1[:, i]
            q = np.where(pruned[:, i], 0.0, w)
            Q1[:, i] = q
            err = (w - q) / d[i]
            W1[:, i:] -= np.outer(err, Hinv1[i, i:])
            Err1[:, i] = err
        W[:, i1:i2] = Q1
        W[:, i2:] -= Err1 @ hinv[i1:i2, i2:]
    return W.T.astype(w0.dtype)


def sparsity_of(kernel) -> float:
    """The fraction of exactly-zero weights."""
    w = np.asarray(kernel)
    return float(np.mean(w == 0))


def reconstruction_error(kernel, pruned, hessian) -> float:
    """tr((W - P)^T H (W - P)) = ||X W - X P||_F^2 / n: the layer's output error on the calibration inputs."""
    d = np.asarray(kernel, np.float64) - np.asarray(pruned, np.float64)
    return float(np.einsum("io,ij,jo->", d, np.asarray(hessian, np.float64), d))
