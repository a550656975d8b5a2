"""Tracking sequences: real objects pasted on real video along known, smooth trajectories.

    seqs = sequences.make_split("test", n_sequences=4, length=120, view=1.0, seed=0)
    seqs[0]["frames"]   # uint8 [120, 144, 192, 3]   real frames of a test clip with the object pasted
    seqs[0]["boxes"]    # float32 [120, 4]           (x, y, w, h) of the object, frame pixels
    seqs[0]["visible"]  # float32 [120]              fraction of the object in the frame and not occluded

The objects are real images too: Fashion-MNIST items (tinted, alpha from intensity; the train split
for training sequences, the test split for test sequences) and the OpenCV sample photos (fruit,
butterfly, fish, logos, a box; masked by thresholds; split between train and test by `PHOTOS`).
The backgrounds are consecutive frames of one clip of `video.TRAIN_CLIPS` or `video.TEST_CLIPS`.

What moves, per frame t (`render_sequence`):
  * centre: a sum of three low-frequency sinusoids per axis (speeds up to ~4 px/frame), fitted
    into the frame so the whole object stays inside;
  * size: sqrt(w * h) = `size` (10-40 px) times a smooth scale exp(scale_change * s(t));
  * in-plane rotation up to `rotation` degrees;
  * viewpoint: an out-of-plane tilt of the object's plane by up to `view` * 60 degrees about a
    slowly turning in-plane axis, seen through a pinhole camera (focal 1.5 x the object size): at
    view=1 the corners move by up to ~33% of the side. `view` scales only the tilt angle, and every
    random draw is made whether or not it is used, so splits that differ in `view` show the same
    objects on the same backgrounds along the same paths;
  * optional occluder: a rectangle cut from another real frame, crossing the object in 6-14 frames;
  * optional distractor: another object of the same family circling nearby, drawn behind the target.

The box is the axis-aligned bounding box of the warped object (the exact image of its alpha > 0
pixels under the frame's homography), clipped to the frame.
"""

from __future__ import annotations

import dataclasses
import math

import cv2
import numpy as np

from jaxml.data import assets, fashion_mnist
from jaxml.papers.avtrack import video

FAMILIES = ("fashion", "photo")
SPLITS = ("train", "test")
# Photos of the OpenCV samples: which split uses which object.
PHOTOS = {"train": ("box", "apple", "butterfly", "LinuxLogo", "opencv-logo"),
          "test": ("orange", "HappyFish", "WindowsLogo")}
_PHOTO_FILES = {"box": "box.png", "apple": "apple.jpg", "orange": "orange.jpg", "butterfly": "butterfly.jpg",
                "HappyFish": "HappyFish.jpg", "LinuxLogo": "LinuxLogo.jpg", "WindowsLogo": "WindowsLogo.jpg",
                "opencv-logo": "opencv-logo.png"}
MAX_TILT_DEG = 60.0          # tilt of the object's plane at view = 1
FOCAL_FACTOR = 1.5           # pinhole focal length in units of the object's size
PHOTO_FRACTION = 0.4         # share of make_split's sequences that track a photo (the rest: Fashion-MNIST)
OCCLUSION_FRACTION = 0.35
DISTRACTOR_FRACTION = 0.35
_PHOTO_MAX_SIDE = 96


@dataclasses.dataclass(frozen=True)
class Sprite:
    """A real object cut out of an image.

    Attributes:
      name: what it is ('photo/apple', 'fashion/test/123/Coat').
      family: 'fashion' or 'photo' (a distractor is another sprite of the same family).
      rgb: uint8 [h, w, 3] colours.
      alpha: float32 [h, w] in [0, 1]; 0 outside the object. The image is cropped to the alpha > 0 pixels.
    """

    name: str
    family: str
    rgb: np.ndarray
    alpha: np.ndarray

    def __post_init__(self):
        if self.rgb.ndim != 3 or self.rgb.shape[2] != 3 or self.rgb.dtype != np.uint8:
            raise ValueError(f"Sprite {self.name!r}: rgb must be uint8 [h, w, 3], got {self.rgb.dtype} "
                             f"{self.rgb.shape}")
        if self.alpha.shape != self.rgb.shape[:2]:
            raise ValueError(f"Sprite {self.name!r}: alpha {self.alpha.shape} does not match rgb {self.rgb.shape}")
        if not np.any(self.alpha > 0):
            raise ValueError(f"Sprite {self.name!r}: alpha is zero everywhere")


