"""The Tasks AIM plugs into the one loop: autoregressive pretraining on unlabelled images, the
supervised reference ViT of the same trunk, and the attentive and linear probes on frozen features.

    task = PretrainTask(model, train_images, val_images)    # images uint8 [n, H, W, C]
    outcome = train_and_evaluate(config, workdir, task=task)  # eval metric: val/loss (next-patch MSE)

Pretraining draws a prefix length per image, P ~ U{1, ..., N-1} (the anchors: uniform on [1, 255]
for N = 256), and a horizontal flip with probability 1/2 (the paper's RandomResizedCrop and colour
jitter are left out at 28 px). Validation uses one fixed prefix per image (seeded), so the
validation loss of every checkpoint is measured on the same masked targets.
"""

from __future__ import annotations

import dataclasses
import zlib

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax

from jaxml.core.mesh import logical_sharding_rules
from jaxml.data.pipeline import ArraySource, Source
from jaxml.models.vit import image_to_patches
from jaxml.papers.aim.model import AIM, AIMTrunk, next_patch_loss, patch_targets
from jaxml.papers.aim.probe import LinearProbe, AttentiveProbe

PREFIX_MODES = ("prefix", "causal")
VAL_PREFIX_SEED = 1234


def standardize(images: jax.Array, mean: float, std: float) -> jax.Array:
    """uint8 (or float in [0, 255]) images -> (x / 255 - mean) / std, float32."""
    return (images.astype(jnp.float32) / 255.0 - mean) / std


def pixel_stats(images: np.ndarray) -> tuple[float, float]:
    """(mean, std) of the pixels of uint8 images scaled to [0, 1] (the input standardisation)."""
    x = np.asarray(images, np.float32) / 255.0
    return float(x.mean()), float(x.std())


def random_flip(rng: jax.Array, images: jax.Array) -> jax.Array:
    """Each image [b, H, W, C] mirrored left-right with probability 1/2."""
    flips = jax.random.bernoulli(rng, 0.5, (images.shape[0],))
    return jnp.where(flips[:, None, None, None], images[:, :, ::-1], images)


def sample_prefix_lengths(rng: jax.Array, batch: int, n: int, mode: str) -> jax.Array:
    """int32 [batch]: P ~ U{1, ..., n-1} per image ('prefix'), or 0 ('causal': every target scored)."""
    if mode not in PREFIX_MODES:
        raise ValueError(f"prefix mode {mode!r}; accepted: {PREFIX_MODES}")
    if mode == "causal":
        return jnp.zeros((batch,), jnp.int32)
    return jax.random.randint(rng, (batch,), 1, n, dtype=jnp.int32)


def validation_prefixes(count: int, n: int, mode: str, seed: int = VAL_PREFIX_SEED) -> np.ndarray:
    """int32 [count]: the fixed prefix lengths of the validation images (same rule as training)."""
    if mode not in PREFIX_MODES:
        raise ValueError(f"prefix mode {mode!r}; accepted: {PREFIX_MODES}")
    if mode == "causal":
        return np.zeros(count, np.int32)
    return np.random.default_rng(seed).integers(1, n, size=count).astype(np.int32)


