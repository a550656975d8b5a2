"""AVTrack as a Task of the one loop (`jaxml.core.train.train_and_evaluate`).

Batches are training pairs (`pairs.sample_pairs`):
  template [B, Tt, Tt, 3], search [B, S, S, 3] floats in [0, 1];
  search_box, template_box [B, 4]: the target (x, y, w, h) as fractions of each crop.

Params are {"tracker": AVTrack params} plus {"stat": StatisticsNetwork params} when the MI loss is
on. The loss is `losses.WEIGHTS`-weighted: GIoU + L1 + focal on the centre head (GIoU and L1 against
the ground-truth box clamped to the crop, as `lib/train/actors/avtrack.py:140-141`), the sparsity
(activeness) loss when the model is gated (per sample, as released, or `sparsity='batch'`, ours), the
JSD MI loss when `mi_weight > 0`.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from jaxml.papers.avtrack import losses
from jaxml.papers.avtrack.model import AVTrack, Gating, GATINGS, decode_boxes, forward


@dataclasses.dataclass(frozen=True, eq=False)
class AVTrackTask:
    """Attributes:
      model: the tracker (`gated=False` for the baseline).
      train_source, eval_sources: Sources of pair batches.
      gating: training path of the gates ('hard' as released, 'ste', or 'none').
      target_activation: zeta of the sparsity loss (0.7).
      sparsity: 'per_sample' (the released activeness loss, mean_b |m_b - zeta|) or 'batch' (ours:
        |batch mean - zeta|); see `losses.SPARSITY_LOSSES`.
      mi_weight: weight of the MI loss (released 1e-5; 0 turns it and the statistics network off).
      weights: the other loss weights (`losses.WEIGHTS`).
      stat_hidden: width of the statistics network.
    """

    model: AVTrack
    train_source: object
    eval_sources: dict
    gating: Gating = "hard"
    target_activation: float = losses.TARGET_ACTIVATION
    sparsity: str = "per_sample"
    mi_weight: float = 0.0
    weights: tuple = tuple(losses.WEIGHTS.items())
    stat_hidden: int = 512

    def __post_init__(self):
        if self.gating not in GATINGS:
            raise ValueError(f"gating={self.gating!r}; accepted {GATINGS}")
        if not 0.0 <= self.target_activation <= 1.0:
            raise ValueError(f"target_activation={self.target_activation}; accepted a value in [0, 1]")
        if self.sparsity not in losses.SPARSITY_LOSSES:
            raise ValueError(f"sparsity={self.sparsity!r}; accepted {tuple(losses.SPARSITY_LOSSES)}")
        if self.mi_weight < 0:
            raise ValueError(f"mi_weight={self.mi_weight}; accepted >= 0")

    @property
    def stat(self) -> losses.StatisticsNetwork:
        return losses.StatisticsNetwork(self.stat_hidden)

    def init(self, rng, batch):
        k1, k2 = jax.random.split(rng)
        params = {"tracker": self.model.init(k1, batch["template"][:1], batch["search"][:1], "none")["params"]}
        if self.mi_weight > 0:
            g, d = self.model.template_grid, self.model.hidden
            z = jnp.zeros((1, g, g, d))
            params["stat"] = self.stat.init(k2, z, z)["params"]
        return params

    def _terms(self, params, batch, gating):
        out = forward(self.model, params["tracker"], batch["template"], batch["search"], gating)
        f = self.model.search_grid
        heat = losses.gaussian_heatmap(batch["search_box"], f)
        pred = decode_boxes(out["score"], out["size"], out["offset"]).box
        pred_xyxy = losses.cxcywh_to_xyxy(pred)
        gt_xyxy = jnp.clip(losses.xywh_to_xyxy(batch["search_box"]), 0.0, 1.0)   # the release clamps to the crop
        g, iou = losses.giou(pred_xyxy, gt_xyxy)
        terms = {"giou": jnp.mean(1 - g), "l1": jnp.mean(jnp.abs(pred_xyxy - gt_xyxy)),
                 "focal": losses.focal_loss(out["score"], heat)}
        if self.model.gated:
            terms["spar"] = losses.SPARSITY_LOSSES[self.sparsity](out["probs"], self.target_activation)
        if self.mi_weight > 0:
            x, y = losses.mi_inputs(out["template_feat"], out["search_feat"], batch["template_box"],
                                    batch["search_box"])
            joint = self.stat.apply({"params": params["stat"]}, x, y)
            # negatives: x of the next sample (the release's torch.cat([x[1:], x[0:1]]))
            marginal = self.stat.apply({"params": params["stat"]}, jnp.roll(x, -1, axis=0), y)
            terms["mi"] = losses.jsd_mi_loss(joint, marginal)
        return out, pred, iou, terms

    def loss(self, params, batch, rng):
        del rng
        out, _, iou, terms = self._terms(params, batch, self.gating if self.model.gated else "none")
        w = dict(self.weights) | {"mi": self.mi_weight}
        total = sum(w[k] * v for k, v in terms.items())
        metrics = dict(terms) | {"iou": jnp.mean(iou), "active": jnp.mean(out["active"])}
        return total, metrics

    def evaluate(self, params, batch):
        """Per pair: IoU of the decoded box, centre error in search-crop pixels, fraction of active blocks."""
        out, pred, iou, _ = self._terms(params, batch, "hard" if self.model.gated else "none")
        gt = batch["search_box"]
        s = self.model.search_size
        err = jnp.hypot(pred[:, 0] - (gt[:, 0] + gt[:, 2] / 2), pred[:, 1] - (gt[:, 1] + gt[:, 3] / 2)) * s
        return {"iou": iou, "center_error_px": err, "active": jnp.mean(out["active"], axis=1)}

    def train_data(self):
        return self.train_source

    def eval_data(self):
        return self.eval_sources


def example_batch(model: AVTrack, batch: int = 2) -> dict[str, np.ndarray]:
    """A zero batch of the right shapes (for init and shape checks)."""
    t, s = model.template_size, model.search_size
    box = np.tile(np.array([[0.375, 0.375, 0.25, 0.25]], np.float32), (batch, 1))
    return {"template": np.zeros((batch, t, t, 3), np.float32), "search": np.zeros((batch, s, s, 3), np.float32),
            "search_box": box, "template_box": np.tile(np.array([[0.25, 0.25, 0.5, 0.5]], np.float32), (batch, 1))}
