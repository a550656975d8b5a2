"""The agent: perception, action, memory and learning wired into one jitted loop.

One step (`act`): infer q(s) from the outcome and the empirical prior (perception), score the
policies and pick an action (action), carry B(u) q(s) to the next step (memory). One trial
(`run_trial`) is a `lax.scan` of steps that fills an `EpisodicBuffer`; `run_trials` scans trials,
each followed by the Dirichlet learning step that consumes the buffer (learning), so a whole
multi-trial run is one compiled scan of scans. `run_population` vmaps that over agents (each with its
own model, environment and key) and shards the agent axis over the devices of a mesh.

    settings = AgentSettings(use_states_info_gain=False)
    model, env = envs.tmaze_model(), envs.tmaze_env()
    final_model, episodes = run_trials(model, env, settings, LearningSettings(), key, num_trials=1,
                                       num_steps=3)
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import jax
import jax.numpy as jnp

from jaxml.core.mesh import batch_sharding, check_batch_divisible, replicated
from jaxml.papers.embodied import action as act_lib
from jaxml.papers.embodied.memory import (EpisodicBuffer, LearningSettings, empirical_prior, learn_from_episode,
                                          learn_from_step)
from jaxml.papers.embodied.model import GenerativeModel, log_stable
from jaxml.papers.embodied.perception import SCHEDULES, infer_states

PLANNERS = ("enumerate", "sophisticated")


@dataclasses.dataclass(frozen=True)
class AgentSettings:
    """How the agent infers and acts (static: part of the compiled program).

    gamma: policy precision; alpha: action precision (stochastic selection); num_iter, schedule: FPI;
    use_*: the terms of the expected free energy; planner 'enumerate' scores the model's policies,
    'sophisticated' runs `action.sophisticated_search` over joint actions to `depth`."""

    gamma: float = 16.0
    alpha: float = 16.0
    num_iter: int = 16
    schedule: str = "parallel"
    action_selection: str = "stochastic"
    use_utility: bool = True
    use_states_info_gain: bool = True
    use_param_info_gain: bool = False
    planner: str = "enumerate"
    depth: int = 2
    prune_below: float = 1 / 16

    def __post_init__(self):
        if self.schedule not in SCHEDULES:
            raise ValueError(f"AgentSettings.schedule {self.schedule!r}; accepted: {SCHEDULES}")
        if self.action_selection not in act_lib.ACTION_SELECTIONS:
            raise ValueError(f"AgentSettings.action_selection {self.action_selection!r}; accepted: "
                             f"{act_lib.ACTION_SELECTIONS}")
        if self.planner not in PLANNERS:
            raise ValueError(f"AgentSettings.planner {self.planner!r}; accepted: {PLANNERS}")
        if self.num_iter < 1 or self.depth < 1:
            raise ValueError(f"AgentSettings: num_iter and depth must be >= 1, got {self.num_iter}, {self.depth}")

    @property
    def terms(self) -> dict[str, bool]:
        return dict(use_utility=self.use_utility, use_states_info_gain=self.use_states_info_gain,
                    use_param_info_gain=self.use_param_info_gain)


def act(model: GenerativeModel, settings: AgentSettings, obs, prior, key):
    """One perception-action step: (posterior, q over policies or joint actions, action `[F]`, next prior)."""
    post = infer_states(model, list(obs), prior, settings.num_iter, settings.schedule)
    if settings.planner == "enumerate":
        q_pi, _ = act_lib.infer_policies(model, post.qs, settings.gamma, **settings.terms)
        action = act_lib.sample_action(model, q_pi, key, settings.action_selection, settings.alpha)
    else:
        values = act_lib.sophisticated_search(model, post.qs, settings.depth, settings.gamma, settings.prune_below,
                                              settings.num_iter, **settings.terms)
        q_pi = jax.nn.softmax(settings.gamma * values)
        actions = act_lib.joint_actions(model)
        if settings.action_selection == "deterministic":
            action = actions[jnp.argmax(q_pi)]
        else:
            action = actions[jax.random.categorical(key, settings.alpha * log_stable(q_pi))]
    return post, q_pi, action, empirical_prior(model, post.qs, action)


@functools.partial(jax.jit, static_argnames=("settings", "num_steps"))
def run_trial(model: GenerativeModel, env, settings: AgentSettings, key, num_steps: int, trial=0) -> EpisodicBuffer:
    """One trial of `num_steps` outcomes from the environment's reset, the prior starting at D."""
    return _run_trial(model, env, settings, key, num_steps, trial, None, None)[1]


