"""Word lists from WordNet 3.0 (Debian `wordnet-base`, asset `wordnet`).

    adj = wordnet.adjectives()                 # frozenset of single-word adjective lemmas (lower case)
    adj = wordnet.adjectives(dominant=True)    # only words with more adjective senses than any other POS

Only the index files are read (`index.<pos>`: one lemma per line, its sense count in the fourth
column) plus `adj.exc` (irregular comparatives and superlatives such as "better", "best").
Multi-word lemmas (with "_") are left out: the estimators that use these lists see single words.
"""

from __future__ import annotations

import functools
import re

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


# Verb lexicographer files (WordNet's lexnames), the domains of the verb synsets in data.verb.
VERB_DOMAINS = {29: "body", 30: "change", 31: "cognition", 32: "communication", 33: "competition",
                34: "consumption", 35: "contact", 36: "creation", 37: "emotion", 38: "motion",
                39: "perception", 40: "possession", 41: "social", 42: "stative", 43: "weather"}
_OBJECT_PHRASE = re.compile(r"[a-z]+ (?:the|a|an|your|his|her|their|our) [a-z]+(?: [a-z]+)?")


@functools.lru_cache(maxsize=None)
def verb_phrases() -> tuple[tuple[str, str], ...]:
    """Imperative verb-object phrases quoted in WordNet 3.0's verb glosses, `(domain, phrase)`, in file order,
    without repeats: ("contact", "pluck the capon"), ("creation", "frame a picture"), ... Only
    examples of the form "verb determiner noun [noun]" (`the/a/an/your/his/her/their/our`) are kept, so each
    reads as a step of a how-to ("Frame a picture."). Asset `wordnet-verbs` (data.verb)."""
    phrases, seen = [], set()
    with open(assets.path("wordnet-verbs", "usr/share/wordnet", "data.verb"), encoding="utf-8") as f:
        for line in f:
            if line.startswith(" ") or "|" not in line:   # licence header lines start with two spaces
                continue
            domain = VERB_DOMAINS.get(int(line.split()[1]))
            for example in re.findall(r'"([^"]+)"', line.split("|", 1)[1]):
                if domain and _OBJECT_PHRASE.fullmatch(example) and example not in seen:
                    seen.add(example)
                    phrases.append((domain, example))
    return tuple(phrases)


@functools.lru_cache(maxsize=None)
def verb_glosses() -> tuple[tuple[str, str], ...]:
    """`(lemma, definition)` for every verb synset of WordNet 3.0 whose first lemma is one lower-case word,
    in file order: ("breathe", "draw air into, and expel out of, the lungs"), ... The definition is the
    gloss before its first ';' (the quoted examples dropped). Asset `wordnet-verbs` (data.verb)."""
    out = []
    with open(assets.path("wordnet-verbs", "usr/share/wordnet", "data.verb"), encoding="utf-8") as f:
        for line in f:
            if line.startswith(" ") or "|" not in line:   # licence header lines start with two spaces
                continue
            fields = line.split()
            lemma = fields[4]
            definition = line.split("|", 1)[1].split(";")[0].strip()
            if lemma.isalpha() and lemma.islower() and definition and '"' not in definition:
                out.append((lemma, definition))
    return tuple(out)
