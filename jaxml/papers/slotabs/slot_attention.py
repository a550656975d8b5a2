"""The Slot Attention autoencoder of Slot Abstractors (Locatello et al. 2020, as the official
`art/slot_abstractor.py` uses it): stage 1, pretrained on reconstruction and then frozen.

    ae = SlotAutoencoder(num_slots=7, dim=32, resolution=(64, 64), encoder_strides=(2, 2, 1, 1),
                         decode_factor=2, decoder_dim=16)
    out = ae.apply({"params": p}, images, rngs={"slots": key})    # images float [B, H, W, C] in [0, 1]
    out["recon"], out["target"] [B, h, w, C], out["masks"] [B, K, h, w, 1], out["z"], out["m"] [B, K, D]
    (h, w) = (H, W) / decode_factor

Encoder: four 5x5 conv-relu layers (`dim` channels; the official model keeps full resolution, the
CPU configs stride the first two by 2, `encoder_strides`), a soft position embedding (a Dense layer
of the grid (x, y, 1 - x, 1 - y) added to the features), LayerNorm and an MLP. Slot attention:
`iters` rounds of attention with the softmax over slots, renormalised over inputs (a weighted
mean), a GRU update and a residual MLP. Decoder: each slot broadcast over a `broadcast` x `broadcast`
grid (8 in the paper; plus its own position embedding), stride-2 transposed convolutions
(`decoder_dim` channels) up to the image size divided by `decode_factor`, `decoder_layers` more
stride-1 convolutions, C channels and a mask logit per slot; the masks are a softmax over
slots and the image is the mask-weighted sum. The reconstruction target `out["target"]` is the image
average-pooled by `decode_factor` (1: the image itself, as in the paper; 2 on CPU: the decoder,
the costliest part since it runs once per slot, works on a quarter of the pixels).

The factorised slot representations Slot Abstractors reasons over come from the last round's
attention A [B, K, N] renormalised over the N inputs: z_k = sum_j A_kj feat_j (object features) and
m_k = sum_j A_kj pos_j (the slot's position embedding, pos = the projected grid).
"""

from __future__ import annotations

