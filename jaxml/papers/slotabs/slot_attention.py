"""The Slot Attention autoencoder of Slot Abstractors (Locatello et al. 2020, as the official
`art/slot_abstractor.py` uses it): stage 1, pretrained on reconstruction and then frozen.

    ae = SlotAutoencoder(num_slots=4, dim=32, resolution=(32, 32))
    out = ae.apply({"params": p}, images, rngs={"slots": key})    # images float [B, H, W, C] in [0, 1]
    out["recon"] [B, H, W, C], out["masks"] [B, K, H, W, 1], out["z"] [B, K, D], out["m"] [B, K, D]

Encoder: four 5x5 conv-relu layers (`dim` channels, full resolution), a soft position embedding
(a Dense layer of the grid (x, y, 1 - x, 1 - y) added to the features), LayerNorm and an MLP.
Slot attention: `iters` rounds of attention with the softmax over slots, renormalised over inputs
(a weighted mean), a GRU update and a residual MLP. Decoder: each slot broadcast over an 8x8 grid
(plus its own position embedding), transposed convolutions up to the image, C channels and a mask
logit per slot; the masks are a softmax over slots and the image is the mask-weighted sum.

The factorised slot representations Slot Abstractors reasons over come from the last round's
attention A [B, K, N] renormalised over the N inputs: z_k = sum_j A_kj feat_j (object features) and
m_k = sum_j A_kj pos_j (the slot's position embedding, pos = the projected grid).
"""

from __future__ import annotations

import flax.linen as nn
import jax
import jax.numpy as jnp

EPS = 1e-8


def position_grid(height: int, width: int) -> jax.Array:
    """[H, W, 4] of (y, x, 1 - y, 1 - x) with y, x evenly spaced in [0, 1]."""
    y, x = jnp.meshgrid(jnp.linspace(0.0, 1.0, height), jnp.linspace(0.0, 1.0, width), indexing="ij")
    grid = jnp.stack([y, x], axis=-1)
    return jnp.concatenate([grid, 1.0 - grid], axis=-1)


class SoftPositionEmbed(nn.Module):
    """x [B, H, W, D] + Dense(grid): the soft position embedding; also returns the projected grid."""

    dim: int

    @nn.compact
    def __call__(self, x: jax.Array) -> tuple[jax.Array, jax.Array]:
        pos = nn.Dense(self.dim, name="grid")(position_grid(x.shape[1], x.shape[2]))      # [H, W, D]
        return x + pos[None], pos


class SlotAttention(nn.Module):
    """Iterative slot attention over inputs [B, N, D_in].

    `__call__(inputs, slots)` takes the initial slots [B, K, D] (drawn by the caller, so that the
    module is a deterministic function of them: permuting the initial slots permutes the outputs)
    and returns (slots [B, K, D], attention [B, K, N] softmaxed over slots and renormalised over inputs).
    """

    dim: int
    iters: int = 3
    hidden: int = 128

    @nn.compact
    def __call__(self, inputs: jax.Array, slots: jax.Array) -> tuple[jax.Array, jax.Array]:
        inputs = nn.LayerNorm(name="norm_inputs")(inputs)
        k = nn.Dense(self.dim, use_bias=False, name="k")(inputs)
        v = nn.Dense(self.dim, use_bias=False, name="v")(inputs)
        q_proj = nn.Dense(self.dim, use_bias=False, name="q")
        norm_slots, norm_mlp = nn.LayerNorm(name="norm_slots"), nn.LayerNorm(name="norm_mlp")
        gru = nn.GRUCell(self.dim, name="gru")
        mlp = nn.Sequential([nn.Dense(self.hidden), nn.relu, nn.Dense(self.dim)], name="mlp")
        attn = None
        for _ in range(self.iters):
            previous = slots
            q = q_proj(norm_slots(slots))
            logits = jnp.einsum("bkd,bnd->bkn", q, k) * self.dim ** -0.5
            attn = jax.nn.softmax(logits, axis=1) + EPS                          # over slots
            attn = attn / jnp.sum(attn, axis=2, keepdims=True)                    # a mean over inputs
            updates = jnp.einsum("bkn,bnd->bkd", attn, v)
            slots, _ = gru(previous, updates)
            slots = slots + mlp(norm_mlp(slots))
        return slots, attn


