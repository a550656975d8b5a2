"""pcDEQ: existence/uniqueness and geometric convergence, implicit gradients, layers, networks."""

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxml.core.mesh import num_params
from jaxml.papers.pcdeq.experiments import gradient_errors
from jaxml.papers.pcdeq.layers import (DEQLayer, conv3x3, injection, layer_map, pcdeq_init, project_nonnegative,
                                       weight_norm)
from jaxml.papers.pcdeq.models import DEFAULT_WIDTHS, DEQNet, maxpool3x3
from jaxml.papers.pcdeq.solver import Solver, anderson, deq_solve, find_fixed_point, geometric_rate
from kernels.fixed_point.reference import iterate

ACTS = {"tanh": "pcdeq1", "softsign": "pcdeq1", "relu6": "pcdeq1", "sigmoid": "pcdeq2"}


def _problem(conv, act, scale, seed=0):
    k1, k2 = jax.random.split(jax.random.PRNGKey(seed))
    shape_x = (4, 7, 7, 6) if conv else (16, 48)
    shape_w = (3, 3, 6, 6) if conv else (48, 48)
    w = jax.random.uniform(k1, shape_w) * scale            # W >= 0
    x = injection(ACTS[act], jax.random.normal(k2, shape_x))
    return layer_map(act, conv), w, x


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
    z_b, k_b, r_b = find_fixed_point(lambda z: f(w, z, x), 3.0 * jax.random.uniform(jax.random.PRNGKey(7), x.shape),
                                     solver)
    assert float(r_a) < 1e-6 and float(r_b) < 1e-6 and int(k_a) < 500
    # Same point from both starts (uniqueness), and it is a fixed point.
    np.testing.assert_allclose(z_a, z_b, atol=2e-5)
    np.testing.assert_allclose(f(w, z_a, x), z_a, atol=2e-5)
    assert float(jnp.min(z_a)) >= 0.0   # positive map: the fixed point is in the nonnegative orthant
    rate = geometric_rate(np.asarray(hist), skip=1)
    assert 0.0 < rate < 1.0, rate
    # Geometric: log residual is close to linear in k (R^2 of the fit).
    h = np.asarray(hist)
    k = np.arange(len(h))[np.isfinite(h) & (h > 0)][1:]
    y = np.log(h[k])
    fit = np.polyval(np.polyfit(k, y, 1), k)
    r2 = 1 - np.sum((y - fit) ** 2) / np.sum((y - y.mean()) ** 2)
    assert r2 > 0.9, r2


def test_large_nonnegative_weights_still_converge_but_signed_ones_do_not():
    f, w, x = _problem(False, "tanh", scale=1.0)           # row sums ~24
    _, k, r = iterate(lambda z: f(w, z, x), jnp.zeros_like(x), tol=1e-4, max_iter=200)
    assert float(r) < 1e-4 and int(k) < 200
    signed = (w - 0.5) * 2.0                               # same magnitudes, mixed signs
    _, k_s, r_s = iterate(lambda z: f(signed, z, x), jnp.zeros_like(x), tol=1e-4, max_iter=200)
    assert int(k_s) == 200 and float(r_s) > 1e-2          # the unconstrained map oscillates


@pytest.mark.parametrize("conv", [False, True])
def test_implicit_gradient_matches_unrolled_and_finite_differences(conv):
    errs = gradient_errors(conv, "tanh")
    assert errs["unrolled_rel_err_w"] < 1e-4 and errs["unrolled_rel_err_x"] < 1e-4, errs
    assert errs["finite_difference_rel_err"] < 1e-6, errs


def test_probe_reports_backward_iterations():
    f, w, x = _problem(False, "softsign", scale=0.05)
    t = jax.random.normal(jax.random.PRNGKey(3), x.shape)
    loss = lambda w, probe: jnp.sum(deq_solve(f, w, x, probe=probe)[0] * t)
    _, probe_grad = jax.grad(loss, argnums=(0, 1))(w, jnp.zeros(2))
    z, _ = deq_solve(f, w, x)
    _, vjp = jax.vjp(lambda zz: f(w, zz, x), z)
    _, k, r = iterate(lambda u: vjp(u)[0] + t, t)
    assert int(probe_grad[0]) == int(k) and abs(float(probe_grad[1]) - float(r)) < 1e-7


def test_anderson_accelerates_a_slow_contraction():
    _, _, x = _problem(False, "tanh", scale=0.1)
    q, _ = jnp.linalg.qr(jax.random.normal(jax.random.PRNGKey(5), (48, 48)))
    f = lambda z: jnp.tanh(z @ (0.95 * q) + x)             # contraction factor 0.95, signed
    plain = find_fixed_point(f, jnp.zeros_like(x), Solver(tol=1e-6, max_iter=500))
    acc = find_fixed_point(f, jnp.zeros_like(x), Solver(tol=1e-6, max_iter=500, method="anderson"))
    np.testing.assert_allclose(acc[0], plain[0], atol=5e-5)
    assert int(acc[1]) < int(plain[1]), (int(acc[1]), int(plain[1]))


