"""The frozen-feature backbone: a small CNN trained with the one loop on the first session's
classes only (nothing of the later sessions is seen), then used as a fixed feature extractor.

    backbone = pretrain_backbone(stream[0], (28, 28, 1), config, workdir)   # the loop, resumable
    feats = backbone.features(x)      # float32 [n, hidden]: the CNN's hidden layer, standardised
    stream = backbone.transform(stream)   # every session's inputs replaced by their features

The standardisation (per-feature mean and std) is measured on the first session's training
inputs, so it carries no information from later sessions either.
"""

from __future__ import annotations

import dataclasses
import functools
import pathlib
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np

from jaxml.core.classification import ClassificationTask
from jaxml.core.train import default_config, train_and_evaluate
from jaxml.data.pipeline import ArraySource
from jaxml.models.cnn import CNN
from jaxml.papers.autoactivator.stream import Session


@dataclasses.dataclass(frozen=True)
class Backbone:
    """A trained CNN (hidden layer `hidden`) and the standardisation of its features."""

    model: CNN
    params: dict
    image_shape: tuple[int, int, int]
    mean: np.ndarray
    std: np.ndarray
    test_accuracy: float

    def raw_features(self, x: np.ndarray, batch_size: int = 2000) -> np.ndarray:
        """The hidden layer's ReLU activations [n, hidden] for flattened images x [n, H*W*C]."""
        x = np.asarray(x, np.float32)
        if x.ndim != 2 or x.shape[1] != int(np.prod(self.image_shape)):
            raise ValueError(f"Backbone: expected inputs [n, {int(np.prod(self.image_shape))}] "
                             f"(flattened {self.image_shape} images), got {x.shape}")
        return np.concatenate([np.asarray(_hidden(self.model, self.params, jnp.asarray(
            x[i:i + batch_size].reshape(-1, *self.image_shape)))) for i in range(0, len(x), batch_size)])

    def features(self, x: np.ndarray) -> np.ndarray:
        """Standardised features float32 [n, hidden]."""
        return ((self.raw_features(x) - self.mean) / self.std).astype(np.float32)

    def transform(self, stream: Sequence[Session]) -> list[Session]:
        """The stream with every session's inputs replaced by their features."""
        return [dataclasses.replace(s, x_train=self.features(s.x_train), x_test=self.features(s.x_test))
                for s in stream]


@functools.partial(jax.jit, static_argnums=0)
def _hidden(model: CNN, params, images: jax.Array) -> jax.Array:
    """ReLU of the CNN's `hidden` Dense layer, read with capture_intermediates."""
    _, state = model.apply({"params": params}, images, train=False, mutable=["intermediates"],
                           capture_intermediates=lambda module, name: module.name == "hidden")
    return jax.nn.relu(state["intermediates"]["hidden"]["__call__"][0])


def loop_config(config: ml_collections.ConfigDict, seed: int) -> ml_collections.ConfigDict:
    """The loop settings of the backbone run from `config` (keys steps, batch_size, learning_rate)."""
    c = default_config()
    c.seed = seed
    c.num_steps = config.steps
    c.batch_size = config.batch_size
    c.eval_batch_size = 1000
    c.optimizer.learning_rate = config.learning_rate
    c.log_every_steps = max(config.steps // 5, 1)
    c.checkpoint_every_steps = config.steps
    return c


def pretrain_backbone(session: Session, image_shape: tuple[int, int, int], config: ml_collections.ConfigDict,
                      workdir: str | pathlib.Path, seed: int = 0) -> Backbone:
    """Trains CNN(features, hidden) with the one loop on `session` (its classes relabelled 0..c-1)
    and returns the frozen backbone. `config`: features, hidden, steps, batch_size, learning_rate.
    Resumes (or just reloads) from `workdir`."""
    if len(session.classes) < 2:
        raise ValueError(f"pretrain_backbone: the first session has {len(session.classes)} class; a classifier "
                         "backbone needs at least 2")
    local = {c: i for i, c in enumerate(session.classes)}

    def source(x, y):
        return ArraySource({"image": x.reshape(-1, *image_shape).astype(np.float32),
                            "label": np.asarray([local[int(v)] for v in y], np.int32)})

    model = CNN(num_classes=len(session.classes), features=tuple(config.features), hidden=config.hidden)
    task = ClassificationTask(model=model, train_source=source(session.x_train, session.y_train),
                              eval_sources={"test": source(session.x_test, session.y_test)})
    outcome = train_and_evaluate(loop_config(config, seed), workdir, task=task)
    params = jax.device_get(outcome.state.params)
    probe = Backbone(model, params, tuple(image_shape), np.zeros(1, np.float32), np.ones(1, np.float32),
                     float(outcome.metrics["test/accuracy"]))
    raw = probe.raw_features(session.x_train)
    mean, std = raw.mean(axis=0), raw.std(axis=0) + 1e-3
    return dataclasses.replace(probe, mean=mean.astype(np.float32), std=std.astype(np.float32))
