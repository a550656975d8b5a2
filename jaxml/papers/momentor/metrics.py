"""Momentor evaluation metrics at small scale: pure numpy functions on parsed model outputs.

A span is a (start, end) pair in seconds with start <= end. The metrics, as the video-LLM papers
(Momentor, TimeChat, VTimeLLM) report them:

  * Temporal grounding (Charades-STA style): `grounding_metrics` gives R@1 at IoU thresholds (the
    fraction of queries whose single predicted span has temporal IoU >= t) and the mean IoU.
  * Dense video captioning (ActivityNet-Captions style): `dense_caption_metrics` matches predicted
    events to reference events one-to-one per video (`match_events`) at each IoU threshold and
    reports precision / recall / F1 of the localisation, the exact-match accuracy of the captions of
    the matched pairs, and a joint (SODA-like) F1 where an event counts only if both its time span
    and its caption are right; each averaged over the thresholds.
  * Highlight detection (QVHighlights style): `highlight_metrics` gives mAP and HIT@1 of a ranking
    of frames (clips) against per-frame saliency levels.
  * Caption text: `caption_accuracy` (exact match after normalisation) and `token_f1` (SQuAD-style
    bag-of-words F1).

All values are fractions in [0, 1], not percentages.

A prediction that failed to parse is given as NaN times: its IoU with anything is 0 (it is never
matched and never counts as a hit), it is not an error. Ground truth must be finite.
"""

from __future__ import annotations

from collections import Counter
from typing import Sequence

import numpy as np
from scipy import optimize

# ------------------------------------------------------------------------------------- helpers


def _check_thresholds(name: str, thresholds: Sequence[float]) -> tuple[float, ...]:
    try:
        ts = tuple(float(t) for t in thresholds)
    except TypeError as e:
        raise ValueError(f"{name}: must be a sequence of numbers in (0, 1], got {thresholds!r}") from e
    if not ts:
        raise ValueError(f"{name}: must hold at least one threshold in (0, 1], got an empty sequence")
    for t in ts:
        if not (0.0 < t <= 1.0):
            raise ValueError(f"{name}: every threshold must satisfy 0 < t <= 1, got {t!r}")
    return ts


def _check_threshold(name: str, threshold: float) -> float:
    t = float(threshold)
    if not (0.0 < t <= 1.0):
        raise ValueError(f"{name}: must satisfy 0 < threshold <= 1, got {threshold!r}")
    return t


def _as_spans(name: str, x, *, allow_nan: bool) -> np.ndarray:
    """x as a float64 array [..., 2]; checks start <= end (rows with NaN skipped when allowed)."""
    try:
        a = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as e:
        raise ValueError(f"{name}: must be a numeric array of (start, end) spans [..., 2], got {x!r}") from e
    if a.ndim == 0 or a.shape[-1] != 2:
        raise ValueError(f"{name}: must have shape [..., 2] (start, end), got shape {a.shape}")
    bad_value = np.isnan(a).any(axis=-1) if allow_nan else np.zeros(a.shape[:-1], dtype=bool)
    if not allow_nan and np.isnan(a).any():
        idx = tuple(int(i) for i in np.argwhere(np.isnan(a).any(axis=-1))[0])
        raise ValueError(f"{name}: must not contain NaN, got one at index {idx}")
    inf = np.isinf(a).any(axis=-1) & ~bad_value
    if inf.any():
        idx = tuple(int(i) for i in np.argwhere(inf)[0])
        raise ValueError(f"{name}: spans must be finite (NaN allowed only in predictions), "
                         f"got {a[idx].tolist()} at index {idx}")
    with np.errstate(invalid="ignore"):
        reversed_ = (a[..., 0] > a[..., 1]) & ~bad_value
    if reversed_.any():
        idx = tuple(int(i) for i in np.argwhere(reversed_)[0])
        raise ValueError(f"{name}: every span must have start <= end, got start={float(a[idx][0])} > "
                         f"end={float(a[idx][1])} at index {idx}")
    return a


def _as_span_list(name: str, x) -> np.ndarray:
    """A list of spans [K, 2]; an empty list (or an array of size 0) gives shape [0, 2]."""
    try:
        a = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as e:
        raise ValueError(f"{name}: must be a numeric array of (start, end) spans [K, 2], got {x!r}") from e
    if a.size == 0:
        a = a.reshape(0, 2)
    if a.ndim != 2:
        raise ValueError(f"{name}: must be a list of (start, end) spans with shape [K, 2], got shape {a.shape}")
    return a


