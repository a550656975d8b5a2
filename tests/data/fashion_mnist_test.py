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


def test_concurrent_first_use_from_two_processes(tmp_path):
    """Two processes preparing the same TFDS dir at once both get the prepared splits."""
    import subprocess
    import sys
    rng = np.random.default_rng(1)
    src = tmp_path / "src"
    src.mkdir()
    for prefix, n in (("train", 23), ("t10k", 5)):
        _write_idx(src, prefix, rng.integers(0, 256, size=(n, 28, 28), dtype=np.uint8),
                   rng.integers(0, 10, size=(n,), dtype=np.uint8))
    code = ("import sys; from jaxml.data import fashion_mnist as f; "
            "b = f.builder(sys.argv[1], source_dir=sys.argv[2]); "
            "print(len(b.as_data_source(split='train')), len(b.as_data_source(split='test')))")
    procs = [subprocess.Popen([sys.executable, "-c", code, str(tmp_path / "tfds"), str(src)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [o[1][-2000:] for o in outs]
    assert [o[0].split()[-2:] for o in outs] == [["23", "5"], ["23", "5"]]


def test_in_memory_split_is_read_once_and_shared_read_only():
    first, second = fashion_mnist.load("test"), fashion_mnist.load("test")
    a, b = first.to_arrays(), second.to_arrays()
    np.testing.assert_array_equal(a["image"], b["image"])
    assert first._arrays["image"] is second._arrays["image"]   # one decoded copy per process
    with pytest.raises(ValueError, match="read-only"):
        first._arrays["label"][0] = 3
    # The streaming source (no memory copy) reads the same records.
    streaming = fashion_mnist.load("test", in_memory=False)
    np.testing.assert_array_equal(streaming[np.arange(0, 10000, 997)]["image"], a["image"][::997])
