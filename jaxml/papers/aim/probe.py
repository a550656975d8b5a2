"""Probes on frozen features (AIM's evaluation protocol) and the feature extraction.

    feats = extract_features(model, trunk_params, images, last_k=2)    # [n, N, d], full attention
    logits = AttentiveProbe(10).apply(variables, feats, train=False)    # [n, 10]

`AttentiveProbe` is the anchors' `AttentionPoolingClassifier`: BatchNorm without affine parameters
on the features, one learned query token, multi-head cross-attention of that query over K and V
projections of the tokens, the mean over queries, then a linear classifier. `LinearProbe` is the
usual baseline: the mean token, BatchNorm without affine parameters, a linear classifier. Both see
only features: the trunk's params are an input of `extract_features` and nowhere else, so training
a probe cannot change them.
"""

from __future__ import annotations

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from jaxml.nn.attention import dot_product_attention

# BatchNorm of the probes: statistics over batch (and tokens), no scale or bias (MAE, AIM).
_BN = dict(use_bias=False, use_scale=False, momentum=0.9, epsilon=1e-6)
# The classifier starts near zero (MAE's and AIM's probe heads: truncated normal, std 0.01).
_HEAD_INIT = nn.initializers.truncated_normal(0.01)


class AttentiveProbe(nn.Module):
    """features [b, N, d] -> logits [b, num_classes] by attention pooling with learned queries."""

    num_classes: int
    heads: int = 4
    num_queries: int = 1

    @nn.compact
    def __call__(self, features: jax.Array, *, train: bool = False) -> jax.Array:
        if features.ndim != 3:
            raise ValueError(f"AttentiveProbe: features must be [batch, tokens, dim], got {features.shape}")
        b, n, d = features.shape
        if d % self.heads:
            raise ValueError(f"AttentiveProbe: dim {d} must be a multiple of heads={self.heads}")
        x = nn.BatchNorm(use_running_average=not train, **_BN, name="norm")(features)
        query = self.param("query", nn.initializers.normal(0.02), (1, self.num_queries, d))
        kv = nn.Dense(2 * d, name="kv")(x).reshape(b, n, 2, self.heads, d // self.heads)
        q = jnp.broadcast_to(query, (b, self.num_queries, d)).reshape(b, self.num_queries, self.heads, d // self.heads)
        pooled = dot_product_attention(q, kv[:, :, 0], kv[:, :, 1]).reshape(b, self.num_queries, d)
        return nn.Dense(self.num_classes, kernel_init=_HEAD_INIT, name="classifier")(jnp.mean(pooled, axis=1))


class LinearProbe(nn.Module):
    """features [b, N, d] -> logits [b, num_classes]: mean token, non-affine BatchNorm, linear."""

    num_classes: int

    @nn.compact
    def __call__(self, features: jax.Array, *, train: bool = False) -> jax.Array:
        if features.ndim != 3:
            raise ValueError(f"LinearProbe: features must be [batch, tokens, dim], got {features.shape}")
        x = nn.BatchNorm(use_running_average=not train, **_BN, name="norm")(jnp.mean(features, axis=1))
        return nn.Dense(self.num_classes, kernel_init=_HEAD_INIT, name="classifier")(x)


def extract_features(feature_fn, images: np.ndarray, batch_size: int = 500) -> dict[int, np.ndarray]:
    """Runs a jitted `feature_fn(images) -> {last_k: [b, N, d]}` over `images` in batches.

    Returns `{last_k: float32 [n, N, d]}` as NumPy arrays (host memory; the probes' training data).
    """
    if len(images) == 0:
        raise ValueError("extract_features: no images")
    fn = jax.jit(feature_fn)
    chunks: dict[int, list[np.ndarray]] = {}
    for start in range(0, len(images), batch_size):
        out = jax.device_get(fn(images[start:start + batch_size]))
        for k, v in out.items():
            chunks.setdefault(k, []).append(np.asarray(v, np.float32))
    return {k: np.concatenate(v) for k, v in chunks.items()}