def test_anderson_needs_the_orthant_guard_on_pcdeq_maps():
    f, w, x = _problem(False, "tanh", scale=0.1)
    plain = find_fixed_point(lambda z: f(w, z, x), jnp.zeros_like(x), Solver(tol=1e-6, max_iter=500))
    guarded = anderson(lambda z: f(w, z, x), jnp.zeros_like(x), tol=1e-6, max_iter=500, nonnegative=True)
    np.testing.assert_allclose(guarded[0], plain[0], atol=1e-5)
    # Unguarded, Anderson leaves the nonnegative orthant on this problem and converges to another
    # fixed point of the same map (pcDEQ's uniqueness holds in the orthant only).
    wild, _, res = anderson(lambda z: f(w, z, x), jnp.zeros_like(x), tol=1e-6, max_iter=500)
    assert float(res) < 1e-6 and float(wild.min()) < -0.1
    np.testing.assert_allclose(f(w, wild, x), wild, atol=1e-4)
    # With the guard, its implicit gradient equals plain iteration's.
    t = jax.random.normal(jax.random.PRNGKey(1), x.shape)
    def grads(solver):
        return jax.grad(lambda w, probe: jnp.sum(deq_solve(f, w, x, solver=solver, probe=probe)[0] * t),
                        (0, 1))(w, jnp.zeros(2))
    g_and, probe_and = grads(Solver(tol=1e-7, method="anderson", nonnegative=True))
    g_it, _ = grads(Solver(tol=1e-7))
    np.testing.assert_allclose(g_and, g_it, rtol=1e-3, atol=1e-6)
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


def test_dense_layer_kernel_paths_equal_the_generic_solver():
    x = jax.random.normal(jax.random.PRNGKey(0), (8, 32))
    t = jax.random.normal(jax.random.PRNGKey(1), (8, 32))
    outs = {}
    for impl in ("generic", "xla", "pallas"):
        layer = DEQLayer(variant="pcdeq1", activation="tanh", implementation=impl)
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


def test_conv3x3_and_maxpool_custom_gradients_equal_xla():
    k = jax.random.split(jax.random.PRNGKey(0), 4)
    z, w = jax.random.normal(k[0], (2, 9, 9, 5)), jax.random.normal(k[1], (3, 3, 5, 5))
    t = jax.random.normal(k[2], (2, 9, 9, 5))
    conv = lambda z, w: jax.lax.conv_general_dilated(z, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
    np.testing.assert_allclose(conv3x3(z, w), conv(z, w), atol=1e-5)
    for a, b in zip(jax.grad(lambda z, w: jnp.sum(conv3x3(z, w) * t), (0, 1))(z, w),
                    jax.grad(lambda z, w: jnp.sum(conv(z, w) * t), (0, 1))(z, w)):
        np.testing.assert_allclose(a, b, atol=1e-4)
    pool = lambda x: nn.max_pool(x, (3, 3), strides=(1, 1), padding=((1, 1), (1, 1)))
    np.testing.assert_array_equal(maxpool3x3(z), pool(z))
    np.testing.assert_allclose(jax.grad(lambda x: jnp.sum(maxpool3x3(x) * t))(z),
                               jax.grad(lambda x: jnp.sum(pool(x) * t))(z), atol=1e-6)
    # Ties (a constant image): all of each window's gradient goes to one input, the mass is kept.
    ones = jnp.ones((1, 4, 4, 1))
    g = jax.grad(lambda x: jnp.sum(maxpool3x3(x)))(ones)
    assert float(g.sum()) == 16.0 and set(np.unique(np.asarray(g))) <= {0.0, 1.0, 2.0, 3.0, 4.0, 6.0, 9.0}


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


@pytest.mark.parametrize("model", ["single_conv", "multi_conv"])
def test_conv_networks_train_on_fashion_mnist_with_nonnegative_deq_weights(model, tmp_path):
    from jaxml.core.config import load_config
    from jaxml.core.train import load_train_state
    from jaxml.papers.pcdeq.experiments import train
    from jaxml.papers.pcdeq.task import make_task

    path = "jaxml/papers/pcdeq/configs/train.py"
    config = load_config(f"{path}:tiny,model={model}")
    result = train(config, tmp_path)
    assert result.metrics["last_epoch_forward_iterations"] >= 2
    for key, value in result.metrics.items():
        if key.endswith("/converged"):
            assert value == 1.0, key
        if key.endswith("/uniqueness_distance"):
            assert value < 1e-4, (key, value)
    state = load_train_state(tmp_path, make_task(config), config)
    for path_, leaf in jax.tree_util.tree_leaves_with_path(state.params):
        name = jax.tree_util.keystr(path_)
        if "deq" in name and (name.endswith("['v']") or name.endswith("['g']")):
            assert float(jnp.min(leaf)) >= 0.0, name
