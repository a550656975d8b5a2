"""Gradient-trained class-incremental baselines for AutoActivator: finetune, EWC, replay, joint.

Every baseline is an MLP over the stream-wide classes (`num_classes(stream)` logits, ReLU hidden
layers) trained one session at a time with the library's loop, `jaxml.core.train.train_and_evaluate`:

    from jaxml.papers.autoactivator import baselines, stream as stream_lib

    sessions = stream_lib.digits_stream()
    config = baselines.baseline_config()          # or override keys, see below
    run = baselines.run_baseline("ewc", sessions, config, "/tmp/cil", seed=0)
    run.acc          # float [T, T]: acc[i, j] = test accuracy on session j after training session i
    run.seconds      # [T] training wall time per session (seconds)

Methods (`METHODS`):
  finetune  each session starts from the previous session's parameters and trains on that session's
            data only (the lower reference: catastrophic forgetting).
  ewc       finetune plus the EWC penalty of Kirkpatrick et al. (2017),
                loss = CE + (lambda / 2) * sum_i F_i (theta_i - theta*_i)^2,
            with the diagonal empirical Fisher F (mean over `fisher_examples` training examples of
            the squared per-example gradient of log p(y | x) over the seen classes) computed after
            each session. Accumulation is "online EWC" with gamma = 1 (Schwarz et al. 2018; Huszar
            2018): F is the *sum* of the per-session Fishers and theta* is the parameters after the
            latest session, so the penalty keeps one anchor and one Fisher whatever the number of
            sessions (Kirkpatrick's original keeps one (F_s, theta*_s) pair per session instead).
  replay    finetune on the session's data plus a class-balanced buffer of at most `buffer_size`
            stored examples of past classes (`replay_buffer`); an upper reference that stores data.
  joint     after session t a fresh model (same seed) is trained on the union of sessions 0..t
            (the upper bound at each step).

All methods use the same number of optimiser steps per session and mask the logits of classes not
seen so far (set to -1e9) in the loss and in predictions, so `acc[i, j]` for `j > i` is 0.

Config (`baseline_config()`, an `ml_collections.ConfigDict`):
  hidden           tuple of hidden widths (empty: a linear classifier)        default (256,)
  steps            optimiser steps per session                                 default 500
  batch_size       global training batch (divisible by the device count)       default 128
  learning_rate    AdamW learning rate (constant schedule)                     default 1e-3
  weight_decay     AdamW decoupled weight decay (0: Adam)                      default 0.0
  ewc_lambda       EWC strength lambda                                         default 100.0
  fisher_examples  examples per session for the Fisher (all if fewer)          default 1000
  buffer_size      replay buffer capacity in examples                          default 200
  eval_batch_size  0: the largest test set rounded up to the device count, at most 1024

One compiled program serves every session and method: the seen-class mask, the EWC anchor,
Fisher and lambda (0 for non-EWC methods) are *model state* of a stateful Task (see
`jaxml.core.task`), passed through `loss` unchanged, never constants baked into the step, and all
shapes stay fixed across sessions (only the small init program, which returns the previous
session's parameters for finetune, EWC and replay, differs per session). The optimiser state (Adam
moments) starts afresh in every session. Each (method, seed, session) trains in
`workdir/<method>/seed<seed>/session<t>`; a rerun restores the finished checkpoints (the loop
resumes from its workdir), so a study killed midway picks up where it stopped.
"""

from __future__ import annotations

import dataclasses
import functools
import pathlib
import time
from collections.abc import Sequence
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import optax

from jaxml.core import train as train_lib
from jaxml.data.pipeline import ArraySource, Source
from jaxml.papers.autoactivator.stream import Session, num_classes, seen_classes

METHODS = ("finetune", "ewc", "replay", "joint")
MASKED_LOGIT = -1e9          # the logit of a class not seen yet
_FISHER_CHUNK = 64           # examples per vmapped per-example-gradient chunk (one compiled shape)

Params = Any


