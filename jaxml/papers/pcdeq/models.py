"""The pcDEQ paper's MNIST-scale networks (official `networks.py`), in Flax linen, NHWC.

    linear       Flatten -> Dense(784, w) -> BN -> DEQ(w) -> BN -> Dense(w, 10)            w = 80
    single_conv  Conv3x3(1, c) -> BN -> DEQ -> MaxPool(3, 1, 1) -> BN -> AvgPool(8) -> Dense  c = 82
    multi_conv   Conv3x3(1, c1) -> BN -> DEQ -> MaxPool -> BN -> Conv3x3/2(c1, c2) -> BN -> DEQ
                 -> MaxPool -> BN -> Conv3x3/2(c2, c3) -> BN -> DEQ -> MaxPool -> BN -> AvgPool(4)
                 -> Dense(c3, 10)                                                   12/24/48

BatchNorm as PyTorch's (momentum 0.1 = Flax 0.9, eps 1e-5); the non-DEQ Dense/Conv layers use
PyTorch's default init. Parameter counts equal the official models' (70,410 / 69,136 / 41,278 at
the MNIST widths; tested).
"""

from __future__ import annotations

import flax.linen as nn
import jax
import jax.numpy as jnp

from jaxml.papers.pcdeq.layers import DEQLayer, torch_default_init
from jaxml.papers.pcdeq.solver import Solver

ARCHITECTURES = ("linear", "single_conv", "multi_conv")


def _bn(train: bool, name: str):
    return nn.BatchNorm(use_running_average=not train, momentum=0.9, epsilon=1e-5, name=name)



class _TorchDense(nn.Module):
    """nn.Linear with PyTorch's default init for weight and bias (bias bound 1/sqrt(fan_in))."""

    features: int

    @nn.compact
    def __call__(self, x):
        fan_in = x.shape[-1]
        bound = 1.0 / jnp.sqrt(fan_in)
        kernel = self.param("kernel", torch_default_init, (fan_in, self.features))
        bias = self.param("bias", lambda key, s: jax.random.uniform(key, s, jnp.float32, -bound, bound),
                          (self.features,))
        return x @ kernel + bias


class _TorchConv(nn.Module):
    """nn.Conv2d(k=3) with PyTorch's default init; `padding` 1 (SAME) or 0 (VALID)."""

    features: int
    stride: int = 1
    padding: int = 1

    @nn.compact
    def __call__(self, x):
        fan_in = x.shape[-1] * 9
        bound = 1.0 / jnp.sqrt(fan_in)
        kernel = self.param("kernel", torch_default_init, (3, 3, x.shape[-1], self.features))
        bias = self.param("bias", lambda key, s: jax.random.uniform(key, s, jnp.float32, -bound, bound),
                          (self.features,))
        pad = ((self.padding, self.padding),) * 2
        y = jax.lax.conv_general_dilated(x, kernel, (self.stride,) * 2, pad,
                                         dimension_numbers=("NHWC", "HWIO", "NHWC"))
        return y + bias


def _maxpool(x):
    return nn.max_pool(x, (3, 3), strides=(1, 1), padding=((1, 1), (1, 1)))


class DEQNet(nn.Module):
    """One of ARCHITECTURES with DEQ blocks of the given variant. Input: images [B, 28, 28, 1] in
    [0, 1]; output: logits [B, num_classes]."""

    architecture: str = "linear"
    variant: str = "pcdeq1"
    activation: str = "tanh"
    widths: tuple[int, ...] = (80,)
    num_classes: int = 10
    solver: Solver = Solver()
    unroll: int = 8
    implementation: str = "generic"
    capture: bool = False

    def _deq(self, name, conv):
        return DEQLayer(variant=self.variant, activation=self.activation, conv=conv, solver=self.solver,
                        unroll=self.unroll, implementation=self.implementation, capture=self.capture,
                        name=name)

    @nn.compact
    def __call__(self, images: jax.Array, train: bool = False) -> jax.Array:
        if self.architecture not in ARCHITECTURES:
            raise ValueError(f"architecture={self.architecture!r}; accepted: {ARCHITECTURES}")
        x = images
        if self.architecture == "linear":
            (w,) = self.widths
            x = x.reshape(x.shape[0], -1)
            x = _bn(train, "bn1")(_TorchDense(w, name="linear1")(x))
            x = _bn(train, "bn2")(self._deq("deq", conv=False)(x))
            return _TorchDense(self.num_classes, name="classifier")(x)
        if self.architecture == "single_conv":
            (c,) = self.widths
            x = _bn(train, "bn1")(_TorchConv(c, name="conv1")(x))
            x = _bn(train, "bn2")(_maxpool(self._deq("deq", conv=True)(x)))
            x = nn.avg_pool(x, (8, 8), strides=(8, 8))
            return _TorchDense(self.num_classes, name="classifier")(x.reshape(x.shape[0], -1))
        c1, c2, c3 = self.widths
        x = _bn(train, "bn1")(_TorchConv(c1, name="conv1")(x))
        x = _bn(train, "bn2")(_maxpool(self._deq("deq1", conv=True)(x)))
        x = _bn(train, "bn3")(_TorchConv(c2, stride=2, padding=0, name="downsample1")(x))
        x = _bn(train, "bn4")(_maxpool(self._deq("deq2", conv=True)(x)))
        x = _bn(train, "bn5")(_TorchConv(c3, stride=2, padding=0, name="downsample2")(x))
        x = _bn(train, "bn6")(_maxpool(self._deq("deq3", conv=True)(x)))
        x = nn.avg_pool(x, (4, 4), strides=(4, 4))
        return _TorchDense(self.num_classes, name="classifier")(x.reshape(x.shape[0], -1))


DEFAULT_WIDTHS = {"linear": (80,), "single_conv": (82,), "multi_conv": (12, 24, 48)}