def _run_trial(model, env, settings, key, num_steps, trial, online: LearningSettings | None, start):
    """(model after any online learning, the trial's EpisodicBuffer)."""
    if num_steps < 1:
        raise ValueError(f"num_steps must be >= 1, got {num_steps}")
    k_reset, k_steps = jax.random.split(key)
    state, obs = env.reset(k_reset, trial)
    qs0 = tuple(model.D)
    action0 = jnp.zeros(len(model.B), jnp.int32)

    def step(carry, inputs):
        m, state, obs, prior, qs_prev, action_prev = carry
        k, t = inputs
        k_act, k_env = jax.random.split(k)
        post, q_pi, action, _ = act(m, settings, obs, prior, k_act)
        if online is not None:
            m = learn_from_step(m, obs, post.qs, qs_prev, action_prev, t > 0, online, start)
        prior_next = empirical_prior(m, post.qs, action)
        state_next, obs_next = env.step(k_env, state, action)
        out = EpisodicBuffer(obs=obs, qs=post.qs, q_pi=q_pi, actions=action, vfe=post.vfe, states=state)
        return (m, state_next, obs_next, prior_next, post.qs, action), out

    init = (model, state, obs, qs0, qs0, action0)
    (model, *_), episode = jax.lax.scan(step, init, (jax.random.split(k_steps, num_steps), jnp.arange(num_steps)))
    return model, episode


@functools.partial(jax.jit, static_argnames=("settings", "learning", "num_trials", "num_steps"))
def run_trials(model: GenerativeModel, env, settings: AgentSettings, learning: LearningSettings, key,
               num_trials: int, num_steps: int) -> tuple[GenerativeModel, EpisodicBuffer]:
    """`num_trials` trials with learning (after each trial, or online in 'step' mode):
    (final model, episodes `[num_trials, T, ...]`)."""
    if num_trials < 1:
        raise ValueError(f"num_trials must be >= 1, got {num_trials}")
    start = model
    online = learning if learning.mode == "step" and (learning.learn_A or learning.learn_B) else None

    def trial(m, inputs):
        k, i = inputs
        m, episode = _run_trial(m, env, settings, k, num_steps, i, online, start)
        if learning.any:
            m = learn_from_episode(m, episode, learning, prior=start)
        return m, episode

    return jax.lax.scan(trial, model, (jax.random.split(key, num_trials), jnp.arange(num_trials)))


def run_population(models: GenerativeModel, envs_: Any, settings: AgentSettings, learning: LearningSettings,
                   keys, num_trials: int, num_steps: int, mesh=None, keep=None, shared_model: bool = False):
    """`run_trials` for a population: every leaf of `models`, `envs_` and `keys` has a leading agent axis.

    `shared_model=True`: `models` is one unbatched model that every agent uses (agents that do not
    learn need not hold copies of it; on CPU this halves the T-maze step, `embodied/speed`).
    With a `mesh`, the agents are sharded over its `data` axis (their number must divide evenly; a
    shared model is replicated). `keep(final_models, episodes)` (optional, traced) reduces the outputs
    inside the compiled program, so that a big population does not return every belief. Returns
    `keep(...)` or (final models, episodes).
    """
    n = keys.shape[0]
    if shared_model and learning.any:
        raise ValueError("shared_model=True is for agents that do not learn: give each learning agent its own "
                         "model (model.broadcast_model)")
    if mesh is not None:
        check_batch_divisible(n, mesh, "number of agents")
        envs_, keys = jax.device_put((envs_, keys), batch_sharding(mesh))
        models = jax.device_put(models, replicated(mesh) if shared_model else batch_sharding(mesh))
    return _population_program(settings, learning, num_trials, num_steps, keep, shared_model)(models, envs_, keys)


@functools.lru_cache(maxsize=64)
def _population_program(settings, learning, num_trials, num_steps, keep, shared_model):
    """The jitted population run for these static settings (cached: one compilation per shape)."""
    def run(ms, es, ks):
        one = lambda m, e, k: run_trials(m, e, settings, learning, k, num_trials, num_steps)
        out = jax.vmap(one, in_axes=(None if shared_model else 0, 0, 0))(ms, es, ks)
        return keep(*out) if keep is not None else out

    return jax.jit(run)