def _crop_to_alpha(name: str, family: str, rgb: np.ndarray, alpha: np.ndarray, max_side: int | None = None) -> Sprite:
    alpha = np.where(alpha >= 0.02, alpha, 0.0).astype(np.float32)
    ys, xs = np.nonzero(alpha)
    rgb, alpha = rgb[ys.min():ys.max() + 1, xs.min():xs.max() + 1], alpha[ys.min():ys.max() + 1, xs.min():xs.max() + 1]
    if max_side is not None and max(alpha.shape) > max_side:
        f = max_side / max(alpha.shape)
        size = (max(1, round(alpha.shape[1] * f)), max(1, round(alpha.shape[0] * f)))
        rgb = cv2.resize(rgb, size, interpolation=cv2.INTER_AREA)
        alpha = cv2.resize(alpha, size, interpolation=cv2.INTER_AREA)
        return _crop_to_alpha(name, family, rgb, alpha)
    return Sprite(name, family, np.ascontiguousarray(rgb), np.ascontiguousarray(alpha))


def _fill_holes(mask: np.ndarray) -> np.ndarray:
    """uint8 0/1 mask with the background regions not connected to the border filled."""
    h, w = mask.shape
    padded = np.zeros((h + 2, w + 2), np.uint8)
    padded[1:-1, 1:-1] = mask
    flood = padded.copy()
    cv2.floodFill(flood, np.zeros((h + 4, w + 4), np.uint8), (0, 0), 1)
    return (padded | (1 - flood))[1:-1, 1:-1]


def _components(mask: np.ndarray, keep_fraction: float) -> np.ndarray:
    """The connected components of at least `keep_fraction` of the largest one's area."""
    n, labels, stats, _ = cv2.connectedComponentsWithStats(mask.astype(np.uint8), connectivity=8)
    if n <= 1:
        return mask.astype(np.uint8)
    areas = stats[1:, cv2.CC_STAT_AREA]
    keep = 1 + np.nonzero(areas >= keep_fraction * areas.max())[0]
    return np.isin(labels, keep).astype(np.uint8)


def _photo_mask(name: str, bgr: np.ndarray) -> np.ndarray:
    """A 0/1 mask of the object in an OpenCV sample photo (a threshold chosen per photo, cleaned up)."""
    hsv = cv2.cvtColor(bgr, cv2.COLOR_BGR2HSV).astype(np.int32)
    hue, sat = hsv[..., 0], hsv[..., 1]
    b, g, r = (bgr[..., i].astype(np.int32) for i in range(3))
    kernel = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (5, 5))
    convex = False
    keep = 1.0
    if name == "box":            # the box fills the picture: all of it
        return np.ones(bgr.shape[:2], np.uint8)
    if name == "apple":
        mask, convex = (sat > 110) & ((hue < 15) | (hue > 165)), True
    elif name == "orange":       # half in shadow, which no colour threshold separates: an ellipse
        h, w = bgr.shape[:2]
        centre, axes = (round(w * 262 / 512), round(h * 258 / 512)), (round(w * 190 / 512), round(h * 210 / 512))
        return cv2.ellipse(np.zeros((h, w), np.uint8), centre, axes, 0, 0, 360, 1, -1)
    elif name == "butterfly":    # black wings (white spots inside) on bright leaves
        mask = cv2.morphologyEx((hsv[..., 2] < 90).astype(np.uint8), cv2.MORPH_CLOSE,
                                cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (15, 15)))
    elif name == "HappyFish":    # a drawing on white
        mask = np.minimum(np.minimum(b, g), r) < 225
    elif name == "LinuxLogo":    # white letters on black; keep a dark rim around the strokes
        mask = cv2.dilate((np.maximum(np.maximum(b, g), r) > 100).astype(np.uint8), kernel) > 0
        keep = 0.05
    elif name == "WindowsLogo":  # the green tile on a blue backdrop
        mask = ~((b > g + 10) & (b > r))
    else:
        raise ValueError(f"no mask rule for photo {name!r}")
    mask = cv2.morphologyEx(mask.astype(np.uint8), cv2.MORPH_OPEN, kernel)
    mask = cv2.morphologyEx(mask, cv2.MORPH_CLOSE, kernel)
    mask = _fill_holes(_components(mask, keep))
    if convex:
        hull = cv2.convexHull(cv2.findNonZero(mask))
        mask = cv2.fillConvexPoly(np.zeros_like(mask), hull, 1)
    return mask


