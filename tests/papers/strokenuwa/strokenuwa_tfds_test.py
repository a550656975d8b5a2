"""The icon TFDS builder gives back exactly what `data.load_icons` parses, and records what it skipped."""

import numpy as np
import pytest

from jaxml.papers.strokenuwa import data, tfds_builder


@pytest.mark.parametrize("source,every", [("tabler", 40), ("kanjivg", 120)])
def test_builder_matches_load_icons(tmp_path, source, every):
    max_rows = 24 if source == "tabler" else 48       # some icons are longer: they must be listed as skipped
    direct = data.load_icons(source, max_rows=max_rows, every=every)
    b = tfds_builder.builder(source, tmp_path, max_rows=max_rows, every=every)
    got = []
    assert set(b.info.splits) == {i.split for i in direct}
    for split in b.info.splits:
        icons = tfds_builder.icons_from_source(b.as_data_source(split=split), source, split)
        got += icons
        assert all(i.split == split for i in icons)
    assert len(got) == len(direct) > 0
    by_name = {i.name: i for i in direct}
    for icon in got:
        ref = by_name[icon.name]
        assert icon.caption == ref.caption and icon.split == ref.split
        np.testing.assert_array_equal(icon.rows, ref.rows)
    assert sorted(b.skipped()) == sorted(tuple(s) for s in direct.skipped) and direct.skipped
    assert all(str(max_rows) in reason for _, reason in b.skipped())


def test_bad_configs_are_refused():
    with pytest.raises(ValueError, match="accepted"):
        tfds_builder.config_for("figr8")
    with pytest.raises(ValueError, match="every"):
        tfds_builder.config_for("tabler", every=0)
    with pytest.raises(ValueError, match="split"):
        tfds_builder.load_split("tabler", "dev")
