"""A small Vision Transformer (Dosovitskiy et al. 2021) in Flax linen, ready for explanations.

    model = ViT(num_classes=10, patch_size=4, hidden=64, layers=4, heads=4, mlp_hidden=128)
    params = model.init(key, images)["params"]             # images float [batch, H, W, C]
    logits = model.apply({"params": params}, images)       # [batch, num_classes]

Pre-norm encoder: non-overlapping patches -> linear patch embedding -> class token and learned
position embeddings -> `layers` blocks of `x + attn(LN(x))`, `x + MLP(LN(x))` -> final LN ->
pooled token ('cls' or mean over the patch tokens) -> linear head.

Every operation an explanation rule changes goes through `ops` (`jaxml.nn.ops.Ops`): attention,
the LayerNorm factor, the GELU, and every dense layer (patch embedding, qkv, attention output, MLP
in/out, head) is a `jaxml.nn.layers.Linear`, whose product is `ops.linear`. So
`model.clone(ops=...)` switches the whole model into AttnLRP mode with the same params.

Explanation points (`perturb` for gradients, `sow` into collection `intermediates` for values):
  pixels      [batch, H, W, C]                the input images (pixel-level relevance)
  patches     [batch, n_patches, hidden]      the patch embeddings, before position embeddings
  residual_i  [batch, 1 + n_patches, hidden]  the residual stream after block i (token 0 = class)
Patches are numbered row-major over the [H // patch_size, W // patch_size] grid.
"""

from __future__ import annotations

import functools
from typing import Literal

import flax.linen as nn
import jax
import jax.numpy as jnp

from jaxml.nn.layers import LayerNorm, Linear
from jaxml.nn.ops import DEFAULT_OPS, Ops

Pool = Literal["cls", "mean"]
POOLS = ("cls", "mean")


def check_patch_grid(shape: tuple[int, ...], patch_size: int, where: str) -> None:
    """Raises ValueError unless `shape` is [batch, H, W, C] with H and W multiples of `patch_size`."""
    if len(shape) != 4:
        raise ValueError(f"{where}: expected images [batch, height, width, channels], got shape {shape}")
    if patch_size < 1:
        raise ValueError(f"{where}: patch_size must be >= 1, got {patch_size}")
    _, h, w, _ = shape
    if h % patch_size or w % patch_size:
        raise ValueError(f"{where}: image height {h} and width {w} must both be multiples of "
                         f"patch_size={patch_size}")


