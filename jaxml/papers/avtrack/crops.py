"""Square crops around a box, as OSTrack and AVTrack take them, and the maps between crop and frame.

Boxes are `[x, y, w, h]` in frame pixels (top-left corner, width, height), the convention of the
UAV benchmarks' ground truth. A crop around `box` with context `factor` is the square of side
`side = ceil(sqrt(w * h) * factor)` pixels centred on the box centre, resized to `out_size` pixels:

    crop, t = sample_target(frame, box, factor=4.0, out_size=64)   # crop float32 [64, 64, 3] in [0, 1]
    box_in_crop = t.frame_to_crop(box)                              # same box, crop pixels
    back = t.crop_to_frame(box_in_crop)                             # == box

Degenerate inputs (documented behaviour, tested in tests/papers/avtrack):
  * Zero-size or negative-size boxes: `w` and `h` are raised to `MIN_SIZE` (1 px) before the crop's
    side is computed, so a degenerate box gives a small crop, never a division by zero. Non-finite
    boxes raise ValueError.
  * Boxes partly or wholly outside the frame, and frames smaller than the crop: the crop is taken
    as if the frame were padded with black (`pad='zero'`, as the release's `sample_target`,
    `cv.copyMakeBorder(..., cv.BORDER_CONSTANT)` with value 0), or with the frame's mean colour
    (`pad='mean'`, ours before), so the output is always `out_size x out_size` and the maps stay
    exact affine maps.
"""

from __future__ import annotations

import dataclasses
import math

import cv2
import numpy as np

MIN_SIZE = 1.0


def check_box(box, where: str = "box") -> np.ndarray:
    """`box` as float64 [4] = (x, y, w, h); ValueError unless it has 4 finite numbers."""
    b = np.asarray(box, dtype=np.float64)
    if b.shape != (4,):
        raise ValueError(f"{where}: expected a box [x, y, w, h], got shape {b.shape}")
    if not np.all(np.isfinite(b)):
        raise ValueError(f"{where}: box {b.tolist()} has a non-finite value")
    return b


def check_frame(frame) -> np.ndarray:
    f = np.asarray(frame)
    if f.ndim != 3 or f.shape[-1] != 3 or f.shape[0] < 1 or f.shape[1] < 1:
        raise ValueError(f"expected a frame [height, width, 3], got shape {f.shape}")
    return f


@dataclasses.dataclass(frozen=True)
class CropTransform:
    """Frame pixel p maps to crop pixel (p - origin) * scale; `side` is the crop's side in frame pixels."""

    origin: tuple[float, float]
    scale: float
    side: float

    def frame_to_crop(self, box) -> np.ndarray:
        b = np.asarray(box, dtype=np.float64)
        x0, y0 = self.origin
        return np.stack([(b[..., 0] - x0) * self.scale, (b[..., 1] - y0) * self.scale,
                         b[..., 2] * self.scale, b[..., 3] * self.scale], axis=-1)

    def crop_to_frame(self, box) -> np.ndarray:
        b = np.asarray(box, dtype=np.float64)
        x0, y0 = self.origin
        return np.stack([b[..., 0] / self.scale + x0, b[..., 1] / self.scale + y0,
                         b[..., 2] / self.scale, b[..., 3] / self.scale], axis=-1)


def crop_side(box, factor: float) -> float:
    """Side in frame pixels of the square crop around `box` (w, h raised to MIN_SIZE)."""
    b = check_box(box)
    w, h = max(b[2], MIN_SIZE), max(b[3], MIN_SIZE)
    return float(math.ceil(math.sqrt(w * h) * factor))


PADS = ("zero", "mean")


def sample_target(frame, box, factor: float, out_size: int, *, center=None,
                  pad: str = "zero") -> tuple[np.ndarray, CropTransform]:
    """Crops the square of side `crop_side(box, factor)` centred on `box` (or on `center`, (cx, cy)).

    Args:
      frame: uint8 or float [H, W, 3] (uint8 is scaled to [0, 1]).
      box: [x, y, w, h] in frame pixels.
      factor: context factor (template 2.0, search 4.0 in AVTrack).
      out_size: side of the output crop in pixels.
      center: optional crop centre (cx, cy) in frame pixels instead of the box centre (jittered
        search crops in training).
      pad: the colour outside the frame: 'zero' (black, as released) or 'mean' (the frame's mean).
    Returns:
      crop float32 [out_size, out_size, 3] in [0, 1], and the CropTransform frame <-> crop.
    """
    f = check_frame(frame)
    b = check_box(box)
    if pad not in PADS:
        raise ValueError(f"sample_target: pad={pad!r}; accepted {PADS}")
    if factor <= 0 or out_size < 1:
        raise ValueError(f"sample_target: factor must be > 0 and out_size >= 1, got {factor}, {out_size}")
    side = crop_side(b, factor)
    if center is None:
        cx, cy = b[0] + b[2] / 2, b[1] + b[3] / 2
    else:
        cx, cy = (float(v) for v in center)
    x0, y0 = cx - side / 2, cy - side / 2
    scale = out_size / side
    img = f.astype(np.float32) / 255.0 if f.dtype == np.uint8 else f.astype(np.float32)
    border = cv2.mean(img)[:3] if pad == "mean" else (0.0, 0.0, 0.0)   # cv2.mean: 2 us; numpy's took 300
    # Affine map frame -> crop; pixel centres follow the half-pixel convention of cv2.
    m = np.array([[scale, 0.0, -x0 * scale + 0.5 * scale - 0.5],
                  [0.0, scale, -y0 * scale + 0.5 * scale - 0.5]], dtype=np.float64)
    crop = cv2.warpAffine(img, m, (out_size, out_size), flags=cv2.INTER_LINEAR,
                          borderMode=cv2.BORDER_CONSTANT, borderValue=tuple(float(v) for v in border))
    return crop.astype(np.float32), CropTransform(origin=(float(x0), float(y0)), scale=float(scale), side=side)


def clip_box(box, frame_hw: tuple[int, int], min_size: float = 4.0) -> np.ndarray:
    """Keeps a predicted box usable: its centre inside the frame and w, h in [min_size, frame size]."""
    b = check_box(box)
    h, w = frame_hw
    bw = float(np.clip(b[2], min_size, max(w, min_size)))
    bh = float(np.clip(b[3], min_size, max(h, min_size)))
    cx = float(np.clip(b[0] + b[2] / 2, 0, w))
    cy = float(np.clip(b[1] + b[3] / 2, 0, h))
    return np.array([cx - bw / 2, cy - bh / 2, bw, bh])
