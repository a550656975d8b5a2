"""The vision expert: a ViT trained here (with the one loop) to say what is where in an instance image.

It serves two judges:

  * the text-only judge reads its **caption** (the paper's "Vision Expert" setting: a description
    of the image in place of the image), `caption(...)`, built from its predictions with
    `instance.caption_from_labels`;
  * the vision-language judge reads its **features**, frozen: the final patch tokens, average-pooled
    2x2 to a 4x4 grid, plus the class token (17 tokens), `features(...)`.

Targets (`instance.scene_labels`): the object in each quadrant (0 = empty, k = OBJECT_NAMES[k-1])
and the background (plain or which video clip). A ViT on the shared encoder blocks whose object
head reads each quadrant's mean patch token (`ExpertViT`); the loss is the sum of the five
cross-entropies.

    expert = VisionExpert.create()
    outcome = train_and_evaluate(config, workdir, task=VisionExpertTask(expert.model, train, evals))
    expert = expert.with_params(outcome.state.params)
    expert.caption(images)          # [N] strings
    expert.features(images)         # [N, 17, hidden]
"""

from __future__ import annotations

import dataclasses
import functools

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax

from jaxml.core.classification import to_float_images
from jaxml.data.pipeline import ArraySource, Source
from jaxml.models.vit import EncoderBlock, sincos_position_embedding
from jaxml.papers.mllmjudge import instance

NUM_QUADRANTS = 4
NUM_OBJECTS = len(instance.OBJECT_NAMES) + 1      # + empty
NUM_BACKGROUNDS = len(instance.BACKGROUNDS)
NUM_LOGITS = NUM_QUADRANTS * NUM_OBJECTS + NUM_BACKGROUNDS
FEATURE_TOKENS = 17


