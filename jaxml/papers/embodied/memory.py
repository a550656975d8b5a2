"""Memory: the empirical prior carried from one step to the next (short-term), and the episodic
buffer of a trial (observations, beliefs, actions) that the learning step consumes (long-term memory
is the Dirichlet concentrations it updates).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import NamedTuple

import jax
import jax.numpy as jnp

from jaxml.papers.embodied import learning
from jaxml.papers.embodied.action import expected_states
from jaxml.papers.embodied.model import GenerativeModel


def empirical_prior(model: GenerativeModel, qs: Sequence, action) -> tuple:
    """The prior over the next state after `action` `[F]`: q(s_{t+1}) = B(u) q(s_t) per factor."""
    return expected_states(model, qs, action)


class EpisodicBuffer(NamedTuple):
    """One trial of T steps (leading axis T on every field; a population adds a batch axis first).

    obs `[T, M]` int outcomes; qs: per factor `[T, S_f]` posteriors; q_pi `[T, K]` the posterior over
    the K policies (or joint actions, for the tree search); actions `[T, F]` the action taken after
    each step (the last row is never executed); vfe `[T]` nats; states `[T, F]` the true hidden state
    (the environment's, for evaluation only: the agent never reads it)."""

    obs: jax.Array
    qs: tuple
    q_pi: jax.Array
    actions: jax.Array
    vfe: jax.Array
    states: jax.Array


LEARNING_MODES = ("trial", "step")


@dataclasses.dataclass(frozen=True)
class LearningSettings:
    """Which parameters learn after each trial, with their learning rates and the forgetting rate.

    forgetting w pulls every concentration toward its value at the start of the run before the new
    counts are added (`learning.py`); A_modalities / B_factors restrict what learns (None: all).
    mode 'trial' learns from the episodic buffer after each trial (pymdp's offline learning); 'step'
    learns A and B online after every step (so that novelty-seeking moves see their own counts within
    a trial), D still after the trial. Forgetting applies at every update."""

    learn_A: bool = False
    learn_B: bool = False
    learn_D: bool = False
    lr_A: float = 1.0
    lr_B: float = 1.0
    lr_D: float = 1.0
    forgetting: float = 0.0
    A_modalities: tuple | None = None
    B_factors: tuple | None = None
    mode: str = "trial"

    def __post_init__(self):
        if self.mode not in LEARNING_MODES:
            raise ValueError(f"LearningSettings.mode {self.mode!r}; accepted: {LEARNING_MODES}")
        for name in ("lr_A", "lr_B", "lr_D"):
            if getattr(self, name) < 0:
                raise ValueError(f"LearningSettings.{name} must be >= 0, got {getattr(self, name)}")
        if not 0 <= self.forgetting < 1:
            raise ValueError(f"LearningSettings.forgetting must be in [0, 1), got {self.forgetting}")

    @property
    def any(self) -> bool:
        return self.learn_A or self.learn_B or self.learn_D


def learn_from_episode(model: GenerativeModel, episode: EpisodicBuffer, settings: LearningSettings,
                       prior: GenerativeModel | None = None) -> GenerativeModel:
    """The model after the Dirichlet updates of `settings` from one (unbatched) episode.

    `prior`: the model whose concentrations the forgetting pulls toward (the agent at the start)."""
    w = settings.forgetting if prior is not None else 0.0
    if settings.mode == "step":                 # A and B were learned online, step by step
        settings = dataclasses.replace(settings, learn_A=False, learn_B=False)
    if settings.learn_A:
        model = learning.update_A(model, episode.obs, episode.qs, settings.lr_A, w,
                                  None if prior is None else prior.pA, modalities=settings.A_modalities)
    if settings.learn_B:
        model = learning.update_B(model, episode.qs, episode.actions, settings.lr_B, w,
                                  None if prior is None else prior.pB, factors=settings.B_factors)
    if settings.learn_D:
        model = learning.update_D(model, [q[0] for q in episode.qs], settings.lr_D, w,
                                  None if prior is None else prior.pD)
    return model


def learn_from_step(model: GenerativeModel, obs, qs: Sequence, qs_prev: Sequence, action_prev, has_prev,
                    settings: LearningSettings, prior: GenerativeModel | None = None) -> GenerativeModel:
    """Online learning ('step' mode): A from this step's outcome `obs` `[M]` and beliefs `qs`, B from the
    transition `qs_prev` -> `qs` under `action_prev` `[F]` when `has_prev` (false at a trial's first step)."""
    w = settings.forgetting if prior is not None else 0.0
    if settings.learn_A:
        model = learning.update_A(model, obs[None], [q[None] for q in qs], settings.lr_A, w,
                                  None if prior is None else prior.pA, modalities=settings.A_modalities)
    if settings.learn_B:
        pair = [jnp.stack([a, b]) for a, b in zip(qs_prev, qs)]
        actions = jnp.stack([action_prev, action_prev])
        valid = jnp.stack([jnp.asarray(has_prev, jnp.float32), jnp.ones((), jnp.float32)])
        new = learning.update_B(model, pair, actions, settings.lr_B, w, None if prior is None else prior.pB,
                                valid=valid, factors=settings.B_factors)
        # at a trial's first step there is no transition: keep the old B (forgetting included)
        model = jax.tree.map(lambda n, o: jnp.where(has_prev, n, o), new, model)
    return model
