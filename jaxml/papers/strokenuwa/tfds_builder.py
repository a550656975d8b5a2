"""The icon sets as TFDS `array_record` datasets (no TensorFlow needed to build or read), one per source,
with the deterministic splits of `data.split_of`. They are also the parse cache: parsing all 16k
SVGs takes a while, reading the prepared rows does not.

    source = load_split("tabler", "test")                # random access: len(source), source[i] -> dict
    icons = icons_from_source(source, "tabler", "test")  # == [i for i in data.load_icons("tabler") if i.split == "test"]

Config names read '<source>-r<max_rows>[-e<every>]' ('tabler-r128'; 'kanjivg-r128-e50': every 50th file). One record per icon, in file-name order:
  * `name`: the file stem; `caption`: the keyword caption (`data.tabler_caption` / `data.kanji_caption`);
  * `rows`: int16 [R, 9], 1 <= R <= max_rows, exactly `svg.to_rows(svg.parse_svg(file))`.
The files that do not parse or have more rows are in the builder's `skipped()` (name and reason),
recorded in the dataset's metadata, never silently missing.
"""

from __future__ import annotations

import dataclasses
import json
import pathlib

import numpy as np
import tensorflow_datasets as tfds

from jaxml.data import assets
from jaxml.papers.strokenuwa import data

DEFAULT_MAX_ROWS = 128


@dataclasses.dataclass(eq=False)
class IconSetConfig(tfds.core.BuilderConfig):
    source: str = "tabler"
    max_rows: int = DEFAULT_MAX_ROWS
    every: int = 1


def config_for(source: str, max_rows: int = DEFAULT_MAX_ROWS, every: int = 1) -> IconSetConfig:
    if source not in data.SOURCES:
        raise ValueError(f"icon source {source!r}; accepted {data.SOURCES}")
    if isinstance(max_rows, bool) or not isinstance(max_rows, (int, np.integer)) or max_rows < 2:
        raise ValueError(f"max_rows={max_rows!r}; accepted an int >= 2")
    if isinstance(every, bool) or not isinstance(every, (int, np.integer)) or every < 1:
        raise ValueError(f"every={every!r}; accepted an int >= 1 (every n-th file)")
    name = f"{source}-r{int(max_rows)}" + (f"-e{int(every)}" if every > 1 else "")
    return IconSetConfig(name=name, source=source, max_rows=int(max_rows), every=int(every),
                         description=f"{source} icons as StrokeNUWA rows (at most {int(max_rows)} rows, every "
                                     f"{int(every)}th file).")


class IconSet(tfds.core.GeneratorBasedBuilder, skip_registration=True):
    """One icon source's train/validation/test splits (pass `source=`, `max_rows=` or `config=`)."""

    VERSION = tfds.core.Version("1.0.0")
    RELEASE_NOTES = {"1.0.0": "Rows from jaxml.papers.strokenuwa.svg.to_rows, keyword captions."}

    def __init__(self, *, source: str | None = None, max_rows: int = DEFAULT_MAX_ROWS, every: int = 1, **kwargs):
        if "config" in kwargs and source is not None:
            raise ValueError("give source=/max_rows= or config=, not both")
        if "config" not in kwargs:
            kwargs["config"] = config_for(source or "tabler", max_rows, every)
        kwargs.setdefault("file_format", "array_record")
        super().__init__(**kwargs)
        self._icons = None

    def _info(self) -> tfds.core.DatasetInfo:
        return tfds.core.DatasetInfo(
            builder=self,
            description="Real icons (Tabler outline icons, MIT; KanjiVG, CC BY-SA 3.0) as StrokeNUWA's "
                        "9-integer rows [cmd, x0, y0, x1, y1, x2, y2, x3, y3] on the 200x200 grid.",
            features=tfds.features.FeaturesDict({
                "name": tfds.features.Text(),
                "caption": tfds.features.Text(),
                "rows": tfds.features.Tensor(shape=(None, 9), dtype=np.int16),
            }),
            disable_shuffling=True,
            homepage="https://arxiv.org/abs/2401.17093",
            metadata=tfds.core.MetadataDict(),
        )

    def _all_icons(self):
        if self._icons is None:
            cfg = self.builder_config
            self._icons = data.load_icons(cfg.source, max_rows=cfg.max_rows, every=cfg.every)
            self.info.metadata["skipped"] = json.dumps(self._icons.skipped)
        return self._icons

    def _split_generators(self, dl_manager):
        # TFDS cannot write an empty split (a small `every` subset may have no test icons): such a split
        # is absent, and `load_split` says so
        present = {icon.split for icon in self._all_icons()}
        return {name: self._generate_examples(name) for name in data.SPLITS if name in present}

    def _generate_examples(self, split: str):
        for icon in self._all_icons():
            if icon.split == split:
                yield icon.name, {"name": icon.name, "caption": icon.caption, "rows": icon.rows}

    def skipped(self) -> list[tuple[str, str]]:
        """(name, reason) of the files not in the dataset."""
        return [tuple(x) for x in json.loads(self.info.metadata.get("skipped", "[]"))]


def builder(source: str, data_dir: str | pathlib.Path | None = None, max_rows: int = DEFAULT_MAX_ROWS,
            every: int = 1) -> IconSet:
    """The prepared builder (prepared on first use, under a lock; default data_dir: the asset cache)."""
    config = config_for(source, max_rows, every)
    return assets.prepared_tfds(lambda d: IconSet(data_dir=d, config=config), "strokenuwa_icons", data_dir)


def load_split(source: str, split: str, data_dir: str | pathlib.Path | None = None,
               max_rows: int = DEFAULT_MAX_ROWS, every: int = 1):
    """A random-access source over split `split` of `source`: `source[i]` -> {"name", "caption", "rows"}."""
    if split not in data.SPLITS:
        raise ValueError(f"split {split!r}; accepted {data.SPLITS}")
    b = builder(source, data_dir, max_rows, every)
    if split not in b.info.splits:
        raise ValueError(f"{b.builder_config.name} has no {split!r} icons (splits: {sorted(b.info.splits)})")
    return b.as_data_source(split=split)


def icons_from_source(records, source: str, split: str) -> list[data.Icon]:
    """The `data.Icon`s of a split's records, in order."""
    out = []
    for i in range(len(records)):
        r = records[i]
        name, caption = r["name"], r["caption"]
        name = name.decode() if isinstance(name, bytes) else str(name)
        caption = caption.decode() if isinstance(caption, bytes) else str(caption)
        out.append(data.Icon(name, source, caption, np.asarray(r["rows"], np.int16), split))
    return out


def load_icons(source: str, split: str, data_dir: str | pathlib.Path | None = None,
               max_rows: int = DEFAULT_MAX_ROWS, every: int = 1) -> list[data.Icon]:
    """`icons_from_source(load_split(...))`: the split's icons through the prepared dataset."""
    return icons_from_source(load_split(source, split, data_dir, max_rows, every), source, split)
