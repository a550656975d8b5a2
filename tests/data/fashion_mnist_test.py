import gzip

import numpy as np
import pytest

from jaxml.data import fashion_mnist


def _write_idx(d, prefix, images, labels):
    n = len(images)
    header = (2051).to_bytes(4, "big") + n.to_bytes(4, "big") + (28).to_bytes(4, "big") + (28).to_bytes(4, "big")
    (d / f"{prefix}-images-idx3-ubyte.gz").write_bytes(gzip.compress(header + images.tobytes()))
    (d / f"{prefix}-labels-idx1-ubyte.gz").write_bytes(
        gzip.compress((2049).to_bytes(4, "big") + n.to_bytes(4, "big") + labels.tobytes()))


def test_builder_round_trips_examples_exactly(tmp_path):
    rng = np.random.default_rng(0)
    src = tmp_path / "src"
    src.mkdir()
    data = {}
    for split, prefix, n in (("train", "train", 37), ("test", "t10k", 11)):
        images = rng.integers(0, 256, size=(n, 28, 28), dtype=np.uint8)
        labels = rng.integers(0, 10, size=(n,), dtype=np.uint8)
        _write_idx(src, prefix, images, labels)
        data[split] = (images, labels)
    b = fashion_mnist.builder(tmp_path / "tfds", source_dir=src)
    for split, (images, labels) in data.items():
        ds = b.as_data_source(split=split)
        assert len(ds) == len(images)
        got = fashion_mnist.TFDSSource(ds).to_arrays()
        np.testing.assert_array_equal(got["image"][..., 0], images)
        np.testing.assert_array_equal(got["label"], labels)
    assert b.info.features["label"].names[9] == "Ankle boot"


def test_real_test_split_matches_the_raw_files():
    source = fashion_mnist.load("test")
    images, labels = fashion_mnist.read_raw("test")
    got = source.to_arrays()
    np.testing.assert_array_equal(got["image"][..., 0], images)
    np.testing.assert_array_equal(got["label"], labels)
    # Fashion-MNIST is balanced: 1,000 test and 6,000 train images per class.
    assert np.bincount(labels).tolist() == [1000] * 10
    assert np.bincount(fashion_mnist.read_raw("train")[1]).tolist() == [6000] * 10


def test_bad_idx_files(tmp_path):
    (tmp_path / "bad.gz").write_bytes(gzip.compress(b"\x00\x00\x08\x04" + b"\x00" * 12))
    with pytest.raises(ValueError, match="bad idx magic"):
        fashion_mnist.read_idx(tmp_path / "bad.gz")
    header = (2051).to_bytes(4, "big") + (5).to_bytes(4, "big") + (28).to_bytes(4, "big") * 2
    (tmp_path / "short.gz").write_bytes(gzip.compress(header + b"\x00" * 100))
    with pytest.raises(ValueError, match="truncated"):
        fashion_mnist.read_idx(tmp_path / "short.gz")
    with pytest.raises(ValueError, match="accepted"):
        fashion_mnist.load("validation")