_PHOTO_CACHE: dict[str, Sprite] = {}


def photo_sprite(name: str) -> Sprite:
    """The object of OpenCV sample photo `name` (a key of `_PHOTO_FILES`), longest side <= 96 px."""
    if name not in _PHOTO_FILES:
        raise ValueError(f"unknown photo {name!r}; accepted {sorted(_PHOTO_FILES)}")
    if name not in _PHOTO_CACHE:
        path = assets.path("opencv-samples", "usr/share/doc/opencv-doc/examples/data", _PHOTO_FILES[name])
        image = cv2.imread(str(path), cv2.IMREAD_UNCHANGED)
        if image is None:
            raise ValueError(f"photo {name!r}: cv2 cannot read {path}")
        if image.ndim == 2:
            image = cv2.cvtColor(image, cv2.COLOR_GRAY2BGR)
        if image.shape[2] == 4:  # the logo has its own alpha channel
            alpha = image[..., 3].astype(np.float32) / 255.0
            bgr = image[..., :3]
        else:
            bgr = image
            mask = _photo_mask(name, bgr)
            alpha = cv2.GaussianBlur(mask.astype(np.float32), (3, 3), 0)   # soft edges
            alpha = np.where(mask > 0, np.maximum(alpha, 0.5), alpha)
        _PHOTO_CACHE[name] = _crop_to_alpha(f"photo/{name}", "photo", np.ascontiguousarray(bgr[..., ::-1]), alpha,
                                            _PHOTO_MAX_SIDE)
    return _PHOTO_CACHE[name]


_FASHION: dict[str, tuple[np.ndarray, np.ndarray]] = {}


def _fashion_raw(split: str) -> tuple[np.ndarray, np.ndarray]:
    if split not in _FASHION:
        _FASHION[split] = fashion_mnist.read_raw(split)
    return _FASHION[split]


def fashion_sprite(image: np.ndarray, rng: np.random.Generator, name: str = "fashion") -> Sprite:
    """A Fashion-MNIST item uint8 [28, 28] as a sprite: a random tint (HSV hue uniform, saturation
    0.4-1, value 0.6-1) shaded by intensity, alpha = intensity / 48 clipped to 1, holes filled."""
    image = np.asarray(image)
    if image.ndim != 2 or image.dtype != np.uint8:
        raise ValueError(f"fashion_sprite: expected a uint8 [h, w] image, got {image.dtype} {image.shape}")
    hue, sat, val = rng.uniform(0, 180), rng.uniform(0.4, 1.0) * 255, rng.uniform(0.6, 1.0) * 255
    tint = cv2.cvtColor(np.array([[[hue, sat, val]]], np.float32).astype(np.uint8), cv2.COLOR_HSV2RGB)[0, 0]
    intensity = image.astype(np.float32) / 255.0
    mask = _fill_holes((image > 8).astype(np.uint8))
    if not mask.any():
        raise ValueError(f"fashion_sprite {name!r}: the item is blank")
    alpha = np.clip(image.astype(np.float32) / 48.0, 0.0, 1.0)
    alpha = np.where((mask > 0) & (image <= 8), 1.0, alpha)  # dark inside the outline: still the object
    rgb = np.clip(tint[None, None, :] * (0.3 + 0.7 * intensity[..., None]), 0, 255).astype(np.uint8)
    return _crop_to_alpha(name, "fashion", rgb, alpha)


