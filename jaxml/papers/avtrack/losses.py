"""AVTrack's losses (`lib/train/actors/avtrack.py` and OSTrack's actor), as pure functions.

    L = 2 L_GIoU + 5 L_1 + 1 L_focal + 1e-5 L_MI + 48 L_spar         (the released weights, `WEIGHTS`)

Boxes here are (cx, cy, w, h) or (x, y, w, h) fractions of the search crop, as noted per function.
  * `gaussian_heatmap`: CenterNet's target map on the F x F grid (radius from `gaussian_radius`
    with min_overlap 0.7, sigma = (2r + 1) / 6, peak 1 at the centre cell), as OSTrack's
    `generate_heatmap`.
  * `focal_loss`: CenterNet's penalty-reduced focal loss (alpha 2, beta 4), normalised by the
    number of positive cells.
  * `giou_loss`, `l1_loss`: on the box decoded at the argmax of the predicted score map (OSTrack),
    against the ground-truth box clamped to the crop, [0, 1] (`lib/train/actors/avtrack.py:140-141`).
  * `sparsity_loss` (the released "activeness loss", `lib/models/avtrack/avtrack.py:83-86`): the mean
    over the batch of | m_b - zeta |, where m_b is sample b's mean gate probability over the gated
    blocks (zeta 0.7). Each sample is pulled to zeta on its own; `batch_sparsity_loss` (ours, an
    option) is | batch mean - zeta |, which a batch of mixed samples satisfies.
  * `mi_inputs` and `jsd_mi_loss`: the view-invariance loss (`avtrack.py::forward_head`). Boxes are
    read in cells (round(box * grid), negatives to 0, w and h capped at the template grid); the
    h x w overlap of the two boxes' extents is the region: y = the search map's cells
    [sy, sy + h) x [sx, sx + w) pasted at the template box's corner (ty, tx) of an empty template-size
    canvas, x = the template map masked to that same region. T(x, y) = `StatisticsNetwork`;
    negatives pair y with the next sample's x (x rolled by -1 over the batch);
    L_MI = -(E_joint[-softplus(-T(x, y))] - E_marg[softplus(T(x', y))]) (the Jensen-Shannon
    estimator of Deep InfoMax), minimised by both T and the tracker.
"""

from __future__ import annotations

import flax.linen as nn
import jax
import jax.numpy as jnp

WEIGHTS = {"giou": 2.0, "l1": 5.0, "focal": 1.0, "mi": 1e-5, "spar": 48.0}
TARGET_ACTIVATION = 0.7


def gaussian_radius(h: jax.Array, w: jax.Array, min_overlap: float = 0.7) -> jax.Array:
    """CenterNet's radius (in cells) such that a box whose corners move by it keeps IoU >= min_overlap
    with the true box: the smallest root of the three quadratic cases."""
    a1, b1 = 1.0, h + w
    c1 = w * h * (1 - min_overlap) / (1 + min_overlap)
    r1 = (b1 + jnp.sqrt(b1 ** 2 - 4 * a1 * c1)) / 2
    a2, b2 = 4.0, 2 * (h + w)
    c2 = (1 - min_overlap) * w * h
    r2 = (b2 + jnp.sqrt(b2 ** 2 - 4 * a2 * c2)) / 2
    a3, b3 = 4 * min_overlap, -2 * min_overlap * (h + w)
    c3 = (min_overlap - 1) * w * h
    r3 = (b3 + jnp.sqrt(b3 ** 2 - 4 * a3 * c3)) / 2
    return jnp.minimum(jnp.minimum(r1, r2), r3)


