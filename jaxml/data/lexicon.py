"""The VADER sentiment lexicon (Hutto and Gilbert 2014; PyPI `vaderSentiment`, asset `vader-lexicon`).

    lex = lexicon.vader()          # {"good": LexiconEntry(mean=1.9, std=0.9434, ratings=(2, 1, ...)), ...}

Every token was rated by ten people on -4 (extremely negative) .. 4 (extremely positive); the entry
keeps the mean, the standard deviation and the ten ratings.
"""

from __future__ import annotations

import ast
import dataclasses
import functools

from jaxml.data import assets


@dataclasses.dataclass(frozen=True)
class LexiconEntry:
    mean: float
    std: float
    ratings: tuple[int, ...]


@functools.lru_cache(maxsize=None)
def vader() -> dict[str, LexiconEntry]:
    """`{token: LexiconEntry}` for the 7,506 distinct tokens of vader_lexicon.txt (words, slang, emoticons)."""
    out = {}
    path = assets.path("vader-lexicon", "vaderSentiment", "vader_lexicon.txt")
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            fields = line.rstrip("\n").split("\t")
            if len(fields) != 4:
                raise ValueError(f"{path}:{n}: expected 4 tab-separated fields, got {len(fields)}")
            ratings = tuple(int(r) for r in ast.literal_eval(fields[3]))
            out[fields[0]] = LexiconEntry(mean=float(fields[1]), std=float(fields[2]), ratings=ratings)
    return out
