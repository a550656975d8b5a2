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


def test_verb_phrases_are_wordnet_examples_of_verb_object_form():
    phrases = wordnet.verb_phrases()
    # 1061 distinct "verb determiner noun [noun]" examples in WordNet 3.0's data.verb, counted independently with
    #   grep -v '^  ' data.verb | sed 's/^[^|]*|//' | grep -oE '"[^"]+"' | tr -d '"' |
    #   grep -xE '[a-z]+ (the|a|an|your|his|her|their|our) [a-z]+( [a-z]+)?' | awk '!seen[$0]++' | wc -l
    # the file starts with the body verbs (lexicographer file 29)
    assert len(phrases) == 1061
    assert phrases[0] == ("body", "hold your breath")
    assert ("contact", "pluck the capon") in phrases and ("contact", "frame a picture") in phrases
    assert len({p for _, p in phrases}) == len(phrases)
    assert all(len(p.split()) in (3, 4) and p.split()[1] in ("the", "a", "an", "your", "his", "her", "their", "our")
               for _, p in phrases)
    assert {d for d, _ in phrases} <= set(wordnet.VERB_DOMAINS.values())
