"""Sentences, words and passages: the text side of the estimator.

    sentences("Mr. Darcy bowed. She smiled!")   # ['Mr. Darcy bowed.', 'She smiled!']
    words("Mr. Darcy's bow")                      # ['mr', "darcy's", 'bow']

The estimator sees a sentence as the *set* of its lower-cased words (binary occurrence, as the
reference code). Sentences are split on `.`, `!`, `?` ends followed by white space and
a capital letter, digit or opening quote, except after common abbreviations (Mr., Mrs., Dr., St.,
...). Markdown decoration that an instruction-tuned model emits (`**`, `#` headings, list bullets)
is removed first, so formatting is not what the estimator learns; a line break ends a sentence.
"""

from __future__ import annotations

import re

ABBREVIATIONS = ("mr", "mrs", "ms", "dr", "st", "messrs", "mme", "capt", "col", "gen", "lt", "rev", "sir",
                 "vs", "etc", "e.g", "i.e", "no", "vol", "ch", "fig", "jr", "sr")
_WORD = re.compile(r"[a-z]+(?:['\u2019][a-z]+)*")
_END = re.compile(r"(?<=[.!?])[\"'\u201d\u2019)\]]*\s+(?=[\"'\u201c\u2018(\[]*[A-Z0-9])")
_MARKDOWN = re.compile(r"(\*\*|__|`|^\s*#+\s*|^\s*[-*+\u2022]\s+|^\s*\d+[.)]\s+)", re.MULTILINE)


def clean(text: str) -> list[str]:
    """The non-empty lines of `text` without markdown emphasis, headings, bullets and numbering."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    lines = (re.sub(r"\s+", " ", line).strip() for line in _MARKDOWN.sub("", text).split("\n"))
    return [line for line in lines if line]


def sentences(text: str) -> list[str]:
    """The sentences of `text` in order; empty text gives [].

    A line break always ends a sentence (generated text puts headings and list items on their own
    lines): join hard-wrapped prose first, e.g. with `paragraphs`.
    """
    return [s for line in clean(text) for s in _split_line(line)]


def _split_line(text: str) -> list[str]:
    out, start = [], 0
    for m in _END.finditer(text):
        before = text[start:m.start()].rstrip("\"'\u201d\u2019)]")
        last = before.rsplit(None, 1)[-1].lower().rstrip(".") if before.split() else ""
        if last in ABBREVIATIONS or (len(last) == 1 and last.isalpha()):   # "Mr." or an initial
            continue
        out.append(text[start:m.start()].strip())
        start = m.end()
    out.append(text[start:].strip())
    return [s for s in out if s]


def words(sentence: str) -> list[str]:
    """Lower-cased word tokens (letters and inner apostrophes) of one sentence."""
    return _WORD.findall(sentence.lower().replace("\u2019", "'"))


TOKENS = ("words", "pos-adjectives")


def tokenize(sentences: list[str], tokens: str = "words") -> list[list[str]]:
    """The token lists the estimator reads, one per sentence: `tokens` = 'words' (every word,
    `words`) or 'pos-adjectives' (only the words tagged as adjectives in context, `pos.adjectives`).
    A table records which in `Tables.meta["tokens"]`."""
    if isinstance(sentences, str):
        raise TypeError("tokenize expects a list of sentences, not one str")
    if tokens == "words":
        return [words(s) for s in sentences]
    if tokens == "pos-adjectives":
        from jaxml.papers.aitext import pos
        return pos.tokenize(sentences)
    raise ValueError(f"unknown tokens {tokens!r}; accepted: {TOKENS}")


def tokenized_sentences(text: str, min_words: int = 2, tokens: str = "words") -> list[list[str]]:
    """The token lists (`tokenize` with `tokens`) of every sentence of `text` with at least
    `min_words` words (the reference drops sentences of length <= 1)."""
    kept = [(s, w) for s in sentences(text) for w in (words(s),) if len(w) >= min_words]
    if tokens == "words":
        return [w for _, w in kept]
    return tokenize([s for s, _ in kept], tokens)


def paragraphs(text: str) -> list[str]:
    """Blank-line separated paragraphs with their line breaks joined."""
    paras = (re.sub(r"\s+", " ", p).strip() for p in re.split(r"\n\s*\n", text))
    return [p for p in paras if p]


def passages(paras: list[str], min_words: int = 120, max_words: int = 260) -> list[str]:
    """Groups consecutive paragraphs into passages of `min_words`..`max_words` words.

    A paragraph longer than `max_words` on its own is cut at a sentence end; headings (paragraphs
    without a sentence end) are skipped; leftovers shorter than `min_words` are dropped.
    """
    if not 0 < min_words <= max_words:
        raise ValueError(f"need 0 < min_words ({min_words}) <= max_words ({max_words})")
    out, current, n = [], [], 0

    def flush():
        nonlocal current, n
        if n >= min_words:
            out.append(" ".join(current))
        current, n = [], 0

    for para in paras:
        if not re.search(r"[.!?][\"'\u201d\u2019)]*$", para):
            continue
        for sent in sentences(para):
            k = len(sent.split())
            if n and n + k > max_words:
                flush()
            if k > max_words:
                continue
            current.append(sent)
            n += k
        if n >= min_words:
            flush()
    flush()
    return out
