"""Adjectives identified in context by a part-of-speech tagger (the 'pos' vocabulary).

The ICML paper counts a word in a sentence when it occurs there *as an adjective*. A word list
(WordNet's adjective lemmas, `jaxml.data.wordnet.adjectives`) cannot tell "She shared the cake"
from "a shared vision": it admits every use of "shared", "filled", "past", "red"... This module
tags each sentence and keeps the words tagged JJ, JJR or JJS (Penn Treebank adjective tags):

    adjectives("The glass was filled with a clear, cold water.")   # ['clear', 'cold']

The tagger is the Brill-style tagger of the Pattern library as shipped inside TextBlob (PyPI
`textblob`, pinned in pyproject.toml): a lexicon of word -> most frequent Penn Treebank tag, suffix
rules for unknown words and contextual rewrite rules, trained on the Wall Street Journal part of
the Penn Treebank (`textblob/en/en-lexicon.txt`, `en-context.txt`, `en-morphology.txt`, files of
the wheel). It needs no data download (NLTK's own taggers fetch their models at run time, which
is not possible here); about 8,000 sentences per second on one core.

A sentence becomes the list of its adjective tokens, lower-cased, with the same letters-and-inner-
apostrophes rule as `text.words`; a hyphenated adjective ("well-known") stays one token.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence

ADJECTIVE_TAGS = frozenset({"JJ", "JJR", "JJS"})
_TOKEN = re.compile(r"[a-z]+(?:['-][a-z]+)*")


@functools.lru_cache(maxsize=None)
def _parser():
    try:
        from textblob.en import parser
    except ImportError as e:     # pragma: no cover - the dependency is pinned
        raise ImportError("the 'pos' vocabulary needs TextBlob's bundled Pattern tagger: "
                          "pip install 'textblob==0.20.1' (no data download needed)") from e
    return parser


def tag(sentence: str) -> list[tuple[str, str]]:
    """(token, Penn Treebank tag) pairs of one sentence, in order."""
    if not isinstance(sentence, str):
        raise TypeError(f"tag expects one sentence (str), got {type(sentence).__name__}")
    parser = _parser()
    tokens = [t for s in parser.find_tokens(sentence) for t in s.split(" ") if t]
    return [(w, t) for w, t in parser.find_tags(tokens)]


def adjectives(sentence: str) -> list[str]:
    """The words of `sentence` tagged as adjectives (JJ, JJR, JJS), lower-cased, in order."""
    out = []
    for word, t in tag(sentence):
        w = word.lower().replace("\u2019", "'")
        if t in ADJECTIVE_TAGS and _TOKEN.fullmatch(w):
            out.append(w)
    return out


def tokenize(sentences: Sequence[str]) -> list[list[str]]:
    """`adjectives` of every sentence (the token lists that 'pos' tables are fitted on and read)."""
    if isinstance(sentences, str):
        raise TypeError("tokenize expects a list of sentences, not one str")
    return [adjectives(s) for s in sentences]
