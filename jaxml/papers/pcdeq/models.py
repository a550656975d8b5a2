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

from jaxml.papers.pcdeq.layers import DEQLayer, input_conv3x3, torch_default_init
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
        if x.shape[-1] == 1 and self.stride == 1 and self.padding == 1:   # the first conv, on the images
            return input_conv3x3(x, kernel) + bias
        pad = ((self.padding, self.padding),) * 2
        y = jax.lax.conv_general_dilated(x, kernel, (self.stride,) * 2, pad,
                                         dimension_numbers=("NHWC", "HWIO", "NHWC"))
        return y + bias


def _max3(padded: jax.Array, axis: int):
    """The three shifted views of a (-inf) padded axis and their elementwise maximum."""
    n = padded.shape[axis] - 2
    views = [jax.lax.slice_in_dim(padded, k, k + n, axis=axis) for k in range(3)]
    return views, jnp.maximum(jnp.maximum(views[0], views[1]), views[2])


def _pad1(x: jax.Array, axis: int, value: float) -> jax.Array:
    pad = [(0, 0)] * x.ndim
    pad[axis] = (1, 1)
    return jnp.pad(x, pad, constant_values=value)


def _max3_grad(x, out, g, axis):
    """Routes g to the first maximum of each 3-window along `axis` (PyTorch/XLA tie rule)."""
    views, _ = _max3(_pad1(x, axis, -jnp.inf), axis)
    taken = jnp.zeros(x.shape, bool)
    grad = jnp.zeros(_pad1(x, axis, 0.0).shape, g.dtype)
    for k in range(3):
        hit = (views[k] == out) & ~taken
        taken = taken | hit
        pad = [(0, 0)] * x.ndim
        pad[axis] = (k, 2 - k)
        grad = grad + jnp.pad(jnp.where(hit, g, 0.0), pad)
    return jax.lax.slice_in_dim(grad, 1, 1 + x.shape[axis], axis=axis)


def _maxpool_fwd(x):
    rows = _max3(_pad1(x, 1, -jnp.inf), 1)[1]
    out = _max3(_pad1(rows, 2, -jnp.inf), 2)[1]
    return out, (x, rows, out)


@jax.custom_vjp
def maxpool3x3(x: jax.Array) -> jax.Array:
    """MaxPool2d(3, stride 1, padding 1) on NHWC, as two separable 3-wide maxima.

    Equal to `nn.max_pool(x, (3, 3), (1, 1), ((1, 1), (1, 1)))` in value; its gradient goes to the
    first maximum of each row window, then of each column window (the same as XLA's and PyTorch's
    for inputs without exact ties). Measured on one CPU thread at 64x28x28x12: 7 ms for the
    gradient against 23 ms for the gradient of `nn.max_pool` (XLA's select-and-scatter path),
    the largest single cost of a multi-conv pcDEQ training step before this change.
    """
    return _maxpool_fwd(x)[0]


def _maxpool_bwd(res, g):
    x, rows, out = res
    return (_max3_grad(x, rows, _max3_grad(rows, out, g, 2), 1),)


maxpool3x3.defvjp(_maxpool_fwd, _maxpool_bwd)


def _maxpool(x):
    return maxpool3x3(x)


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
    output: str = "z"

    def _deq(self, name, conv):
        return DEQLayer(variant=self.variant, activation=self.activation, conv=conv, solver=self.solver,
                        unroll=self.unroll, implementation=self.implementation, capture=self.capture,
                        output=self.output, name=name)

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
