"""Fixed-point iteration, the specification of `kernels.fixed_point` (plain jnp).

The pcDEQ layer (Gabor et al., ICML 2024) is the fixed point of

    z = f(z) = act(z @ w + x),        z0 = 0,

found by plain iteration z_{k+1} = f(z_k), stopped when the relative residual

    r_k = ||z_{k+1} - z_k|| / (||z_{k+1}|| + 1e-5)           (Frobenius norms)

drops below `tol` or after `max_iter` applications of f (the official solver's rule).

`iterate` is the generic loop (any f on any array); the dense op and its adjoint below are what
the Pallas kernel computes. Convention: `w` is a Flax-style kernel [in, out] (= n x n here), so
`z @ w` is PyTorch's `z @ W.T`.
"""

from __future__ import annotations

from typing import Callable

import jax
import jax.numpy as jnp

EPS = 1e-5


def _relu6(x):
    return jnp.clip(x, 0.0, 6.0)


ACTIVATIONS: dict[str, Callable[[jax.Array], jax.Array]] = {
    "tanh": jnp.tanh,
    "softsign": jax.nn.soft_sign,
    "relu6": _relu6,
    "sigmoid": jax.nn.sigmoid,
}


def activation_fn(name: str) -> Callable[[jax.Array], jax.Array]:
    """The elementwise nonlinearity called `name`; ValueError names the accepted ones."""
    try:
        return ACTIVATIONS[name]
    except KeyError:
        raise ValueError(f"activation={name!r}; accepted: {sorted(ACTIVATIONS)}") from None


def activation_grad(name: str, pre: jax.Array) -> jax.Array:
    """d act(pre) / d pre, elementwise (ReLU6: 1 on the open interval (0, 6), else 0)."""
    if name == "tanh":
        t = jnp.tanh(pre)
        return 1.0 - t * t
    if name == "softsign":
        d = 1.0 + jnp.abs(pre)
        return 1.0 / (d * d)
    if name == "relu6":
        return ((pre > 0.0) & (pre < 6.0)).astype(pre.dtype)
    if name == "sigmoid":
        s = jax.nn.sigmoid(pre)
        return s * (1.0 - s)
    raise ValueError(f"activation={name!r}; accepted: {sorted(ACTIVATIONS)}")


def relative_residual(z_next: jax.Array, z: jax.Array) -> jax.Array:
    """||z_next - z|| / (||z_next|| + 1e-5), in float32 (float64 for float64 inputs)."""
    dtype = jnp.promote_types(jnp.result_type(z_next, z), jnp.float32)
    z_next32, z32 = z_next.astype(dtype), z.astype(dtype)
    return (jnp.linalg.norm((z_next32 - z32).ravel()) / (jnp.linalg.norm(z_next32.ravel()) + EPS)).astype(jnp.float32)


def iterate(f: Callable[[jax.Array], jax.Array], z0: jax.Array, *, tol: float = 1e-4,
            max_iter: int = 200, record: bool = False, f_z0: jax.Array | None = None,
            with_residual: bool = False):
    """Plain fixed-point iteration as a `lax.while_loop`.

    Args:
      f: the map, array -> array of the same shape and dtype.
      z0: the starting point.
      tol: stop when the relative residual is below it.
      max_iter: at most this many applications of f (>= 1).
      record: also return the residual of every iteration, [max_iter] float32 (NaN after the stop).
      f_z0: f(z0), when the caller has it without applying f (for a map act(W z + x) from z0 = 0 it
        is act(x), no product with W): the first iteration uses it instead of calling f. It counts
        as one application, so iteration counts, iterates and residuals are those of the plain loop.
      with_residual: f returns `(f(z), relative_residual(f(z), z))`, the residual computed in the same
        call (a fused kernel); otherwise the loop computes it.
    Returns:
      `(z, iterations, residual)`: the last iterate, the number of applications of f (int32), the
      last relative residual (float32); with `record`, a fourth element, the residual history.
    """
    if max_iter < 1:
        raise ValueError(f"max_iter={max_iter} must be >= 1")
    history0 = jnp.full((max_iter if record else 1,), jnp.nan, jnp.float32)

    def cond(carry):
        _, k, res, _ = carry
        return (k < max_iter) & (res >= tol)

    def body(carry):
        z, k, _, hist = carry
        if with_residual:
            z_next, res = f(z)
            res = res.astype(jnp.float32)
        else:
            z_next = f(z)
            res = relative_residual(z_next, z)
        if record:
            hist = hist.at[k].set(res)
        return z_next, k + 1, res, hist

    init = (z0, jnp.zeros((), jnp.int32), jnp.asarray(jnp.inf, jnp.float32), history0)
    if f_z0 is not None:   # the first iteration, without calling f
        if f_z0.shape != z0.shape or f_z0.dtype != z0.dtype:
            raise ValueError(f"f_z0 must have z0's shape and dtype {z0.shape} {z0.dtype}; got {f_z0.shape} {f_z0.dtype}")
        res1 = relative_residual(f_z0, z0)
        init = (f_z0, jnp.ones((), jnp.int32), res1, history0.at[0].set(res1) if record else history0)
    z, k, res, hist = jax.lax.while_loop(cond, body, init)
    return (z, k, res, hist) if record else (z, k, res)


# --- The dense pcDEQ layer and its adjoint, by groups of rows ------------------------------------

