"""Perception: variational inference of the hidden state from one observation and an empirical prior.

The mean-field posterior q(s) = prod_f q(s_f) minimises the variational free energy

    F[q] = sum_f E_q[ln q(s_f) - ln prior_f(s_f)] - sum_m E_q[ln A_m(o_m | s_deps(m))]        (nats)

whose stationary point in q(s_f), holding the other factors fixed, is

    q(s_f) = softmax( ln prior_f + sum_{m : f in deps(m)} E_{q(s_deps(m) \\ f)}[ln A_m(o_m | s)] ).

`infer_states` iterates that update `num_iter` times (fixed-point iteration, FPI). With one hidden
factor the update is exact in one pass (pymdp's shortcut too) and F equals -ln p(o) at the optimum.
Two schedules: 'parallel' updates every factor from the previous iterate (pymdp's `run_factorized_fpi`,
which `tests/papers/embodied/pymdp_ref_test.py` matches), 'sequential' updates factor by factor from
the latest values (coordinate descent: F never increases, which the tests check).

Observations are, per modality, an integer outcome index or a categorical distribution `[O_m]`.
`infer_states_sequence` infers a window of steps at once by marginal message passing (pymdp's 'mmp').
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import NamedTuple

import jax
import jax.numpy as jnp

from jaxml.papers.embodied.model import EPS, GenerativeModel, contract, log_stable

SCHEDULES = ("parallel", "sequential")


class Posterior(NamedTuple):
    """q(s) per factor (`qs[f]`: `[S_f]`) and its variational free energy `vfe` (nats, scalar)."""

    qs: tuple
    vfe: jax.Array


def xlogx(x):
    """x ln x with 0 ln 0 = 0 (the floor EPS inside the log, as pymdp's `stable_xlogx`)."""
    return x * jnp.log(jnp.clip(x, EPS))


def entropy(p, axis=None):
    """Shannon entropy in nats over `axis` (all axes when None)."""
    return -xlogx(p).sum(axis=axis)


def observation_log_likelihoods(model: GenerativeModel, obs: Sequence) -> list:
    """ln A_m(o_m | s) per modality, `[*S[a_deps[m]]]`; `obs[m]` an index or a distribution `[O_m]`."""
    if len(obs) != len(model.A):
        raise ValueError(f"got {len(obs)} observations for {len(model.A)} modalities")
    out = []
    for m, (o, a) in enumerate(zip(obs, model.A)):
        o = jnp.asarray(o)
        if o.ndim == 0:
            out.append(log_stable(a[o]))
        elif o.shape == (a.shape[0],):
            out.append(jnp.tensordot(o, log_stable(a), axes=1))
        else:
            raise ValueError(f"observation {m} has shape {o.shape}; accepted: an index () or a distribution "
                             f"({a.shape[0]},)")
    return out


def free_energy(model: GenerativeModel, qs: Sequence, prior: Sequence, log_likelihoods: Sequence):
    """F[q] of the module docstring (nats) for posteriors `qs`, prior and `observation_log_likelihoods`."""
    complexity = sum((xlogx(q) - q * log_stable(p)).sum() for q, p in zip(qs, prior))
    accuracy = sum(contract(ll, [qs[f] for f in deps]) for ll, deps in zip(log_likelihoods, model.a_deps))
    return complexity - accuracy


def _factor_message(model: GenerativeModel, qs: Sequence, log_likelihoods: Sequence, f: int):
    """sum over modalities m that depend on f of E_{q(other factors)}[ln A_m], `[S_f]`."""
    msg = jnp.zeros(model.num_states[f], jnp.float32)
    for ll, deps in zip(log_likelihoods, model.a_deps):
        if f in deps:
            k = deps.index(f)
            msg = msg + contract(ll, [qs[j] for j in deps if j != f], keep=(k,))
    return msg


def _update(model, qs, log_prior, log_likelihoods, schedule):
    qs = list(qs)
    if schedule == "parallel":
        return [jax.nn.softmax(log_prior[f] + _factor_message(model, qs, log_likelihoods, f))
                for f in range(len(qs))]
    for f in range(len(qs)):
        qs[f] = jax.nn.softmax(log_prior[f] + _factor_message(model, qs, log_likelihoods, f))
    return qs


def _validate(model, prior, num_iter, schedule):
    if schedule not in SCHEDULES:
        raise ValueError(f"schedule {schedule!r}; accepted: {SCHEDULES}")
    if num_iter < 1:
        raise ValueError(f"num_iter must be >= 1, got {num_iter}")
    if len(prior) != len(model.B):
        raise ValueError(f"prior has {len(prior)} factors; the model has {len(model.B)}")


@functools.partial(jax.jit, static_argnames=("num_iter", "schedule"))
def infer_states(model: GenerativeModel, obs: Sequence, prior: Sequence | None = None, num_iter: int = 16,
                 schedule: str = "parallel") -> Posterior:
    """q(s | o) by fixed-point iteration from uniform beliefs, and its free energy.

    Args:
      model: the generative model (unbatched; `jax.vmap` for populations).
      obs: per modality an outcome index or a distribution `[O_m]`.
      prior: the empirical prior per factor `[S_f]` (default the model's D).
      num_iter: FPI iterations (ignored with one factor: exact in one pass).
      schedule: 'parallel' (pymdp) or 'sequential' (monotone in F).
    """
    prior = list(model.D if prior is None else prior)
    _validate(model, prior, num_iter, schedule)
    lls = observation_log_likelihoods(model, obs)
    log_prior = [log_stable(p) for p in prior]
    if len(prior) == 1:
        qs = [jax.nn.softmax(log_prior[0] + _factor_message(model, [None], lls, 0))]
    else:
        init = [jnp.full_like(p, 1.0 / p.shape[0]) for p in prior]
        # unrolled: a few tiny updates per iteration, which XLA fuses across iterations (a rolled loop
        # made FPI the largest cost of a T-maze step on CPU)
        qs, _ = jax.lax.scan(lambda q, _: (_update(model, q, log_prior, lls, schedule), None), init, None,
                             length=num_iter, unroll=True)
    return Posterior(tuple(qs), free_energy(model, qs, prior, lls))


@functools.partial(jax.jit, static_argnames=("num_iter", "schedule"))
def free_energy_trace(model: GenerativeModel, obs: Sequence, prior: Sequence | None = None, num_iter: int = 16,
                      schedule: str = "parallel") -> jax.Array:
    """F after each of `num_iter` FPI iterations, `[num_iter + 1]` (entry 0: the uniform start)."""
    prior = list(model.D if prior is None else prior)
    _validate(model, prior, num_iter, schedule)
    lls = observation_log_likelihoods(model, obs)
    log_prior = [log_stable(p) for p in prior]
    init = [jnp.full_like(p, 1.0 / p.shape[0]) for p in prior]

    def step(q, _):
        q = _update(model, q, log_prior, lls, schedule)
        return q, free_energy(model, q, prior, lls)

    _, trace = jax.lax.scan(step, init, None, length=num_iter)
    return jnp.concatenate([free_energy(model, init, prior, lls)[None], trace])


# ---- marginal message passing over a window of steps -------------------------------------------------------

@functools.partial(jax.jit, static_argnames=("num_iter",))
def infer_states_sequence(model: GenerativeModel, obs, actions, prior: Sequence | None = None, num_iter: int = 16,
                          tau: float = 1.0) -> Posterior:
    """q(s_t) for every step of a window by marginal message passing (MMP; Parr et al. 2019, pymdp's `run_mmp`).

    Each iteration moves every ln q(s_t) toward (step `tau`; 1: all the way)

        E_q[ln A(o_t | s)] + 1/2 ln(B(u_{t-1}) q(s_{t-1}))  + 1/2 ln(q(s_{t+1}) . B~(u_t))

    with ln prior in place of the forward message at t = 0, full (not half) weight on the forward
    message at the last step (no message from a future), and B~ the transition normalised over its
    previous-state axis. With one step it is `infer_states`. Transitions must be factor-local
    (`b_deps[f] == (f,)`).

    Args:
      obs: `[T, M]` int outcomes. actions: `[T - 1, F]` int, the action between step t and t + 1.
      prior: the prior over the first state per factor (default D).
    Returns:
      Posterior with `qs[f]` `[T, S_f]` and `vfe` the mean-field free energy of the window (nats):
      sum_t (E ln q - E ln A) - E ln prior(s_0) - sum_t E_{q(s_t) q(s_{t-1})} ln B(u_{t-1}).
    """
    if any(deps != (f,) for f, deps in enumerate(model.b_deps)):
        raise ValueError(f"infer_states_sequence needs factor-local transitions (b_deps[f] == (f,)), got "
                         f"{model.b_deps}")
    obs, actions = jnp.asarray(obs), jnp.asarray(actions)
    T = obs.shape[0]
    if obs.ndim != 2 or obs.shape[1] != len(model.A):
        raise ValueError(f"obs must be [T, {len(model.A)}] outcome indices, got shape {obs.shape}")
    if actions.shape != (T - 1, len(model.B)):
        raise ValueError(f"actions must be [T - 1, F] = [{T - 1}, {len(model.B)}], got shape {actions.shape}")
    if num_iter < 1:
        raise ValueError(f"num_iter must be >= 1, got {num_iter}")
    prior = list(model.D if prior is None else prior)
    F = len(model.B)
    lls = jax.vmap(lambda o: observation_log_likelihoods(model, list(o)))(obs)          # per m: [T, *S_deps]
    Bs = [jnp.moveaxis(b[:, :, actions[:, f]], -1, 0) for f, b in enumerate(model.B)]   # [T - 1, S', S]
    half = jnp.where(jnp.arange(T) < T - 1, 0.5, 1.0)[:, None]

    def messages(qs, f):
        forward = jnp.concatenate([log_stable(prior[f])[None],
                                   log_stable(jnp.einsum("tij,tj->ti", Bs[f], qs[f][:-1]))]) * half
        b_norm = Bs[f] / jnp.clip(Bs[f].sum(-1, keepdims=True), EPS)
        backward = 0.5 * log_stable(jnp.einsum("ti,tij->tj", qs[f][1:], b_norm))
        return forward + jnp.concatenate([backward, jnp.zeros((1, qs[f].shape[1]))])

    def iteration(qs, _):
        ln_a = jax.vmap(lambda q_t, ll_t: [_factor_message(model, q_t, ll_t, f) for f in range(F)])(qs, lls)
        new = []
        for f in range(F):
            ln_q = log_stable(qs[f])
            ln_q = ln_q + tau * (ln_a[f] + messages(qs, f) - ln_q)
            new.append(jax.nn.softmax(ln_q - ln_q.mean(-1, keepdims=True), axis=-1))
        return tuple(new), None

    init = tuple(jnp.full((T, s), 1.0 / s, jnp.float32) for s in model.num_states)
    qs, _ = jax.lax.scan(iteration, init, None, length=num_iter)
    vfe = sum((xlogx(q)).sum() for q in qs) - sum((q[0] * log_stable(p)).sum() for q, p in zip(qs, prior))
    vfe = vfe - sum(jnp.einsum("ti,tij,tj->", qs[f][1:], log_stable(Bs[f]), qs[f][:-1]) for f in range(F))
    vfe = vfe - jax.vmap(lambda q_t, ll_t: sum(contract(ll, [q_t[j] for j in deps])
                                               for ll, deps in zip(ll_t, model.a_deps)))(qs, lls).sum()
    return Posterior(qs, vfe)
