"""The Task protocol: what a paper plugs into the one training loop.

A Task is a plain object (often a frozen dataclass) holding the model and the data:

    init(rng, batch) -> params                      # params pytree from a sample batch
    loss(params, batch, rng) -> (loss, metrics)     # scalar mean loss over the batch, dict of scalars
    evaluate(params, batch) -> {name: per-example [batch] array}
    train_data() -> Source                          # random access: len() and [indices]
    eval_data() -> {split name: Source}

Optional:
    project(params) -> params                       # applied after every optimizer step
                                                    # (constraints such as W >= 0)
    optimizer(config) -> optax.GradientTransformation   # replaces the config-built optimizer
    value_and_grad(params, batch, rng) -> ((loss, metrics), grads)
                                                    # replaces jax.value_and_grad(loss), e.g. to
                                                    # read diagnostics out of a custom backward pass
    param_sharding() -> ((regex, partition spec), ...)
                                                    # sharding rules for the params, after
                                                    # config.param_sharding (e.g. from logical
                                                    # axes: jaxml.core.mesh.logical_sharding_rules)

Stateful tasks (state that gradients do not train, such as BatchNorm running statistics) define
`init_state` and then take and return the state:

    init_state(rng, batch) -> model_state
    loss(params, batch, rng, model_state) -> (loss, (metrics, new_model_state))
    evaluate(params, batch, model_state) -> {name: per-example [batch] array}
    value_and_grad(params, batch, rng, model_state) -> ((loss, (metrics, new_model_state)), grads)

The loop keeps `model_state` in `TrainState.model_state` (an empty dict for stateless tasks), and
checkpoints and restores it with the parameters.

`loss`, `evaluate` and `project` are traced under `jax.jit` and must be pure. The batch key
`mask` is reserved: the loop adds it to evaluation batches (1 = real example, 0 = padding).
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import jax

from jaxml.data.pipeline import Source

Params = Any
Batch = dict[str, jax.Array]


@runtime_checkable
class Task(Protocol):
    def init(self, rng: jax.Array, batch: Batch) -> Params: ...

    def loss(self, params: Params, batch: Batch, rng: jax.Array) -> tuple[jax.Array, dict[str, jax.Array]]: ...

    def evaluate(self, params: Params, batch: Batch) -> dict[str, jax.Array]: ...

    def train_data(self) -> Source: ...

    def eval_data(self) -> dict[str, Source]: ...


def is_stateful(task: Any) -> bool:
    """True when the task carries non-trained model state (it defines `init_state`)."""
    return callable(getattr(task, "init_state", None))


def check_task(task: Any) -> None:
    """Raises TypeError naming the missing Task methods."""
    required = ("init", "loss", "evaluate", "train_data", "eval_data")
    missing = [m for m in required if not callable(getattr(task, m, None))]
    if missing:
        raise TypeError(f"{type(task).__name__} is not a Task: it lacks {missing} (see jaxml.core.task)")
