"""Deep metric learning as RobRank sets it up for CA-TRIDE: an L2-normalised CNN embedding, the
triplet loss on normalised-Euclidean distances with SPC-2 random mining, and SPC-2 batches.

    net = EmbeddingNet()                          # RobRank's C2F2: conv5x5 32, conv5x5 64, fc 1024, 512-d
    emb = net.apply({"params": p}, images)        # float32 [n, 512], unit norm
    loss, parts = triplet_loss(emb, labels, key)  # SPC-2 batch: rows 2i and 2i+1 share a class

SPC-2 batches (Roth et al. 2020, RobRank's `ptripletN`): a batch of B pairs is 2B images where image
2i (the anchor) and 2i+1 (its positive) share a class; each anchor's negative is a random image of
another class in the batch. `PairSource` yields such pairs through the one loop's random batches.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from jaxml.core.classification import to_float_images
from jaxml.papers.catride.collapse import collapseness
from jaxml.models.cnn import CNN

MARGIN = 0.2   # RobRank's triplet margin for normalised (N) and cosine (C) distances


class EmbeddingNet(nn.Module):
    """images float [n, H, W, C] in [0, 1] -> unit-norm embeddings float32 [n, dim].

    The default is RobRank's 28x28 backbone C2F2 (two 5x5 conv-relu-maxpool blocks of 32 and 64
    channels, a 1024-unit dense layer) with a `dim`-wide embedding head."""

    dim: int = 512
    features: tuple[int, ...] = (32, 64)
    hidden: int = 1024
    kernel_size: int = 5
    normalized: bool = True      # False: the raw embedding (same parameters), for its norm

    @nn.compact
    def __call__(self, images: jax.Array) -> jax.Array:
        out = CNN(num_classes=self.dim, features=self.features, hidden=self.hidden,
                  kernel_size=self.kernel_size, name="backbone")(images)
        return normalize(out) if self.normalized else out


@functools.lru_cache(maxsize=None)
def _apply(model: nn.Module):
    return jax.jit(lambda params, images: model.apply({"params": params}, images))


def bound_embed(model: nn.Module, params) -> jax.tree_util.Partial:
    """`images -> model.apply({"params": params}, images)` as a `jax.tree_util.Partial` with the
    parameters as its argument: the attacks compile once per architecture and input shape, not
    once per trained model."""
    return jax.tree_util.Partial(_apply(model), params)


def normalize(x: jax.Array, eps: float = 1e-12) -> jax.Array:
    """Rows of x scaled to unit L2 norm (PyTorch's F.normalize: divided by max(norm, eps))."""
    return x / jnp.maximum(jnp.linalg.norm(x, axis=-1, keepdims=True), eps)


def pairwise_distances(a: jax.Array, b: jax.Array, floor: float = 0.0) -> jax.Array:
    """Euclidean distances [..., n, m] between the rows of a [..., n, d] and b [..., m, d]; the squared
    distance is clamped at `floor` before the sqrt (a positive floor keeps its gradient finite)."""
    sq = (jnp.sum(a * a, -1)[..., :, None] + jnp.sum(b * b, -1)[..., None, :]
          - 2.0 * a @ jnp.swapaxes(b, -1, -2))
    return jnp.sqrt(jnp.maximum(sq, floor))


def triplet_hinge(d_ap: jax.Array, d_an: jax.Array, margin: float = MARGIN) -> jax.Array:
    """The per-triplet loss relu(d_ap - d_an + margin)."""
    return jax.nn.relu(d_ap - d_an + margin)


def spc2_random_negatives(key: jax.Array, labels: jax.Array) -> jax.Array:
    """For each anchor 2i of an SPC-2 batch, a uniformly random index j with labels[j] != labels[2i]
    (int [n/2]); when the batch holds a single class, a random index (RobRank's fallback)."""
    anchors = labels[0::2]
    other = labels[None, :] != anchors[:, None]                               # [n/2, n]
    scores = jax.random.uniform(key, other.shape)
    has_other = other.any(axis=1, keepdims=True)
    return jnp.argmax(jnp.where(other | ~has_other, scores, -1.0), axis=1)


def pair_distance(x: jax.Array, y: jax.Array, eps: float = 1e-6) -> jax.Array:
    """PyTorch's `F.pairwise_distance` (and `triplet_margin_loss`'s distance): ||x - y + eps|| over
    the last axis."""
    return jnp.linalg.norm(x - y + eps, axis=-1)


def triplet_distances(emb: jax.Array, negatives: jax.Array) -> tuple[jax.Array, jax.Array]:
    """d(a, p), d(a, n) [n/2] for anchors 2i, positives 2i+1 and the given negatives (`pair_distance`)."""
    a, p, n = emb[0::2], emb[1::2], emb[negatives]
    return pair_distance(a, p), pair_distance(a, n)


def gradual_hard_negatives(key: jax.Array, emb: jax.Array, labels: jax.Array, progress) -> jax.Array:
    """CA-TRIDE's spc2-ghard miner: for anchor 2i a random semi-hard negative j (d_ap^2 < d_aj^2 and
    d_ap - d_aj + m > 0, labels differ) with the margin m = 0.2 (1 - progress / 2)^2 shrinking over
    training; else a random other-class image; else any image. int [n/2]."""
    dist = pairwise_distances(emb, emb)[0::2]                                 # [n/2, n]
    d_ap = dist[jnp.arange(dist.shape[0]), jnp.arange(1, emb.shape[0], 2)][:, None]
    m = 0.2 * (1.0 - progress / 2.0) ** 2
    other = labels[None, :] != labels[0::2][:, None]
    semi = other & (d_ap ** 2 < dist ** 2) & (d_ap - dist + m > 0)
    allowed = jnp.where(semi.any(1, keepdims=True), semi, jnp.where(other.any(1, keepdims=True), other, True))
    return jnp.argmax(jnp.where(allowed, jax.random.uniform(key, dist.shape), -1.0), axis=1)


MINERS = ("random", "gradual_hard")


def mine(miner: str, key: jax.Array, emb: jax.Array, labels: jax.Array, progress) -> jax.Array:
    """The negative [n/2] of each anchor of an SPC-2 batch with embeddings emb [n, d] by `miner`."""
    if miner == "random":
        return spc2_random_negatives(key, labels)
    if miner == "gradual_hard":
        return gradual_hard_negatives(key, emb, labels, progress)
    raise ValueError(f"miner {miner!r}: accepted {MINERS}")


def triplet_loss(emb: jax.Array, labels: jax.Array, key: jax.Array, margin: float = MARGIN
                 ) -> tuple[jax.Array, dict[str, jax.Array]]:
    """The SPC-2 random-mined triplet loss mean(relu(d_ap - d_an + margin)) of unit-norm embeddings
    emb [2B, d] with labels [2B]; also returns the distances and the negatives."""
    if emb.shape[0] % 2:
        raise ValueError(f"an SPC-2 batch has an even number of rows (anchor, positive pairs), got {emb.shape[0]}")
    negatives = spc2_random_negatives(key, labels)
    d_ap, d_an = triplet_distances(emb, negatives)
    return jnp.mean(triplet_hinge(d_ap, d_an, margin)), {"d_ap": d_ap, "d_an": d_an, "negatives": negatives}


class PairSource:
    """A Source of SPC-2 pairs over `images` [N, H, W, C] and `labels` [N]: example i is image i and a
    partner of the same class (a fixed, seeded pairing), so the loop's random batches of B examples
    are SPC-2 batches of 2B images: `{"image": [B, 2, H, W, C], "label": [B]}`."""

    def __init__(self, images: np.ndarray, labels: np.ndarray, seed: int = 0):
        images, labels = np.asarray(images), np.asarray(labels)
        if len(images) != len(labels) or len(images) == 0:
            raise ValueError(f"PairSource: {len(images)} images and {len(labels)} labels (need the same, > 0)")
        counts = np.bincount(labels.astype(np.int64))
        if np.any((counts > 0) & (counts < 2)):
            raise ValueError(f"PairSource: classes {np.flatnonzero((counts > 0) & (counts < 2)).tolist()} have a "
                             "single image; a pair needs two")
        rng = np.random.default_rng(seed)
        partner = np.empty(len(labels), np.int64)
        for c in np.unique(labels):
            idx = np.flatnonzero(labels == c)
            perm = rng.permutation(idx)
            partner[perm] = np.roll(perm, 1)        # a cycle: nobody is its own partner
        self.images, self.labels, self.partner = images, labels, partner

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, indices) -> dict[str, np.ndarray]:
        indices = np.asarray(indices)
        pair = np.stack([self.images[indices], self.images[self.partner[indices]]], axis=1)
        return {"image": pair, "label": self.labels[indices]}