def compute_dtype(*arrays) -> jnp.dtype:
    """float32, or float64 when an input is float64 (bfloat16 / float16 inputs are upcast)."""
    return jnp.promote_types(jnp.result_type(*arrays), jnp.float32)


def _dot(a: jax.Array, b: jax.Array) -> jax.Array:
    # Full float32 precision: at a tight tol, TF32 / bf16 passes would stall the iteration.
    return jnp.matmul(a, b, precision=jax.lax.Precision.HIGHEST)


def num_groups(batch: int, block_batch: int | None) -> int:
    """G = batch // block_batch (1 for block_batch None); ValueError unless block_batch divides batch."""
    if block_batch is None:
        return 1
    if not isinstance(block_batch, int) or isinstance(block_batch, bool) or block_batch < 1:
        raise ValueError(f"block_batch={block_batch!r} must be a positive int or None")
    if batch % block_batch:
        raise ValueError(f"batch={batch} must be a multiple of block_batch={block_batch} (padding rows "
                         "would change the residual norms of the last group)")
    return batch // block_batch


def _check_dense(w, x, what):
    if w.ndim != 2 or x.ndim != 2 or w.shape[0] != w.shape[1] or x.shape[1] != w.shape[0]:
        raise ValueError(f"{what}: expects w [n, n] and x [batch, n]; got w {w.shape}, x {x.shape}")


def fixed_point_reference(w: jax.Array, x: jax.Array, *, activation: str, tol: float = 1e-4,
                          max_iter: int = 200, block_batch: int | None = None):
    """The pcDEQ dense fixed point z* = act(z* @ w + x), by plain iteration from z0 = 0.

    The batch is split into G = batch // block_batch groups of consecutive rows; each group
    iterates with its own stopping rule (`iterate` vmapped over the groups: a batched while_loop
    keeps the carry of a finished group frozen while the others go on). block_batch None: one
    group, the whole batch (the official solver's criterion).

    Args:
      w: [n, n] Flax-style kernel (z @ w).
      x: [batch, n] injection.
      activation: a name in `ACTIVATIONS`.
      tol, max_iter: the stopping rule of `iterate`.
      block_batch: rows per group, dividing batch; or None.
    Returns:
      `(z, iterations, residual)`: z [batch, n] in `compute_dtype(w, x)`, iterations [G] int32
      (applications of f per group), residual [G] float32 (each group's last relative residual).
    """
    _check_dense(w, x, "fixed_point_reference")
    act = activation_fn(activation)
    batch, n = x.shape
    groups = num_groups(batch, block_batch)
    dtype = compute_dtype(w, x)
    w = w.astype(dtype)

    def solve(x_group):
        return iterate(lambda z: act(_dot(z, w) + x_group), jnp.zeros_like(x_group), tol=tol,
                       max_iter=max_iter)

    z, iterations, residual = jax.vmap(solve)(x.astype(dtype).reshape(groups, batch // groups, n))
    return z.reshape(batch, n), iterations, residual


def adjoint_reference(w: jax.Array, x: jax.Array, z: jax.Array, g_out: jax.Array, *, activation: str,
                      tol: float = 1e-4, max_iter: int = 200, block_batch: int | None = None):
    """The adjoint fixed point u = J^T u + g_out of the layer at z, by plain iteration from u0 = g_out.

    J^T u = (act'(pre) * u) @ w.T with pre = z @ w + x; same stopping rule and groups as
    `fixed_point_reference` (the adjoint is row-wise too, so the groups are independent systems).
    With u, dL/dw = z^T (act'(pre) * u) and dL/dx = act'(pre) * u (`implicit_input_grads`).

    Args:
      w [n, n], x [batch, n]: the layer; z [batch, n]: its fixed point; g_out [batch, n]: dL/dz*.
    Returns:
      `(u, iterations, residual)`: u [batch, n] in the compute dtype, iterations [G] int32,
      residual [G] float32.
    """
    _check_dense(w, x, "adjoint_reference")
    if z.shape != x.shape or g_out.shape != x.shape:
        raise ValueError(f"adjoint_reference: z {z.shape} and g_out {g_out.shape} must have x's shape {x.shape}")
    batch, n = x.shape
    groups = num_groups(batch, block_batch)
    dtype = compute_dtype(w, x, z, g_out)
    w, x, z = w.astype(dtype), x.astype(dtype), z.astype(dtype)
    slope = activation_grad(activation, _dot(z, w) + x)

    def solve(slope_group, g_group):
        return iterate(lambda u: _dot(slope_group * u, w.T) + g_group, g_group, tol=tol, max_iter=max_iter)

    shape = (groups, batch // groups, n)
    u, iterations, residual = jax.vmap(solve)(slope.reshape(shape), g_out.astype(dtype).reshape(shape))
    return u.reshape(batch, n), iterations, residual


def implicit_input_grads(w: jax.Array, x: jax.Array, z: jax.Array, u: jax.Array, *, activation: str):
    """(dL/dw [n, n], dL/dx [batch, n]) from the adjoint u: z^T (act'(pre) * u) and act'(pre) * u."""
    dtype = compute_dtype(w, x, z, u)
    w, x, z = w.astype(dtype), x.astype(dtype), z.astype(dtype)
    dx = activation_grad(activation, _dot(z, w) + x) * u.astype(dtype)
    return _dot(z.T, dx), dx
