"""Public pcDEQ dense fixed point with an implicit gradient.

    result = fixed_point(w, x, activation="tanh")       # z* = act(z* @ w + x), by plain iteration
    result.z, result.iterations, result.residual

Forward: plain iteration from z0 = 0, stopped per group of rows when the relative residual
||z_{k+1} - z_k|| / (||z_{k+1}|| + 1e-5) < tol, or after max_iter applications (the official
pcDEQ solver; Gabor et al., ICML 2024). Backward (`jax.custom_vjp`): the adjoint u = J^T u + g,
J^T u = (act'(pre) * u) @ w.T, pre = z* @ w + x, iterated from u0 = g with the same rule and
groups, then dL/dw = z*^T (act'(pre) * u) and dL/dx = act'(pre) * u. The forward iterates are
never differentiated (no memory grows with the iteration count); `iterations` and `residual`
are diagnostics without gradient.

Groups. The batch is split into G = batch // block_sizes.block_batch groups of consecutive rows,
each with its own stopping rule; one group (block_batch = batch) is the official whole-batch
criterion. Both implementations use the same groups, so they agree. The default
(`BlockSizes.get_default`) is the whole batch up to 64 rows and groups of <= 64 rows beyond.
A batch that block_batch does not divide raises ValueError (zero rows would change the last
group's residual norms).

Implementations: 'xla' is `reference.py` (groups vmapped); 'pallas' the kernels of `pallas.py`
(interpret mode on CPU by default); 'auto' is `kernels.common.resolve_implementation` (Pallas on
GPU/TPU), except that on GPU it keeps XLA when the resident weight would not fit a Triton dot's
shared memory (`_fits_on_chip`; an estimate, not measured).

Backward-solve diagnostics through `jax.grad`: pass `probe=jnp.zeros(2, jnp.float32)` and
differentiate with respect to it too. It does not change the output; its "cotangent" is
[mean backward iterations over the groups, max backward residual over the groups]:

    def loss(w, x, probe):
        return jnp.sum(fixed_point(w, x, activation="tanh", probe=probe).z ** 2)
    dw, dx, (bwd_iters, bwd_residual) = jax.grad(loss, argnums=(0, 1, 2))(w, x, jnp.zeros(2))

(summed over calls if the probe is shared by several layers, like any gradient).
"""

from __future__ import annotations

import dataclasses
import functools
import numbers
from typing import NamedTuple

import jax
import jax.numpy as jnp

from kernels.common import platform_of, resolve_implementation, resolve_interpret
from kernels.fixed_point import pallas
from kernels.fixed_point.pallas import BlockSizes, tile_size
from kernels.fixed_point.reference import (ACTIVATIONS, adjoint_reference, fixed_point_reference,
                                           implicit_input_grads)

# Triton stages both dot operands in shared memory; ~228 KB per SM on H100/H200 (less kept for safety).
_GPU_SHARED_BYTES = 200 * 1024
# Mosaic TPU keeps the blocks in VMEM (16 MiB default scoped limit on older chips).
_TPU_VMEM_BYTES = 12 * 1024 * 1024


class FixedPointResult(NamedTuple):
    """z: [batch, n] the fixed point (in the inputs' float dtype); iterations: [G] int32, the
    forward applications of f per group; residual: [G] float32, each group's last relative residual."""

    z: jax.Array
    iterations: jax.Array
    residual: jax.Array


@dataclasses.dataclass(frozen=True)
class _Static:
    activation: str
    tol: float
    max_iter: int
    block_batch: int
    implementation: str
    interpret: object      # bool, or a pltpu.InterpretParams (the TPU interpreter)
    backend: str | None


def _fits_on_chip(n: int, block_batch: int, backend: str | None = None) -> bool:
    """Whether 'auto' should take the kernel: the resident w and the row tiles fit on chip."""
    platform = platform_of(backend)
    rows, cols = tile_size(block_batch), tile_size(n)
    if platform == "tpu":
        return 4 * (cols * cols + 4 * rows * cols) <= _TPU_VMEM_BYTES
    if platform == "gpu":
        return 4 * cols * (cols + rows) <= _GPU_SHARED_BYTES
    return True


def _forward(w, x, st: _Static):
    if st.implementation == "xla":
        return fixed_point_reference(w, x, activation=st.activation, tol=st.tol, max_iter=st.max_iter,
                                     block_batch=st.block_batch)
    return pallas.fixed_point_pallas(w, x, activation=st.activation, tol=st.tol, max_iter=st.max_iter,
                                     block_batch=st.block_batch, interpret=st.interpret, backend=st.backend)


def _adjoint(w, x, z, g, st: _Static):
    if st.implementation == "xla":
        return adjoint_reference(w, x, z, g, activation=st.activation, tol=st.tol, max_iter=st.max_iter,
                                 block_batch=st.block_batch)
    return pallas.adjoint_pallas(w, x, z, g, activation=st.activation, tol=st.tol, max_iter=st.max_iter,
                                 block_batch=st.block_batch, interpret=st.interpret, backend=st.backend)


@functools.partial(jax.custom_vjp, nondiff_argnums=(3,))
def _solve(w, x, probe, st: _Static):
    del probe
    return _forward(w, x, st)


def _solve_fwd(w, x, probe, st: _Static):
    del probe
    z, iterations, residual = _forward(w, x, st)
    return (z, iterations, residual), (w, x, z)


def _solve_bwd(st: _Static, saved, cotangents):
    w, x, z = saved
    g_z = cotangents[0]  # iterations and residual are diagnostics: their cotangents are ignored
    u, iterations, residual = _adjoint(w, x, z, g_z, st)
    dw, dx = implicit_input_grads(w, x, z, u, activation=st.activation)
    probe = jnp.stack([jnp.mean(iterations.astype(jnp.float32)), jnp.max(residual)])
    return dw.astype(w.dtype), dx.astype(x.dtype), probe


