"""Deep-equilibrium solvers: plain fixed-point iteration, Anderson acceleration, implicit gradient.

    z, stats = deq_solve(f, params, x, solver=Solver(tol=1e-4, max_iter=200))

finds z* = f(params, z*, x) from z0 = 0 and is differentiable w.r.t. `params` and `x` by the
implicit function theorem: the backward pass solves the adjoint fixed point

    u = (d f / d z)^T u + g,        u0 = g    (g = dL/dz*)

with the same solver, then returns (d f / d params, d f / d x)^T u — the pcDEQ code's backward hook
(Bai-Kolter DEQ pattern), not a Jacobian-free approximation. The stopping rule of both solves is the
official one: relative residual ||z_{k+1} - z_k|| / (||z_{k+1}|| + 1e-5) < tol, or max_iter maps.

Output: `output='z'` returns z*; `output='fz'` returns f(params, z*, x), one more application of f,
as the official forward does (its solve runs under no_grad, then `z = f(z, x)` with autograd on and a
backward hook on that z; `official_output`). The two gradients agree at an exact fixed point.

Diagnostics: `stats` has the forward iteration count and final residual. The backward pass's count
and residual are returned as the cotangent of the optional `probe` argument (a float32 [2] zeros
array): differentiate w.r.t. the probe to read [backward iterations, backward residual].
"""

from __future__ import annotations

import functools
from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp

from kernels.fixed_point.reference import EPS, iterate

METHODS = ("iteration", "anderson")


class Solver(NamedTuple):
    """How a fixed point is found (static: part of the jit cache key).

    Attributes:
      tol: relative-residual tolerance (official pcDEQ: 1e-4).
      max_iter: at most this many applications of f (official: 200).
      method: 'iteration' (plain z <- f(z), what the paper's theory covers) or 'anderson'.
      memory, beta, lam: Anderson's history size, mixing and Tikhonov regularisation.
      nonnegative: keep Anderson in the nonnegative orthant: an example whose extrapolated iterate
        has a negative entry takes the plain step f(x_k) instead. pcDEQ's uniqueness holds in the
        orthant only; unguarded Anderson can leave it and converge to another, negative fixed point
        of the same map (found by the tests; clipping at 0 instead stalled). Plain iteration of a
        positive map never leaves the orthant, so this only affects 'anderson'.
    """

    tol: float = 1e-4
    max_iter: int = 200
    method: str = "iteration"
    memory: int = 5
    beta: float = 1.0
    lam: float = 1e-4
    nonnegative: bool = False

    def validate(self) -> "Solver":
        if self.method not in METHODS:
            raise ValueError(f"solver method={self.method!r}; accepted: {METHODS}")
        if not self.tol > 0 or self.max_iter < 1:
            raise ValueError(f"solver needs tol > 0 and max_iter >= 1 (got tol={self.tol}, max_iter={self.max_iter})")
        if self.method == "anderson" and (self.memory < 1 or self.max_iter < 2):
            raise ValueError(f"anderson needs memory >= 1 and max_iter >= 2 (got {self.memory}, {self.max_iter})")
        return self


class DEQStats(NamedTuple):
    iterations: jax.Array     # int32: applications of f in the forward solve
    residual: jax.Array       # float32: the final relative residual