def _normalise_text(s: str) -> str:
    """Lowercase, whitespace collapsed to single spaces, stripped."""
    return " ".join(s.lower().split())


def _check_strings(name: str, xs) -> list[str]:
    if isinstance(xs, (str, bytes)):
        raise ValueError(f"{name}: must be a sequence of strings (one per item), got a single string")
    out = list(xs)
    for i, s in enumerate(out):
        if not isinstance(s, str):
            raise ValueError(f"{name}: every item must be a str, got {type(s).__name__} at index {i}")
    return out


def _f1(p: float, r: float) -> float:
    return 2.0 * p * r / (p + r) if p + r > 0 else 0.0


def _tag(t: float) -> str:
    return f"{t:g}"


# ------------------------------------------------------------------------------------ grounding


def temporal_iou(pred, gt) -> np.ndarray:
    """Temporal IoU of 1-D intervals.

    Args:
      pred: float array [..., 2] of predicted (start, end) spans in seconds. NaN in either end
        (a prediction that failed to parse) gives IoU 0.
      gt: float array [..., 2] of ground-truth spans; finite. Broadcastable against pred.

    Returns:
      float64 array of the broadcast shape without the last axis: intersection / union, where
      intersection = max(0, min(e1, e2) - max(s1, s2)) and union = max(e1, e2) - min(s1, s2) (the
      hull: for disjoint spans the IoU is 0 either way). When the union is 0 (both spans are the
      same single point) the IoU is 1.

    Raises:
      ValueError: a span with start > end (naming pred or gt and the index), NaN in gt, +-inf in
        either, or a last axis that is not 2.
    """
    p = _as_spans("temporal_iou: pred", pred, allow_nan=True)
    g = _as_spans("temporal_iou: gt", gt, allow_nan=False)
    try:
        p, g = np.broadcast_arrays(p, g)
    except ValueError as e:
        raise ValueError(f"temporal_iou: pred shape {p.shape} and gt shape {g.shape} do not broadcast") from e
    failed = np.isnan(p).any(axis=-1)
    ps, pe, gs, ge = p[..., 0], p[..., 1], g[..., 0], g[..., 1]
    with np.errstate(invalid="ignore", divide="ignore"):
        inter = np.maximum(0.0, np.minimum(pe, ge) - np.maximum(ps, gs))
        union = np.maximum(pe, ge) - np.minimum(ps, gs)
        iou = np.where(union > 0, inter / np.where(union > 0, union, 1.0), 0.0)
    # Zero union with finite spans means s1 = e1 = s2 = e2: the same point.
    same_point = (union == 0) & (ps == gs) & (pe == ge)
    iou = np.where(same_point, 1.0, iou)
    iou = np.where(failed, 0.0, iou)
    return np.asarray(iou, dtype=np.float64)


def grounding_metrics(pred, gt, thresholds: Sequence[float] = (0.3, 0.5, 0.7)) -> dict:
    """R@1 at IoU thresholds and mean IoU of single-span temporal grounding.

    Args:
      pred: float array [N, 2], the predicted span of each query (NaN row = failed parse, IoU 0).
      gt: float array [N, 2], the ground-truth span of each query.
      thresholds: IoU thresholds, each in (0, 1].

    Returns:
      {"r1_iou{t:g}": fraction of queries with IoU >= t, for each t (e.g. "r1_iou0.5"),
       "miou": mean IoU, "n": N}; the values are floats in [0, 1].

    Raises:
      ValueError: shapes other than [N, 2] with equal N >= 1, start > end, bad thresholds.
    """
    ts = _check_thresholds("grounding_metrics: thresholds", thresholds)
    p = np.asarray(pred, dtype=np.float64)
    g = np.asarray(gt, dtype=np.float64)
    for name, a in (("pred", p), ("gt", g)):
        if a.ndim != 2 or a.shape[1] != 2:
            raise ValueError(f"grounding_metrics: {name} must have shape [N, 2], got {a.shape}")
    if p.shape[0] != g.shape[0]:
        raise ValueError(f"grounding_metrics: pred and gt must have one row per query, got {p.shape[0]} and "
                         f"{g.shape[0]} rows")
    if p.shape[0] == 0:
        raise ValueError("grounding_metrics: need at least one query (N >= 1), got N = 0")
    iou = temporal_iou(p, g)
    out = {f"r1_iou{_tag(t)}": float(np.mean(iou >= t)) for t in ts}
    out["miou"] = float(np.mean(iou))
    out["n"] = int(p.shape[0])
    return out


