"""Plausibility with a known answer: a fact planted in a real held-out passage and asked about at the end.

    ex = planted_fact_examples(tokenizer, n=200, seed=0)
    # ex.tokens [n, length] (left-padded), ex.answer_span bool [n, length]: the planted value's tokens
    hit = top_token_in_span(scores, ex.answer_span, ex.valid)      # share of examples, per method

Each example: a few consecutive sentences of an Austen or Shakespeare test document, with the
sentence "The <key> is <value>." inserted between two of them, followed by "The <key> is". The
correct continuation is the value, and the only place the text says it is the planted span, so a
plausible explanation of the model's prediction puts its top relevance on that span (the paper's
SQuAD-style measure: the share of examples whose most relevant token lies in the answer).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from jaxml.papers.attnlrp.data import held_out_sentences

KEYS = ("secret word", "password", "code name", "magic word")
VALUES = ("apple", "river", "violet", "copper", "lantern", "falcon", "marble", "harbor", "velvet", "orchid",
          "saddle", "thunder", "crystal", "meadow", "anchor", "cobalt")


@dataclasses.dataclass(frozen=True)
class PlantedFacts:
    tokens: np.ndarray          # int [n, length], left-padded
    valid: np.ndarray           # bool [n, length]
    positions: np.ndarray       # int [n, length]
    answer_span: np.ndarray     # bool [n, length]: the planted value's tokens
    answer_ids: np.ndarray      # int [n]: the value's first token (the expected next token)
    text: list[str]


def planted_fact_examples(tokenizer, corpora=("austen", "shakespeare"), n: int = 100, length: int = 96,
                          context_sentences: int = 3, seed: int = 0) -> PlantedFacts:
    """`n` examples split evenly over `corpora` (see the module docstring); passages too long for
    `length` tokens are skipped, never truncated."""
    rng = np.random.default_rng(seed)
    rows, spans, answers, texts = [], [], [], []
    per = [n // len(corpora) + (i < n % len(corpora)) for i in range(len(corpora))]
    for corpus, count in zip(corpora, per):
        sentences = held_out_sentences(corpus)
        taken, tries = 0, 0
        while taken < count:
            tries += 1
            if tries > 50 * count:
                raise ValueError(f"{corpus}: could not build {count} passages under {length} tokens")
            start = int(rng.integers(0, len(sentences) - context_sentences))
            context = list(sentences[start:start + context_sentences])
            key, value = str(rng.choice(KEYS)), str(rng.choice(VALUES))
            if value in " ".join(context).lower() or key in " ".join(context).lower():
                continue                                   # the planted sentence is the only mention
            where = int(rng.integers(0, context_sentences + 1))
            before = " ".join(context[:where] + [f"The {key} is"])
            after = " ".join(["."] + context[where:] + [f"The {key} is"])
            ids_before = tokenizer.encode(before)
            ids_value = tokenizer.encode(" " + value)
            ids_after = tokenizer.encode(after)
            ids = ids_before + ids_value + ids_after
            if len(ids) > length:
                continue
            rows.append(ids)
            spans.append((len(ids_before), len(ids_before) + len(ids_value)))
            answers.append(ids_value[0])
            texts.append(before + " " + value + after)
            taken += 1
    tokens = np.full((len(rows), length), tokenizer.pad_id, np.int32)
    valid = np.zeros((len(rows), length), bool)
    span = np.zeros((len(rows), length), bool)
    for r, (ids, (a, b)) in enumerate(zip(rows, spans)):
        off = length - len(ids)
        tokens[r, off:] = ids
        valid[r, off:] = True
        span[r, off + a:off + b] = True
    positions = np.maximum(np.cumsum(valid, 1) - 1, 0).astype(np.int32)
    return PlantedFacts(tokens, valid, positions, span, np.asarray(answers, np.int32), texts)


def top_token_in_span(scores, span, valid) -> np.ndarray:
    """bool [n]: whether each example's most relevant valid token (largest score) lies in its span.
    scores, span, valid: [n, length]."""
    scores, span, valid = np.asarray(scores, np.float64), np.asarray(span, bool), np.asarray(valid, bool)
    if not (scores.shape == span.shape == valid.shape):
        raise ValueError(f"scores {scores.shape}, span {span.shape} and valid {valid.shape} must be [n, length]")
    top = np.where(valid, scores, -np.inf).argmax(1)
    return span[np.arange(len(top)), top]
