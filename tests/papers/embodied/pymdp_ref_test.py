"""The embodied agent against pymdp 1.0.4 (JAX backend) through `jaxml.papers.embodied.reference`.

Run: `pytest -m pymdp_ref tests/papers/embodied/pymdp_ref_test.py` (needs the [pymdp-ref] extra).
Both sides compute in float32 from the same float32 tensors, so they differ only by the order of the
floating-point operations (einsum contractions against pymdp's factor_dot). Measured max |diff|:
T-maze qs, neg_efe, q_pi exactly 0; the random 3-factor model (random habits E) qs 0, neg_efe <= 1e-6, q_pi <= 1.2e-6
(also with parameter information gain); Dirichlet updates <= 1.2e-7. So ATOL = 1e-5 throughout.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxml.papers.embodied import action, envs, learning, perception, reference
from jaxml.papers.embodied.agent import AgentSettings, run_population
from jaxml.papers.embodied.memory import LearningSettings
from jaxml.papers.embodied.model import broadcast_model, generative_model

pytestmark = pytest.mark.pymdp_ref

ATOL = 1e-5

_infer_states = jax.jit(perception.infer_states, static_argnames=("num_iter", "schedule"))
_infer_policies = jax.jit(action.infer_policies, static_argnames=("use_utility", "use_states_info_gain",
                                                                   "use_param_info_gain"))


def _compare(model, obs, prior, gamma=16.0, use_states_info_gain=True, use_param_info_gain=False):
    """Max abs differences (qs, neg_efe, q_pi) between ours and pymdp's for one observation and prior."""
    qs = _infer_states(model, [jnp.int32(o) for o in obs], [jnp.asarray(p, jnp.float32) for p in prior],
                       num_iter=16).qs
    q_pi, neg_efe = _infer_policies(model, qs, gamma, use_states_info_gain=use_states_info_gain,
                                    use_param_info_gain=use_param_info_gain)
    ref_qs, ref_neg_efe, ref_q_pi = reference.pymdp_infer(model, obs, prior, gamma, 16, use_states_info_gain,
                                                          use_param_info_gain)
    d_qs = max(float(np.abs(np.asarray(q) - r).max()) for q, r in zip(qs, ref_qs))
    d = lambda x, y: float(np.abs(np.asarray(x) - y).max())  # noqa: E731
    return d_qs, d(neg_efe, ref_neg_efe), d(q_pi, ref_q_pi)


def _assert_close(diffs):
    d_qs, d_neg_efe, d_q_pi = (max(d[i] for d in diffs) for i in range(3))
    print(f"max |diff|: qs {d_qs:.2e}, neg_efe {d_neg_efe:.2e}, q_pi {d_q_pi:.2e} over {len(diffs)} cases")
    assert max(d_qs, d_neg_efe, d_q_pi) <= ATOL, (d_qs, d_neg_efe, d_q_pi)


def test_tmaze_arrays_equal_pymdp_base_tmaze():
    from pymdp.envs.tmaze import BaseTMaze

    env = BaseTMaze(num_locations=4, cue_mode="separate", connectivity="fully_connected", has_middle=False)
    A, B, D, a_deps, b_deps = envs.tmaze_arrays()
    for ours, theirs in ((A, env.A), (B, env.B), (D, env.D)):
        assert len(ours) == len(theirs)
        for x, y in zip(ours, theirs):
            np.testing.assert_array_equal(np.asarray(x, np.float32), np.asarray(y))
    assert [list(d) for d in a_deps] == env.A_dependencies and [list(d) for d in b_deps] == env.B_dependencies
    reference.pymdp_tmaze_env()   # the adapter's own check passes


TMAZE_OBS = [(0, 0, 0), (3, 0, 1), (3, 0, 2), (1, 1, 0), (2, 2, 0), (1, 2, 0)]
TMAZE_PRIORS = [
    None,                                                            # D: at the centre, side unknown
    ([0.0, 0.0, 0.0, 1.0], [0.5, 0.5]),                              # predicted at the cue
    ([0.1, 0.2, 0.3, 0.4], [0.8, 0.2]),                              # a diffuse prior
    ([0.0, 0.7, 0.3, 0.0], [0.05, 0.95]),                            # after a cue, a mixed move
]


@pytest.mark.parametrize("policy_len", [1, 2])
@pytest.mark.parametrize("use_states_info_gain", [True, False])
def test_tmaze_inference_matches_pymdp(policy_len, use_states_info_gain):
    model = envs.tmaze_model(policy_len=policy_len)
    diffs = [_compare(model, obs, model.D if prior is None else prior,
                      use_states_info_gain=use_states_info_gain)
             for obs in TMAZE_OBS for prior in TMAZE_PRIORS]
    _assert_close(diffs)


