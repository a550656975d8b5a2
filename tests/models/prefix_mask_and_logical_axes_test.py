"""The prefix-LM mask of `jaxml.nn.attention` and the logical axis annotations of `Linear`,
turned into mesh sharding rules by `jaxml.core.mesh.logical_sharding_rules`."""

import chex
import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxml.core.mesh import logical_sharding_rules
from jaxml.nn.attention import dot_product_attention, prefix_causal_mask
from jaxml.nn.layers import Linear

N = 7


def test_prefix_mask_is_bidirectional_in_the_prefix_then_causal_for_every_prefix():
    prefixes = np.arange(0, N + 1)
    mask = np.asarray(prefix_causal_mask(jnp.asarray(prefixes), N))
    chex.assert_shape(mask, (N + 1, 1, N, N))
    for b, p in enumerate(prefixes):
        expected = np.zeros((N, N), bool)
        for q in range(N):
            for k in range(N):
                expected[q, k] = (q < p and k < p) or k <= q    # prefix block, or causal
        np.testing.assert_array_equal(mask[b, 0], expected, err_msg=f"prefix {p}")
    np.testing.assert_array_equal(mask[0, 0], np.tril(np.ones((N, N), bool)))   # P = 0: plain causal
    assert mask[N, 0].all()                                                      # P = N: full attention
    with pytest.raises(ValueError, match="int"):
        prefix_causal_mask(jnp.ones((2,)), N)


def test_logical_rules_reject_unmapped_axes():
    boxed = Linear(4, kernel_axes=("embed", "vocab")).init(jax.random.PRNGKey(0), jnp.ones((1, 3)))["params"]
    assert isinstance(boxed["kernel"], nn.LogicallyPartitioned)
    with pytest.raises(ValueError, match="vocab"):
        logical_sharding_rules(boxed)
    rules = logical_sharding_rules(boxed, (("embed", None), ("vocab", "model")))
    assert dict(rules) == {r"(^|/)kernel$": (None, "model"), r"(^|/)bias$": ("model",)}


def test_attention_under_the_prefix_mask_equals_numpy():
    rng = np.random.default_rng(0)
    q, k, v = (rng.normal(size=(2, 5, 2, 4)).astype(np.float32) for _ in range(3))
    prefix = np.array([2, 0])
    out = np.asarray(dot_product_attention(jnp.asarray(q), jnp.asarray(k), jnp.asarray(v),
                                           prefix_causal_mask(jnp.asarray(prefix), 5)))
    for b in range(2):
        for h in range(2):
            for i in range(5):
                seen = [j for j in range(5) if j < prefix[b] or j <= i]
                logits = np.array([q[b, i, h] @ k[b, j, h] / 2.0 for j in seen])
                w = np.exp(logits - logits.max())
                w /= w.sum()
                np.testing.assert_allclose(out[b, i, h], w @ v[b, seen, h], rtol=1e-5, atol=1e-6)
