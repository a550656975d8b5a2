"""pcDEQ layers (Gabor, Piotrowski, Cavalcante, ICML 2024): z* = act(W z* + x), W >= 0.

Variants (the `variant` field of the layers and networks):
  'pcdeq1'   act in {tanh, softsign, relu6}; the injection is made strictly positive with
             softplus(x, beta=5) = softplus(5 x) / 5; W >= 0 by projection after every step.
  'pcdeq2'   act = sigmoid (positive at 0); injection relu(x); W >= 0 by projection.
  'deq'      the unconstrained baseline: same layer, act tanh by default, injection x as is, W of
             any sign with PyTorch's default init; no projection, no convergence guarantee.
  'explicit' the weight-tied explicit baseline: the 'deq' layer applied `unroll` times from z0 = 0
             and differentiated by backprop; the same parameters, so the same parameter count.

W is weight-normalised as in `torch.nn.utils.weight_norm` (dim 0 of PyTorch's [out, in, ...]
weight): W = g * v / ||v||, one g per output unit, the norm over the unit's inputs (and kernel
taps). Parameters are stored Flax-style: dense v [in, out], conv v [3, 3, in, out], g [out].
pcDEQ init (official `initialize_nn_weights`): v ~ U[0, 1) * sqrt(1e-4) / sqrt(out + in), g = ||v||.
"""

from __future__ import annotations

import functools
import math
from typing import Any, Callable

import flax.linen as nn
import jax
import jax.numpy as jnp

from jaxml.papers.pcdeq.solver import (DEQStats, Solver, check_output, deq_solve, official_output,
                                       unrolled_solve)
from kernels.fixed_point.reference import activation_fn, activation_grad, relative_residual

VARIANTS = ("pcdeq1", "pcdeq2", "deq", "explicit")
PCDEQ1_ACTIVATIONS = ("tanh", "softsign", "relu6")
CONSTRAINED = ("pcdeq1", "pcdeq2")


def check_variant(variant: str, activation: str) -> None:
    """ValueError for an unknown variant or an activation the variant does not allow."""
    if variant not in VARIANTS:
        raise ValueError(f"variant={variant!r}; accepted: {VARIANTS}")
    if variant == "pcdeq1" and activation not in PCDEQ1_ACTIVATIONS:
        raise ValueError(f"pcdeq1 takes activation in {PCDEQ1_ACTIVATIONS} (concave, nondecreasing, "
                         f"0 at 0), got {activation!r}")
    if variant == "pcdeq2" and activation != "sigmoid":
        raise ValueError(f"pcdeq2 takes activation 'sigmoid', got {activation!r}")
    activation_fn(activation)


@jax.custom_jvp
def softplus_beta5(x: jax.Array) -> jax.Array:
    """softplus(x, beta=5) = softplus(5 x) / 5 (PyTorch's `F.softplus(x, beta=5)`), with the
    derivative sigmoid(5 x) written from exp(-|5 x|), the exponential the value computes too (XLA
    computes it once): measured 4.3 vs 5.6 ms for value and gradient at 64x28x28x12 on one CPU
    thread against autodiff of `jax.nn.softplus`, whose derivative evaluates a second exponential."""
    return jax.nn.softplus(5.0 * x) / 5.0


@softplus_beta5.defjvp
def _softplus_beta5_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    y = 5.0 * x
    u = jnp.exp(-jnp.abs(y))
    return softplus_beta5(x), jnp.where(y >= 0.0, 1.0, u) / (1.0 + u) * t


def injection(variant: str, x: jax.Array) -> jax.Array:
    """pcdeq1: softplus(x, beta=5); pcdeq2: relu(x); deq/explicit: x."""
    if variant == "pcdeq1":
        return softplus_beta5(x)
    if variant == "pcdeq2":
        return jax.nn.relu(x)
    return x


