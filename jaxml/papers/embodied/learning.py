"""Learning: Dirichlet updates of A, B and D from an episode of observations, beliefs and actions.

The variational posterior over a categorical parameter with a Dirichlet prior is Dirichlet with the
prior's concentrations plus expected counts (pymdp's `learning.py`; Da Costa et al. 2020, eq. 17):

    a_m <- a_m + lr * sum_t  o_{m,t} (x) q(s_deps(m), t)                      (A: outcome x states)
    b_f <- b_f + lr * sum_t  q(s_f, t+1) (x) q(s_deps(f), t) (x) onehot(u_f, t) (B: next x previous x action)
    d_f <- d_f + lr * q(s_f, 0)                                               (D: the first state)

with (x) the outer product. `forgetting` w in [0, 1) first pulls the concentrations back toward
their prior, c <- c0 + (1 - w) (c - c0), so that old counts fade and the agent can track a world
that changes (w = 0: pymdp's update). The model's A, B, D become the posterior means.
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp

from jaxml.papers.embodied.model import GenerativeModel, dirichlet_mean, outer


def _check_rate(lr, forgetting):
    if isinstance(lr, (int, float)) and lr < 0:
        raise ValueError(f"learning rate must be >= 0, got {lr}")
    if isinstance(forgetting, (int, float)) and not 0 <= forgetting < 1:
        raise ValueError(f"forgetting must be in [0, 1), got {forgetting}")


def _forget(c, c0, forgetting):
    return c if c0 is None else c0 + (1.0 - forgetting) * (c - c0)


def _steps_mask(T: int, valid):
    return jnp.ones(T, jnp.float32) if valid is None else jnp.asarray(valid, jnp.float32)


def obs_counts(obs, qs: Sequence, deps: Sequence[int], num_obs: int, valid=None):
    """sum_t o_t (x) q(s_deps, t): `obs` `[T]` indices, `qs[f]` `[T, S_f]`, `valid` `[T]` 0/1 -> `[O, *S_deps]`."""
    onehot = jax.nn.one_hot(obs, num_obs) * _steps_mask(obs.shape[0], valid)[:, None]
    return jax.vmap(lambda o, *q: outer([o, *q]))(onehot, *[qs[j] for j in deps]).sum(0)


def transition_counts(qs: Sequence, actions, f: int, deps: Sequence[int], num_controls: int, valid=None):
    """sum_t q(s_f, t+1) (x) q(s_deps, t) (x) onehot(u_f, t) over T-1 transitions -> `[S_f, *S_deps, U_f]`.

    `qs[f]` `[T, S_f]`, `actions` `[T, F]` (the action taken after step t; the last row is unused),
    `valid` `[T]`: a transition counts when both of its steps are valid."""
    T = qs[f].shape[0]
    mask = _steps_mask(T, valid)
    pair = mask[1:] * mask[:-1]
    onehot = jax.nn.one_hot(actions[:-1, f], num_controls) * pair[:, None]
    return jax.vmap(lambda nxt, u, *prev: outer([nxt, *prev, u]))(
        qs[f][1:], onehot, *[qs[j][:-1] for j in deps]).sum(0)


def _update(concentrations, params, which, what: str, counts, lr, forgetting, prior):
    """(new concentrations, new means) after adding lr * counts(i) to entry i of `which` (all when None)."""
    if concentrations is None:
        raise ValueError(f"learning {what} needs Dirichlet concentrations p{what} in the model")
    _check_rate(lr, forgetting)
    given = which is not None
    ps, means = list(concentrations), list(params)
    for i in (range(len(ps)) if which is None else which):
        if ps[i] is None:
            if given:
                raise ValueError(f"learning {what}: entry {i} has no concentrations (p{what}[{i}] is None)")
            continue
        ps[i] = _forget(ps[i], None if prior is None else prior[i], forgetting) + lr * counts(i)
        means[i] = dirichlet_mean(ps[i])
    return tuple(ps), tuple(means)


def update_A(model: GenerativeModel, obs, qs: Sequence, lr=1.0, forgetting=0.0, prior=None, valid=None,
             modalities: Sequence[int] | None = None) -> GenerativeModel:
    """The model with pA (and A = its mean) updated from `obs` `[T, M]` and `qs[f]` `[T, S_f]`.

    `prior`: the pA the forgetting pulls toward (default: no forgetting term). `modalities`: which
    to learn (default all that have concentrations)."""
    counts = lambda m: obs_counts(obs[:, m], qs, model.a_deps[m], model.num_obs[m], valid)  # noqa: E731
    pA, A = _update(model.pA, model.A, modalities, "A", counts, lr, forgetting, prior)
    return model.replace(pA=pA, A=A)


def update_B(model: GenerativeModel, qs: Sequence, actions, lr=1.0, forgetting=0.0, prior=None, valid=None,
             factors: Sequence[int] | None = None) -> GenerativeModel:
    """The model with pB (and B) updated from beliefs `qs[f]` `[T, S_f]` and `actions` `[T, F]`."""
    counts = lambda f: transition_counts(qs, actions, f, model.b_deps[f], model.num_controls[f], valid)  # noqa: E731
    pB, B = _update(model.pB, model.B, factors, "B", counts, lr, forgetting, prior)
    return model.replace(pB=pB, B=B)


def update_D(model: GenerativeModel, qs0: Sequence, lr=1.0, forgetting=0.0, prior=None) -> GenerativeModel:
    """The model with pD (and D) updated from the beliefs about the first state `qs0[f]` `[S_f]`."""
    pD, D = _update(model.pD, model.D, None, "D", lambda f: qs0[f], lr, forgetting, prior)
    return model.replace(pD=pD, D=D)