# ------------------------------------------------------------------------------------- matching


def _assign(eligible: np.ndarray, iou: np.ndarray) -> list[tuple[int, int]]:
    """Max-cardinality matching over eligible pairs, ties by larger total IoU."""
    if eligible.size == 0 or not eligible.any():
        return []
    # Weight 1 + iou / (m + 1) per eligible pair, m = min(P, G): k matches weigh in [k, k + k/(m+1)),
    # which is below k + 1, so a matching with more pairs always wins and the IoU only breaks ties.
    # (The plain 1 + iou would let 2 pairs at IoU 1 (weight 4) beat 3 pairs at IoU 0.32 (3.96).)
    m = min(eligible.shape)
    weight = np.where(eligible, 1.0 + iou / (m + 1.0), 0.0)
    rows, cols = optimize.linear_sum_assignment(-weight)
    return [(int(r), int(c)) for r, c in zip(rows, cols) if eligible[r, c]]


def match_events(pred_spans, gt_spans, threshold: float) -> list[tuple[int, int]]:
    """One-to-one matching of predicted events to ground-truth events at an IoU threshold.

    Maximises the number of pairs with IoU >= threshold (an optimal assignment, not greedy by IoU),
    ties broken by the larger total IoU.

    Args:
      pred_spans: float array [P, 2] of predicted spans (P may be 0; NaN rows never match).
      gt_spans: float array [G, 2] of ground-truth spans (G may be 0).
      threshold: IoU threshold in (0, 1].

    Returns:
      [(pred_index, gt_index), ...] of the matched pairs, every one with IoU >= threshold, sorted by
      pred_index.
    """
    t = _check_threshold("match_events: threshold", threshold)
    p = _as_span_list("match_events: pred_spans", pred_spans)
    g = _as_span_list("match_events: gt_spans", gt_spans)
    _as_spans("match_events: pred_spans", p, allow_nan=True)
    _as_spans("match_events: gt_spans", g, allow_nan=False)
    if p.shape[0] == 0 or g.shape[0] == 0:
        return []
    iou = temporal_iou(p[:, None, :], g[None, :, :])
    return _assign(iou >= t, iou)


# ------------------------------------------------------------------------------ dense captioning


def _parse_video_events(name: str, events) -> tuple[np.ndarray, list[str]]:
    if isinstance(events, (str, bytes)):
        raise ValueError(f"{name}: must be a list of (start, end, caption) events, got a string")
    spans, caps = [], []
    for j, ev in enumerate(events):
        if isinstance(ev, (str, bytes)) or not hasattr(ev, "__len__") or len(ev) != 3:
            raise ValueError(f"{name}[{j}]: an event must be a (start, end, caption) tuple, got {ev!r}")
        s, e, c = ev
        if not isinstance(c, str):
            raise ValueError(f"{name}[{j}]: the caption must be a str, got {type(c).__name__}")
        try:
            spans.append((float(s), float(e)))
        except (TypeError, ValueError) as err:
            raise ValueError(f"{name}[{j}]: start and end must be numbers (seconds), got {s!r}, {e!r}") from err
        caps.append(_normalise_text(c))
    arr = np.asarray(spans, dtype=np.float64).reshape(len(spans), 2)
    return arr, caps


