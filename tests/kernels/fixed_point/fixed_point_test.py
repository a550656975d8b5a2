"""kernels.fixed_point: the Pallas fixed-point kernels (interpret mode on CPU) against the jnp
reference, and the implicit gradient against unrolled differentiation and finite differences.

Data as in pcDEQ: nonnegative w (uniform * scale / n, or the pcDEQ init uniform * sqrt(1e-4) /
sqrt(2n)) and strictly positive injections x = softplus(5 v) / 5, v ~ N(0, 1). The "slow" scale
1.8 / n puts the row sums of w near 0.9, so the contraction is near 0.9 * max act' and the solves
take tens of iterations; "fast" (0.5 / n) and "init" take a handful.

Tolerances. Kernel and reference run the same float32 iteration with different summation orders
(the kernel's dot is over padded tiles, the reference's a batched dot; the norms differ likewise),
so each iterate differs by a few ulp (~1e-7 relative) per step. The error of a contraction with
factor c settles at (per-step error) / (1 - c), <= ~1e-6 for c <= 0.9 and |z| < 1: hence
Z_ATOL = 2e-6. A residual ||z_{k+1} - z_k|| / ||z_{k+1}|| then moves by at most about
2 Z_ATOL (both iterates), so residuals are compared with atol = 2 * Z_ATOL. Iteration counts must
be equal (a residual this close to tol would be needed to flip one; none is at these seeds).
Measured in interpret mode on CPU (jax 0.10.2): max |z_kernel - z_ref| 2.4e-7 (most cases
bit-identical), adjoint 1.6e-7 (relative to max |u|), residuals 1.6e-8; every iteration count
equal, the closest final residual 4.5% away from tol. Gradients (relative norm error): vs 300
unrolled steps <= 6.2e-7 (bound 1e-4), vs float64 central differences <= 9e-8 for the float64
'xla' path (bound 1e-6) and <= 1.1e-6 for the float32 kernels (bound 1e-4).
"""

from __future__ import annotations

import dataclasses
import functools

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from kernels.fixed_point import (ACTIVATIONS, BlockSizes, FixedPointResult, adjoint_pallas, adjoint_reference,
                                 fixed_point, fixed_point_pallas, fixed_point_reference, iterate)

Z_ATOL = 2e-6
RES_ATOL = 2 * Z_ATOL


@dataclasses.dataclass(frozen=True)
class Case:
    n: int
    batch: int
    activation: str
    block_batch: int | None = None
    scale: str = "fast"  # "fast" (0.5 / n), "slow" (1.8 / n) or "init" (the pcDEQ init)
    tol: float = 1e-4

    def __str__(self):
        return f"n{self.n}_b{self.batch}_{self.activation}_bb{self.block_batch}_{self.scale}_tol{self.tol:g}"


def _problem(n, batch, scale="fast", seed=0, dtype=np.float32):
    rng = np.random.default_rng(seed)
    u = rng.uniform(size=(n, n))
    w = {"fast": u * 0.5 / n, "slow": u * 1.8 / n, "init": u * np.sqrt(1e-4) / np.sqrt(2 * n)}[scale]
    v = rng.standard_normal((batch, n))
    x = np.logaddexp(0.0, 5.0 * v) / 5.0  # softplus(v, beta=5), > 0
    g = rng.standard_normal((batch, n))
    return (jnp.asarray(w.astype(dtype)), jnp.asarray(x.astype(dtype)), jnp.asarray(g.astype(dtype)))


# Jitted once per static configuration: eager dispatch would compile every primitive separately.
@functools.partial(jax.jit, static_argnames=("activation", "tol", "max_iter", "block_batch", "kernel"))
def _solve_pair(w, x, g, *, activation, tol, max_iter, block_batch, kernel):
    """Forward and adjoint (at the reference's z) by the kernels (kernel=True) or the reference."""
    kw = dict(activation=activation, tol=tol, max_iter=max_iter, block_batch=block_batch)
    if kernel:
        fwd = fixed_point_pallas(w, x, interpret=True, **kw)
    else:
        fwd = fixed_point_reference(w, x, **kw)
    z_ref = fixed_point_reference(w, x, **kw)[0]
    if kernel:
        adj = adjoint_pallas(w, x, z_ref, g, interpret=True, **kw)
    else:
        adj = adjoint_reference(w, x, z_ref, g, **kw)
    return fwd, adj


