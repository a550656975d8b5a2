"""The `psychotools` asset (Debian r-cran-psychotools): pins, the offline error, the unpacked files."""

import pytest

from jaxml.data import assets


def test_pins_and_offline_error(tmp_path, monkeypatch):
    a = assets.get("psychotools")
    assert (a.kind, a.package, a.version) == ("debian", "r-cran-psychotools", "0.7-2-1")
    assert a.pool_path.endswith(a.filename)
    monkeypatch.setenv("JAXML_CACHE", str(tmp_path / "empty-cache"))
    monkeypatch.setenv("JAXML_OFFLINE", "1")
    with pytest.raises(assets.AssetUnavailableError, match="apt-get download r-cran-psychotools=0.7-2-1"):
        assets.fetch("psychotools")


def test_unpacks_only_the_data_and_copyright():
    root = assets.fetch("psychotools")
    data = root / "usr/lib/R/site-library/psychotools/data"
    names = {p.name for p in data.iterdir()}
    assert {"VerbalAggression.rda", "ConspiracistBeliefs2016.rda", "MathExam14W.rda"} <= names
    assert (root / "usr/share/doc/r-cran-psychotools/copyright").read_text().count("GPL") >= 1
    assert not (root / "usr/lib/R/site-library/psychotools/R").exists()
