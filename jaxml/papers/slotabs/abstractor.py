"""The Abstractor of Slot Abstractors (stage 2): relational reasoning over frozen slots.

    model = Abstractor(dim=64, depth=4, heads=4)
    score = model.apply({"params": p}, z, m)      # z, m [B, T, D_in] -> [B] score of each sequence

For one candidate answer, the sequence holds the slots of every panel with the candidate inserted
(T = panels x slots). z are the slots' object features, m their position embeddings.

  1. Temporal context normalisation (Webb et al. 2020), separately for z and m: each feature is
     normalised over the sequence, then scaled and shifted by a learned gamma and beta.
  2. Symbols S_0 = Dense(m): the position embeddings; object features never enter the symbols.
  3. Each of `depth` layers (the official `Abstractor.forward`):
       S <- S + softmax((LN(z) W_q)(LN(z) W_k)^T / sqrt(d_h)) (LN(S) W_v) W_o   relational cross-attention
       S <- S + FF(S);  S <- S + SelfAttn(LN(S));  S <- S + FF(S)           (the same FF twice)
     W_q and W_k start equal (the official code seeds them identically) and carry no bias, so at
     initialisation the attention is a function of the inner products of the normalised features.
  4. Readout: the mean of S over the sequence -> Dense(outputs): one score per candidate (or, for a
     binary judgement of one image, `outputs` = 2 scores).

Object features reach the output only through the query-key products: two inputs whose products
agree give the same score (`tests/papers/slotabs`).
"""

from __future__ import annotations

import flax.linen as nn
import jax
import jax.numpy as jnp

from jaxml.nn.attention import dot_product_attention


class TemporalContextNorm(nn.Module):
    """x [B, T, D] normalised over T per feature, then x * gamma + beta (gamma 1, beta 0 at init)."""

    eps: float = 1e-8

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        mean = jnp.mean(x, axis=1, keepdims=True)
        var = jnp.var(x, axis=1, keepdims=True)
        gamma = self.param("gamma", nn.initializers.ones, (x.shape[-1],))
        beta = self.param("beta", nn.initializers.zeros, (x.shape[-1],))
        return (x - mean) / jnp.sqrt(var + self.eps) * gamma + beta


def _tied_init(key, shape, dtype=jnp.float32):
    """The same matrix for W_q and W_k (the init ignores the per-parameter key's fold-in)."""
    del key
    return nn.initializers.lecun_normal()(jax.random.PRNGKey(0), shape, dtype)


class RelationalCrossAttention(nn.Module):
    """S + softmax(q k^T / sqrt(d_h)) v W_o with q, k from the objects z and v from the symbols S."""

    heads: int
    head_dim: int

    @nn.compact
    def __call__(self, z: jax.Array, symbols: jax.Array) -> jax.Array:
        b, t, _ = z.shape
        zn = nn.LayerNorm(name="norm_z")(z)
        proj = lambda name, init: nn.DenseGeneral((self.heads, self.head_dim), use_bias=False, kernel_init=init,  # noqa: E731
                                                 name=name)
        q = proj("q", _tied_init)(zn)
        k = proj("k", _tied_init)(zn)
        v = proj("v", nn.initializers.lecun_normal())(nn.LayerNorm(name="norm_s")(symbols))
        out = dot_product_attention(q, k, v)                                      # [B, T, H, dh]
        # the relations, for figures: apply(..., mutable=["intermediates"]) returns them [B, H, T, T]
        self.sow("intermediates", "relations",
                 jax.nn.softmax(jnp.einsum("bqhd,bkhd->bhqk", q, k) * self.head_dim ** -0.5, axis=-1))
        return symbols + nn.DenseGeneral(symbols.shape[-1], axis=(-2, -1), name="o")(out)


def feed_forward(mlp: int, dim: int, name: str) -> nn.Module:
    """LayerNorm -> Dense(mlp) -> GELU -> Dense(dim), the block's feed-forward (a residual outside)."""
    return nn.Sequential([nn.LayerNorm(), nn.Dense(mlp), nn.gelu, nn.Dense(dim)], name=name)


class AbstractorLayer(nn.Module):
    heads: int
    head_dim: int
    mlp: int

    @nn.compact
    def __call__(self, z: jax.Array, symbols: jax.Array) -> jax.Array:
        d = symbols.shape[-1]
        ff = feed_forward(self.mlp, d, "ff")
        s = RelationalCrossAttention(self.heads, self.head_dim, name="rca")(z, symbols)
        s = s + ff(s)
        sn = nn.LayerNorm(name="norm_self")(s)
        s = s + nn.MultiHeadDotProductAttention(self.heads, qkv_features=self.heads * self.head_dim,
                                                out_features=d, name="self_attn")(sn, sn)
        return s + ff(s)


class Abstractor(nn.Module):
    """Temporal context norm, symbols from positions, `depth` relational layers, mean readout.

    Attributes:
      dim: symbol width d.
      depth: number of layers (the official ART setting is 6; scaled down for CPU).
      heads, head_dim: attention heads and their width.
      mlp: feed-forward width.
    """

    dim: int = 64
    depth: int = 4
    heads: int = 4
    head_dim: int = 16
    mlp: int = 128
    outputs: int = 1

    @nn.compact
    def __call__(self, z: jax.Array, m: jax.Array) -> jax.Array:
        if z.ndim != 3 or m.shape[:2] != z.shape[:2]:
            raise ValueError(f"Abstractor expects z and m [batch, tokens, features] with the same batch and tokens; "
                             f"got z {z.shape}, m {m.shape}")
        z = TemporalContextNorm(name="tcn_z")(z)
        symbols = nn.Dense(self.dim, name="symbols")(TemporalContextNorm(name="tcn_m")(m))
        for i in range(self.depth):
            symbols = AbstractorLayer(self.heads, self.head_dim, self.mlp, name=f"layer{i}")(z, symbols)
        return readout(self.outputs, jnp.mean(symbols, axis=1))


def readout(outputs: int, pooled: jax.Array) -> jax.Array:
    """Dense(outputs) of the pooled [B, D]: [B] scores when outputs is 1, else [B, outputs]."""
    out = nn.Dense(outputs, name="readout")(pooled)
    return out[:, 0] if outputs == 1 else out


def score_candidates(model: Abstractor, params, z: jax.Array, m: jax.Array) -> jax.Array:
    """Scores of C candidate sequences per problem: z, m [B, C, T, D] -> logits [B, C] (softmax over C
    gives the answer distribution)."""
    b, c = z.shape[:2]
    flat = lambda x: x.reshape(b * c, *x.shape[2:])                               # noqa: E731
    return model.apply({"params": params}, flat(z), flat(m)).reshape(b, c)
