"""A reusable image-classification Task for any Flax linen model `model(images, train=...)`."""

from __future__ import annotations

import dataclasses

import flax.linen as nn
import jax
import jax.numpy as jnp
import optax

from jaxml.data.pipeline import Source


def to_float_images(images: jax.Array) -> jax.Array:
    """uint8 [batch, H, W, C] in 0..255 -> float32 in [0, 1]; float input is passed through."""
    if jnp.issubdtype(images.dtype, jnp.integer):
        return images.astype(jnp.float32) / 255.0
    return images.astype(jnp.float32)


@dataclasses.dataclass(frozen=True, eq=False)
class ClassificationTask:
    """Softmax cross-entropy classification of `batch["image"]` into `batch["label"]`.

    Attributes:
      model: a linen module mapping images [batch, H, W, C] to logits [batch, classes]; it takes a
        keyword `train` and may use the `dropout` rng.
      train_source: Source of `{"image", "label"}` examples.
      eval_sources: `{split: Source}` evaluated with accuracy and cross-entropy.
    """

    model: nn.Module
    train_source: Source
    eval_sources: dict[str, Source]

    def init(self, rng, batch):
        return self.model.init(rng, to_float_images(batch["image"]), train=False)["params"]

    def loss(self, params, batch, rng):
        logits = self.model.apply({"params": params}, to_float_images(batch["image"]), train=True,
                                  rngs={"dropout": rng})
        loss = optax.softmax_cross_entropy_with_integer_labels(logits, batch["label"]).mean()
        accuracy = jnp.mean(jnp.argmax(logits, -1) == batch["label"])
        return loss, {"accuracy": accuracy}

    def evaluate(self, params, batch):
        logits = self.model.apply({"params": params}, to_float_images(batch["image"]), train=False)
        return {
            "accuracy": (jnp.argmax(logits, -1) == batch["label"]).astype(jnp.float32),
            "loss": optax.softmax_cross_entropy_with_integer_labels(logits, batch["label"]),
        }

    def train_data(self) -> Source:
        return self.train_source

    def eval_data(self) -> dict[str, Source]:
        return self.eval_sources

    def predict(self, params, images: jax.Array) -> jax.Array:
        """Class probabilities [batch, classes] for images [batch, H, W, C]."""
        return jax.nn.softmax(self.model.apply({"params": params}, to_float_images(images), train=False))