# Every (n, batch) of n in {16, 80, 128} x batch in {8, 64}, each activation three times, whole-batch
# and split groups, three weight scales; plus padding of both tile axes (block_batch 3, n 20).
CASES = [
    Case(16, 8, "tanh"),
    Case(16, 64, "softsign", 16, "slow"),
    Case(80, 8, "relu6", 8, "slow"),
    Case(80, 64, "sigmoid", 32),
    Case(128, 8, "tanh", None, "init"),
    Case(128, 64, "relu6", 64),
    Case(16, 64, "sigmoid", 8, "slow", tol=1e-5),
    Case(80, 64, "tanh", 16, "slow"),
    Case(128, 64, "softsign", 32, "fast", tol=1e-6),
    Case(80, 8, "sigmoid", None, "init"),
    Case(16, 8, "relu6", 8, "init"),
    Case(20, 12, "softsign", 3, "slow"),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_kernels_match_reference(case: Case, interpret=True):
    w, x, g = _problem(case.n, case.batch, case.scale)
    kw = dict(activation=case.activation, tol=case.tol, max_iter=200, block_batch=case.block_batch)
    (zk, ik, rk), (uk, jk, sk) = _solve_pair(w, x, g, kernel=True, **kw)
    (zr, ir, rr), (ur, jr, sr) = _solve_pair(w, x, g, kernel=False, **kw)
    groups = 1 if case.block_batch is None else case.batch // case.block_batch
    chex.assert_shape((zk, uk, ik, rk, jk, sk), ((case.batch, case.n),) * 2 + ((groups,),) * 4)
    assert ik.dtype == jk.dtype == jnp.int32 and rk.dtype == sk.dtype == jnp.float32
    assert zk.dtype == uk.dtype == jnp.float32
    chex.assert_tree_all_finite((zk, uk, rk, sk))
    # the solves converged (not stopped by max_iter) and took more than one step
    assert np.all(np.asarray(ir) > 1) and np.all(np.asarray(ir) < 200) and np.all(np.asarray(rr) < case.tol)
    np.testing.assert_array_equal(ik, ir)
    np.testing.assert_allclose(zk, zr, rtol=0, atol=Z_ATOL)
    np.testing.assert_allclose(rk, rr, rtol=0, atol=RES_ATOL * case.tol / 1e-4)
    np.testing.assert_array_equal(jk, jr)
    np.testing.assert_allclose(uk, ur, rtol=0, atol=Z_ATOL * max(1.0, float(jnp.max(jnp.abs(ur)))))
    np.testing.assert_allclose(sk, sr, rtol=0, atol=RES_ATOL * case.tol / 1e-4)


def test_groups_stop_independently():
    """block_batch splits the batch into groups with their own stop: each group equals `iterate` on
    its rows alone (a vmapped while_loop freezes a finished group), and groups differ in count."""
    n, batch, bb = 32, 48, 16
    w, x, _ = _problem(n, batch, "slow", seed=3)
    x = x * jnp.repeat(jnp.asarray([0.05, 1.0, 3.0], jnp.float32), bb)[:, None]  # different speeds
    # each group alone, by `iterate` (one compilation: the rows are an argument)
    alone = jax.jit(lambda rows_x, m, t: iterate(
        lambda zz: jnp.tanh(jnp.matmul(zz, w, precision="highest") + rows_x), jnp.zeros((bb, n)), tol=t,
        max_iter=m), static_argnums=(1, 2))
    groups = [alone(x[gi * bb:(gi + 1) * bb], 200, 1e-4) for gi in range(3)]
    for kernel in (False, True):
        fn = (functools.partial(fixed_point_pallas, interpret=True) if kernel else fixed_point_reference)
        z, its, res = jax.jit(functools.partial(fn, activation="tanh", block_batch=bb))(w, x)
        assert len(set(np.asarray(its).tolist())) == 3, its
        for gi, (z_alone, k_alone, r_alone) in enumerate(groups):
            rows = slice(gi * bb, (gi + 1) * bb)
            assert int(its[gi]) == int(k_alone)
            np.testing.assert_allclose(z[rows], z_alone, rtol=0, atol=Z_ATOL)
            np.testing.assert_allclose(res[gi], r_alone, rtol=0, atol=RES_ATOL)
            if int(k_alone) < int(jnp.max(its)):  # frozen: 100x closer to its own stop than to more steps
                z_more = alone(x[rows], int(jnp.max(its)), 1e-30)[0]
                assert (float(jnp.max(jnp.abs(z[rows] - z_alone)))
                        < 0.01 * float(jnp.max(jnp.abs(z_more - z_alone))))
    # The whole batch as one group (the official criterion): its norms are dominated by the large
    # rows, so it stops before the small-x rows (the slowest to converge here) meet tol on their own.
    _, its_one, _ = jax.jit(functools.partial(fixed_point_reference, activation="tanh"))(w, x)
    assert int(jnp.min(its)) < int(its_one[0]) < int(jnp.max(its)), (its_one, its)


def test_max_iter_stops_the_loop():
    w, x, g = _problem(80, 64, "slow")
    kw = dict(activation="softsign", tol=1e-12, max_iter=3, block_batch=16)
    for kernel in (False, True):
        (z, its, res), (u, jts, _) = _solve_pair(w, x, g, kernel=kernel, **kw)
        np.testing.assert_array_equal(its, 3)
        np.testing.assert_array_equal(jts, 3)
        z3 = jnp.zeros_like(x)
        for _ in range(3):
            z3 = jax.nn.soft_sign(jnp.matmul(z3, w, precision="highest") + x)
        np.testing.assert_allclose(z, z3, rtol=0, atol=1e-6)
        assert np.all(np.asarray(res) > 1e-12)


def test_iterate_with_a_known_first_image_is_the_same_loop():
    # f_z0 = f(z0) replaces the first application of f: iterates, counts, residuals and history must
    # be those of the plain loop, bit for bit (the same float32 operations in the same order).
    w, x, _ = _problem(80, 64, "slow")
    f = lambda z: jax.nn.soft_sign(jnp.matmul(z, w, precision="highest") + x)
    z0 = jnp.zeros_like(x)
    for max_iter in (1, 2, 200):
        plain = iterate(f, z0, tol=1e-5, max_iter=max_iter, record=True)
        known = iterate(f, z0, tol=1e-5, max_iter=max_iter, record=True, f_z0=jax.nn.soft_sign(x))
        for a, b in zip(plain, known):
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert int(plain[1]) > 2   # the loop ran past its first iteration
    # It is f_z0 that the first iteration returns (f is not applied): a planted value comes back.
    planted = jnp.full_like(x, 0.25)
    z1, k1, r1 = iterate(f, z0, max_iter=1, f_z0=planted)
    np.testing.assert_array_equal(np.asarray(z1), np.asarray(planted))
    assert int(k1) == 1 and float(r1) == pytest.approx(1.0, abs=1e-4)
    with pytest.raises(ValueError, match="f_z0 must have z0's shape"):
        iterate(f, z0, f_z0=x[:2])


def test_iterate_with_the_residual_from_the_map_uses_it():
    # with_residual: f returns (f(z), residual). When that residual is relative_residual's, the loop is
    # the plain one bit for bit; the stop rule then reads the given residual (a planted constant below
    # the tolerance stops after one iteration, one above it runs to max_iter).
    from kernels.fixed_point.reference import relative_residual
    w, x, _ = _problem(80, 64, "slow")
    f = lambda z: jax.nn.soft_sign(jnp.matmul(z, w, precision="highest") + x)
    z0 = jnp.zeros_like(x)
    plain = iterate(f, z0, tol=1e-5, max_iter=200, record=True)
    fused = iterate(lambda z: (f(z), relative_residual(f(z), z)), z0, tol=1e-5, max_iter=200, record=True,
                    with_residual=True)
    for a, b in zip(plain, fused):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert int(plain[1]) > 2
    low = iterate(lambda z: (f(z), jnp.float32(1e-9)), z0, tol=1e-5, max_iter=50, with_residual=True)
    high = iterate(lambda z: (f(z), jnp.float32(1.0)), z0, tol=1e-5, max_iter=50, with_residual=True)
    assert int(low[1]) == 1 and float(low[2]) == pytest.approx(1e-9)
    assert int(high[1]) == 50


@pytest.mark.parametrize("implementation", ["xla", "pallas"])
def test_solution_is_a_fixed_point(implementation):
    w, x, _ = _problem(80, 64, "slow", seed=5)
    for activation in ACTIVATIONS:
        r = fixed_point(w, x, activation=activation, implementation=implementation, block_sizes=BlockSizes(16))
        assert isinstance(r, FixedPointResult)
        z = r.z.reshape(4, 16, 80)
        fz = ACTIVATIONS[activation](jnp.matmul(r.z, w, precision="highest") + x).reshape(4, 16, 80)
        # one more application moves each group by less than tol (the contraction shrinks the last step)
        rel = jnp.linalg.norm((fz - z).reshape(4, -1), axis=1) / jnp.linalg.norm(fz.reshape(4, -1), axis=1)
        assert np.all(np.asarray(rel) < 1e-4), (activation, rel)
        assert np.all(np.asarray(r.residual) < 1e-4) and np.all(np.asarray(r.iterations) < 200)
        assert float(jnp.min(r.z)) > 0.0  # positive injection, nonnegative w: z* > 0 (pcDEQ)


# --- gradients ----------------------------------------------------------------------------------

def _unrolled_grads(w, x, c, activation, steps=300):
    act = ACTIVATIONS[activation]

    def loss(w, x):
        z = jax.lax.fori_loop(0, steps, lambda _, z: act(jnp.matmul(z, w, precision="highest") + x),
                              jnp.zeros_like(x))
        return jnp.sum(c * z)

    return jax.jit(jax.grad(loss, argnums=(0, 1)))(w, x)


def _api_grads(w, x, c, *, activation, implementation, tol, max_iter, block_batch):
    def loss(w, x, probe):
        r = fixed_point(w, x, activation=activation, tol=tol, max_iter=max_iter, implementation=implementation,
                        block_sizes=BlockSizes(block_batch), probe=probe)
        return jnp.sum(c * r.z)

    return jax.jit(jax.grad(loss, argnums=(0, 1, 2)))(w, x, jnp.zeros((2,), jnp.float32))


def _rel(a, b):
    return float(jnp.linalg.norm(jnp.ravel(a - b)) / jnp.linalg.norm(jnp.ravel(b)))


@pytest.mark.parametrize("activation", sorted(ACTIVATIONS))
def test_implicit_grad_matches_unrolled(activation):
    """jax.grad through fixed_point (both implementations) = backprop through 300 plain iterations."""
    w, x, c = _problem(80, 32, "slow", seed=7)
    want = _unrolled_grads(w, x, c, activation)
    for implementation in ("xla", "pallas"):
        dw, dx, _ = _api_grads(w, x, c, activation=activation, implementation=implementation, tol=1e-7,
                               max_iter=1000, block_batch=16)
        assert _rel(dw, want[0]) < 1e-4 and _rel(dx, want[1]) < 1e-4, (implementation, _rel(dw, want[0]),
                                                                       _rel(dx, want[1]))


def _np_fixed_point(w, x, activation, steps=400):
    act = {"tanh": np.tanh, "softsign": lambda v: v / (1 + np.abs(v)), "relu6": lambda v: np.clip(v, 0, 6),
           "sigmoid": lambda v: 1 / (1 + np.exp(-v))}[activation]
    z = np.zeros_like(x)
    for _ in range(steps):  # contraction <= 0.9: 400 steps reach float64 precision
        z = act(z @ w + x)
    return z


def _finite_differences(w, x, c, activation, eps=1e-5):
    loss = lambda w, x: float(np.sum(c * _np_fixed_point(w, x, activation)))  # noqa: E731
    dw, dx = np.zeros_like(w), np.zeros_like(x)
    for grad, arr, is_w in ((dw, w, True), (dx, x, False)):
        for idx in np.ndindex(arr.shape):
            plus, minus = arr.copy(), arr.copy()
            plus[idx] += eps
            minus[idx] -= eps
            args_p = (plus, x) if is_w else (w, plus)
            args_m = (minus, x) if is_w else (w, minus)
            grad[idx] = (loss(*args_p) - loss(*args_m)) / (2 * eps)
    return dw, dx


@pytest.mark.parametrize("activation", sorted(ACTIVATIONS))
def test_implicit_grad_matches_finite_differences(activation):
    """Central differences of a float64 numpy solver (n=5, batch 4: every entry of w and x) against
    the implicit gradient: 'xla' in float64 (jax.enable_x64) and the kernels in float32."""
    w, x, c = (np.asarray(a, np.float64) for a in _problem(5, 4, "slow", seed=11, dtype=np.float64))
    want_w, want_x = _finite_differences(w, x, c, activation)
    with jax.enable_x64(True):
        dw, dx, _ = _api_grads(jnp.asarray(w), jnp.asarray(x), jnp.asarray(c), activation=activation,
                               implementation="xla", tol=1e-30, max_iter=400, block_batch=2)
        assert dw.dtype == dx.dtype == jnp.float64
        # float64 solves; only the stopping test is float32 (it stops once float32 iterates agree)
        assert _rel(dw, want_w) < 1e-6 and _rel(dx, want_x) < 1e-6, (_rel(dw, want_w), _rel(dx, want_x))
    dw, dx, _ = _api_grads(*(jnp.asarray(a, jnp.float32) for a in (w, x, c)), activation=activation,
                           implementation="pallas", tol=1e-7, max_iter=400, block_batch=2)
    assert _rel(dw, want_w) < 1e-4 and _rel(dx, want_x) < 1e-4, (_rel(dw, want_w), _rel(dx, want_x))


@pytest.mark.parametrize("implementation", ["xla", "pallas"])
def test_probe_cotangent_is_the_backward_solve(implementation):
    w, x, c = _problem(80, 64, "slow", seed=13)
    kw = dict(activation="tanh", tol=1e-5, max_iter=200, block_batch=16)
    _, _, probe = _api_grads(w, x, c, implementation=implementation, **kw)
    z = fixed_point_reference(w, x, **kw)[0]
    _, its, res = jax.jit(functools.partial(adjoint_reference, **kw))(w, x, z, c)
    np.testing.assert_allclose(probe[0], np.mean(np.asarray(its, np.float64)), rtol=0, atol=1e-6)
    np.testing.assert_allclose(probe[1], np.max(np.asarray(res)), rtol=0, atol=RES_ATOL * 0.1)
    assert 1 < float(probe[0]) < 200 and 0 < float(probe[1]) < 1e-5
    # the probe changes nothing in the forward pass
    a = fixed_point(w, x, implementation=implementation, block_sizes=BlockSizes(16), activation="tanh", tol=1e-5)
    b = fixed_point(w, x, implementation=implementation, block_sizes=BlockSizes(16), activation="tanh", tol=1e-5,
                    probe=jnp.ones((2,), jnp.float32))
    chex.assert_trees_all_equal(a, b)


# --- the API ------------------------------------------------------------------------------------

def test_api_implementations_agree_with_default_blocks():
    w, x, _ = _problem(16, 256, "slow", seed=17)
    r_xla = fixed_point(w, x, activation="sigmoid", implementation="xla")
    r_pallas = fixed_point(w, x, activation="sigmoid", implementation="pallas")
    r_auto = fixed_point(w, x, activation="sigmoid")  # CPU: 'auto' is 'xla'
    chex.assert_shape((r_xla.iterations, r_pallas.iterations), ((4,), (4,)))  # 256 rows: groups of 64
    np.testing.assert_array_equal(r_xla.iterations, r_pallas.iterations)
    np.testing.assert_allclose(r_xla.z, r_pallas.z, rtol=0, atol=Z_ATOL)
    chex.assert_trees_all_equal(r_auto, r_xla)


def test_default_block_sizes():
    assert [BlockSizes.get_default(b).block_batch for b in (1, 8, 64, 96, 1024, 100, 1000)] == \
        [1, 8, 64, 32, 64, 100, 8]
    assert BlockSizes().block_batch == 64


def test_dtypes():
    w, x, _ = _problem(16, 8)
    r = fixed_point(w.astype(jnp.bfloat16), x.astype(jnp.bfloat16), activation="tanh", implementation="pallas")
    assert r.z.dtype == jnp.bfloat16 and r.residual.dtype == jnp.float32
    ref = fixed_point(w, x, activation="tanh", implementation="xla")
    # bfloat16 inputs are upcast (exactly) and solved in float32; only the inputs and output are rounded
    ref_bf = fixed_point(w.astype(jnp.bfloat16).astype(jnp.float32), x.astype(jnp.bfloat16).astype(jnp.float32),
                         activation="tanh", implementation="xla")
    np.testing.assert_allclose(r.z.astype(jnp.float32), ref_bf.z, rtol=2.0 ** -8, atol=Z_ATOL)  # one bf16 rounding
    assert float(jnp.max(jnp.abs(r.z.astype(jnp.float32) - ref.z))) < 2e-2
    with jax.enable_x64(True):
        r64 = fixed_point(w.astype(jnp.float64), x.astype(jnp.float64), activation="tanh", implementation="pallas")
        assert r64.z.dtype == jnp.float64  # computed in float32 by the kernel
        np.testing.assert_allclose(r64.z, ref.z, rtol=0, atol=Z_ATOL)


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(w=np.ones((4, 5))), ValueError, r"square \[n, n\].*\(4, 5\)"),
    (dict(x=np.ones((8, 5))), ValueError, r"x must be \[batch, n\] = \[batch, 16\].*\(8, 5\)"),
    (dict(x=np.ones((8, 16), np.int32)), TypeError, r"x must have a float dtype.*int32"),
    (dict(activation="relu"), ValueError, r"activation='relu'; accepted: \['relu6', 'sigmoid'"),
    (dict(tol=0.0), ValueError, r"tol=0.0 must be a finite number > 0"),
    (dict(tol=-1e-4), ValueError, r"tol=-0.0001"),
    (dict(max_iter=0), ValueError, r"max_iter=0 must be an int >= 1"),
    (dict(max_iter=2.5), ValueError, r"max_iter=2.5"),
    (dict(block_sizes=BlockSizes(3)), ValueError, r"batch=8 must be a multiple of block_batch=3"),
    (dict(block_sizes=(4,)), TypeError, r"block_sizes must be a BlockSizes"),
    (dict(probe=np.zeros(3, np.float32)), ValueError, r"probe must be a float32 array of shape \(2,\)"),
    (dict(implementation="cuda"), ValueError, r"implementation='cuda'; accepted"),
])
def test_bad_inputs(kwargs, error, match):
    args = dict(w=np.full((16, 16), 0.01, np.float32), x=np.ones((8, 16), np.float32), activation="tanh")
    args.update(kwargs)
    args = {k: jnp.asarray(v) if isinstance(v, np.ndarray) else v for k, v in args.items()}
    with pytest.raises(error, match=match):
        fixed_point(args.pop("w"), args.pop("x"), **args)