def dense_caption_metrics(predictions, references, thresholds: Sequence[float] = (0.3, 0.5, 0.7, 0.9)) -> dict:
    """Dense video captioning: event localisation P/R/F1 and caption scores, ActivityNet style.

    Args:
      predictions: one list per video of predicted events (start, end, caption: str); a video may
        have no events; NaN times (failed parse) never match.
      references: one list per video of reference events, same format, finite times.
      thresholds: temporal IoU thresholds, each in (0, 1].

    At each threshold t, the events of each video are matched one-to-one (`match_events`), and
    counts are summed over all videos (micro-average):
      * precision@t = matched / predicted events, recall@t = matched / reference events (0 when the
        denominator is 0), f1@t = 2PR / (P + R) (0 when P + R = 0);
      * caption_accuracy@t = fraction of the matched pairs whose captions are equal after
        normalisation (lowercase, whitespace collapsed, stripped); 0 when nothing matched;
      * caption_f1@t: the F1 of a joint (SODA-like) score in which an event counts as a hit only if
        its IoU >= t AND its caption equals the reference's; the hits come from their own optimal
        one-to-one matching over the pairs meeting both conditions (so a prediction is not lost to a
        wrongly-captioned reference that overlaps it more).

    Returns:
      {"precision", "recall", "f1", "caption_accuracy", "caption_f1": each the mean over the
       thresholds of the per-threshold values (so "f1" is the mean of the f1@t, not the F1 of the mean
       precision and recall); "precision@{t:g}", "recall@{t:g}", "f1@{t:g}",
       "caption_accuracy@{t:g}", "caption_f1@{t:g}" per threshold (e.g. "f1@0.5");
       "n_videos", "n_pred", "n_ref": totals}.
    """
    ts = _check_thresholds("dense_caption_metrics: thresholds", thresholds)
    preds, refs = list(predictions), list(references)
    if len(preds) != len(refs):
        raise ValueError(f"dense_caption_metrics: predictions and references must have one entry per video, "
                         f"got {len(preds)} and {len(refs)}")
    videos = []
    for i, (pv, rv) in enumerate(zip(preds, refs)):
        p_spans, p_caps = _parse_video_events(f"dense_caption_metrics: predictions[{i}]", pv)
        r_spans, r_caps = _parse_video_events(f"dense_caption_metrics: references[{i}]", rv)
        _as_spans(f"dense_caption_metrics: predictions[{i}]", p_spans, allow_nan=True)
        _as_spans(f"dense_caption_metrics: references[{i}]", r_spans, allow_nan=False)
        if len(p_caps) and len(r_caps):
            iou = temporal_iou(p_spans[:, None, :], r_spans[None, :, :])
            same = np.array([[a == b for b in r_caps] for a in p_caps], dtype=bool)
        else:
            iou = np.zeros((len(p_caps), len(r_caps)))
            same = np.zeros((len(p_caps), len(r_caps)), dtype=bool)
        videos.append((iou, same))
    n_pred = sum(iou.shape[0] for iou, _ in videos)
    n_ref = sum(iou.shape[1] for iou, _ in videos)

    out: dict = {}
    per: dict[str, list[float]] = {k: [] for k in ("precision", "recall", "f1", "caption_accuracy", "caption_f1")}
    for t in ts:
        matched = correct = joint = 0
        for iou, same in videos:
            pairs = _assign(iou >= t, iou)
            matched += len(pairs)
            correct += sum(bool(same[r, c]) for r, c in pairs)
            joint += len(_assign((iou >= t) & same, iou))
        prec = matched / n_pred if n_pred else 0.0
        rec = matched / n_ref if n_ref else 0.0
        jp = joint / n_pred if n_pred else 0.0
        jr = joint / n_ref if n_ref else 0.0
        vals = {"precision": prec, "recall": rec, "f1": _f1(prec, rec),
                "caption_accuracy": correct / matched if matched else 0.0, "caption_f1": _f1(jp, jr)}
        for k, v in vals.items():
            out[f"{k}@{_tag(t)}"] = float(v)
            per[k].append(float(v))
    for k, v in per.items():
        out[k] = float(np.mean(v))
    out["n_videos"] = len(videos)
    out["n_pred"] = int(n_pred)
    out["n_ref"] = int(n_ref)
    return out


# ----------------------------------------------------------------------------- highlight detection


def _as_frame_ranking(name: str, x, num_frames: int) -> np.ndarray:
    a = np.asarray(x)
    if a.size == 0:
        return np.zeros(0, dtype=np.int64)
    if a.ndim != 1:
        raise ValueError(f"{name}: must be a 1-D array of frame indices, got shape {a.shape}")
    if not np.issubdtype(a.dtype, np.integer):
        raise ValueError(f"{name}: frame indices must be integers, got dtype {a.dtype}")
    bad = (a < 0) | (a >= num_frames)
    if bad.any():
        raise ValueError(f"{name}: frame index {int(a[bad][0])} is out of range [0, {num_frames}) "
                         f"(the query has {num_frames} frames)")
    _, first = np.unique(a, return_index=True)
    return a[np.sort(first)].astype(np.int64)


