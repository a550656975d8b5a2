"""WordNet 3.0 word lists (asset `wordnet`, Debian wordnet-base)."""

from jaxml.data import wordnet


def test_adjectives_contain_the_papers_words_and_exclude_function_words():
    adj = wordnet.adjectives()
    assert {"commendable", "meticulous", "intricate", "notable", "innovative"} <= adj
    assert not {"the", "and", "of", "tapestry"} & adj
    assert {"better", "best"} <= adj                          # irregular forms from adj.exc
    assert all("_" not in w and w == w.lower() for w in adj)


def test_dominant_filter_drops_mostly_nominal_words():
    counts = {p: wordnet.sense_counts(p) for p in wordnet.POS}
    dom = wordnet.adjectives(dominant=True)
    assert dom < wordnet.adjectives()
    assert "red" not in dom and counts["noun"]["red"] > counts["adj"]["red"]
    assert "meticulous" in dom