def test_kernel_and_reference_check_shapes():
    w, x, g = _problem(16, 8)
    with pytest.raises(ValueError, match="BlockSizes.block_batch=0 must be a positive int"):
        BlockSizes(0)
    with pytest.raises(ValueError, match="batch=8 must be a multiple of block_batch=3"):
        fixed_point_pallas(w, x, activation="tanh", block_batch=3, interpret=True)
    with pytest.raises(ValueError, match="batch=8 must be a multiple of block_batch=5"):
        fixed_point_reference(w, x, activation="tanh", block_batch=5)
    with pytest.raises(ValueError, match=r"g_out \(8, 4\) must have x's shape \(8, 16\)"):
        adjoint_pallas(w, x, x, g[:, :4], activation="tanh", interpret=True)
    with pytest.raises(ValueError, match=r"w \[n, n\] and x \[batch, n\]; got w \(16, 16\), x \(8, 4\)"):
        fixed_point_pallas(w, x[:, :4], activation="tanh", interpret=True)
    with pytest.raises(ValueError, match="activation='gelu'"):
        adjoint_reference(w, x, x, g, activation="gelu")


LOWERED = {"cuda": "__gpu$xla.gpu.triton", "tpu": "tpu_custom_call"}


@pytest.mark.parametrize("platform", ["cuda", "tpu"])
@pytest.mark.parametrize("n, batch, block_batch", [(20, 12, 3), (32, 16, None)], ids=["padded", "unpadded"])
def test_kernels_lower_for_gpu_and_tpu(platform, n, batch, block_batch):
    """Both kernels lower (not compile: no device here) through Triton for CUDA and Mosaic for TPU,
    padded tiles included: every op in them (while_loop, dots, full reductions, the [1, 1] scalar
    stores) has a lowering rule on both backends, and every block passes Mosaic's tiling check."""
    w, x = jnp.zeros((n, n)), jnp.zeros((batch, n))
    for fn, args in ((fixed_point_pallas, (w, x)), (adjoint_pallas, (w, x, x, x))):
        lowered = jax.jit(functools.partial(fn, activation="sigmoid", block_batch=block_batch, backend=platform)
                          ).trace(*args).lower(lowering_platforms=(platform,))
        assert LOWERED[platform] in lowered.as_text()