def baseline_config(**overrides: Any) -> ml_collections.ConfigDict:
    """The baselines' config (keys in the module docstring) with `overrides` applied."""
    c = ml_collections.ConfigDict(dict(
        hidden=(256,), steps=500, batch_size=128, learning_rate=1e-3, weight_decay=0.0,
        ewc_lambda=100.0, fisher_examples=1000, buffer_size=200, eval_batch_size=0))
    c.update(overrides)
    return c


class MLP(nn.Module):
    """ReLU MLP: inputs float32 [batch, d] -> logits float32 [batch, num_classes]."""

    hidden: tuple[int, ...]
    num_classes: int

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        for i, width in enumerate(self.hidden):
            x = nn.relu(nn.Dense(width, name=f"hidden_{i}")(x))
        return nn.Dense(self.num_classes, name="head")(x)


def masked_logits(logits: jax.Array, seen: jax.Array) -> jax.Array:
    """`logits` [..., C] with the classes where `seen` [C] is 0 set to `MASKED_LOGIT`."""
    return jnp.where(seen > 0, logits, MASKED_LOGIT)


def seen_mask(stream: Sequence[Session], upto: int) -> np.ndarray:
    """float32 [num_classes(stream)]: 1 for the classes of sessions 0..upto, else 0."""
    mask = np.zeros(num_classes(stream), np.float32)
    mask[list(seen_classes(stream, upto))] = 1.0
    return mask


def predict(model: MLP, params: Params, seen: jax.Array, x: jax.Array) -> jax.Array:
    """int32 [batch]: the argmax over the seen classes (`seen` [C]) of the logits of `x` [batch, d]."""
    return jnp.argmax(masked_logits(model.apply({"params": params}, x), seen), -1).astype(jnp.int32)


def ewc_penalty(params: Params, anchor: Params, fisher: Params, ewc_lambda: jax.Array) -> jax.Array:
    """(lambda / 2) * sum_i F_i (theta_i - theta*_i)^2 over every leaf of the pytrees."""
    terms = jax.tree_util.tree_map(lambda p, a, f: jnp.sum(f * jnp.square(p - a)), params, anchor, fisher)
    return 0.5 * ewc_lambda * sum(jax.tree_util.tree_leaves(terms))


@functools.partial(jax.jit, static_argnums=0)
def _squared_grad_sums(model: MLP, params: Params, seen: jax.Array, x: jax.Array, y: jax.Array,
                       weight: jax.Array) -> Params:
    """sum_n weight_n * (d log p(y_n | x_n) / d theta)^2 over a chunk (weight 0 marks padding)."""

    def log_likelihood(p, xi, yi):
        logits = masked_logits(model.apply({"params": p}, xi[None]), seen)[0]
        return jax.nn.log_softmax(logits)[yi]

    grads = jax.vmap(jax.grad(log_likelihood), in_axes=(None, 0, 0))(params, x, y)
    return jax.tree_util.tree_map(lambda g: jnp.tensordot(weight, jnp.square(g), axes=1), grads)


def empirical_fisher(model: MLP, params: Params, seen: np.ndarray, x: np.ndarray, y: np.ndarray) -> Params:
    """The diagonal empirical Fisher: mean over the n examples `x` [n, d], `y` [n] of the squared
    per-example gradient of log p(y | x) (softmax over the `seen` [C] classes); a float32 pytree
    shaped like `params`. Computed in padded chunks of `_FISHER_CHUNK` (one compiled shape)."""
    n = len(y)
    if n == 0:
        raise ValueError("empirical_fisher: no examples")
    params = jax.tree_util.tree_map(jnp.asarray, params)
    total = jax.tree_util.tree_map(lambda p: jnp.zeros(p.shape, jnp.float32), params)
    for start in range(0, n, _FISHER_CHUNK):
        idx = np.arange(start, start + _FISHER_CHUNK)
        weight = (idx < n).astype(np.float32)
        idx = np.where(idx < n, idx, 0)
        sums = _squared_grad_sums(model, params, jnp.asarray(seen), jnp.asarray(x[idx]),
                                  jnp.asarray(y[idx]), jnp.asarray(weight))
        total = jax.tree_util.tree_map(jnp.add, total, sums)
    return jax.tree_util.tree_map(lambda t: np.asarray(t) / n, total)


