"""The OSTrack / AVTrack test-time loop: template once, then one search crop and one forward pass
per frame, a Hann window on the score map, and the centre-head box decode.

    tracker = Tracker(predict, template_size=128, search_size=256)
    out = run_sequence(tracker, frames, init_box)      # out['boxes'] [T, 4] in frame pixels

`predict(template [1, Tt, Tt, 3], search [1, S, S, 3]) -> dict` is the model: any callable (a
jit-ed Flax apply, a fake in tests). Inputs are float32 crops in [0, 1] from `crops.sample_target`
(normalization, e.g. ImageNet mean/std, is the model's job). It returns

  score  [1, F, F]     centre probabilities (non-negative; a sigmoid output),
  size   [1, F, F, 2]  (w, h) as fractions of the search crop's side,
  offset [1, F, F, 2]  (dx, dy) sub-cell offset of the centre, in cells (in [0, 1]),

and any other keys (e.g. AVTrack's 'active' [1, n_blocks] block-activation gates), which the
tracker keeps per frame as `last_extras` and `run_sequence` stacks.

Decode (OSTrack `CenterPredictor.cal_bbox`): the argmax cell (row r, col c) of the windowed score
gives the centre `((c + dx) / F, (r + dy) / F) * S` and the size `size[r, c] * S` in crop pixels;
the crop transform maps the box back to the frame, and `crops.clip_box` keeps it usable.

Degenerate inputs (documented behaviour, tested in tests/papers/avtrack/avtrack_tracker_test.py):
  * Init box outside the frame or of zero size: accepted (crops pads with the frame's mean colour
    and raises w, h to 1 px). The first prediction is clipped, so from frame 1 on the box has its
    centre inside the frame and w, h >= `min_box_size`. Non-finite init boxes raise ValueError.
  * Frames smaller than the crop: crops pads; nothing special here.
  * Predictions that drift out of the frame or collapse: clipped with `crops.clip_box` (centre
    kept inside the frame, w and h in [min_box_size, frame size]), so the next search crop is
    still around something in the frame. OSTrack clips too (with a 10 px margin).
  * Frames that are not [H, W, 3], a `frames` array that is not [T, H, W, 3], and model outputs of
    the wrong shape raise ValueError naming the shape.
"""

from __future__ import annotations

import time
from typing import Callable, Mapping

import numpy as np

from jaxml.papers.avtrack import crops

_MAP_KEYS = ("score", "size", "offset")


def hann1d(n: int) -> np.ndarray:
    """Centred cosine window of length n: `0.5 * (1 - cos(2 pi k / (n + 1)))`, k = 1..n.

    Equals OSTrack's `hann1d(n, centered=True)` and `np.hanning(n + 2)[1:-1]`: strictly positive,
    symmetric, peak at the centre.
    """
    if n < 1:
        raise ValueError(f"hann1d: length must be >= 1, got {n}")
    k = np.arange(1, n + 1, dtype=np.float64)
    return 0.5 * (1.0 - np.cos(2.0 * np.pi * k / (n + 1)))


def hann2d(rows: int, cols: int | None = None) -> np.ndarray:
    """[rows, cols] outer product of centred cosine windows (OSTrack's `hann2d(..., centered=True)`)."""
    cols = rows if cols is None else cols
    return np.outer(hann1d(rows), hann1d(cols))


def decode_box(score, size, offset, search_size: int, window=None) -> np.ndarray:
    """Box in search-crop pixels from centre-head maps.

    Args:
      score: [F, F] centre scores (non-negative).
      size: [F, F, 2] (w, h) as fractions of the crop side.
      offset: [F, F, 2] (dx, dy) sub-cell offsets in cells.
      search_size: crop side S in pixels.
      window: optional [F, F] multiplied into `score` before the argmax (ties go to the first cell
        in row-major order, as torch/numpy argmax).
    Returns:
      float64 [4] = [x, y, w, h] in crop pixels.
    """
    s = np.asarray(score, dtype=np.float64)
    if s.ndim != 2 or s.shape[0] != s.shape[1]:
        raise ValueError(f"decode_box: score must be [F, F], got shape {s.shape}")
    f = s.shape[0]
    sz, off = np.asarray(size, dtype=np.float64), np.asarray(offset, dtype=np.float64)
    for name, a in (("size", sz), ("offset", off)):
        if a.shape != (f, f, 2):
            raise ValueError(f"decode_box: {name} must be [{f}, {f}, 2] to match score {s.shape}, got {a.shape}")
    if window is not None:
        w = np.asarray(window, dtype=np.float64)
        if w.shape != s.shape:
            raise ValueError(f"decode_box: window has shape {w.shape}, score has {s.shape}")
        s = s * w
    r, c = np.unravel_index(int(np.argmax(s)), s.shape)
    cx = (c + off[r, c, 0]) / f * search_size
    cy = (r + off[r, c, 1]) / f * search_size
    bw, bh = sz[r, c, 0] * search_size, sz[r, c, 1] * search_size
    return np.array([cx - bw / 2, cy - bh / 2, bw, bh])


