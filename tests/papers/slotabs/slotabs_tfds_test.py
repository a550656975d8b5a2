"""The ART tasks' TFDS builder: small splits built into a temporary directory read back as the problems
`make_problems` regenerates (answers and objects exactly, images to half a grey level), and bad config
input is refused naming what is accepted."""

import numpy as np
import pytest

from jaxml.papers.slotabs import tfds_builder
from jaxml.papers.slotabs.shapes import split_shapes
from jaxml.papers.slotabs.tasks import CANDIDATES, CHOICES, make_problems

SIZES = {"train": 8, "test": 8}


def _check(problems, task, ids, seed, num):
    want = make_problems(task, num, ids, seed)
    c = CANDIDATES[task]
    assert problems.task == task and problems.images.shape == (num, c, 64, 64, 1) == want.images.shape
    assert problems.images.dtype == np.float32
    np.testing.assert_array_equal(problems.answer, want.answer)
    np.testing.assert_array_equal(problems.objects, want.objects)
    assert np.abs(problems.images - want.images).max() <= 1 / 510 + 1e-6


@pytest.mark.parametrize("task", ["same_different", "rmts"])
def test_small_splits_read_back_as_the_regenerated_problems(tmp_path, task):
    b = tfds_builder.ArtProblems(data_dir=str(tmp_path), task=task, sizes=SIZES)
    assert b.builder_config.name == f"{task}-m95-train8-test8"
    b.download_and_prepare()
    assert set(b.info.splits) == set(SIZES)
    assert b.info.features["answer"].num_classes == CHOICES[task]
    train_ids, test_ids = split_shapes(m_holdout=95)
    for name, ids, seed in (("train", train_ids, 1), ("test", test_ids, 2)):
        source = b.as_data_source(split=name)
        assert len(source) == SIZES[name]
        record = source[0]
        assert record["image"].dtype == np.uint8 and record["image"].shape == (CANDIDATES[task], 64, 64, 1)
        _check(tfds_builder.problems_from_source(source, task), task, ids, seed, SIZES[name])
    if task == "rmts":      # a one-split dataset of a shorter prefix, through load_split
        _check(tfds_builder.problems_from_source(tfds_builder.load_split("test", task, tmp_path, num=3), task),
               task, test_ids, 2, 3)


@pytest.mark.parametrize("args, match", [
    (("sorting", None, 95), "accepted .*same_different"),
    (("rmts", {"train": 0}, 95), "accepted a positive int"),
    (("rmts", {"train": 8, "dev": 8}, 95), "subset of the splits"),
    (("rmts", None, 100), r"accepted an int in \[5, 95\]"),
    (("rmts", None, 3), r"accepted an int in \[5, 95\]"),
    (("same_different", None, 99), r"accepted an int in \[2, 98\]"),
])
def test_bad_config_input_names_what_is_accepted(args, match):
    with pytest.raises(ValueError, match=match):
        tfds_builder.config_for(*args)


def test_builder_refuses_both_config_and_task(tmp_path):
    with pytest.raises(ValueError, match="not both"):
        tfds_builder.ArtProblems(data_dir=str(tmp_path), task="rmts", config=tfds_builder.config_for("rmts"))
    with pytest.raises(ValueError, match="accepted"):
        tfds_builder.ArtProblems(data_dir=str(tmp_path), task="nope")
