"""Action: expected free energies, policy posteriors, novelty and the tree search against hand
computations, analytic identities and the NumPy reference."""

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.special import digamma, gammaln

from jaxml.papers.embodied import action, envs, generative_model
from jaxml.papers.embodied.perception import infer_states
from tests.papers.embodied import np_reference as ref


def _model(seed, policy_len=2):
    rng = np.random.default_rng(seed)
    sizes, controls = (3, 2), (3, 2)
    a_deps = [[0], [0, 1]]
    A = [ref.random_categorical(rng, (4, 3), 0.7), ref.random_categorical(rng, (3, 3, 2), 0.7)]
    B = [ref.random_categorical(rng, (s, s, u), 0.7) for s, u in zip(sizes, controls)]
    C = [rng.normal(size=4), rng.normal(size=3)]
    D = [ref.random_categorical(rng, (s,)) for s in sizes]
    return A, B, C, D, a_deps, generative_model(A, B, C, D, a_deps=a_deps, policy_len=policy_len)


def test_tmaze_one_step_values_by_hand():
    # At the centre with a 50/50 side belief (cue validity 0.95, certain outcomes at the arms):
    #   stay: nothing to see, worth 0; cue: information gain ln 2 - H(0.95, 0.05), no utility;
    #   an arm: utility 0.5 * 2 + 0.5 * (-3) = -0.5, plus the reward outcome's information gain ln 2.
    model = envs.tmaze_model()
    qs = (jnp.eye(4)[0], jnp.array([0.5, 0.5]))
    neg_efe = np.asarray(action.neg_efe_all(model, qs))
    h = -(0.95 * np.log(0.95) + 0.05 * np.log(0.05))
    np.testing.assert_allclose(neg_efe, [0.0, -0.5 + np.log(2), -0.5 + np.log(2), np.log(2) - h], atol=1e-5)
    q_pi, _ = action.infer_policies(model, qs, gamma=16.0)
    np.testing.assert_allclose(np.asarray(q_pi), ref.softmax(16.0 * neg_efe), atol=1e-6)
    no_info = np.asarray(action.neg_efe_all(model, qs, use_states_info_gain=False))
    np.testing.assert_allclose(no_info, [0.0, -0.5, -0.5, 0.0], atol=1e-6)


def test_policy_posterior_with_habits_by_hand():
    q = np.asarray(action.policy_posterior(jnp.array([1.0, 0.0]), jnp.array([0.25, 0.75]), gamma=2.0))
    want = np.array([0.25 * np.exp(2.0), 0.75]) / (0.25 * np.exp(2.0) + 0.75)
    np.testing.assert_allclose(q, want, atol=1e-6)


@pytest.mark.parametrize("seed", range(3))
def test_neg_efe_matches_numpy_reference_for_every_policy(seed):
    A, B, C, D, a_deps, model = _model(seed)
    ours = np.asarray(action.neg_efe_all(model, tuple(jnp.asarray(d) for d in D)))
    for p, policy in enumerate(np.asarray(model.policies)):
        np.testing.assert_allclose(ours[p], ref.neg_efe(A, a_deps, B, C, D, policy), atol=2e-5)


def test_state_info_gain_is_mutual_information():
    rng = np.random.default_rng(3)
    A = ref.random_categorical(rng, (5, 4), 0.5)
    q = ref.random_categorical(rng, (4,))
    model = generative_model([A], [np.eye(4)[:, :, None]])
    qo = action.expected_obs(model, (jnp.asarray(q),))
    joint = A * q                                              # p(o, s)
    p_o = joint.sum(1, keepdims=True)
    mi = (joint * (np.log(joint) - np.log(p_o) - np.log(q))).sum()
    np.testing.assert_allclose(float(action.state_info_gain(model, (jnp.asarray(q),), qo)), mi, atol=1e-5)


def test_novelty_weight_is_the_dirichlet_kl_of_one_more_count():
    # W(o, s) = KL[Dir(a + e_o) || Dir(a)] per column: the information one observation brings about A.
    rng = np.random.default_rng(4)
    a = rng.uniform(0.2, 5.0, size=(3, 2))

    def dirichlet_kl(p, q):   # KL[Dir(p) || Dir(q)], the standard closed form
        return (gammaln(p.sum()) - gammaln(p).sum() - gammaln(q.sum()) + gammaln(q).sum()
                + ((p - q) * (digamma(p) - digamma(p.sum()))).sum())

    want = np.array([[dirichlet_kl(a[:, s] + np.eye(3)[o], a[:, s]) for s in range(2)] for o in range(3)])
    np.testing.assert_allclose(np.asarray(action._novelty_weights(jnp.asarray(a))), want, atol=2e-5)


