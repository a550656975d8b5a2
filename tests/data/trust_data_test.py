"""The real data behind comptrust's probes: carData's SLID (asset `cardata`), the VADER lexicon (asset
`vader-lexicon`) and WordNet's verb definitions; values checked against the packages' documented content."""

import numpy as np

from jaxml.data import assets, lexicon, tabular, wordnet


def test_slid_rows():
    a = assets.get("cardata")
    assert (a.kind, a.package, a.version) == ("debian", "r-cran-cardata", "3.0.5-1")
    rows = tabular.slid()
    # carData's documentation: 7,425 respondents; 3,987 have every field (wages are missing for many).
    assert len(rows) == 3987
    assert rows[0] == {"wages": 10.56, "education": 15.0, "age": 40, "sex": "Male", "language": "English"}
    assert {r["sex"] for r in rows} == {"Female", "Male"}
    assert {r["language"] for r in rows} == {"English", "French", "Other"}
    wages = np.array([r["wages"] for r in rows])
    assert 2.0 < wages.min() and wages.max() < 60.0 and abs(np.median(wages) - 14.13) < 0.01


def test_vader_lexicon():
    lex = lexicon.vader()
    assert len(lex) > 7000
    good = lex["good"]
    assert good.mean == 1.9 and len(good.ratings) == 10
    # The mean and the (population) standard deviation are those of the ten ratings.
    for word in ("good", "horrible", "love"):
        e = lex[word]
        assert abs(np.mean(e.ratings) - e.mean) < 1e-9 and abs(np.std(e.ratings) - e.std) < 1e-4
    assert lex["horrible"].mean < -2 < 2 < lex["love"].mean


def test_verb_glosses():
    g = wordnet.verb_glosses()
    assert g[0] == ("breathe", "draw air into, and expel out of, the lungs")
    assert len(g) > 10000 and all(lemma.isalpha() and lemma.islower() for lemma, _ in g)
    assert all('"' not in d and ";" not in d for _, d in g)