@pytest.mark.parametrize("platform", ["cuda", "tpu", "cpu"])
def test_auto_selects_the_kernel_per_backend(platform):
    """implementation='auto' with backend=: the Pallas kernels for TPU and GPU (forward and adjoint,
    seen in the lowered program), XLA on CPU; a weight too big for a Triton dot's shared memory
    keeps XLA on GPU."""
    def loss(w, x, n=16):
        return fixed_point(w, x, activation="tanh", backend=platform).z.sum()

    for n, kernel in ((16, platform != "cpu"), (512, platform == "tpu")):
        w, x = jnp.zeros((n, n)), jnp.zeros((8, n))
        text = jax.jit(jax.grad(loss, argnums=(0, 1))).trace(w, x).lower(
            lowering_platforms=(platform,)).as_text()
        calls = text.count(LOWERED.get(platform, "no kernel on cpu"))
        assert calls == (2 if kernel else 0), (platform, n, calls)


@pytest.mark.parametrize("case", [Case(20, 12, "softsign", 3, "init"),   # padded tiles, 4 groups
                                  pytest.param(Case(20, 12, "softsign", 3, "slow"), marks=pytest.mark.slow),
                                  pytest.param(Case(80, 64, "sigmoid", 32), marks=pytest.mark.slow)], ids=str)
