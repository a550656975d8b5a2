"""AWQ: activation-aware weight quantization (Lin et al., 2024), per linear layer.

    kernel_eff, scales = awq(kernel, stats.mean_abs, QuantFormat("int", width=4, group_size=128),
                             hessian=stats.hessian)

AWQ protects the input channels that see large activations by scaling them up before quantizing:
for per-input-channel scales s [in] the layer computes (x / s) @ Q(diag(s) W), which equals x @ W
without quantization. The scales come from a grid search over one exponent (paper eq. 4-5;
mit-han-lab/llm-awq `auto_scale._search_module_scale`):

    s = max(mean|x| ** alpha, 1e-4);  s = s / sqrt(max(s) * min(s));  alpha in {0, 1/grid, ...},

keeping the alpha with the smallest output error. alpha = 0 gives s = 1, plain round-to-nearest,
and ties keep the smaller alpha, so on the objective AWQ is never worse than RTN.

The objective is the mean squared output error of this layer, per token and output channel:
||X W - X W_eff||_F^2 / (n * out) with W_eff = diag(1/s) Q(diag(s) W), computed from `x_sample`
[n, in] when given, else as tr((W - W_eff)^T H (W - W_eff)) / out from `hessian` = X^T X / n,
else from the diagonal proxy H = diag(mean|x|^2) (no calibration correlations at all). The
reference measures the error at the output of a whole block (e.g. the attention of q, k and v
together, scales shared); here every layer gets its own scales, the granularity at which a caller
can fold 1/s into the previous operation or keep it as an input scale.

Optional weight clipping (`clip=True`, llm-awq `auto_clip_layer`): after scaling, every group of
every output channel gets the clipping range [-r * max|w|, r * max|w|], r in {1, 0.95, ..., 0.55},
that minimises that group's own output error (w - q)^T H_gg (w - q) on the scaled inputs x / s
(the reference's per-group partial outputs). Because that per-group criterion ignores the error
correlation between groups, the clipped kernel is kept only if the full objective also improves.
The reference skips clipping for the q and k projections; the caller decides (it is off by
default).
"""

from __future__ import annotations

import dataclasses

import jax.numpy as jnp
import numpy as np

from jaxml.compress.quantizers import QuantFormat

MIN_SCALE = 1e-4                               # the reference's clamp on mean|x| ** alpha
# 1.0, 0.95, ..., 0.55: auto_clip's n_grid=20, max_shrink=0.5
CLIP_RATIOS = tuple(1.0 - i / 20 for i in range(10))


@dataclasses.dataclass(frozen=True)
class AWQResult:
    """`kernel` float32 [in, out]: diag(1/s) Q(diag(s) W) (clipped if chosen), a drop-in kernel.
    `scales` float32 [in]: s (> 0). `alpha`: the chosen exponent. `losses` float64 [grid]: the
    objective (mean squared output error) for alpha = 0, 1/grid, ... without clipping. `loss`: the
    objective of `kernel`. `clip_ratio` float32 [n_groups, out] (groups along the input axis) or
    None when clipping was off or not kept."""

    kernel: np.ndarray
    scales: np.ndarray
    alpha: float
    losses: np.ndarray
    loss: float
    clip_ratio: np.ndarray | None


def _float_array(name: str, a, ndim: int) -> np.ndarray:
    a = np.asarray(a)
    if a.ndim != ndim:
        raise ValueError(f"awq: {name} must be {ndim}-D, got shape {a.shape}")
    if not np.issubdtype(a.dtype, np.floating):
        raise TypeError(f"awq: {name} dtype {a.dtype}; accepted floating point")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"awq: {name} has non-finite values")
    return a


def _group_length(fmt: QuantFormat, n_in: int) -> int:
    """Input channels that share one quantization scale (per output channel)."""
    if fmt.kind == "mxint":
        return fmt.block
    return fmt.group_size or n_in