def _random_model(seed, with_concentrations=False, b_deps=None):
    """3 factors (3, 4, 2 states; 3, 2, 1 controls), 3 modalities on [0, 1], [1, 2], [2]; policy_len 2;
    random habits E over the 36 policies."""
    rng = np.random.default_rng(seed)
    S, U, O = (3, 4, 2), (3, 2, 1), (4, 3, 2)
    a_deps = [[0, 1], [1, 2], [2]]
    b_deps = [[f] for f in range(3)] if b_deps is None else b_deps

    def dirichlet(shape):   # columns over axis 0: rng.gamma normalised
        x = rng.gamma(1.0, size=shape)
        return x / x.sum(0, keepdims=True)

    A_shapes = [(O[m], *[S[f] for f in d]) for m, d in enumerate(a_deps)]
    B_shapes = [(S[f], *[S[j] for j in d], U[f]) for f, d in enumerate(b_deps)]
    C = [rng.normal(size=o) for o in O]
    D = [dirichlet((s,)) for s in S]
    E = dirichlet((36,))
    if with_concentrations:
        pA = [rng.uniform(0.2, 4.0, size=s) for s in A_shapes]
        pB = [rng.uniform(0.2, 4.0, size=s) for s in B_shapes]
        return generative_model(None, None, C, D, E, a_deps=a_deps, b_deps=b_deps, policy_len=2, pA=pA, pB=pB), rng
    A = [dirichlet(s) for s in A_shapes]
    B = [dirichlet(s) for s in B_shapes]
    return generative_model(A, B, C, D, E, a_deps=a_deps, b_deps=b_deps, policy_len=2), rng


def _random_cases(model, rng, n=6):
    cases = [(tuple(int(rng.integers(o)) for o in model.num_obs), list(model.D))]
    for _ in range(n - 1):
        obs = tuple(int(rng.integers(o)) for o in model.num_obs)
        prior = [rng.dirichlet(np.full(s, 0.7)).astype(np.float32) for s in model.num_states]
        cases.append((obs, prior))
    return cases


@pytest.mark.parametrize("use_states_info_gain", [True, False])
def test_random_multifactor_model_matches_pymdp(use_states_info_gain):
    model, rng = _random_model(0)
    assert model.num_policies == 36
    diffs = [_compare(model, obs, prior, use_states_info_gain=use_states_info_gain)
             for obs, prior in _random_cases(model, rng)]
    _assert_close(diffs)


def test_random_multifactor_param_info_gain_matches_pymdp():
    model, rng = _random_model(1, with_concentrations=True)
    diffs = [_compare(model, obs, prior, use_param_info_gain=True) for obs, prior in _random_cases(model, rng)]
    _assert_close(diffs)


@pytest.mark.parametrize("b_deps", [None, [[0, 1], [1], [1, 2]]])
def test_dirichlet_learning_matches_pymdp(b_deps):
    from pymdp.learning import update_obs_likelihood_dirichlet, update_state_transition_dirichlet

    model, rng = _random_model(2, with_concentrations=True, b_deps=b_deps)
    T, lr = 5, 0.7
    obs = np.stack([rng.integers(o, size=T) for o in model.num_obs], axis=1).astype(np.int32)       # [T, M]
    qs = [rng.dirichlet(np.ones(s), size=T).astype(np.float32) for s in model.num_states]            # [T, S_f]
    actions = np.stack([rng.integers(u, size=T) for u in model.num_controls], axis=1).astype(np.int32)  # [T, F]

    ours_A = learning.update_A(model, jnp.asarray(obs), [jnp.asarray(q) for q in qs], lr=lr)
    pA, A = update_obs_likelihood_dirichlet(
        list(model.pA), list(model.A), [jnp.asarray(obs[:, m]) for m in range(obs.shape[1])],
        [jnp.asarray(q) for q in qs], A_dependencies=[list(d) for d in model.a_deps], categorical_obs=False,
        num_obs=list(model.num_obs), lr=lr)
    d_pA = max(float(np.abs(np.asarray(x) - np.asarray(y)).max()) for x, y in zip(ours_A.pA, pA))
    d_A = max(float(np.abs(np.asarray(x) - np.asarray(y)).max()) for x, y in zip(ours_A.A, A))

    ours_B = learning.update_B(model, [jnp.asarray(q) for q in qs], jnp.asarray(actions), lr=lr)
    joint = [[jnp.asarray(qs[f][1:])] + [jnp.asarray(qs[j][:-1]) for j in model.b_deps[f]]
             for f in range(len(qs))]                   # per factor [q(s_f, t+1), q(s_deps, t)...], [T-1, .]
    pB, B = update_state_transition_dirichlet(list(model.pB), list(model.B), joint, jnp.asarray(actions[:-1]),
                                              num_controls=list(model.num_controls), lr=lr)
    d_pB = max(float(np.abs(np.asarray(x) - np.asarray(y)).max()) for x, y in zip(ours_B.pB, pB))
    d_B = max(float(np.abs(np.asarray(x) - np.asarray(y)).max()) for x, y in zip(ours_B.B, B))
    print(f"max |diff|: pA {d_pA:.2e}, A {d_A:.2e}, pB {d_pB:.2e}, B {d_B:.2e}")
    assert max(d_pA, d_A, d_pB, d_B) <= ATOL