def flatten_pairs(batch: dict[str, jax.Array]) -> tuple[jax.Array, jax.Array]:
    """SPC-2 batch `{"image": [B, 2, ...], "label": [B]}` -> images [2B, ...], labels [2B]."""
    images = batch["image"]
    return images.reshape(-1, *images.shape[2:]), jnp.repeat(batch["label"], 2)


@dataclasses.dataclass(frozen=True, eq=False)
class MetricTask:
    """The one loop's Task for SPC-2 triplet training of `model` (an EmbeddingNet), benign or
    adversarial: the one training step every defence shares.

    Each step mines a negative per anchor on the clean embeddings, lets the adversary (if any) turn
    the batch into the triplet to train on (`jaxml.papers.catride.defenses`), and takes the triplet
    loss of that triplet. The task is stateful: its model state is the step counter that the
    adversaries' ramp (step / total_steps) and TRIDE's alternation (step % 2) read.

    Attributes:
      model: maps images [n, H, W, C] in [0, 1] to unit-norm embeddings.
      train_source: a PairSource (batches `{"image": [B, 2, H, W, C], "label": [B]}`).
      eval_sources: `{split: PairSource}`, evaluated with the per-pair triplet loss (negatives drawn
        with a fixed key) and whether the pair is ranked right (d_ap < d_an).
      margin: the triplet margin.
      adversary: None (benign training) or a defence's adversary (`defenses.make_adversary`).
      total_steps: the length of training (the adversaries' ramp and the gradual-hard miner).
      miner: "random" (RobRank's spc2-random) or "gradual_hard" (CA-TRIDE's spc2-ghard).
      half_term: add CA-TRIDE's 0.5 relu(low-half mean d_ap - low-half mean d_an + 0.04) on odd
        steps (its `pgtripletN` loss applies it on every second call).
      lam: collapseness's soft-max sharpness for the logged diagnostic.
    """

    model: EmbeddingNet
    train_source: PairSource
    eval_sources: dict
    margin: float = MARGIN
    adversary: Callable | None = None
    total_steps: int = 1
    miner: str = "random"
    half_term: bool = False
    lam: float = 10.0

    def __post_init__(self):
        if self.miner not in MINERS:
            raise ValueError(f"MetricTask: miner {self.miner!r}; accepted {MINERS}")
        if self.total_steps < 1:
            raise ValueError(f"MetricTask: total_steps must be >= 1, got {self.total_steps}")

    def init(self, rng, batch):
        images, _ = flatten_pairs(batch)
        return self.model.init(rng, to_float_images(images))["params"]

    def init_state(self, rng, batch):
        del rng, batch
        return {"step": jnp.zeros((), jnp.int32)}

    def _raw(self, params, x):
        """Embeddings before normalisation [n, dim] (the model without its last step)."""
        return self.model.clone(normalized=False).apply({"params": params}, x)

    def loss(self, params, batch, rng, model_state):
        images, labels = flatten_pairs(batch)
        x = to_float_images(images)
        step = model_state["step"]
        progress = jnp.minimum(step.astype(jnp.float32) / self.total_steps, 1.0)
        k_mine, k_adv = jax.random.split(rng)
        fixed = jax.lax.stop_gradient(params)
        embed = lambda z: self.model.apply({"params": fixed}, z)          # noqa: E731
        info = {}
        if self.adversary is None:               # one forward: the clean embeddings are the trained ones
            raw = self._raw(params, x)
            clean = jax.lax.stop_gradient(normalize(raw))
            negatives = mine(self.miner, k_mine, clean, labels, progress)
            emb = normalize(raw)
            ea, ep, en = emb[0::2], emb[1::2], emb[negatives]
        else:
            clean = embed(x)
            negatives = mine(self.miner, k_mine, clean, labels, progress)
            xa, xp, xn, info = self.adversary(embed, x, negatives, k_adv, progress, step % 2)
            raw = self._raw(params, jnp.concatenate([xa, xp, xn]))
            ea, ep, en = jnp.split(normalize(raw), 3)
        d_ap, d_an = pair_distance(ea, ep), pair_distance(ea, en)
        loss = jnp.mean(triplet_hinge(d_ap, d_an, self.margin))
        if self.half_term:
            half = max(d_ap.shape[0] // 2, 1)
            low = lambda d: jnp.mean(-jax.lax.top_k(-d, half)[0])           # noqa: E731
            loss = loss + (step % 2) * 0.5 * jax.nn.relu(low(d_ap) - low(d_an) + 0.04)
        c_ap, c_an = triplet_distances(clean, negatives)
        metrics = {"d_ap": d_ap.mean(), "d_an": d_an.mean(), "ranked_right": jnp.mean(d_ap < d_an),
                   "clean_loss": jnp.mean(triplet_hinge(c_ap, c_an, self.margin)),
                   "collapseness": collapseness(d_ap, d_an, self.lam),
                   "embedding_norm": jnp.mean(jnp.linalg.norm(raw, axis=-1)), **info}
        return loss, (metrics, {"step": step + 1})

    def evaluate(self, params, batch, model_state=None):
        del model_state
        images, labels = flatten_pairs(batch)
        emb = self.model.apply({"params": params}, to_float_images(images))
        negatives = spc2_random_negatives(jax.random.PRNGKey(0), labels)
        d_ap, d_an = triplet_distances(emb, negatives)
        return {"triplet_loss": triplet_hinge(d_ap, d_an, self.margin),
                "ranked_right": (d_ap < d_an).astype(jnp.float32)}

    def train_data(self):
        return self.train_source

    def eval_data(self):
        return self.eval_sources

    def embed(self, params, images: np.ndarray, batch_size: int = 1000) -> np.ndarray:
        """Embeddings float32 [n, dim] of images [n, H, W, C] (uint8 or float in [0, 1])."""
        apply = _apply(self.model)
        return np.concatenate([np.asarray(apply(params, to_float_images(jnp.asarray(images[i:i + batch_size]))))
                               for i in range(0, len(images), batch_size)])
