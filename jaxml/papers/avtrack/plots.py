"""Figures of the UAV benchmarks: precision and success plots, and frames with boxes drawn.

Figures are built on `matplotlib.figure.Figure` with the Agg canvas (no pyplot state, no display
needed) and returned after saving, so callers and tests can read the axes.
"""

from __future__ import annotations

import os
from typing import Mapping, Sequence

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from jaxml.papers.avtrack import metrics

GT_COLOR = "lime"


def _save(fig: Figure, path) -> None:
    path = os.fspath(path)
    parent = os.path.dirname(path)
    if parent:
        os.makedirs(parent, exist_ok=True)
    fig.savefig(path, dpi=100, bbox_inches="tight")


def plot_curves(results: Mapping[str, Sequence[tuple]], path, title: str = "") -> Figure:
    """Precision plot (left) and success plot (right) of one or more trackers, saved to `path`.

    Args:
      results: tracker name -> list of (pred [T_i, 4], gt [T_i, 4]) per sequence.
      path: output image file (.png, .pdf, ...); parent folders are created.
      title: optional prefix of the two panel titles (e.g. the data set's name).
    Returns:
      The Figure. Legend labels read `name [score]`, with precision at 20 px and success AUC in %
      (one decimal) from `metrics.summarize` (per-sequence averaged curves); trackers are listed
      best first.
    """
    if not isinstance(results, Mapping) or not results:
        raise ValueError("plot_curves: results must be a non-empty dict name -> list of (pred, gt)")
    summaries = {name: metrics.summarize(res) for name, res in results.items()}
    fig = Figure(figsize=(10, 4.2))
    FigureCanvasAgg(fig)
    ax_p, ax_s = fig.subplots(1, 2)
    for name in sorted(summaries, key=lambda n: -summaries[n]["precision"]):
        s = summaries[name]
        ax_p.plot(s["precision_thresholds"], 100 * s["precision_curve"], lw=2,
                  label=f"{name} [{s['precision']:.1f}]")
    for name in sorted(summaries, key=lambda n: -summaries[n]["auc"]):
        s = summaries[name]
        ax_s.plot(s["success_thresholds"], 100 * s["success_curve"], lw=2, label=f"{name} [{s['auc']:.1f}]")
    ax_p.set(xlabel="Location error threshold [pixels]", ylabel="Distance precision [%]",
             title="Precision plots of OPE", xlim=(0, 50), ylim=(0, 100))
    ax_s.set(xlabel="Overlap threshold", ylabel="Overlap precision [%]",
             title="Success plots of OPE", xlim=(0, 1), ylim=(0, 100))
    if title:
        fig.suptitle(title, fontsize=10)
    ax_p.legend(loc="lower right", fontsize=8)
    ax_s.legend(loc="lower left", fontsize=8)
    for ax in (ax_p, ax_s):
        ax.grid(alpha=0.3)
    _save(fig, path)
    return fig


def draw_boxes(frames, boxes_by_name: Mapping[str, np.ndarray], path, every: int = 10, gt=None,
               max_panels: int = 8) -> Figure:
    """A strip of frames (0, every, 2 every, ...) with each tracker's box and the ground truth.

    Args:
      frames: [T, H, W, 3] uint8 (or float in [0, 1]) or a sequence of T such frames.
      boxes_by_name: name -> [T, 4] boxes [x, y, w, h] (frame pixels), drawn as solid rectangles.
      path: output image file.
      every: frame stride between panels.
      gt: optional [T, 4] ground truth, drawn dashed in green; NaN or empty gt boxes are skipped.
      max_panels: at most this many panels (the first ones).
    Returns:
      The Figure; panel k shows frame `k * every` and carries one Rectangle per drawn box.
    """
    n = len(frames)
    if n < 1:
        raise ValueError("draw_boxes: no frames")
    if every < 1 or max_panels < 1:
        raise ValueError(f"draw_boxes: every and max_panels must be >= 1, got {every}, {max_panels}")
    named = {name: np.asarray(b, dtype=np.float64) for name, b in boxes_by_name.items()}
    if gt is not None:
        named_gt = np.asarray(gt, dtype=np.float64)
        series = {**named, "ground truth": named_gt}
    else:
        named_gt = None
        series = named
    for name, b in series.items():
        if b.shape != (n, 4):
            raise ValueError(f"draw_boxes: boxes '{name}' must be [{n}, 4] to match the frames, got {b.shape}")
    idx = list(range(0, n, every))[:max_panels]
    fig = Figure(figsize=(2.6 * len(idx), 2.6), layout="constrained")
    FigureCanvasAgg(fig)
    axes = np.atleast_1d(fig.subplots(1, len(idx)))
    colors = [f"C{i}" for i in range(10)]
    valid_gt = metrics.valid_frames(named_gt) if named_gt is not None else None
    for ax, i in zip(axes, idx):
        frame = np.asarray(frames[i])
        if frame.ndim != 3 or frame.shape[-1] != 3:
            raise ValueError(f"draw_boxes: frame {i} must be [height, width, 3], got shape {frame.shape}")
        # Pixel (i, j) covers [j, j + 1] x [i, i + 1], the continuous convention of the boxes.
        ax.imshow(frame, extent=(0, frame.shape[1], frame.shape[0], 0))
        for k, (name, b) in enumerate(named.items()):
            if np.all(np.isfinite(b[i])):
                ax.add_patch(Rectangle(tuple(b[i, :2]), b[i, 2], b[i, 3], fill=False, lw=1.5,
                                       edgecolor=colors[k % 10], label=name))
        if named_gt is not None and valid_gt[i]:
            ax.add_patch(Rectangle(tuple(named_gt[i, :2]), named_gt[i, 2], named_gt[i, 3], fill=False, lw=1.5,
                                   ls="--", edgecolor=GT_COLOR, label="ground truth"))
        ax.set_title(f"frame {i}", fontsize=9)
        ax.set_xticks([])
        ax.set_yticks([])
    handles = [Rectangle((0, 0), 1, 1, fill=False, edgecolor=colors[k % 10]) for k in range(len(named))]
    labels = list(named)
    if named_gt is not None:
        handles.append(Rectangle((0, 0), 1, 1, fill=False, ls="--", edgecolor=GT_COLOR))
        labels.append("ground truth")
    fig.legend(handles, labels, loc="outside lower center", ncol=max(len(labels), 1), fontsize=8, frameon=False)
    _save(fig, path)
    return fig