def random_sprite(split: str, family: str, rng: np.random.Generator, exclude: str | None = None) -> Sprite:
    """A random object of `family` from the objects reserved for `split` (never the one named `exclude`)."""
    _check_split(split)
    if family == "photo":
        names = [n for n in PHOTOS[split] if f"photo/{n}" != exclude]
        return photo_sprite(names[int(rng.integers(len(names)))])
    if family == "fashion":
        images, labels = _fashion_raw(split)
        while True:
            i = int(rng.integers(len(images)))
            name = f"fashion/{split}/{i}/{fashion_mnist.CLASS_NAMES[labels[i]].replace('/', '-')}"
            if name != exclude and (images[i] > 8).sum() >= 20:
                return fashion_sprite(images[i], rng, name)
    raise ValueError(f"family {family!r}; accepted {FAMILIES}")


def _check_split(split: str) -> None:
    if split not in SPLITS:
        raise ValueError(f"split {split!r}; accepted {SPLITS}")


# --- geometry --------------------------------------------------------------------------------------

def _hull_points(alpha: np.ndarray) -> np.ndarray:
    """float64 [K, 2] corners of the convex hull of the alpha > 0 pixels (pixel-edge coordinates)."""
    ys, xs = np.nonzero(alpha > 0)
    pts = np.concatenate([np.stack([xs + dx, ys + dy], -1) for dx in (0, 1) for dy in (0, 1)]).astype(np.float32)
    return cv2.convexHull(pts)[:, 0, :].astype(np.float64)


def _apply_h(h: np.ndarray, pts: np.ndarray) -> np.ndarray:
    q = pts @ h[:, :2].T + h[:, 2]
    return q[:, :2] / q[:, 2:3]


def _sinusoids(t: np.ndarray, amp: np.ndarray, freq: np.ndarray, phase: np.ndarray) -> np.ndarray:
    """sum_k amp_k sin(2 pi freq_k t / 100 + phase_k) for frames t: float64 [T] (freq in cycles per 100 frames)."""
    return (amp[None] * np.sin(2 * np.pi * freq[None] * t[:, None] / 100.0 + phase[None])).sum(-1)


def object_homography(sprite_hw: tuple[int, int], centre, pixel_scale: float, angle_deg: float,
                      tilt_deg: float, tilt_axis_deg: float, size: float) -> np.ndarray:
    """The homography float64 [3, 3] from sprite pixel-edge coordinates to frame pixel-edge coordinates.

    The sprite's centre goes to `centre` (x, y); its pixels are scaled by `pixel_scale`, its plane is
    tilted by `tilt_deg` about the in-plane axis at `tilt_axis_deg` and seen through a pinhole of focal
    FOCAL_FACTOR * `size` (frame pixels), then rotated in the image plane by `angle_deg`.
    """
    h, w = sprite_hw
    corners = np.array([[0, 0], [w, 0], [w, h], [0, h]], np.float64)
    p = (corners - [w / 2, h / 2]) * pixel_scale
    a, phi = math.radians(tilt_axis_deg), math.radians(tilt_deg)
    if phi != 0.0:
        k = np.array([math.cos(a), math.sin(a), 0.0])
        kx = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
        rot = np.eye(3) + math.sin(phi) * kx + (1 - math.cos(phi)) * kx @ kx  # Rodrigues
        p3 = np.concatenate([p, np.zeros((4, 1))], 1) @ rot.T
        focal = max(FOCAL_FACTOR * size, 1.25 * float(np.abs(p3[:, 2]).max()))  # keep every corner in front
        p = p3[:, :2] * (focal / (focal + p3[:, 2:3]))
    c, s = math.cos(math.radians(angle_deg)), math.sin(math.radians(angle_deg))
    p = p @ np.array([[c, s], [-s, c]]) + np.asarray(centre, np.float64)
    return cv2.getPerspectiveTransform(corners.astype(np.float32), p.astype(np.float32)).astype(np.float64)


_TO_CENTRES = np.array([[1, 0, -0.5], [0, 1, -0.5], [0, 0, 1]], np.float64)
_FROM_CENTRES = np.array([[1, 0, 0.5], [0, 1, 0.5], [0, 0, 1]], np.float64)


