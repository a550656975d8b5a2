"""GPTQ against round-to-nearest, a textbook (non-Cholesky, non-lazy) OBS implementation, and its
exact invariants (the OBS loss identity, the quantization grid of static groups)."""

import jax.numpy as jnp
import numpy as np
import pytest

from jaxml.compress.gptq import gptq, gptq_with_error
from jaxml.compress.quantizers import QuantFormat, integer

IN, OUT = 64, 32


def _kernel(seed=0):
    return np.random.default_rng(seed).standard_normal((IN, OUT)).astype(np.float32)


def _correlated(seed=0, n=2048, rank=8, noise=0.3, spread=0.0):
    """Inputs [n, IN] with a rank-8-plus-noise covariance, channel scales exp(spread * N(0, 1))."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, rank)) @ rng.standard_normal((IN, rank)).T + noise * rng.standard_normal((n, IN))
    return x * np.exp(spread * rng.standard_normal(IN))


def _rtn(w, fmt):
    return np.asarray(integer(jnp.asarray(w), fmt.width, group_size=fmt.group_size, symmetric=fmt.symmetric))


def _output_error(x, w, q):
    return float(np.linalg.norm(x @ (w.astype(np.float64) - q)))


@pytest.mark.parametrize("act_order", [True, False])
@pytest.mark.parametrize("group_size", [0, 16])
@pytest.mark.parametrize("symmetric", [True, False])
@pytest.mark.parametrize("bits", [2, 3, 4, 8])
def test_identity_hessian_is_rtn_exactly(act_order, group_size, symmetric, bits):
    # H = I: no correlations, U is diagonal, no error is propagated; the grid is integer()'s.
    fmt = QuantFormat("int", width=bits, group_size=group_size, symmetric=symmetric)
    w = _kernel()
    np.testing.assert_array_equal(gptq(w, np.eye(IN), fmt, act_order=act_order), _rtn(w, fmt))


def test_static_groups_without_act_order_on_identity_is_rtn():
    fmt = QuantFormat("int", width=3, group_size=16)
    w = _kernel(1)
    np.testing.assert_array_equal(gptq(w, np.eye(IN), fmt, act_order=False, static_groups=True), _rtn(w, fmt))


def _textbook_gptq(w, h, bits, damp, order):
    """Sequential OBS (paper eq. 2-3) with the explicit inverse, symmetric per-output-channel grid:
    quantize row i, spread (w_i - q_i) / [H^-1]_ii along H^-1[i, :], then eliminate i from H^-1."""
    w = w.astype(np.float64).copy()
    levels = 2 ** (bits - 1) - 1
    scale = np.abs(w).max(0) / levels
    h = h + damp * np.mean(np.diag(h)) * np.eye(len(h))
    h_inv = np.linalg.inv(h)
    q = np.zeros_like(w)
    remaining = list(order)
    for i in order:
        q[i] = np.clip(np.round(w[i] / scale), -levels, levels) * scale
        remaining.remove(i)
        err = (w[i] - q[i]) / h_inv[i, i]
        w[remaining] -= np.outer(h_inv[remaining, i], err)
        h_inv = h_inv - np.outer(h_inv[:, i], h_inv[i, :]) / h_inv[i, i]
    return q


@pytest.mark.parametrize("act_order", [False, True])
def test_matches_textbook_obs(act_order):
    x = _correlated(0, spread=1.0)
    h = x.T @ x / len(x)
    w = _kernel(2)
    order = np.argsort(-np.diag(h), kind="stable") if act_order else np.arange(IN)
    want = _textbook_gptq(w, h, 4, 0.01, order)
    got = gptq(w, h, QuantFormat("int", width=4), act_order=act_order, block_size=8)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-5)


@pytest.mark.parametrize("group_size", [0, 16])
@pytest.mark.parametrize("symmetric", [True, False])
def test_beats_rtn_on_correlated_inputs(group_size, symmetric):
    # Measured at seed 0 (3 bits): GPTQ / RTN output error 0.22-0.24 with act-order and
    # 0.32-0.37 without (at most 0.23 and 0.37 over seeds 0-4, symmetric); asserted below 0.35, 0.5.
    x = _correlated(0)
    h = x.T @ x / len(x)
    w = _kernel(100)
    fmt = QuantFormat("int", width=3, group_size=group_size, symmetric=symmetric)
    rtn = _output_error(x, w, _rtn(w, fmt))
    assert _output_error(x, w, gptq(w, h, fmt, act_order=True)) < 0.35 * rtn
    assert _output_error(x, w, gptq(w, h, fmt, act_order=False)) < 0.5 * rtn


@pytest.mark.parametrize("group_size", [0, 16])
def test_act_order_helps_with_unequal_channel_scales(group_size):
    # Channel scales exp(1.5 N(0, 1)); measured act-order / no act-order error 0.28 (seed 0),
    # at most 0.43 over seeds 0-4.
    x = _correlated(0, spread=1.5)
    h = x.T @ x / len(x)
    w = _kernel(100)
    fmt = QuantFormat("int", width=3, group_size=group_size)
    with_order = _output_error(x, w, gptq(w, h, fmt, act_order=True))
    without = _output_error(x, w, gptq(w, h, fmt, act_order=False))
    assert with_order < 0.7 * without


@pytest.mark.parametrize("act_order, group_size, symmetric",
                         [(True, 0, True), (False, 16, True), (False, 16, False), (True, 16, False)])
def test_error_is_the_dampened_quadratic_form(act_order, group_size, symmetric):
    # Each OBS step minimises the quadratic exactly, so the summed losses (w_i - q_i)^2 / U_ii^2
    # equal (w - q)^T H_d (w - q) per output channel; one dead input (H_ii = 0) included.
    x = _correlated(3, spread=1.0)
    x[:, 5] = 0.0
    h = x.T @ x / len(x)
    w = _kernel(4)
    fmt = QuantFormat("int", width=3, group_size=group_size, symmetric=symmetric)
    result = gptq_with_error(w, h, fmt, act_order=act_order, damp=0.05)
    w_dead = w.astype(np.float64)
    w_dead[5] = 0.0
    h_d = h.copy()
    h_d[5, 5] = 1.0
    h_d += 0.05 * np.mean(np.diag(h_d)) * np.eye(IN)
    diff = w_dead - result.kernel
    np.testing.assert_allclose(result.error, np.einsum("io,ij,jo->o", diff, h_d, diff), rtol=1e-9)


@pytest.mark.parametrize("symmetric", [True, False])
def test_static_group_values_lie_on_the_original_groups_grid(symmetric):
    x = _correlated(1, spread=1.0)
    h = x.T @ x / len(x)
    w = _kernel(5)
    bits, group = 3, 16
    q = gptq(w, h, QuantFormat("int", width=bits, group_size=group, symmetric=symmetric), act_order=True)
    assert not np.allclose(q, _rtn(w, QuantFormat("int", width=bits, group_size=group, symmetric=symmetric)))
    for g in range(0, IN, group):
        orig, values = w[g:g + group].astype(np.float64), q[g:g + group].astype(np.float64)
        if symmetric:
            levels = 2 ** (bits - 1) - 1
            scale = np.abs(orig).max(0) / levels
            k = values / scale
            lo, hi = -levels, levels
        else:
            levels = 2 ** bits - 1
            scale = (orig.max(0) - orig.min(0)) / levels
            k = values / scale + np.round(-orig.min(0) / scale)
            lo, hi = 0, levels
        np.testing.assert_allclose(k, np.round(k), atol=1e-4)
        assert k.min() > lo - 1e-4 and k.max() < hi + 1e-4


@pytest.mark.parametrize("group_size", [0, 16])
def test_block_size_does_not_change_the_result(group_size):
    x = _correlated(2)
    h = x.T @ x / len(x)
    w = _kernel(6)
    fmt = QuantFormat("int", width=3, group_size=group_size)
    ref = gptq(w, h, fmt, act_order=False, block_size=1)
    for block in (5, 16, 128):
        np.testing.assert_allclose(gptq(w, h, fmt, act_order=False, block_size=block), ref, rtol=0, atol=1e-6)


def test_dead_inputs_are_zeroed():
    x = _correlated(4)
    x[:, [0, 7]] = 0.0
    h = x.T @ x / len(x)
    w = _kernel(7)
    q = gptq(w, h, QuantFormat("int", width=4, group_size=16))
    np.testing.assert_array_equal(q[[0, 7]], 0.0)
    assert np.all(np.isfinite(q))
    assert _output_error(x, w, q) < 0.5 * _output_error(x, w, _rtn(w, QuantFormat("int", width=4, group_size=16)))


def test_bad_inputs():
    w, h, fmt = _kernel(), np.eye(IN), QuantFormat("int", width=4)
    with pytest.raises(ValueError, match="hessian shape"):
        gptq(w, np.eye(IN + 1), fmt)
    with pytest.raises(ValueError, match="2-D"):
        gptq(w[:, 0], h, fmt)
    with pytest.raises(ValueError, match="kind='mxint'"):
        gptq(w, h, QuantFormat("mxint", width=4))
    with pytest.raises(TypeError, match="QuantFormat"):
        gptq(w, h, "int4")
    with pytest.raises(ValueError, match="group_size=24"):
        gptq(w, h, QuantFormat("int", width=4, group_size=24))
    with pytest.raises(ValueError, match="width=9"):
        gptq(w, h, QuantFormat("int", width=9))
    with pytest.raises(ValueError, match="non-finite"):
        gptq(w, np.full((IN, IN), np.nan), fmt)
    with pytest.raises(ValueError, match="not symmetric"):
        gptq(w, np.triu(np.ones((IN, IN))), fmt)
    with pytest.raises(ValueError, match="damp"):
        gptq(w, h, fmt, damp=-0.1)
    with pytest.raises(ValueError, match="block_size"):
        gptq(w, h, fmt, block_size=0)
    with pytest.raises(ValueError, match="not positive definite"):
        gptq(w, np.ones((IN, IN)), fmt, damp=0.0)       # rank 1, no dampening