def _check_frame(frame, where: str) -> np.ndarray:
    f = np.asarray(frame)
    if f.ndim != 3 or f.shape[-1] != 3 or f.shape[0] < 1 or f.shape[1] < 1:
        raise ValueError(f"{where}: expected a frame [height, width, 3], got shape {f.shape}")
    if not (f.dtype == np.uint8 or np.issubdtype(f.dtype, np.floating)):
        raise TypeError(f"{where}: expected a uint8 (0..255) or float (0..1) frame, got dtype {f.dtype}")
    return f


class Tracker:
    """Single-object tracker around a template/search `predict` function (see the module docstring).

    Args:
      predict: `(template [1, Tt, Tt, 3], search [1, S, S, 3]) -> dict(score, size, offset, ...)`.
      template_size: template crop side Tt in pixels.
      search_size: search crop side S in pixels.
      template_factor: template context factor (crop side = factor * sqrt(w h)).
      search_factor: search context factor.
      hann_window: multiply the score map by a centred Hann window before the argmax (a motion
        prior: prefer peaks near the previous position), as OSTrack and AVTrack do.
      min_box_size: smallest w and h of a returned box, in frame pixels (`crops.clip_box`).
    """

    def __init__(self, predict: Callable[..., Mapping], template_size: int = 32, search_size: int = 64,
                 template_factor: float = 2.0, search_factor: float = 4.0, hann_window: bool = True,
                 min_box_size: float = 4.0):
        if not callable(predict):
            raise TypeError(f"Tracker: predict must be callable, got {type(predict).__name__}")
        for name, v in (("template_size", template_size), ("search_size", search_size)):
            if int(v) != v or v < 1:
                raise ValueError(f"Tracker: {name} must be a positive integer, got {v}")
        for name, v in (("template_factor", template_factor), ("search_factor", search_factor),
                        ("min_box_size", min_box_size)):
            if not v > 0:
                raise ValueError(f"Tracker: {name} must be > 0, got {v}")
        self.predict = predict
        self.template_size, self.search_size = int(template_size), int(search_size)
        self.template_factor, self.search_factor = float(template_factor), float(search_factor)
        self.hann_window = bool(hann_window)
        self.min_box_size = float(min_box_size)
        self.template: np.ndarray | None = None  # float32 [1, Tt, Tt, 3]
        self.state: np.ndarray | None = None  # float64 [4], last box in frame pixels
        self.last_extras: dict[str, np.ndarray] = {}
        self._windows: dict[int, np.ndarray] = {}

    def init(self, frame, box) -> None:
        """Crops the template around `box` ([x, y, w, h], frame pixels) in `frame` [H, W, 3]."""
        f = _check_frame(frame, "Tracker.init")
        b = crops.check_box(box, "Tracker.init")
        crop, _ = crops.sample_target(f, b, self.template_factor, self.template_size)
        self.template = crop[None]
        self.state = b.copy()
        self.last_extras = {}

    def window(self, feat_size: int) -> np.ndarray:
        """The [F, F] Hann window (cached per F)."""
        if feat_size not in self._windows:
            self._windows[feat_size] = hann2d(feat_size)
        return self._windows[feat_size]

    def _outputs(self, out) -> dict[str, np.ndarray]:
        if not isinstance(out, Mapping):
            raise TypeError(f"Tracker: predict must return a dict, got {type(out).__name__}")
        missing = [k for k in _MAP_KEYS if k not in out]
        if missing:
            raise ValueError(f"Tracker: predict output lacks {missing}; it has {sorted(out)}")
        # np.asarray blocks on jax arrays, so the timing of track() includes the device work.
        maps = {k: np.asarray(v) for k, v in out.items()}
        score = maps["score"]
        if score.ndim != 3 or score.shape[0] != 1 or score.shape[1] != score.shape[2]:
            raise ValueError(f"Tracker: predict 'score' must be [1, F, F], got shape {score.shape}")
        f = score.shape[1]
        for k in ("size", "offset"):
            if maps[k].shape != (1, f, f, 2):
                raise ValueError(f"Tracker: predict '{k}' must be [1, {f}, {f}, 2], got shape {maps[k].shape}")
        if not np.all(np.isfinite(score)) or score.min() < 0:
            raise ValueError("Tracker: predict 'score' must be finite and non-negative (probabilities, not logits)")
        return maps

    def track(self, frame) -> np.ndarray:
        """Box [x, y, w, h] (float64, frame pixels, clipped to the frame) of the target in `frame`."""
        if self.template is None:
            raise RuntimeError("Tracker.track called before Tracker.init")
        f = _check_frame(frame, "Tracker.track")
        search, transform = crops.sample_target(f, self.state, self.search_factor, self.search_size)
        maps = self._outputs(self.predict(self.template, search[None]))
        score = maps["score"][0]
        window = self.window(score.shape[0]) if self.hann_window else None
        box_crop = decode_box(score, maps["size"][0], maps["offset"][0], self.search_size, window)
        box = transform.crop_to_frame(box_crop)
        if not np.all(np.isfinite(box)):
            raise ValueError(f"Tracker: decoded box {box.tolist()} is not finite (check the size/offset maps)")
        self.state = crops.clip_box(box, f.shape[:2], min_size=self.min_box_size)
        self.last_extras = {k: v for k, v in maps.items() if k not in _MAP_KEYS}
        return self.state.copy()

    def warmup(self) -> None:
        """Calls `predict` once on zero crops (compiles a jit-ed model before timing); no state change."""
        t = np.zeros((1, self.template_size, self.template_size, 3), np.float32)
        s = np.zeros((1, self.search_size, self.search_size, 3), np.float32)
        self._outputs(self.predict(t, s))