def _warp_into(frame: np.ndarray, prgb: np.ndarray, alpha: np.ndarray, hom: np.ndarray, hull: np.ndarray,
               cover: np.ndarray | None = None) -> tuple[np.ndarray, float]:
    """Alpha-blends a sprite (premultiplied float rgb, alpha) into `frame` (float32 [H, W, 3], in place)
    with homography `hom` (edge coordinates); returns the object's box (x, y, w, h) clipped to the frame,
    and the fraction of its warped alpha that is inside the frame and where `cover` (float [H, W], 1 =
    occluded) is 0."""
    fh, fw = frame.shape[:2]
    q = _apply_h(hom, hull)
    x0, y0 = q.min(0)
    x1, y1 = q.max(0)
    ix0, iy0 = int(math.floor(x0)) - 1, int(math.floor(y0)) - 1
    ix1, iy1 = int(math.ceil(x1)) + 1, int(math.ceil(y1)) + 1
    box = np.array([min(max(x0, 0), fw), min(max(y0, 0), fh), 0.0, 0.0])
    box[2:] = [min(max(x1, 0), fw) - box[0], min(max(y1, 0), fh) - box[1]]
    pw, ph = ix1 - ix0, iy1 - iy0
    # Patch pixel (centre coords) -> sprite pixel (centre coords).
    shift = np.array([[1, 0, ix0], [0, 1, iy0], [0, 0, 1]], np.float64)
    m = _TO_CENTRES @ np.linalg.inv(hom) @ _FROM_CENTRES @ shift
    flags = cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP
    a = cv2.warpPerspective(alpha, m, (pw, ph), flags=flags, borderMode=cv2.BORDER_CONSTANT, borderValue=0)
    total = float(a.sum())
    cx0, cy0, cx1, cy1 = max(ix0, 0), max(iy0, 0), min(ix1, fw), min(iy1, fh)
    if total <= 0 or cx1 <= cx0 or cy1 <= cy0:
        return box, 0.0
    rgb = cv2.warpPerspective(prgb, m, (pw, ph), flags=flags, borderMode=cv2.BORDER_CONSTANT, borderValue=0)
    sl = (slice(cy0 - iy0, cy1 - iy0), slice(cx0 - ix0, cx1 - ix0))
    a_in, rgb_in = a[sl], rgb[sl]
    region = frame[cy0:cy1, cx0:cx1]
    region *= 1.0 - a_in[..., None]
    region += rgb_in
    seen = a_in if cover is None else a_in * (1.0 - cover[cy0:cy1, cx0:cx1])
    return box, float(seen.sum()) / total


def _background_indices(num_frames: int, start: int, length: int) -> np.ndarray:
    """`length` consecutive frame indices from `start`, bouncing back and forth (ping-pong) at the ends."""
    if num_frames == 1:
        return np.zeros(length, np.int64)
    period = 2 * (num_frames - 1)
    k = (start + np.arange(length)) % period
    return np.where(k < num_frames, k, period - k)


def _check_unit(name: str, value: float) -> float:
    number = isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)
    if not number or not 0.0 <= value <= 1.0:
        raise ValueError(f"{name}={value!r}; accepted a number in [0, 1]")
    return float(value)


