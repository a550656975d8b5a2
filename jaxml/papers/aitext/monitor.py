"""Estimating alpha on a user's own corpus: a folder of documents plus fitted p/q tables.

    tables = estimator.Tables.load("tables/adjectives")     # adjectives.npz + adjectives.words.txt
    est, stats = estimate_folder("my_reviews/", tables)
    print(est.summary(), stats)

Command line: `python scripts/aitext_estimate.py --docs=my_reviews/ --tables=tables/adjectives`.
Empty documents (nothing but white space) are counted and skipped; a document with no sentence
of at least two words adds nothing; if no sentence is left, or none contains a word of the table's
vocabulary, a ValueError says so.
"""

from __future__ import annotations

import dataclasses
import pathlib
from collections.abc import Sequence

import numpy as np

from jaxml.papers.aitext import estimator
from jaxml.papers.aitext import text as textlib


@dataclasses.dataclass(frozen=True)
class CorpusStats:
    """What went into an estimate: documents read / empty, sentences, sentences with a vocabulary word."""

    documents: int
    empty_documents: int
    sentences: int
    sentences_with_vocabulary: int


def estimate_texts(texts: Sequence[str], tables: estimator.Tables, *, n_boot: int = 1000, seed: int = 0,
                   level: float = 95.0) -> tuple[estimator.Estimate, CorpusStats]:
    """alpha with its bootstrap CI for the sentences of `texts` (one str per document)."""
    if isinstance(texts, str):
        raise TypeError("texts must be a list of documents (str), not one str")
    empty = sum(1 for t in texts if not t.strip())
    # Tokenized as the table was fitted (`Tables.tokens`).
    sents = [s for t in texts if t.strip() for s in textlib.tokenized_sentences(t, tokens=tables.tokens)]
    if not sents:
        raise ValueError(f"no sentence of at least 2 words in {len(texts)} documents ({empty} empty)")
    enc = estimator.encode(tables, sents)
    d = estimator.log_ratio(tables, enc)
    est = estimator.bootstrap(d, n_boot=n_boot, seed=seed, level=level)
    stats = CorpusStats(len(texts), empty, len(sents), int(np.count_nonzero(np.diff(enc.offsets))))
    return est, stats


def read_folder(folder: str | pathlib.Path, pattern: str = "*.txt") -> list[str]:
    """The UTF-8 texts of the files matching `pattern` under `folder` (recursively), sorted by path."""
    folder = pathlib.Path(folder)
    if not folder.is_dir():
        raise NotADirectoryError(f"{folder} is not a folder of documents")
    files = sorted(p for p in folder.rglob(pattern) if p.is_file())
    if not files:
        raise FileNotFoundError(f"no file matching {pattern!r} under {folder}")
    texts = []
    for p in files:
        try:
            texts.append(p.read_text(encoding="utf-8"))
        except UnicodeDecodeError as e:
            raise ValueError(f"{p} is not UTF-8 text ({e.reason} at byte {e.start})") from e
    return texts


def estimate_folder(folder, tables: estimator.Tables, pattern: str = "*.txt", **kwargs):
    """`estimate_texts` on `read_folder(folder, pattern)`."""
    return estimate_texts(read_folder(folder, pattern), tables, **kwargs)