def gaussian_heatmap(box_xywh: jax.Array, grid: int) -> jax.Array:
    """Target score map [B, F, F] for boxes [B, 4] (x, y, w, h) in fractions of the search crop.

    The centre cell is round(centre * F) (OSTrack's `centers_int`, clipped into the grid); the Gaussian has sigma =
    (2r + 1) / 6 with r = floor(gaussian_radius(h * F, w * F)) >= 0, so the centre cell is exactly 1."""
    cx = (box_xywh[:, 0] + box_xywh[:, 2] / 2) * grid
    cy = (box_xywh[:, 1] + box_xywh[:, 3] / 2) * grid
    ci = jnp.clip(jnp.round(cx), 0, grid - 1)
    cj = jnp.clip(jnp.round(cy), 0, grid - 1)
    r = jnp.maximum(jnp.floor(gaussian_radius(box_xywh[:, 3] * grid, box_xywh[:, 2] * grid)), 0.0)
    sigma = (2 * r + 1) / 6
    ys, xs = jnp.meshgrid(jnp.arange(grid, dtype=jnp.float32), jnp.arange(grid, dtype=jnp.float32), indexing="ij")
    d2 = (xs[None] - ci[:, None, None]) ** 2 + (ys[None] - cj[:, None, None]) ** 2
    g = jnp.exp(-d2 / (2 * sigma[:, None, None] ** 2))
    # CenterNet draws the Gaussian only within the radius.
    inside = (jnp.abs(xs[None] - ci[:, None, None]) <= r[:, None, None]) & \
             (jnp.abs(ys[None] - cj[:, None, None]) <= r[:, None, None])
    return jnp.where(inside, g, 0.0)


def focal_loss(pred: jax.Array, target: jax.Array, alpha: float = 2.0, beta: float = 4.0) -> jax.Array:
    """CenterNet focal loss of score maps pred, target [B, F, F] (pred in (0, 1)); a scalar."""
    pos = (target == 1.0).astype(pred.dtype)
    neg = 1.0 - pos
    pos_loss = jnp.log(pred) * (1 - pred) ** alpha * pos
    neg_loss = jnp.log(1 - pred) * pred ** alpha * (1 - target) ** beta * neg
    n_pos = pos.sum()
    return -(pos_loss.sum() + neg_loss.sum()) / jnp.maximum(n_pos, 1.0)


def cxcywh_to_xyxy(b: jax.Array) -> jax.Array:
    return jnp.stack([b[..., 0] - b[..., 2] / 2, b[..., 1] - b[..., 3] / 2,
                      b[..., 0] + b[..., 2] / 2, b[..., 1] + b[..., 3] / 2], axis=-1)


def xywh_to_xyxy(b: jax.Array) -> jax.Array:
    return jnp.stack([b[..., 0], b[..., 1], b[..., 0] + b[..., 2], b[..., 1] + b[..., 3]], axis=-1)


def giou(a: jax.Array, b: jax.Array) -> tuple[jax.Array, jax.Array]:
    """(GIoU, IoU) [B] of boxes a, b [B, 4] given as (x1, y1, x2, y2)."""
    area_a = jnp.maximum(a[:, 2] - a[:, 0], 0) * jnp.maximum(a[:, 3] - a[:, 1], 0)
    area_b = jnp.maximum(b[:, 2] - b[:, 0], 0) * jnp.maximum(b[:, 3] - b[:, 1], 0)
    lt = jnp.maximum(a[:, :2], b[:, :2])
    rb = jnp.minimum(a[:, 2:], b[:, 2:])
    wh = jnp.maximum(rb - lt, 0)
    inter = wh[:, 0] * wh[:, 1]
    union = area_a + area_b - inter
    iou = inter / jnp.maximum(union, 1e-9)
    lt_c = jnp.minimum(a[:, :2], b[:, :2])
    rb_c = jnp.maximum(a[:, 2:], b[:, 2:])
    wh_c = jnp.maximum(rb_c - lt_c, 0)
    area_c = wh_c[:, 0] * wh_c[:, 1]
    return iou - (area_c - union) / jnp.maximum(area_c, 1e-9), iou


def sparsity_loss(probs: jax.Array, target: float = TARGET_ACTIVATION) -> jax.Array:
    """The released activeness loss: mean_b | mean_i probs[b, i] - target | for gate probabilities
    probs [B, n_gated] (an L1 loss of each sample's mean activation against target); 0 without gates."""
    if probs.shape[-1] == 0:
        return jnp.zeros((), probs.dtype)
    return jnp.mean(jnp.abs(jnp.mean(probs, axis=-1) - target))


def batch_sparsity_loss(probs: jax.Array, target: float = TARGET_ACTIVATION) -> jax.Array:
    """Ours (an option, not the release): | mean over the batch and the gated blocks - target |."""
    if probs.shape[-1] == 0:
        return jnp.zeros((), probs.dtype)
    return jnp.abs(jnp.mean(probs) - target)


