"""The agent loop: the T-maze behaviour the EFE terms imply, the carried prior, learning between
trials, and a sharded population equal to the unsharded one."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxml.core.mesh import make_mesh
from jaxml.papers.embodied import agent, envs
from jaxml.papers.embodied.action import expected_states
from jaxml.papers.embodied.memory import LearningSettings
from jaxml.papers.embodied.model import broadcast_model
from jaxml.papers.embodied.perception import infer_states


def _population(model, env, n):
    return broadcast_model(model, n), jax.tree.map(lambda x: jnp.broadcast_to(x, (n,) + x.shape), env)


def test_tmaze_paths_with_and_without_the_epistemic_term():
    model, env = envs.tmaze_model(cue_validity=1.0), envs.tmaze_env(cue_validity=1.0)
    keys = jax.random.split(jax.random.key(0), 16)
    models, envs_ = _population(model, env, 16)
    epistemic = agent.AgentSettings(action_selection="deterministic")
    _, ep = agent.run_population(models, envs_, epistemic, LearningSettings(), keys, 1, 3)
    loc, side = np.asarray(ep.states[:, 0, :, 0]), np.asarray(ep.states[:, 0, 0, 1])
    # centre -> cue -> the cued (here: the true) arm, rewarded every time
    np.testing.assert_array_equal(loc, np.stack([np.zeros(16), np.full(16, 3), 1 + side], 1))
    assert np.all(np.asarray(ep.obs[:, 0, 2, 1]) == envs.REWARD)
    # Without it staying and the cue tie at 0 (argmax takes the first policy): no one moves.
    pragmatic = agent.AgentSettings(action_selection="deterministic", use_states_info_gain=False)
    _, ep = agent.run_population(models, envs_, pragmatic, LearningSettings(), keys, 1, 3)
    assert np.all(np.asarray(ep.states[:, 0, :, 0]) == envs.CENTRE)


def test_the_empirical_prior_is_carried_between_steps():
    model, env = envs.tmaze_model(cue_validity=0.8), envs.tmaze_env(cue_validity=0.8)
    ep = agent.run_trial(model, env, agent.AgentSettings(), jax.random.key(3), num_steps=3)
    qs_prev = [q[0] for q in ep.qs]
    for t in range(1, 3):
        prior = expected_states(model, qs_prev, ep.actions[t - 1])
        post = infer_states(model, list(ep.obs[t]), prior)
        for a, b in zip(post.qs, ep.qs):
            np.testing.assert_allclose(np.asarray(a), np.asarray(b[t]), atol=1e-6)
        qs_prev = [q[t] for q in ep.qs]
    assert np.all(np.asarray(ep.vfe) >= -1e-5)                   # -ln p(o) of discrete outcomes is >= 0


def test_learning_between_trials_equals_the_manual_loop():
    model = envs.foraging_model(3)
    env = envs.foraging_env(3, [1], trials_per_block=4)
    settings = agent.AgentSettings(use_param_info_gain=True)
    learn = LearningSettings(learn_A=True, lr_A=1.0, forgetting=0.1)
    key = jax.random.key(5)
    final, episodes = agent.run_trials(model, env, settings, learn, key, num_trials=4, num_steps=2)
    m = model
    from jaxml.papers.embodied.memory import learn_from_episode
    for i, k in enumerate(jax.random.split(key, 4)):
        ep = agent.run_trial(m, env, settings, k, 2, i)
        np.testing.assert_array_equal(np.asarray(ep.actions), np.asarray(episodes.actions[i]))
        m = learn_from_episode(m, ep, learn, prior=model)
    np.testing.assert_allclose(np.asarray(final.pA[1]), np.asarray(m.pA[1]), atol=1e-5)
    assert float(jnp.abs(final.pA[1] - model.pA[1]).sum()) > 1.0     # it did learn


def test_sharded_and_shared_populations_equal_the_plain_one(devices8):
    model, env = envs.tmaze_model(cue_validity=0.9), envs.tmaze_env(cue_validity=0.9)
    models, envs_ = _population(model, env, 16)
    keys = jax.random.split(jax.random.key(7), 16)
    settings = agent.AgentSettings()
    keep = _keep_locations
    plain = agent.run_population(models, envs_, settings, LearningSettings(), keys, 2, 3, keep=keep)
    mesh = make_mesh(devices=devices8)
    sharded = agent.run_population(models, envs_, settings, LearningSettings(), keys, 2, 3, mesh=mesh, keep=keep)
    assert len(sharded.sharding.device_set) == 8
    np.testing.assert_array_equal(np.asarray(plain), np.asarray(sharded))
    shared = agent.run_population(model, envs_, settings, LearningSettings(), keys, 2, 3, keep=keep, shared_model=True)
    np.testing.assert_array_equal(np.asarray(plain), np.asarray(shared))
    assert len(np.unique(np.asarray(plain)[:, :, 2])) > 1              # the agents go to different arms
    with pytest.raises(ValueError, match="number of agents=12 must be divisible"):
        agent.run_population(*_population(model, env, 12), settings, LearningSettings(), keys[:12], 1, 3, mesh=mesh)
    with pytest.raises(ValueError, match="shared_model=True is for agents that do not learn"):
        agent.run_population(model, envs_, settings, LearningSettings(learn_A=True), keys, 1, 3, shared_model=True)


def _keep_locations(models, episodes):
    return episodes.states[..., 0]


def test_settings_are_validated():
    with pytest.raises(ValueError, match="planner"):
        agent.AgentSettings(planner="mcts")
    with pytest.raises(ValueError, match="action_selection"):
        agent.AgentSettings(action_selection="greedy")
    with pytest.raises(ValueError, match="num_steps"):
        agent.run_trial(envs.tmaze_model(), envs.tmaze_env(), agent.AgentSettings(), jax.random.key(0), 0)


def test_online_learning_adds_each_steps_counts():
    model = envs.grid_model(3, noise=0.2, learn="B", concentration=0.5)
    env = envs.grid_env(3, noise=0.2)
    settings = agent.AgentSettings(use_utility=False, use_states_info_gain=False, use_param_info_gain=True)
    final, ep = agent.run_trials(model, env, settings, LearningSettings(learn_B=True, mode="step"),
                                 jax.random.key(2), num_trials=1, num_steps=5)
    qs, actions = np.asarray(ep.qs[0][0]), np.asarray(ep.actions[0, :, 0])
    want = np.asarray(model.pB[0]).copy()
    for t in range(1, 5):
        want[:, :, actions[t - 1]] += np.outer(qs[t], qs[t - 1])
    np.testing.assert_allclose(np.asarray(final.pB[0]), want, atol=1e-5)
    # online counts reach the agent's later choices: its posterior over moves changes within the trial
    assert not np.allclose(np.asarray(ep.q_pi[0, 0]), np.asarray(ep.q_pi[0, -1]))
