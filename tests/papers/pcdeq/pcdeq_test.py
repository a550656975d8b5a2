"""pcDEQ: existence/uniqueness and geometric convergence, implicit gradients, layers, networks."""

import pathlib

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxml.core.experiment import DOES_NOT_HOLD, HOLDS, NOT_COMPARABLE
from jaxml.core.mesh import num_params
from jaxml.papers.pcdeq import metrics as pm
from jaxml.papers.pcdeq.experiments import (accuracy_claim, convergence_claim, gradient_claim, gradient_errors,
                                            training_runs)
from jaxml.papers.pcdeq.layers import (DEQLayer, conv3x3, conv_activation, injection, input_conv3x3, layer_map,
                                       pcdeq_init, project_nonnegative, softplus_beta5, weight_norm)
from jaxml.papers.pcdeq.models import DEFAULT_WIDTHS, DEQNet, maxpool3x3
from jaxml.papers.pcdeq.solver import Solver, anderson, deq_solve, find_fixed_point, geometric_rate
from kernels.fixed_point.reference import activation_fn, iterate, relative_residual

ACTS = {"tanh": "pcdeq1", "softsign": "pcdeq1", "relu6": "pcdeq1", "sigmoid": "pcdeq2"}


def _problem(conv, act, scale, seed=0):
    # NumPy draws: each jax.random shape would be its own (slow to compile) threefry program.
    rng = np.random.default_rng(seed)
    shape_x = (4, 7, 7, 6) if conv else (16, 48)
    shape_w = (3, 3, 6, 6) if conv else (48, 48)
    w = jnp.asarray(rng.uniform(size=shape_w) * scale, jnp.float32)            # W >= 0
    x = injection(ACTS[act], jnp.asarray(rng.standard_normal(shape_x), jnp.float32))
    return layer_map(act, conv), w, x


def _normal(shape, seed):
    return jnp.asarray(np.random.default_rng(seed).standard_normal(shape), jnp.float32)


@pytest.mark.parametrize("conv", [False, True])
@pytest.mark.parametrize("act", sorted(ACTS))
def test_unique_fixed_point_and_geometric_convergence(conv, act):
    # Row sums of W around 2.4: not a contraction in any obvious norm, yet positive concave. ReLU6
    # at that scale saturates at 6 in a few steps (exact, finite convergence), so it gets row sums
    # around 0.4, where its fixed point is interior and the decay is geometric.
    scale = (0.1 if not conv else 0.09) * (0.15 if act == "relu6" else 1.0)
    f, w, x = _problem(conv, act, scale=scale)
    solver = Solver(tol=1e-6, max_iter=500)
    z_a, k_a, r_a, hist = find_fixed_point(lambda z: f(w, z, x), jnp.zeros_like(x), solver, record=True)
    z_b, k_b, r_b = find_fixed_point(lambda z: f(w, z, x), 3.0 * jnp.asarray(np.random.default_rng(7).uniform(size=x.shape), jnp.float32),
                                     solver)
    assert float(r_a) < 1e-6 and float(r_b) < 1e-6 and int(k_a) < 500
    # Same point from both starts (uniqueness), and it is a fixed point (measured over the 8 cases:
    # at most 1.5e-6 apart, |f(z) - z| <= 7.8e-7; the fixed points are O(1)).
    np.testing.assert_allclose(z_a, z_b, atol=5e-6)
    np.testing.assert_allclose(f(w, z_a, x), z_a, atol=3e-6)
    assert float(jnp.min(z_a)) >= 0.0   # positive map: the fixed point is in the nonnegative orthant
    rate = geometric_rate(np.asarray(hist), skip=1)
    assert 0.0 < rate < 1.0, rate
    # Geometric: log residual is close to linear in k (R^2 of the fit; measured >= 0.982).
    h = np.asarray(hist)
    k = np.arange(len(h))[np.isfinite(h) & (h > 0)][1:]
    y = np.log(h[k])
    fit = np.polyval(np.polyfit(k, y, 1), k)
    r2 = 1 - np.sum((y - fit) ** 2) / np.sum((y - y.mean()) ** 2)
    assert r2 > 0.97, r2


def test_large_nonnegative_weights_still_converge_but_signed_ones_do_not():
    f, w, x = _problem(False, "tanh", scale=1.0)           # row sums ~24
    _, k, r = iterate(lambda z: f(w, z, x), jnp.zeros_like(x), tol=1e-4, max_iter=200)
    assert float(r) < 1e-4 and int(k) < 200
    signed = (w - 0.5) * 2.0                               # same magnitudes, mixed signs
    _, k_s, r_s = iterate(lambda z: f(signed, z, x), jnp.zeros_like(x), tol=1e-4, max_iter=200)
    assert int(k_s) == 200 and float(r_s) > 1e-2          # the unconstrained map oscillates


@pytest.mark.parametrize("conv", [False, True])
def test_implicit_gradient_matches_unrolled_and_finite_differences(conv):
    # Measured (tanh): vs 400 unrolled float32 steps 2.7e-7 dense, 4.0e-7 conv; vs float64 central
    # differences 8.8e-9 dense, 2.6e-8 conv. Bounds: a few times those.
    errs = gradient_errors(conv, "tanh")
    assert errs["unrolled_rel_err_w"] < 1e-6 and errs["unrolled_rel_err_x"] < 1e-6, errs
    assert errs["finite_difference_rel_err"] < 1e-7, errs


def test_official_output_is_one_more_step_with_the_implicit_gradient_of_unrolled_iteration():
    """output='fz' (the official forward): the value is act(W z* + x) at the fixed point z* of output
    'z', recomputed here in float64 NumPy; the gradient equals backprop through N + 1 unrolled
    applications (f of the N-step iterate), in float64 so that only the solves' tolerance separates
    them. Bound: tol 1e-12 and the fitted rate q = 0.39 of this map leave an adjoint error of order
    tol q / (1 - q) = 6e-13 relative, 200 unrolled steps q^200 ~ 0 (measured 6.0e-13 for W, 8.2e-13
    for x); we allow 1e-9. Without the adjoint hook (f(z*) with z* constant) the errors are 0.20 and
    0.12. The value (tol 1e-4, the official one) is recomputed to 7e-8; that 'fz' is not z* itself:
    one more step moves it by about the last residual (measured 2.0e-5 relative; we ask > 5e-6)."""
    f, w, x = _problem(False, "tanh", scale=0.05)
    z, _ = deq_solve(f, w, x)
    y, _ = deq_solve(f, w, x, output="fz")
    w64, x64, z64 = (np.asarray(a, np.float64) for a in (w, x, z))
    y_ref = np.tanh(z64 @ w64 + x64)
    assert pm.relative_error(np.asarray(y, np.float64), y_ref) < 1e-6
    assert pm.relative_error(np.asarray(z, np.float64), y_ref) > 5e-6
    t = _normal(x.shape, 7)
    with jax.enable_x64(True):
        w, x, t = (jnp.asarray(np.asarray(a), jnp.float64) for a in (w, x, t))
        solver = Solver(tol=1e-12, max_iter=400)
        loss_fz = lambda w, x, probe: jnp.sum(deq_solve(f, w, x, solver=solver, probe=probe, output="fz")[0] * t)
        loss_unrolled = lambda w, x: jnp.sum(
            jax.lax.fori_loop(0, 201, lambda _, zz: f(w, zz, x), jnp.zeros_like(x)) * t)
        *g_fz, probe = jax.grad(loss_fz, (0, 1, 2))(w, x, jnp.zeros(2))
        g_ref = jax.grad(loss_unrolled, (0, 1))(w, x)
        for a, b in zip(g_fz, g_ref):
            assert pm.relative_error(np.asarray(a), np.asarray(b)) < 1e-9
        assert 5 < float(probe[0]) < 400 and float(probe[1]) < 1e-12