def num_patches(image_shape: tuple[int, ...], patch_size: int) -> int:
    h, w = image_shape[-3], image_shape[-2]
    return (h // patch_size) * (w // patch_size)


@dataclasses.dataclass(frozen=True, eq=False)
class PretrainTask:
    """AIM pretraining: next-patch regression of `train_images` (labels are never seen).

    Attributes:
      model: the `AIM` module.
      train_images: uint8 [n, H, W, C].
      val_images: uint8 [m, H, W, C]; `evaluate` reports `loss` (per-image next-patch MSE over the
        non-prefix targets, with the fixed validation prefixes).
      prefix_mode: 'prefix' (the paper) or 'causal' (the ablation: P = 0).
      normalize_targets: per-patch normalised pixels (the paper) or raw standardised pixels.
      flip: random horizontal flips during training.
      pixel_mean, pixel_std: the input standardisation (`pixel_stats` of the training images).
    """

    model: AIM
    train_images: np.ndarray
    val_images: np.ndarray
    prefix_mode: str = "prefix"
    normalize_targets: bool = True
    flip: bool = True
    pixel_mean: float = 0.0
    pixel_std: float = 1.0

    def __post_init__(self):
        if self.prefix_mode not in PREFIX_MODES:
            raise ValueError(f"PretrainTask: prefix_mode {self.prefix_mode!r}; accepted: {PREFIX_MODES}")
        for name in ("train_images", "val_images"):
            x = getattr(self, name)
            if x.ndim != 4:
                raise ValueError(f"PretrainTask: {name} must be [n, H, W, C], got shape {x.shape}")

    @property
    def n_patches(self) -> int:
        return num_patches(self.train_images.shape, self.model.patch_size)

    def _inputs(self, images):
        return standardize(images, self.pixel_mean, self.pixel_std)

    def init(self, rng, batch):
        images = self._inputs(batch["image"])
        prefix = jnp.ones((images.shape[0],), jnp.int32)
        return nn.unbox(self.model.init(rng, images, prefix)["params"])

    def param_sharding(self):
        """The trunk's logical axes as `(regex, spec)` rules (heads and MLP units over `model`)."""
        images = jnp.zeros((1,) + self.train_images.shape[1:], jnp.float32)
        boxed = jax.eval_shape(lambda: self.model.init(jax.random.PRNGKey(0), images, jnp.ones((1,), jnp.int32)))
        return logical_sharding_rules(boxed["params"])

    def predict(self, params, images, prefix_lengths):
        """(predictions [b, N, D], targets [b, N, D]) for uint8 images and int prefix lengths [b]."""
        x = self._inputs(images)
        pred = self.model.apply({"params": params}, x, prefix_lengths)
        return pred, patch_targets(image_to_patches(x, self.model.patch_size), self.normalize_targets)

    def loss(self, params, batch, rng):
        flip_rng, prefix_rng = jax.random.split(rng)
        images = batch["image"]
        if self.flip:
            images = random_flip(flip_rng, images)
        prefix = sample_prefix_lengths(prefix_rng, images.shape[0], self.n_patches, self.prefix_mode)
        pred, target = self.predict(params, images, prefix)
        loss, _ = next_patch_loss(pred, target, prefix)
        return loss, {}

    def evaluate(self, params, batch):
        pred, target = self.predict(params, batch["image"], batch["prefix"])
        return {"loss": next_patch_loss(pred, target, batch["prefix"])[1]}

    def train_data(self) -> Source:
        return ArraySource({"image": self.train_images})

    def eval_data(self) -> dict[str, Source]:
        prefixes = validation_prefixes(len(self.val_images), self.n_patches, self.prefix_mode)
        return {"val": ArraySource({"image": self.val_images, "prefix": prefixes})}


class SupervisedViT(nn.Module):
    """The supervised reference: the same `AIMTrunk` with full attention, mean-pooled tokens and a
    linear classifier, images [b, H, W, C] -> logits [b, classes]."""

    trunk: AIMTrunk
    num_classes: int = 10

    @nn.compact
    def __call__(self, images, *, train: bool = False):
        tokens, _ = self.trunk(images, None)
        return nn.Dense(self.num_classes, name="classifier")(jnp.mean(tokens, axis=1))


@dataclasses.dataclass(frozen=True, eq=False)
class SupervisedTask:
    """Cross-entropy training of `SupervisedViT` on labelled images (the supervised reference)."""

    model: SupervisedViT
    train_images: np.ndarray
    train_labels: np.ndarray
    val_images: np.ndarray
    val_labels: np.ndarray
    flip: bool = True
    pixel_mean: float = 0.0
    pixel_std: float = 1.0

    def _logits(self, params, images):
        return self.model.apply({"params": params}, standardize(images, self.pixel_mean, self.pixel_std))

    def init(self, rng, batch):
        return nn.unbox(self.model.init(rng, standardize(batch["image"], self.pixel_mean, self.pixel_std))["params"])

    def param_sharding(self):
        images = jnp.zeros((1,) + self.train_images.shape[1:], jnp.float32)
        return logical_sharding_rules(jax.eval_shape(lambda: self.model.init(jax.random.PRNGKey(0), images))["params"])

    def loss(self, params, batch, rng):
        images = batch["image"]
        if self.flip:
            images = random_flip(rng, images)
        logits = self._logits(params, images)
        loss = optax.softmax_cross_entropy_with_integer_labels(logits, batch["label"]).mean()
        return loss, {"accuracy": jnp.mean(jnp.argmax(logits, -1) == batch["label"])}

    def evaluate(self, params, batch):
        logits = self._logits(params, batch["image"])
        return {"accuracy": (jnp.argmax(logits, -1) == batch["label"]).astype(jnp.float32),
                "loss": optax.softmax_cross_entropy_with_integer_labels(logits, batch["label"])}

    def train_data(self) -> Source:
        return ArraySource({"image": self.train_images, "label": self.train_labels.astype(np.int32)})

    def eval_data(self) -> dict[str, Source]:
        return {"val": ArraySource({"image": self.val_images, "label": self.val_labels.astype(np.int32)})}


PROBES = ("attentive", "linear")


@dataclasses.dataclass(frozen=True, eq=False)
class ProbeTask:
    """A bank of probes trained side by side on frozen features: the trunk never enters the loop
    (its features are computed once, outside), so its params cannot change.

    The probes have disjoint params and the loss is the sum of theirs, so each probe's gradient is
    that of its own loss; with AdamW (elementwise) and no global-norm clipping, training them in
    one run is exactly training each alone on the same batches (one compilation instead of several).

    Attributes:
      probes: `(name, kind, last_k)` per probe; kind 'attentive' (`AttentiveProbe`) or 'linear'
        (`LinearProbe`) on the features averaged over the last `last_k` blocks.
      train_features, test_features: `{last_k: float [n, N, d]}` frozen trunk features.
      train_labels, test_labels: int [n].
      num_classes, heads: classifier outputs; attention heads of the attentive probes.
    `evaluate` reports `<name>/accuracy` and `<name>/loss` per probe.
    """

    probes: tuple[tuple[str, str, int], ...]
    train_features: dict[int, np.ndarray]
    train_labels: np.ndarray
    test_features: dict[int, np.ndarray]
    test_labels: np.ndarray
    num_classes: int = 10
    heads: int = 4

    def __post_init__(self):
        if not self.probes or len({name for name, _, _ in self.probes}) != len(self.probes):
            raise ValueError(f"ProbeTask: probes need distinct names, got {self.probes}")
        for name, kind, k in self.probes:
            if kind not in PROBES:
                raise ValueError(f"ProbeTask: probe {name!r} has kind {kind!r}; accepted: {PROBES}")
            for feats, split in ((self.train_features, "train"), (self.test_features, "test")):
                if k not in feats:
                    raise ValueError(f"ProbeTask: probe {name!r} needs {split} features of the last {k} blocks; "
                                     f"given: {sorted(feats)}")
        for feats, labels, split in ((self.train_features, self.train_labels, "train"),
                                     (self.test_features, self.test_labels, "test")):
            for k, x in feats.items():
                if x.ndim != 3 or len(x) != len(labels):
                    raise ValueError(f"ProbeTask: {split} features (last {k}) must be [n, tokens, dim] with one "
                                     f"label each; got {x.shape} and {len(labels)} labels")

    def _module(self, kind: str) -> nn.Module:
        return AttentiveProbe(self.num_classes, self.heads) if kind == "attentive" else LinearProbe(self.num_classes)

    def _variables(self, rng, batch):
        # Each probe's init key depends on its name only, so a probe starts the same in any bank.
        return {name: self._module(kind).init(jax.random.fold_in(rng, zlib.crc32(name.encode())),
                                              batch[f"features_{k}"], train=False)
                for name, kind, k in self.probes}

    def init(self, rng, batch):
        return {name: v["params"] for name, v in self._variables(rng, batch).items()}

    def init_state(self, rng, batch):
        return {name: v["batch_stats"] for name, v in self._variables(rng, batch).items()}

    def loss(self, params, batch, rng, model_state):
        total, metrics, new_state = 0.0, {}, {}
        for name, kind, k in self.probes:
            logits, updates = self._module(kind).apply(
                {"params": params[name], "batch_stats": model_state[name]}, batch[f"features_{k}"], train=True,
                mutable=["batch_stats"])
            loss = optax.softmax_cross_entropy_with_integer_labels(logits, batch["label"]).mean()
            total = total + loss
            metrics[f"{name}/accuracy"] = jnp.mean(jnp.argmax(logits, -1) == batch["label"])
            new_state[name] = updates["batch_stats"]
        return total, (metrics, new_state)

    def evaluate(self, params, batch, model_state):
        out = {}
        for name, kind, k in self.probes:
            logits = self._module(kind).apply({"params": params[name], "batch_stats": model_state[name]},
                                              batch[f"features_{k}"], train=False)
            out[f"{name}/accuracy"] = (jnp.argmax(logits, -1) == batch["label"]).astype(jnp.float32)
            out[f"{name}/loss"] = optax.softmax_cross_entropy_with_integer_labels(logits, batch["label"])
        return out

    def _source(self, feats, labels) -> Source:
        ks = sorted({k for _, _, k in self.probes})
        return ArraySource({**{f"features_{k}": feats[k] for k in ks}, "label": labels.astype(np.int32)})

    def train_data(self) -> Source:
        return self._source(self.train_features, self.train_labels)

    def eval_data(self) -> dict[str, Source]:
        return {"test": self._source(self.test_features, self.test_labels)}