def test_kernels_match_reference_in_the_tpu_interpreter(case):
    """Pallas' TPU interpreter (VMEM/HBM, DMAs and the grid simulated; races detected, memory never
    written reads as NaN): the same values as the generic interpreter's, padded tiles included."""
    from kernels.common import tpu_interpret_params

    w, x, g = _problem(case.n, case.batch, case.scale)
    kw = dict(activation=case.activation, tol=case.tol, max_iter=200, block_batch=case.block_batch)
    params = tpu_interpret_params()
    zk, ik, rk = fixed_point_pallas(w, x, interpret=params, **kw)
    zr, ir, rr = fixed_point_reference(w, x, **kw)
    np.testing.assert_array_equal(ik, ir)
    np.testing.assert_allclose(zk, zr, rtol=0, atol=Z_ATOL)
    np.testing.assert_allclose(rk, rr, rtol=0, atol=RES_ATOL * case.tol / 1e-4)
    uk, jk, _ = adjoint_pallas(w, x, zr, g, interpret=params, **kw)
    ur, jr, _ = adjoint_reference(w, x, zr, g, **kw)
    np.testing.assert_array_equal(jk, jr)
    np.testing.assert_allclose(uk, ur, rtol=0, atol=Z_ATOL * max(1.0, float(jnp.max(jnp.abs(ur)))))
    # through the public op and its custom VJP
    grads = [jax.grad(lambda w, x: fixed_point(w, x, activation=case.activation, implementation=impl,
                                               interpret=params if impl == "pallas" else None,
                                               block_sizes=None if case.block_batch is None
                                               else BlockSizes(case.block_batch)).z.sum(), argnums=(0, 1))(w, x)
             for impl in ("pallas", "xla")]
    for a, b in zip(*grads):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-5 * float(jnp.max(jnp.abs(b))))