class ExpertViT(nn.Module):
    """A ViT with a convolutional stem (early convolutions, Xiao et al. 2021: a from-scratch ViT on
    a few thousand images trains far faster with it) whose heads read where the answer lives: each
    quadrant's object head reads the mean of that quadrant's patch tokens (one head shared by the
    four quadrants), the background head the mean of all patch tokens. Images [B, 64, 64, 3] float -> (logits [B, NUM_LOGITS], tokens
    [B, 1 + g*g, hidden] after the final norm)."""

    patch_size: int = 8
    hidden: int = 128
    layers: int = 4
    heads: int = 4

    @nn.compact
    def __call__(self, images, *, train: bool = False):
        x = images
        for i, width in enumerate((32, 64)):                     # convolutional stem, /4
            x = nn.gelu(nn.Conv(width, (3, 3), strides=2, name=f"stem_{i}")(x))
        x = nn.Conv(self.hidden, (3, 3), strides=self.patch_size // 4, name="patch_embed")(x)   # /patch_size
        b, g, _, d = x.shape
        x = x.reshape(b, g * g, d)
        cls = self.param("cls_token", nn.initializers.zeros, (1, 1, d), x.dtype)
        x = jnp.concatenate([jnp.broadcast_to(cls, (b, 1, d)), x + sincos_position_embedding(g, g, d)[None]], 1)
        for i in range(self.layers):
            x = EncoderBlock(self.heads, 2 * self.hidden, name=f"block_{i}")(x, train=train)
        x = nn.LayerNorm(name="final_norm")(x)
        grid = x[:, 1:].reshape(b, 2, g // 2, 2, g // 2, d).mean(axis=(2, 4)).reshape(b, NUM_QUADRANTS, d)
        q = nn.Dense(NUM_OBJECTS, name="object_head")(grid)                      # [B, 4, objects]
        bg = nn.Dense(NUM_BACKGROUNDS, name="background_head")(jnp.mean(x[:, 1:], axis=1))
        return jnp.concatenate([q.reshape(b, -1), bg], axis=-1), x


def make_model(hidden: int = 128, layers: int = 4, heads: int = 4, patch_size: int = 8) -> ExpertViT:
    return ExpertViT(patch_size=patch_size, hidden=hidden, layers=layers, heads=heads)


def split_logits(logits: jax.Array) -> tuple[jax.Array, jax.Array]:
    """[B, NUM_LOGITS] -> (quadrant logits [B, 4, NUM_OBJECTS], background logits [B, NUM_BACKGROUNDS])."""
    q = logits[:, :NUM_QUADRANTS * NUM_OBJECTS].reshape(logits.shape[0], NUM_QUADRANTS, NUM_OBJECTS)
    return q, logits[:, NUM_QUADRANTS * NUM_OBJECTS:]


def source_of(scenes) -> ArraySource:
    """`{"image" uint8 [N, 64, 64, 3], "quadrants" int32 [N, 4], "background" int32 [N]}`."""
    labels = instance.scene_labels(scenes)
    return ArraySource({"image": np.stack([s.image for s in scenes]), "quadrants": labels["quadrants"],
                        "background": labels["background"]})


@dataclasses.dataclass(frozen=True, eq=False)
class VisionExpertTask:
    """Multi-head classification of quadrant contents and background (a Task of the one loop)."""

    model: ExpertViT
    train_source: Source
    eval_sources: dict

    def init(self, rng, batch):
        return self.model.init(rng, to_float_images(batch["image"]))["params"]

    def _terms(self, params, batch, train, rng=None):
        logits, _ = self.model.apply({"params": params}, to_float_images(batch["image"]), train=train)
        q, bg = split_logits(logits)
        q_ce = optax.softmax_cross_entropy_with_integer_labels(q, batch["quadrants"])        # [B, 4]
        bg_ce = optax.softmax_cross_entropy_with_integer_labels(bg, batch["background"])     # [B]
        q_ok = jnp.argmax(q, -1) == batch["quadrants"]
        return q_ce.sum(-1) + bg_ce, q_ok, jnp.argmax(bg, -1) == batch["background"]

    def loss(self, params, batch, rng):
        ce, q_ok, bg_ok = self._terms(params, batch, True, rng)
        return ce.mean(), {"quadrant_accuracy": q_ok.mean(), "background_accuracy": bg_ok.mean()}

    def evaluate(self, params, batch):
        ce, q_ok, bg_ok = self._terms(params, batch, False)
        f = jnp.float32
        return {"loss": ce, "quadrant_accuracy": q_ok.mean(-1).astype(f), "scene_accuracy": q_ok.all(-1).astype(f),
                "background_accuracy": bg_ok.astype(f)}

    def train_data(self) -> Source:
        return self.train_source

    def eval_data(self) -> dict:
        return self.eval_sources


@functools.lru_cache(maxsize=8)
def _programs(model: ExpertViT):
    @jax.jit
    def run(params, images):
        logits, x = model.apply({"params": params}, to_float_images(images))
        b, n, d = x.shape
        g = int(round((n - 1) ** 0.5))
        grid = x[:, 1:].reshape(b, g // 2, 2, g // 2, 2, d).mean(axis=(2, 4)).reshape(b, -1, d)
        q, bg = split_logits(logits)
        return jnp.concatenate([x[:, :1], grid], axis=1), jnp.argmax(q, -1), jnp.argmax(bg, -1)

    return run


@dataclasses.dataclass(frozen=True, eq=False)
class VisionExpert:
    """A vision-expert ViT and its trained params (None until trained)."""

    model: ExpertViT
    params: dict | None = None

    @classmethod
    def create(cls, **model_kwargs) -> "VisionExpert":
        return cls(make_model(**model_kwargs))

    def with_params(self, params) -> "VisionExpert":
        return dataclasses.replace(self, params=params)

    def _run(self, images: np.ndarray, batch_size: int = 256):
        if self.params is None:
            raise ValueError("VisionExpert has no params: train it (VisionExpertTask) and call with_params")
        images = np.asarray(images)
        if images.ndim != 4 or images.shape[1:] != (instance.IMAGE_SIZE, instance.IMAGE_SIZE, 3):
            raise ValueError(f"images must be uint8 [N, {instance.IMAGE_SIZE}, {instance.IMAGE_SIZE}, 3], got "
                             f"{images.shape}")
        run = _programs(self.model)
        outs = []
        for i in range(0, len(images), batch_size):
            chunk = images[i:i + batch_size]
            pad = batch_size - len(chunk) if len(images) > batch_size else 0
            if pad:
                chunk = np.concatenate([chunk, np.repeat(chunk[-1:], pad, 0)])
            out = jax.device_get(run(self.params, chunk))
            outs.append([o[:len(o) - pad] for o in out])
        return [np.concatenate(parts) for parts in zip(*outs)]

    def features(self, images: np.ndarray) -> np.ndarray:
        """float32 [N, FEATURE_TOKENS, hidden]: class token + 4x4 pooled patch tokens of the last block."""
        return self._run(images)[0].astype(np.float32)

    def predict(self, images: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(quadrant labels [N, 4], background index [N])."""
        _, q, bg = self._run(images)
        return q.astype(np.int32), bg.astype(np.int32)

    def caption(self, images: np.ndarray) -> list[str]:
        """The expert's caption of each image (`instance.caption_from_labels` of its predictions)."""
        q, bg = self.predict(images)
        return [instance.caption_from_labels(qr, int(b)) for qr, b in zip(q, bg)]
