"""Slot Abstractors' two training stages as Tasks of the one loop, and the reasoning models compared.

    ae_task = AutoencoderTask(SlotAutoencoder(...), ArraySource({"image": panels}))     # stage 1
    slots = encode_problems(ae, ae_params, problems.images)                            # frozen, once
    task = ReasoningTask(make_reasoner("slot_abstractor", ...), ArraySource(slots | {"label": answers}))

Stage 1 trains the slot autoencoder on reconstruction (mean squared error) and is then frozen; its
slots are computed once for every candidate image (a fixed slot-initialisation key, so the frozen
encoder is a deterministic function). Stage 2 trains a reasoner that scores every candidate of a
problem, with the cross-entropy of the softmax over candidates.

Reasoners (`make_reasoner`), all mapping the K slots (z, m) [B, K, D] of one candidate to a score:
  * slot_abstractor: the Abstractor (symbols = slot position embeddings m);
  * transformer: a plain Transformer over the slot tokens z + Dense(m), mean readout (no relational
    bottleneck);
  * learned_symbols: the Abstractor with learned symbols (one learned vector per slot index)
    instead of the slot positions;
and, without slots (`ImageReasoningTask` on the candidate images):
  * cnn_abstractor: the Abstractor over the cells of a CNN feature map (z = the cell's features,
    m = its position embedding), i.e. CNN features without slots;
  * cnn_mlp: a CNN and an MLP scoring each candidate image.
"""

from __future__ import annotations

import dataclasses

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax

from jaxml.papers.slotabs.abstractor import Abstractor, TemporalContextNorm, feed_forward, readout
from jaxml.papers.slotabs.slot_attention import SlotAutoencoder, SoftPositionEmbed

REASONERS = ("slot_abstractor", "transformer", "learned_symbols", "cnn_abstractor", "cnn_mlp")
SLOT_REASONERS = REASONERS[:3]


@dataclasses.dataclass(frozen=True, eq=False)
class AutoencoderTask:
    """Stage 1: reconstruct images {"image": float [B, S, S, C]} through the slots (the target is
    the image pooled by the model's `decode_factor`)."""

    model: SlotAutoencoder
    train_source: object
    eval_sources: dict

    def init(self, rng, batch):
        k1, k2 = jax.random.split(rng)
        return self.model.init({"params": k1, "slots": k2}, batch["image"])["params"]

    def loss(self, params, batch, rng):
        out = self.model.apply({"params": params}, batch["image"], rngs={"slots": rng})
        mse = jnp.mean((out["recon"] - out["target"]) ** 2)
        return mse, {"mse": mse}

    def evaluate(self, params, batch):
        out = self.model.apply({"params": params}, batch["image"], rngs={"slots": jax.random.PRNGKey(0)})
        return {"mse": jnp.mean((out["recon"] - out["target"]) ** 2, axis=(1, 2, 3))}

    def train_data(self):
        return self.train_source

    def eval_data(self):
        return self.eval_sources


def encode_problems(model: SlotAutoencoder, params, images: np.ndarray, batch_size: int = 256,
                    seed: int = 0) -> dict[str, np.ndarray]:
    """Frozen slots of every candidate image: images [N, C, S, S, 1] -> {"z", "m": [N, C, K, D]}."""
    n, c = images.shape[:2]
    flat = images.reshape(n * c, *images.shape[2:])
    encode = jax.jit(lambda p, x, k: model.apply({"params": p}, x, rngs={"slots": k}, method=SlotAutoencoder.encode))
    zs, ms = [], []
    for i in range(0, len(flat), batch_size):
        out = encode(params, jnp.asarray(flat[i:i + batch_size]), jax.random.PRNGKey(seed))
        zs.append(np.asarray(out["z"]))
        ms.append(np.asarray(out["m"]))
    z, m = np.concatenate(zs), np.concatenate(ms)
    return {"z": z.reshape(n, c, *z.shape[1:]), "m": m.reshape(n, c, *m.shape[1:])}


class SlotTransformer(nn.Module):
    """A plain Transformer over slot tokens z + Dense(m) (the no-relational-bottleneck ablation)."""

    dim: int = 64
    depth: int = 4
    heads: int = 4
    mlp: int = 128
    outputs: int = 1

    @nn.compact
    def __call__(self, z: jax.Array, m: jax.Array) -> jax.Array:
        x = nn.Dense(self.dim)(TemporalContextNorm(name="tcn_z")(z)) + nn.Dense(self.dim)(TemporalContextNorm(name="tcn_m")(m))
        for i in range(self.depth):
            h = nn.LayerNorm()(x)
            x = x + nn.MultiHeadDotProductAttention(self.heads, qkv_features=self.dim, name=f"attn{i}")(h, h)
            x = x + feed_forward(self.mlp, self.dim, f"ff{i}")(x)
        return readout(self.outputs, jnp.mean(x, axis=1))