# --- compiled kernels (GPU / TPU only) ------------------------------------------------------------

@pytest.mark.gpu
class TestCompiled:
    """The same comparisons with the compiled kernels (Triton on GPU, Mosaic on TPU); never on CPU."""

    @pytest.mark.parametrize("case", CASES + [Case(128, 1024, "tanh", 64, "slow"), Case(256, 64, "relu6", 64)],
                             ids=str)
    def test_compiled_matches_reference(self, case):
        w, x, g = _problem(case.n, case.batch, case.scale)
        kw = dict(activation=case.activation, tol=case.tol, max_iter=200, block_batch=case.block_batch)
        zr, ir, rr = jax.jit(functools.partial(fixed_point_reference, **kw))(w, x)
        zk, ik, rk = jax.jit(functools.partial(fixed_point_pallas, interpret=False, **kw))(w, x)
        np.testing.assert_array_equal(ik, ir)
        np.testing.assert_allclose(zk, zr, rtol=0, atol=Z_ATOL)
        np.testing.assert_allclose(rk, rr, rtol=0, atol=RES_ATOL * case.tol / 1e-4)
        ur, jr, _ = jax.jit(functools.partial(adjoint_reference, **kw))(w, x, zr, g)
        uk, jk, _ = jax.jit(functools.partial(adjoint_pallas, interpret=False, **kw))(w, x, zr, g)
        np.testing.assert_array_equal(jk, jr)
        np.testing.assert_allclose(uk, ur, rtol=0, atol=Z_ATOL * max(1.0, float(jnp.max(jnp.abs(ur)))))

    @pytest.mark.parametrize("activation", sorted(ACTIVATIONS))
    def test_compiled_grad_matches_unrolled(self, activation):
        w, x, c = _problem(80, 64, "slow", seed=7)
        want = _unrolled_grads(w, x, c, activation)

        def loss(w, x):
            r = fixed_point(w, x, activation=activation, tol=1e-7, max_iter=1000, implementation="pallas",
                            interpret=False, block_sizes=BlockSizes(16))
            return jnp.sum(c * r.z)

        dw, dx = jax.jit(jax.grad(loss, argnums=(0, 1)))(w, x)
        assert _rel(dw, want[0]) < 1e-4 and _rel(dx, want[1]) < 1e-4