def update_buffer(buffer: tuple[np.ndarray, np.ndarray], session: Session, buffer_size: int,
                  rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """The replay buffer `(x [m, d], y [m])` after learning `session`.

    Every class seen so far keeps `buffer_size // number of seen classes` examples (all it has if
    fewer): the classes already stored keep the first ones of their stored examples (a random
    subset, so still a random subset), and the session's new classes get a random choice of their
    training examples. Only the data of `session` and the old buffer are read."""
    x_old, y_old = buffer
    classes = list(dict.fromkeys([int(c) for c in y_old] + list(session.classes)))
    per_class = buffer_size // len(classes)
    xs, ys = [], []
    for c in classes:
        if c in session.classes:
            idx = np.flatnonzero(session.y_train == c)
            idx = rng.choice(idx, size=min(per_class, len(idx)), replace=False)
            xs.append(session.x_train[idx])
        else:
            xs.append(x_old[y_old == c][:per_class])
        ys.append(np.full(len(xs[-1]), c, np.int32))
    return np.concatenate(xs).astype(np.float32), np.concatenate(ys)


def empty_buffer(dim: int) -> tuple[np.ndarray, np.ndarray]:
    """An empty replay buffer for `dim` features."""
    return np.zeros((0, dim), np.float32), np.zeros((0,), np.int32)


def replay_buffer(stream: Sequence[Session], upto: int, buffer_size: int, seed: int
                  ) -> tuple[np.ndarray, np.ndarray]:
    """The buffer `(x [m, d] float32, y [m] int32)`, m <= buffer_size, after sessions 0..upto
    (the one `replay` trains session upto + 1 with); session t's choice is seeded by (seed, t)."""
    buffer = empty_buffer(stream[0].dim)
    for t in range(upto + 1):
        buffer = update_buffer(buffer, stream[t], buffer_size, np.random.default_rng([seed, t]))
    return buffer


@dataclasses.dataclass(frozen=True, eq=False)
class BaselineTask:
    """A stateful Task (see `jaxml.core.task`): one session of a baseline.

    Attributes:
      model: the MLP.
      train_source: Source of `{"x": float32 [d], "y": int32}` examples.
      eval_sources: `{split: Source}`, evaluated with per-example `accuracy`.
      seen: float32 [C], 1 for the classes seen so far.
      init_params: the parameters to start from (None: a fresh init from the loop's rng).
      anchor, fisher: the EWC anchor and Fisher (pytrees like the params; None: zeros).
      ewc_lambda: the EWC strength (0 turns the penalty off).
    The model state is `{"seen", "anchor", "fisher", "ewc_lambda"}`, returned unchanged by `loss`.
    """

    model: MLP
    train_source: Source
    eval_sources: dict[str, Source]
    seen: np.ndarray
    init_params: Params | None = None
    anchor: Params | None = None
    fisher: Params | None = None
    ewc_lambda: float = 0.0

    def init(self, rng: jax.Array, batch: dict[str, jax.Array]) -> Params:
        if self.init_params is not None:
            return jax.tree_util.tree_map(lambda p: jnp.asarray(p, jnp.float32), self.init_params)
        return self.model.init(rng, batch["x"])["params"]

    def init_state(self, rng: jax.Array, batch: dict[str, jax.Array]) -> dict[str, Any]:
        zeros = jax.tree_util.tree_map(jnp.zeros_like, self.init(rng, batch))

        def as_f32(tree):
            return zeros if tree is None else jax.tree_util.tree_map(lambda p: jnp.asarray(p, jnp.float32), tree)

        return {"seen": jnp.asarray(self.seen, jnp.float32), "anchor": as_f32(self.anchor),
                "fisher": as_f32(self.fisher), "ewc_lambda": jnp.asarray(self.ewc_lambda, jnp.float32)}

    def loss(self, params: Params, batch: dict[str, jax.Array], rng: jax.Array, model_state: dict[str, Any]):
        del rng
        logits = masked_logits(self.model.apply({"params": params}, batch["x"]), model_state["seen"])
        ce = optax.softmax_cross_entropy_with_integer_labels(logits, batch["y"]).mean()
        penalty = ewc_penalty(params, model_state["anchor"], model_state["fisher"], model_state["ewc_lambda"])
        accuracy = jnp.mean(jnp.argmax(logits, -1) == batch["y"])
        return ce + penalty, ({"ce": ce, "ewc_penalty": penalty, "accuracy": accuracy}, model_state)

    def evaluate(self, params: Params, batch: dict[str, jax.Array], model_state: dict[str, Any]):
        labels = predict(self.model, params, model_state["seen"], batch["x"])
        return {"accuracy": (labels == batch["y"]).astype(jnp.float32)}

    def train_data(self) -> Source:
        return self.train_source

    def eval_data(self) -> dict[str, Source]:
        return self.eval_sources


@dataclasses.dataclass(frozen=True, eq=False)
class BaselineRun:
    """The result of `run_baseline`.

    Attributes:
      acc: float [T, T]; acc[i, j] = accuracy on session j's test set after training session i
        (argmax over the classes seen through i; 0 for j > i).
      seconds: training wall time per session (the loop's `train_time_s`, step compilation
        included, summed over resumed runs; for EWC plus the Fisher computation).
      method, seed: as passed.
    """

    acc: np.ndarray
    seconds: list[float]
    method: str
    seed: int


def loop_config(config: ml_collections.ConfigDict, seed: int, eval_batch_size: int) -> ml_collections.ConfigDict:
    """The loop config (`jaxml.core.train.default_config()` plus these settings) of one session."""
    c = train_lib.default_config()
    c.seed = int(seed)
    c.num_steps = int(config.steps)
    c.batch_size = int(config.batch_size)
    c.eval_batch_size = int(eval_batch_size)
    c.optimizer = ml_collections.ConfigDict(dict(
        name="adamw", learning_rate=float(config.learning_rate), weight_decay=float(config.weight_decay),
        grad_clip_norm=0.0))
    c.schedule = ml_collections.ConfigDict(dict(name="constant", warmup_steps=0, end_factor=0.0))
    c.checkpoint_every_steps = int(config.steps)
    c.log_every_steps = max(1, min(int(config.steps), 100))
    c.keep_checkpoints = 1
    c.async_checkpoint = False
    return c


def _eval_batch_size(stream: Sequence[Session], config: ml_collections.ConfigDict, devices: int) -> int:
    requested = int(config.get("eval_batch_size", 0) or 0)
    if requested > 0:
        if requested % devices:
            raise ValueError(f"eval_batch_size={requested} must be divisible by the {devices} devices")
        return requested
    largest = min(max(len(s.y_test) for s in stream), 1024)
    return -(-largest // devices) * devices


def _check(method: str, stream: Sequence[Session], config: ml_collections.ConfigDict) -> None:
    if method not in METHODS:
        raise ValueError(f"run_baseline: unknown method {method!r}; accepted methods are {METHODS}")
    if len(stream) == 0:
        raise ValueError("run_baseline: the stream is empty (no sessions)")
    dims = {s.dim for s in stream}
    if len(dims) != 1:
        raise ValueError(f"run_baseline: sessions have different input widths {sorted(dims)}")
    flat = [c for s in stream for c in s.classes]
    if len(set(flat)) != len(flat):
        raise ValueError(f"run_baseline: a class appears in more than one session: {flat}")
    devices = jax.device_count()
    if config.steps <= 0:
        raise ValueError(f"config.steps={config.steps} must be positive")
    if config.batch_size <= 0 or config.batch_size % devices:
        raise ValueError(f"config.batch_size={config.batch_size} must be a positive multiple of the "
                         f"{devices} devices")
    smallest = min(len(s.y_train) for s in stream)
    if config.batch_size > smallest:
        raise ValueError(f"config.batch_size={config.batch_size} is larger than the smallest session's "
                         f"{smallest} training examples")
    if any(int(w) <= 0 for w in config.hidden):
        raise ValueError(f"config.hidden={tuple(config.hidden)} must hold positive widths")
    if method == "ewc":
        if config.ewc_lambda < 0:
            raise ValueError(f"config.ewc_lambda={config.ewc_lambda} must be >= 0")
        if config.fisher_examples <= 0:
            raise ValueError(f"config.fisher_examples={config.fisher_examples} must be positive")
    if method == "replay" and len(stream) > 1:
        past = len(seen_classes(stream, len(stream) - 2))
        if config.buffer_size < past:
            raise ValueError(f"config.buffer_size={config.buffer_size} is smaller than the {past} past "
                             "classes of the last session (at least one example per class)")


def _source(x: np.ndarray, y: np.ndarray) -> ArraySource:
    return ArraySource({"x": np.asarray(x, np.float32), "y": np.asarray(y, np.int32)})


def run_baseline(method: str, stream: Sequence[Session], config: ml_collections.ConfigDict,
                 workdir: str | pathlib.Path, seed: int) -> BaselineRun:
    """Trains `method` (one of `METHODS`) over the sessions of `stream` in order and evaluates
    every session's test set after each one.

    Args:
      method: "finetune", "ewc", "replay" or "joint" (see the module docstring).
      stream: the sessions, in learning order (`jaxml.papers.autoactivator.stream`).
      config: `baseline_config()`-style ConfigDict.
      workdir: root folder; session t trains in `workdir/<method>/seed<seed>/session<t>` and a
        rerun resumes from the checkpoints there.
      seed: init, batch order, replay and Fisher example choices.
    Returns:
      A BaselineRun with `acc` [T, T] and per-session training seconds.
    Raises:
      ValueError: unknown method, empty or inconsistent stream, bad config values.
    """
    _check(method, stream, config)
    T = len(stream)
    model = MLP(tuple(int(w) for w in config.hidden), num_classes(stream))
    loop = loop_config(config, seed, _eval_batch_size(stream, config, jax.device_count()))
    eval_sources = {f"session{j}": _source(s.x_test, s.y_test) for j, s in enumerate(stream)}
    root = pathlib.Path(workdir) / method / f"seed{seed}"
    lam = float(config.ewc_lambda) if method == "ewc" else 0.0

    acc = np.zeros((T, T), np.float64)
    seconds: list[float] = []
    params = anchor = fisher = None
    buffer = empty_buffer(stream[0].dim)
    for t, session in enumerate(stream):
        seen = seen_mask(stream, t)
        if method == "joint":
            x = np.concatenate([s.x_train for s in stream[:t + 1]])
            y = np.concatenate([s.y_train for s in stream[:t + 1]])
        elif method == "replay":
            x = np.concatenate([session.x_train, buffer[0]])
            y = np.concatenate([session.y_train, buffer[1]])
        else:
            x, y = session.x_train, session.y_train
        task = BaselineTask(model, _source(x, y), eval_sources, seen,
                            init_params=None if method == "joint" else params,
                            anchor=anchor, fisher=fisher, ewc_lambda=lam)
        outcome = train_lib.train_and_evaluate(loop, root / f"session{t}", task=task)
        params = jax.device_get(outcome.state.params)
        acc[t] = [outcome.metrics[f"session{j}/accuracy"] for j in range(T)]
        elapsed = float(outcome.metrics["train_time_s"])

        if method == "ewc" and t < T - 1:
            start = time.perf_counter()
            rng = np.random.default_rng([seed, t])
            n = len(session.y_train)
            idx = np.sort(rng.choice(n, size=min(int(config.fisher_examples), n), replace=False))
            new = empirical_fisher(model, params, seen, session.x_train[idx], session.y_train[idx])
            fisher = new if fisher is None else jax.tree_util.tree_map(np.add, fisher, new)
            anchor = params
            elapsed += time.perf_counter() - start
        if method == "replay" and t < T - 1:
            buffer = update_buffer(buffer, session, int(config.buffer_size), np.random.default_rng([seed, t]))
        seconds.append(elapsed)
    return BaselineRun(acc=acc, seconds=seconds, method=method, seed=int(seed))
