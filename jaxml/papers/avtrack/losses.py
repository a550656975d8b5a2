"""AVTrack's losses (`lib/train/actors/avtrack.py` and OSTrack's actor), as pure functions.

    L = 2 L_GIoU + 5 L_1 + 1 L_focal + 1e-5 L_MI + 48 L_spar         (the released weights, `WEIGHTS`)

Boxes here are (cx, cy, w, h) or (x, y, w, h) fractions of the search crop, as noted per function.
  * `gaussian_heatmap`: CenterNet's target map on the F x F grid (radius from `gaussian_radius`
    with min_overlap 0.7, sigma = (2r + 1) / 6, peak 1 at the centre cell), as OSTrack's
    `generate_heatmap`.
  * `focal_loss`: CenterNet's penalty-reduced focal loss (alpha 2, beta 4), normalised by the
    number of positive cells.
  * `giou_loss`, `l1_loss`: on the box decoded at the argmax of the predicted score map (OSTrack).
  * `sparsity_loss`: | mean gate probability over the gated blocks and the batch - zeta | (zeta 0.7).
  * `mi_inputs` and `jsd_mi_loss`: the view-invariance loss. x = the template map masked to the
    template box; y = the search map's target cells pasted into an empty template-size canvas at
    the template box's cells; T(x, y) = `StatisticsNetwork`; negatives pair x rolled by one across
    the batch with y; L_MI = -(E_joint[-softplus(-T(x, y))] - E_marg[softplus(T(x', y))]) (the
    Jensen-Shannon estimator of Deep InfoMax), minimised by both T and the tracker.
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
    """|mean(probs) - target| for gate probabilities probs [B, n_gated]; 0 when there are no gates."""
    if probs.shape[-1] == 0:
        return jnp.zeros((), probs.dtype)
    return jnp.abs(jnp.mean(probs) - target)


def box_cells(box_xywh: jax.Array, grid: int) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array]:
    """Cell range [r0, r1) x [c0, c1) covered by boxes [B, 4] (fractions) on a grid x grid map (>= 1 cell)."""
    c0 = jnp.clip(jnp.floor(box_xywh[:, 0] * grid), 0, grid - 1)
    r0 = jnp.clip(jnp.floor(box_xywh[:, 1] * grid), 0, grid - 1)
    c1 = jnp.clip(jnp.ceil((box_xywh[:, 0] + box_xywh[:, 2]) * grid), c0 + 1, grid)
    r1 = jnp.clip(jnp.ceil((box_xywh[:, 1] + box_xywh[:, 3]) * grid), r0 + 1, grid)
    return r0.astype(jnp.int32), r1.astype(jnp.int32), c0.astype(jnp.int32), c1.astype(jnp.int32)


def mi_inputs(template_feat: jax.Array, search_feat: jax.Array, template_box: jax.Array,
              search_box: jax.Array) -> tuple[jax.Array, jax.Array]:
    """The MI loss's (x, y), both [B, Gt, Gt, D].

    x: the template map [B, Gt, Gt, D] with the cells outside the template box zeroed.
    y: the search map [B, F, F, D]'s cells inside the search box, pasted into a zero [Gt, Gt] canvas
       so that the search box's top-left cell lands on the template box's top-left cell; cells past
       either box's extent stay zero. Boxes (x, y, w, h) are fractions of their crops.
    """
    b, gt = template_feat.shape[0], template_feat.shape[1]
    f = search_feat.shape[1]
    tr0, tr1, tc0, tc1 = box_cells(template_box, gt)
    sr0, sr1, sc0, sc1 = box_cells(search_box, f)
    rows = jnp.arange(gt)[None, :]
    tmask_r = (rows >= tr0[:, None]) & (rows < tr1[:, None])
    tmask_c = (rows >= tc0[:, None]) & (rows < tc1[:, None])
    tmask = tmask_r[:, :, None] & tmask_c[:, None, :]                     # [B, Gt, Gt]
    x = template_feat * tmask[..., None]
    # Canvas cell (u, v) reads search cell (sr0 + u - tr0, sc0 + v - tc0) when that is inside the search box.
    su = sr0[:, None] + rows - tr0[:, None]                               # [B, Gt]
    sv = sc0[:, None] + rows - tc0[:, None]
    ok_u = (su >= sr0[:, None]) & (su < sr1[:, None])
    ok_v = (sv >= sc0[:, None]) & (sv < sc1[:, None])
    su_c, sv_c = jnp.clip(su, 0, f - 1), jnp.clip(sv, 0, f - 1)
    gathered = search_feat[jnp.arange(b)[:, None, None], su_c[:, :, None], sv_c[:, None, :]]   # [B, Gt, Gt, D]
    ymask = ok_u[:, :, None] & ok_v[:, None, :] & tmask
    return x, gathered * ymask[..., None]


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