def test_map_at_zero_is_the_first_iteration_and_changes_nothing():
    # map_at_zero(w, x) = f(w, 0, x) = act(x) replaces the solve's first product with W: values,
    # statistics and gradients (w and x; both outputs; plain and Anderson) equal those without it,
    # bit for bit, since W 0 = 0 exactly for finite W. (The dense loop: the fixed-point kernel tests.)
    f, w, x = _problem(True, "softsign", scale=0.09)
    at_zero = lambda w_, x_: conv_activation("softsign")(x_)
    t = _normal(x.shape, 3)
    for solver, outputs in ((Solver(tol=1e-5), ("z", "fz")), (Solver(tol=1e-5, method="anderson"), ("z",))):
        for output in outputs:
            def loss(w_, x_, mz):
                z, stats = deq_solve(f, w_, x_, solver=solver, output=output, map_at_zero=mz)
                return jnp.sum(z * t), stats
            (va, sa), ga = jax.value_and_grad(loss, (0, 1), has_aux=True)(w, x, None)
            (vb, sb), gb = jax.value_and_grad(loss, (0, 1), has_aux=True)(w, x, at_zero)
            assert int(sa.iterations) > 2 and int(sa.iterations) == int(sb.iterations)
            np.testing.assert_array_equal(np.asarray(sa.residual), np.asarray(sb.residual))
            np.testing.assert_array_equal(np.asarray(va), np.asarray(vb))
            for a, b in zip(ga, gb):
                np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    # It is used: with one iteration the output is map_at_zero's value, here a planted one.
    planted = lambda w_, x_: jnp.full_like(x_, 0.5)
    z, stats = deq_solve(f, w, x, solver=Solver(max_iter=1), map_at_zero=planted)
    np.testing.assert_array_equal(np.asarray(z), 0.5)


def test_probe_reports_backward_iterations():
    f, w, x = _problem(False, "softsign", scale=0.05)
    t = _normal(x.shape, 3)
    loss = lambda w, probe: jnp.sum(deq_solve(f, w, x, probe=probe)[0] * t)
    _, probe_grad = jax.grad(loss, argnums=(0, 1))(w, jnp.zeros(2))
    z, _ = deq_solve(f, w, x)
    _, vjp = jax.vjp(lambda zz: f(w, zz, x), z)
    _, k, r = iterate(lambda u: vjp(u)[0] + t, t)
    assert int(probe_grad[0]) == int(k) and abs(float(probe_grad[1]) - float(r)) < 1e-7


def test_anderson_accelerates_a_slow_contraction():
    _, _, x = _problem(False, "tanh", scale=0.1)
    q, _ = jnp.linalg.qr(_normal((48, 48), 5))
    f = lambda z: jnp.tanh(z @ (0.95 * q) + x)             # contraction factor 0.95, signed
    plain = find_fixed_point(f, jnp.zeros_like(x), Solver(tol=1e-6, max_iter=500))
    acc = find_fixed_point(f, jnp.zeros_like(x), Solver(tol=1e-6, max_iter=500, method="anderson"))
    np.testing.assert_allclose(acc[0], plain[0], atol=5e-5)
    assert int(acc[1]) < int(plain[1]), (int(acc[1]), int(plain[1]))


def test_anderson_needs_the_orthant_guard_on_pcdeq_maps():
    f, w, x = _problem(False, "tanh", scale=0.1)
    plain = find_fixed_point(lambda z: f(w, z, x), jnp.zeros_like(x), Solver(tol=1e-6, max_iter=500))
    guarded = anderson(lambda z: f(w, z, x), jnp.zeros_like(x), tol=1e-6, max_iter=500, nonnegative=True)
    np.testing.assert_allclose(guarded[0], plain[0], atol=2e-6)          # measured 4.8e-7
    # Unguarded, Anderson leaves the nonnegative orthant on this problem and converges to another
    # fixed point of the same map (pcDEQ's uniqueness holds in the orthant only).
    wild, _, res = anderson(lambda z: f(w, z, x), jnp.zeros_like(x), tol=1e-6, max_iter=500)
    assert float(res) < 1e-6 and float(wild.min()) < -0.1
    np.testing.assert_allclose(f(w, wild, x), wild, atol=2e-5)           # measured 6.5e-6
    # With the guard, its implicit gradient equals plain iteration's.
    t = _normal(x.shape, 1)
    def grads(solver):
        return jax.grad(lambda w, probe: jnp.sum(deq_solve(f, w, x, solver=solver, probe=probe)[0] * t),
                        (0, 1))(w, jnp.zeros(2))
    g_and, probe_and = grads(Solver(tol=1e-7, method="anderson", nonnegative=True))
    g_it, _ = grads(Solver(tol=1e-7))
    np.testing.assert_allclose(g_and, g_it, rtol=0, atol=3e-6)           # measured 8.9e-7 (|g| <= 0.30)
    # The adjoint has no sign constraint: the guard applies to the forward map only, so the backward
    # solve is the same with and without it (it was plain iteration in disguise before this fix).
    solver = Solver(tol=1e-7, method="anderson", nonnegative=True)
    z, _ = deq_solve(f, w, x, solver=solver)
    _, vjp = jax.vjp(lambda zz: f(w, zz, x), z)
    _, k_free, _ = anderson(lambda u: vjp(u)[0] + t, t, tol=1e-7, nonnegative=False)
    _, k_guarded, _ = anderson(lambda u: vjp(u)[0] + t, t, tol=1e-7, nonnegative=True)
    assert int(probe_and[0]) == int(k_free) != int(k_guarded), (probe_and, k_free, k_guarded)


def test_weight_norm_is_per_output_unit():
    v = np.random.default_rng(0).uniform(size=(3, 3, 4, 5)).astype(np.float32)
    g = np.arange(1, 6, dtype=np.float32)
    w = np.asarray(weight_norm(jnp.asarray(v), jnp.asarray(g)))
    # PyTorch's weight_norm(dim=0) on the [out, in, kh, kw] weight: each output filter has norm g.
    np.testing.assert_allclose(np.sqrt((w ** 2).sum(axis=(0, 1, 2))), g, rtol=1e-6)
    np.testing.assert_allclose(w / np.linalg.norm(v.reshape(-1, 5), axis=0), v * g / np.linalg.norm(v.reshape(-1, 5), axis=0) ** 2, rtol=1e-6)


def test_pcdeq_init_and_projection():
    w = pcdeq_init(jax.random.PRNGKey(0), (80, 80))
    assert float(w.min()) >= 0.0 and float(w.max()) <= 1e-2 / np.sqrt(160) + 1e-9
    params = {"deq": {"v": -jnp.ones(3), "g": jnp.array([-1.0, 2.0])}, "bn1": {"scale": -jnp.ones(2)},
              "classifier": {"kernel": -jnp.ones(2)}}
    out = project_nonnegative(params)
    np.testing.assert_array_equal(out["deq"]["v"], 0.0)
    np.testing.assert_array_equal(out["deq"]["g"], [0.0, 2.0])
    np.testing.assert_array_equal(out["bn1"]["scale"], -1.0)      # other layers are left alone
    np.testing.assert_array_equal(out["classifier"]["kernel"], -1.0)


