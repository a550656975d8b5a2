"""pymdp (`inferactively-pymdp`, JAX backend) as the numerical reference of the embodied agent.

pymdp is never a runtime dependency of `jaxml.papers.embodied`: every function here imports it inside
its body, so this module imports without it, and a call without it raises an ImportError naming the
extra to install. Used by `tests/papers/embodied/pymdp_ref_test.py` (`pytest -m pymdp_ref`) and for
the speed comparison against pymdp's own rollout loop.

    agent = pymdp_agent(model, batch_size=1, gamma=16.0)           # a pymdp.agent.Agent of our model
    qs, neg_efe, q_pi = pymdp_infer(model, obs=[0, 0, 0], prior=model.D, gamma=16.0, num_iter=16)
    run = pymdp_tmaze_rollout(num_agents=500, num_steps=3, key=jax.random.key(0))
    out = jax.block_until_ready(run())                             # out["location"]: [N, num_steps]
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jaxml.papers.embodied import envs
from jaxml.papers.embodied.model import GenerativeModel

_TMAZE_KW = dict(num_locations=4, cue_mode="separate", connectivity="fully_connected", has_middle=False)


def _pymdp():
    try:
        import pymdp  # noqa: F401
        import pymdp.agent  # noqa: F401
    except ImportError as e:
        raise ImportError("the pymdp reference needs inferactively-pymdp (JAX backend): "
                          'pip install -e ".[pymdp-ref]"') from e
    return pymdp


def pymdp_agent(model: GenerativeModel, batch_size: int = 1, **agent_kwargs):
    """A `pymdp.agent.Agent` of the (unbatched) `model`, with a batch axis of `batch_size` copies.

    A, B, C, D, E, pA, pB, a_deps (A_dependencies), b_deps (B_dependencies) and the policy table
    `[P, T, F]` are passed as lists (pymdp broadcasts each to `[batch_size, ...]`); `agent_kwargs`
    go to the Agent unchanged (gamma, alpha, num_iter, use_states_info_gain, use_param_info_gain,
    action_selection, ...). A pA or pB with None entries (known parameters) has no pymdp counterpart.
    """
    _pymdp()
    from pymdp.agent import Agent

    def concentrations(name, ps):
        if ps is None:
            return None
        if any(p is None for p in ps):
            raise ValueError(f"pymdp's Agent takes no None entries in {name}; give every modality/factor one")
        return [jnp.asarray(p) for p in ps]

    return Agent(A=[jnp.asarray(a) for a in model.A], B=[jnp.asarray(b) for b in model.B],
                 C=[jnp.asarray(c) for c in model.C], D=[jnp.asarray(d) for d in model.D],
                 E=jnp.asarray(model.E), pA=concentrations("pA", model.pA), pB=concentrations("pB", model.pB),
                 A_dependencies=[list(d) for d in model.a_deps], B_dependencies=[list(d) for d in model.b_deps],
                 policies=np.asarray(model.policies), policy_len=model.policy_len, batch_size=batch_size,
                 **agent_kwargs)


def pymdp_infer(model: GenerativeModel, obs: Sequence[int], prior: Sequence, gamma=16.0, num_iter: int = 16,
                use_states_info_gain: bool = True, use_param_info_gain: bool = False):
    """pymdp's state and policy inference for one agent, as numpy.

    Args:
      obs: per modality an outcome index. prior: per factor `[S_f]`.
    Returns:
      (qs: list of `[S_f]` (Agent.infer_states, FPI with `num_iter` parallel iterations),
       neg_efe `[P]`, q_pi `[P]` (Agent.infer_policies)).
    """
    agent = pymdp_agent(model, 1, gamma=gamma, num_iter=num_iter, use_states_info_gain=use_states_info_gain,
                        use_param_info_gain=use_param_info_gain)
    qs, neg_efe, q_pi = _infer_program(agent, [jnp.asarray([o], jnp.int32) for o in obs],
                                       [jnp.asarray(p, jnp.float32)[None] for p in prior])
    return [np.asarray(q[0, -1]) for q in qs], np.asarray(neg_efe[0]), np.asarray(q_pi[0])


@jax.jit
def _infer_program(agent, obs, prior):
    """Agent.infer_states then Agent.infer_policies (compiled once per model structure)."""
    qs = agent.infer_states(obs, prior)              # per factor [1, 1, S_f] (batch, time)
    q_pi, neg_efe = agent.infer_policies(qs)        # [1, P] each
    return qs, neg_efe, q_pi


def pymdp_tmaze_env():
    """pymdp's `BaseTMaze` with 4 fully connected locations and a separate cue modality, after checking
    that its A, B, D (and dependencies) equal `envs.tmaze_arrays()`."""
    _pymdp()
    from pymdp.envs.tmaze import BaseTMaze

    env = BaseTMaze(**_TMAZE_KW)
    A, B, D, a_deps, b_deps = envs.tmaze_arrays()
    for name, ours, theirs in (("A", A, env.A), ("B", B, env.B), ("D", D, env.D)):
        for i, (x, y) in enumerate(zip(ours, theirs)):
            if np.shape(x) != np.shape(y) or not np.allclose(x, np.asarray(y), atol=1e-7):
                raise AssertionError(f"pymdp BaseTMaze {name}[{i}] differs from envs.tmaze_arrays()")
    if [list(d) for d in a_deps] != env.A_dependencies or [list(d) for d in b_deps] != env.B_dependencies:
        raise AssertionError("pymdp BaseTMaze dependencies differ from envs.tmaze_arrays()")
    return env


def pymdp_tmaze_rollout(num_agents: int, num_steps: int, key, gamma=16.0, alpha=16.0,
                        use_states_info_gain: bool = True):
    """pymdp's own rollout (`pymdp.envs.rollout.rollout`) of `num_agents` T-maze agents, jitted once.

    The agents are `envs.tmaze_model()` (policy_len 1) as a pymdp Agent with stochastic action selection
    ('full' sampling: a policy drawn from softmax(alpha ln q(pi))), in pymdp's `BaseTMaze` (checked equal
    to ours). One trial of `num_steps` outcomes, as `agent.run_trial(..., num_steps)`: pymdp's rollout of
    `num_timesteps = num_steps - 1` sees num_steps outcomes.

    Returns `run(key=key) -> dict` (the compiled program; call it again to time it), with
      location `[N, num_steps]` int32  the true location at each step (3: the cue),
      reward_side `[N]` int32, actions `[N, num_steps, 2]` int32 (the last one never executed),
      q_pi `[N, num_steps, P]`.
    """
    if num_steps < 1:
        raise ValueError(f"num_steps must be >= 1, got {num_steps}")
    _pymdp()
    from pymdp.envs.rollout import rollout

    env = pymdp_tmaze_env()
    agent = pymdp_agent(envs.tmaze_model(policy_len=1), num_agents, gamma=gamma, alpha=alpha,
                        use_states_info_gain=use_states_info_gain, action_selection="stochastic")
    env_params = env.generate_env_params(batch_size=num_agents)

    @jax.jit
    def program(agent, env_params, k):
        _, info = rollout(agent, env, num_steps - 1, k, env_params=env_params)
        state = [jnp.reshape(s, (num_agents, num_steps)).astype(jnp.int32) for s in info["env_state"]]
        return dict(location=state[0], reward_side=state[1][:, 0], actions=info["action"].astype(jnp.int32),
                    q_pi=info["qpi"])

    def run(k=key):
        return program(agent, env_params, k)

    return run
