"""Norms, rotary position embeddings and the SwiGLU MLP (Flax linen)."""

from __future__ import annotations

from typing import Literal

import flax.linen as nn
import jax
import jax.numpy as jnp

from jaxml.nn.ops import DEFAULT_OPS, Ops

RopeLayout = Literal["interleaved", "rotate_half"]


class RMSNorm(nn.Module):
    """x / sqrt(mean(x^2) + eps) * scale (LLaMA). Computed in float32 or wider.

    The factor 1/sqrt(...) goes through `ops.norm_factor` (AttnLRP holds it constant).
    """

    eps: float = 1e-5
    ops: Ops = DEFAULT_OPS

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        scale = self.param("scale", nn.initializers.ones, (x.shape[-1],))
        compute = jnp.promote_types(x.dtype, jnp.float32)
        xf = x.astype(compute)
        normed = xf * self.ops.norm_factor(jax.lax.rsqrt(jnp.mean(xf * xf, axis=-1, keepdims=True) + self.eps))
        return (normed * scale).astype(x.dtype)


class LayerNorm(nn.Module):
    """(x - mean) / sqrt(var + eps) * scale + bias (BERT, ViT).

    The factor 1/sqrt(var + eps) goes through `ops.norm_factor` (AttnLRP holds it constant).
    """

    eps: float = 1e-12
    ops: Ops = DEFAULT_OPS

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        scale = self.param("scale", nn.initializers.ones, (x.shape[-1],))
        bias = self.param("bias", nn.initializers.zeros, (x.shape[-1],))
        mean = jnp.mean(x, axis=-1, keepdims=True)
        var = jnp.mean(jnp.square(x - mean), axis=-1, keepdims=True)
        return (x - mean) * self.ops.norm_factor(jax.lax.rsqrt(var + self.eps)) * scale + bias


class Linear(nn.Module):
    """A dense layer whose product goes through `ops.linear` (so the gamma rule, quantization or a
    kernel can replace it).

    Same parameters as `flax.linen.Dense` (`kernel` [in, out], `bias` [out]). Optional parameters a
    compression method may add to the params: `lowrank_a` [in, k] and `lowrank_b` [k, out]; when
    present the op gets `lowrank=(a, b)` and computes `x @ kernel + (x @ a) @ b` (LQER).
    With the collection `linear_inputs` mutable, the input is sown as `x` (calibration).
    Params may hold `packed_kernel` (e.g. a `kernels.lqer_matmul.PackedMXINT` pytree) instead of
    `kernel`; it is passed to `ops.linear` as the kernel.
    `kernel_axes` (logical axis names of the kernel's [in, out] dims, e.g. `("embed", "mlp")`) boxes
    the kernel in `flax.linen.LogicallyPartitioned` at init, and the bias gets the out axis; the
    params then map to mesh shardings with `jaxml.core.mesh.logical_sharding_rules`.
    """

    features: int
    use_bias: bool = True
    ops: Ops = DEFAULT_OPS
    kernel_init: nn.initializers.Initializer = nn.initializers.lecun_normal()
    dtype: jnp.dtype = jnp.float32
    kernel_axes: tuple[str | None, str | None] | None = None

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        kernel_init, bias_init = self.kernel_init, nn.initializers.zeros
        if self.kernel_axes is not None:
            if len(self.kernel_axes) != 2:
                raise ValueError(f"Linear: kernel_axes names the [in, out] axes, got {self.kernel_axes}")
            kernel_init = nn.with_logical_partitioning(kernel_init, tuple(self.kernel_axes))
            bias_init = nn.with_logical_partitioning(bias_init, (self.kernel_axes[1],))
        if self.has_variable("params", "packed_kernel"):
            # An integer-packed kernel (kernels.lqer_matmul.PackedMXINT) in place of `kernel`; it
            # needs an `ops.linear` that accepts it (kernels.lqer_matmul.as_linear_op).
            kernel = self.get_variable("params", "packed_kernel")
        else:
            kernel = self.param("kernel", kernel_init, (x.shape[-1], self.features), self.dtype)
        bias = self.param("bias", bias_init, (self.features,), self.dtype) if self.use_bias else None
        if self.is_mutable_collection("linear_inputs"):
            self.sow("linear_inputs", "x", x)
        if self.has_variable("params", "lowrank_a"):
            lowrank = (self.get_variable("params", "lowrank_a"), self.get_variable("params", "lowrank_b"))
            return self.ops.linear(x, kernel, bias, lowrank=lowrank)
        return self.ops.linear(x, kernel, bias)


def rotary_angles(positions: jax.Array, head_dim: int, theta: float, dtype=jnp.float32
                  ) -> tuple[jax.Array, jax.Array]:
    """cos and sin of the rotary angles, each [batch, len, head_dim // 2], computed in `dtype`
    (at least float32: large positions need the precision).

    Pair i rotates by `position * theta ** (-2i / head_dim)`.
    """
    dtype = jnp.promote_types(dtype, jnp.float32)
    if head_dim % 2:
        raise ValueError(f"rotary embeddings need an even head_dim, got {head_dim}")
    inv_freq = theta ** (-jnp.arange(0, head_dim, 2, dtype=dtype) / head_dim)
    angles = positions.astype(dtype)[..., None] * inv_freq
    return jnp.cos(angles), jnp.sin(angles)


def apply_rotary(x: jax.Array, cos: jax.Array, sin: jax.Array, layout: RopeLayout) -> jax.Array:
    """Rotates x [batch, len, heads, head_dim] by the angles [batch, len, head_dim // 2].

    `interleaved` pairs adjacent features (0,1), (2,3), ... (GGUF/llama.cpp, Meta's original);
    `rotate_half` pairs feature i with i + head_dim/2 (Hugging Face checkpoints).
    """
    cos = cos[:, :, None, :].astype(x.dtype)
    sin = sin[:, :, None, :].astype(x.dtype)
    if layout == "interleaved":
        x0, x1 = x[..., 0::2], x[..., 1::2]
        return jnp.stack([x0 * cos - x1 * sin, x0 * sin + x1 * cos], axis=-1).reshape(x.shape)
    if layout == "rotate_half":
        half = x.shape[-1] // 2
        x0, x1 = x[..., :half], x[..., half:]
        return jnp.concatenate([x0 * cos - x1 * sin, x0 * sin + x1 * cos], axis=-1)
    raise ValueError(f"rope layout {layout!r}; accepted: 'interleaved', 'rotate_half'")


class SwiGLU(nn.Module):
    """down(silu(gate(x)) * up(x)), no biases (LLaMA MLP); silu and the product go through ops."""

    hidden: int
    dtype: jnp.dtype = jnp.float32
    ops: Ops = DEFAULT_OPS

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        dense = lambda n, name: Linear(n, use_bias=False, ops=self.ops, dtype=self.dtype, name=name)
        gate, up = dense(self.hidden, "gate")(x), dense(self.hidden, "up")(x)
        hidden = self.ops.gate(self.ops.activation(nn.silu, gate), up)
        return dense(x.shape[-1], "down")(hidden)
