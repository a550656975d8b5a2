"""The frozen frame encoder: a small CNN pre-trained on single frames, then used as a feature extractor.

Momentor reads CLIP ViT-L/14 features of each sampled frame (frozen). No CLIP weights ship in the
package registries, so the stand-in is the shared `jaxml.models.cnn.CNN`, pre-trained on the
training videos' frames to recognise what a caption needs (item, colour, background, close-up) and
where the object is, and frozen afterwards; its 128-wide hidden layer is the frame feature.
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np
import optax

from jaxml.data.pipeline import ArraySource, Source
from jaxml.models.cnn import CNN
from jaxml.papers.momentor import engine

HEADS = {"item": len(engine.ITEMS), "colour": len(engine.COLOURS), "background": len(engine.BACKGROUNDS),
         "closeup": 2}
NUM_OUTPUTS = sum(HEADS.values()) + 2          # + (y, x) regression
FEATURE_DIM = 128


def make_model() -> CNN:
    return CNN(num_classes=NUM_OUTPUTS, features=(32, 64), hidden=FEATURE_DIM)


def _images(frames) -> jax.Array:
    return jnp.asarray(frames, jnp.float32) / 127.5 - 1.0


def _heads(out):
    parts, i = {}, 0
    for name, n in HEADS.items():
        parts[name] = out[..., i:i + n]
        i += n
    parts["yx"] = out[..., i:i + 2]
    return parts


@dataclasses.dataclass(eq=False)
class FrameEncoderTask:
    """Pre-training of the frame encoder (a Task of the one loop). Batches: `frames` uint8 [B, 32, 32, 3]
    and the per-frame labels of `engine.render`."""

    train_source: Source
    eval_sources: dict

    @property
    def model(self) -> CNN:
        return make_model()

    def init(self, rng, batch):
        return self.model.init(rng, _images(batch["frames"][:1]))["params"]

    def _losses(self, params, batch):
        out = _heads(self.model.apply({"params": params}, _images(batch["frames"])))
        metrics, total = {}, 0.0
        for name in HEADS:
            ce = optax.softmax_cross_entropy_with_integer_labels(out[name], batch[name])
            total = total + ce
            metrics[f"{name}_accuracy"] = (jnp.argmax(out[name], -1) == batch[name]).astype(jnp.float32)
        yx = jnp.stack([batch["y"], batch["x"]], -1)
        se = ((out["yx"] - yx) ** 2).sum(-1)
        metrics["position_rmse_px"] = jnp.sqrt(se / 2) * engine.FRAME_SIZE
        return total + 10.0 * se, metrics

    def loss(self, params, batch, rng):
        per, metrics = self._losses(params, batch)
        return per.mean(), {k: v.mean() for k, v in metrics.items()}

    def evaluate(self, params, batch):
        per, metrics = self._losses(params, batch)
        return {"loss": per, **metrics}

    def train_data(self) -> Source:
        return self.train_source

    def eval_data(self) -> dict:
        return self.eval_sources


def frame_source(frames: np.ndarray, labels: dict[str, np.ndarray]) -> ArraySource:
    """Every sampled frame with its labels, from `render_all`'s frames [N, M, ...] and labels {name: [N, M]}."""
    return ArraySource({"frames": frames.reshape(-1, *frames.shape[2:]),
                        **{k: v.reshape(-1) for k, v in labels.items()}})


def render_all(videos, num_frames: int, seed: int = 0):
    """frames uint8 [N, M, 32, 32, 3] and labels {name: [N, M]}."""
    out = [engine.render(v, num_frames, seed) for v in videos]
    frames = np.stack([f for f, _ in out])
    labels = {k: np.stack([lab[k] for _, lab in out]) for k in out[0][1]}
    return frames, labels


@functools.lru_cache(maxsize=4)
def _features_fn(model: CNN):
    @jax.jit
    def f(params, frames):
        _, state = model.apply({"params": params}, _images(frames), capture_intermediates=True,
                               mutable=["intermediates"])
        return jax.nn.relu(state["intermediates"]["hidden"]["__call__"][0])
    return f


def features(params, frames: np.ndarray, batch_size: int = 1024) -> np.ndarray:
    """Frozen features of frames uint8 [..., 32, 32, 3] -> float32 [..., 128]."""
    lead = frames.shape[:-3]
    flat = frames.reshape(-1, *frames.shape[-3:])
    fn = _features_fn(make_model())
    out = []
    for i in range(0, len(flat), batch_size):
        rows = np.minimum(np.arange(i, i + batch_size), len(flat) - 1)
        out.append(np.asarray(fn(params, flat[rows]))[:min(batch_size, len(flat) - i)])
    return np.concatenate(out).reshape(*lead, FEATURE_DIM)