_solve.defvjp(_solve_fwd, _solve_bwd)


@functools.partial(jax.jit, static_argnames=("st",))
def _fixed_point(w, x, probe, st: _Static) -> FixedPointResult:
    z, iterations, residual = _solve(w, x, probe, st)
    return FixedPointResult(z.astype(jnp.result_type(w, x)), iterations, residual)


def _check_inputs(w, x, activation, tol, max_iter, probe):
    for name, a in (("w", w), ("x", x)):
        if not hasattr(a, "dtype") or not hasattr(a, "ndim"):
            raise TypeError(f"fixed_point: {name} must be an array; got {type(a).__name__}")
        if not jnp.issubdtype(a.dtype, jnp.floating):
            raise TypeError(f"fixed_point: {name} must have a float dtype (float32, bfloat16, float16, "
                            f"float64); got {a.dtype}")
    if w.ndim != 2 or w.shape[0] != w.shape[1]:
        raise ValueError(f"fixed_point: w must be a square [n, n] kernel; got shape {w.shape}")
    if x.ndim != 2 or x.shape[1] != w.shape[0]:
        raise ValueError(f"fixed_point: x must be [batch, n] = [batch, {w.shape[0]}]; got shape {x.shape}")
    if x.shape[0] < 1 or w.shape[0] < 1:
        raise ValueError(f"fixed_point: empty input, w {w.shape}, x {x.shape}")
    if activation not in ACTIVATIONS:
        raise ValueError(f"fixed_point: activation={activation!r}; accepted: {sorted(ACTIVATIONS)}")
    if isinstance(tol, bool) or not isinstance(tol, numbers.Real) or not 0 < tol < float("inf"):
        raise ValueError(f"fixed_point: tol={tol!r} must be a finite number > 0")
    if isinstance(max_iter, bool) or not isinstance(max_iter, numbers.Integral) or max_iter < 1:
        raise ValueError(f"fixed_point: max_iter={max_iter!r} must be an int >= 1")
    if probe is not None and (getattr(probe, "shape", None) != (2,) or probe.dtype != jnp.float32):
        raise ValueError(f"fixed_point: probe must be a float32 array of shape (2,) (zeros); got "
                         f"{getattr(probe, 'dtype', type(probe).__name__)} {getattr(probe, 'shape', '')}")


def fixed_point(w: jax.Array, x: jax.Array, *, activation: str, tol: float = 1e-4, max_iter: int = 200,
                block_sizes: BlockSizes | None = None, implementation: str = "auto",
                interpret=None, probe: jax.Array | None = None, backend: str | None = None) -> FixedPointResult:
    """The pcDEQ dense layer's fixed point z* = act(z* @ w + x), differentiable in w and x.

    Args:
      w: [n, n] Flax-style kernel (z @ w; PyTorch's W.T), any float dtype.
      x: [batch, n] injection (pcDEQ: softplus(., beta=5) or relu of the input), any float dtype.
      activation: 'tanh', 'softsign', 'relu6' or 'sigmoid'.
      tol: relative-residual threshold (> 0), for the forward and the backward solve.
      max_iter: at most this many applications per solve (>= 1).
      block_sizes: `BlockSizes(block_batch)`; rows per group (each with its own stop) and per
        kernel program; block_batch must divide batch. Default `BlockSizes.get_default(batch)`.
      implementation: 'xla' (reference.py), 'pallas' (pallas.py) or 'auto' (see the module doc).
      interpret: run the kernels in Pallas' generic interpreter (True), compiled (False), or in the
        TPU interpreter (a `pltpu.InterpretParams`, e.g. `kernels.common.tpu_interpret_params()`);
        default True on CPU only.
      probe: optional float32 zeros of shape (2,); the output does not depend on it, and its
        gradient is [mean backward iterations, max backward residual] (module docstring).
      backend: the platform to build for, 'cpu', 'tpu', 'gpu'/'cuda' (default jax's backend): it
        picks the implementation and the kernels' target, so a CPU host can lower for another
        platform (`jax.jit(f).trace(...).lower(lowering_platforms=("tpu",))`).
    Returns:
      `FixedPointResult(z [batch, n] in result_type(w, x), iterations [G] int32, residual [G]
      float32)`. Computed in float32 (float64 inputs: float64 on the 'xla' path, float32 in the
      kernels).
    """
    _check_inputs(w, x, activation, tol, max_iter, probe)
    batch, n = x.shape
    if block_sizes is None:
        block_sizes = BlockSizes.get_default(batch)
    elif not isinstance(block_sizes, BlockSizes):
        raise TypeError(f"fixed_point: block_sizes must be a BlockSizes; got {type(block_sizes).__name__}")
    if batch % block_sizes.block_batch:
        raise ValueError(f"fixed_point: batch={batch} must be a multiple of block_batch="
                         f"{block_sizes.block_batch} (padding rows would change the last group's residual "
                         "norms; choose a block_batch that divides the batch)")
    resolved = resolve_implementation(implementation, backend)
    if implementation == "auto" and resolved == "pallas" and not _fits_on_chip(n, block_sizes.block_batch, backend):
        resolved = "xla"
    st = _Static(activation=activation, tol=float(tol), max_iter=int(max_iter),
                 block_batch=block_sizes.block_batch, implementation=resolved,
                 interpret=resolve_interpret(interpret, backend), backend=backend)
    probe = jnp.zeros((2,), jnp.float32) if probe is None else probe
    return _fixed_point(w, x, probe, st)
