"""AIM (El-Nouby et al., ICML 2024): a ViT trunk with prefix-causal attention, an MLP head that
predicts the next patch, and the per-patch normalised pixel loss.

    model = AIM(patch_size=4, hidden=64, layers=4, heads=4, head_depth=2)
    params = model.init(key, images, prefix)["params"]        # images float [b, H, W, C]; prefix int [b]
    pred = model.apply({"params": params}, images, prefix)   # [b, N, p*p*C]: pred[:, i] ~ patch i + 1
    loss, per_example = next_patch_loss(pred, patch_targets(image_to_patches(images, 4)), prefix)

The trunk (`AIMTrunk`, the anchors' `aim-v1` models at toy size): non-overlapping patches ->
bias-free linear patch embedding -> LayerNorm -> fixed 2-D sine-cosine positions (no class token)
-> pre-norm blocks without biases whose attention takes the prefix-causal mask
(`jaxml.nn.attention.prefix_causal_mask`: bidirectional inside the prefix, causal after it, in
raster order) through `ops.attention` -> post-trunk LayerNorm. The head (`PredictionHead`, the
`SimpleDecoder` of ml-l3m) is a stack of residual MLP blocks applied to each patch on its own (no
attention), then a linear map to the p*p*C pixels of the next patch.

Every trunk kernel carries logical axis names (`Linear(kernel_axes=...)`), so
`jaxml.core.mesh.logical_sharding_rules` splits attention heads and MLP units over the `model`
mesh axis. The prefix length convention: `prefix = 0` is plain causal attention (the ablation),
`prefix = N` (or `mask=None`) full bidirectional attention (probing).
"""

from __future__ import annotations

import flax.linen as nn
import jax
import jax.numpy as jnp

from jaxml.models.vit import EncoderBlock, check_patch_grid, image_to_patches, sincos_position_embedding
from jaxml.nn.attention import prefix_causal_mask
from jaxml.nn.layers import LayerNorm, Linear
from jaxml.nn.ops import DEFAULT_OPS, Ops

# Per-patch normalisation epsilon of the target (ml-l3m RasterPixelLoss, norm_pix_loss=True).
TARGET_EPS = 1e-6


class AIMTrunk(nn.Module):
    """The AIM encoder: images [b, H, W, C] (+ mask) -> (tokens [b, N, d], block outputs).

    Attributes:
      patch_size: side of the square patches; H and W multiples of it.
      hidden: token width d (a multiple of 4 for the 2-D sine-cosine positions, and of `heads`).
      layers: number of blocks.
      heads: attention heads.
      mlp_ratio: MLP width / d (4 in the paper).
      norm_eps: LayerNorm epsilon (1e-5 as in the aim-v1 models).
      ops: the swappable operations; `ops.attention` gets the [b, 1, N, N] mask.
    """

    patch_size: int = 4
    hidden: int = 64
    layers: int = 4
    heads: int = 4
    mlp_ratio: int = 4
    norm_eps: float = 1e-5
    ops: Ops = DEFAULT_OPS

    @nn.compact
    def __call__(self, images: jax.Array, mask: jax.Array | None = None) -> tuple[jax.Array, list[jax.Array]]:
        """Encodes images.

        Args:
          images: float [batch, H, W, C].
          mask: bool broadcastable to [batch, heads, N, N] (True = attend), or None for full attention.
        Returns:
          (the post-trunk-normalised tokens [batch, N, hidden], the raw outputs of every block,
          a list of `layers` arrays [batch, N, hidden]).
        """
        if self.hidden % self.heads or self.hidden % 4:
            raise ValueError(f"AIMTrunk: hidden={self.hidden} must be a multiple of heads={self.heads} and of 4")
        if not jnp.issubdtype(images.dtype, jnp.floating):
            raise TypeError(f"AIMTrunk: images must be floating point, got {images.dtype}")
        check_patch_grid(images.shape, self.patch_size, "AIMTrunk")
        _, h, w, _ = images.shape
        gh, gw = h // self.patch_size, w // self.patch_size
        x = Linear(self.hidden, use_bias=False, ops=self.ops, kernel_axes=(None, "embed"),
                   name="patch_embed")(image_to_patches(images, self.patch_size))
        x = LayerNorm(self.norm_eps, self.ops, name="patch_norm")(x)
        x = x + sincos_position_embedding(gh, gw, self.hidden).astype(x.dtype)[None]
        blocks = []
        for i in range(self.layers):
            x = EncoderBlock(self.heads, self.mlp_ratio * self.hidden, 0.0, self.norm_eps, self.ops,
                             use_bias=False, logical_axes=True, name=f"block_{i}")(x, mask=mask)
            blocks.append(x)
        return LayerNorm(self.norm_eps, self.ops, name="final_norm")(x), blocks