class LearnedSymbolAbstractor(nn.Module):
    """The Abstractor with a learned symbol per token index instead of the slot positions."""

    abstractor: Abstractor

    @nn.compact
    def __call__(self, z: jax.Array, m: jax.Array) -> jax.Array:
        table = self.param("symbols", nn.initializers.normal(1.0), (z.shape[1], m.shape[-1]))
        return self.abstractor(z, jnp.broadcast_to(table, m.shape))


class CNNTokens(nn.Module):
    """images [B, S, S, C] -> (features z, position embeddings m) [B, 16, D] of a 4x4 feature map: two
    stride-2 convolutions (5x5 and 3x3, `width` channels, as the slot encoder's first two layers),
    then 3x3 convolutions each followed by a 2x2 max-pool down to 4x4, and a Dense layer to D."""

    dim: int = 64
    width: int = 32

    @nn.compact
    def __call__(self, images: jax.Array) -> tuple[jax.Array, jax.Array]:
        x = nn.relu(nn.Conv(self.width, (5, 5), strides=(2, 2))(images))
        x = nn.relu(nn.Conv(self.width, (3, 3), strides=(2, 2))(x))
        while x.shape[1] > 4:
            x = nn.relu(nn.Conv(self.width, (3, 3))(x))
            x = nn.max_pool(x, (2, 2), strides=(2, 2))
        x = nn.Dense(self.dim)(x)
        x, pos = SoftPositionEmbed(self.dim, name="pos")(x)
        b = x.shape[0]
        return x.reshape(b, -1, self.dim), jnp.broadcast_to(pos.reshape(1, -1, self.dim), (b, pos.shape[0] * pos.shape[1], self.dim))


class CNNAbstractor(nn.Module):
    abstractor: Abstractor
    dim: int = 64

    @nn.compact
    def __call__(self, images: jax.Array) -> jax.Array:
        z, m = CNNTokens(self.dim, name="cnn")(images)
        return self.abstractor(z, m)


class CNNMLP(nn.Module):
    dim: int = 64
    outputs: int = 1

    @nn.compact
    def __call__(self, images: jax.Array) -> jax.Array:
        z, _ = CNNTokens(self.dim, name="cnn")(images)
        x = z.reshape(z.shape[0], -1)
        return readout(self.outputs, nn.relu(nn.Dense(4 * self.dim)(x)))


def make_reasoner(name: str, dim: int = 64, depth: int = 4, heads: int = 4, head_dim: int = 16, mlp: int = 128,
                  outputs: int = 1) -> nn.Module:
    """The reasoner `name` (one of REASONERS) at the given width and depth; `outputs` scores per
    image (1: a score per candidate; 2: a binary judgement of a single image)."""
    abstractor = Abstractor(dim=dim, depth=depth, heads=heads, head_dim=head_dim, mlp=mlp, outputs=outputs)
    models = {"slot_abstractor": lambda: abstractor,
              "transformer": lambda: SlotTransformer(dim=dim, depth=depth, heads=heads, mlp=mlp, outputs=outputs),
              "learned_symbols": lambda: LearnedSymbolAbstractor(abstractor),
              "cnn_abstractor": lambda: CNNAbstractor(abstractor, dim=dim),
              "cnn_mlp": lambda: CNNMLP(dim=dim, outputs=outputs)}
    if name not in models:
        raise ValueError(f"unknown reasoner {name!r}; accepted: {REASONERS}")
    return models[name]()


@dataclasses.dataclass(frozen=True, eq=False)
class ReasoningTask:
    """Stage 2: choose among C candidates (or, with C = 1 and a model of `outputs` scores, among the
    `outputs` answers of a binary judgement). Slot reasoners read batches {"z", "m": [B, C, K, D],
    "label": [B]}; image reasoners (`images=True`) read {"image": [B, C, S, S, 1], "label": [B]}."""

    model: nn.Module
    train_source: object
    eval_sources: dict
    images: bool = False

    def _inputs(self, batch):
        if self.images:
            x = batch["image"]
            return (x.reshape(-1, *x.shape[2:]),), x.shape[:2]
        z, m = batch["z"], batch["m"]
        return (z.reshape(-1, *z.shape[2:]), m.reshape(-1, *m.shape[2:])), z.shape[:2]

    def logits(self, params, batch):
        inputs, (b, c) = self._inputs(batch)
        return self.model.apply({"params": params}, *inputs).reshape(b, -1)     # [B, C] or [B, outputs]

    def init(self, rng, batch):
        inputs, _ = self._inputs(batch)
        return self.model.init(rng, *inputs)["params"]

    def loss(self, params, batch, rng):
        del rng
        logits = self.logits(params, batch)
        loss = optax.softmax_cross_entropy_with_integer_labels(logits, batch["label"]).mean()
        return loss, {"accuracy": jnp.mean(jnp.argmax(logits, -1) == batch["label"])}

    def evaluate(self, params, batch):
        logits = self.logits(params, batch)
        return {"accuracy": (jnp.argmax(logits, -1) == batch["label"]).astype(jnp.float32),
                "loss": optax.softmax_cross_entropy_with_integer_labels(logits, batch["label"])}

    def train_data(self):
        return self.train_source

    def eval_data(self):
        return self.eval_sources