def pcdeq_init(key, shape, dtype=jnp.float32):
    """U[0, 1) * sqrt(1e-4) / sqrt(out + in) (the official init; for conv, channels only)."""
    fan_in, fan_out = shape[-2], shape[-1]
    return jax.random.uniform(key, shape, dtype) * math.sqrt(1e-4) / math.sqrt(fan_in + fan_out)


def torch_default_init(key, shape, dtype=jnp.float32):
    """PyTorch's nn.Linear / nn.Conv2d default: U(-1/sqrt(fan_in), 1/sqrt(fan_in))."""
    fan_in = math.prod(shape[:-1])
    bound = 1.0 / math.sqrt(fan_in)
    return jax.random.uniform(key, shape, dtype, -bound, bound)


def unit_norms(v: jax.Array) -> jax.Array:
    """||v|| per output unit (the last axis): the norm over inputs and kernel taps, [out]."""
    return jnp.sqrt(jnp.sum(jnp.square(v), axis=tuple(range(v.ndim - 1))))


def weight_norm(v: jax.Array, g: jax.Array) -> jax.Array:
    """W = g * v / ||v||, the norm over all axes but the last (output) one."""
    return v * (g / unit_norms(v))


def _dense_map(w, z, x, act):
    return act(z @ w + x)


CONV_IMPLS = ("auto", "pairs", "patches", "xla")
# XLA:CPU (jax 0.10) runs a convolution through YNNPACK, near one core's peak, only when both
# channel counts exceed 16; below that it uses a slower convolution of its own.
_YNN_MIN_CHANNELS = 17


def _conv_xla(z, w):
    return jax.lax.conv_general_dilated(z, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))


def _shift(a, axis, k):
    """a shifted by k in {-1, 0, 1} along `axis`: out[..., t, ...] = a[..., t + k, ...], zero outside
    (a slice and a pad, which XLA fuses into the consumer; padding the whole array first, then
    slicing, measured 1.2-1.4x slower in the forward loop at 64x28x28x12)."""
    if k == 0:
        return a
    n = a.shape[axis]
    pad = [(0, 0)] * a.ndim
    pad[axis] = (0, 1) if k > 0 else (1, 0)
    return jnp.pad(jax.lax.slice_in_dim(a, max(k, 0), n + min(k, 0), axis=axis), pad)


def _row_patches(z):
    """[n, h, w, 3c] with entry (i, c) = z[n, h + i - 1, w, c] (zero outside): the three row taps."""
    return jnp.concatenate([_shift(z, 1, i - 1) for i in range(3)], axis=-1)


def _col_shifts(g):
    """[n, h, w, 3o] with entry (j, o) = g[n, h, w + 1 - j, o] (zero outside)."""
    return jnp.concatenate([_shift(g, 2, 1 - j) for j in range(3)], axis=-1)


def _conv_patches(z, w):
    """The 3x3 'SAME' convolution as one GEMM: row patches [n*h*w, 3c] (kernel rows i, channels c)
    times the kernel as a [3c, 3o] matrix (rows (i, c), columns (kernel column j, o)), then the
    three column taps summed with shifts along W: out[w] = y[w - 1, j=0] + y[w, 1] + y[w + 1, 2]."""
    n, h, wd, c = z.shape
    o = w.shape[-1]
    wm = jnp.transpose(w, (0, 2, 1, 3)).reshape(3 * c, 3 * o)
    y = jnp.dot(_row_patches(z).reshape(-1, 3 * c), wm).reshape(n, h, wd, 3, o)
    return _shift(y[..., 0, :], 2, -1) + y[..., 1, :] + _shift(y[..., 2, :], 2, 1)


def _pair_kernel(w):
    """The [3, 3, c, o] kernel as [3, 2, 2c, 2o] on column pairs (`_conv_pairs`): tap t of a pair
    of input columns (2m - 1, 2m) (half a) to output columns (2k, 2k + 1) (half b), with m = k + t,
    carries w's column tap 2t + a - b (offset 2t - 1 + a - b); the two offsets of +-2 are zero."""
    c, o = w.shape[2:]
    zero = jnp.zeros((3, c, o), w.dtype)
    taps = []
    for t in range(2):
        rows = [jnp.concatenate([w[:, 2 * t + a - b] if abs(2 * t - 1 + a - b) <= 1 else zero
                                 for b in range(2)], axis=-1) for a in range(2)]
        taps.append(jnp.concatenate(rows, axis=-2))
    return jnp.stack(taps, axis=1)