def anderson(f: Callable[[jax.Array], jax.Array], z0: jax.Array, *, tol: float = 1e-4,
             max_iter: int = 200, memory: int = 5, beta: float = 1.0, lam: float = 1e-4,
             nonnegative: bool = False, record: bool = False, f_z0: jax.Array | None = None):
    """Anderson acceleration (type II, per example along axis 0), same stop rule as `iterate`.

    Each example b keeps the last `memory` pairs (x_i, f(x_i)) and takes
    x_next = beta * sum_i a_i f(x_i) + (1 - beta) * sum_i a_i x_i with the weights a (sum 1) that
    minimise ||sum_i a_i (f(x_i) - x_i)||^2 + lam s ||a||^2, s the largest ||f(x_i) - x_i||^2
    (relative regularisation: an absolute lam stalls once residuals are tiny). `f_z0`: f(z0) when
    known without applying f (see `iterate`). Returns the last f evaluation, the number
    of f evaluations, the final residual ||f(x) - x|| / (||f(x)|| + 1e-5) over the whole batch, and
    with `record` the residual history [max_iter] (NaN where not reached).
    """
    batch = z0.shape[0]
    shape, dtype = z0.shape, z0.dtype
    flat = lambda a: a.reshape(batch, -1).astype(jnp.float32)
    m = memory
    X = jnp.zeros((batch, m, flat(z0).shape[1]), jnp.float32)
    F = jnp.zeros_like(X)
    f0 = f(z0) if f_z0 is None else f_z0
    X, F = X.at[:, 0].set(flat(z0)), F.at[:, 0].set(flat(f0))
    f1 = f(f0)
    X, F = X.at[:, 1 % m].set(flat(f0)), F.at[:, 1 % m].set(flat(f1))
    hist = jnp.full((max_iter if record else 1,), jnp.nan, jnp.float32)

    def res_of(fx, x):
        return jnp.linalg.norm((fx - x).ravel()) / (jnp.linalg.norm(fx.ravel()) + EPS)

    r0 = res_of(flat(f0), flat(z0))
    r1 = res_of(flat(f1), flat(f0))
    if record:
        hist = hist.at[0].set(r0)
        if max_iter > 1:
            hist = hist.at[1].set(r1)
    if m == 1 or max_iter <= 2:
        return _anderson_out(f1, jnp.int32(min(2, max_iter)), r1, hist, record, shape, dtype)

    def cond(c):
        _, _, k, res, _, _ = c
        return (k < max_iter) & (res >= tol)

    def body(c):
        X, F, k, _, last, hist = c
        n = jnp.minimum(k, m)
        valid = (jnp.arange(m) < n).astype(jnp.float32)
        G = (F - X) * valid[None, :, None]
        gram = jnp.einsum("bif,bjf->bij", G, G)
        scale = jnp.max(jnp.diagonal(gram, axis1=1, axis2=2), axis=1)[:, None, None] + 1e-30
        gram = gram + lam * scale * jnp.eye(m)[None]          # Tikhonov, relative to the Gram scale
        gram = gram * (valid[:, None] * valid[None, :])[None] + jnp.diag(1.0 - valid)[None]
        H = jnp.zeros((batch, m + 1, m + 1), jnp.float32)
        H = H.at[:, 0, 1:].set(valid).at[:, 1:, 0].set(valid).at[:, 1:, 1:].set(gram)
        y = jnp.zeros((batch, m + 1), jnp.float32).at[:, 0].set(1.0)
        alpha = jnp.linalg.solve(H, y[..., None])[:, 1:, 0] * valid[None]
        x_new = beta * jnp.einsum("bi,bif->bf", alpha, F) + (1 - beta) * jnp.einsum("bi,bif->bf", alpha, X)
        if nonnegative:   # safeguard: an example whose extrapolation leaves the orthant takes f(x_k)
            outside = jnp.any(x_new < 0.0, axis=1, keepdims=True)
            x_new = jnp.where(outside, last, x_new)
        f_new = flat(f(x_new.reshape(shape).astype(dtype)))
        slot = k % m
        X, F = X.at[:, slot].set(x_new), F.at[:, slot].set(f_new)
        res = res_of(f_new, x_new)
        if record:
            hist = hist.at[k].set(res)
        return X, F, k + 1, res, f_new, hist

    init = (X, F, jnp.int32(2), r1, flat(f1), hist)
    _, _, k, res, last, hist = jax.lax.while_loop(cond, body, init)
    return _anderson_out(last.reshape(shape).astype(dtype), k, res, hist, record, shape, dtype)


def _anderson_out(z, k, res, hist, record, shape, dtype):
    z = z.reshape(shape).astype(dtype)
    return (z, k, res, hist) if record else (z, k, res)