def highlight_metrics(ranked_frames, saliency, very_good: float = 2) -> dict:
    """Highlight detection, QVHighlights style: mAP and HIT@1 of frame rankings.

    Args:
      ranked_frames: one int array per query of predicted frame indices, best first; may be empty.
        Repeated indices are dropped, keeping the first occurrence. Indices must lie in
        [0, num_frames) of that query.
      saliency: one array [num_frames] per query of per-frame saliency levels (0 = not relevant).
      very_good: a frame is relevant when its saliency >= very_good.

    Per query, with k = number of (deduplicated) predictions and R = number of relevant frames:
      * AP = (1 / min(k, R)) * sum over the ranks r (1-based) whose frame is relevant of precision@r;
        AP = 0 when k = 0 or R = 0;
      * HIT@1 = 1 if the first predicted frame is relevant, else 0 (0 with no prediction).

    Returns:
      {"map": mean AP over the queries, "hit1": mean HIT@1, "n": number of queries}.

    Raises:
      ValueError: different numbers of queries, no queries, non-integer or out-of-range frame
        indices, saliency that is not a 1-D array of finite numbers.
    """
    ranks, sals = list(ranked_frames), list(saliency)
    if len(ranks) != len(sals):
        raise ValueError(f"highlight_metrics: ranked_frames and saliency must have one entry per query, "
                         f"got {len(ranks)} and {len(sals)}")
    if not ranks:
        raise ValueError("highlight_metrics: need at least one query, got none")
    aps, hits = [], []
    for i, (rk, sl) in enumerate(zip(ranks, sals)):
        s = np.asarray(sl)
        if s.ndim != 1 or not (np.issubdtype(s.dtype, np.integer) or np.issubdtype(s.dtype, np.floating)):
            raise ValueError(f"highlight_metrics: saliency[{i}] must be a 1-D numeric array [num_frames], "
                             f"got shape {s.shape} dtype {s.dtype}")
        if np.issubdtype(s.dtype, np.floating) and not np.isfinite(s).all():
            raise ValueError(f"highlight_metrics: saliency[{i}] must be finite")
        order = _as_frame_ranking(f"highlight_metrics: ranked_frames[{i}]", rk, s.shape[0])
        relevant = s >= very_good
        n_rel, k = int(relevant.sum()), int(order.shape[0])
        hit = relevant[order]
        hits.append(float(hit[0]) if k else 0.0)
        if k == 0 or n_rel == 0:
            aps.append(0.0)
            continue
        prec_at = np.cumsum(hit) / np.arange(1, k + 1)
        aps.append(float(prec_at[hit].sum() / min(k, n_rel)))
    return {"map": float(np.mean(aps)), "hit1": float(np.mean(hits)), "n": len(ranks)}


# ---------------------------------------------------------------------------------- caption text


def _string_pairs(name: str, pred, ref) -> tuple[list[str], list[str]]:
    p = _check_strings(f"{name}: pred", pred)
    r = _check_strings(f"{name}: ref", ref)
    if len(p) != len(r):
        raise ValueError(f"{name}: pred and ref must have one string per item, got {len(p)} and {len(r)}")
    if not p:
        raise ValueError(f"{name}: need at least one pair, got none")
    return p, r


def caption_accuracy(pred: Sequence[str], ref: Sequence[str]) -> float:
    """Fraction of pairs whose strings are equal after normalisation.

    Args:
      pred, ref: equal-length sequences of strings (at least one pair). Normalisation: lowercase,
        whitespace runs collapsed to one space, stripped (punctuation is kept).

    Returns:
      float in [0, 1].
    """
    p, r = _string_pairs("caption_accuracy", pred, ref)
    return float(np.mean([_normalise_text(a) == _normalise_text(b) for a, b in zip(p, r)]))


def _token_f1_one(a: str, b: str) -> float:
    ta, tb = _normalise_text(a).split(), _normalise_text(b).split()
    if not ta or not tb:
        return float(ta == tb)  # both empty: 1; one empty: 0
    common = sum((Counter(ta) & Counter(tb)).values())
    if common == 0:
        return 0.0
    prec, rec = common / len(ta), common / len(tb)
    return 2.0 * prec * rec / (prec + rec)


def token_f1(pred: Sequence[str], ref: Sequence[str]) -> float:
    """Mean over pairs of the SQuAD-style bag-of-words token F1.

    Per pair: tokens are the whitespace-separated words after lowercasing (punctuation and articles
    are kept, unlike SQuAD's answer normalisation); overlap = size of the multiset intersection
    (Counter &); precision = overlap / len(pred tokens), recall = overlap / len(ref tokens),
    F1 = 2PR / (P + R), 0 with no overlap. Two empty strings score 1, one empty string scores 0.

    Args:
      pred, ref: equal-length sequences of strings (at least one pair).

    Returns:
      float in [0, 1].
    """
    p, r = _string_pairs("token_f1", pred, ref)
    return float(np.mean([_token_f1_one(a, b) for a, b in zip(p, r)]))
