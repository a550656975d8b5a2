"""The AVTrack tracker: a one-stream ViT with Activation-Module gates and an OSTrack centre head.

    model = AVTrack(hidden=96, layers=8, heads=3, mlp_hidden=384)
    params = model.init(key, template, search)["params"]      # template [B, 32, 32, 3], search [B, 64, 64, 3]
    out = forward(model, params, template, search, gating="hard")   # training path, per-sample skipping
    out = infer(model, params, template, search)                     # inference path, real skipping

One stream (OSTrack): template and search crops (floats in [0, 1], normalised with the ImageNet mean
and std as the release's `Normalize(cfg.DATA.MEAN, cfg.DATA.STD)`) are cut into `patch_size` patches,
embedded by one shared linear layer, given their own learned position embeddings and concatenated into one token
sequence [B, Nt + Ns, D] that passes through the ViT blocks together (`jaxml.models.vit.EncoderBlock`,
with the exact erf GELU of timm's blocks).
After a final LayerNorm the search tokens, as a [B, F, F, D] map, feed the centre head.

Activation Module (AVTrack's `vision_transformer.py::forward_features`, as released):
  * block i >= `always_on` (2) has a gate p_i = sigmoid(w_i . x[:, :, 0] + b_i): a linear map of
    channel 0 of every token of the block's input (Linear(N -> 1), N = Nt + Ns tokens);
  * training ('hard'): the block runs for the batch items with p_i > 0.5 and is the identity for
    the others (per-sample skipping; computed here as a select, which gives the same values);
  * inference (`infer`): the block runs if ANY batch item has p_i > 0.5, and is skipped otherwise;
    at batch size 1 this is exact per-frame skipping, compiled into `lax.cond`, so a skipped block
    costs no FLOPs and one program serves every gate pattern;
  * p_i is NOT multiplied into the residual stream: the gates get gradient only from the sparsity
    loss (`losses.sparsity_loss`), which also reaches the earlier blocks through x.
Option 'ste' (ours, not in the release): a straight-through gate, forward as 'hard', but the block's
update is scaled by hard + p - stop_gradient(p), so the tracking loss also trains the gates.
'none' runs every block (the ungated baseline; a model built with `gated=False` has no gates).

Centre head (OSTrack CENTER head, smaller): three conv branches on the search map give
  score  [B, F, F]     probability that the cell holds the target centre (sigmoid, clipped 1e-4),
  size   [B, F, F, 2]  (w, h) as fractions of the search crop (sigmoid),
  offset [B, F, F, 2]  sub-cell offset (x, y) of the centre, in cells.
OSTrack's branches have 5 convs with BatchNorm; ours have 2 convs with ReLU and no norm (no batch
statistics to carry), then a 1x1 conv.
"""

from __future__ import annotations

import dataclasses
from typing import Literal

import flax.linen as nn
import jax
import jax.numpy as jnp

from jaxml.models.vit import EncoderBlock, image_to_patches
from jaxml.nn.layers import LayerNorm, Linear

Gating = Literal["hard", "ste", "none"]
GATINGS = ("hard", "ste", "none")
THRESHOLD = 0.5
IMAGENET_MEAN = (0.485, 0.456, 0.406)     # cfg.DATA.MEAN / STD of the release (lib/config/avtrack/config.py)
IMAGENET_STD = (0.229, 0.224, 0.225)
PIXEL_NORMS = ("imagenet", "symmetric")