def find_fixed_point(f: Callable[[jax.Array], jax.Array], z0: jax.Array, solver: Solver = Solver(),
                     record: bool = False, f_z0: jax.Array | None = None, with_residual: bool = False):
    """`(z, iterations, residual[, history])` with the solver's method (see `iterate`, `anderson`);
    `f_z0`: f(z0) when known without applying f (the first iteration then skips f); `with_residual`:
    f returns (f(z), its relative residual), which plain iteration uses (Anderson drops it)."""
    solver.validate()
    if solver.method == "iteration":
        return iterate(f, z0, tol=solver.tol, max_iter=solver.max_iter, record=record, f_z0=f_z0,
                       with_residual=with_residual)
    step = (lambda z: f(z)[0]) if with_residual else f   # Anderson computes its own residuals
    return anderson(step, z0, tol=solver.tol, max_iter=solver.max_iter, memory=solver.memory,
                    beta=solver.beta, lam=solver.lam, nonnegative=solver.nonnegative, record=record, f_z0=f_z0)


def _first_iterate(map_at_zero, params, x):
    return None if map_at_zero is None else map_at_zero(params, x)


def _fused_step(f, params, x):
    """`f.step_with_residual(params, x)`: z -> (f(z), its relative residual) in one call, or None."""
    hook = getattr(f, "step_with_residual", None)
    return None if hook is None else hook(params, x)


@functools.partial(jax.custom_vjp, nondiff_argnums=(0, 1, 2))
def _deq(f, solver, map_at_zero, params, x, probe):
    fused = _fused_step(f, params, x)
    step = fused if fused is not None else (lambda z: f(params, z, x))
    z, k, r = find_fixed_point(step, jnp.zeros_like(x), solver, f_z0=_first_iterate(map_at_zero, params, x),
                               with_residual=fused is not None)
    return z, k, r


def _deq_fwd(f, solver, map_at_zero, params, x, probe):
    z, k, r = _deq(f, solver, map_at_zero, params, x, probe)
    return (z, k, r), (params, x, z)


def _adjoint(f, solver, params, x, z, g):
    """u = J^T u + g from u0 = g, J = d f(params, z, x) / d z at the given z: `(u, iterations, residual)`.

    The map is `f.adjoint_map(params, z, x, g)` when f carries one that returns a function
    u -> (J^T u + g, its relative residual) (a fused form, e.g. one kernel call), else `jax.vjp` of
    f plus g."""
    adjoint_map = getattr(f, "adjoint_map", None)
    fused = None if adjoint_map is None else adjoint_map(params, z, x, g)
    # The adjoint u has no sign constraint: Anderson's orthant guard is for the forward map only.
    adjoint_solver = solver._replace(nonnegative=False)
    if fused is not None:
        return find_fixed_point(fused, g, adjoint_solver, with_residual=True)
    _, vjp_z = jax.vjp(lambda zz: f(params, zz, x), z)
    return find_fixed_point(lambda uu: vjp_z(uu)[0] + g, g, adjoint_solver)


def _probe_cotangent(k, r):
    return jnp.stack([k.astype(jnp.float32), r.astype(jnp.float32)])


def _deq_bwd(f, solver, map_at_zero, residuals, cotangents):
    params, x, z = residuals
    u, k, r = _adjoint(f, solver, params, x, z, cotangents[0])
    _, vjp_px = jax.vjp(lambda p, xx: f(p, z, xx), params, x)
    d_params, d_x = vjp_px(u)
    return d_params, d_x, _probe_cotangent(k, r)


_deq.defvjp(_deq_fwd, _deq_bwd)


@functools.partial(jax.custom_vjp, nondiff_argnums=(0, 1))
def adjoint_hook(f, solver, y, params, x, probe):
    """The identity on y = f(params, z*, x) whose backward replaces the cotangent g of y by the
    adjoint solution u = J^T u + g, J = d f / d z at y (the official code's `backward_hook` on its
    output f(z*): the Jacobian is taken at the output, z0 = f(z*).detach()). params and x get no
    cotangent here (they get theirs through the differentiable f(params, z*, x) that made y)."""
    return y


def _adjoint_hook_fwd(f, solver, y, params, x, probe):
    return y, (y, params, x)


def _adjoint_hook_bwd(f, solver, residuals, g):
    y, params, x = residuals
    u, k, r = _adjoint(f, solver, params, x, y, g)
    zeros = lambda t: jax.tree_util.tree_map(jnp.zeros_like, t)
    return u, zeros(params), zeros(x), _probe_cotangent(k, r)


