"""A small convolutional classifier (Flax linen), the end-to-end baseline of the training loop."""

from __future__ import annotations

from collections.abc import Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp


class CNN(nn.Module):
    """conv-relu-maxpool blocks (3x3 kernels by default), then a hidden dense layer and the class logits.

    Attributes:
      num_classes: number of output logits.
      features: channels of each conv block (each block halves the spatial size).
      hidden: width of the dense layer (0: none).
      dropout: dropout rate before the logits (training only; needs the `dropout` rng).
      kernel_size: the convolutions' square kernel (5 gives RobRank's C2F2 with features (32, 64)
        and hidden 1024).
    """

    num_classes: int = 10
    features: Sequence[int] = (32, 64)
    hidden: int = 128
    dropout: float = 0.0
    kernel_size: int = 3

    @nn.compact
    def __call__(self, images: jax.Array, *, train: bool = False) -> jax.Array:
        """images: float [batch, height, width, channels] -> logits [batch, num_classes]."""
        if images.ndim != 4:
            raise ValueError(f"CNN expects images [batch, height, width, channels], got shape {images.shape}")
        x = images
        for i, f in enumerate(self.features):
            x = nn.relu(nn.Conv(f, (self.kernel_size, self.kernel_size), name=f"conv{i}")(x))
            x = nn.max_pool(x, (2, 2), strides=(2, 2))
        x = x.reshape(x.shape[0], -1)
        if self.hidden:
            x = nn.relu(nn.Dense(self.hidden, name="hidden")(x))
        if self.dropout:
            x = nn.Dropout(self.dropout, deterministic=not train)(x)
        return nn.Dense(self.num_classes, name="logits")(x)
