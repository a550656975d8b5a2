"""ART's four tasks (`tasks.make_problems`) as a TFDS `array_record` builder (no TensorFlow needed to build
or read), one dataset per task, ART's shape split and split sizes.

    b = ArtProblems(data_dir=d, task="rmts", sizes={"train": 1024, "test": 256}); b.download_and_prepare()
    source = b.as_data_source(split="test")             # random access: len(source), source[i] -> dict
    source = load_split("test", "rmts", data_dir=d, num=256)      # the same, built on first use
    p = problems_from_source(source, "rmts")            # ~= make_problems("rmts", 256, test_ids, seed=2)

Splits (as `experiments.task_data` at seed 0), with `train_ids, test_ids = split_shapes(m_holdout=m)`:
  * "train": `make_problems(task, n, train_ids, seed=1)`, problems over the count - m training shapes;
  * "test": `make_problems(task, n, test_ids, seed=2)`, problems over the m held-out shapes.
Problems are drawn one after another from one seeded generator, so a split of n problems is the first
n of any larger one. Config names read '<task>-m<m_holdout>-train<n>-test<n>' ('rmts-m95-train1024-test256').

One record per problem, in the split's order (`disable_shuffling`), C = CANDIDATES[task], k objects per
candidate (same_different 2, rmts 4, dist3 and identity 6):
  * `image`: uint8 [C, 64, 64, 1], round(255 * image) (zlib-compressed bytes on disk). The images are
    antialiased floats in [0, 1], so `problems_from_source` (image / 255) gives them back to within
    1/510 (half a grey level), not bit-exactly;
  * `answer`: ClassLabel over CHOICES[task] answers (same_different: "same", "different"; else the
    index of the correct candidate), exact;
  * `objects`: int32 [C, k], the shape ids of each candidate's objects, exact.

A split is generated whole in memory before it is written (n * C * 64 * 64 float32: 64 MiB for 1024
problems of 4 candidates), since `make_problems` draws every problem from one generator.
"""

from __future__ import annotations

import dataclasses
import pathlib

import numpy as np
import tensorflow_datasets as tfds

from jaxml.data import assets
from jaxml.papers.slotabs.shapes import split_shapes
from jaxml.papers.slotabs.tasks import CANDIDATES, CHOICES, DISTINCT, OBJECTS, SIZE, TASKS, Problems, make_problems

SPLITS = ("train", "test")
SEEDS = {"train": 1, "test": 2}            # make_problems seeds (experiments.task_data at seed 0)
SHAPES = 100                               # the shape bank's size (split_shapes' count)
SHAPE_SPLIT_SEED = 0                       # split_shapes' seed (ART's split)
DEFAULT_SIZES = {"train": 1024, "test": 256}              # configs/benchmark.py at scale "quick"
ANSWER_NAMES = {"same_different": ("same", "different")}


@dataclasses.dataclass(eq=False)
class ArtProblemsConfig(tfds.core.BuilderConfig):
    """The task, which splits to build and how many problems each, and ART's m (held-out shapes)."""

    task: str = "rmts"
    sizes: tuple[tuple[str, int], ...] = ()
    m_holdout: int = 95


def config_for(task: str, sizes: dict[str, int] | None = None, m_holdout: int = 95) -> ArtProblemsConfig:
    """A config named by task, m and sizes ('rmts-m95-train1024-test256'); default sizes DEFAULT_SIZES."""
    if task not in TASKS:
        raise ValueError(f"task={task!r}; accepted {TASKS}")
    sizes = dict(DEFAULT_SIZES if sizes is None else sizes)
    unknown = [s for s in sizes if s not in SPLITS]
    if unknown or not sizes:
        raise ValueError(f"sizes={sizes!r}: give a non-empty subset of the splits {SPLITS}")
    for s, n in sizes.items():
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
            raise ValueError(f"sizes[{s!r}]={n!r}: accepted a positive int (number of problems)")
    need = DISTINCT[task]
    if isinstance(m_holdout, bool) or not isinstance(m_holdout, (int, np.integer)) \
            or not need <= m_holdout <= SHAPES - need:
        raise ValueError(f"m_holdout={m_holdout!r}: accepted an int in [{need}, {SHAPES - need}] for {task} "
                         f"(each side of the {SHAPES}-shape split needs {need} distinct shapes)")
    ordered = tuple((s, int(sizes[s])) for s in SPLITS if s in sizes)
    name = "-".join([task, f"m{int(m_holdout)}"] + [f"{s}{n}" for s, n in ordered])
    return ArtProblemsConfig(name=name, task=task, sizes=ordered, m_holdout=int(m_holdout),
                             description=f"ART {task} problems: {dict(ordered)}, m = {int(m_holdout)} "
                                         f"held-out shapes.")


def shape_ids(m_holdout: int) -> dict[str, np.ndarray]:
    """The shape ids each split's problems are drawn from: {"train": train ids, "test": held-out ids}."""
    train_ids, test_ids = split_shapes(SHAPES, m_holdout=m_holdout, seed=SHAPE_SPLIT_SEED)
    return {"train": train_ids, "test": test_ids}


