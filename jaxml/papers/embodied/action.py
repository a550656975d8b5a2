"""Action: expected free energy of policies, the policy posterior, action selection and a
sophisticated-inference tree search.

For a policy pi = (u_1, ..., u_T) and the current beliefs q(s), each planned step t predicts
q(s_t | pi) (`expected_states`) and q(o_t | pi) (`expected_obs`), and scores (pymdp's
`compute_neg_efe_policy`; higher is better, the negative expected free energy -G):

    neg_efe(pi) = sum_t  E_{q(o_t|pi)}[C]                                   pragmatic value (utility)
                       + H[q(o_t|pi)] - E_{q(s_t|pi)} H[A(o|s)]              state information gain
                       + parameter information gain about A and B (optional, Dirichlet "novelty")

    q(pi) = softmax(gamma * neg_efe + ln E)                                 policy posterior

Action selection follows pymdp's 'full' sampling mode: pick a policy (argmax, or a sample from
softmax(alpha ln q(pi))) and take its first action. `sophisticated_search` replaces the enumeration of
fixed action sequences by a tree over actions and outcomes: the value of an action is its one-step
score plus the expected (over predicted outcomes, each followed by a Bayesian belief update) value of
the best-weighted next action, to a bounded depth, with outcomes of probability below a threshold
pruned (Friston et al. 2021, "Sophisticated inference").
"""

from __future__ import annotations

import itertools
import functools
from collections.abc import Sequence

import jax
import jax.numpy as jnp
from jax.scipy.special import digamma

from jaxml.papers.embodied.model import EPS, GenerativeModel, contract, log_stable
from jaxml.papers.embodied.perception import entropy, infer_states

ACTION_SELECTIONS = ("deterministic", "stochastic")
TERMS = ("use_utility", "use_states_info_gain", "use_param_info_gain")   # the static switches of the EFE


def expected_states(model: GenerativeModel, qs: Sequence, action) -> tuple:
    """q(s') per factor after joint action `action` `[F]` int: sum_s B_f[:, s_deps, u_f] q(s_deps)."""
    return tuple(contract(b[..., action[f]], [qs[j] for j in deps], keep=(0,))
                 for f, (b, deps) in enumerate(zip(model.B, model.b_deps)))


def expected_obs(model: GenerativeModel, qs: Sequence) -> tuple:
    """q(o_m) per modality: sum_s A_m[:, s_deps] q(s_deps)."""
    return tuple(contract(a, [qs[j] for j in deps], keep=(0,)) for a, deps in zip(model.A, model.a_deps))


def state_info_gain(model: GenerativeModel, qs: Sequence, qo: Sequence):
    """Expected information gain about states, sum_m H[q(o_m)] - E_q(s)[H[A_m(. | s)]] (nats)."""
    gain = 0.0
    for a, deps, qo_m in zip(model.A, model.a_deps, qo):
        gain = gain + entropy(qo_m) - contract(entropy(a, axis=0), [qs[j] for j in deps])
    return gain


def utility(model: GenerativeModel, qo: Sequence, t=0):
    """Pragmatic value sum_m q(o_m) . C_m (C_m `[O]`, or `[T, O]` indexed by the planned step t)."""
    total = 0.0
    for c, q in zip(model.C, qo):
        total = total + (q * (c[t] if c.ndim > 1 else c)).sum()
    return total


def _novelty_weights(concentration):
    """W = ln(a0) - ln(a) + psi(a + 1) - psi(a0 + 1), a0 the column sums (pymdp's exact `spm_wnorm`, negated).

    E_{q(o, s)}[W] is the expected KL between Dirichlet posterior and prior after one more count: the
    parameter information gain (Da Costa et al. 2020, eq. D.15)."""
    a = jnp.clip(concentration, EPS)
    a0 = jnp.clip(a.sum(axis=0, keepdims=True), EPS)
    return (jnp.log(a0) - jnp.log(a) + digamma(a + 1.0) - digamma(a0 + 1.0)) * (concentration > 0)


def param_info_gain_A(model: GenerativeModel, qs: Sequence, qo: Sequence):
    """Expected information gain about A from one outcome: sum_m sum_o q(o) E_q(s)[W_m(o, s)]."""
    gain = 0.0
    for p, deps, qo_m in zip(model.pA, model.a_deps, qo):
        if p is None:
            continue
        gain = gain + qo_m @ contract(_novelty_weights(p), [qs[j] for j in deps], keep=(0,))
    return gain


def param_info_gain_B(model: GenerativeModel, qs_next: Sequence, qs_prev: Sequence, action):
    """Expected information gain about B from one transition under `action`."""
    gain = 0.0
    for f, (p, deps) in enumerate(zip(model.pB, model.b_deps)):
        if p is None:
            continue
        w = contract(_novelty_weights(p[..., action[f]]), [qs_prev[j] for j in deps], keep=(0,))
        gain = gain + qs_next[f] @ w
    return gain


def step_value(model: GenerativeModel, qs: Sequence, action, t=0, *, use_utility: bool = True,
               use_states_info_gain: bool = True, use_param_info_gain: bool = False):
    """(neg_efe of one step under `action`, predicted q(s'), predicted q(o))."""
    qs_next = expected_states(model, qs, action)
    qo = expected_obs(model, qs_next)
    value = 0.0
    if use_utility:
        value = value + utility(model, qo, t)
    if use_states_info_gain:
        value = value + state_info_gain(model, qs_next, qo)
    if use_param_info_gain:
        if model.pA is None and model.pB is None:
            raise ValueError("use_param_info_gain needs Dirichlet concentrations pA or pB in the model")
        if model.pA is not None:
            value = value + param_info_gain_A(model, qs_next, qo)
        if model.pB is not None:
            value = value + param_info_gain_B(model, qs_next, qs, action)
    return value, qs_next, qo


