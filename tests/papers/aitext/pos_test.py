"""The 'pos' vocabulary: adjectives identified in context by TextBlob's Pattern tagger."""

import pathlib

import pytest

from jaxml.papers.aitext import estimator as E
from jaxml.papers.aitext import pos
from jaxml.papers.aitext import text as T

TABLES = pathlib.Path(E.__file__).parent / "data" / "tables"

# Words that WordNet lists as adjective lemmas (so the word-list vocabulary admits every use of them)
# but that occur in prose as verbs / participles, nouns, prepositions, determiners or numbers; each with
# a sentence using it so (hand-labelled: the sentence has no other adjective than those listed).
KNOWN_NON_ADJECTIVES = {
    "shared": "She shared the cake with her sister.",
    "filled": "The glass was filled with water.",
    "designed": "The house was designed by her uncle.",
    "made": "She made a cake and took it out.",
    "given": "He had given the book to his master.",
    "master": "He had given the book to his master.",
    "about": "They talked about the weather.",
    "through": "He walked through the garden.",
    "world": "The world turned.",
    "home": "She went home.",
    "future": "In the future we will see.",
    "light": "He turned on the light.",
    "one": "One of them left.",
    "two": "Two men came in.",
    "game": "It was a game of chance.",
    "chance": "It was a game of chance.",
    "each": "Each of them had tried.",
    "both": "Then both of them went up.",
    "up": "Then both of them went up.",
    "out": "She made a cake and took it out.",
}
# Sentences with their adjectives, hand-labelled (the ICML paper's examples among them).
ADJECTIVES_IN_CONTEXT = {
    "The meticulous reviewer wrote a commendable and intricate report.": ["meticulous", "commendable", "intricate"],
    "He is a better man than the best of them.": ["better", "best"],
    "It was a very pleasant, well-known house.": ["pleasant", "well-known"],
    "Her personal feelings were strong and original.": ["personal", "strong", "original"],
    "She was happy, and he was happier.": ["happy", "happier"],
    "Our shared history is filled with meaning.": [],
}


def test_tagger_finds_adjectives_in_context_and_not_the_known_non_adjectives():
    for sentence, expected in ADJECTIVES_IN_CONTEXT.items():
        assert pos.adjectives(sentence) == expected, (sentence, pos.tag(sentence))
    for word, sentence in KNOWN_NON_ADJECTIVES.items():
        assert word in T.words(sentence)
        assert word not in pos.adjectives(sentence), (word, pos.tag(sentence))
    # The tokens the estimator reads, per kind; a bad kind is an error.
    sents = ["She shared the meticulous cake.", "It was filled."]
    assert T.tokenize(sents, "pos-adjectives") == [["meticulous"], []]
    assert T.tokenize(sents, "words") == [T.words(s) for s in sents]
    with pytest.raises(ValueError, match="unknown tokens"):
        T.tokenize(sents, "nouns")
    with pytest.raises(TypeError, match="one sentence"):
        pos.tag(["a", "list"])


def test_shipped_pos_table_excludes_the_known_non_adjectives_that_the_word_list_admits():
    tagged = E.Tables.load(TABLES / "pos")
    wordnet = E.Tables.load(TABLES / "adjectives")
    assert tagged.tokens == "pos-adjectives" and wordnet.tokens == "words"
    in_word_list = set(KNOWN_NON_ADJECTIVES) & set(wordnet.words)
    assert len(in_word_list) == len(KNOWN_NON_ADJECTIVES), set(KNOWN_NON_ADJECTIVES) - in_word_list
    assert not set(KNOWN_NON_ADJECTIVES) & set(tagged.words)
    assert {"personal", "original", "powerful", "moral"} <= set(tagged.words)


def test_monitor_reads_a_pos_table_through_the_tagger():
    """A table fitted on adjective tokens scores only adjective uses: "shared" as a verb adds nothing."""
    import numpy as np

    from jaxml.papers.aitext import monitor

    p, q = np.array([0.01, 0.01]), np.array([0.04, 0.04])      # log Q/P of a sentence with one word: log 4 - ...
    table = E.Tables(("meticulous", "shared"), np.log(p), np.log1p(-p), np.log(q), np.log1p(-q),
                     {"tokens": "pos-adjectives"})
    with pytest.raises(ValueError, match="none of the 2 sentences"):
        monitor.estimate_texts(["She shared the cake. He shared the bread."], table, n_boot=20)
    est, stats = monitor.estimate_texts(["A meticulous reviewer wrote it. She shared the cake."], table, n_boot=20)
    assert stats.sentences == 2 and stats.sentences_with_vocabulary == 1