adjoint_hook.defvjp(_adjoint_hook_fwd, _adjoint_hook_bwd)

OUTPUTS = ("z", "fz")


def check_output(output: str) -> str:
    if output not in OUTPUTS:
        raise ValueError(f"output={output!r}; accepted: {OUTPUTS} (z*: the fixed point; fz: f(z*), the official code's)")
    return output


def official_output(f, solver, params, x, z, probe):
    """The official forward's output f(params, z*, x) from a fixed point z* found without gradient:
    one differentiable application of f at stop_gradient(z*), its cotangent replaced by the adjoint
    solution (`adjoint_hook`). At an exact fixed point the gradient equals z*'s implicit gradient;
    it differs by O(forward residual) (the Jacobian is taken at f(z*), the value is one step on)."""
    y = f(params, jax.lax.stop_gradient(z), x)
    return adjoint_hook(f, solver, y, params, x, probe)


def deq_solve(f: Callable[[Any, jax.Array, jax.Array], jax.Array], params: Any, x: jax.Array, *,
              solver: Solver = Solver(), probe: jax.Array | None = None,
              output: str = "z", map_at_zero: Callable[[Any, jax.Array], jax.Array] | None = None,
              ) -> tuple[jax.Array, DEQStats]:
    """The fixed point z* = f(params, z*, x) from z0 = 0, with the implicit gradient.

    Args:
      f: `(params, z, x) -> z'`, pure; z and x have the same shape [batch, ...].
      params: a pytree (differentiable).
      x: the injection [batch, ...] (differentiable).
      solver: a `Solver` (static).
      probe: optional float32 [2]; its cotangent is [backward iterations, backward residual].
      output: 'z' returns z* (differentiated by `_deq`'s custom_vjp); 'fz' returns f(z*), one more
        application of f, as the official forward does (`official_output`).
      map_at_zero: optional `(params, x) -> f(params, 0, x)` in closed form (a map act(W z + x) gives
        act(x)): the solve's first iteration, from z0 = 0, uses it instead of applying f, which saves
        one product with W per solve (a convolution per block in the conv networks). A static
        argument of the custom VJP, like `f`. The result is the same as without it wherever W z at
        z = 0 is exactly 0 (finite W).
    Returns:
      `(z* or f(z*), DEQStats(iterations, residual))` of the forward solve.
    """
    solver = solver.validate()
    check_output(output)
    probe = jnp.zeros((2,), jnp.float32) if probe is None else probe
    if probe.shape != (2,):
        raise ValueError(f"deq_solve: probe must have shape (2,), got {probe.shape}")
    if output == "fz":
        sp, sx = jax.lax.stop_gradient((params, x))
        z, k, r = find_fixed_point(lambda zz: f(sp, zz, sx), jnp.zeros_like(x), solver,
                                   f_z0=_first_iterate(map_at_zero, sp, sx))
        return official_output(f, solver, params, x, z, probe), DEQStats(k, r)
    z, k, r = _deq(f, solver, map_at_zero, params, x, probe)
    return z, DEQStats(k, r)


def unrolled_solve(f, params, x, num_steps: int) -> jax.Array:
    """`num_steps` applications of f from z0 = 0, differentiated by plain backprop (the reference
    the implicit gradient is checked against, and the weight-tied explicit network's forward)."""
    z = jnp.zeros_like(x)
    for _ in range(num_steps):
        z = f(params, z, x)
    return z


def geometric_rate(residuals, skip: int = 1) -> float:
    """The fitted rate q of residual_k ~ C q^k: exp of the least-squares slope of log residual vs k,
    over the finite, positive residuals after the first `skip`."""
    import numpy as np
    r = np.asarray(residuals, np.float64)
    k = np.arange(len(r))
    ok = np.isfinite(r) & (r > 0) & (k >= skip)
    if ok.sum() < 2:
        raise ValueError(f"geometric_rate needs at least 2 positive residuals after skip={skip}, got {ok.sum()}")
    slope = np.polyfit(k[ok], np.log(r[ok]), 1)[0]
    return float(np.exp(slope))
