"""Perception: posteriors and free energies against Bayes' rule and the NumPy FPI reference."""

import jax.numpy as jnp
import numpy as np
import pytest

from jaxml.papers.embodied import generative_model
from jaxml.papers.embodied.perception import free_energy_trace, infer_states, infer_states_sequence
from tests.papers.embodied import np_reference as ref


def _random_model(seed, sizes=(3, 4, 2), obs=(4, 3, 5), a_deps=((0, 1), (1, 2), (2, 0)), concentration=0.5):
    rng = np.random.default_rng(seed)
    A = [ref.random_categorical(rng, (o,) + tuple(sizes[j] for j in d), concentration) for o, d in zip(obs, a_deps)]
    B = [np.eye(s)[:, :, None] for s in sizes]
    D = [ref.random_categorical(rng, (s,)) for s in sizes]
    return A, B, D, [list(d) for d in a_deps], rng


def test_single_factor_posterior_is_bayes_rule_and_free_energy_is_surprise():
    A = np.array([[0.7, 0.1], [0.2, 0.3], [0.1, 0.6]])
    A2 = np.array([[0.9, 0.4], [0.1, 0.6]])
    prior = np.array([0.25, 0.75])
    model = generative_model([A, A2], [np.eye(2)[:, :, None]], D=[prior])
    post = infer_states(model, [2, 1], [jnp.asarray(prior)])
    joint = A[2] * A2[1] * prior                                 # p(o, s) by hand: [0.1*0.1*0.25, 0.6*0.6*0.75]
    np.testing.assert_allclose(np.asarray(post.qs[0]), joint / joint.sum(), atol=1e-6)
    np.testing.assert_allclose(float(post.vfe), -np.log(joint.sum()), atol=1e-5)
    np.testing.assert_allclose(joint / joint.sum(), [0.0025 / 0.2725, 0.27 / 0.2725], atol=1e-12)


def test_distributional_observation_equals_index_when_one_hot():
    A, B, D, deps, _ = _random_model(0)
    model = generative_model(A, B, D=D, a_deps=deps)
    by_index = infer_states(model, [1, 2, 0])
    by_dist = infer_states(model, [jnp.eye(4)[1], jnp.eye(3)[2], jnp.eye(5)[0]])
    for a, b in zip(by_index.qs, by_dist.qs):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), atol=1e-6)


@pytest.mark.parametrize("schedule", ["parallel", "sequential"])
@pytest.mark.parametrize("num_iter", [1, 3, 16])
def test_multi_factor_fpi_matches_numpy_reference(schedule, num_iter):
    A, B, D, deps, _ = _random_model(1)
    model = generative_model(A, B, D=D, a_deps=deps)
    obs = [3, 0, 4]
    ours = infer_states(model, obs, num_iter=num_iter, schedule=schedule)
    want = ref.fpi(A, deps, obs, D, num_iter, schedule)
    for q, w in zip(ours.qs, want):
        np.testing.assert_allclose(np.asarray(q), w, atol=2e-6)
    np.testing.assert_allclose(float(ours.vfe), ref.free_energy(A, deps, obs, D, want), atol=2e-5)


@pytest.mark.parametrize("seed", range(6))
def test_sequential_fpi_never_increases_free_energy_and_bounds_surprise(seed):
    # Coordinate descent on F: each factor update is F's exact minimiser given the others.
    A, B, D, deps, rng = _random_model(seed, concentration=0.2)          # peaked, strongly coupled factors
    model = generative_model(A, B, D=D, a_deps=deps)
    obs = [int(rng.integers(4)), int(rng.integers(3)), int(rng.integers(5))]
    trace = np.asarray(free_energy_trace(model, obs, num_iter=12, schedule="sequential"))
    assert np.all(np.diff(trace) <= 1e-5), trace
    assert trace[-1] < trace[0] - 1e-3
    # F >= -ln p(o) for any q, with equality only at the exact posterior (not mean-field here).
    assert trace[-1] >= -np.log(ref.evidence(A, deps, obs, D)) - 1e-5


def test_bad_input_is_named():
    A, B, D, deps, _ = _random_model(2)
    model = generative_model(A, B, D=D, a_deps=deps)
    with pytest.raises(ValueError, match="3 modalities"):
        infer_states(model, [0, 1])
    with pytest.raises(ValueError, match="observation 1 has shape"):
        infer_states(model, [0, jnp.ones(7) / 7, 0])
    with pytest.raises(ValueError, match="schedule"):
        infer_states(model, [0, 0, 0], schedule="random")
    with pytest.raises(ValueError, match="prior has 2 factors"):
        infer_states(model, [0, 0, 0], D[:2])


def _sequence_model(seed):
    rng = np.random.default_rng(seed)
    sizes, controls = (3, 2), (2, 2)
    a_deps = [[0], [0, 1]]
    A = [ref.random_categorical(rng, (3, 3), 0.5), ref.random_categorical(rng, (4, 3, 2), 0.5)]
    B = [ref.random_categorical(rng, (s, s, u), 0.5) for s, u in zip(sizes, controls)]
    D = [ref.random_categorical(rng, (s,)) for s in sizes]
    obs = np.stack([rng.integers(0, 3, 4), rng.integers(0, 4, 4)], 1)
    actions = rng.integers(0, 2, size=(3, 2))
    return A, B, D, a_deps, obs, actions


@pytest.mark.parametrize("tau, num_iter", [(1.0, 1), (1.0, 8), (0.5, 8)])
def test_marginal_message_passing_matches_numpy_reference(tau, num_iter):
    A, B, D, a_deps, obs, actions = _sequence_model(3)
    model = generative_model(A, B, D=D, a_deps=a_deps)
    ours = infer_states_sequence(model, obs, actions, num_iter=num_iter, tau=tau)
    want = ref.mmp(A, a_deps, B, obs, actions, D, num_iter, tau)
    for q, w in zip(ours.qs, want):
        np.testing.assert_allclose(np.asarray(q), w, atol=2e-6)


def test_marginal_message_passing_of_one_step_is_fpi_and_errors():
    A, B, D, a_deps, obs, actions = _sequence_model(4)
    model = generative_model(A, B, D=D, a_deps=a_deps)
    one = infer_states_sequence(model, obs[:1], actions[:0], num_iter=16)
    fpi = infer_states(model, list(obs[0]), num_iter=16)
    for q, w in zip(one.qs, fpi.qs):
        np.testing.assert_allclose(np.asarray(q[0]), np.asarray(w), atol=1e-6)
    np.testing.assert_allclose(float(one.vfe), float(fpi.vfe), atol=1e-5)
    with pytest.raises(ValueError, match=r"actions must be \[T - 1, F\] = \[3, 2\]"):
        infer_states_sequence(model, obs, actions[:2])
    coupled = generative_model(A, [B[0], np.ones((2, 3, 2, 2)) / 2], D=D, a_deps=a_deps, b_deps=[[0], [0, 1]])
    with pytest.raises(ValueError, match="factor-local"):
        infer_states_sequence(coupled, obs, actions)