def test_parameter_counts_equal_the_official_networks():
    # Totals of the official PyTorch models (weight_norm v and g, affine BatchNorm).
    expected = {"linear": 70_410, "single_conv": 69_136, "multi_conv": 41_278}
    for arch, count in expected.items():
        for variant in ("pcdeq1", "deq", "explicit"):
            model = DEQNet(architecture=arch, variant=variant, widths=DEFAULT_WIDTHS[arch],
                           activation="softsign" if variant == "pcdeq1" else "tanh")
            shapes = jax.eval_shape(lambda: model.init(jax.random.PRNGKey(0), jnp.zeros((2, 28, 28, 1))))
            assert num_params(shapes["params"]) == count, (arch, variant)


@pytest.mark.parametrize("output", ["z", "fz"])
def test_dense_layer_kernel_paths_equal_the_generic_solver(output):
    x, t = _normal((8, 32), 0), _normal((8, 32), 1)
    outs = {}
    for impl in ("generic", "xla", "pallas"):
        layer = DEQLayer(variant="pcdeq1", activation="tanh", implementation=impl, output=output)
        variables = layer.init(jax.random.PRNGKey(2), x)
        params = jax.tree_util.tree_map(lambda a: a * 30.0, variables["params"])   # not a trivial contraction
        fn = lambda p, x: jnp.sum(layer.apply({"params": p, "probe": variables["probe"]}, x, mutable=["diagnostics"])[0] * t)
        z, diag = layer.apply({"params": params, "probe": variables["probe"]}, x, mutable=["diagnostics"])
        outs[impl] = (z, jax.grad(fn, argnums=(0, 1))(params, x), diag["diagnostics"]["forward_iterations"][0])
    for impl in ("xla", "pallas"):
        np.testing.assert_allclose(outs[impl][0], outs["generic"][0], atol=1e-6)
        assert float(outs[impl][2]) == float(outs["generic"][2]) > 2
        for a, b in zip(jax.tree_util.tree_leaves(outs[impl][1]), jax.tree_util.tree_leaves(outs["generic"][1])):
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("output", ["z", "fz"])
def test_conv_layer_with_the_direct_kernel_equals_the_xla_path(output, monkeypatch):
    # A 12-channel softsign pcDEQ-1 conv layer: the CPU kernel path (forward and adjoint solves as one
    # kernel call per iteration, residuals from the kernel) against the same layer with the kernel
    # switched off (conv3x3's XLA forms): fixed point, gradients w.r.t. parameters and input, and the
    # forward iteration count. Measured (both outputs): z* within 1.8e-7, gradients within 8.5e-7 of
    # their largest entry; 12 iterations each. Bounds 1e-5 absolute on z*, 1e-4 on the gradients.
    import kernels.cpu_conv3x3 as cpu_conv3x3
    from jaxml.papers.pcdeq import layers as pl
    if not cpu_conv3x3.available():
        pytest.skip(f"kernel not available here: {cpu_conv3x3.unavailable_reason()}")
    x, t = _normal((4, 10, 14, 12), 0), _normal((4, 10, 14, 12), 1)
    layer = DEQLayer(variant="pcdeq1", activation="softsign", conv=True, output=output,
                     solver=Solver(tol=1e-6, max_iter=100))
    variables = layer.init(jax.random.PRNGKey(2), x)
    params = jax.tree_util.tree_map(lambda a: a * 40.0, variables["params"])   # not a trivial contraction

    def run():
        apply = lambda p, x: layer.apply({"params": p, "probe": variables["probe"]}, x, mutable=["diagnostics"])
        fn = lambda p, x: jnp.sum(apply(p, x)[0] * t)
        z, diag = jax.jit(apply)(params, x)
        return z, jax.jit(jax.grad(fn, argnums=(0, 1)))(params, x), diag["diagnostics"]["forward_iterations"][0]

    direct = run()
    with monkeypatch.context() as m:
        m.setattr(pl, "_direct_applies", lambda *args: False)
        generic = run()
    np.testing.assert_allclose(direct[0], generic[0], atol=1e-5)
    assert float(direct[2]) == float(generic[2]) > 3
    for a, b in zip(jax.tree_util.tree_leaves(direct[1]), jax.tree_util.tree_leaves(generic[1])):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4 * float(jnp.max(jnp.abs(b))))


def _xla_conv(z, w):
    return jax.lax.conv_general_dilated(z, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))


def _vjp_against_xla(conv, z, w, g):
    """{name: ((ours, xla), (max |ours - xla|, max |xla|))} for the convolution and its VJP w.r.t. the
    input and the kernel (cotangent g), `conv` against `lax.conv_general_dilated` (shapes checked)."""
    @jax.jit
    def both(z, w, g):
        out, vjp = jax.vjp(conv, z, w)
        ref, vjp_ref = jax.vjp(_xla_conv, z, w)
        return (out, *vjp(g)), (ref, *vjp_ref(g))

    out = {}
    for name, a, b in zip(("conv", "d/dinput", "d/dw"), *both(z, w, g)):
        assert a.shape == b.shape, name
        out[name] = ((a, b), (float(jnp.max(jnp.abs(a - b))), float(jnp.max(jnp.abs(b)))))
    return out


