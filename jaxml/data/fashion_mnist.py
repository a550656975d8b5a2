"""Fashion-MNIST (Xiao et al. 2017) from the Debian package, as a TFDS `array_record` builder.

    source = fashion_mnist.load("train")        # TFDSSource: len 60000, source[idx] -> batch
    batch = source[np.arange(8)]                # {"image": uint8[8, 28, 28, 1], "label": int64[8]}

No TensorFlow is needed: the builder writes `array_record` files and they are read back with
`builder.as_data_source(split)`. The raw files come from the asset `fashion-mnist`.
"""

from __future__ import annotations

import gzip
import pathlib

import numpy as np
import tensorflow_datasets as tfds

from jaxml.data import assets
from jaxml.data.pipeline import TFDSSource

CLASS_NAMES = ("T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker",
               "Bag", "Ankle boot")
SPLITS = {"train": "train", "test": "t10k"}
_ASSET_DIR = "usr/share/datasets/fashion-mnist"


def read_idx(path: str | pathlib.Path) -> np.ndarray:
    """Reads an (optionally gzipped) idx file: uint8 images [n, rows, cols] or labels [n]."""
    path = pathlib.Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as f:
        raw = f.read()
    if len(raw) < 8:
        raise ValueError(f"{path}: too short to be an idx file ({len(raw)} bytes)")
    magic = int.from_bytes(raw[:4], "big")
    if magic == 2049:
        n = int.from_bytes(raw[4:8], "big")
        data = np.frombuffer(raw, np.uint8, offset=8)
        shape = (n,)
    elif magic == 2051:
        n, rows, cols = (int.from_bytes(raw[i:i + 4], "big") for i in (4, 8, 12))
        data = np.frombuffer(raw, np.uint8, offset=16)
        shape = (n, rows, cols)
    else:
        raise ValueError(f"{path}: bad idx magic number {magic} (expected 2049 labels or 2051 images)")
    if data.size != int(np.prod(shape)):
        raise ValueError(f"{path}: header says {shape} but holds {data.size} bytes (truncated?)")
    return data.reshape(shape)


def read_raw(split: str, source_dir: str | pathlib.Path | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The split as `(images uint8[n, 28, 28], labels uint8[n])` straight from the idx files."""
    if split not in SPLITS:
        raise ValueError(f"Fashion-MNIST split {split!r}: accepted {sorted(SPLITS)}")
    d = pathlib.Path(source_dir) if source_dir else assets.path("fashion-mnist", _ASSET_DIR)
    prefix = SPLITS[split]
    images = read_idx(d / f"{prefix}-images-idx3-ubyte.gz")
    labels = read_idx(d / f"{prefix}-labels-idx1-ubyte.gz")
    if len(images) != len(labels):
        raise ValueError(f"Fashion-MNIST {split}: {len(images)} images but {len(labels)} labels")
    return images, labels


class FashionMnistOffline(tfds.core.GeneratorBasedBuilder, skip_registration=True):
    """Fashion-MNIST from local idx files (default: the Debian asset)."""

    VERSION = tfds.core.Version("1.0.0")
    RELEASE_NOTES = {"1.0.0": "From Debian dataset-fashion-mnist 0.0~git20200523.55506a9-1."}

    def __init__(self, *, source_dir: str | pathlib.Path | None = None, **kwargs):
        self._source_dir = source_dir
        super().__init__(**kwargs)

    def _info(self) -> tfds.core.DatasetInfo:
        return tfds.core.DatasetInfo(
            builder=self,
            description="Fashion-MNIST: 28x28 grayscale images of 10 clothing classes.",
            features=tfds.features.FeaturesDict({
                "image": tfds.features.Tensor(shape=(28, 28, 1), dtype=np.uint8),
                "label": tfds.features.ClassLabel(names=CLASS_NAMES),
            }),
            supervised_keys=("image", "label"),
            disable_shuffling=True,  # keep the idx order, so index i is example i of the raw file
            homepage="https://github.com/zalandoresearch/fashion-mnist",
        )

    def _split_generators(self, dl_manager):
        return {split: self._generate_examples(split) for split in SPLITS}

    def _generate_examples(self, split):
        images, labels = read_raw(split, self._source_dir)
        for i in range(len(images)):
            yield i, {"image": images[i][..., None], "label": int(labels[i])}


def builder(data_dir: str | pathlib.Path | None = None, source_dir=None) -> FashionMnistOffline:
    """The prepared builder (prepares it on first use, under a lock)."""
    return assets.prepared_tfds(lambda d: FashionMnistOffline(data_dir=d, file_format="array_record", source_dir=source_dir),
                                "fashion_mnist_offline", data_dir)


_IN_MEMORY: dict[tuple[str, str], dict[str, np.ndarray]] = {}


def load(split: str, data_dir=None, in_memory: bool = True) -> TFDSSource:
    """A random-access source over one split (`train` 60000 or `test` 10000 examples).

    With `in_memory` (the default) the decoded split is read once per process and shared, read-only,
    by every source `load` returns afterwards (decoding the 60,000 training records takes seconds).
    """
    if split not in SPLITS:
        raise ValueError(f"Fashion-MNIST split {split!r}: accepted {sorted(SPLITS)}")
    data_dir = pathlib.Path(data_dir or assets.cache_dir() / "tfds").resolve()
    records = builder(data_dir).as_data_source(split=split)
    if not in_memory:
        return TFDSSource(records, in_memory=False)
    key = (str(data_dir), split)
    if key not in _IN_MEMORY:
        arrays = TFDSSource(records).to_arrays()
        for array in arrays.values():
            array.setflags(write=False)
        _IN_MEMORY[key] = arrays
    return TFDSSource(records, arrays=_IN_MEMORY[key])
