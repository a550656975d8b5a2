"""An anti-aliased, vectorised stroke rasteriser for StrokeNUWA drawings, and image overlap metrics.

    img = rasterise(segments, kinds, mask, size=64, width=3.0)      # (64, 64) float32 coverage in [0, 1]
    img = rasterise_rows(rows, size=64)                              # from (R, 9) rows
    imgs = rasterise_batch([rows_a, rows_b], size=64)                # (2, 64, 64), padded and masked
    iou(img_a, img_b), soft_iou(img_a, img_b)

Geometry: grid coordinates [0, GRID] map onto the size x size image (x -> column, y -> row, both scaled by
size / GRID); pixel (i, j) has its centre at (j + 0.5, i + 0.5) in pixel units. Every C segment is sampled
at `samples` uniformly spaced parameters and drawn as the polyline through them; an L segment is the
straight segment from its start to its end (its control points are ignored); M segments and masked rows
draw nothing. The coverage of a pixel is clip(width / 2 + 0.5 - d, 0, 1), d being the distance (pixels)
from its centre to the nearest drawn piece: a stroke `width` pixels wide with round caps and joins whose
edge is a one-pixel linear ramp (the box-filtered edge), so a long line covers `length * width` pixels
in total plus pi * width**2 / 4 + pi / 12 for its two caps.

Cost: the drawn pieces (samples - 1 per C segment, 1 per L segment) are sorted first and a `fori_loop`
with a traced trip count visits them `chunk` at a time, so padding, M rows and the unused samples of L
rows cost nothing in an unbatched call (`rasterise_batch` maps one icon after another for that reason;
under `vmap` the loop runs to the batch's largest count). Memory is a (size, size, chunk) float32 array per
step (64 x 64 x 128: 2 MB), whatever S. The loop makes `rasterise` not reverse-differentiable.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jaxml.papers.strokenuwa.data import pad_batch
from jaxml.papers.strokenuwa.svg import CMD_C, CMD_M, GRID, ROW


def _points(segments: jax.Array, kinds: jax.Array, samples: int) -> jax.Array:
    """(S, 4, 2) -> (S, samples, 2): cubic Bezier samples, or straight-line samples for non-C segments."""
    t = jnp.linspace(0.0, 1.0, samples, dtype=segments.dtype)[:, None]
    p0, c1, c2, p3 = (segments[:, k, None, :] for k in range(4))
    u = 1 - t
    curve = u ** 3 * p0 + 3 * u ** 2 * t * c1 + 3 * u * t ** 2 * c2 + t ** 3 * p3
    line = p0 + t * (p3 - p0)
    return jnp.where((kinds == CMD_C)[:, None, None], curve, line)


_FAR = 1.0e4   # where unused pieces are parked (pixels): never the nearest piece


def _pieces(segments: jax.Array, kinds: jax.Array, drawn: jax.Array, samples: int):
    """The straight pieces to draw, (N, 2) starts and ends in pixels with N = S * (samples - 1), the drawn
    ones first, and their count: samples - 1 per drawn C segment, 1 per drawn L segment."""
    pts = _points(segments, kinds, samples)                                  # (S, samples, 2)
    a, b = pts[:, :-1], pts[:, 1:]
    line = kinds != CMD_C
    b = b.at[:, 0].set(jnp.where(line[:, None], pts[:, -1], b[:, 0]))      # an L segment: one piece
    first = jnp.arange(samples - 1) == 0
    on = (drawn[:, None] & (~line[:, None] | first[None])).reshape(-1)
    order = jnp.argsort(~on, stable=True)
    a, b, on = a.reshape(-1, 2)[order], b.reshape(-1, 2)[order], on[order]
    park = jnp.where(on[:, None], 0.0, _FAR)
    return a + park, b + park, on.sum()


@functools.partial(jax.jit, static_argnames=("size", "samples", "chunk"))
def rasterise(segments: jax.Array, kinds: jax.Array, mask: jax.Array | None = None, *, size: int = 64,
              width: float = 3.0, samples: int = 16, chunk: int = 128) -> jax.Array:
    """Renders segments to a coverage image.

    Args:
        segments: (S, 4, 2) points (start, control 1, control 2, end) in grid units [0, GRID].
        kinds: (S,) ints, CMD_M / CMD_L / CMD_C; M segments draw nothing.
        mask: (S,) bool, False for padding rows (default: all True).
        size: the image side in pixels (static).
        width: the stroke width in pixels (may be traced).
        samples: points per C segment, >= 2 (static).
        chunk: pieces per loop step (static; memory is a (size, size, chunk) float32 array per step).
    Returns:
        (size, size) float32 coverage in [0, 1], rows = y, columns = x.

    The loop runs over the drawn pieces only (their number is traced), so padding, M rows and the unused
    samples of L rows cost nothing when called unbatched (under vmap it runs to the batch's largest count).
    """
    if samples < 2 or chunk < 1 or size < 1:
        raise ValueError(f"rasterise needs samples >= 2, chunk >= 1 and size >= 1, got {samples}, {chunk}, {size}")
    segments = jnp.asarray(segments, jnp.float32).reshape(-1, 4, 2)
    kinds = jnp.asarray(kinds).reshape(-1)
    n = segments.shape[0]
    mask = jnp.ones(n, bool) if mask is None else jnp.asarray(mask, bool).reshape(-1)
    a, b, count = _pieces(segments * (size / GRID), kinds, mask & (kinds != CMD_M), samples)
    pad = (-a.shape[0]) % chunk or (chunk if a.shape[0] == 0 else 0)
    a, b = jnp.pad(a, ((0, pad), (0, 0)), constant_values=_FAR), jnp.pad(b, ((0, pad), (0, 0)), constant_values=_FAR)
    centre = jnp.arange(size, dtype=jnp.float32) + 0.5                        # pixel centres along x and y

    def step(i, best):
        ai = jax.lax.dynamic_slice_in_dim(a, i * chunk, chunk)               # (K, 2)
        bi = jax.lax.dynamic_slice_in_dim(b, i * chunk, chunk)
        dx, dy = bi[:, 0] - ai[:, 0], bi[:, 1] - ai[:, 1]
        inv = 1.0 / jnp.maximum(dx * dx + dy * dy, 1e-12)
        ux, uy = centre[:, None] - ai[:, 0], centre[:, None] - ai[:, 1]     # (W, K), (H, K)
        t = jnp.clip(((ux * dx)[None] + (uy * dy)[:, None]) * inv, 0.0, 1.0)  # (H, W, K)
        ex, ey = ux[None] - t * dx, uy[:, None] - t * dy
        return jnp.minimum(best, jnp.min(ex * ex + ey * ey, axis=-1))

    steps = (count + chunk - 1) // chunk
    best = jax.lax.fori_loop(0, steps, step, jnp.full((size, size), jnp.inf, jnp.float32))
    radius = jnp.asarray(width, jnp.float32) / 2 + 0.5
    return jnp.clip(radius - jnp.sqrt(best), 0.0, 1.0)


def _rows_segments(rows: jax.Array) -> tuple[jax.Array, jax.Array]:
    """(R, 9) rows -> (segments (R, 4, 2) float32, kinds (R,) int32), control points of M/L rows ignored."""
    rows = jnp.asarray(rows)
    kinds = rows[:, 0].astype(jnp.int32)
    return rows[:, 1:].astype(jnp.float32).reshape(-1, 4, 2), kinds


def rasterise_rows(rows, mask=None, **kwargs) -> jax.Array:
    """`rasterise` of (R, 9) rows (jit- and vmap-able); kwargs as for `rasterise`."""
    segments, kinds = _rows_segments(rows)
    return rasterise(segments, kinds, mask, **kwargs)


@functools.partial(jax.jit, static_argnames=("size", "samples"))
def _render(rows, mask, width, *, size: int, samples: int):
    fn = functools.partial(rasterise_rows, size=size, width=width, samples=samples)
    return jax.lax.map(lambda x: fn(*x), (rows, mask))


def rasterise_batch(rows_list: Sequence[np.ndarray], *, size: int = 64, width: float = 3.0,
                    samples: int = 16, chunk: int = 64) -> np.ndarray:
    """(B, size, size) images of B variable-length (R_i, 9) row arrays (empty ones give blank images),
    rendered `chunk` at a time, one icon after another by `lax.map` (each skipping its own padding;
    `jax.vmap(rasterise_rows)` works too). Rows are padded to a power of two of at least 32 and the last
    chunk with blank icons, so one compiled program serves each row bucket."""
    rows_list = [np.asarray(r).reshape(-1, ROW) for r in rows_list]
    longest = max([len(r) for r in rows_list] + [32])
    batch = pad_batch(rows_list, multiple=1, length=1 << (longest - 1).bit_length())
    mask = np.arange(batch["rows"].shape[1])[None, :] < batch["length"][:, None]
    out = []
    for i in range(0, len(rows_list), chunk):
        rows, valid = batch["rows"][i:i + chunk], mask[i:i + chunk]
        pad = chunk - len(rows)
        rows = np.concatenate([rows, np.zeros((pad, *rows.shape[1:]), rows.dtype)])
        valid = np.concatenate([valid, np.zeros((pad, valid.shape[1]), bool)])
        images = _render(jnp.asarray(rows), jnp.asarray(valid), jnp.float32(width), size=size, samples=samples)
        out.append(np.asarray(images)[:chunk - pad])
    return np.concatenate(out) if out else np.zeros((0, size, size), np.float32)


def iou(a: jax.Array, b: jax.Array, threshold: float = 0.5) -> jax.Array:
    """Intersection over union of the images binarised at `coverage >= threshold` (a scalar float32
    array; 1.0 when both are empty). Works on (..., H, W) batches, reducing the last two axes."""
    a, b = jnp.asarray(a) >= threshold, jnp.asarray(b) >= threshold
    inter = jnp.sum(a & b, axis=(-2, -1))
    union = jnp.sum(a | b, axis=(-2, -1))
    return jnp.where(union == 0, 1.0, inter / jnp.maximum(union, 1)).astype(jnp.float32)


def soft_iou(a: jax.Array, b: jax.Array) -> jax.Array:
    """sum(min(a, b)) / sum(max(a, b)) over the last two axes (1.0 when both are empty)."""
    a, b = jnp.asarray(a, jnp.float32), jnp.asarray(b, jnp.float32)
    hi = jnp.sum(jnp.maximum(a, b), axis=(-2, -1))
    return jnp.where(hi == 0, 1.0, jnp.sum(jnp.minimum(a, b), axis=(-2, -1)) / jnp.where(hi == 0, 1.0, hi))


__all__ = ["iou", "rasterise", "rasterise_batch", "rasterise_rows", "soft_iou"]
