"""The pcDEQ fixed point in Pallas: the whole solver loop inside one kernel per tile of rows.

Forward (`fixed_point_pallas`): one program per group of `block_batch` rows. Its rows of x and
the whole [n, n] weight are resident (w's BlockSpec maps every program to the same block); the
program runs the complete plain iteration z_{k+1} = act(z_k @ w + x) from z0 = 0 as a
`lax.while_loop` with the relative-residual stop (`reference.iterate`'s rule) and writes its
z, its iteration count and its final residual. Backward (`adjoint_pallas`): the same for the
adjoint u_{k+1} = (act'(pre) * u_k) @ w.T + g from u0 = g, with pre = z @ w + x and act'(pre)
computed once per program. A group's stopping rule sees only its own rows, exactly the
per-group rule of `reference.fixed_point_reference(..., block_batch=...)`.

Layout: the kernels take [G, rows, cols] tiles and w [cols, cols], where rows and cols are the
group size and n rounded up to a power of 2 >= 16 (Triton tiles are powers of 2 and its dot
needs every dimension >= 16). The wrappers below pad x and w with zeros and the kernel masks the
padding of every iterate to exactly 0 (sigmoid(0) = 1/2 would otherwise leak into the norms), so
the residual norms are those of the unpadded group and the padded rows and columns never feed
back. Per-program scalars go to [G, 1, 1] outputs (block (squeezed, 1, 1): the trailing block
dims equal the array's, as Mosaic TPU requires; (1, 1) is a power of 2 for Triton).

Everything inside is float32 (dots at HIGHEST precision: IEEE on Triton, not its TF32 default).
w is read from its ref inside the loop body: on TPU that is a VMEM read of the resident block,
on GPU a global-memory (L2-resident) load each iteration rather than n^2 values pinned in
registers across the loop.

What has been run where (CPU, jax 0.10.2): both kernels run in Pallas' generic interpreter (the
default suite's value, gradient and group tests) and in its TPU interpreter (VMEM/HBM and the grid
simulated, races detected, unwritten memory read as NaN: `test_kernels_match_reference_in_the_tpu_
interpreter`), and lower (Pallas -> Mosaic for TPU, Pallas -> Triton for CUDA, padded and unpadded
tiles: `test_kernels_lower_for_gpu_and_tpu`). Lowering is not compiling: neither has been compiled
by Mosaic or Triton or run on hardware (no device was lent). The GPU path uses Triton compiler
params (`kernels.common.compiler_params`), the TPU path ("parallel" groups) the same blocks: each
is the whole array in its last two dimensions, which Mosaic accepts. Expected limit on GPU: Triton
stages both dot operands in shared memory, 4 * n_pad * (n_pad + rows) bytes, which exceeds an
H100/H200 SM's ~228 KB from n_pad = 256 on; `api.fixed_point(implementation='auto')` therefore takes XLA for
larger layers (an estimate, not a measurement).
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl

from kernels.common import check_divisible, compiler_params, target_platform
from kernels.fixed_point.reference import ACTIVATIONS, EPS, activation_fn, activation_grad

# Triton's dot needs every tile dimension >= 16, and every loaded tile to be a power of 2.
MIN_TILE = 16
# Default rows per group: pcDEQ's training batch, so a batch of 64 keeps the official whole-batch rule.
DEFAULT_BLOCK_BATCH = 64


def next_power_of_2(n: int) -> int:
    return 1 << max(0, (n - 1).bit_length())


def tile_size(n: int) -> int:
    """The padded tile extent of n rows or columns: a power of 2 >= MIN_TILE."""
    return max(MIN_TILE, next_power_of_2(n))


@dataclasses.dataclass(frozen=True)
class BlockSizes:
    """Rows per program (`block_batch`); each program's rows are one group with its own stop.

    Any positive block_batch dividing the batch works: the kernel tile is block_batch rounded up
    to a power of 2 >= 16, with the padding masked. It changes the result only through the
    stopping rule (a group stops when *its* residual is below tol).
    """

    block_batch: int = DEFAULT_BLOCK_BATCH

    def __post_init__(self):
        value = self.block_batch
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(f"BlockSizes.block_batch={value!r} must be a positive int")

    @classmethod
    def get_default(cls, batch: int) -> BlockSizes:
        """The whole batch when batch <= 64 (one group: the official criterion); otherwise the
        largest power of 2 <= 64 dividing batch, or the whole batch if that is below 8 (odd sizes)."""
        if batch <= DEFAULT_BLOCK_BATCH:
            return cls(max(batch, 1))
        block = DEFAULT_BLOCK_BATCH
        while batch % block:
            block //= 2
        return cls(block if block >= 8 else batch)


def _compiler_params(target: str, num_warps: int):
    """Per target (`kernels.common.target_platform`): Mosaic TPU with the groups in parallel, Triton
    on GPU (the kernels use Triton-style whole-tile loads, one pipeline stage), none in the generic
    interpreter."""
    return compiler_params(target, dimension_semantics=("parallel",), num_warps=num_warps, num_stages=1)


def _dot(a, b, transpose_b=False):
    dims = (((1,), (1 if transpose_b else 0,)), ((), ()))
    return lax.dot_general(a, b, dims, precision=lax.Precision.HIGHEST, preferred_element_type=jnp.float32)


def _valid_mask(shape, rows: int, cols: int):
    """True on the unpadded [rows, cols] corner of a tile; None when nothing is padded."""
    if shape == (rows, cols):
        return None
    r = lax.broadcasted_iota(jnp.int32, shape, 0)
    c = lax.broadcasted_iota(jnp.int32, shape, 1)
    return (r < rows) & (c < cols)


def _relative_residual(new, old):
    """`reference.relative_residual` of a float32 tile: ||new - old|| / (||new|| + 1e-5)."""
    diff = new - old
    return jnp.sqrt(jnp.sum(diff * diff)) / (jnp.sqrt(jnp.sum(new * new)) + EPS)


def _solve(f, start, tol, max_iter):
    """`reference.iterate` on a tile: (last iterate, applications of f, last residual)."""

    def cond(carry):
        _, k, res = carry
        return (k < max_iter) & (res >= tol)

    def body(carry):
        v, k, _ = carry
        v_next = f(v)
        return v_next, k + 1, _relative_residual(v_next, v)

    return lax.while_loop(cond, body, (start, jnp.int32(0), jnp.float32(jnp.inf)))


def _store_stats(iterations_ref, residual_ref, k, res):
    iterations_ref[...] = jnp.full(iterations_ref.shape, k, jnp.int32)
    residual_ref[...] = jnp.full(residual_ref.shape, res, jnp.float32)


def _forward_kernel(w_ref, x_ref, z_ref, iterations_ref, residual_ref, *, activation, tol, max_iter,
                    rows, cols):
    act = activation_fn(activation)
    x = x_ref[...].astype(jnp.float32)
    mask = _valid_mask(x.shape, rows, cols)

    def f(z):
        z_next = act(_dot(z, w_ref[...].astype(jnp.float32)) + x)
        return z_next if mask is None else jnp.where(mask, z_next, 0.0)

    z, k, res = _solve(f, jnp.zeros(x.shape, jnp.float32), tol, max_iter)
    z_ref[...] = z
    _store_stats(iterations_ref, residual_ref, k, res)


def _adjoint_kernel(w_ref, x_ref, z_ref, g_ref, u_ref, iterations_ref, residual_ref, *, activation, tol,
                    max_iter, rows, cols):
    x = x_ref[...].astype(jnp.float32)
    z = z_ref[...].astype(jnp.float32)
    g = g_ref[...].astype(jnp.float32)
    slope = activation_grad(activation, _dot(z, w_ref[...].astype(jnp.float32)) + x)
    mask = _valid_mask(x.shape, rows, cols)
    if mask is not None:  # act'(0) != 0 on the padding: zero it (u stays 0 there anyway, g being 0)
        slope = jnp.where(mask, slope, 0.0)

    def f(u):
        return _dot(slope * u, w_ref[...].astype(jnp.float32), transpose_b=True) + g

    u, k, res = _solve(f, g, tol, max_iter)
    u_ref[...] = u
    _store_stats(iterations_ref, residual_ref, k, res)


def _check(what, w, x, activation, tol, max_iter, block_batch, extra=()):
    if w.ndim != 2 or x.ndim != 2 or w.shape[0] != w.shape[1] or x.shape[1] != w.shape[0]:
        raise ValueError(f"{what}: expects w [n, n] and x [batch, n]; got w {w.shape}, x {x.shape}")
    for name, a in extra:
        if a.shape != x.shape:
            raise ValueError(f"{what}: {name} {a.shape} must have x's shape {x.shape}")
    if activation not in ACTIVATIONS:
        raise ValueError(f"{what}: activation={activation!r}; accepted: {sorted(ACTIVATIONS)}")
    if not tol > 0:
        raise ValueError(f"{what}: tol={tol!r} must be > 0")
    if not isinstance(max_iter, int) or max_iter < 1:
        raise ValueError(f"{what}: max_iter={max_iter!r} must be an int >= 1")
    batch = x.shape[0]
    block_batch = batch if block_batch is None else block_batch
    if not isinstance(block_batch, int) or isinstance(block_batch, bool) or block_batch < 1:
        raise ValueError(f"{what}: block_batch={block_batch!r} must be a positive int or None")
    check_divisible("batch", batch, "block_batch", block_batch)
    return block_batch


def _to_tiles(a, groups, rows_pad, cols_pad):
    """[batch, n] -> float32 [G, rows_pad, cols_pad], zero-padded."""
    batch, n = a.shape
    a = a.astype(jnp.float32).reshape(groups, batch // groups, n)
    return jnp.pad(a, ((0, 0), (0, rows_pad - a.shape[1]), (0, cols_pad - n)))


def _call(kernel, w, tiles, n_out_tiles, *, interpret, backend, name, flops, transcendentals):
    """pallas_call over G programs: w's whole block for every program, one [rows, cols] tile per input.
    Every block is the whole array in its last two dimensions, so the layout is legal for Mosaic TPU
    as well as Triton."""
    groups, rows_pad, cols_pad = tiles[0].shape
    tile = pl.BlockSpec((None, rows_pad, cols_pad), lambda i: (i, 0, 0))
    stat = pl.BlockSpec((None, 1, 1), lambda i: (i, 0, 0))
    out_shape = ([jax.ShapeDtypeStruct(tiles[0].shape, jnp.float32)] * n_out_tiles
                 + [jax.ShapeDtypeStruct((groups, 1, 1), jnp.int32),
                    jax.ShapeDtypeStruct((groups, 1, 1), jnp.float32)])
    bytes_accessed = 4 * (w.size + sum(t.size for t in tiles) + n_out_tiles * tiles[0].size + 2 * groups)
    return pl.pallas_call(
        kernel,
        grid=(groups,),
        in_specs=[pl.BlockSpec((cols_pad, cols_pad), lambda i: (0, 0))] + [tile] * len(tiles),
        out_specs=[tile] * n_out_tiles + [stat, stat],
        out_shape=out_shape,
        compiler_params=_compiler_params(target_platform(backend, interpret), num_warps=4 if cols_pad <= 64 else 8),
        # An upper bound: max_iter iterations in every program.
        cost_estimate=pl.CostEstimate(flops=int(flops), transcendentals=int(transcendentals),
                                      bytes_accessed=int(bytes_accessed)),
        interpret=interpret,
        name=name,
    )(w, *tiles)


def _from_tiles(t, batch, n):
    return t[:, : batch // t.shape[0], :n].reshape(batch, n)


def fixed_point_pallas(w: jax.Array, x: jax.Array, *, activation: str, tol: float = 1e-4, max_iter: int = 200,
                       block_batch: int | None = None, interpret=False, backend: str | None = None):
    """`reference.fixed_point_reference`, computed by the kernel (float32 inside).

    Args:
      w: [n, n]; x: [batch, n] (any float dtype; cast to float32).
      activation, tol, max_iter: as the reference.
      block_batch: rows per program and per group (dividing batch); None: the whole batch.
      interpret: False (compiled), True (Pallas' generic interpreter) or a `pltpu.InterpretParams`
        (the TPU interpreter; `kernels.common.tpu_interpret_params()`).
      backend: the platform to build for (default jax's backend; set it to lower on a CPU host for
        'tpu' or 'cuda').
    Returns:
      `(z [batch, n] float32, iterations [G] int32, residual [G] float32)`.
    """
    block_batch = _check("fixed_point_pallas", w, x, activation, tol, max_iter, block_batch)
    batch, n = x.shape
    groups, rows_pad, cols_pad = batch // block_batch, tile_size(block_batch), tile_size(n)
    kernel = functools.partial(_forward_kernel, activation=activation, tol=float(tol), max_iter=max_iter,
                               rows=block_batch, cols=n)
    w_pad = jnp.pad(w.astype(jnp.float32), ((0, cols_pad - n), (0, cols_pad - n)))
    per_iter = groups * rows_pad * cols_pad
    z, iterations, residual = _call(
        kernel, w_pad, [_to_tiles(x, groups, rows_pad, cols_pad)], 1, interpret=interpret,
        backend=backend, name="fixed_point_forward", flops=max_iter * per_iter * (2 * cols_pad + 6),
        transcendentals=max_iter * per_iter if activation in ("tanh", "sigmoid") else 0)
    return _from_tiles(z, batch, n), iterations.reshape(groups), residual.reshape(groups)


def adjoint_pallas(w: jax.Array, x: jax.Array, z: jax.Array, g_out: jax.Array, *, activation: str,
                   tol: float = 1e-4, max_iter: int = 200, block_batch: int | None = None,
                   interpret=False, backend: str | None = None):
    """`reference.adjoint_reference`, computed by the kernel (float32 inside).

    Returns:
      `(u [batch, n] float32, iterations [G] int32, residual [G] float32)`.
    """
    block_batch = _check("adjoint_pallas", w, x, activation, tol, max_iter, block_batch,
                         extra=(("z", z), ("g_out", g_out)))
    batch, n = x.shape
    groups, rows_pad, cols_pad = batch // block_batch, tile_size(block_batch), tile_size(n)
    kernel = functools.partial(_adjoint_kernel, activation=activation, tol=float(tol), max_iter=max_iter,
                               rows=block_batch, cols=n)
    w_pad = jnp.pad(w.astype(jnp.float32), ((0, cols_pad - n), (0, cols_pad - n)))
    tiles = [_to_tiles(a, groups, rows_pad, cols_pad) for a in (x, z, g_out)]
    per_iter = groups * rows_pad * cols_pad
    u, iterations, residual = _call(
        kernel, w_pad, tiles, 1, interpret=interpret, backend=backend, name="fixed_point_adjoint",
        flops=(max_iter + 1) * per_iter * (2 * cols_pad + 6),
        transcendentals=per_iter if activation in ("tanh", "sigmoid") else 0)
    return _from_tiles(u, batch, n), iterations.reshape(groups), residual.reshape(groups)
