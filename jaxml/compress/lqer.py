"""LQER and L2QER: low-rank reconstruction of the weight quantization error (Zhang et al. 2024), and
quantizing every linear layer of a model with them and the baselines (shared: the LQER paper and
AttnLRP's explanations of a compressed model use it).

For a kernel W [in, out] (Flax layout; y = x W) and a weight quantizer Q_W:

    W_q = Q_W(W),  E = W - W_q                                   (Eq. 2)
    LQER:   E = U S V^T,          A = Q_A(U_k),         B = Q_B(S_k V_k^T)
    L2QER:  diag(s) E = U S V^T,  A = Q_A(diag(1/s) U_k), B = Q_B(S_k V_k^T)   (Eq. 8-9)

with s the activation-induced scale: per input channel the max over calibration batches of the
mean |x|, clamped at 1e-4 and normalised by sqrt(min(s) max(s)) (the official code). Inference is
Y = Q_x(X) W_q + Q_x(Q_x(Q_x(X) A) B) (see `jaxml.compress.linear`).

The top singular triplets come from the top eigenpairs of the float64 Gram matrix of the smaller
side (`top_singular`): 6x faster than a float32 SVD of a 576 x 1536 kernel on a CPU core, and
closer to a float64 SVD (the rank-64 product U_k S_k V_k^T agrees with LAPACK's float64 SVD to
2e-14 relative on SmolLM2's errors, where a float32 SVD is off by 3e-7).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence

import jax.numpy as jnp
import numpy as np
import scipy.linalg

from jaxml import progress
from jaxml.compress import calibration
from jaxml.compress.blas import single_threaded_blas
from jaxml.compress.model import int_format, quantize_kernel
from jaxml.compress.quantizers import NONE, QuantFormat, quantize_array

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
      singular_values: the top k singular values of the decomposed matrix (E or diag(s) E), descending.
    """

    a: np.ndarray
    b: np.ndarray
    singular_values: np.ndarray