def image_to_patches(images: jax.Array, patch_size: int) -> jax.Array:
    """Non-overlapping patches, row-major over the patch grid.

    Args:
      images: [batch, H, W, C]; H and W multiples of `patch_size`.
      patch_size: side of a square patch, in pixels.
    Returns:
      [batch, (H // p) * (W // p), p * p * C], each patch flattened in (row, col, channel) order.
    """
    check_patch_grid(images.shape, patch_size, "image_to_patches")
    b, h, w, c = images.shape
    p = patch_size
    x = images.reshape(b, h // p, p, w // p, p, c).transpose(0, 1, 3, 2, 4, 5)
    return x.reshape(b, (h // p) * (w // p), p * p * c)


def patches_to_pixels(patch_relevance: jax.Array, image_shape: tuple[int, int], patch_size: int, *,
                      conserve: bool = False) -> jax.Array:
    """Spreads one value per patch over that patch's pixels (for heatmaps of patch relevance).

    Args:
      patch_relevance: [batch, n_patches], patches row-major as in `image_to_patches`.
      image_shape: (H, W) of the images, multiples of `patch_size`.
      patch_size: side of a patch, in pixels.
      conserve: False: every pixel gets its patch's value (a heatmap); True: the value is split
        evenly over the p*p pixels, so the pixel map sums to the same total as the patches.
    Returns:
      [batch, H, W].
    """
    if patch_relevance.ndim != 2:
        raise ValueError(f"patches_to_pixels: expected patch_relevance [batch, n_patches], got shape "
                         f"{patch_relevance.shape}")
    if len(image_shape) != 2:
        raise ValueError(f"patches_to_pixels: image_shape must be (height, width), got {image_shape}")
    h, w = (int(s) for s in image_shape)
    check_patch_grid((1, h, w, 1), patch_size, "patches_to_pixels")
    gh, gw = h // patch_size, w // patch_size
    b, n = patch_relevance.shape
    if n != gh * gw:
        raise ValueError(f"patches_to_pixels: {n} patches do not tile a {h}x{w} image with "
                         f"patch_size={patch_size} ({gh}x{gw} = {gh * gw} patches)")
    grid = patch_relevance.reshape(b, gh, gw)
    if conserve:
        grid = grid / (patch_size * patch_size)
    return jnp.repeat(jnp.repeat(grid, patch_size, axis=1), patch_size, axis=2)


class SelfAttention(nn.Module):
    """Multi-head self-attention: x [batch, len, hidden] (and an optional mask) -> [batch, len, hidden].

    q, k, v come from one fused `qkv` Linear; the attention itself is `ops.attention(q, k, v,
    mask)` with q/k/v [batch, len, heads, head_dim] and mask bool broadcastable to [batch, heads,
    len, len] (None = full attention); `out` projects the heads back. `logical_axes` annotates the
    kernels ('embed' -> 'heads' for qkv, 'heads' -> 'embed' for out) for model-axis sharding.
    """

    heads: int
    ops: Ops = DEFAULT_OPS
    use_bias: bool = True
    logical_axes: bool = False

    @nn.compact
    def __call__(self, x: jax.Array, mask: jax.Array | None = None) -> jax.Array:
        b, t, d = x.shape
        head_dim = d // self.heads
        axes = (lambda a: a) if self.logical_axes else (lambda a: None)
        qkv = Linear(3 * d, use_bias=self.use_bias, ops=self.ops, kernel_axes=axes(("embed", "heads")),
                     name="qkv")(x).reshape(b, t, 3, self.heads, head_dim)
        q, k, v = qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2]
        out = self.ops.attention(q, k, v, mask)
        return Linear(d, use_bias=self.use_bias, ops=self.ops, kernel_axes=axes(("heads", "embed")),
                      name="out")(out.reshape(b, t, d))


class MLP(nn.Module):
    """Linear -> GELU (through `ops.activation`) -> Linear, [batch, len, d] -> [batch, len, d].

    `logical_axes` annotates the kernels 'embed' -> 'mlp' -> 'embed'. `exact_gelu` takes the erf form
    of GELU (torch's `nn.GELU()`, timm's ViTs) instead of flax's default tanh approximation."""

    hidden: int
    dropout: float = 0.0
    ops: Ops = DEFAULT_OPS
    use_bias: bool = True
    logical_axes: bool = False
    exact_gelu: bool = False

    @nn.compact
    def __call__(self, x: jax.Array, *, train: bool = False) -> jax.Array:
        axes = (lambda a: a) if self.logical_axes else (lambda a: None)
        h = Linear(self.hidden, use_bias=self.use_bias, ops=self.ops, kernel_axes=axes(("embed", "mlp")),
                   name="fc_in")(x)
        gelu = functools.partial(nn.gelu, approximate=False) if self.exact_gelu else nn.gelu
        h = self.ops.activation(gelu, h)
        h = nn.Dropout(self.dropout, deterministic=not train)(h)
        return Linear(x.shape[-1], use_bias=self.use_bias, ops=self.ops, kernel_axes=axes(("mlp", "embed")),
                      name="fc_out")(h)


class EncoderBlock(nn.Module):
    """Pre-norm transformer block: x + attn(LN(x), mask), then x + MLP(LN(x)).

    `use_bias=False` drops the biases of every Linear (AIM); `logical_axes` annotates the kernels
    for sharding over the `model` mesh axis (see `SelfAttention`, `MLP`); `exact_gelu` as in `MLP`."""

    heads: int
    mlp_hidden: int
    dropout: float = 0.0
    norm_eps: float = 1e-6
    ops: Ops = DEFAULT_OPS
    use_bias: bool = True
    logical_axes: bool = False
    exact_gelu: bool = False

    @nn.compact
    def __call__(self, x: jax.Array, *, train: bool = False, mask: jax.Array | None = None) -> jax.Array:
        h = SelfAttention(self.heads, self.ops, self.use_bias, self.logical_axes, name="attn")(
            LayerNorm(self.norm_eps, self.ops, name="attn_norm")(x), mask)
        x = x + nn.Dropout(self.dropout, deterministic=not train)(h)
        h = MLP(self.mlp_hidden, self.dropout, self.ops, self.use_bias, self.logical_axes, self.exact_gelu, name="mlp")(
            LayerNorm(self.norm_eps, self.ops, name="mlp_norm")(x), train=train)
        return x + nn.Dropout(self.dropout, deterministic=not train)(h)


def sincos_position_embedding(grid_height: int, grid_width: int, dim: int, temperature: float = 10000.0
                              ) -> jax.Array:
    """Fixed 2-D sine-cosine position embeddings (MAE, AIM): [grid_height * grid_width, dim].

    Row-major over the patch grid, like `image_to_patches`. The first half of the features encodes
    the row, the second half the column; each half is [sin(pos * w_i), cos(pos * w_i)] with
    w_i = temperature ** (-i / (dim / 4)), i < dim / 4. `dim` must be a multiple of 4.
    """
    if dim % 4:
        raise ValueError(f"sincos_position_embedding: dim={dim} must be a multiple of 4")
    omega = temperature ** (-jnp.arange(dim // 4, dtype=jnp.float32) / (dim // 4))
    rows, cols = jnp.meshgrid(jnp.arange(grid_height, dtype=jnp.float32),
                              jnp.arange(grid_width, dtype=jnp.float32), indexing="ij")

    def encode(pos):
        angles = pos.reshape(-1)[:, None] * omega[None, :]
        return jnp.concatenate([jnp.sin(angles), jnp.cos(angles)], axis=1)

    return jnp.concatenate([encode(rows), encode(cols)], axis=1)


class ViT(nn.Module):
    """Vision Transformer classifier: images [batch, H, W, C] -> logits [batch, num_classes].

    Attributes:
      num_classes: number of logits.
      patch_size: side of the square, non-overlapping patches (H and W must be multiples).
      hidden: token width; a multiple of `heads`.
      layers: number of encoder blocks.
      heads: attention heads (head_dim = hidden // heads).
      mlp_hidden: width of the MLP inside each block.
      pool: 'cls' (the class token) or 'mean' (mean of the patch tokens) feeds the head.
      dropout: rate after attention, inside and after the MLP (training only; `dropout` rng).
      norm_eps: LayerNorm epsilon.
      ops: the swappable operations (jaxml.nn.ops.Ops): attention, norm factor, activation, linear.
    """

    num_classes: int = 10
    patch_size: int = 4
    hidden: int = 64
    layers: int = 4
    heads: int = 4
    mlp_hidden: int = 128
    pool: Pool = "cls"
    dropout: float = 0.0
    norm_eps: float = 1e-6
    ops: Ops = DEFAULT_OPS

    def _check(self, images: jax.Array) -> None:
        if self.pool not in POOLS:
            raise ValueError(f"ViT: pool={self.pool!r}; accepted: {POOLS}")
        if self.heads < 1 or self.hidden % self.heads:
            raise ValueError(f"ViT: hidden={self.hidden} must be a multiple of heads={self.heads}")
        if not jnp.issubdtype(images.dtype, jnp.floating):
            raise TypeError(f"ViT: images must be floating point, got {images.dtype} (convert uint8 "
                            "images with jaxml.core.classification.to_float_images)")
        check_patch_grid(images.shape, self.patch_size, "ViT")

    @nn.compact
    def __call__(self, images: jax.Array, *, train: bool = False) -> jax.Array:
        """Classifies images.

        Args:
          images: float [batch, H, W, C]; H and W multiples of `patch_size`.
          train: enables dropout (needs the `dropout` rng when `dropout > 0`).
        Returns:
          logits [batch, num_classes].
        """
        self._check(images)
        images = self.perturb("pixels", images)
        self.sow("intermediates", "pixels", images)
        x = Linear(self.hidden, ops=self.ops, name="patch_embed")(image_to_patches(images, self.patch_size))
        x = self.perturb("patches", x)
        self.sow("intermediates", "patches", x)
        b, n, d = x.shape
        cls = self.param("cls_token", nn.initializers.zeros, (1, 1, d), x.dtype)
        position = self.param("position_embedding", nn.initializers.normal(0.02), (1, n + 1, d), x.dtype)
        x = jnp.concatenate([jnp.broadcast_to(cls, (b, 1, d)), x], axis=1) + position
        x = nn.Dropout(self.dropout, deterministic=not train)(x)
        for i in range(self.layers):
            x = EncoderBlock(self.heads, self.mlp_hidden, self.dropout, self.norm_eps, self.ops,
                             name=f"block_{i}")(x, train=train)
            x = self.perturb(f"residual_{i}", x)
            self.sow("intermediates", f"residual_{i}", x)
        x = LayerNorm(self.norm_eps, self.ops, name="final_norm")(x)
        pooled = x[:, 0] if self.pool == "cls" else jnp.mean(x[:, 1:], axis=1)
        return Linear(self.num_classes, ops=self.ops, name="head")(pooled)

