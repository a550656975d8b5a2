"""The Temporal Perception Module against hand-written numpy references and exact identities."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxml.papers.momentor import tpm

M = 12


def test_position_and_seconds_are_inverses_and_clip():
    t = np.array([0.0, 3.3, 20.0, 39.9, 40.0])
    p = tpm.position(t, 40.0, M)
    np.testing.assert_allclose(p, t / 40.0 * (M - 1))
    np.testing.assert_allclose(tpm.seconds(p, 40.0, M), t, rtol=1e-12)
    np.testing.assert_allclose(tpm.position(np.array([-5.0, 50.0]), 40.0, M), [0.0, M - 1])
    with pytest.raises(ValueError, match="at least 2"):
        tpm.position(1.0, 2.0, 1)


def test_interpolation_matches_a_numpy_reference_and_hits_the_rows_at_integers():
    rng = np.random.default_rng(0)
    table = rng.normal(size=(M, 5)).astype(np.float32)
    p = np.array([0.0, 0.25, 3.5, 7.9, 11.0, 10.999])
    want = []
    for x in p:
        lo, hi = int(np.floor(x)), int(np.ceil(x))
        r = x - lo
        want.append((1 - r) * table[lo] + r * table[hi])
    np.testing.assert_allclose(tpm.interpolate(jnp.asarray(table), p), np.stack(want), rtol=1e-5, atol=1e-6)
    for i in range(M):
        np.testing.assert_array_equal(tpm.interpolate(jnp.asarray(table), float(i)), table[i])


def test_soft_targets_sum_to_one_on_two_neighbours_and_decode_to_the_timestamp():
    p = np.linspace(0.0, M - 1, 97)
    q = np.asarray(tpm.soft_targets(p, M))
    np.testing.assert_allclose(q.sum(-1), 1.0, rtol=1e-6)
    assert (q >= 0).all()
    nz = [np.flatnonzero(row > 0) for row in q]
    assert all(len(z) <= 2 and (len(z) < 2 or z[1] - z[0] == 1) for z in nz)
    np.testing.assert_allclose(q @ np.arange(M), p, atol=1e-5)           # its mean is p
    np.testing.assert_allclose(tpm.decode_position(jnp.asarray(q)), p, atol=1e-5)
    t = np.array([0.0, 1.7, 12.34, 29.99, 30.0])
    np.testing.assert_allclose(tpm.roundtrip(t, 30.0, M), t, atol=1e-5)


def test_interpolated_embedding_is_the_soft_target_times_the_table():
    rng = np.random.default_rng(1)
    table = jnp.asarray(rng.normal(size=(M, 4)).astype(np.float32))
    p = np.array([2.3, 5.0, 9.81])
    np.testing.assert_allclose(tpm.interpolate(table, p), tpm.soft_targets(p, M) @ table, rtol=1e-5, atol=1e-6)


def test_discrete_targets_and_decoding():
    p = np.array([0.4, 0.6, 5.5, 10.9])
    hard = np.asarray(tpm.hard_targets(p, M))
    np.testing.assert_array_equal(hard.argmax(-1), [0, 1, 6, 11])       # round half to even: 5.5 -> 6
    np.testing.assert_array_equal(hard.sum(-1), 1.0)
    np.testing.assert_array_equal(tpm.decode_position(jnp.asarray(hard), interpolated=False), [0, 1, 6, 11])


def test_decoding_uses_the_stronger_neighbour_at_the_edges_too():
    q = np.zeros((3, M), np.float32)
    q[0, [0, 1]] = [0.7, 0.3]                    # left edge
    q[1, [M - 2, M - 1]] = [0.25, 0.75]          # right edge
    q[2, [3, 4, 5]] = [0.2, 0.5, 0.3]            # stronger right neighbour
    np.testing.assert_allclose(tpm.decode_position(jnp.asarray(q)), [0.3, M - 1 - 0.25, (0.5 * 4 + 0.3 * 5) / 0.8],
                               rtol=1e-6)


def _r_numpy(m):
    return np.array([[2.0 ** -abs(i - j) for j in range(m)] for i in range(m)])


def test_propagation_matrix():
    np.testing.assert_array_equal(tpm.propagation_matrix(6), _r_numpy(6).astype(np.float32))


def test_propagation_leaves_the_forward_value_bit_identical():
    rng = np.random.default_rng(2)
    w = jnp.asarray(rng.normal(size=(M, 7)).astype(np.float32))
    assert np.array_equal(np.asarray(tpm.propagate(w)), np.asarray(w))
    assert np.array_equal(np.asarray(jax.jit(tpm.propagate)(w)), np.asarray(w))
    # the literal formula W + RW - sg(RW) is only equal up to rounding, which is why propagate is a custom VJP
    np.testing.assert_allclose(tpm.propagate_reference(w), w, atol=1e-5)


def test_propagation_gives_exactly_the_stated_gradients():
    rng = np.random.default_rng(3)
    w = jnp.asarray(rng.normal(size=(M, 3)).astype(np.float32))
    c = rng.normal(size=(M, 3)).astype(np.float32)
    grad = jax.grad(lambda x: jnp.sum(jnp.asarray(c) * tpm.propagate(x)))(w)
    want = (np.eye(M) + _r_numpy(M)) @ c                       # d/dW of W + RW - sg(RW): (I + R)^T g
    np.testing.assert_allclose(grad, want, rtol=1e-6, atol=1e-6)
    ref = jax.grad(lambda x: jnp.sum(jnp.asarray(c) * tpm.propagate_reference(x)))(w)
    np.testing.assert_allclose(grad, ref, rtol=1e-6, atol=1e-6)
    # a gradient on one token reaches it twice (W and RW) and its neighbours with weights 1/2, 1/4, ...
    one = np.zeros((M, 1), np.float32)
    one[5] = 1.0
    g = jax.grad(lambda x: jnp.sum(jnp.asarray(one) * tpm.propagate(x)))(jnp.zeros((M, 1)))[:, 0]
    np.testing.assert_allclose(g[3:8], [0.25, 0.5, 2.0, 0.5, 0.25])


def test_unknown_encoding_is_an_error():
    with pytest.raises(ValueError, match="accepted: discrete, interpolate, propagate, text"):
        tpm.check_encoding("float")