def top_singular(matrix: np.ndarray, rank: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`(U_k [m, k], S_k V_k^T [k, n], the top k singular values, descending)` of `matrix`.

    From the top k eigenpairs of the float64 Gram matrix of the smaller side (M M^T when m <= n,
    else M^T M with U_k = M V_k / S_k; LAPACK's MRRR `syevr` for a subset of eigenpairs, half
    the cost of a full `eigh` at k = 32 of 576). A singular value's absolute error is about
    1e-16 ||M||^2 / sigma, so the top ones are exact to float64 precision; columns with sigma = 0
    get U = 0 (their term S_k V_k^T is zero anyway).
    """
    m64 = np.asarray(matrix, np.float64)
    n_rows, n_cols = m64.shape
    if not 0 <= rank <= min(n_rows, n_cols):
        raise ValueError(f"rank={rank} must be in [0, min(in, out) = {min(n_rows, n_cols)}]")
    with single_threaded_blas():     # small LAPACK calls: threads only wait for each other
        gram = m64 @ m64.T if n_rows <= n_cols else m64.T @ m64
        n = gram.shape[0]
        eigenvalues, vectors = np.zeros(0), np.zeros((n, 0))
        if rank:
            eigenvalues, vectors = scipy.linalg.eigh(gram, subset_by_index=(n - rank, n - 1), driver="evr")
            eigenvalues, vectors = eigenvalues[::-1], vectors[:, ::-1]
        if n_rows <= n_cols:
            u = vectors
            sv_vt = u.T @ m64
        else:
            mv = m64 @ vectors
            sigma = np.linalg.norm(mv, axis=0)
            u = mv / np.where(sigma > 0, sigma, 1.0)
            sv_vt = sigma[:, None] * vectors.T
    return u, sv_vt, np.sqrt(np.maximum(eigenvalues, 0.0))


@dataclasses.dataclass
class ErrorSVD:
    """The top singular triplets of E (LQER) or diag(s) E (L2QER) up to some rank, from which the
    factors of any smaller rank follow (one decomposition for a whole rank sweep).

    Attributes:
      u: [in, k_max], the left singular vectors (of diag(s) E when scaled).
      sv_vt: [k_max, out], S V^T.
      singular_values: the top k_max, descending.
      scale: s [in] (L2QER) or None (LQER).
    """

    u: np.ndarray
    sv_vt: np.ndarray
    singular_values: np.ndarray
    scale: np.ndarray | None = None

    @property
    def max_rank(self) -> int:
        return self.u.shape[1]

    def factors(self, rank: int, a_format: QuantFormat = MXINT8, b_format: QuantFormat = MXINT8) -> LowRank:
        """A = Q_A(diag(1/s) U_k), B = Q_B(S_k V_k^T), quantized along their reduction axis (0)."""
        if not 0 <= rank <= self.max_rank:
            raise ValueError(f"rank={rank} must be in [0, {self.max_rank}] (the rank decomposed)")
        a = self.u[:, :rank] if self.scale is None else self.u[:, :rank] / self.scale[:, None]
        b = self.sv_vt[:rank]
        if rank:
            a, b = quantize_array(a_format, a, 0), quantize_array(b_format, b, 0)
        return LowRank(a=np.asarray(a, np.float32), b=np.asarray(b, np.float32),
                       singular_values=self.singular_values)


def error_svd(error: np.ndarray, max_rank: int, *, scale: np.ndarray | None = None) -> ErrorSVD:
    """The rank-`max_rank` decomposition of E [in, out], of diag(s) E when `scale` s [in] is given."""
    error = np.asarray(error, np.float32)
    if scale is not None:
        scale = np.asarray(scale, np.float64)
        if scale.shape != (error.shape[0],):
            raise ValueError(f"scale has shape {scale.shape}, expected ({error.shape[0]},)")
    target = error if scale is None else scale[:, None] * error
    u, sv_vt, singular_values = top_singular(target, max_rank)
    return ErrorSVD(u=u, sv_vt=sv_vt, singular_values=singular_values, scale=scale)


def decompose(error: np.ndarray, rank: int, *, scale: np.ndarray | None = None,
              a_format: QuantFormat = MXINT8, b_format: QuantFormat = MXINT8) -> LowRank:
    """Rank-`rank` factors of the quantization error E [in, out] (scaled SVD when `scale` [in] is given).

    A and B are quantized along their reduction axis (axis 0: in for A, k for B), blocks of 16.
    """
    return error_svd(error, rank, scale=scale).factors(rank, a_format, b_format)


def average_bits(shape: tuple[int, int], w_format: QuantFormat, rank: int,
                 a_format: QuantFormat = MXINT8, b_format: QuantFormat = MXINT8) -> float:
    """Storage bits per weight of W_q plus the low-rank factors (shared exponents included)."""
    n_in, n_out = shape
    bits = n_in * n_out * w_format.bits_per_element(shape, 0)
    if rank:
        bits += n_in * rank * a_format.bits_per_element((n_in, rank), 0)
        bits += rank * n_out * b_format.bits_per_element((rank, n_out), 0)
    return bits / (n_in * n_out)


def relative_error(w: np.ndarray, approx: np.ndarray) -> float:
    """||W - approx||_F / ||W||_F, in float64."""
    w = np.asarray(w, np.float64)
    norm = np.linalg.norm(w)
    if norm == 0:
        raise ValueError("relative_error: W is all zero")
    return float(np.linalg.norm(w - np.asarray(approx, np.float64)) / norm)


def bits_per_weight(bits: Sequence[float], sizes: Sequence[int]) -> float:
    """The average storage bits per weight of several kernels: sum(bits_i * size_i) / sum(size_i)."""
    bits, sizes = np.asarray(bits, np.float64), np.asarray(sizes, np.float64)
    if bits.shape != sizes.shape or bits.size == 0 or np.any(sizes <= 0):
        raise ValueError(f"bits_per_weight: need as many bits as sizes (> 0); got {bits.shape}, {sizes.shape}")
    return float(np.sum(bits * sizes) / np.sum(sizes))


# ------------------------------------------------------------------------------------------------ whole models
# Quantizing every linear layer of a model with LQER, L2QER and the baselines.
#
#     stats = calibration.calibrate(model, params, batches, hessian=True)
#     params_q, report = quantize_model(params, stats, Method("l2qer", w_bits=4, rank=32))
#     logits = model.clone(ops=quantized_ops(report.act_format)).apply({"params": params_q}, ...)
#
# Methods (W = weight bits; "A8" = activations and the attention matmuls in MXINT8):
#
# | name  | weights                                   | activations | low rank |
# |-------|-------------------------------------------|-------------|----------|
# | fp    | unchanged                                 | float       | -        |
# | rtn   | INT asymmetric, group 64, round to nearest| float       | -        |
# | gptq  | INT asymmetric, group 64, GPTQ            | float       | -        |
# | awq   | INT asymmetric, group 64, AWQ scales      | float       | -        |
# | mxint | MXINT (blocks of 16)                      | MXINT8      | -        |
# | lqer  | MXINT                                     | MXINT8      | SVD of E, A/B in MXINT8 |
# | l2qer | MXINT                                     | MXINT8      | SVD of diag(s) E, A/B in MXINT8 |
#
# Group 64 (not the usual 128) because SmolLM2's hidden size 576 is not a multiple of 128; it costs
# the same 4.5 bits per weight at 4 bits (fp16 scale and zero point per 64 weights) as MXINT4's
# 4 + 8/16.

METHODS = ("fp", "rtn", "gptq", "awq", "mxint", "lqer", "l2qer")


@dataclasses.dataclass(frozen=True)
class Method:
    name: str
    w_bits: int = 4
    rank: int = 0

    def __post_init__(self):
        if self.name not in METHODS:
            raise ValueError(f"method {self.name!r}; accepted: {METHODS}")
        if self.name in ("lqer", "l2qer") and self.rank < 0:
            raise ValueError(f"rank={self.rank} must be >= 0")

    @property
    def label(self) -> str:
        if self.name == "fp":
            return "FP"
        suffix = "A8" if self.act_format.kind != "none" else ""
        rank = f" k={self.rank}" if self.name in ("lqer", "l2qer") else ""
        return f"{self.name.upper()} W{self.w_bits}{suffix}{rank}"

    @property
    def lowrank(self) -> bool:
        """Whether the method adds the low-rank term A B (LQER, L2QER)."""
        return self.name in ("lqer", "l2qer")

    @property
    def weight_format(self) -> QuantFormat:
        if self.name == "fp":
            return NONE
        if self.name in ("rtn", "gptq", "awq"):
            return int_format(self.w_bits)                    # INT asymmetric, group 64 (shared)
        return QuantFormat("mxint", self.w_bits, 16)

    @property
    def act_format(self) -> QuantFormat:
        return MXINT8 if self.name in ("mxint", "lqer", "l2qer") else NONE


@dataclasses.dataclass
class QuantReport:
    method: Method
    act_format: QuantFormat
    bits_per_weight: float            # averaged over the quantized kernels, weighted by size
    seconds: float
    spectra: dict[str, np.ndarray]    # top singular values of the decomposed matrix per layer (lqer/l2qer)
    errors: dict[str, float]          # ||W - W_q - A B||_F / ||W||_F per layer


def _quantize_weight(name: str, w: np.ndarray, stats: calibration.LayerStats | None, method: Method) -> np.ndarray:
    """W_q of one kernel [in, out] (float32)."""
    fmt = method.weight_format
    if method.name in ("rtn", "gptq", "awq"):                 # INT asymmetric, group 64
        return quantize_kernel(name, w, stats, method.name, fmt)
    return quantize_array(fmt, w, 0)                          # MXINT, blocks of 16 along in


def _error_svd(name: str, w: np.ndarray, w_q: np.ndarray, stats, method: Method, max_rank: int) -> ErrorSVD:
    scale = None
    if method.name == "l2qer":
        if stats is None:
            raise ValueError(f"l2qer needs calibration statistics for layer {name!r}")
        scale = activation_scale(stats.mean_abs_max)
    return error_svd(w - w_q, max_rank, scale=scale)


def _assemble(w, w_q, svd: ErrorSVD | None, rank: int, method: Method):
    """`(entries for the layer's params, bits per weight, singular values or None, relative error)`."""
    entries = {"kernel": jnp.asarray(w_q, jnp.float32)}
    approx = w_q.astype(np.float64)
    spectrum = None
    if svd is not None:
        low = svd.factors(rank)
        spectrum = low.singular_values
        if rank:
            entries["lowrank_a"] = jnp.asarray(low.a)
            entries["lowrank_b"] = jnp.asarray(low.b)
            approx = approx + low.a.astype(np.float64) @ low.b.astype(np.float64)
    bits = average_bits(w.shape, method.weight_format, rank if method.lowrank else 0)
    return entries, bits, spectrum, relative_error(w, approx)


def _selected(params, layers: tuple[str, ...]) -> dict[str, np.ndarray]:
    kernels = {k: v for k, v in calibration.linear_kernels(params).items()
               if not layers or any(k.startswith(prefix) for prefix in layers)}
    if not kernels:
        raise ValueError(f"no Linear kernels match layers={layers}")
    return dict(sorted(kernels.items()))


def quantize_model(params, stats: dict[str, calibration.LayerStats] | None, method: Method,
                   layers: tuple[str, ...] = (), *, svd_cache: dict | None = None):
    """Quantizes every Linear kernel (or those whose name starts with one of `layers`);
    returns `(params_q, QuantReport)`. `svd_cache`: see `quantize_model_ranks`."""
    (_, params_q, report), = quantize_model_ranks(params, stats, method, (method.rank,), layers, svd_cache=svd_cache)
    return params_q, report


def _prepare(kernels: dict, stats, method: Method, max_rank: int, svd_cache: dict | None) -> dict:
    """{name: None (fp) or (W_q, ErrorSVD or None)}: the rank-independent work of quantization."""
    prepared, t0 = {}, time.perf_counter()
    svd_cache = {} if svd_cache is None else svd_cache
    for i, (name, w) in enumerate(kernels.items()):
        w = np.asarray(w, np.float32)
        layer_stats = None if stats is None else stats.get(name)
        if method.name == "fp":
            prepared[name] = None
            continue
        w_q = _quantize_weight(name, w, layer_stats, method)
        svd = None
        if method.lowrank:
            svd = svd_cache.get(name)
            if svd is None or svd.max_rank < max_rank:
                svd = svd_cache[name] = _error_svd(name, w, w_q, layer_stats, method, max_rank)
        prepared[name] = (w_q, svd)
        if (i + 1) % 70 == 0 and time.perf_counter() - t0 > 10:    # GPTQ and AWQ take minutes
            progress.log(f"{method.label}: {i + 1}/{len(kernels)} kernels")
    return prepared


def quantize_model_ranks(params, stats: dict[str, calibration.LayerStats] | None, method: Method,
                         ranks: tuple[int, ...], layers: tuple[str, ...] = (), *, svd_cache: dict | None = None):
    """`(rank, params_q, QuantReport)` for each rank in `ranks`, from one weight quantization and one
    decomposition (at the largest rank) per kernel: a rank sweep at the cost of one `quantize_model`.

    The results are those of `quantize_model(params, stats, dataclasses.replace(method, rank=rank),
    layers)` (the rank-k factors are the first k singular triplets of the rank-max decomposition,
    quantized for rank k; the same numbers up to the float64 rounding of S V^T's product). Yields
    lazily: one `params_q` is alive at a time if the caller drops it.
    Methods without a low-rank term ignore `ranks` beyond yielding once per rank.

    `svd_cache`: an optional dict {kernel name: ErrorSVD} that the caller keeps for one (method
    name, weight width, calibration statistics): decompositions found there (of at least the rank
    needed) are reused and new ones are stored, so a later call with that dict decomposes nothing.
    """
    ranks = tuple(int(r) for r in ranks)
    if not ranks or min(ranks) < 0:
        raise ValueError(f"ranks={ranks} must be a non-empty tuple of ranks >= 0")
    t0 = time.perf_counter()
    kernels = _selected(params, layers)
    with single_threaded_blas():
        prepared = _prepare(kernels, stats, method, max(ranks), svd_cache)
    seconds = time.perf_counter() - t0
    for rank in ranks:
        t1 = time.perf_counter()
        ranked = dataclasses.replace(method, rank=rank) if method.lowrank else method
        updates, spectra, errors, bits_list = {}, {}, {}, []
        with single_threaded_blas():
            for name, w in kernels.items():
                w = np.asarray(w, np.float32)
                if prepared[name] is None:
                    entries, bits, spectrum, error = {}, 32.0, None, 0.0
                else:
                    entries, bits, spectrum, error = _assemble(w, *prepared[name], rank, ranked)
                if entries:
                    updates[name] = entries
                if spectrum is not None:
                    spectra[name] = spectrum
                errors[name] = error
                bits_list.append(bits)
        params_q = calibration.replace_kernels(params, updates) if updates else params
        bpw = bits_per_weight(bits_list, [w.size for w in kernels.values()])
        yield rank, params_q, QuantReport(method=ranked, act_format=ranked.act_format, bits_per_weight=bpw,
                                          seconds=seconds + time.perf_counter() - t1, spectra=spectra, errors=errors)


def pad_lowrank(params_q, rank: int):
    """`params_q` with every Linear's low-rank factors zero-padded to `rank` columns of A [in, rank]
    and rows of B [rank, out] (zero factors where a layer has none).

    The model computes the same function: Q(X) A gains zero columns, each MXINT block of Q(Q(X) A)
    along the rank keeps its maximum (the zeros fill blocks or whole blocks of zeros), and the zero
    rows of B add nothing; only the order of float32 sums in X A may change. What it buys: every
    rank (0 included) has the same parameter shapes, so one compiled program evaluates them all.
    """
    updates = {}
    for name, kernel in calibration.linear_kernels(params_q).items():
        node = params_q
        for key in name.split("/"):
            node = node[key]
        n_in, n_out = kernel.shape
        a, b = node.get("lowrank_a"), node.get("lowrank_b")
        k = 0 if a is None else a.shape[1]
        if k > rank:
            raise ValueError(f"pad_lowrank: layer {name!r} has rank {k} > {rank}")
        if k == rank:
            continue
        dtype = kernel.dtype
        a = jnp.zeros((n_in, rank), dtype) if a is None else jnp.pad(jnp.asarray(a, dtype), ((0, 0), (0, rank - k)))
        b = jnp.zeros((rank, n_out), dtype) if b is None else jnp.pad(jnp.asarray(b, dtype), ((0, rank - k), (0, 0)))
        updates[name] = {"lowrank_a": a, "lowrank_b": b}
    return calibration.replace_kernels(params_q, updates) if updates else params_q