def test_conv3x3_and_maxpool_custom_gradients_equal_xla():
    # conv3x3's 'xla' path (the GPU/TPU one): its flipped-kernel adjoint against JAX's own transpose.
    z, w, t = _normal((2, 9, 9, 5), 0), _normal((3, 3, 5, 5), 1), _normal((2, 9, 9, 5), 2)
    conv = _xla_conv
    pool = lambda x: nn.max_pool(x, (3, 3), strides=(1, 1), padding=((1, 1), (1, 1)))
    ours_conv = lambda z, w: conv3x3(z, w, "xla")

    @jax.jit   # one program for all of it (compiled once, not op by op)
    def both(z, w):
        ours = (ours_conv(z, w), jax.grad(lambda z, w: jnp.sum(ours_conv(z, w) * t), (0, 1))(z, w),
                maxpool3x3(z), jax.grad(lambda x: jnp.sum(maxpool3x3(x) * t))(z))
        xla = (conv(z, w), jax.grad(lambda z, w: jnp.sum(conv(z, w) * t), (0, 1))(z, w),
               pool(z), jax.grad(lambda x: jnp.sum(pool(x) * t))(z))
        return ours, xla

    (c, (gz, gw), p, gp), (c_ref, (gz_ref, gw_ref), p_ref, gp_ref) = both(z, w)
    # Measured on CPU: all equal to the last bit (values and gradients up to ~30) except the pooling
    # gradient, which adds the same terms in another order (measured 9.5e-7: one ulp at its max, 9.4).
    np.testing.assert_allclose(c, c_ref, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(gz, gz_ref, rtol=1e-6, atol=1e-5)
    np.testing.assert_allclose(gw, gw_ref, rtol=1e-6, atol=1e-5)
    np.testing.assert_array_equal(p, p_ref)
    np.testing.assert_allclose(gp, gp_ref, atol=2e-6)   # no ties in random data: the same routing as XLA's
    # Ties (a constant image): all of each window's gradient goes to one input, the mass is kept.
    ones = jnp.ones((1, 4, 4, 1))
    g = jax.grad(lambda x: jnp.sum(maxpool3x3(x)))(ones)
    assert float(g.sum()) == 16.0 and set(np.unique(np.asarray(g))) <= {0.0, 1.0, 2.0, 3.0, 4.0, 6.0, 9.0}


@pytest.mark.parametrize("impl", ["patches", "pairs"])
@pytest.mark.parametrize("shape", [(2, 9, 7, 5, 5), (3, 7, 5, 4, 12), (1, 1, 1, 2, 3), (2, 28, 28, 12, 12),
                                   (2, 5, 1, 12, 12), (2, 4, 9, 12, 10)],
                         ids=["odd-9x7x5", "cin4-cout12", "1x1", "28x28x12", "width1", "odd-4x9-c12-o10"])
def test_conv3x3_cpu_forms_and_their_vjp_equal_xla(shape, impl):
    # The CPU paths against lax.conv_general_dilated and jax.vjp of it: 'patches' (row patches times the
    # kernel as one GEMM) and 'pairs' (one convolution on column pairs, odd widths padded); both take
    # the weight gradient as one GEMM. Only the summation order differs. Measured over these shapes and
    # 13x13x24, 6x6x48 (3 seeds each, standard normal data): 'patches' at most 9.0e-7 of the largest
    # |entry| (the weight gradient at 28x28x12: 1.1e-4 of 122), 'pairs' at most 6.1e-7 (its forward
    # at 28x28x12); float64 puts the paths' errors in the same range. Bound: 4e-6 of the largest entry.
    # The 1x1 image only touches the centre tap: exactly equal.
    n, h, wd, c, o = shape
    z, w, g = _normal((n, h, wd, c), 0), _normal((3, 3, c, o), 1), _normal((n, h, wd, o), 2)
    for name, ((a, b), (err, scale)) in _vjp_against_xla(lambda z, w: conv3x3(z, w, impl), z, w, g).items():
        assert a.dtype == jnp.float32, name
        assert err <= 4e-6 * scale, (name, err, scale)
        if h == wd == 1:
            assert err == 0.0, name


def test_pair_kernel_places_each_tap_once():
    # The [3, 2, 2c, 2o] kernel on column pairs holds each of w's 9 taps exactly twice (once per output
    # column of the pair) and zeros elsewhere: distinct entries, so any misplaced block shows.
    from jaxml.papers.pcdeq.layers import _pair_kernel
    c, o = 2, 3
    w = jnp.arange(1.0, 1.0 + 9 * c * o).reshape(3, 3, c, o)
    k = np.asarray(_pair_kernel(w))
    assert k.shape == (3, 2, 2 * c, 2 * o)
    values, counts = np.unique(k, return_counts=True)
    assert values[0] == 0.0 and counts[0] == 2 * 3 * c * o          # two zero [c, o] blocks per kernel row
    assert set(counts[1:]) == {2} and len(values) == 1 + 9 * c * o
    # Input column 2m - 1 + a, output 2k + b, m = k + t: the offset 2t - 1 + a - b is w's column tap - 1.
    for t in range(2):
        for a in range(2):
            for b in range(2):
                block = k[:, t, a * c:(a + 1) * c, b * o:(b + 1) * o]
                d = 2 * t - 1 + a - b
                np.testing.assert_array_equal(block, w[:, d + 1] if abs(d) <= 1 else 0.0)


def test_conv3x3_implementation_is_chosen_per_platform():
    # 'auto' is lax.platform_dependent. Lowered for the CPU, a forward alone (the DEQ loops' map) is a GEMM
    # with fewer than 9 channels, one convolution on column pairs (2c channels, a [3, 2] kernel) with 9-16
    # and XLA's convolution from 17; the adjoint (the backward loops' map) likewise; a differentiated
    # forward (the linearisation at z*) is a GEMM sharing the weight gradient's row patches, and the
    # weight gradient a GEMM. Lowered for GPU/TPU all are XLA convolutions. Lowering for another
    # platform needs no such device (jax.export).
    def counts_of(fn, platform, *args):
        text = jax.export.export(jax.jit(fn), platforms=(platform,))(*args).mlir_module()
        return (text.count("stablehlo.convolution"), text.count("stablehlo.dot_general"),
                text.count(f"tensor<3x2x{2 * c}x{2 * c}xf32>") > 0)

    counts = {}
    for c in (3, 12, 24):
        z, w = _normal((2, 5, 6, c), 0), _normal((3, 3, c, c), 1)
        for impl in ("auto", "pairs", "patches", "xla"):
            train = jax.value_and_grad(lambda z, w: jnp.sum(jnp.sin(conv3x3(z, w, impl))), (0, 1))
            adjoint = lambda z, w: jax.vjp(lambda z_: conv3x3(z_, w, impl), z)[1](z)[0]
            for platform in ("cpu", "cuda", "tpu"):
                counts[c, impl, platform] = counts_of(train, platform, z, w)
                counts[c, impl, platform, "forward"] = counts_of(lambda z, w: conv3x3(z, w, impl), platform, z, w)
                counts[c, impl, platform, "adjoint"] = counts_of(adjoint, platform, z, w)
        # Here (a CPU run) 'auto' computes the CPU's choice, bit for bit.
        choice = {3: "patches", 12: "pairs", 24: "xla"}[c]
        np.testing.assert_array_equal(conv3x3(z, w), conv3x3(z, w, choice))
    for c in (3, 12, 24):
        assert counts[c, "patches", "cpu"] == counts[c, "patches", "cuda"] == (0, 3, False), counts
        assert counts[c, "pairs", "cpu"] == counts[c, "pairs", "tpu"] == (2, 1, True), counts
        assert counts[c, "xla", "cpu"] == counts[c, "auto", "cuda"] == counts[c, "auto", "tpu"] == (3, 0, False), counts
        assert counts[c, "auto", "cuda", "forward"] == counts[c, "auto", "tpu", "adjoint"] == (1, 0, False), counts
    for c, forward in ((3, (0, 1, False)), (12, (1, 0, True)), (24, (1, 0, False))):
        assert counts[c, "auto", "cpu", "forward"] == counts[c, "auto", "cpu", "adjoint"] == forward, counts
        assert counts[c, "auto", "cpu"] == (forward[0], 2 + forward[1], forward[2]), counts
    with pytest.raises(ValueError, match="conv impl='im2col'"):
        conv3x3(z, w, "im2col")


def test_conv_map_with_the_direct_kernel_equals_the_xla_map():
    # The conv layers' map on the CPU with kernels.cpu_conv3x3 (12 channels, softsign): its value, its
    # VJP w.r.t. (W, z, injection) and its fused adjoint map u -> J^T u + g against the same map built
    # on lax.conv_general_dilated and jax.vjp; the solver's fused steps (value and relative residual in
    # one call) against the map and relative_residual. Measured, relative to the largest entry: the
    # value and the forward step equal to the last bit, d/dW 3.0e-7, d/dz 3.2e-7, d/dx 1.5e-7, adjoint
    # map 5.8e-8, its residual 8.5e-8 (float32 summation order). Bound 4e-6, as for the other CPU forms.
    import kernels.cpu_conv3x3 as cpu_conv3x3
    from jaxml.papers.pcdeq.layers import _direct_applies, conv_map
    if not cpu_conv3x3.available():
        pytest.skip(f"kernel not available here: {cpu_conv3x3.unavailable_reason()}")
    shape = (2, 28, 28, 12)
    w = jax.random.uniform(jax.random.PRNGKey(1), (3, 3, 12, 12)) * 0.05
    z, x, g, u = _normal(shape, 2), _normal(shape, 3), _normal(shape, 4), _normal(shape, 5)
    f = conv_map("softsign")
    assert _direct_applies(w, z, "softsign") and not _direct_applies(w, z, "tanh")
    ref_map = lambda w, z, x: jax.nn.soft_sign(_xla_conv(z, w) + x)

    @jax.jit
    def both(w, z, x, g, u):
        out, vjp = jax.vjp(f, w, z, x)
        ref, vjp_ref = jax.vjp(ref_map, w, z, x)
        adj, adj_res = f.adjoint_map(w, z, x, g)(u)
        adj_ref = jax.vjp(lambda zz: ref_map(w, zz, x), z)[1](u)[0] + g
        step, step_res = f.step_with_residual(w, x)(u)
        return ((out, *vjp(g), adj, step, adj_res[None], step_res[None]),
                (ref, *vjp_ref(g), adj_ref, ref_map(w, u, x), relative_residual(adj_ref, u)[None],
                 relative_residual(ref_map(w, u, x), u)[None]))

    names = ("value", "d/dW", "d/dz", "d/dx", "adjoint map", "forward step", "adjoint residual", "step residual")
    for name, a, b in zip(names, *both(w, z, x, g, u)):
        assert a.shape == b.shape, name
        err, scale = float(jnp.max(jnp.abs(a - b))), float(jnp.max(jnp.abs(b)))
        assert err <= 4e-6 * scale, (name, err, scale)
    # The kernel runs on the CPU only: lowered for GPU/TPU the map is XLA's convolution.
    for platform, calls in (("cpu", 1), ("cuda", 0), ("tpu", 0)):
        text = jax.jit(f).trace(w, z, x).lower(lowering_platforms=(platform,)).as_text()
        assert text.count("jaxml_cpu_conv3x3") == calls, platform
    # From 17 channels (YNNPACK's convolution) the map and its adjoint are the XLA ones.
    w24, z24 = jnp.zeros((3, 3, 24, 24)), _normal((1, 4, 4, 24), 6)
    assert not _direct_applies(w24, z24, "softsign") and f.adjoint_map(w24, z24, z24, z24) is None


@pytest.mark.parametrize("shape", [(2, 9, 7, 5), (3, 28, 28, 12)], ids=["9x7-o5", "28x28-o12"])
def test_input_conv3x3_taps_and_vjp_equal_xla(shape):
    # The first convolution (one input channel) as 9 shifted multiply-adds against lax.conv and its VJP.
    # Only the forward differs (summation order; the gradients are XLA's in both): measured at most
    # 4.8e-7 of the largest |entry| (about 3) on these shapes; bound 4e-6 of it. The gradients are equal.
    n, h, wd, o = shape
    x, w, g = _normal((n, h, wd, 1), 0), _normal((3, 3, 1, o), 1), _normal((n, h, wd, o), 2)
    for name, (_, (err, scale)) in _vjp_against_xla(lambda x, w: input_conv3x3(x, w, "taps"), x, w, g).items():
        assert err <= (4e-6 * scale if name == "conv" else 1e-6 * scale), (name, err, scale)
    # 'auto': the taps on the CPU, lax.conv lowered for GPU/TPU (the forward; the gradients are lax.conv).
    fwd = lambda impl: jax.jit(lambda x, w: input_conv3x3(x, w, impl))
    count = lambda impl, platform: jax.export.export(fwd(impl), platforms=(platform,))(x, w).mlir_module().count(
        "stablehlo.convolution")
    assert count("auto", "cpu") == count("taps", "cpu") == 0
    assert count("auto", "cuda") == count("auto", "tpu") == count("xla", "cpu") == 1
    np.testing.assert_array_equal(input_conv3x3(x, w), input_conv3x3(x, w, "taps"))
    with pytest.raises(ValueError, match="input conv impl"):
        input_conv3x3(x, w, "patches")
    with pytest.raises(ValueError, match="input_conv3x3 takes x"):
        input_conv3x3(jnp.zeros((1, 4, 4, 2)), jnp.zeros((3, 3, 2, 3)))


def test_explicit_derivatives_of_activations_and_injection_equal_autodiff():
    # conv_activation: act with act' given explicitly (one residual in the adjoint loop);
    # softplus_beta5: the pcDEQ-1 injection jax.nn.softplus(5x)/5, its derivative sigmoid(5x) written
    # from the exponential the value computes too. Measured on this grid: the activations' derivatives
    # within 1.2e-7 of autodiff's (values <= 1); softplus_beta5's within 8.8e-8 of float64 sigmoid(5x),
    # autodiff of jax.nn.softplus within 4.7e-7 of it.
    x = jnp.concatenate([jnp.linspace(-8.0, 8.0, 1001), jnp.asarray([-30.0, -1e-3, 1e-3, 30.0])]).astype(jnp.float32)
    x = x[(jnp.abs(x) > 1e-6) & (jnp.abs(x - 6.0) > 1e-6)]     # off ReLU6's kinks
    plain = lambda x: jax.nn.softplus(5.0 * x) / 5.0
    value_and_derivative = lambda f, x: jax.jvp(f, (x,), (jnp.ones_like(x),))

    @jax.jit   # one program (compiled once, not op by op)
    def all_of_them(x):
        acts = {name: (value_and_derivative(conv_activation(name), x), value_and_derivative(activation_fn(name), x))
                for name in sorted(ACTS)}
        return acts, value_and_derivative(softplus_beta5, x), value_and_derivative(plain, x), softplus_beta5(x)

    acts, (sp, dsp), (sp_ref, dsp_ref), sp_primal = all_of_them(x)
    for name, ((a, da), (a_ref, da_ref)) in acts.items():
        np.testing.assert_array_equal(a, a_ref, err_msg=name)
        np.testing.assert_allclose(da, da_ref, rtol=0, atol=2.5e-7, err_msg=name)
    np.testing.assert_array_equal(sp, sp_ref)
    np.testing.assert_array_equal(sp_primal, sp_ref)
    sigmoid64 = 1.0 / (1.0 + np.exp(-5.0 * np.asarray(x, np.float64)))
    np.testing.assert_allclose(dsp, sigmoid64, rtol=0, atol=2e-7)
    np.testing.assert_allclose(dsp, dsp_ref, rtol=0, atol=1e-6)


def test_bad_variant_or_activation_is_a_clear_error():
    x = jnp.ones((2, 4))
    with pytest.raises(ValueError, match="pcdeq2 takes activation 'sigmoid'"):
        DEQLayer(variant="pcdeq2", activation="tanh").init(jax.random.PRNGKey(0), x)
    with pytest.raises(ValueError, match="pcdeq1 takes activation in"):
        DEQLayer(variant="pcdeq1", activation="sigmoid").init(jax.random.PRNGKey(0), x)
    with pytest.raises(ValueError, match="variant='pcdeq3'"):
        DEQLayer(variant="pcdeq3").init(jax.random.PRNGKey(0), x)
    with pytest.raises(ValueError, match="solver method='newton'"):
        Solver(method="newton").validate()


@pytest.mark.torch_ref
@pytest.mark.parametrize("conv", [False, True])
def test_fixed_point_map_matches_pytorch_weight_norm_layer(conv):
    import torch

    rng = np.random.default_rng(0)
    n = 6
    v = rng.uniform(size=(3, 3, n, n) if conv else (n, n)).astype(np.float32)
    g = rng.uniform(0.5, 1.5, size=(n,)).astype(np.float32)
    x = rng.normal(size=(2, 5, 5, n) if conv else (3, n)).astype(np.float32)
    z = rng.uniform(size=x.shape).astype(np.float32)
    lin = torch.nn.Conv2d(n, n, 3, padding=1, bias=False) if conv else torch.nn.Linear(n, n, bias=False)
    lin = torch.nn.utils.parametrizations.weight_norm(lin)
    with torch.no_grad():
        tv = np.transpose(v, (3, 2, 0, 1)) if conv else v.T          # Flax [.., in, out] -> torch [out, in, ..]
        lin.parametrizations.weight.original1.copy_(torch.from_numpy(np.ascontiguousarray(tv)))
        lin.parametrizations.weight.original0.copy_(torch.from_numpy(g.reshape((n,) + (1,) * (tv.ndim - 1))))
        to_t = (lambda a: torch.from_numpy(np.transpose(a, (0, 3, 1, 2)).copy())) if conv else torch.from_numpy
        xin = torch.nn.functional.softplus(to_t(x), beta=5)
        ref = torch.tanh(lin(to_t(z)) + xin).numpy()
    if conv:
        ref = np.transpose(ref, (0, 2, 3, 1))
    ours = layer_map("tanh", conv)(weight_norm(jnp.asarray(v), jnp.asarray(g)), jnp.asarray(z), injection("pcdeq1", jnp.asarray(x)))
    np.testing.assert_allclose(ours, ref, atol=2e-6)


def _train_conv_network(model, tmp_path):
    from jaxml.core.config import load_config
    from jaxml.core.train import load_train_state
    from jaxml.papers.pcdeq.experiments import train
    from jaxml.papers.pcdeq.task import make_task

    path = pathlib.Path(__file__).resolve().parents[3] / "jaxml/papers/pcdeq/configs/train.py"
    config = load_config(f"{path}:tiny,model={model}")
    result = train(config, tmp_path)
    assert result.metrics["last_epoch_forward_iterations"] >= 2
    blocks = {k.rpartition("/")[0] for k in result.metrics if "/" in k}
    assert blocks == ({"deq"} if model == "single_conv" else {"deq1", "deq2", "deq3"}), blocks
    for block in blocks:
        assert result.metrics[f"{block}/converged"] == 1.0, block
        assert result.metrics[f"{block}/uniqueness_distance"] < 1e-4, block
        assert 0.0 < result.metrics[f"{block}/rate"] < 1.0, block
    assert [pathlib.Path(f).name for f in result.figures] == [f"epochs_{model}_pcdeq1_softsign.png",
                                                               f"convergence_{model}_pcdeq1_softsign.png"]
    state = load_train_state(tmp_path, make_task(config), config)
    for path_, leaf in jax.tree_util.tree_leaves_with_path(state.params):
        name = jax.tree_util.keystr(path_)
        if "deq" in name and (name.endswith("['v']") or name.endswith("['g']")):
            assert float(jnp.min(leaf)) >= 0.0, name


@pytest.mark.slow
@pytest.mark.parametrize("model", ["single_conv", "multi_conv"])
def test_conv_networks_train_on_fashion_mnist_with_nonnegative_deq_weights(model, tmp_path):
    _train_conv_network(model, tmp_path)


def _numpy_state(task, batch, seed=0):
    """Params and model state of `task` from their shapes, drawn with NumPy (no PRNG compilation):
    DEQ v and g in pcDEQ's nonnegative range, the other weights signed; BatchNorm mean 0, var 1."""
    rng = np.random.default_rng(seed)
    shapes = jax.eval_shape(task.init, jax.random.PRNGKey(0), batch)

    def draw(path, s):
        name = jax.tree_util.keystr(path)
        low = 0.0 if "deq" in name else -0.3
        return jnp.asarray(rng.uniform(low, 0.3, s.shape), s.dtype)

    state_shapes = jax.eval_shape(task.init_state, jax.random.PRNGKey(0), batch)
    model_state = jax.tree_util.tree_map_with_path(
        lambda p, s: jnp.full(s.shape, 1.0 if jax.tree_util.keystr(p).endswith("['var']") else 0.0, s.dtype),
        state_shapes)
    return jax.tree_util.tree_map_with_path(draw, shapes), model_state


def test_multi_conv_task_gradient_projection_and_convergence():
    # The fast version of the slow training test above: the multi-conv Task's step pieces without
    # the loop. Its implicit gradient (three conv DEQ blocks, BatchNorm in training mode) against a
    # central difference of the loss, the projection of the 4-D conv weights, and the convergence
    # analysis of the three blocks.
    from jaxml.core.config import load_config
    from jaxml.papers.pcdeq.experiments import convergence_analysis
    from jaxml.papers.pcdeq.task import make_task

    path = pathlib.Path(__file__).resolve().parents[3] / "jaxml/papers/pcdeq/configs/train.py"
    # Solver tolerance 1e-6 instead of 1e-4: the loss's error from the stopping rule, divided by 2 eps,
    # would otherwise dominate the central difference.
    task = make_task(load_config(f"{path}:tiny,model=multi_conv", ["model.tol=1e-6"]))
    batch = task.train_data()[np.arange(8)]
    params, model_state = _numpy_state(task, batch)
    loss_fn = jax.jit(lambda p: task.loss(p, batch, None, model_state)[0])
    (loss, (metrics, _)), grads = jax.jit(lambda p: task.value_and_grad(p, batch, None, model_state))(params)
    assert float(metrics["forward_iterations"]) >= 2 and float(metrics["backward_iterations"]) >= 2, metrics
    assert float(metrics["forward_residual"]) < 1e-6 and float(metrics["backward_residual"]) < 1e-6, metrics
    # Along d, the normalised gradient restricted to the three DEQ blocks' (v, g): the loss's change
    # over [-eps, eps] must equal the integral of the implicit gradient's directional derivative
    # along that segment (the fundamental theorem of calculus; trapezoid rule, 13 points). Not the
    # point gradient against a central difference: the 3x3 max-pools' kinks make the slope jump
    # by several percent within +-0.01 (measured 0.097 -> 0.088), so a central difference of a
    # correct gradient was 1.5-2% off at eps 1e-2 on some machines. Measured here at eps 0.03:
    # 0.6% (default XLA optimisation) and 0.4% (level 0, the suite's; 0.9% with 25 points), near the floor that the
    # loss's own noise sets (~3e-5 from the stopping rule: 0.55% of the difference); rtol 2.5e-2.
    deq_grads = jax.tree_util.tree_map_with_path(
        lambda p, g: g if "deq" in jax.tree_util.keystr(p) else jnp.zeros_like(g), grads)
    norm = optax_global_norm(deq_grads)
    direction = jax.tree_util.tree_map(lambda g: g / norm, deq_grads)
    along = lambda t: jax.tree_util.tree_map(lambda p, d: p + t * d, params, direction)  # noqa: E731
    grad_fn = jax.jit(lambda p: task.value_and_grad(p, batch, None, model_state)[1])
    eps = 3e-2
    ts = np.linspace(-eps, eps, 13)
    slopes = np.array([float(sum(jnp.vdot(g, d) for g, d in zip(jax.tree_util.tree_leaves(grad_fn(along(t))),
                                                                    jax.tree_util.tree_leaves(direction))))
                       for t in ts])
    change = float(loss_fn(along(eps))) - float(loss_fn(along(-eps)))
    np.testing.assert_allclose(change, np.trapezoid(slopes, ts), rtol=2.5e-2)
    stepped = task.project(jax.tree_util.tree_map(lambda p, g: p - 100.0 * g, params, grads))
    for name in ("deq1", "deq2", "deq3"):
        v = stepped[name]["v"]
        assert v.ndim == 4 and float(v.min()) == 0.0 and float(stepped[name]["g"].min()) >= 0.0, name
    analysis = convergence_analysis(task, params, model_state, batch["image"], anderson=False)
    assert sorted(analysis) == ["deq1", "deq2", "deq3"]
    for name, a in analysis.items():
        assert a["converged"] and a["uniqueness_distance"] < 1e-4 and 0.0 < a["rate"] < 1.0, (name, a["rate"])
        assert a["anderson"] is None and a["plain_iters_1e-4"] > 1


def optax_global_norm(tree) -> float:
    return float(jnp.sqrt(sum(jnp.sum(jnp.square(x)) for x in jax.tree_util.tree_leaves(tree))))


def test_single_conv_network_output_is_the_fixed_point_of_its_layer():
    # The fast version of the slow training test above: the single-conv wiring (conv, BN, DEQ,
    # max-pool, BN, 8x8 average pool, classifier) with random nonnegative DEQ weights large enough
    # for a non-trivial fixed point; the DEQ block's output must be the fixed point of its own map.
    model = DEQNet(architecture="single_conv", variant="pcdeq1", activation="softsign", widths=(6,), capture=True)
    rng = np.random.default_rng(0)
    images = jnp.asarray(rng.uniform(size=(4, 28, 28, 1)), jnp.float32)
    shapes = jax.eval_shape(lambda: model.init(jax.random.PRNGKey(0), images))
    variables = jax.tree_util.tree_map(lambda s: jnp.asarray(rng.uniform(0.05, 0.5, s.shape), s.dtype),
                                       {k: shapes[k] for k in ("params", "batch_stats", "probe")})
    logits, out = jax.jit(lambda v: model.apply(v, images, capture_intermediates=True,
                                                mutable=["capture", "diagnostics", "intermediates"]))(variables)
    assert logits.shape == (4, 10) and bool(jnp.all(jnp.isfinite(logits)))
    w, inj = out["capture"]["deq"]["weight"][0], out["capture"]["deq"]["injection"][0]
    z = out["intermediates"]["deq"]["__call__"][0]
    assert w.shape == (3, 3, 6, 6) and z.shape == inj.shape == (4, 28, 28, 6)
    iterations = float(out["diagnostics"]["deq"]["forward_iterations"][0])
    assert 3 <= iterations < 200, iterations
    # The official stop: relative residual < 1e-4 after the last step (the returned z is f of the last iterate).
    residual = pm.relative_error(layer_map("softsign", conv=True)(w, z, inj), z)
    assert residual < 1e-4, residual


def test_geometric_rate_of_hand_computed_histories():
    k = np.arange(12)
    np.testing.assert_allclose(geometric_rate(3.0 * 0.5 ** k), 0.5, rtol=1e-12)
    # An outlier first residual is skipped; NaN (not reached) and zero residuals are ignored.
    h = np.concatenate([[100.0], 0.2 * 0.25 ** k[1:8], [0.0, np.nan, np.nan]])
    np.testing.assert_allclose(geometric_rate(h, skip=1), 0.25, rtol=1e-12)
    # Two points: exp of the slope of log r, (log 0.1 - log 0.4) / 1 -> 0.25.
    np.testing.assert_allclose(geometric_rate([np.nan, 0.4, 0.1], skip=0), 0.25, rtol=1e-12)
    # Least squares over 3 points: log r = 0, -1, -3 at k = 1, 2, 3 -> slope -1.5.
    np.testing.assert_allclose(geometric_rate(np.exp([5.0, 0.0, -1.0, -3.0])), np.exp(-1.5), rtol=1e-12)
    with pytest.raises(ValueError, match="at least 2 positive residuals"):
        geometric_rate([1.0, 0.5, np.nan], skip=1)


def test_metrics_on_hand_computed_cases():
    assert pm.first_below([0.5, 0.1, 1e-5, 1e-7], 1e-4) == 3
    assert pm.first_below([0.5, np.nan, np.nan], 1e-4) == pm.NOT_CONVERGED == -1
    assert pm.first_below([1e-5], 1e-4) == 1
    assert pm.relative_error([3.0, 4.0], [3.0, 0.0]) == pytest.approx(4.0 / 3.0)       # ||(0, 4)|| / ||(3, 0)||
    assert pm.relative_error(np.array([[1.0, 2.0]]), np.array([[1.0, 0.0]])) == pytest.approx(2.0)
    with pytest.raises(ValueError, match="shapes differ"):
        pm.relative_error([1.0], [1.0, 2.0])
    assert pm.accuracy_gap([0.89, 0.87], [0.88, 0.90]) == pytest.approx(-0.01)
    assert pm.accuracy_gap(0.9, [0.85]) == pytest.approx(0.05)
    assert pm.iterations_or_inf(-1) == np.inf and pm.iterations_or_inf(7) == 7.0
    assert pm.fewer_iterations([7, 12], [38])
    assert not pm.fewer_iterations([7, 12], [12])
    assert pm.fewer_iterations([13], [-1, 9])               # a baseline block that never converged
    assert not pm.fewer_iterations([-1], [200])
    assert pm.value_range([0.43, 0.21, 0.48]) == "0.21-0.48"
    assert pm.value_range([12.0, 12.0], "{:.0f}") == "12"


_PARTS = ("train:model=linear,variant=pcdeq1,act=tanh", "train:model=linear,variant=deq,act=tanh",
          "train:model=linear,variant=explicit,act=tanh", "gradcheck")


def _run_metrics(label, acc, params=70410.0, rate=None, iters=None, unique=1e-7, converged=1.0):
    m = {f"{label}/test_accuracy": acc, f"{label}/params": params, f"{label}/epochs": 1.0, f"{label}/s_per_epoch": 2.0}
    if rate is not None:
        m.update({f"{label}/deq/rate": rate, f"{label}/deq/plain_iters_1e-4": iters,
                  f"{label}/deq/uniqueness_distance": unique, f"{label}/deq/converged": converged})
    return m


def _metrics(pc_iters=7.0, deq_iters=13.0, pc_acc=0.84, explicit_acc=0.845, explicit_params=70410.0):
    return {**_run_metrics("train_model_linear_variant_pcdeq1_act_tanh", pc_acc, rate=0.3, iters=pc_iters),
            **_run_metrics("train_model_linear_variant_deq_act_tanh", 0.83, rate=0.7, iters=deq_iters),
            **_run_metrics("train_model_linear_variant_explicit_act_tanh", explicit_acc, params=explicit_params),
            "gradcheck/max_unrolled_rel_err": 1e-7}


def test_training_runs_parse_the_parts_that_ran():
    runs = training_runs(_metrics(), _PARTS + ("train:model=multi_conv,variant=pcdeq1,act=softsign",))
    assert [(r.architecture, r.variant, r.activation, r.name) for r in runs] == [
        ("linear", "pcdeq1", "tanh", "pcDEQ-1 tanh"), ("linear", "deq", "tanh", "DEQ tanh"),
        ("linear", "explicit", "tanh", "explicit tanh")]                 # multi_conv did not run
    assert runs[0].blocks() == {"deq": {"rate": 0.3, "plain_iters_1e-4": 7.0, "uniqueness_distance": 1e-7,
                                        "converged": 1.0}}


def test_convergence_claim_verdicts():
    runs = lambda **kw: training_runs(_metrics(**kw), _PARTS)
    claim = convergence_claim(runs(), "quick")
    assert claim.verdict == HOLDS, claim
    assert "fitted rates 0.30, 7 iterations to 1e-4" in claim.ours and "DEQ (linear, 1 epoch): rate 0.70, 13" in claim.ours
    assert convergence_claim(runs(), "tiny").verdict == NOT_COMPARABLE
    assert convergence_claim(runs(deq_iters=7.0), "quick").verdict == DOES_NOT_HOLD     # DEQ as fast
    assert convergence_claim(runs(deq_iters=-1.0), "quick").verdict == HOLDS           # DEQ never converged
    assert convergence_claim(runs(pc_iters=31.0, deq_iters=60.0), "quick").verdict == DOES_NOT_HOLD  # not few
    no_deq = training_runs(_metrics(), (_PARTS[0],))
    assert convergence_claim(no_deq, "quick").verdict == NOT_COMPARABLE


def test_accuracy_claim_verdicts():
    runs = lambda **kw: training_runs(_metrics(**kw), _PARTS)
    claim = accuracy_claim(runs(), "quick")
    assert claim.verdict == HOLDS and "best pcDEQ minus best baseline -0.5 points" in claim.ours, claim
    assert accuracy_claim(runs(explicit_acc=0.851), "quick").verdict == DOES_NOT_HOLD    # 1.1 points behind
    assert accuracy_claim(runs(explicit_params=80000.0), "quick").verdict == NOT_COMPARABLE
    assert accuracy_claim(runs(), "tiny").verdict == NOT_COMPARABLE


def test_gradient_claim_verdicts():
    cases = ("dense_tanh", "dense_relu6", "conv_tanh")
    ok = gradient_claim({"max_unrolled_rel_err": 2.7e-7, "max_finite_difference_rel_err": 9.2e-9}, cases)
    assert ok.verdict == HOLDS and "2.7e-07" in ok.ours and "layers: dense (tanh, relu6); conv (tanh)" in ok.ours
    bad = gradient_claim({"max_unrolled_rel_err": 3e-5, "max_finite_difference_rel_err": 9.2e-9}, cases)
    assert bad.verdict == DOES_NOT_HOLD
    assert gradient_claim({"max_unrolled_rel_err": 2.7e-7, "max_finite_difference_rel_err": 2e-6}, cases).verdict == DOES_NOT_HOLD


@pytest.mark.parametrize("scale", ["tiny", "quick", "full"])
def test_every_reproduce_part_has_a_valid_config(scale):
    from jaxml.core.config import load_config
    from jaxml.core.experiment import part_label

    configs = pathlib.Path(__file__).resolve().parents[3] / "jaxml/papers/pcdeq/configs"
    config = load_config(f"{configs / 'reproduce.py'}:{'' if scale == 'full' else scale}")
    assert config.scale == scale and config.parts[-1] == "gradcheck"
    labels = [part_label(p) for p in config.parts]
    assert len(set(labels)) == len(labels)
    for part in config.parts:
        name, _, arg = part.partition(":")
        sub = load_config(f"{configs / name}.py:{','.join(a for a in (arg, scale if scale != 'full' else '') if a)}")
        assert sub.experiment == f"pcdeq/{name}"
    if scale != "tiny":     # the headline's two networks: pcDEQ and the unconstrained DEQ of the same size
        assert {"train:model=linear,variant=pcdeq1,act=tanh", "train:model=linear,variant=deq,act=tanh"} <= set(config.parts)


def test_reproduce_wires_parts_into_claims_table_and_one_convergence_figure(tmp_path, monkeypatch):
    # The reproduce experiment around gather_parts, with hand-made part results (no training).
    import json

    import ml_collections

    from jaxml.core.experiment import Result
    from jaxml.papers.pcdeq import experiments

    metrics = _metrics()
    per_run = []
    for label, rate in (("train_model_linear_variant_pcdeq1_act_tanh", 0.3), ("train_model_linear_variant_deq_act_tanh", 0.7)):
        (tmp_path / label).mkdir()
        (tmp_path / label / "convergence.json").write_text(json.dumps({"deq": {"plain": [1.0, rate, rate ** 2], "rate": rate}}))
        per_run.append(str(tmp_path / label / f"convergence_{label}.png"))

    def fake_gather(slug, config, configs_dir, workdir, headline_part=None, claims=None):
        assert slug == "pcdeq" and headline_part == "train_model_linear_variant_pcdeq1_act_tanh"
        return Result(metrics=metrics, figures=list(per_run), claims=claims(metrics), notes="parts.")

    monkeypatch.setattr(experiments, "gather_parts", fake_gather)
    config = ml_collections.ConfigDict(dict(parts=_PARTS, scale="quick"))
    result = experiments.reproduce(config, tmp_path)
    assert [c.verdict for c in result.claims] == [HOLDS, HOLDS]
    assert result.figures == [str(tmp_path / "convergence_all_networks.png")]       # the per-run ones replaced
    assert (tmp_path / "convergence_all_networks.png").stat().st_size > 0
    table = (tmp_path / "table.md").read_text().splitlines()
    assert table[2] == "| linear pcDEQ-1 tanh | 70,410 | 1 | 0.8400 | 2.0 | — | — | 0.300 | 1.0e-07 |"
    assert table[4] == "| linear explicit tanh | 70,410 | 1 | 0.8450 | 2.0 | — | — | — | — |"
    assert result.notes == "Fashion-MNIST, scale quick. parts."


_RETAIN_CHECK = """
import ctypes, sys
import numpy as np
from jaxml.papers.pcdeq.cpu_memory import retain_freed_memory
libc = ctypes.CDLL("libc.so.6")
if not hasattr(libc, "mallinfo2"):
    print("skip: glibc without mallinfo2"); sys.exit(0)

class Info(ctypes.Structure):
    _fields_ = [(k, ctypes.c_size_t) for k in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                                                 "fsmblks", "uordblks", "fordblks", "keepcost")]

libc.mallinfo2.restype = Info
assert retain_freed_memory() is True
size = 64 << 20
mapped0 = libc.mallinfo2().hblkhd
a = np.ones(size // 4, np.float32)
info = libc.mallinfo2()
assert info.hblkhd - mapped0 < size and info.arena >= size, (info.hblkhd, info.arena)
del a
assert libc.mallinfo2().arena >= size     # freed, kept
print("ok")
"""


def test_retain_freed_memory_keeps_large_buffers_on_the_heap():
    # After retain_freed_memory, a 64 MiB buffer is served from the heap (not mmap-ed) and stays there
    # when freed (not trimmed), so the next one reuses its pages: glibc's mallinfo2 says where the
    # bytes are (hblkhd: mmap-ed; arena: the heap). By default it is mmap-ed and unmapped on free.
    # In a child process: the setting is process-wide and must not leak into the test session.
    import subprocess
    import sys
    from jaxml.papers.pcdeq.cpu_memory import retain_freed_memory
    if not sys.platform.startswith("linux"):
        assert retain_freed_memory() is False
        return
    proc = subprocess.run([sys.executable, "-c", _RETAIN_CHECK], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    if proc.stdout.startswith("skip"):
        pytest.skip(proc.stdout.strip())
    assert proc.stdout.strip() == "ok"
