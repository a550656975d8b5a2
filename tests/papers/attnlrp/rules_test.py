"""Each AttnLRP rule against its closed-form formula, and conservation where the rule conserves."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxml.nn.layers import RMSNorm, LayerNorm
from jaxml.papers.attnlrp import rules

RNG = np.random.default_rng(0)


def _relevance(fn, inputs, r_out):
    """Input x gradient of fn with the cotangent R_out / z (so that R_out = z * cotangent)."""
    z, vjp = jax.vjp(fn, *inputs)
    grads = vjp(r_out / z)
    return [np.asarray(x * g) for x, g in zip(inputs, grads)], np.asarray(z)


def test_divide_gradient():
    x = jnp.asarray(RNG.normal(size=5))
    g = jax.grad(lambda x: jnp.sum(rules.divide_gradient(x, 4.0) * 2.0))(x)
    np.testing.assert_allclose(g, np.full(5, 0.5))
    np.testing.assert_array_equal(rules.divide_gradient(x, 4.0), x)


@pytest.mark.parametrize("fn", [jax.nn.silu, jax.nn.gelu, jnp.tanh])
def test_identity_rule_passes_relevance_unchanged(fn):
    x = jnp.asarray(RNG.normal(size=64), jnp.float32)
    r_out = jnp.asarray(RNG.normal(size=64), jnp.float32)
    (r_in,), _ = _relevance(lambda x: rules.identity_rule(fn, x), [x], r_out)
    np.testing.assert_allclose(r_in, r_out, rtol=1e-4, atol=1e-6)


def test_identity_rule_is_finite_at_zero():
    x = jnp.asarray([0.0, 1e-9, -1e-9, 1.0])
    g = jax.grad(lambda x: rules.identity_rule(jax.nn.silu, x).sum())(x)
    np.testing.assert_allclose(g[:3], 0.5)          # silu(x)/x -> silu'(0) = 1/2
    np.testing.assert_allclose(g[3], jax.nn.silu(1.0), rtol=1e-6)


def test_softmax_rule_prop_3_1():
    x = jnp.asarray(RNG.normal(size=(3, 7)))
    r_out = jnp.asarray(RNG.normal(size=(3, 7)))
    (r_in,), s = _relevance(lambda x: jax.nn.softmax(x, -1), [x], r_out)
    expected = np.asarray(x) * (np.asarray(r_out) - s * np.asarray(r_out).sum(-1, keepdims=True))
    np.testing.assert_allclose(r_in, expected, atol=1e-5)


def test_uniform_rule_for_a_bilinear_matmul_prop_3_3():
    a, b = jnp.asarray(RNG.normal(size=(4, 6))), jnp.asarray(RNG.normal(size=(6, 5)))
    r_out = jnp.asarray(RNG.normal(size=(4, 5)))
    (r_a, r_b), o = _relevance(lambda a, b: rules.divide_gradient(a, 2.0) @ rules.divide_gradient(b, 2.0),
                               [a, b], r_out)
    A, B, R = map(np.asarray, (a, b, r_out))
    expected_a = np.einsum("ji,ip,jp->ji", A, B, R / (2 * o))
    expected_b = np.einsum("ji,ip,jp->ip", A, B, R / (2 * o))
    np.testing.assert_allclose(r_a, expected_a, atol=1e-4)
    np.testing.assert_allclose(r_b, expected_b, atol=1e-4)
    np.testing.assert_allclose(r_a.sum() + r_b.sum(), R.sum(), rtol=1e-5)      # conservation


def test_attention_rule_scales_q_k_by_quarter_and_v_by_half():
    q, k, v = (jnp.asarray(RNG.normal(size=(1, 5, 2, 4)), jnp.float32) for _ in range(3))
    f = lambda q, k, v: rules.lrp_attention(q, k, v).sum()
    g = lambda q, k, v: rules.dot_product_attention(q, k, v).sum()
    got, exact = jax.grad(f, (0, 1, 2))(q, k, v), jax.grad(g, (0, 1, 2))(q, k, v)
    for a, b, s in zip(got, exact, (0.25, 0.25, 0.5)):
        np.testing.assert_allclose(a, s * np.asarray(b), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(rules.lrp_attention(q, k, v), rules.dot_product_attention(q, k, v))


def test_gate_uniform_rule_splits_in_half():
    a, b = jnp.asarray(RNG.normal(size=8)), jnp.asarray(RNG.normal(size=8))
    r_out = jnp.asarray(RNG.normal(size=8))
    (r_a, r_b), _ = _relevance(rules._uniform_gate, [a, b], r_out)
    np.testing.assert_allclose(r_a, np.asarray(r_out) / 2, rtol=1e-5)
    np.testing.assert_allclose(r_b, np.asarray(r_out) / 2, rtol=1e-5)


def test_linear_epsilon_rule_is_the_gradient_and_conserves_without_bias():
    x, w = jnp.asarray(RNG.normal(size=(3, 6))), jnp.asarray(RNG.normal(size=(6, 4)))
    r_out = jnp.asarray(RNG.normal(size=(3, 4)))
    (r_x,), z = _relevance(lambda x: x @ w, [x], r_out)
    expected = np.asarray(x) * ((np.asarray(r_out) / z) @ np.asarray(w).T)      # Eq. 8, eps -> 0
    np.testing.assert_allclose(r_x, expected, atol=1e-5)
    np.testing.assert_allclose(r_x.sum(-1), np.asarray(r_out).sum(-1), rtol=1e-4)


@pytest.mark.parametrize("norm", [RMSNorm(1e-5, rules.attnlrp_ops()), LayerNorm(1e-5, rules.attnlrp_ops())])
def test_norm_identity_rule_conserves(norm):
    x = jnp.asarray(RNG.normal(size=(4, 16)) + 0.5, jnp.float32)
    params = norm.init(jax.random.PRNGKey(0), x)
    params = jax.tree_util.tree_map(lambda p: p + 0.3, params)   # non-trivial scale (and bias)
    r_out = jnp.asarray(RNG.normal(size=(4, 16)), jnp.float32)
    (r_in,), y = _relevance(lambda x: norm.apply(params, x), [x], r_out)
    if isinstance(norm, RMSNorm):   # x * c * w with c constant: relevance passes elementwise
        np.testing.assert_allclose(r_in, r_out, rtol=1e-4, atol=1e-6)
    else:   # (x - mean) c w + b: conserved up to the bias's share, exactly as the epsilon rule says
        bias_share = (np.asarray(params["params"]["bias"]) * np.asarray(r_out) / y).sum(-1)
        np.testing.assert_allclose(r_in.sum(-1), np.asarray(r_out).sum(-1) - bias_share, rtol=1e-4, atol=1e-5)


def _gamma_explicit(x, w, b, r_out, gamma):
    """zennit's generalized gamma rule written out per (input, output) pair."""
    n_in, n_out = w.shape
    z = x @ w + b
    r_in = np.zeros_like(x)
    for j in range(n_out):
        pos = z[j] > 0
        contrib = np.zeros(n_in)
        for i in range(n_in):
            same_sign = (x[i] > 0) == pos
            wm = w[i, j] + gamma * (max(w[i, j], 0) if same_sign else min(w[i, j], 0))
            contrib[i] = x[i] * wm
        bm = b[j] + gamma * (max(b[j], 0) if pos else min(b[j], 0))
        r_in += contrib * r_out[j] / (contrib.sum() + bm)
    return r_in


