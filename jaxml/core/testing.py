"""Small synthetic Tasks for testing the loop and for papers' unit tests (never as evidence)."""

from __future__ import annotations

import dataclasses
import time

import flax.linen as nn
import jax.numpy as jnp
import ml_collections
import numpy as np

from jaxml.core.train import default_config
from jaxml.data.pipeline import ArraySource


class _SlowSource(ArraySource):
    def __init__(self, arrays, delay_s: float):
        super().__init__(arrays)
        self.delay_s = delay_s

    def __getitem__(self, indices):
        time.sleep(self.delay_s)
        return super().__getitem__(indices)


class _MLP(nn.Module):
    hidden: int = 16

    @nn.compact
    def __call__(self, x):
        x = nn.tanh(nn.Dense(self.hidden, name="hidden")(x))
        return nn.Dense(1, name="out")(x)[..., 0]


@dataclasses.dataclass(frozen=True, eq=False)
class RegressionTask:
    """Least squares with a 1-hidden-layer MLP on `y = sin(x @ w)` with fixed random data.

    Attributes:
      num_examples, dim, hidden: data size, input width, MLP width.
      nan_example: index of an example whose target is NaN (to test the non-finite stop).
      delay_s: seconds each batch read sleeps (to make a run slow enough to kill).
    """

    num_examples: int = 256
    dim: int = 4
    hidden: int = 16
    nan_example: int | None = None
    delay_s: float = 0.0

    def _arrays(self):
        rng = np.random.default_rng(1234)
        x = rng.normal(size=(self.num_examples, self.dim)).astype(np.float32)
        w = rng.normal(size=(self.dim,)).astype(np.float32)
        y = np.sin(x @ w).astype(np.float32)
        if self.nan_example is not None:
            y[self.nan_example] = np.nan
        return {"x": x, "y": y}

    def init(self, rng, batch):
        return _MLP(self.hidden).init(rng, batch["x"])["params"]

    def loss(self, params, batch, rng):
        pred = _MLP(self.hidden).apply({"params": params}, batch["x"])
        return jnp.mean((pred - batch["y"]) ** 2), {}

    def evaluate(self, params, batch):
        pred = _MLP(self.hidden).apply({"params": params}, batch["x"])
        return {"mse": (pred - batch["y"]) ** 2}

    def train_data(self):
        return _SlowSource(self._arrays(), self.delay_s) if self.delay_s else ArraySource(self._arrays())

    def eval_data(self):
        return {"train": ArraySource(self._arrays())}


@dataclasses.dataclass(frozen=True, eq=False)
class NonnegativeRegressionTask(RegressionTask):
    """RegressionTask with the optional `project` hook: the hidden kernel is clamped to >= 0."""

    def project(self, params):
        hidden = {**params["hidden"], "kernel": jnp.maximum(params["hidden"]["kernel"], 0.0)}
        return {**params, "hidden": hidden}


@dataclasses.dataclass(frozen=True, eq=False)
class StatefulRegressionTask(RegressionTask):
    """RegressionTask whose input is centred BatchNorm-style: by the batch mean in training and by a
    running mean (`model_state["mean"]`, momentum 0.9, not trained by gradients) in evaluation."""

    momentum: float = 0.9

    def init_state(self, rng, batch):
        return {"mean": jnp.zeros((self.dim,), jnp.float32)}

    def loss(self, params, batch, rng, model_state):
        mean = jnp.mean(batch["x"], axis=0)
        pred = _MLP(self.hidden).apply({"params": params}, batch["x"] - mean)
        new_mean = self.momentum * model_state["mean"] + (1.0 - self.momentum) * mean
        return jnp.mean((pred - batch["y"]) ** 2), ({"batch_mean_norm": jnp.linalg.norm(mean)},
                                                     {"mean": new_mean})

    def evaluate(self, params, batch, model_state):
        pred = _MLP(self.hidden).apply({"params": params}, batch["x"] - model_state["mean"])
        return {"mse": (pred - batch["y"]) ** 2}


def regression_config(**overrides) -> ml_collections.ConfigDict:
    """A loop config for RegressionTask: 30 steps of batch 32 with AdamW, checkpoints every 10."""
    c = default_config()
    c.batch_size = 32
    c.eval_batch_size = 48       # does not divide 256: exercises the padded last batch
    c.num_steps = 30
    c.optimizer.learning_rate = 3e-2
    c.log_every_steps = 10
    c.checkpoint_every_steps = 10
    c.update(overrides)
    return c
