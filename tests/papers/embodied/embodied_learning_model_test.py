"""Model validation, Dirichlet learning in closed form, environments and metrics."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxml.papers.embodied import envs, generative_model, learning, metrics
from jaxml.papers.embodied.memory import EpisodicBuffer, LearningSettings, learn_from_episode
from jaxml.papers.embodied.model import construct_policies
from tests.papers.embodied import np_reference as ref


# ---- model ----------------------------------------------------------------------------------------------

def test_construct_policies_order_and_count():
    p = construct_policies([2, 1, 3], policy_len=2)
    assert p.shape == (36, 2, 3)
    np.testing.assert_array_equal(p[1], [[0, 0, 0], [0, 0, 1]])          # the last step's last factor runs fastest
    np.testing.assert_array_equal(p[-1], [[1, 0, 2], [1, 0, 2]])


@pytest.mark.parametrize("kwargs, message", [
    (dict(A=[np.array([[0.5, 0.5], [0.6, 0.5]])]), r"A\[0\] is not normalised over axis 0: the column at \(0,\) sums to 1.1"),
    (dict(A=[np.array([[1.5, 0.5], [-0.5, 0.5]])]), r"A\[0\] has negative entries"),
    (dict(A=[np.eye(3)]), r"A\[0\] has shape \(3, 3\); expected \[O_0, \*\[2\]\]"),
    (dict(B=[np.eye(2)]), r"B\[0\] has shape \(2, 2\)"),
    (dict(D=[np.array([0.2, 0.2])]), r"D\[0\] is not normalised"),
    (dict(C=[np.zeros(3)]), r"C\[0\] has shape \(3,\); accepted: \(2,\) or \(1, 2\)"),
    (dict(E=np.ones(3) / 3), r"E has shape \(3,\); expected \(2,\)"),
    (dict(a_deps=[[1]]), r"a_deps\[0\] = \[1\]: must be distinct factor indices in \[0, 1\)"),
    (dict(pA=[np.zeros((2, 2))]), r"pA\[0\] must hold finite, strictly positive"),
    (dict(policies=np.array([[[2]]])), r"policies hold actions outside"),
])
def test_bad_models_are_rejected_with_the_array_named(kwargs, message):
    args = dict(A=[np.eye(2)], B=[np.stack([np.eye(2), np.eye(2)[::-1]], -1)])
    args.update(kwargs)
    with pytest.raises(ValueError, match=message):
        generative_model(**args)


# ---- learning -------------------------------------------------------------------------------------------

def _episode(rng, T=6):
    qs = (ref.random_categorical(rng, (3, T)).T, ref.random_categorical(rng, (2, T)).T)
    obs = np.stack([rng.integers(0, 4, T), rng.integers(0, 2, T)], 1)
    actions = np.stack([rng.integers(0, 2, T), np.zeros(T, int)], 1)
    return qs, obs, actions


def _learnable(rng):
    A = [ref.random_categorical(rng, (4, 3, 2)), ref.random_categorical(rng, (2, 2))]
    B = [ref.random_categorical(rng, (3, 3, 2, 2)), np.eye(2)[:, :, None]]
    pA = [a * 3 + 0.5 for a in A]
    pB = [B[0] * 2 + 0.25, None]
    model = generative_model(None, [None, B[1]], a_deps=[[0, 1], [1]], b_deps=[[0, 1], [1]], pA=pA, pB=pB,
                             pD=[np.ones(3), np.ones(2)])
    return model, pA, pB


def test_dirichlet_updates_equal_their_closed_form():
    rng = np.random.default_rng(0)
    model, pA, pB = _learnable(rng)
    qs, obs, actions = _episode(rng)
    valid = np.array([1, 1, 1, 1, 0, 1.0])
    new = learning.update_A(model, jnp.asarray(obs), tuple(map(jnp.asarray, qs)), lr=0.5, valid=jnp.asarray(valid))
    want = pA[0].copy()
    for t in range(6):
        want[obs[t, 0]] += 0.5 * valid[t] * np.outer(qs[0][t], qs[1][t])
    np.testing.assert_allclose(np.asarray(new.pA[0]), want, atol=1e-5)
    np.testing.assert_allclose(np.asarray(new.A[0]), want / want.sum(0), atol=1e-6)
    newB = learning.update_B(model, tuple(map(jnp.asarray, qs)), jnp.asarray(actions), lr=2.0,
                             valid=jnp.asarray(valid))
    wantB = pB[0].copy()
    for t in range(5):
        w = 2.0 * valid[t] * valid[t + 1]
        wantB[:, :, :, actions[t, 0]] += w * np.einsum("i,j,k->ijk", qs[0][t + 1], qs[0][t], qs[1][t])
    np.testing.assert_allclose(np.asarray(newB.pB[0]), wantB, atol=1e-5)
    np.testing.assert_allclose(np.asarray(newB.B[0]), wantB / wantB.sum(0), atol=1e-6)
    assert newB.pB[1] is None
    newD = learning.update_D(model, [jnp.asarray(q[0]) for q in qs], lr=1.0)
    np.testing.assert_allclose(np.asarray(newD.D[0]), (1 + qs[0][0]) / (3 + 1), atol=1e-6)


def test_forgetting_pulls_toward_the_prior_before_counting():
    rng = np.random.default_rng(1)
    model, pA, _ = _learnable(rng)
    qs, obs, actions = _episode(rng)
    once = learning.update_A(model, jnp.asarray(obs), tuple(map(jnp.asarray, qs)))
    twice = learning.update_A(once, jnp.asarray(obs), tuple(map(jnp.asarray, qs)), forgetting=0.25,
                              prior=model.pA)
    counts = np.asarray(once.pA[0]) - pA[0]
    np.testing.assert_allclose(np.asarray(twice.pA[0]), pA[0] + 0.75 * counts + counts, atol=1e-5)
    episode = EpisodicBuffer(obs=jnp.asarray(obs), qs=tuple(map(jnp.asarray, qs)), q_pi=jnp.zeros((6, 1)),
                             actions=jnp.asarray(actions), vfe=jnp.zeros(6), states=jnp.zeros((6, 2), int))
    via_memory = learn_from_episode(once, episode, LearningSettings(learn_A=True, forgetting=0.25), prior=model)
    np.testing.assert_allclose(np.asarray(via_memory.pA[0]), np.asarray(twice.pA[0]), atol=1e-6)


def test_learning_input_errors():
    rng = np.random.default_rng(2)
    model, _, _ = _learnable(rng)
    qs, obs, actions = _episode(rng)
    with pytest.raises(ValueError, match="forgetting"):
        learning.update_A(model, jnp.asarray(obs), qs, forgetting=1.0)
    with pytest.raises(ValueError, match=r"learning B: entry 1 has no concentrations"):
        learning.update_B(model, qs, jnp.asarray(actions), factors=[1])
    with pytest.raises(ValueError, match="learning A needs Dirichlet concentrations pA"):
        learning.update_A(envs.tmaze_model(), jnp.asarray(obs), qs)
    with pytest.raises(ValueError, match="lr_A"):
        LearningSettings(lr_A=-1.0)


# ---- environments ---------------------------------------------------------------------------------------

def test_tmaze_cue_and_reward_frequencies():
    env = envs.tmaze_env(cue_validity=0.8, reward_probability=0.7)
    keys = jax.random.split(jax.random.key(1), 8000)

    def visit(key, place):
        k1, k2 = jax.random.split(key)
        state, obs = env.reset(k1)
        state, obs = env.step(k2, state, jnp.array([place, 0]))
        return state, obs

    state, obs = jax.jit(jax.vmap(lambda k: visit(k, envs.CUE)))(keys)
    state, obs = np.asarray(state), np.asarray(obs)
    assert np.all(state[:, 0] == envs.CUE) and abs(state[:, 1].mean() - 0.5) < 0.03
    correct = obs[:, 2] == 1 + state[:, 1]
    assert abs(correct.mean() - 0.8) < 4 * np.sqrt(0.16 / 8000)
    state, obs = jax.jit(jax.vmap(lambda k: visit(k, envs.LEFT)))(keys)
    state, obs = np.asarray(state), np.asarray(obs)
    rewarded = obs[state[:, 1] == 0, 1] == envs.REWARD
    assert abs(rewarded.mean() - 0.7) < 4 * np.sqrt(0.21 / rewarded.size)
    assert np.all(obs[state[:, 1] == 1, 1] == envs.PUNISHMENT)


def test_grid_walls_and_foraging_schedule():
    B = envs.grid_transitions(3)
    assert B[0, 0, 0] == 1 and B[0, 0, 3] == 1                  # up or left from the corner: stay
    assert B[1, 0, 1] == 1 and B[3, 0, 2] == 1                  # right, down
    np.testing.assert_allclose(B.sum(0), 1.0)
    env = envs.foraging_env(3, [2, 0, 1], trials_per_block=4)
    rich = [int(env.reset(jax.random.key(t), t)[0][1]) for t in range(14)]
    assert rich == [2] * 4 + [0] * 4 + [1] * 6                   # the last block holds past the schedule
    with pytest.raises(ValueError, match="schedule"):
        envs.foraging_env(3, [[0]], 2)
    with pytest.raises(ValueError, match=r"in \[0, 3\)"):
        envs.foraging_env(3, [3], 2)


# ---- metrics --------------------------------------------------------------------------------------------

def test_wilson_interval_known_values():
    lo, hi = metrics.wilson_interval(0, 10)
    assert lo == 0.0 and abs(hi - 0.2775) < 1e-4                 # the textbook 0/10 upper bound
    lo, hi = metrics.wilson_interval(50, 100)
    assert abs(lo - 0.4038) < 1e-4 and abs(hi - 0.5962) < 1e-4
    with pytest.raises(ValueError):
        metrics.wilson_interval(3, 2)


def test_categorical_kl_block_rates_and_visits():
    p = np.array([[0.5, 1.0], [0.5, 0.0]])
    q = np.array([[0.25, 0.5], [0.75, 0.5]])
    want = ((0.5 * np.log(2) + 0.5 * np.log(0.5 / 0.75)) + np.log(2)) / 2
    assert abs(metrics.categorical_kl(p, q) - want) < 1e-12
    assert metrics.categorical_kl(p, p) == 0.0
    rates, tails = metrics.block_rates(np.array([1, 0, 0, 1, 1, 1, 0, 0]), 4)
    np.testing.assert_allclose(rates, [0.5, 0.5])
    np.testing.assert_allclose(tails, [0.5, 0.0])
    visits = metrics.cue_visit_rate(np.array([[0, 3, 1], [0, 1, 3], [0, 0, 0]]), cue=3, before=[1, 2])
    np.testing.assert_array_equal(visits, [True, False, False])
    assert metrics.speed_ratio(2.0, 10.0) == 5.0
    mean, half = metrics.mean_ci(np.array([[1.0], [3.0]]))
    np.testing.assert_allclose(mean, [2.0])
    np.testing.assert_allclose(half, [1.959963984540054 * np.sqrt(2.0) / np.sqrt(2)])
