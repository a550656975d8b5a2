"""One-pass evaluation (OPE) metrics of the UAV tracking benchmarks: precision and success (AUC).

Boxes are `[x, y, w, h]` in frame pixels, arrays `[T, 4]` over the T frames of a sequence. The
conventions follow pytracking's `analysis/extract_results.py` and `plot_results.py`, which OSTrack
and AVTrack use to report UAV123, UAV123@10fps, UAVDT, DTB70 and VisDrone numbers:

  * Overlap is the IoU of the two boxes as continuous rectangles. (pytracking writes it with the
    inclusive `x + w - 1` pixel convention; the `- 1` cancels, so the values are identical.)
  * Location error is the Euclidean distance in pixels between the box centres.
  * Precision curve: fraction of frames with error `<= t` for `t = 0, 1, ..., 50` px; the
    precision score is its value at 20 px.
  * Success curve: fraction of frames with IoU `> t` (strictly greater, as pytracking and the OTB
    toolkit) for the 21 thresholds `t = 0, 0.05, ..., 1`; the success score (AUC) is the mean of
    the curve.
  * Normalized precision (LaSOT style): centre error measured in units of the ground-truth width
    and height, thresholds `0, 0.01, ..., 0.5`; the score is its value at 0.2.
  * Frames whose ground truth is missing (NaN, as in UAV123@10fps) or empty (`w <= 0` or `h <= 0`,
    target absent) are excluded from every metric: a sequence's curves are fractions of its valid
    frames only (pytracking's `exclude_invalid_frames=True`). pytracking's default instead divides
    by all frames, which on UAV counts absent frames as misses for success and as hits for
    precision; we do not reproduce that quirk.
  * Over a data set, each sequence gets its own curve and the curves are averaged over sequences
    (every sequence weighs the same, whatever its length); the scores are read off the averaged
    curve. `summarize` does this.

Units: curves are fractions in [0, 1]; the scalar scores (`precision_at`, `success_auc`,
`normalized_precision_at`, `summarize`) are percentages in [0, 100], as papers report them.

`iou`, `center_error`, `normalized_center_error` and `valid_frames` also accept jax arrays (they
then return jax arrays and can be jit-ed); the rest works on numpy.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

PRECISION_THRESHOLDS = np.arange(0, 51, dtype=np.float64)  # pixels
NORM_PRECISION_THRESHOLDS = np.arange(0, 51, dtype=np.float64) / 100.0  # units of the gt size
SUCCESS_THRESHOLDS = np.linspace(0.0, 1.0, 21)  # IoU
PRECISION_THRESHOLD = 20.0
NORM_PRECISION_THRESHOLD = 0.2


def _xp(*arrays):
    """jax.numpy if any argument is a jax array, else numpy."""
    for a in arrays:
        if type(a).__module__.startswith(("jax", "jaxlib")):
            import jax.numpy as jnp
            return jnp
    return np


def _check_boxes(boxes, where: str):
    xp = _xp(boxes)
    b = xp.asarray(boxes)
    if b.ndim != 2 or b.shape[-1] != 4:
        raise ValueError(f"{where}: expected boxes [T, 4] = [x, y, w, h] per frame, got shape {b.shape}")
    return b


def _check_pair(pred, gt):
    p = _check_boxes(pred, "pred")
    g = _check_boxes(gt, "gt")
    if p.shape != g.shape:
        raise ValueError(f"pred and gt must have the same shape [T, 4], got {p.shape} and {g.shape}")
    return p, g


def valid_frames(gt):
    """Frames whose ground truth is labelled and non-empty.

    Args:
      gt: [T, 4] ground-truth boxes.
    Returns:
      bool [T]: True where all four values are finite and `w > 0` and `h > 0`.
    """
    xp = _xp(gt)
    g = _check_boxes(gt, "gt")
    finite = xp.all(xp.isfinite(g), axis=-1)
    # NaN compares False, so NaN boxes are invalid through both terms.
    return finite & (g[:, 2] > 0) & (g[:, 3] > 0)


def iou(pred, gt):
    """Intersection over union of corresponding boxes.

    Args:
      pred, gt: [T, 4] boxes [x, y, w, h].
    Returns:
      float [T] in [0, 1]. 0 where the union is empty; NaN where an input has NaN.
    """
    xp = _xp(pred, gt)
    p, g = _check_pair(pred, gt)
    p, g = p.astype(xp.float64 if xp is np else p.dtype), g.astype(xp.float64 if xp is np else g.dtype)
    pw, ph = xp.maximum(p[:, 2], 0), xp.maximum(p[:, 3], 0)
    gw, gh = xp.maximum(g[:, 2], 0), xp.maximum(g[:, 3], 0)
    iw = xp.maximum(xp.minimum(p[:, 0] + pw, g[:, 0] + gw) - xp.maximum(p[:, 0], g[:, 0]), 0)
    ih = xp.maximum(xp.minimum(p[:, 1] + ph, g[:, 1] + gh) - xp.maximum(p[:, 1], g[:, 1]), 0)
    inter = iw * ih
    union = pw * ph + gw * gh - inter
    safe = xp.where(union > 0, union, 1)
    return xp.where(union > 0, inter / safe, xp.where(xp.isnan(union), xp.nan, 0.0))


def _centres(b, xp):
    return xp.stack([b[:, 0] + b[:, 2] / 2, b[:, 1] + b[:, 3] / 2], axis=-1)


def center_error(pred, gt):
    """Euclidean distance between box centres, in pixels.

    Args:
      pred, gt: [T, 4] boxes [x, y, w, h].
    Returns:
      float [T] pixels.
    """
    xp = _xp(pred, gt)
    p, g = _check_pair(pred, gt)
    d = _centres(p, xp) - _centres(g, xp)
    return xp.sqrt(xp.sum(d * d, axis=-1))


def normalized_center_error(pred, gt):
    """Centre error with x measured in ground-truth widths and y in ground-truth heights.

    Args:
      pred, gt: [T, 4] boxes [x, y, w, h].
    Returns:
      float [T], dimensionless; inf (numpy) where the gt box is empty (such frames are invalid).
    """
    xp = _xp(pred, gt)
    p, g = _check_pair(pred, gt)
    size = g[:, 2:]
    safe = xp.where(size > 0, size, 1)
    d = (_centres(p, xp) - _centres(g, xp)) / safe
    err = xp.sqrt(xp.sum(d * d, axis=-1))
    return xp.where(xp.all(size > 0, axis=-1), err, xp.inf)


def _fractions(values, thresholds, valid, above: bool, where: str) -> np.ndarray:
    v = np.asarray(values, dtype=np.float64)
    if v.ndim != 1:
        raise ValueError(f"{where}: expected per-frame values [T], got shape {v.shape}")
    t = np.asarray(thresholds, dtype=np.float64)
    if t.ndim != 1 or t.size == 0:
        raise ValueError(f"{where}: expected thresholds [N] with N >= 1, got shape {t.shape}")
    keep = ~np.isnan(v)
    if valid is not None:
        m = np.asarray(valid, dtype=bool)
        if m.shape != v.shape:
            raise ValueError(f"{where}: valid mask has shape {m.shape}, values have {v.shape}")
        keep &= m
    v = v[keep]
    if v.size == 0:
        raise ValueError(f"{where}: no valid frames (all ground truth missing or empty)")
    hits = v[:, None] > t[None, :] if above else v[:, None] <= t[None, :]
    return hits.mean(axis=0)


def precision_curve(errors, thresholds=PRECISION_THRESHOLDS, valid=None) -> np.ndarray:
    """Fraction of valid frames with location error `<= t`, for each threshold.

    Args:
      errors: [T] centre errors (pixels, or gt-normalized units for normalized precision).
      thresholds: [N] thresholds, default 0..50 px.
      valid: optional bool [T]; frames where it is False, and frames whose error is NaN, are
        excluded.
    Returns:
      float [N] in [0, 1].
    """
    return _fractions(errors, thresholds, valid, above=False, where="precision_curve")


def success_curve(ious, thresholds=SUCCESS_THRESHOLDS, valid=None) -> np.ndarray:
    """Fraction of valid frames with IoU strictly greater than `t`, for each threshold.

    Args:
      ious: [T] overlaps in [0, 1].
      thresholds: [N] thresholds, default 0, 0.05, ..., 1 (21 values).
      valid: optional bool [T]; frames where it is False, and NaN overlaps, are excluded.
    Returns:
      float [N] in [0, 1]. (At t = 1 it is 0: no IoU exceeds 1.)
    """
    return _fractions(ious, thresholds, valid, above=True, where="success_curve")


def _sequence_curves(pred, gt, where: str = "sequence"):
    p, g = _check_pair(np.asarray(pred, dtype=np.float64), np.asarray(gt, dtype=np.float64))
    valid = valid_frames(g)
    if not valid.any():
        raise ValueError(f"{where}: no valid ground-truth frame (all NaN or empty)")
    bad = valid & ~np.all(np.isfinite(p), axis=-1)
    if bad.any():
        raise ValueError(f"{where}: predictions are not finite at frames {np.flatnonzero(bad)[:10].tolist()}")
    overlaps = iou(p, g)
    return dict(
        success=success_curve(overlaps, SUCCESS_THRESHOLDS, valid),
        precision=precision_curve(center_error(p, g), PRECISION_THRESHOLDS, valid),
        norm_precision=precision_curve(normalized_center_error(p, g), NORM_PRECISION_THRESHOLDS, valid),
        avg_overlap=float(overlaps[valid].mean()),
        num_valid=int(valid.sum()),
    )


def precision_at(pred, gt, threshold: float = PRECISION_THRESHOLD) -> float:
    """Precision of one sequence: % of valid frames with centre error `<= threshold` pixels."""
    p, g = _check_pair(np.asarray(pred, dtype=np.float64), np.asarray(gt, dtype=np.float64))
    return 100.0 * float(precision_curve(center_error(p, g), [threshold], valid_frames(g))[0])


def normalized_precision_at(pred, gt, threshold: float = NORM_PRECISION_THRESHOLD) -> float:
    """Normalized precision of one sequence: % of valid frames with normalized error `<= threshold`."""
    p, g = _check_pair(np.asarray(pred, dtype=np.float64), np.asarray(gt, dtype=np.float64))
    return 100.0 * float(precision_curve(normalized_center_error(p, g), [threshold], valid_frames(g))[0])


def success_auc(pred, gt, thresholds=SUCCESS_THRESHOLDS) -> float:
    """Success score (AUC) of one sequence, in %: mean over `thresholds` of the success curve.

    With a constant IoU `v` on every frame, this is 100 * (number of thresholds below v) / N.
    """
    p, g = _check_pair(np.asarray(pred, dtype=np.float64), np.asarray(gt, dtype=np.float64))
    return 100.0 * float(success_curve(iou(p, g), thresholds, valid_frames(g)).mean())


def summarize(results: Sequence[tuple]) -> dict:
    """Data-set scores from per-sequence results, averaging the curves over sequences (pytracking).

    Each sequence's success, precision and normalized-precision curves are computed over its valid
    frames; the curves are averaged with equal weight per sequence; the scores are read off the
    averaged curves. (So `precision` equals the mean of the sequences' `precision_at`, and `auc`
    the mean of their `success_auc`.)

    Args:
      results: list of (pred [T_i, 4], gt [T_i, 4]) pairs, one per sequence. The first frame's
        prediction is expected to be the initial box (pytracking overwrites it with gt[0]).
    Returns:
      dict with
        precision: % at 20 px;  norm_precision: % at 0.2;  auc: success AUC in %;
        avg_overlap: mean over sequences of the mean IoU of valid frames, in %;
        precision_curve [51], norm_precision_curve [51], success_curve [21] (fractions), and the
        matching precision_thresholds, norm_precision_thresholds, success_thresholds;
        num_sequences, num_frames (valid frames in all).
    """
    if isinstance(results, tuple) and len(results) == 2 and np.ndim(results[0]) == 2:
        raise TypeError("summarize: expected a list of (pred, gt) pairs, got a single pair; wrap it in a list")
    results = list(results)
    if not results:
        raise ValueError("summarize: no sequences given")
    curves = []
    for i, item in enumerate(results):
        if len(item) != 2:
            raise ValueError(f"summarize: result {i} is not a (pred, gt) pair")
        curves.append(_sequence_curves(item[0], item[1], where=f"summarize: sequence {i}"))
    success = np.mean([c["success"] for c in curves], axis=0)
    precision = np.mean([c["precision"] for c in curves], axis=0)
    norm_precision = np.mean([c["norm_precision"] for c in curves], axis=0)
    at20 = int(np.flatnonzero(PRECISION_THRESHOLDS == PRECISION_THRESHOLD)[0])
    at02 = int(np.argmin(np.abs(NORM_PRECISION_THRESHOLDS - NORM_PRECISION_THRESHOLD)))
    return dict(
        precision=100.0 * float(precision[at20]),
        norm_precision=100.0 * float(norm_precision[at02]),
        auc=100.0 * float(success.mean()),
        avg_overlap=100.0 * float(np.mean([c["avg_overlap"] for c in curves])),
        precision_curve=precision,
        norm_precision_curve=norm_precision,
        success_curve=success,
        precision_thresholds=PRECISION_THRESHOLDS.copy(),
        norm_precision_thresholds=NORM_PRECISION_THRESHOLDS.copy(),
        success_thresholds=SUCCESS_THRESHOLDS.copy(),
        num_sequences=len(curves),
        num_frames=int(sum(c["num_valid"] for c in curves)),
    )