class SlotAutoencoder(nn.Module):
    """Encoder, slot attention and spatial-broadcast decoder (see the module docstring).

    Attributes:
      num_slots: K.
      dim: channels of the encoder and the slot width D.
      resolution: (H, W) of the images, each divisible by the decoder's 8x8 broadcast grid times
        2 ** (number of upsampling layers), i.e. H = 8 * 2**u.
      channels: image channels C.
      iters: slot attention rounds.
    """

    num_slots: int = 6
    dim: int = 64
    resolution: tuple[int, int] = (32, 32)
    channels: int = 1
    iters: int = 3

    def setup(self):
        h, w = self.resolution
        if h != w or h < 8 or (h // 8) & (h // 8 - 1) or h % 8:
            raise ValueError(f"SlotAutoencoder: resolution must be square, 8 * 2**u (8, 16, 32, 64, 128); got "
                             f"{self.resolution}")
        self.convs = [nn.Conv(self.dim, (5, 5), name=f"enc{i}") for i in range(4)]
        self.enc_pos = SoftPositionEmbed(self.dim, name="enc_pos")
        self.enc_norm = nn.LayerNorm(name="enc_norm")
        self.enc_mlp = nn.Sequential([nn.Dense(self.dim), nn.relu, nn.Dense(self.dim)], name="enc_mlp")
        self.slots_mu = self.param("slots_mu", nn.initializers.xavier_uniform(), (1, 1, self.dim))
        self.slots_log_sigma = self.param("slots_log_sigma", nn.initializers.xavier_uniform(), (1, 1, self.dim))
        self.slot_attention = SlotAttention(self.dim, self.iters, hidden=2 * self.dim, name="slot_attention")
        self.dec_pos = SoftPositionEmbed(self.dim, name="dec_pos")
        ups = (h // 8).bit_length() - 1
        self.deconvs = [nn.ConvTranspose(self.dim, (5, 5), strides=(2, 2), name=f"dec{i}") for i in range(ups)]
        self.dec_out = nn.ConvTranspose(self.channels + 1, (3, 3), name="dec_out")

    def initial_slots(self, batch: int) -> jax.Array:
        """K slots [B, K, D] drawn from N(mu, sigma^2) with the `slots` rng."""
        noise = jax.random.normal(self.make_rng("slots"), (batch, self.num_slots, self.dim))
        return self.slots_mu + jnp.exp(self.slots_log_sigma) * noise

    def encode(self, images: jax.Array, slots: jax.Array | None = None) -> dict[str, jax.Array]:
        """images [B, H, W, C] -> {"slots", "attn" [B, K, N], "z", "m" [B, K, D]}."""
        if images.ndim != 4 or tuple(images.shape[1:3]) != tuple(self.resolution):
            raise ValueError(f"SlotAutoencoder expects images [B, {self.resolution[0]}, {self.resolution[1]}, C], "
                             f"got {images.shape}")
        x = images
        for conv in self.convs:
            x = nn.relu(conv(x))
        x, pos = self.enc_pos(x)
        b = x.shape[0]
        feats = self.enc_mlp(self.enc_norm(x.reshape(b, -1, self.dim)))
        if slots is None:
            slots = self.initial_slots(b)
        slots, attn = self.slot_attention(feats, slots)
        z = jnp.einsum("bkn,bnd->bkd", attn, feats)
        m = jnp.einsum("bkn,nd->bkd", attn, pos.reshape(-1, self.dim))
        return {"slots": slots, "attn": attn, "z": z, "m": m}

    def decode(self, slots: jax.Array) -> tuple[jax.Array, jax.Array]:
        """slots [B, K, D] -> (recon [B, H, W, C], masks [B, K, H, W, 1])."""
        b, k, d = slots.shape
        x = jnp.broadcast_to(slots.reshape(b * k, 1, 1, d), (b * k, 8, 8, d))
        x, _ = self.dec_pos(x)
        for deconv in self.deconvs:
            x = nn.relu(deconv(x))
        out = self.dec_out(x).reshape(b, k, *self.resolution, self.channels + 1)
        pixels, logits = out[..., :self.channels], out[..., self.channels:]
        masks = jax.nn.softmax(logits, axis=1)
        return jnp.sum(masks * pixels, axis=1), masks

    def __call__(self, images: jax.Array, slots: jax.Array | None = None) -> dict[str, jax.Array]:
        out = self.encode(images, slots)
        out["recon"], out["masks"] = self.decode(out["slots"])
        return out