def split_problems(task: str, name: str, num: int, m_holdout: int = 95) -> Problems:
    """What split `name` of `num` problems holds, regenerated (`make_problems` at the split's ids/seed)."""
    if name not in SPLITS:
        raise ValueError(f"split {name!r}; accepted {SPLITS}")
    return make_problems(task, num, shape_ids(m_holdout)[name], SEEDS[name])


def to_uint8(images: np.ndarray) -> np.ndarray:
    """Float images in [0, 1] as uint8 grey levels, round(255 * x)."""
    return np.round(np.clip(images, 0.0, 1.0) * 255.0).astype(np.uint8)


class ArtProblems(tfds.core.GeneratorBasedBuilder, skip_registration=True):
    """One ART task's train/test problems (`split_problems`), task, sizes and m from the config.

    Pass `task=`, `sizes={"train": 1024, "test": 256}` and `m_holdout=` or `config=config_for(...)`;
    without sizes, DEFAULT_SIZES. Images come back as uint8 (see the module docstring).
    """

    VERSION = tfds.core.Version("1.0.0")
    RELEASE_NOTES = {"1.0.0": "Problems from jaxml.papers.slotabs.tasks.make_problems; uint8 images."}

    def __init__(self, *, task: str | None = None, sizes: dict[str, int] | None = None, m_holdout: int = 95,
                 **kwargs):
        if "config" in kwargs and (task is not None or sizes is not None):
            raise ValueError("give task=/sizes= or config=, not both")
        if "config" not in kwargs:
            kwargs["config"] = config_for(task, sizes, m_holdout)
        kwargs.setdefault("file_format", "array_record")
        super().__init__(**kwargs)

    def _info(self) -> tfds.core.DatasetInfo:
        task = self.builder_config.task
        c, s, k = CANDIDATES[task], SIZE[task], OBJECTS[task]
        answer = (tfds.features.ClassLabel(names=ANSWER_NAMES[task]) if task in ANSWER_NAMES
                  else tfds.features.ClassLabel(num_classes=CHOICES[task]))
        return tfds.core.DatasetInfo(
            builder=self,
            description="ART (Webb et al. 2021) abstract visual reasoning problems over real line-drawn "
                        "shapes: candidate images, the correct answer and each candidate's shape ids.",
            features=tfds.features.FeaturesDict({
                "image": tfds.features.Tensor(shape=(c, s, s, 1), dtype=np.uint8,
                                              encoding=tfds.features.Encoding.ZLIB),
                "answer": answer,
                "objects": tfds.features.Tensor(shape=(c, k), dtype=np.int32),
            }),
            disable_shuffling=True,   # record i is problem i of the split
            homepage="https://arxiv.org/abs/2012.14601",
        )

    def _split_generators(self, dl_manager):
        cfg = self.builder_config
        return {name: self._generate_examples(cfg.task, name, num, cfg.m_holdout) for name, num in cfg.sizes}

    def _generate_examples(self, task: str, name: str, num: int, m_holdout: int):
        p = split_problems(task, name, num, m_holdout)
        images = to_uint8(p.images)
        for i in range(num):
            yield i, {"image": images[i], "answer": int(p.answer[i]), "objects": p.objects[i].astype(np.int32)}


def builder(task: str, data_dir: str | pathlib.Path | None = None, sizes: dict[str, int] | None = None,
            m_holdout: int = 95) -> ArtProblems:
    """The prepared builder (prepared on first use, under a lock; default data_dir: the asset cache)."""
    config = config_for(task, sizes, m_holdout)
    return assets.prepared_tfds(lambda d: ArtProblems(data_dir=d, config=config), "art_problems", data_dir)


def load_split(name: str, task: str, data_dir: str | pathlib.Path | None = None, num: int | None = None,
               m_holdout: int = 95):
    """A random-access source over the first `num` problems (default: DEFAULT_SIZES[name]) of split `name`
    of `task`, built on first use into `data_dir` (a dataset of that one split): `len(source)`,
    `source[i]` -> {"image": uint8 [C, 64, 64, 1], "answer": int, "objects": int32 [C, k]}."""
    if name not in SPLITS:
        raise ValueError(f"split {name!r}; accepted {SPLITS}")
    num = DEFAULT_SIZES[name] if num is None else num
    return builder(task, data_dir, {name: num}, m_holdout).as_data_source(split=name)


def problems_from_source(source, task: str) -> Problems:
    """The `Problems` of a source's records, in order: images float32 (uint8 / 255, within 1/510 of
    `make_problems`'), answers and objects exact."""
    if task not in TASKS:
        raise ValueError(f"task={task!r}; accepted {TASKS}")
    c, s, k = CANDIDATES[task], SIZE[task], OBJECTS[task]
    n = len(source)
    images = np.zeros((n, c, s, s, 1), np.float32)
    answer = np.zeros(n, np.int32)
    objects = np.zeros((n, c, k), np.int32)
    for i in range(n):
        r = source[i]
        images[i] = np.asarray(r["image"], np.float32) / np.float32(255.0)
        answer[i] = int(r["answer"])
        objects[i] = r["objects"]
    return Problems(task, images, answer, objects)