def _conv_pairs(z, w):
    """The 3x3 'SAME' convolution on column pairs: W padded by one column on each side (and one more
    when odd) and viewed as pairs [n, h, w/2 + 1, 2c] (a reshape, no copy), then a [3, 2] convolution
    with 2c input and 2o output channels (`_pair_kernel`), valid along W, whose output
    [n, h, w/2, 2o] is the NHWC result. 6 of the 8 [c, o] blocks per kernel row are taps, so it does
    4/3 of the convolution's work, in one XLA convolution with at least 17 channels when c, o >= 9,
    which XLA:CPU hands to YNNPACK."""
    n, h, wd, c = z.shape
    o = w.shape[-1]
    odd = wd % 2
    zs = jnp.pad(z, ((0, 0), (0, 0), (1, 1 + odd), (0, 0))).reshape(n, h, (wd + odd) // 2 + 1, 2 * c)
    y = jax.lax.conv_general_dilated(zs, _pair_kernel(w), (1, 1), ((1, 1), (0, 0)),
                                     dimension_numbers=("NHWC", "HWIO", "NHWC"))
    y = y.reshape(n, h, wd + odd, o)
    return y[:, :, :wd] if odd else y


def _conv_cpu(z, w):
    """The CPU's choice: XLA's convolution where YNNPACK runs it, else the pairs form (which
    reaches YNNPACK with twice the channels), else (fewer than 9 channels) the patches GEMM."""
    c, o = z.shape[-1], w.shape[-1]
    if min(c, o) >= _YNN_MIN_CHANNELS:
        return _conv_xla(z, w)
    if 2 * min(c, o) >= _YNN_MIN_CHANNELS:
        return _conv_pairs(z, w)
    return _conv_patches(z, w)


_CONVS = {"pairs": _conv_pairs, "patches": _conv_patches, "xla": _conv_xla}


def _conv_weight_grad_patches(z, g):
    """d/dw of sum(g * conv(z, w)): dw[i, j, c, o] = sum_{n,h,w} z[n, h+i-1, w+j-1, c] g[n, h, w, o],
    as one GEMM (column-shifted g)^T @ (row patches of z), contracting over the n*h*w rows."""
    c, o = z.shape[-1], g.shape[-1]
    d = _col_shifts(g).reshape(-1, 3 * o).T @ _row_patches(z).reshape(-1, 3 * c)    # (j, o) x (i, c)
    return jnp.transpose(d.reshape(3, o, 3, c), (2, 0, 3, 1))


def _conv_weight_grad_xla(z, g, w):
    return jax.vjp(lambda ww: _conv_xla(z, ww), w)[1](g)[0]


def _flip_transpose(w):
    """The kernel of the convolution's transpose w.r.t. its input: flipped taps, in/out swapped."""
    return jnp.transpose(w[::-1, ::-1], (0, 1, 3, 2))


def _check_impl(impl):
    if impl not in CONV_IMPLS:
        raise ValueError(f"conv impl={impl!r}; accepted: {CONV_IMPLS}")


def _conv_any(z, w, impl):
    if impl == "auto":   # resolved when lowering, per platform (`_conv_cpu` on the CPU)
        return jax.lax.platform_dependent(z, w, cpu=_conv_cpu, default=_conv_xla)
    return _CONVS[impl](z, w)


def _weight_grad_any(z, g, w, impl):
    if impl == "auto":
        return jax.lax.platform_dependent(z, g, w, cpu=lambda z, g, w: _conv_weight_grad_patches(z, g),
                                          default=_conv_weight_grad_xla)
    return _conv_weight_grad_xla(z, g, w) if impl == "xla" else _conv_weight_grad_patches(z, g)


@functools.partial(jax.custom_vjp, nondiff_argnums=(2,))
def _conv3x3(z, w, impl):
    return _conv_any(z, w, impl)


def _conv3x3_fwd(z, w, impl):
    # A differentiated forward (a DEQ layer's linearisation at z*, an unrolled step) whose weight
    # gradient concatenates the row patches of z: on the CPU 'auto' computes it from the same patches
    # (one GEMM; XLA computes the concatenation once).
    if impl == "auto":
        return jax.lax.platform_dependent(z, w, cpu=_conv_patches, default=_conv_xla), (z, w)
    return _conv_any(z, w, impl), (z, w)


def _conv3x3_bwd(impl, res, g):
    z, w = res
    return _conv_any(g, _flip_transpose(w), impl), _weight_grad_any(z, g, w, impl)


_conv3x3.defvjp(_conv3x3_fwd, _conv3x3_bwd)


def conv3x3(z: jax.Array, w: jax.Array, impl: str = "auto") -> jax.Array:
    """3x3 'SAME' convolution, NHWC x HWIO, with its gradient in the same formulation.

    Its gradient w.r.t. z is the same convolution with the explicitly flipped and transposed kernel
    (JAX's own transpose rule expresses it with `01oi` kernel labels, which XLA:CPU ran about 4x
    slower: 31 ms vs 8 ms per adjoint iteration at 64x28x28x12), run by the adjoint solve of every
    DEQ backward pass at each iteration; its gradient w.r.t. w is a weight-gradient GEMM.

    impl:
      'pairs'    the convolution on column pairs (`_conv_pairs`): the input padded along W and viewed
                 as [n, h, w/2 + 1, 2c] (a reshape), one XLA convolution with a [3, 2, 2c, 2o]
                 kernel (4/3 of the work: 2 of its 8 blocks per row are zero), valid along W; the
                 weight gradient is the 'patches' GEMM.
      'patches'  one GEMM, NHWC: the three row taps concatenated on the channel axis
                 ([n*h*w, 3c]) times the kernel as a [3c, 3o] matrix, the three column taps summed
                 with shifts along W (`_conv_patches`); the weight gradient is
                 (column-shifted g)^T @ row patches, a [3o, 3c] GEMM over the n*h*w rows.
      'xla'      `lax.conv_general_dilated` and JAX's weight gradient of it.
      'auto'     per platform when lowering (`lax.platform_dependent`): on GPU/TPU 'xla'; on the CPU
                 (`_conv_cpu`) the 'xla' convolution when both channel counts are at least 17,
                 'pairs' when they are at least 9, 'patches' below, with the 'patches' weight
                 gradient; a forward that is differentiated (the custom VJP's forward rule: a DEQ
                 layer's linearisation at z*) is 'patches' there, since its weight gradient
                 concatenates the same row patches and XLA computes them once (whole multi-conv
                 training step: 75.2 -> 71.3 ms, one thread). A CPU computation on a GPU host gets
                 the CPU's choice.

    The conv DEQ layers' map (`conv_map`) bypasses this function on the CPU where the direct kernel
    `kernels.cpu_conv3x3` applies (at most 16 channels, softsign): see `conv_map`.

    Why: XLA:CPU (jax 0.10) hands a convolution to YNNPACK, which runs near one core's float32 peak,
    only when both channel counts exceed 16; the 12-channel convolution of the multi-conv pcDEQ's
    first block gets XLA's slower own convolution. On pairs it has 24 channels. Measured with
    `python scripts/bench_conv3x3.py` (one pinned thread of an Intel Xeon with AVX-512, 2 MiB L2,
    jax 0.10.2, batch 64, float32, medians of 21 interleaved repetitions, idle machine), ms for
    'xla' / 'patches' / 'pairs' / 'auto':
      6 forward iterations z <- softsign(conv(z) + x) with the residual, in a `fori_loop`:
        28x28x12 30.9 / 20.2 / 16.8 / 16.5; 13x13x24 8.4 / 9.1 / 10.9 / 8.4;
        6x6x48 4.5 / 5.3 / 6.4 / 4.5;
      6 adjoint iterations (the implementation's own transpose, `conv_activation`):
        28x28x12 40.4 / 22.3 / 17.9 / 17.8; 13x13x24 10.3 / 11.2 / 12.2 / 10.2;
        6x6x48 5.6 / 6.5 / 7.5 / 5.6;
      weight gradient: 28x28x12 5.4 / 4.1 / 4.2 / 4.1; 13x13x24 2.1 / 2.0 / 2.3 / 2.2;
        6x6x48 1.0 / 1.1 / 1.1 / 1.1.
    Earlier ('patches' against 'xla' on an AMD EPYC): 6 forward iterations at 28x28x12 20.9 vs 11.8 ms.
    Alternatives measured at 64x28x28x12 and dropped: `lax.conv_general_dilated_patches` + GEMM
    (28 ms), pad + 9 shifted slices concatenated + one [n*h*w, 108] x [108, 12] GEMM (36 ms: XLA:CPU's
    9-operand concatenation alone takes 4 ms and a GEMM with 12 output columns 4 ms), the 9 taps as 9
    small GEMMs (5 ms), the output-side form (z @ [c, 9o], then 9 shifted sums: 7-11 ms), the
    column taps concatenated and the rows shifted (the same speed), W padded before the GEMM (1.2x
    slower); pairs without the one-column offset (a [3, 3] kernel on pairs (2k, 2k + 1): twice the
    work, 2.1 ms against the offset form's 1.7 ms for one convolution) and its weight gradient
    through XLA (9 ms). Differences to 'xla' are float32 rounding (summation order; see the tests).
    """
    _check_impl(impl)
    return _conv3x3(z, w, impl)


def _conv_taps(x, w):
    """The 3x3 'SAME' convolution of a one-channel input as 9 shifted multiply-adds (one fusion)."""
    h, wd = x.shape[1:3]
    xp = jnp.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
    out = None
    for i in range(3):
        for j in range(3):
            t = xp[:, i:i + h, j:j + wd, :] * w[i, j, 0]
            out = t if out is None else out + t
    # Materialised once: without the barrier XLA:CPU recomputed the 9 taps in every fusion reading them.
    return jax.lax.optimization_barrier(out)


def _input_conv_any(x, w, impl):
    if impl == "auto":
        return jax.lax.platform_dependent(x, w, cpu=_conv_taps, default=_conv_xla)
    return _conv_taps(x, w) if impl == "taps" else _conv_xla(x, w)


@functools.partial(jax.custom_vjp, nondiff_argnums=(2,))
def _input_conv(x, w, impl):
    return _input_conv_any(x, w, impl)


def _input_conv_fwd(x, w, impl):
    return _input_conv_any(x, w, impl), (x, w)


def _input_conv_bwd(impl, res, g):
    x, w = res   # XLA's own gradients (the input's is unused for images and removed by XLA)
    return _conv_xla(g, _flip_transpose(w)), _conv_weight_grad_xla(x, g, w)


_input_conv.defvjp(_input_conv_fwd, _input_conv_bwd)
INPUT_CONV_IMPLS = ("auto", "taps", "xla")


def input_conv3x3(x: jax.Array, w: jax.Array, impl: str = "auto") -> jax.Array:
    """3x3 'SAME' convolution of a ONE-channel input x [n, h, w, 1] with w [3, 3, 1, o] (the networks'
    first convolution, on the images).

    impl 'taps': the sum of the 9 shifted copies of x times the kernel's rows, one elementwise
    fusion; 'xla': `lax.conv_general_dilated`; 'auto' (default): 'taps' on CPU, 'xla' elsewhere
    (`lax.platform_dependent`). The gradients are XLA's in every case (the weight gradient, about
    1 ms, is as fast as a patches GEMM here). Why: XLA:CPU runs this 1-to-12-channel convolution at
    64x28x28 in 2.3 ms on one thread, the taps in 0.22 ms (median of 30 interleaved runs, loaded
    2-core machine). Differences to 'xla' are float32 summation order (see the tests).
    """
    if impl not in INPUT_CONV_IMPLS:
        raise ValueError(f"input conv impl={impl!r}; accepted: {INPUT_CONV_IMPLS}")
    if x.shape[-1] != 1 or w.shape[:3] != (3, 3, 1):
        raise ValueError(f"input_conv3x3 takes x [n, h, w, 1] and w [3, 3, 1, o]; got {x.shape}, {w.shape}")
    return _input_conv(x, w, impl)


def _conv_map(w, z, x, act):
    return act(conv3x3(z, w) + x)


# The conv layers' map with the direct CPU kernel (`kernels.cpu_conv3x3`): the activations it fuses.
DIRECT_ACTIVATIONS = ("softsign",)


def _direct_applies(w, z, name) -> bool:
    """The map act(W * z + x) runs as one `kernels.cpu_conv3x3` call on the CPU: float32, at most 16
    channels (XLA:CPU's own convolution, not YNNPACK's, below 17), an activation it fuses, and the
    kernel built here. Decided when tracing."""
    if name not in DIRECT_ACTIVATIONS or z.dtype != jnp.float32 or w.dtype != jnp.float32:
        return False
    if max(z.shape[-1], w.shape[-1]) >= _YNN_MIN_CHANNELS:
        return False
    from kernels import cpu_conv3x3
    return cpu_conv3x3.available()


def _with_residual(z_next, z):
    return z_next, relative_residual(z_next, z)


def _direct_conv(z, w, *, scale=None, add=None, activation=None, residual=False):
    """act(conv3x3(scale * z, w) + add), and with `residual` its relative residual against z: one
    `kernels.cpu_conv3x3` call on the CPU, the same computed by XLA when lowered for GPU/TPU."""
    from kernels import cpu_conv3x3

    def cpu(z, w, scale, add):
        return cpu_conv3x3.conv3x3(z, w, scale=scale, add=add, activation=activation, residual=residual)

    def xla(z, w, scale, add):
        y = _conv_xla(z if scale is None else scale * z, w)
        y = y if add is None else y + add
        y = y if activation is None else activation_fn(activation)(y)
        return _with_residual(y, z) if residual else y

    return jax.lax.platform_dependent(z, w, scale, add, cpu=cpu, default=xla)


@functools.partial(jax.custom_vjp, nondiff_argnums=(3,))
def _direct_conv_map(w, z, x, name):
    return _direct_conv(z, w, add=x, activation=name)


def _direct_conv_map_fwd(w, z, x, name):
    pre = _direct_conv(z, w, add=x)   # the pre-activation at which the map is linearised
    return activation_fn(name)(pre), (w, z, activation_grad(name, pre))


def _direct_conv_map_bwd(name, res, g):
    from kernels import cpu_conv3x3
    w, z, d = res
    h = d * g
    # The adjoint solve's map: conv^T(act' * g) as one kernel call (the product fused into it); the
    # weight gradient as the kernel's own reduction.
    dz = _direct_conv(g, _flip_transpose(w), scale=d)
    dw = jax.lax.platform_dependent(z, h, w, cpu=lambda z, h, w: cpu_conv3x3.weight_grad(z, h),
                                    default=_conv_weight_grad_xla)
    return dw, dz, h


_direct_conv_map.defvjp(_direct_conv_map_fwd, _direct_conv_map_bwd)


@functools.lru_cache(maxsize=None)
def conv_map(activation: str) -> Callable[[jax.Array, jax.Array, jax.Array], jax.Array]:
    """The conv layers' map (w, z, x) -> act(W * z + x), W a [3, 3, c, c] kernel, 'SAME' padding.

    Where `_direct_applies` (the CPU, float32, at most 16 channels, softsign, the kernel built), the
    map is one call of the direct kernel `kernels.cpu_conv3x3` (convolution, injection and
    activation fused), and so are the pre-activation at which the backward pass linearises it, its
    VJP's input part (the product with act' fused) and its weight gradient. The solver gets fused
    steps through two hooks (`solver.deq_solve`): `f.step_with_residual(w, x)`, z -> (f(z), its
    relative residual), and `f.adjoint_map(w, z, x, g)`, u -> (J^T u + g, its relative residual),
    each one kernel call per iteration with the residual's sums taken while the output is written.
    Elsewhere act(conv3x3(z, w) + x), and the hooks return None."""
    act = conv_activation(activation)

    def f(w, z, x):
        if _direct_applies(w, z, activation):
            return _direct_conv_map(w, z, x, activation)
        return _conv_map(w, z, x, act)

    def step_with_residual(w, x):
        """z -> (f(w, z, x), its relative residual) as one kernel call (the forward solve's step);
        None: the solver applies f and computes the residual itself."""
        if not _direct_applies(w, x, activation):
            return None
        return lambda z: _direct_conv(z, w, add=x, activation=activation, residual=True)

    def adjoint_map(w, z, x, g):
        """u -> (J^T u + g, its relative residual) at z (the adjoint solve's step) as one kernel call,
        the product with act' fused; None: the solver uses jax.vjp."""
        if not _direct_applies(w, z, activation):
            return None
        d = activation_grad(activation, _direct_conv(z, w, add=x))   # as `_direct_conv_map_fwd` (XLA computes it once)
        wt = _flip_transpose(w)
        return lambda u: _direct_conv(u, wt, scale=d, add=g, residual=True)

    f.step_with_residual = step_with_residual
    f.adjoint_map = adjoint_map
    return f


@functools.lru_cache(maxsize=None)
def conv_activation(name: str) -> Callable[[jax.Array], jax.Array]:
    """The activation of the conv layers' map, with its derivative given explicitly
    (`activation_grad`): its linearisation keeps one array act'(pre), so each adjoint iteration
    reads that one array; autodiff of softsign kept three (|pre| + 1, the sign test, the quotient)
    and XLA:CPU fused their recomputation into the patches concatenation (measured, 6 adjoint
    iterations of the 'patches' conv at 64x28x28x12, one thread: 15.1 vs 22.3 ms). ReLU6's
    derivative is 1 on the open interval (0, 6) only (jnp.clip's is 1 at the end points too)."""
    fn = activation_fn(name)

    @jax.custom_jvp
    def act(x):
        return fn(x)

    @act.defjvp
    def _act_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return fn(x), activation_grad(name, x) * t

    return act


class DEQLayer(nn.Module):
    """The fixed point z* = act(W z* + inj(x)) of a dense (`conv=False`) or 3x3 conv layer.

    Input x: [batch, features] (dense) or [batch, H, W, channels] (conv); output z* of that shape.
    Sows `diagnostics/forward_iterations` and `forward_residual`; declares a `probe` variable whose
    gradient carries the backward solve's [iterations, residual] (see `solver.deq_solve`). During
    `init` the solve is skipped and the output is zeros (the parameters depend on shapes only).

    Attributes:
      variant, activation: see the module docstring.
      conv: 3x3 convolution with padding 1 instead of a dense map.
      solver: the fixed-point solver (forward and backward).
      unroll: iterations of the 'explicit' variant.
      implementation: dense layers with plain iteration can run the `kernels.fixed_point` op:
        'auto' (Pallas on GPU/TPU), 'xla', 'pallas'; 'generic' uses `deq_solve` everywhere.
      capture: sow `capture/weight` (the normalised W) and `capture/injection` so that the map
        can be rebuilt outside the model (`layer_map`) for convergence analysis.
      output: 'z' returns the fixed point z*; 'fz' returns f(z*) = act(W z* + inj(x)), one more
        application of the map after the solve, with the official backward hook (the official
        forward; `solver.official_output`). Not used by the 'explicit' variant.
    """

    variant: str = "pcdeq1"
    activation: str = "tanh"
    conv: bool = False
    solver: Solver = Solver()
    unroll: int = 8
    implementation: str = "generic"
    capture: bool = False
    output: str = "z"

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        check_variant(self.variant, self.activation)
        check_output(self.output)
        n = x.shape[-1]
        shape = (3, 3, n, n) if self.conv else (n, n)
        init = pcdeq_init if self.variant in CONSTRAINED else torch_default_init
        v = self.param("v", init, shape)
        g = self.param("g", lambda key, s: unit_norms(v), (n,))   # W = v at init, as torch
        w = weight_norm(v, g)
        act = conv_activation(self.activation) if self.conv else activation_fn(self.activation)
        inj = injection(self.variant, x)
        if self.conv:
            # One materialised injection: without the barrier XLA:CPU fused the injection's
            # computation (BatchNorm, softplus) into each of its consumers and recomputed it there.
            inj = jax.lax.optimization_barrier(inj)
        f = conv_map(self.activation) if self.conv else (lambda w_, z, x_: _dense_map(w_, z, x_, act))
        if self.capture:   # for offline convergence analysis: the map is f(w, z, inj) = step(...)
            self.sow("capture", "weight", w)
            self.sow("capture", "injection", inj)
        probe = None if self.variant == "explicit" else self.variable("probe", "backward", jnp.zeros, (2,),
                                                                          jnp.float32)
        if self.is_initializing():
            # No parameter depends on the fixed point's value (only on shapes): `init` skips the solve,
            # which would otherwise double the compiled size of a training run's initialisation.
            return jnp.zeros_like(inj)
        if self.variant == "explicit":
            return unrolled_solve(f, w, inj, self.unroll)
        solver = self.solver._replace(nonnegative=self.solver.nonnegative or self.variant in CONSTRAINED)
        use_kernel = (not self.conv and self.solver.method == "iteration"
                      and self.implementation != "generic")
        if use_kernel:
            import kernels.fixed_point as fixed_point_op   # the Pallas op (dense layers only)
            fz = self.output == "fz"
            w_in, inj_in = jax.lax.stop_gradient((w, inj)) if fz else (w, inj)
            out = fixed_point_op.fixed_point(
                w_in, inj_in, activation=self.activation, tol=self.solver.tol, max_iter=self.solver.max_iter,
                block_sizes=fixed_point_op.BlockSizes(block_batch=x.shape[0]),
                implementation=self.implementation, probe=None if fz else probe.value)
            z, stats = out.z, DEQStats(out.iterations.max(), out.residual.max())
            if fz:   # the kernel's forward solve, then the official output and adjoint (XLA)
                z = official_output(f, solver, w, inj, z, probe.value)
        else:
            # From z0 = 0 the first iterate is act(W 0 + inj) = act(inj): no product with W.
            z, stats = deq_solve(f, w, inj, solver=solver, probe=probe.value, output=self.output,
                                 map_at_zero=lambda w_, x_: act(x_))
        self.sow("diagnostics", "forward_iterations", stats.iterations.astype(jnp.float32))
        self.sow("diagnostics", "forward_residual", stats.residual)
        return z


def project_nonnegative(params: Any) -> Any:
    """Clamps every DEQ layer's v and g at 0 (the pcDEQ projection after each optimizer step)."""
    def clamp(path, leaf):
        names = [getattr(p, "key", None) for p in path]
        if names and names[-1] in ("v", "g") and any(str(k).startswith("deq") for k in names[:-1]):
            return jnp.maximum(leaf, 0.0)
        return leaf
    return jax.tree_util.tree_map_with_path(clamp, params)


def layer_map(activation: str, conv: bool) -> Callable[[jax.Array, jax.Array, jax.Array], jax.Array]:
    """The DEQ map `(w, z, injection) -> act(W z + injection)` of a dense or conv layer."""
    if conv:
        return conv_map(activation)
    act = activation_fn(activation)
    return lambda w, z, x: _dense_map(w, z, x, act)