@pytest.mark.parametrize("gamma", [0.0, 0.25, 1.0])
def test_gamma_rule_matches_its_formula(gamma):
    x = RNG.normal(size=7)
    w, b = RNG.normal(size=(7, 5)), RNG.normal(size=5) * 0.1
    r_out = RNG.normal(size=5)
    lin = rules.gamma_linear(gamma)
    (r_in,), _ = _relevance(lambda x: lin(x, jnp.asarray(w), jnp.asarray(b)), [jnp.asarray(x)], jnp.asarray(r_out))
    np.testing.assert_allclose(r_in, _gamma_explicit(x, w, b, r_out, gamma), rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("seed", range(5))
def test_gamma_rule_conserves_without_bias(seed):
    # Its own RNG (the shared one's draws depended on which tests a worker ran first), and an absolute
    # tolerance of float32 rounding on the summed magnitudes: a mixed-sign sum can be near zero.
    rng = np.random.default_rng(seed)
    x, w = jnp.asarray(rng.normal(size=(2, 9))), jnp.asarray(rng.normal(size=(9, 4)))
    r_out = jnp.asarray(rng.normal(size=(2, 4)))
    (r_in,), _ = _relevance(lambda x: rules.gamma_linear(0.5)(x, w, None), [x], r_out)
    scale = float(np.abs(np.asarray(r_in)).sum(-1).max() + np.abs(np.asarray(r_out)).sum(-1).max())
    np.testing.assert_allclose(r_in.sum(-1), np.asarray(r_out).sum(-1), rtol=1e-4, atol=1e-5 * scale)


def test_unknown_rules():
    with pytest.raises(ValueError, match="rules='lrp'"):
        rules.resolve_rules("lrp")
