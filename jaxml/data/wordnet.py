"""Word lists from WordNet 3.0 (Debian `wordnet-base`, asset `wordnet`).

    adj = wordnet.adjectives()                 # frozenset of single-word adjective lemmas (lower case)
    adj = wordnet.adjectives(dominant=True)    # only words with more adjective senses than any other POS

Only the index files are read (`index.<pos>`: one lemma per line, its sense count in the fourth
column) plus `adj.exc` (irregular comparatives and superlatives such as "better", "best").
Multi-word lemmas (with "_") are left out: the estimators that use these lists see single words.
"""

from __future__ import annotations

import functools

from jaxml.data import assets

POS = ("adj", "noun", "verb", "adv")


@functools.lru_cache(maxsize=None)
def sense_counts(pos: str) -> dict[str, int]:
    """`{lemma: number of senses}` for single-word lemmas of part of speech `pos`."""
    if pos not in POS:
        raise ValueError(f"unknown part of speech {pos!r}; accepted: {POS}")
    counts = {}
    with open(assets.path("wordnet", "usr/share/wordnet", f"index.{pos}"), encoding="utf-8") as f:
        for line in f:
            if line.startswith(" "):   # the licence header lines start with two spaces
                continue
            fields = line.split()
            if len(fields) >= 4 and "_" not in fields[0]:
                counts[fields[0]] = int(fields[2])
    return counts


@functools.lru_cache(maxsize=None)
def adjectives(dominant: bool = False, inflected: bool = True) -> frozenset[str]:
    """Single-word adjectives of WordNet 3.0, lower case.

    Args:
      dominant: keep only words with at least as many adjective senses as noun, verb and adverb
        senses each (drops "past", "red", "man"...; keeps "meticulous", "intricate", "commendable").
      inflected: add the irregular forms of `adj.exc` ("better", "worst", ...).
    """
    adj = sense_counts("adj")
    if dominant:
        others = [sense_counts(p) for p in ("noun", "verb", "adv")]
        words = {w for w, n in adj.items() if all(n >= o.get(w, 0) for o in others)}
    else:
        words = set(adj)
    if inflected:
        with open(assets.path("wordnet", "usr/share/wordnet", "adj.exc"), encoding="utf-8") as f:
            for line in f:
                fields = line.split()
                if len(fields) >= 2 and fields[1] in adj and "_" not in fields[0]:
                    if not dominant or fields[1] in words:
                        words.add(fields[0])
    return frozenset(w.lower() for w in words if w.isalpha() or "-" in w)