def _cue_rate(location):
    """The fraction of agents that visit the cue (location 3) at any step: `location` `[N, T]`."""
    return float(np.mean(np.any(np.asarray(location) == envs.CUE, axis=-1)))


@pytest.mark.filterwarnings("ignore:jax.nn.one_hot input should be integer-typed")  # pymdp's env: float obs
@pytest.mark.parametrize("use_states_info_gain,num_agents", [(True, 500), (False, 2000)])
def test_pymdp_rollout_cue_rate_matches_ours(use_states_info_gain, num_agents):
    # One trial of 3 steps, stochastic selection, gamma = alpha = 16. With the epistemic term nearly every
    # agent visits the cue first; without it the centre and the cue tie (both -G = 0), so the rate is
    # 1/2 + 1/4 = 3/4 and 2000 agents make the two samples' difference's sd 0.014 (0.05 = 3.6 sd).
    run = reference.pymdp_tmaze_rollout(num_agents, 3, jax.random.key(0), gamma=16.0, alpha=16.0,
                                        use_states_info_gain=use_states_info_gain)
    theirs = jax.block_until_ready(run())
    settings = AgentSettings(gamma=16.0, alpha=16.0, use_states_info_gain=use_states_info_gain)
    models = broadcast_model(envs.tmaze_model(), num_agents)
    env = envs.tmaze_env()
    envs_ = jax.tree.map(lambda x: jnp.broadcast_to(x, (num_agents,) + x.shape), env)
    _, episodes = run_population(models, envs_, settings, LearningSettings(), jax.random.split(jax.random.key(1),
                                 num_agents), num_trials=1, num_steps=3)
    ours_rate = _cue_rate(episodes.states[:, 0, :, 0])
    theirs_rate = _cue_rate(theirs["location"])
    print(f"cue-visit rate (states info gain {use_states_info_gain}): ours {ours_rate:.3f}, pymdp {theirs_rate:.3f}")
    assert theirs["location"].shape == (num_agents, 3)
    # the first step sees the same outcome (the centre) from the same prior D in every agent: same q(pi)
    np.testing.assert_allclose(np.asarray(theirs["q_pi"][:, 0]), np.asarray(episodes.q_pi[:, 0, 0]), atol=ATOL)
    assert abs(ours_rate - theirs_rate) <= 0.05


def test_reference_imports_pymdp_lazily(monkeypatch):
    import ast
    import sys

    tree = ast.parse(open(reference.__file__).read())
    top = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    names = [a.name for n in top for a in n.names] + [n.module or "" for n in top if isinstance(n, ast.ImportFrom)]
    assert not any(x.split(".")[0] == "pymdp" for x in names), names   # no module-level pymdp import
    monkeypatch.setitem(sys.modules, "pymdp", None)                      # as if not installed
    with pytest.raises(ImportError, match=r'pip install -e "\.\[pymdp-ref\]"'):
        reference.pymdp_agent(envs.tmaze_model())


def _pymdp_mmp(model, obs, actions, num_iter):
    from pymdp.inference import update_posterior_states

    onehot = [jax.nn.one_hot(jnp.asarray(obs)[:, m], n) for m, n in enumerate(model.num_obs)]
    return update_posterior_states(list(model.A), list(model.B), onehot, jnp.asarray(actions), prior=list(model.D),
                                   A_dependencies=[list(d) for d in model.a_deps],
                                   B_dependencies=[list(d) for d in model.b_deps], num_iter=num_iter, method="mmp")


@pytest.mark.parametrize("which", ["tmaze", "random"])
def test_marginal_message_passing_matches_pymdp(which):
    rng = np.random.default_rng(11)
    if which == "tmaze":
        model = envs.tmaze_model(cue_validity=0.8, reward_probability=0.8)
        obs = np.array([[0, 0, 0], [3, 0, 1], [1, 1, 0], [1, 0, 0]])
        actions = np.array([[3, 0], [1, 0], [1, 0]])
    else:
        sizes = (3, 2)
        A = [rng.dirichlet(np.ones(3), size=3).T, rng.dirichlet(np.ones(4), size=(3, 2)).transpose(2, 0, 1)]
        B = [rng.dirichlet(np.ones(s), size=(s, 2)).transpose(2, 0, 1) for s in sizes]
        D = [rng.dirichlet(np.ones(s)) for s in sizes]
        model = generative_model(A, B, D=D, a_deps=[[0], [0, 1]])
        obs = np.stack([rng.integers(0, 3, 5), rng.integers(0, 4, 5)], 1)
        actions = rng.integers(0, 2, size=(4, 2))
    ours = perception.infer_states_sequence(model, obs, actions, num_iter=16)
    theirs = _pymdp_mmp(model, obs, actions, 16)
    diff = max(float(np.abs(np.asarray(a) - np.asarray(b)).max()) for a, b in zip(ours.qs, theirs))
    print(f"MMP ({which}): max |diff| {diff:.2e}")
    assert diff <= ATOL
