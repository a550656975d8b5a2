"""Token heatmaps (HTML and PNG) and pixel heatmaps of relevance."""

from __future__ import annotations

import html
import pathlib
from collections.abc import Sequence

import numpy as np

from jaxml.core.experiment import pyplot, save_figure


def _normalise(scores: np.ndarray) -> np.ndarray:
    m = np.abs(scores).max()
    return scores / m if m > 0 else scores


def _rgb(v: float) -> tuple[int, int, int]:
    """Red for positive, blue for negative relevance, white at 0 (v in [-1, 1])."""
    a = min(abs(v), 1.0)
    return (255, int(255 * (1 - a)), int(255 * (1 - a))) if v >= 0 else (int(255 * (1 - a)), int(255 * (1 - a)), 255)


def tokens_html(tokens: Sequence[str], scores: np.ndarray, title: str = "") -> str:
    """An HTML fragment: each token on a background coloured by its relevance (max |r| = full colour)."""
    if len(tokens) != len(scores):
        raise ValueError(f"{len(tokens)} tokens but {len(scores)} scores")
    spans = []
    for token, v in zip(tokens, _normalise(np.asarray(scores, np.float64))):
        r, g, b = _rgb(float(v))
        spans.append(f'<span style="background: rgb({r},{g},{b}); padding: 1px 0" title="{v:+.3f}">'
                     f"{html.escape(token)}</span>")
    head = f"<p><b>{html.escape(title)}</b></p>" if title else ""
    return f'{head}<p style="font-family: monospace; line-height: 1.8">{"".join(spans)}</p>'


def write_html(path: str | pathlib.Path, fragments: Sequence[str], title: str = "AttnLRP relevance") -> pathlib.Path:
    path = pathlib.Path(path)
    path.write_text(f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title></head>"
                    f"<body><h3>{html.escape(title)}</h3>{''.join(fragments)}</body></html>")
    return path


def tokens_png(path: str | pathlib.Path, rows: Sequence[tuple[str, Sequence[str], np.ndarray]],
               width_chars: int = 90) -> pathlib.Path:
    """Rows of (title, tokens, scores) drawn as coloured boxes with matplotlib.

    The axes fill the figure, which `save_figure`'s tight_layout does not support: written directly.
    """
    plt = pyplot()

    lines = []   # (title or None, [(token, v)])
    for title, tokens, scores in rows:
        lines.append((title, []))
        line, used = [], 0
        for token, v in zip(tokens, _normalise(np.asarray(scores, np.float64))):
            t = token.replace("\n", "\\n")
            if used + len(t) > width_chars and line:
                lines.append((None, line))
                line, used = [], 0
            line.append((t, float(v)))
            used += len(t) + 1
        lines.append((None, line))
    fig = plt.figure(figsize=(width_chars * 0.09, 0.32 * len(lines) + 0.3))
    ax = fig.add_axes([0, 0, 1, 1])
    ax.set_xlim(0, width_chars)
    ax.set_ylim(len(lines), 0)
    ax.axis("off")
    for y, (title, items) in enumerate(lines):
        if title is not None:
            ax.text(0, y + 0.7, title, fontsize=8, weight="bold", family="monospace")
            continue
        x = 0.0
        for t, v in items:
            ax.text(x, y + 0.7, t, fontsize=8, family="monospace",
                    bbox=dict(facecolor=np.asarray(_rgb(v)) / 255, edgecolor="none", pad=1.0))
            x += len(t) + 1
    return pathlib.Path(save_figure(fig, path, dpi=110, tight=False))   # the axes fill the figure by hand


def pixels_png(path: str | pathlib.Path, images: np.ndarray, heatmaps: np.ndarray, titles: Sequence[str]) -> pathlib.Path:
    """Images [n, H, W] next to their pixel relevance [n, H, W] (red positive, blue negative)."""
    plt = pyplot()

    n = len(images)
    fig, axes = plt.subplots(2, n, figsize=(1.6 * n, 3.4), squeeze=False)
    for i in range(n):
        axes[0, i].imshow(images[i], cmap="gray")
        axes[0, i].set_title(titles[i], fontsize=7)
        m = np.abs(heatmaps[i]).max() or 1.0
        axes[1, i].imshow(heatmaps[i], cmap="bwr", vmin=-m, vmax=m)
        for ax in axes[:, i]:
            ax.axis("off")
    return pathlib.Path(save_figure(fig, path, dpi=110))


def generation_png(path: str | pathlib.Path, tokens: Sequence[str], relevance: np.ndarray, prompt_length: int,
                   title: str = "") -> pathlib.Path:
    """The relevance matrix of an explained generation (`explain.explain_generation`): one row per
    generated token, one column per prompt or earlier token, each row scaled by its largest |value|
    (red positive, blue negative); the line marks the end of the prompt."""
    plt = pyplot()
    rel = np.asarray(relevance, np.float64)
    g, n = rel.shape
    if len(tokens) != n or not 0 < prompt_length <= n - g + 1 or n - prompt_length != g:
        raise ValueError(f"generation_png: {len(tokens)} tokens, relevance {rel.shape}, prompt_length "
                         f"{prompt_length}: need [generated, prompt + generated] with generated = tokens - prompt")
    scaled = rel / np.maximum(np.abs(rel).max(1, keepdims=True), 1e-30)
    fig, ax = plt.subplots(figsize=(max(4.0, 0.28 * n + 1.5), max(2.0, 0.28 * g + 1.2)))
    ax.imshow(scaled, cmap="bwr", vmin=-1, vmax=1, aspect="auto")
    labels = [t.replace("\n", "\\n") for t in tokens]
    ax.set_xticks(range(n))
    ax.set_xticklabels(labels, rotation=90, fontsize=7, family="monospace")
    ax.set_yticks(range(g))
    ax.set_yticklabels(labels[prompt_length:], fontsize=7, family="monospace")
    ax.axvline(prompt_length - 0.5, color="k", lw=0.8)
    ax.set_xlabel("explaining token")
    ax.set_ylabel("generated token")
    if title:
        ax.set_title(title, fontsize=9)
    return pathlib.Path(save_figure(fig, path))
