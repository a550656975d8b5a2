"""The generated AsyncHow splits as a TFDS `array_record` builder (no TensorFlow needed to build or read).

    source = load_split("test", data_dir)               # random access: len(source), source[i] -> dict
    plans = plans_from_source(source)                   # == generator.split("test")
    b = AsyncHowPlans(data_dir=d, sizes={"validation": 20, "test": 20}); b.download_and_prepare()

One record per plan, in the split's order (`disable_shuffling`): `title`, `plan` (JSON of
`Plan.to_dict()`), `plan_type` (ClassLabel over PLAN_TYPES), `n_steps`, `ve_count`, `gold_lo` / `gold_hi`
(`critical_path` in whole seconds) and `complexity_bin`.

The golds are int64 seconds, not float64: without TensorFlow, TFDS serialises examples as
`tf.train.Example`, whose only float type is float32, so a float64 feature comes back rounded to 24 bits
(exact only below 2**24 s, about 194 days; a plan with a year step and minute steps exceeds that).
Generated durations are whole minutes to whole years, so their seconds are integers, stored exactly.
"""

from __future__ import annotations

import dataclasses
import json
import pathlib

import numpy as np
import tensorflow_datasets as tfds

from jaxml.data import assets
from jaxml.papers.asynchow import generator
from jaxml.papers.asynchow.plan import PLAN_TYPES, Plan, critical_path

SPLITS = ("train", "validation", "test")


@dataclasses.dataclass(eq=False)
class AsyncHowPlansConfig(tfds.core.BuilderConfig):
    """Which splits to build and how many plans each (a prefix of `generator.split`), and the text source."""

    sizes: tuple[tuple[str, int], ...] = ()
    text_source: str = "wordnet"


def config_for(sizes: dict[str, int] | None = None, text_source: str = "wordnet") -> AsyncHowPlansConfig:
    """A config named by its sizes ('wordnet-validation20-test20'); default: every split at full size."""
    sizes = dict(generator.SPLIT_SIZES if sizes is None else sizes)
    unknown = [s for s in sizes if s not in SPLITS]
    if unknown or not sizes:
        raise ValueError(f"sizes={sizes!r}: give a non-empty subset of the splits {SPLITS}")
    for s, n in sizes.items():
        if not isinstance(n, (int, np.integer)) or not 1 <= n <= generator.SPLIT_SIZES[s]:
            raise ValueError(f"sizes[{s!r}]={n!r}: the split has 1..{generator.SPLIT_SIZES[s]} plans")
    if text_source not in generator.TEXT_SOURCES:
        raise ValueError(f"text_source={text_source!r}; accepted {generator.TEXT_SOURCES}")
    ordered = tuple((s, int(sizes[s])) for s in SPLITS if s in sizes)
    name = "-".join([text_source] + [f"{s}{n}" for s, n in ordered])
    return AsyncHowPlansConfig(name=name, sizes=ordered, text_source=text_source,
                               description=f"AsyncHow-style generated plans: {dict(ordered)}, {text_source} texts.")


def _whole_seconds(x: float, plan: Plan) -> int:
    if x != int(x):
        raise ValueError(f"{plan.title!r}: gold {x} s is not whole seconds (the builder stores int64 seconds)")
    return int(x)


def example(plan: Plan) -> dict:
    """The record of one plan."""
    gold = critical_path(plan)
    return {
        "title": plan.title,
        "plan": json.dumps(plan.to_dict(), ensure_ascii=False),
        "plan_type": PLAN_TYPES.index(plan.plan_type),
        "n_steps": plan.n,
        "ve_count": plan.ve_count,
        "gold_lo": _whole_seconds(gold.lo, plan),
        "gold_hi": _whole_seconds(gold.hi, plan),
        "complexity_bin": generator.complexity_bin(plan.ve_count),
    }