def run_sequence(tracker: Tracker, frames, init_box, progress: Callable[[int, int], None] | None = None,
                 warmup: bool = False) -> dict:
    """Tracks one sequence: `init` on frame 0 with `init_box`, `track` on frames 1..T-1.

    Args:
      tracker: a Tracker.
      frames: [T, H, W, 3] array, or a sequence of T frames [H, W, 3] (frames may differ in size).
      init_box: [x, y, w, h] in frame 0's pixels.
      progress: optional `progress(done, total)` called after each frame (done = 1..T).
      warmup: call `tracker.warmup()` first, so a jit-ed model's compilation is not timed.
    Returns:
      dict with
        boxes: float64 [T, 4], frame pixels; boxes[0] is `init_box`;
        seconds: float64 [T-1], wall time of each `track` call (crop + predict + decode);
        extras: dict key -> [T-1, ...] stacked extra outputs of predict (the leading batch axis
          of size 1 dropped), e.g. 'active' [T-1, n_blocks].
    """
    if isinstance(frames, np.ndarray) and frames.ndim != 4:
        raise ValueError(f"run_sequence: expected frames [T, height, width, 3], got shape {frames.shape}")
    n = len(frames)
    if n < 1:
        raise ValueError("run_sequence: no frames")
    b0 = crops.check_box(init_box, "run_sequence: init_box")
    if warmup:
        tracker.warmup()
    tracker.init(frames[0], b0)
    boxes = np.zeros((n, 4), np.float64)
    boxes[0] = b0
    seconds = np.zeros((n - 1,), np.float64)
    extras: dict[str, list] = {}
    if progress is not None:
        progress(1, n)
    for i in range(1, n):
        t0 = time.perf_counter()
        boxes[i] = tracker.track(frames[i])
        seconds[i - 1] = time.perf_counter() - t0
        for k, v in tracker.last_extras.items():
            extras.setdefault(k, []).append(v[0] if v.ndim >= 1 and v.shape[0] == 1 else v)
        if progress is not None:
            progress(i + 1, n)
    stacked = {}
    for k, vs in extras.items():
        if len(vs) != n - 1:
            raise ValueError(f"run_sequence: predict returned '{k}' on {len(vs)} of {n - 1} frames")
        stacked[k] = np.stack(vs)
    return dict(boxes=boxes, seconds=seconds, extras=stacked)