SPARSITY_LOSSES = {"per_sample": sparsity_loss, "batch": batch_sparsity_loss}


def box_cells(box_xywh: jax.Array, grid: int, cap: int) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array]:
    """A box [B, 4] (x, y, w, h fractions of its crop) in cells of a grid x grid map, as the release reads
    it: every coordinate round(v * grid) (half to even, like torch.round), negatives raised to 0, w and h
    capped at `cap`. Returns int32 (x, y, w, h) [B] each."""
    c = jnp.maximum(jnp.round(box_xywh * grid), 0).astype(jnp.int32)
    return c[:, 0], c[:, 1], jnp.minimum(c[:, 2], cap), jnp.minimum(c[:, 3], cap)


def _slice_len(start: jax.Array, length: jax.Array, size: int) -> jax.Array:
    """Length of the slice [start:start + length] of an axis of `size` (Python slicing clips at the end)."""
    return jnp.maximum(jnp.minimum(start + length, size) - jnp.minimum(start, size), 0)


def mi_inputs(template_feat: jax.Array, search_feat: jax.Array, template_box: jax.Array,
              search_box: jax.Array) -> tuple[jax.Array, jax.Array]:
    """The MI loss's (x, y), both [B, Gt, Gt, D] (the release's `forward_head`, training branch).

    With the boxes in cells (`box_cells`, w and h capped at Gt), h = min(the template box's extent in the
    Gt x Gt map, the search box's extent in the F x F map), likewise w:
      y: zeros, with cells [ty, ty + h) x [tx, tx + w) = search cells [sy, sy + h) x [sx, sx + w);
      x: the template map [B, Gt, Gt, D] with every cell outside [ty, ty + h) x [tx, tx + w) zeroed.
    A search box wholly outside its crop gives h or w = 0, so x and y are all zero.
    """
    gt = template_feat.shape[1]
    f = search_feat.shape[1]
    b = template_feat.shape[0]
    tx, ty, tw, th = box_cells(template_box, gt, gt)
    sx, sy, sw, sh = box_cells(search_box, f, gt)
    h = jnp.minimum(_slice_len(ty, th, gt), _slice_len(sy, sh, f))
    w = jnp.minimum(_slice_len(tx, tw, gt), _slice_len(sx, sw, f))
    cells = jnp.arange(gt)[None, :]
    in_r = (cells >= ty[:, None]) & (cells < (ty + h)[:, None])            # [B, Gt]
    in_c = (cells >= tx[:, None]) & (cells < (tx + w)[:, None])
    mask = in_r[:, :, None] & in_c[:, None, :]                             # [B, Gt, Gt]
    # canvas cell (u, v) inside the region reads search cell (sy + u - ty, sx + v - tx)
    su = jnp.clip(sy[:, None] + cells - ty[:, None], 0, f - 1)
    sv = jnp.clip(sx[:, None] + cells - tx[:, None], 0, f - 1)
    gathered = search_feat[jnp.arange(b)[:, None, None], su[:, :, None], sv[:, None, :]]   # [B, Gt, Gt, D]
    return template_feat * mask[..., None], gathered * mask[..., None]


class StatisticsNetwork(nn.Module):
    """T(x, y): MLP on [flatten(x); flatten(y)] -> hidden -> hidden -> 1 (`GlobalStatisticsNetwork`,
    512 wide in the release). x, y [B, Gt, Gt, D] -> [B]."""

    hidden: int = 512

    @nn.compact
    def __call__(self, x: jax.Array, y: jax.Array) -> jax.Array:
        h = jnp.concatenate([x.reshape(x.shape[0], -1), y.reshape(y.shape[0], -1)], axis=1)
        h = nn.relu(nn.Dense(self.hidden)(h))
        h = nn.relu(nn.Dense(self.hidden)(h))
        return nn.Dense(1)(h)[:, 0]


def jsd_mi_loss(t_joint: jax.Array, t_marginal: jax.Array) -> jax.Array:
    """-(E[-softplus(-T(x, y))] - E[softplus(T(x', y))]): minus the JSD lower bound on MI (scalar)."""
    return -(jnp.mean(-jax.nn.softplus(-t_joint)) - jnp.mean(jax.nn.softplus(t_marginal)))