def awq_search(kernel, mean_abs_x, fmt: QuantFormat, *, grid: int = 20, hessian=None, x_sample=None,
               clip: bool = False) -> AWQResult:
    """AWQ scale search (and optional clipping) for one kernel; see the module docstring.

    Args:
      kernel: float [in, out] (Flax layout).
      mean_abs_x: float [in], mean |x| per input channel (`LayerStats.mean_abs`).
      fmt: the weight format, 'int' (any group size, symmetric or not) or 'mxint'.
      grid: number of alphas, alpha = i / grid for i = 0..grid-1.
      hessian: optional float [in, in], X^T X / n.
      x_sample: optional float [n, in], calibration inputs (used instead of `hessian` if given).
      clip: also search per-group clipping ranges.
    """
    if not isinstance(fmt, QuantFormat):
        raise TypeError(f"awq: fmt must be a QuantFormat, got {type(fmt).__name__}")
    if fmt.kind == "none":
        raise ValueError("awq: fmt.kind='none' does not quantize; accepted 'int' or 'mxint'")
    w = _float_array("kernel", kernel, 2).astype(np.float32)
    n_in, n_out = w.shape
    act = _float_array("mean_abs_x", mean_abs_x, 1).astype(np.float64)
    if act.shape != (n_in,):
        raise ValueError(f"awq: mean_abs_x shape {act.shape} does not match kernel [in, out] = {w.shape}")
    if np.any(act < 0):
        raise ValueError("awq: mean_abs_x has negative entries; expected mean |x| per input channel")
    if isinstance(grid, bool) or int(grid) != grid or grid < 1:
        raise ValueError(f"awq: grid={grid}; accepted a positive integer")
    x = h = None
    if x_sample is not None:
        x = _float_array("x_sample", x_sample, 2).astype(np.float64)
        if x.shape[1] != n_in or x.shape[0] < 1:
            raise ValueError(f"awq: x_sample shape {x.shape}; expected [n >= 1, in={n_in}]")
    elif hessian is not None:
        h = _float_array("hessian", hessian, 2).astype(np.float64)
        if h.shape != (n_in, n_in):
            raise ValueError(f"awq: hessian shape {h.shape}; expected [in, in] = {(n_in, n_in)}")
    else:
        h = np.diag(act ** 2)
    group = _group_length(fmt, n_in)
    if clip and n_in % group:
        raise ValueError(f"awq: clip=True needs groups of {group} that divide in={n_in}")
    w64 = w.astype(np.float64)

    def loss(w_eff: np.ndarray) -> float:
        diff = w64 - w_eff
        if x is not None:
            return float(np.sum((x @ diff) ** 2) / (x.shape[0] * n_out))
        return float(np.sum(diff * (h @ diff)) / n_out)

    def quantize(v: np.ndarray) -> np.ndarray:
        return np.asarray(fmt(jnp.asarray(v), axis=0), np.float32)

    losses, best = [], None
    for i in range(int(grid)):
        alpha = i / grid
        s = np.maximum(act ** alpha, MIN_SCALE)
        s = (s / np.sqrt(s.max() * s.min())).astype(np.float32)
        w_eff = quantize(w * s[:, None]) / s[:, None]
        losses.append(loss(w_eff))
        if best is None or losses[-1] < best[0]:
            best = (losses[-1], alpha, s, w_eff)
    best_loss, alpha, s, w_eff = best

    clip_ratio = None
    if clip:
        clipped, ratio = _clip_search(w * s[:, None], s, fmt, group, quantize,
                                      x / s if x is not None else None, h)
        clipped_loss = loss(clipped)
        if clipped_loss < best_loss:
            best_loss, w_eff, clip_ratio = clipped_loss, clipped, ratio
    return AWQResult(kernel=w_eff, scales=s, alpha=alpha, losses=np.asarray(losses), loss=best_loss,
                     clip_ratio=clip_ratio)


def _clip_search(w_scaled, s, fmt, group, quantize, x_scaled, h):
    """Per (group, output channel) clipping ratio of the scaled kernel [in, out] minimising the
    group's output error on the scaled inputs; returns (diag(1/s) Q(clamped), ratios [n_groups, out])."""
    n_in, n_out = w_scaled.shape
    n_groups = n_in // group
    inv_s = 1.0 / s.astype(np.float64)
    if x_scaled is not None:
        blocks = x_scaled.reshape(len(x_scaled), n_groups, group)
        h_blocks = np.einsum("nkg,nkj->kgj", blocks, blocks) / len(x_scaled)
    else:   # H of x / s = diag(1/s) H diag(1/s), diagonal blocks only
        idx = np.arange(n_in).reshape(n_groups, group)
        h_blocks = h[idx[:, :, None], idx[:, None, :]] * inv_s[idx][:, :, None] * inv_s[idx][:, None, :]
    w_groups = w_scaled.reshape(n_groups, group, n_out)
    amax = np.max(np.abs(w_groups), axis=1, keepdims=True)                       # [k, 1, out]
    best_err = np.full((n_groups, n_out), np.inf)
    best_q = np.zeros_like(w_groups)
    best_ratio = np.ones((n_groups, n_out), np.float32)
    for ratio in CLIP_RATIOS:
        bound = amax * np.float32(ratio)
        q = quantize(np.clip(w_groups, -bound, bound).reshape(n_in, n_out)).reshape(w_groups.shape)
        diff = (w_groups - q).astype(np.float64)
        err = np.sum(diff * np.matmul(h_blocks, diff), axis=1)                  # [k, out]
        better = err < best_err
        best_err = np.where(better, err, best_err)
        best_q = np.where(better[:, None, :], q, best_q)
        best_ratio = np.where(better, np.float32(ratio), best_ratio)
    return best_q.reshape(n_in, n_out) / s[:, None], best_ratio


def awq(kernel, mean_abs_x, fmt: QuantFormat, *, grid: int = 20, hessian=None, x_sample=None,
        clip: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """AWQ of `kernel` [in, out] -> (kernel_effective float32 [in, out], scales float32 [in]).

    `kernel_effective` = diag(1/s) Q(diag(s) W): what the layer computes once 1/s is folded into
    the previous operation, so it replaces the kernel directly. See `awq_search` for the arguments.
    """
    result = awq_search(kernel, mean_abs_x, fmt, grid=grid, hessian=hessian, x_sample=x_sample, clip=clip)
    return result.kernel, result.scales