class AsyncHowPlans(tfds.core.GeneratorBasedBuilder, skip_registration=True):
    """The generated train/validation/test splits (`generator.split`), sizes from the config.

    Pass `sizes={"validation": 20, "test": 20}` (and `text_source`) or `config=config_for(...)`; with
    neither, every split is built at `generator.SPLIT_SIZES`.
    """

    VERSION = tfds.core.Version("1.0.0")
    RELEASE_NOTES = {"1.0.0": "Generated plans from jaxml.papers.asynchow.generator.split; int64 gold seconds."}

    def __init__(self, *, sizes: dict[str, int] | None = None, text_source: str = "wordnet", **kwargs):
        if "config" in kwargs and sizes is not None:
            raise ValueError("give sizes= or config=, not both")
        kwargs.setdefault("config", config_for(sizes, text_source))
        kwargs.setdefault("file_format", "array_record")
        super().__init__(**kwargs)

    def _info(self) -> tfds.core.DatasetInfo:
        return tfds.core.DatasetInfo(
            builder=self,
            description="AsyncHow-style plans (steps, durations, ordering constraints) with the shortest "
                        "possible time under infinite resources (critical path, [lo, hi] seconds).",
            features=tfds.features.FeaturesDict({
                "title": tfds.features.Text(),
                "plan": tfds.features.Text(),
                "plan_type": tfds.features.ClassLabel(names=PLAN_TYPES),
                "n_steps": tfds.features.Scalar(dtype=np.int32),
                "ve_count": tfds.features.Scalar(dtype=np.int32),
                "gold_lo": tfds.features.Scalar(dtype=np.int64),
                "gold_hi": tfds.features.Scalar(dtype=np.int64),
                "complexity_bin": tfds.features.Text(),
            }),
            disable_shuffling=True,   # record i is plan i of the split
            homepage="https://github.com/fangru-lin/graph-llm-asynchow-plan",
        )

    def _split_generators(self, dl_manager):
        cfg = self.builder_config
        return {name: self._generate_examples(name, num, cfg.text_source) for name, num in cfg.sizes}

    def _generate_examples(self, name: str, num: int, text_source: str):
        for i, plan in enumerate(generator.split(name, num, text_source)):
            yield i, example(plan)


def builder(data_dir: str | pathlib.Path | None = None, sizes: dict[str, int] | None = None,
            text_source: str = "wordnet") -> AsyncHowPlans:
    """The prepared builder (prepared on first use, under a lock; default data_dir: the asset cache)."""
    return assets.prepared_tfds(lambda d: AsyncHowPlans(data_dir=d, sizes=sizes, text_source=text_source),
                                "async_how_plans", data_dir)


def load_split(name: str, data_dir: str | pathlib.Path | None = None, num: int | None = None,
               text_source: str = "wordnet"):
    """A random-access source over the first `num` plans (default: all) of split `name`, built on first
    use into `data_dir` (a dataset of that one split): `len(source)`, `source[i]` -> a record dict."""
    if name not in SPLITS:
        raise ValueError(f"split {name!r}; accepted {SPLITS}")
    num = generator.SPLIT_SIZES[name] if num is None else num
    return builder(data_dir, {name: num}, text_source).as_data_source(split=name)


def _text(value) -> str:
    return value.decode("utf-8") if isinstance(value, (bytes, np.bytes_)) else str(value)


def plans_from_source(source) -> list[Plan]:
    """The plans of a source's records, in order."""
    return [Plan.from_dict(json.loads(_text(source[i]["plan"]))) for i in range(len(source))]


def records_from_source(source) -> list[dict]:
    """The records with text fields decoded and plan_type as its name, in order."""
    out = []
    for i in range(len(source)):
        r = dict(source[i])
        for k in ("title", "plan", "complexity_bin"):
            r[k] = _text(r[k])
        r["plan_type"] = PLAN_TYPES[int(r["plan_type"])]
        for k in ("n_steps", "ve_count", "gold_lo", "gold_hi"):
            r[k] = int(r[k])
        out.append(r)
    return out
