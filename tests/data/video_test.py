"""The shared clip catalogue: decoded lengths as recorded, sizes, seeking and errors."""

import numpy as np
import pytest

from jaxml.data import video


def test_tree_decodes_its_recorded_length_at_native_size():
    c = video.clip("tree")
    frames = video.read_frames("tree")
    assert frames.shape == (c.num_frames, c.height, c.width, 3) and frames.dtype == np.uint8
    assert not frames.flags.writeable
    with pytest.raises(ValueError, match=r"outside \[0, 68\)"):
        video.read_frames("tree", 0, c.num_frames + 1)


def test_seek_and_resize_agree_with_a_full_read():
    full = video.read_frames("carphone", short_side=48)
    assert full.shape[1:] == (48, round(176 * 48 / 144), 3)
    part = video.read_frames("carphone", 30, 40, short_side=48)
    np.testing.assert_array_equal(part, full[30:40])


def test_first_usable_frame_and_errors():
    assert video.clip("megamind").first == 1
    first = video.read_frames("megamind", None, 3, short_side=24)
    assert len(first) == 2 and first.mean() > 10                # frame 0 (black) skipped
    with pytest.raises(ValueError, match="accepted: vtest, megamind"):
        video.clip("sintel")
    with pytest.raises(ValueError, match="short_side"):
        video.read_frames("tree", 0, 2, short_side=0)