def render_sequence(background_frames: np.ndarray, sprite: Sprite, rng: np.random.Generator, *, length: int,
                    view: float, size: float | None = None, rotation: float = 30.0, scale_change: float = 0.25,
                    occlusion: bool = False, occluder_image: np.ndarray | None = None,
                    distractor: Sprite | None = None, start: int | None = None) -> dict:
    """Pastes `sprite` on real frames along a random smooth path.

    Args:
      background_frames: uint8 [N, 144, 192, 3] consecutive frames of one clip; the sequence uses
        frames start, start+1, ... (ping-pong when N < length).
      sprite: the object.
      rng: all randomness; the same draws are made whatever `view`, `occlusion` and `distractor` are.
      length: number of frames T >= 1.
      view: viewpoint strength in [0, 1]: the tilt of the object's plane is up to view * 60 degrees.
      size: sqrt(w * h) of the untilted object at scale 1, in frame pixels (default: log-uniform in [14, 32]).
      rotation: largest in-plane rotation, degrees (0: none).
      scale_change: the scale is exp(scale_change * s(t)) with |s(t)| <= 1 (0: constant size).
      occlusion: whether a patch of `occluder_image` (uint8 [H', W', 3]; default: the last background
        frame, flipped) crosses the object once.
      distractor: another object drawn behind the target, circling it at 1.2-2.5 object sizes.
      start: first background frame (default: random).
    Returns:
      dict(frames uint8 [T, 144, 192, 3], boxes float32 [T, 4] (x, y, w, h) in frame pixels,
           visible float32 [T] (fraction of the object's alpha inside the frame and not occluded),
           homography float64 [T, 3, 3] (sprite pixel-edge coords -> frame pixel-edge coords),
           centre float32 [T, 2], scale float32 [T] (the smooth scale factor), start int).
    """
    bg = np.asarray(background_frames)
    if bg.ndim != 4 or bg.shape[-1] != 3 or bg.dtype != np.uint8 or bg.shape[0] < 1:
        raise ValueError(f"render_sequence: background_frames must be uint8 [N, H, W, 3], got {bg.dtype} {bg.shape}")
    if isinstance(length, bool) or not isinstance(length, (int, np.integer)) or length < 1:
        raise ValueError(f"render_sequence: length={length!r}; accepted an int >= 1")
    view = _check_unit("view", view)
    if not 0.0 <= rotation <= 180.0 or not 0.0 <= scale_change <= 1.0:
        raise ValueError(f"render_sequence: rotation={rotation} must be in [0, 180] degrees and "
                         f"scale_change={scale_change} in [0, 1]")
    if size is not None and not 2.0 <= size <= 100.0:
        raise ValueError(f"render_sequence: size={size}; accepted None or a number of pixels in [2, 100]")
    fh, fw = bg.shape[1:3]
    t = np.arange(length, dtype=np.float64)

    # Every draw happens in this order whatever the options (see the module docstring).
    start_draw = int(rng.integers(bg.shape[0]))
    size_draw = float(np.exp(rng.uniform(np.log(14.0), np.log(32.0))))
    path = [(rng.uniform(lo, hi, 3), rng.uniform(0.25, 1.5, 3), rng.uniform(0, 2 * np.pi, 3), rng.uniform())
            for lo, hi in ((10.0, 40.0), (6.0, 25.0))]
    scale_wave = (np.array([0.6, 0.4]), rng.uniform(0.3, 1.5, 2), rng.uniform(0, 2 * np.pi, 2))
    rot_offset, rot_wave = rng.uniform(-1, 1), (np.array([1.0]), rng.uniform(0.2, 1.0, 1), rng.uniform(0, 2 * np.pi, 1))
    axis0, axis_wave = rng.uniform(0, 360), (np.array([30.0]), rng.uniform(0.1, 0.6, 1), rng.uniform(0, 2 * np.pi, 1))
    tilt_wave = (np.array([1.0]), rng.uniform(0.2, 1.0, 1), rng.uniform(0, 2 * np.pi, 1))
    occ = dict(t_c=rng.uniform(0.2, 0.8), dir=rng.uniform(0, 2 * np.pi), frames=rng.uniform(6, 14),
               wh=rng.uniform(0.8, 1.5, 2), side=rng.uniform(-0.2, 0.2), src=rng.uniform(size=2))
    dis = dict(radius=rng.uniform(1.2, 2.5), psi=rng.uniform(0, 2 * np.pi), omega=rng.uniform(-0.08, 0.08),
               size=rng.uniform(0.8, 1.2), rot=rng.uniform(-1, 1), axis=rng.uniform(0, 360))

    start = start_draw if start is None else int(start)
    if not 0 <= start < bg.shape[0]:
        raise ValueError(f"render_sequence: start={start} outside [0, {bg.shape[0]})")
    size = size_draw if size is None else float(size)
    scale = np.exp(scale_change * _sinusoids(t, *scale_wave))
    angle = rotation * (0.5 * rot_offset + 0.5 * _sinusoids(t, *rot_wave))
    tilt = view * MAX_TILT_DEG * (0.6 + 0.4 * _sinusoids(t, *tilt_wave))
    axis = axis0 + _sinusoids(t, *axis_wave)

    # Pre-shrink the sprite to about its largest on-screen size (warping then never minifies by > ~1.5x).
    target = _resized(sprite, size * math.exp(scale_change) * 1.5)
    sh, sw = target.alpha.shape
    pixel_scale = size / math.sqrt(sh * sw)
    half_extent = 0.5 * math.hypot(sh, sw) * pixel_scale * math.exp(scale_change) * 1.3 + 1.0

    centre = np.zeros((length, 2))
    for d, (amp, freq, phase, u), extent in ((0, path[0], fw), (1, path[1], fh)):
        wave = _sinusoids(t, amp, freq, phase)
        room = max(extent - 2 * min(half_extent, 0.4 * extent), 0.0)   # where the centre may go
        lo, hi = wave.min(), wave.max()
        if hi - lo > room:
            wave = (wave - lo) * (room / (hi - lo)) + lo
        slack = room - (wave.max() - wave.min())
        centre[:, d] = wave - wave.min() + (extent - room) / 2 + u * slack

    prgb, alpha = _premultiplied(target)
    hull = _hull_points(target.alpha)
    homs = np.stack([object_homography((sh, sw), centre[i], pixel_scale * scale[i], angle[i], tilt[i], axis[i],
                                       size * scale[i]) for i in range(length)])

    if distractor is not None:
        d_sprite = _resized(distractor, size * dis["size"] * math.exp(scale_change) * 1.5)
        dh, dw = d_sprite.alpha.shape
        d_scale = size * dis["size"] / math.sqrt(dh * dw)
        d_prgb, d_alpha = _premultiplied(d_sprite)
        d_hull = _hull_points(d_sprite.alpha)
        psi = dis["psi"] + dis["omega"] * t
        d_centre = centre + dis["radius"] * size * scale[:, None] * np.stack([np.cos(psi), np.sin(psi)], -1)
        d_centre = np.clip(d_centre, [0, 0], [fw, fh])
        d_angle = rotation * dis["rot"] * 0.5 + angle * 0.5
        d_homs = [object_homography((dh, dw), d_centre[i], d_scale * scale[i], d_angle[i], tilt[i], dis["axis"],
                                    size * dis["size"] * scale[i]) for i in range(length)]

    occluder = None
    if occlusion:
        src = bg[-1, :, ::-1] if occluder_image is None else np.asarray(occluder_image)
        if src.ndim != 3 or src.shape[2] != 3 or src.dtype != np.uint8:
            raise ValueError(f"render_sequence: occluder_image must be uint8 [H, W, 3], got {src.dtype} {src.shape}")
        ow, oh = (max(2, min(int(round(v * size)), lim)) for v, lim in zip(occ["wh"], (src.shape[1], src.shape[0])))
        sx, sy = int(occ["src"][0] * (src.shape[1] - ow)), int(occ["src"][1] * (src.shape[0] - oh))
        patch = src[sy:sy + oh, sx:sx + ow].astype(np.float32)
        t_c = occ["t_c"] * (length - 1)
        direction = np.array([math.cos(occ["dir"]), math.sin(occ["dir"])])
        normal = np.array([-direction[1], direction[0]])
        speed = (size + math.hypot(ow, oh)) / occ["frames"]
        ci = int(round(t_c))
        occ_centre = (centre[ci] + occ["side"] * size * normal)[None] + (t - t_c)[:, None] * speed * direction
        occluder = (patch, occ_centre)

    frames = np.empty((length, fh, fw, 3), np.uint8)
    boxes = np.zeros((length, 4), np.float32)
    visible = np.zeros(length, np.float32)
    bg_index = _background_indices(bg.shape[0], start, length)
    for i in range(length):
        frame = bg[bg_index[i]].astype(np.float32)
        if distractor is not None:
            _warp_into(frame, d_prgb, d_alpha, d_homs[i], d_hull)
        cover, occ_box = None, None
        if occluder is not None:
            patch, occ_centre = occluder
            oh, ow = patch.shape[:2]
            ox0, oy0 = int(round(occ_centre[i, 0] - ow / 2)), int(round(occ_centre[i, 1] - oh / 2))
            cx0, cy0, cx1, cy1 = max(ox0, 0), max(oy0, 0), min(ox0 + ow, fw), min(oy0 + oh, fh)
            if cx1 > cx0 and cy1 > cy0:
                cover = np.zeros((fh, fw), np.float32)
                cover[cy0:cy1, cx0:cx1] = 1.0
                occ_box = (cx0, cy0, cx1, cy1, ox0, oy0)
        box, seen = _warp_into(frame, prgb, alpha, homs[i], hull, cover)
        if occ_box is not None:
            cx0, cy0, cx1, cy1, ox0, oy0 = occ_box
            frame[cy0:cy1, cx0:cx1] = patch[cy0 - oy0:cy1 - oy0, cx0 - ox0:cx1 - ox0]
        frames[i] = np.clip(frame + 0.5, 0, 255).astype(np.uint8)
        boxes[i] = box
        visible[i] = seen
    return dict(frames=frames, boxes=boxes, visible=visible, homography=homs, centre=centre.astype(np.float32),
                scale=scale.astype(np.float32), start=start)