def neg_efe_policy(model: GenerativeModel, qs: Sequence, policy, **terms):
    """-G(pi) summed over the T steps of `policy` `[T, F]` (see the module docstring)."""
    def body(carry, t):
        q, total = carry
        value, q_next, _ = step_value(model, q, policy[t], t, **terms)
        return (q_next, total + value), None

    (_, total), _ = jax.lax.scan(body, (tuple(qs), jnp.zeros((), jnp.float32)), jnp.arange(policy.shape[0]),
                                 unroll=True)
    return total


@functools.partial(jax.jit, static_argnames=TERMS)
def neg_efe_all(model: GenerativeModel, qs: Sequence, **terms):
    """-G for every policy of the model, `[P]`."""
    return jax.vmap(lambda pi: neg_efe_policy(model, qs, pi, **terms))(model.policies)


def policy_posterior(neg_efe, E, gamma=16.0):
    """q(pi) = softmax(gamma * neg_efe + ln E), `[P]`."""
    return jax.nn.softmax(gamma * neg_efe + log_stable(E))


@functools.partial(jax.jit, static_argnames=TERMS)
def infer_policies(model: GenerativeModel, qs: Sequence, gamma=16.0, **terms):
    """(q(pi) `[P]`, neg_efe `[P]`) for the current beliefs."""
    neg_efe = neg_efe_all(model, qs, **terms)
    return policy_posterior(neg_efe, model.E, gamma), neg_efe


def action_marginals(model: GenerativeModel, q_pi) -> tuple:
    """q(u_f) at the first step per factor, `[U_f]`: the posterior mass of the policies starting with u_f."""
    first = model.policies[:, 0, :]
    return tuple(jax.nn.one_hot(first[:, f], u).T @ q_pi for f, u in enumerate(model.num_controls))


def sample_action(model: GenerativeModel, q_pi, key=None, selection: str = "deterministic", alpha=16.0):
    """The first action `[F]` of the argmax policy, or of a policy drawn from softmax(alpha ln q(pi))."""
    if selection == "deterministic":
        index = jnp.argmax(q_pi)
    elif selection == "stochastic":
        if key is None:
            raise ValueError("stochastic action selection needs a PRNG key")
        index = jax.random.categorical(key, alpha * log_stable(q_pi))
    else:
        raise ValueError(f"action selection {selection!r}; accepted: {ACTION_SELECTIONS}")
    return model.policies[index, 0]


# ---- sophisticated inference ----------------------------------------------------------------------------

def joint_actions(model: GenerativeModel) -> jax.Array:
    """Every joint action `[prod(U), F]` int32."""
    return jnp.asarray(list(itertools.product(*[range(u) for u in model.num_controls])), jnp.int32)


def _joint_outcomes(model: GenerativeModel):
    return jnp.asarray(list(itertools.product(*[range(o) for o in model.num_obs])), jnp.int32)


def _joint_outcome_probs(qo: Sequence):
    """p(o_1, ..., o_M) = prod_m q(o_m) over the joint outcomes in `itertools.product` order, `[prod(O)]`."""
    p = qo[0]
    for q in qo[1:]:
        p = (p[:, None] * q[None, :]).reshape(-1)
    return p


@functools.partial(jax.jit, static_argnames=("depth", "num_iter", *TERMS))
def sophisticated_search(model: GenerativeModel, qs: Sequence, depth: int = 2, gamma=16.0,
                         prune_below: float = 1 / 16, num_iter: int = 16, **terms):
    """Action values by a tree search over actions and outcomes to `depth` steps, `[prod(U)]`.

    value_d(q, u) = step_value(q, u) + sum_o q(o | u) [q(o|u) >= prune_below] *
                    sum_u' softmax(gamma * value_{d-1}(q_o, .))[u'] value_{d-1}(q_o, u'),
    with q_o the posterior after outcome o (`infer_states` with the predicted prior) and value_0 = 0.
    Outcomes are all joint outcomes of the modalities: the tree has (prod(U) prod(O))^depth leaves, so
    keep depth small (the T-maze at depth 3 is 1.1e7 leaves). Pruned outcomes contribute nothing
    (SPM's convention; the remaining probabilities are not renormalised). Returns `value_depth(qs, .)`.
    """
    if depth < 1:
        raise ValueError(f"depth must be >= 1, got {depth}")
    actions = joint_actions(model)
    outcomes = _joint_outcomes(model)

    def values(q, d):
        def one(u):
            value, q_next, qo = step_value(model, q, u, **terms)
            if d == 1:
                return value
            p = _joint_outcome_probs(qo)

            def future(o):
                post = infer_states(model, list(o), q_next, num_iter=num_iter).qs
                v = values(post, d - 1)
                return jax.nn.softmax(gamma * v) @ v

            later = jax.vmap(future)(outcomes)
            return value + jnp.sum(jnp.where(p >= prune_below, p * later, 0.0))

        return jax.vmap(one)(actions)

    return values(tuple(qs), depth)