import math

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
      resolution: (H, W) of the images: square, with H / decode_factor = broadcast * 2**u (the
        decoder's broadcast grid doubled u times).
      channels: image channels C.
      iters: slot attention rounds.
      encoder_strides: the strides of the four encoder convolutions (paper: all 1).
      decode_factor: the reconstruction is the image average-pooled by this factor (paper: 1).
      decoder_dim: channels of the decoder (None: `dim`, as in the paper).
      decoder_kernel: the decoder's kernel size (paper: 5).
      broadcast: the side of the grid each slot is broadcast over (paper: 8).
      target_pool: "mean" or "max": how the target is pooled when decode_factor > 1 (max keeps thin
        strokes at full contrast).
      decoder_layers: stride-1 convolutions after the upsampling (paper: 0; with broadcast equal to
        the output side, the original spatial-broadcast decoder of Watters et al. 2019).
      slot_init: "random", K slots drawn from one learned Gaussian N(mu, sigma^2) (the paper), or
        "learned", one learned vector per slot and no noise (BO-QSA's queries, Jia et al. 2023: the
        slots start apart, which on CPU budgets breaks their symmetry in far fewer steps).
    """

    num_slots: int = 6
    dim: int = 64
    resolution: tuple[int, int] = (32, 32)
    channels: int = 1
    iters: int = 3
    encoder_strides: tuple[int, ...] = (1, 1, 1, 1)
    decode_factor: int = 1
    decoder_dim: int | None = None
    decoder_kernel: int = 5
    slot_init: str = "random"
    broadcast: int = 8
    decoder_layers: int = 0
    target_pool: str = "mean"

    def setup(self):
        h, w = self.resolution
        f = self.decode_factor
        out = h // f if f >= 1 and h % f == 0 else 0
        g = self.broadcast
        if h != w or g < 1 or out < g or out % g or (out // g) & (out // g - 1):
            raise ValueError(f"SlotAutoencoder: resolution must be square with resolution / decode_factor = "
                             f"broadcast * 2**u; got {self.resolution}, decode_factor {f}, broadcast {g}")
        if len(self.encoder_strides) != 4 or h % math.prod(self.encoder_strides):
            raise ValueError(f"SlotAutoencoder: encoder_strides must be 4 strides whose product divides "
                             f"{h}; got {self.encoder_strides}")
        self.convs = [nn.Conv(self.dim, (5, 5), strides=(s, s), name=f"enc{i}")
                      for i, s in enumerate(self.encoder_strides)]
        self.enc_pos = SoftPositionEmbed(self.dim, name="enc_pos")
        self.enc_norm = nn.LayerNorm(name="enc_norm")
        self.enc_mlp = nn.Sequential([nn.Dense(self.dim), nn.relu, nn.Dense(self.dim)], name="enc_mlp")
        if self.slot_init not in ("random", "learned"):
            raise ValueError(f"SlotAutoencoder: slot_init must be 'random' or 'learned', got {self.slot_init!r}")
        mu_rows = self.num_slots if self.slot_init == "learned" else 1
        self.slots_mu = self.param("slots_mu", nn.initializers.xavier_uniform(), (1, mu_rows, self.dim))
        if self.slot_init == "random":
            self.slots_log_sigma = self.param("slots_log_sigma", nn.initializers.xavier_uniform(), (1, 1, self.dim))
        self.slot_attention = SlotAttention(self.dim, self.iters, hidden=2 * self.dim, name="slot_attention")
        self.dec_pos = SoftPositionEmbed(self.dim, name="dec_pos")
        ups = (out // g).bit_length() - 1
        width = self.decoder_dim or self.dim
        self.dec_in = nn.Dense(width, name="dec_in") if width != self.dim else None
        self.deconvs = [nn.ConvTranspose(width, (self.decoder_kernel,) * 2, strides=(2, 2),
                                         name=f"dec{i}") for i in range(ups)]
        self.dec_convs = [nn.Conv(width, (self.decoder_kernel,) * 2, name=f"dec_conv{i}")
                          for i in range(self.decoder_layers)]
        self.dec_out = nn.ConvTranspose(self.channels + 1, (3, 3), name="dec_out")

    def initial_slots(self, batch: int) -> jax.Array:
        """K slots [B, K, D]: drawn from N(mu, sigma^2) with the `slots` rng ("random"), or the learned
        per-slot means ("learned", no noise: BO-QSA's queries)."""
        if self.slot_init == "learned":
            return jnp.broadcast_to(self.slots_mu, (batch, self.num_slots, self.dim))
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
        """slots [B, K, D] -> (recon [B, h, w, C], masks [B, K, h, w, 1]), (h, w) = resolution / decode_factor."""
        b, k, d = slots.shape
        g = self.broadcast
        x = jnp.broadcast_to(slots.reshape(b * k, 1, 1, d), (b * k, g, g, d))
        x, _ = self.dec_pos(x)
        if self.dec_in is not None:
            x = self.dec_in(x)
        for layer in (*self.deconvs, *self.dec_convs):
            x = nn.relu(layer(x))
        side = self.resolution[0] // self.decode_factor
        out = self.dec_out(x).reshape(b, k, side, side, self.channels + 1)
        pixels, logits = out[..., :self.channels], out[..., self.channels:]
        masks = jax.nn.softmax(logits, axis=1)
        return jnp.sum(masks * pixels, axis=1), masks

    def __call__(self, images: jax.Array, slots: jax.Array | None = None) -> dict[str, jax.Array]:
        out = self.encode(images, slots)
        out["recon"], out["masks"] = self.decode(out["slots"])
        out["target"] = self.target(images)
        return out

    def target(self, images: jax.Array) -> jax.Array:
        """The reconstruction target: images [B, H, W, C] pooled by `decode_factor` (`target_pool`)."""
        f = self.decode_factor
        if f == 1:
            return images
        pool = nn.max_pool if self.target_pool == "max" else nn.avg_pool
        return pool(images, (f, f), strides=(f, f))
