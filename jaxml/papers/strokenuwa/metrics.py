"""StrokeNUWA's metrics, as pure functions.

Reconstruction (rows against rows): `point_l2` (mean Euclidean distance of a row's drawn points, grid
units) and command accuracy (in `vq.VQStrokeTask.evaluate`); raster IoU is `raster.iou`.

Compression: `compression_ratio` = stroke tokens / SVG code tokens over a corpus (the paper's 6.9%).

Generation (the paper's FID, CLIPScore and HPS need Inception, CLIP and a human-preference model, none
offline; these are their stand-ins, all on rasters):
  * `validity_rate`: the share of generations that give a valid SVG;
  * `nearest_raster_distance`: for each generated raster, 1 - soft IoU to its nearest held-out
    reference (lower: closer to real icons);
  * `caption_score`: the probability a raster classifier trained here on training icons gives the
    caption's class (a CLIPScore stand-in), and `frechet_distance` between the classifier's
    features of generated and reference rasters (an FID stand-in).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import scipy.linalg

from jaxml.papers.strokenuwa.raster import soft_iou


def point_l2(pred, ref):
    """Mean Euclidean distance (grid units) of a row's drawn points: int rows [..., 9] -> [...]. The
    points compared are those the reference row's command uses: M and L rows their start and end,
    C rows all four."""
    p = jnp.asarray(pred, jnp.float32)[..., 1:].reshape(*jnp.shape(pred)[:-1], 4, 2)
    r = jnp.asarray(ref, jnp.float32)[..., 1:].reshape(*jnp.shape(ref)[:-1], 4, 2)
    d = jnp.linalg.norm(p - r, axis=-1)                                     # [..., 4]
    cubic = (jnp.asarray(ref)[..., 0] == 2)[..., None]
    used = jnp.where(cubic, 1.0, jnp.array([1.0, 0.0, 0.0, 1.0]))
    return jnp.sum(d * used, -1) / jnp.sum(used, -1)


def compression_ratio(stroke_tokens, code_tokens) -> float:
    """sum(stroke tokens) / sum(SVG code tokens) over a corpus (per-item counts, equal lengths)."""
    s, c = np.asarray(stroke_tokens, np.float64), np.asarray(code_tokens, np.float64)
    if s.shape != c.shape or s.ndim != 1 or not len(s):
        raise ValueError(f"compression_ratio: two equal-length non-empty count vectors expected, got {s.shape}, {c.shape}")
    if c.sum() <= 0:
        raise ValueError("compression_ratio: the SVG code has no tokens")
    return float(s.sum() / c.sum())


def validity_rate(valid) -> float:
    v = np.asarray(valid, bool)
    if not v.size:
        raise ValueError("validity_rate: no generations")
    return float(v.mean())


_pairwise_soft_iou = jax.jit(lambda a, b: soft_iou(a[:, None], b[None]))


def soft_iou_matrix(a, b, chunk: int = 64) -> np.ndarray:
    """Pairwise `raster.soft_iou` (sum(min) / sum(max); two empty rasters: 1) between rasters a [N, H, W]
    and b [M, H, W] -> [N, M], `chunk` rows of a at a time."""
    a, b = jnp.asarray(a, jnp.float32), jnp.asarray(b, jnp.float32)
    return np.concatenate([np.asarray(_pairwise_soft_iou(a[i:i + chunk], b)) for i in range(0, len(a), chunk)])


def nearest_raster_distance(generated, references) -> np.ndarray:
    """[N] 1 - soft IoU of each generated raster [N, H, W] to its nearest reference [M, H, W]."""
    return 1.0 - soft_iou_matrix(generated, references).max(axis=1)


def caption_score(probs, labels) -> float:
    """Mean probability of the caption's class: probs [N, C] (rows sum to 1), labels [N] ints."""
    p, y = np.asarray(probs, np.float64), np.asarray(labels)
    if p.ndim != 2 or y.shape != (len(p),):
        raise ValueError(f"caption_score: probs [N, C] and labels [N] expected, got {p.shape}, {y.shape}")
    return float(p[np.arange(len(p)), y].mean())


def frechet_distance(a, b) -> float:
    """||mu_a - mu_b||^2 + tr(S_a + S_b - 2 (S_a S_b)^(1/2)) between Gaussian fits of features a [N, D]
    and b [M, D] (FID's formula, on our classifier's features)."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[1] or min(len(a), len(b)) < 2:
        raise ValueError(f"frechet_distance: features [N >= 2, D] with the same D expected, got {a.shape}, {b.shape}")
    mu_a, mu_b = a.mean(0), b.mean(0)
    s_a, s_b = np.cov(a, rowvar=False), np.cov(b, rowvar=False)
    root = scipy.linalg.sqrtm(s_a @ s_b)
    root = root.real if np.iscomplexobj(root) else root
    return float(np.sum((mu_a - mu_b) ** 2) + np.trace(s_a + s_b - 2 * root))