def _resized(sprite: Sprite, max_geometric_size: float) -> Sprite:
    """The sprite shrunk (never enlarged) so that sqrt(h * w) <= max_geometric_size."""
    h, w = sprite.alpha.shape
    f = max_geometric_size / math.sqrt(h * w)
    if f >= 1.0:
        return sprite
    size = (max(1, round(w * f)), max(1, round(h * f)))
    rgb = cv2.resize(sprite.rgb, size, interpolation=cv2.INTER_AREA)
    alpha = cv2.resize(sprite.alpha, size, interpolation=cv2.INTER_AREA)
    return _crop_to_alpha(sprite.name, sprite.family, rgb, alpha)


def _premultiplied(sprite: Sprite) -> tuple[np.ndarray, np.ndarray]:
    alpha = sprite.alpha.astype(np.float32)
    return sprite.rgb.astype(np.float32) * alpha[..., None], alpha


def make_split(split: str, n_sequences: int, length: int, view: float, seed: int) -> list[dict]:
    """`n_sequences` rendered sequences of `split` ('train': TRAIN_CLIPS and the train objects; 'test':
    TEST_CLIPS and the test objects), deterministic in `seed`.

    Sequence i depends only on (seed, split, i) and `view`; changing `view` changes only the tilt (the
    same objects, backgrounds, paths and occluders), and the first k sequences do not depend on
    `n_sequences`.

    Returns:
      list of dict(frames uint8 [T, 144, 192, 3], boxes float32 [T, 4], visible float32 [T],
                   clip str, object str), T = length.
    """
    _check_split(split)
    for name, value, lo in (("n_sequences", n_sequences, 0), ("length", length, 1), ("seed", seed, 0)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < lo:
            raise ValueError(f"make_split: {name}={value!r}; accepted an int >= {lo}")
    view = _check_unit("view", view)
    clips = video.TRAIN_CLIPS if split == "train" else video.TEST_CLIPS
    out = []
    for i in range(n_sequences):
        rng = np.random.default_rng([int(seed), SPLITS.index(split), i])
        clip = clips[i % len(clips)]
        family = "photo" if rng.uniform() < PHOTO_FRACTION else "fashion"
        occlusion = bool(rng.uniform() < OCCLUSION_FRACTION)
        with_distractor = bool(rng.uniform() < DISTRACTOR_FRACTION)
        other_clip = clips[(i + 1 + int(rng.integers(len(clips) - 1))) % len(clips)] if len(clips) > 1 else clip
        other_frames = video.load_clip(other_clip)
        occluder_image = other_frames[int(rng.integers(len(other_frames)))]
        sprite = random_sprite(split, family, rng)
        distractor = random_sprite(split, family, rng, exclude=sprite.name)
        seq = render_sequence(video.load_clip(clip), sprite, rng, length=length, view=view, occlusion=occlusion,
                              occluder_image=occluder_image, distractor=distractor if with_distractor else None)
        out.append(dict(frames=seq["frames"], boxes=seq["boxes"], visible=seq["visible"], clip=clip,
                        object=sprite.name))
    return out