def test_param_info_gain_shrinks_with_counts():
    A = np.array([[0.5, 0.5], [0.5, 0.5]])
    B = np.eye(2)[:, :, None]
    qs = (jnp.array([1.0, 0.0]),)
    gains = []
    for c in (1.0, 10.0, 100.0):
        model = generative_model(None, [B], pA=[A * 2 * c])
        qo = action.expected_obs(model, qs)
        gains.append(float(action.param_info_gain_A(model, qs, qo)))
    assert gains[0] > gains[1] > gains[2] > 0
    # At a = (c, c): E_o[W] = ln 2c - ln c + psi(c + 1) - psi(2c + 1), exactly.
    want = [np.log(2) + digamma(c + 1) - digamma(2 * c + 1) for c in (1.0, 10.0, 100.0)]
    np.testing.assert_allclose(gains, want, atol=1e-5)


def test_param_info_gain_needs_concentrations():
    model = envs.tmaze_model()
    with pytest.raises(ValueError, match="pA or pB"):
        action.neg_efe_all(model, model.D, use_param_info_gain=True)


def test_action_marginals_and_deterministic_selection():
    _, _, _, D, _, model = _model(5, policy_len=1)
    q_pi = jnp.array([0.1, 0.05, 0.05, 0.3, 0.2, 0.3])           # policies (u0, u1) in product order
    m0, m1 = action.action_marginals(model, q_pi)
    np.testing.assert_allclose(np.asarray(m0), [0.15, 0.35, 0.5], atol=1e-7)
    np.testing.assert_allclose(np.asarray(m1), [0.35, 0.65], atol=1e-7)
    np.testing.assert_array_equal(np.asarray(action.sample_action(model, q_pi)), [1, 1])


def test_stochastic_selection_frequencies():
    _, _, _, _, _, model = _model(6, policy_len=1)
    q_pi = jnp.array([0.4, 0.1, 0.2, 0.1, 0.1, 0.1])
    keys = jax.random.split(jax.random.key(0), 20000)
    acts = np.asarray(jax.vmap(lambda k: action.sample_action(model, q_pi, k, "stochastic", alpha=1.0))(keys))
    counts = np.array([np.mean((acts[:, 0] == a) & (acts[:, 1] == b)) for a, b in itertools.product(range(3), range(2))])
    np.testing.assert_allclose(counts, np.asarray(q_pi), atol=4 * np.sqrt(0.25 / 20000))
    with pytest.raises(ValueError, match="PRNG key"):
        action.sample_action(model, q_pi, None, "stochastic")
    with pytest.raises(ValueError, match="accepted"):
        action.sample_action(model, q_pi, None, "greedy")


def test_sophisticated_depth_one_is_one_step_enumeration():
    _, _, _, D, _, model = _model(7, policy_len=1)
    qs = tuple(jnp.asarray(d) for d in D)
    np.testing.assert_allclose(np.asarray(action.sophisticated_search(model, qs, depth=1)),
                               np.asarray(action.neg_efe_all(model, qs)), atol=1e-6)


def _sophisticated_reference(A, a_deps, B, C, qs, depth, gamma, num_iter):
    """value_d(q, u) = G1(q, u) + sum_o q(o|u) sum_u' softmax(gamma value_{d-1})(u') value_{d-1}(q_o, u')."""
    actions = list(itertools.product(*[range(b.shape[-1]) for b in B]))
    values = []
    for u in actions:
        v = ref.neg_efe(A, a_deps, B, C, qs, [u])
        if depth > 1:
            q_next = ref.predict_states(B, qs, u)
            qo = ref.predict_obs(A, a_deps, q_next)
            for o in itertools.product(*[range(a.shape[0]) for a in A]):
                p = np.prod([q[i] for q, i in zip(qo, o)])
                if p <= 0:
                    continue
                post = ref.fpi(A, a_deps, list(o), q_next, num_iter)
                later = _sophisticated_reference(A, a_deps, B, C, post, depth - 1, gamma, num_iter)
                v += p * ref.softmax(gamma * later) @ later
        values.append(v)
    return np.array(values)


def test_sophisticated_depth_two_matches_numpy_recursion():
    A, B, C, D, a_deps, model = _model(8, policy_len=1)
    qs = tuple(jnp.asarray(d) for d in D)
    ours = np.asarray(action.sophisticated_search(model, qs, depth=2, gamma=4.0, prune_below=0.0, num_iter=8))
    want = _sophisticated_reference(A, a_deps, B, C, D, 2, 4.0, 8)
    np.testing.assert_allclose(ours, want, atol=1e-4)


def test_sophisticated_search_values_the_cue_without_the_epistemic_term():
    # Two steps ahead, seeing the cue makes the next choice worth 0.95 * 2 - 0.05 * 3 = 1.75; staying
    # leaves the arms at -0.5, so the best continuation after staying is to stay (worth ~0).
    model = envs.tmaze_model()
    qs = (jnp.eye(4)[0], jnp.array([0.5, 0.5]))
    values = np.asarray(action.sophisticated_search(model, qs, depth=2, use_states_info_gain=False))
    assert np.argmax(values) == envs.CUE
    np.testing.assert_allclose(values[envs.CUE], 1.75, atol=1e-3)
    assert abs(values[envs.CENTRE]) < 0.05
