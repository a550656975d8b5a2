"""The 100 real line-drawn shapes of the visual reasoning tasks: Hershey glyphs (`jaxml.data.hershey`,
from the MIT `hershey-fonts` wheel), rasterised with numpy. ART (Webb et al. 2021) used 100 Unicode
characters; these are the closest offline source of distinct, real, hand-designed shapes.

    bank = shape_bank()            # float32 [100, 16, 16] in [0, 1], deterministic
    ids = np.arange(100); train_ids, test_ids = split_shapes(m_holdout=95)

Glyphs are taken in a fixed order from the symbol fonts (astrology, meteorology, symbolic, Japanese,
Greek; Latin letters and digits skipped, they repeat across fonts) and kept only if they differ from every glyph already kept (intersection over union of the
rendered strokes below 0.5), so the 100 shapes are visually distinct.
"""

from __future__ import annotations

import functools

import numpy as np

FONTS = ("astrology", "meteorology", "symbolic", "japanese", "greek")


def render_strokes(strokes, size: int = 16, margin: float = 1.5, width: float = 1.0, supersample: int = 4
                   ) -> np.ndarray:
    """Polylines (a list of [(x, y), ...]) drawn into a float32 [size, size] image in [0, 1]: scaled
    to fit inside `margin` pixels with their aspect kept, lines `width` pixels wide, antialiased by
    supersampling."""
    points = [np.asarray(s, np.float64) for s in strokes if len(s) >= 1]
    if not points:
        raise ValueError("render_strokes: no strokes to draw")
    allp = np.concatenate(points)
    lo, hi = allp.min(0), allp.max(0)
    span = max(float((hi - lo).max()), 1e-6)
    big = size * supersample
    scale = (big - 2 * margin * supersample) / span
    offset = (big - (hi - lo) * scale) / 2.0
    canvas = np.zeros((big, big), bool)
    radius = width * supersample / 2.0
    yy, xx = np.mgrid[0:big, 0:big]
    for stroke in points:
        p = (stroke - lo) * scale + offset
        if len(p) == 1:
            p = np.concatenate([p, p])
        for a, b in zip(p[:-1], p[1:]):
            n = max(int(np.ceil(np.linalg.norm(b - a) / (radius / 2 + 1e-9))), 1) + 1
            for t in np.linspace(0.0, 1.0, n):
                x, y = a + t * (b - a)
                canvas |= (xx - x) ** 2 + (yy - y) ** 2 <= radius ** 2
    return canvas.reshape(size, supersample, size, supersample).mean(axis=(1, 3)).astype(np.float32)


def _glyphs():
    from jaxml.data import hershey

    for name in FONTS:
        for char in hershey.font_chars(name):
            if char.isalnum() and name != "japanese":      # Latin letters and digits repeat across fonts
                continue
            strokes = hershey.glyph_strokes(name, char)
            if strokes and sum(len(s) for s in strokes) >= 4:
                yield name, char, strokes


@functools.lru_cache(maxsize=4)
def shape_bank(count: int = 100, size: int = 16, max_iou: float = 0.5) -> np.ndarray:
    """`count` distinct glyph images float32 [count, size, size] in [0, 1] (see the module docstring)."""
    kept: list[np.ndarray] = []
    inks: list[np.ndarray] = []
    for _, _, strokes in _glyphs():
        image = render_strokes(strokes, size)
        ink = image > 0.25
        if ink.sum() < size:            # too small or too thin to tell apart
            continue
        if all((ink & k).sum() / (ink | k).sum() < max_iou for k in inks):
            kept.append(image)
            inks.append(ink)
        if len(kept) == count:
            bank = np.stack(kept)
            bank.setflags(write=False)
            return bank
    raise ValueError(f"shape_bank: only {len(kept)} distinct glyphs at size {size} and IoU < {max_iou}; "
                     f"asked for {count}")


def split_shapes(count: int = 100, m_holdout: int = 95, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """ART's split of the shape ids: `count - m_holdout` shapes to train on, `m_holdout` held out for
    testing (ART: m = 95 of 100), a seeded permutation. Returns (train ids, test ids)."""
    if not 0 <= m_holdout < count:
        raise ValueError(f"split_shapes: m_holdout must be in [0, {count}), got {m_holdout}")
    perm = np.random.default_rng(seed).permutation(count)
    return np.sort(perm[m_holdout:]), np.sort(perm[:m_holdout])