class CenterHead(nn.Module):
    """Search feature map [B, F, F, D] -> dict(score [B,F,F], size [B,F,F,2], offset [B,F,F,2])."""

    channels: int = 64

    @nn.compact
    def __call__(self, fmap: jax.Array) -> dict[str, jax.Array]:
        def branch(name, out):
            h = fmap
            for j, c in enumerate((self.channels, self.channels // 2)):
                h = nn.relu(nn.Conv(c, (3, 3), name=f"{name}_conv{j}")(h))
            return nn.Conv(out, (1, 1), name=f"{name}_out")(h)

        score = jnp.clip(jax.nn.sigmoid(branch("score", 1)[..., 0]), 1e-4, 1 - 1e-4)
        size = jax.nn.sigmoid(branch("size", 2))
        offset = branch("offset", 2)
        return {"score": score, "size": size, "offset": offset}


class AVTrack(nn.Module):
    """One-stream ViT tracker with Activation-Module gates (see the module docstring).

    Attributes:
      template_size, search_size: crop sides in pixels (multiples of patch_size).
      patch_size: patch side; the search map is F x F with F = search_size // patch_size.
      hidden, layers, heads, mlp_hidden: the ViT (DeiT-Tiny in the paper: 192, 12, 3, 768).
      head_channels: width of the centre head's convs.
      gated: build the Activation Module (False: the ungated baseline, no gate params).
      always_on: the first blocks that always run (2 in the paper).
      gate_input_grad: True as released (the sparsity loss reaches the earlier blocks through the
        gates' input x); False stops that gradient, so only the gates' own weights learn from it (ours).
      exact_gelu: the erf GELU of the release's timm blocks (True); False: flax's tanh approximation.
      pixel_norm: 'imagenet' ((x - mean) / std, as released) or 'symmetric' (2x - 1, ours before).
    """

    template_size: int = 32
    search_size: int = 64
    patch_size: int = 8
    hidden: int = 96
    layers: int = 8
    heads: int = 3
    mlp_hidden: int = 384
    head_channels: int = 64
    gated: bool = True
    always_on: int = 2
    gate_input_grad: bool = True
    exact_gelu: bool = True
    pixel_norm: str = "imagenet"

    @property
    def template_grid(self) -> int:
        return self.template_size // self.patch_size

    @property
    def search_grid(self) -> int:
        return self.search_size // self.patch_size

    @property
    def num_tokens(self) -> int:
        return self.template_grid ** 2 + self.search_grid ** 2

    @property
    def gated_blocks(self) -> tuple[int, ...]:
        return tuple(range(self.always_on, self.layers)) if self.gated else ()

    def setup(self):
        for s, what in ((self.template_size, "template_size"), (self.search_size, "search_size")):
            if s % self.patch_size or s < self.patch_size:
                raise ValueError(f"AVTrack: {what}={s} must be a positive multiple of patch_size={self.patch_size}")
        if self.hidden % self.heads:
            raise ValueError(f"AVTrack: hidden={self.hidden} must be a multiple of heads={self.heads}")
        if self.pixel_norm not in PIXEL_NORMS:
            raise ValueError(f"AVTrack: pixel_norm={self.pixel_norm!r}; accepted {PIXEL_NORMS}")
        if not 0 <= self.always_on <= self.layers:
            raise ValueError(f"AVTrack: always_on={self.always_on} must be in [0, layers={self.layers}]")
        d = self.hidden
        self.patch_embed = Linear(d)
        self.pos_template = self.param("pos_template", nn.initializers.normal(0.02), (1, self.template_grid ** 2, d))
        self.pos_search = self.param("pos_search", nn.initializers.normal(0.02), (1, self.search_grid ** 2, d))
        self.blocks = [EncoderBlock(self.heads, self.mlp_hidden, exact_gelu=self.exact_gelu) for _ in range(self.layers)]
        self.gates = [nn.Dense(1) for _ in self.gated_blocks]     # gates[j] serves block always_on + j
        self.norm = LayerNorm(1e-6)
        self.head = CenterHead(self.head_channels)

    def _check(self, template, search):
        want = {"template": self.template_size, "search": self.search_size}
        for name, x in (("template", template), ("search", search)):
            s = want[name]
            if x.ndim != 4 or x.shape[1:] != (s, s, 3):
                raise ValueError(f"AVTrack: {name} must be [batch, {s}, {s}, 3], got shape {x.shape}")
        if template.shape[0] != search.shape[0]:
            raise ValueError(f"AVTrack: template batch {template.shape[0]} != search batch {search.shape[0]}")

    def embed(self, template: jax.Array, search: jax.Array) -> jax.Array:
        """[B, Tt, Tt, 3], [B, S, S, 3] floats in [0, 1] -> tokens [B, Nt + Ns, D] (template first)."""
        self._check(template, search)
        t = self.patch_embed(image_to_patches(self.normalize(template), self.patch_size)) + self.pos_template
        s = self.patch_embed(image_to_patches(self.normalize(search), self.patch_size)) + self.pos_search
        return jnp.concatenate([t, s], axis=1)

    def normalize(self, x: jax.Array) -> jax.Array:
        """Pixels [..., 3] in [0, 1] -> the network's input (`pixel_norm`)."""
        if self.pixel_norm == "imagenet":
            return (x - jnp.asarray(IMAGENET_MEAN, x.dtype)) / jnp.asarray(IMAGENET_STD, x.dtype)
        return x * 2 - 1

    def gate(self, i: int, x: jax.Array) -> jax.Array:
        """p_i [B] for gated block i, from channel 0 of every token of its input x [B, N, D]."""
        z = x[:, :, 0] if self.gate_input_grad else jax.lax.stop_gradient(x[:, :, 0])
        return jax.nn.sigmoid(self.gates[i - self.always_on](z)[:, 0])

    def block(self, i: int, x: jax.Array) -> jax.Array:
        return self.blocks[i](x)

    def finish(self, x: jax.Array) -> dict[str, jax.Array]:
        """Final norm and the head: tokens [B, N, D] -> head maps plus `template_feat` [B, Gt, Gt, D]
        and `search_feat` [B, F, F, D] (the inputs of the MI loss)."""
        x = self.norm(x)
        nt, gt, f = self.template_grid ** 2, self.template_grid, self.search_grid
        b, _, d = x.shape
        tf = x[:, :nt].reshape(b, gt, gt, d)
        sf = x[:, nt:].reshape(b, f, f, d)
        return self.head(sf) | {"template_feat": tf, "search_feat": sf}

    def __call__(self, template: jax.Array, search: jax.Array, gating: Gating = "hard") -> dict[str, jax.Array]:
        return _train_path(self, template, search, gating)


def _train_path(m: AVTrack, template, search, gating: Gating):
    """Inside a bound module: the training forward (see `forward`)."""
    if gating not in GATINGS:
        raise ValueError(f"gating={gating!r}; accepted {GATINGS}")
    x = m.embed(template, search)
    b = x.shape[0]
    probs, active = [], []
    for i in range(m.layers):
        y = m.block(i, x)
        if i in m.gated_blocks:
            p = m.gate(i, x)
            probs.append(p)
            hard = (p > THRESHOLD).astype(x.dtype)
            if gating == "hard":
                x = jnp.where(hard[:, None, None] > 0, y, x)
            elif gating == "ste":
                g = hard + p - jax.lax.stop_gradient(p)
                x = x + g[:, None, None] * (y - x)
            else:
                x, hard = y, jnp.ones((b,), x.dtype)
            active.append(hard)
        else:
            x = y
            active.append(jnp.ones((b,), x.dtype))
    out = m.finish(x)
    out["probs"] = jnp.stack(probs, 1) if probs else jnp.zeros((b, 0), x.dtype)   # [B, n_gated]
    out["active"] = jnp.stack(active, 1)                                          # [B, layers]
    return out


def forward(model: AVTrack, params, template, search, gating: Gating = "hard") -> dict[str, jax.Array]:
    """The training path: every block is computed and per-sample skipping is a select.

    Returns the head maps, `template_feat`, `search_feat`, `probs` [B, n_gated] (the gate
    probabilities) and `active` [B, layers] (1.0 where the block changed that item's tokens).
    """
    return model.apply({"params": params}, template, search, gating)


def infer(model: AVTrack, params, template, search, force: jax.Array | None = None,
          counter=None) -> dict[str, jax.Array]:
    """The inference path: block i runs under `lax.cond` iff any batch item has p_i > 0.5.

    Args:
      model, params: the tracker.
      template, search: [B, Tt, Tt, 3], [B, S, S, 3] floats in [0, 1]; B = 1 for per-frame skipping.
      force: optional int [layers]: 1 runs block i, 0 skips it, -1 leaves it to its gate (an array,
        so one compiled program serves every pattern). Always-on blocks ignore it unless 0.
      counter: optional callable(i) called (through `jax.debug.callback`) each time block i really
        executes: a test hook that shows a skipped block is not computed.
    Returns:
      the head maps, `probs` [B, n_gated] and `active` [layers] (1.0 where block i ran).
    """
    bound = model.bind({"params": params})
    x = bound.embed(template, search)
    probs, active = [], []
    for i in range(model.layers):
        if i in model.gated_blocks:
            p = bound.gate(i, x)
            probs.append(p)
            run = jnp.any(p > THRESHOLD)
        else:
            run = jnp.asarray(True)
        if force is not None:
            f = jnp.asarray(force)[i]
            run = jnp.where(f < 0, run, f > 0)

        def on(x, i=i):
            if counter is not None:
                jax.debug.callback(counter, i)
            return bound.block(i, x)

        x = jax.lax.cond(run, on, lambda x: x, x)
        active.append(run.astype(jnp.float32))
    out = bound.finish(x)
    out.pop("template_feat")
    out.pop("search_feat")
    b = x.shape[0]
    out["probs"] = jnp.stack(probs, 1) if probs else jnp.zeros((b, 0), x.dtype)
    out["active"] = jnp.stack(active)
    return out


@dataclasses.dataclass(frozen=True)
class Boxes:
    """Decoded boxes: `box` [B, 4] (cx, cy, w, h) as fractions of the search crop, `index` [B] the cell."""

    box: jax.Array
    index: jax.Array


def decode_boxes(score: jax.Array, size: jax.Array, offset: jax.Array, window: jax.Array | None = None) -> Boxes:
    """OSTrack's `cal_bbox`: the argmax cell of `score` (times `window` [F, F] if given), the size and
    offset read there. score [B, F, F], size/offset [B, F, F, 2] -> Boxes (cx, cy, w, h) in [0, 1] units."""
    b, f, _ = score.shape
    s = score if window is None else score * window
    idx = jnp.argmax(s.reshape(b, f * f), axis=1)
    row, col = idx // f, idx % f
    sz = size.reshape(b, f * f, 2)[jnp.arange(b), idx]
    off = offset.reshape(b, f * f, 2)[jnp.arange(b), idx]
    cx = (col + off[:, 0]) / f
    cy = (row + off[:, 1]) / f
    return Boxes(jnp.stack([cx, cy, sz[:, 0], sz[:, 1]], axis=1), idx)