class PredictionHead(nn.Module):
    """Per-patch MLP head: tokens [b, N, d] -> pixels of the next patch [b, N, patch_dim].

    `depth` residual blocks `x + MLP(LN(x))` of width `width` (ratio `mlp_ratio`) between an input
    projection and a final LayerNorm + linear map; `depth = 0` is a single linear map from the
    trunk's tokens (the head-depth ablation).
    """

    patch_dim: int
    depth: int = 2
    width: int = 128
    mlp_ratio: int = 4
    norm_eps: float = 1e-5
    ops: Ops = DEFAULT_OPS

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        if self.depth < 0:
            raise ValueError(f"PredictionHead: depth={self.depth} must be >= 0")
        if self.depth == 0:
            return Linear(self.patch_dim, use_bias=False, ops=self.ops, name="out")(x)
        x = Linear(self.width, use_bias=False, ops=self.ops, name="in")(x)
        for i in range(self.depth):
            y = LayerNorm(self.norm_eps, self.ops, name=f"block_{i}_norm")(x)
            y = Linear(self.mlp_ratio * self.width, use_bias=False, ops=self.ops, name=f"block_{i}_fc_in")(y)
            y = self.ops.activation(nn.gelu, y)
            x = x + Linear(self.width, use_bias=False, ops=self.ops, name=f"block_{i}_fc_out")(y)
        x = LayerNorm(self.norm_eps, self.ops, name="final_norm")(x)
        return Linear(self.patch_dim, use_bias=False, ops=self.ops, name="out")(x)


class AIM(nn.Module):
    """Trunk + prediction head: images [b, H, W, C], prefix lengths [b] -> predictions [b, N, p*p*C].

    `pred[:, i]` predicts patch i + 1 (raster order); the last position predicts nothing and is
    ignored by `next_patch_loss`. See the module docstring for the attributes' meaning.
    """

    patch_size: int = 4
    hidden: int = 64
    layers: int = 4
    heads: int = 4
    mlp_ratio: int = 4
    head_depth: int = 2
    head_width: int = 128
    channels: int = 1
    ops: Ops = DEFAULT_OPS

    def setup(self):
        self.trunk = AIMTrunk(self.patch_size, self.hidden, self.layers, self.heads, self.mlp_ratio,
                              ops=self.ops)
        self.head = PredictionHead(self.patch_size ** 2 * self.channels, self.head_depth, self.head_width,
                                   ops=self.ops)

    def __call__(self, images: jax.Array, prefix_lengths: jax.Array) -> jax.Array:
        if images.shape[-1] != self.channels:
            raise ValueError(f"AIM: images have {images.shape[-1]} channels, the model {self.channels}")
        n = (images.shape[1] // self.patch_size) * (images.shape[2] // self.patch_size)
        tokens, _ = self.trunk(images, prefix_causal_mask(prefix_lengths, n))
        return self.head(tokens)

    def features(self, images: jax.Array, last_k: int = 1) -> jax.Array:
        """Probe features: the mean of the last `last_k` block outputs with full bidirectional
        attention (the anchors' `AverageLayers` with `force_full_attn`), [b, N, hidden]."""
        if not 1 <= last_k <= self.layers:
            raise ValueError(f"AIM.features: last_k={last_k} must be in [1, layers={self.layers}]")
        _, blocks = self.trunk(images, None)
        return average_last_blocks(blocks, last_k)


def average_last_blocks(blocks: list[jax.Array], last_k: int) -> jax.Array:
    """The mean of the last `last_k` block outputs (the anchors' `AverageLayers`), [b, N, d]."""
    return jnp.mean(jnp.stack(blocks[-last_k:]), axis=0)


def patch_targets(patches: jax.Array, normalize: bool = True, eps: float = TARGET_EPS) -> jax.Array:
    """Regression targets [b, N, D] from patches [b, N, D]: each patch standardised over its own
    pixels, (x - mean) / sqrt(var + eps) (the paper's normalised-pixel target), or the raw patch."""
    if not normalize:
        return patches
    mean = jnp.mean(patches, axis=-1, keepdims=True)
    var = jnp.var(patches, axis=-1, keepdims=True)
    return (patches - mean) / jnp.sqrt(var + eps)


def target_weights(prefix_lengths: jax.Array, n: int) -> jax.Array:
    """[b, N - 1] float: 1 where target patch j = i + 1 (i = 0..N-2) lies outside the prefix (j >= P)."""
    j = jnp.arange(1, n)[None, :]
    return (j >= prefix_lengths[:, None]).astype(jnp.float32)


def next_patch_loss(predictions: jax.Array, targets: jax.Array, prefix_lengths: jax.Array
                    ) -> tuple[jax.Array, jax.Array]:
    """Next-patch MSE over the non-prefix targets.

    Args:
      predictions: [b, N, D]; position i predicts patch i + 1.
      targets: [b, N, D] (`patch_targets`).
      prefix_lengths: int [b] in [0, N - 1]; targets j < P are not scored (position 0 never is).
    Returns:
      (the mean squared error over every scored (target, pixel) of the batch, the same mean per
      example [b]).
    """
    if predictions.shape != targets.shape or predictions.ndim != 3:
        raise ValueError(f"next_patch_loss: predictions {predictions.shape} and targets {targets.shape} "
                         "must both be [batch, patches, patch_dim]")
    b, n, _ = predictions.shape
    if prefix_lengths.shape != (b,):
        raise ValueError(f"next_patch_loss: prefix_lengths shape {prefix_lengths.shape}, expected ({b},)")
    err = jnp.mean(jnp.square(predictions[:, :-1].astype(jnp.float32) - targets[:, 1:].astype(jnp.float32)), -1)
    weights = target_weights(prefix_lengths, n)
    per_example = jnp.sum(err * weights, 1) / jnp.maximum(jnp.sum(weights, 1), 1.0)
    loss = jnp.sum(err * weights) / jnp.maximum(jnp.sum(weights), 1.0)
    return loss, per_example
