"""Answer clustering for input clarification ensembling: which sampled answers count as the same answer.

The reference code (UCSB-NLP-Chang/llm_uncertainty, `evaluate_uq_qa.py`) groups answers in three steps,
which we follow:

1. normalise (`normalize_answer`): lower case, punctuation removed (after dropping parenthesised
   text when the answer contains "regard"), the articles a/an/the removed, whitespace collapsed (the
   SQuAD normalisation);
2. labels (`answer_labels`): within each clarification's answers, longest first, an answer becomes a
   new label unless it is contained in an existing label;
3. assignment (`FuzzyMatcher`): an answer equal to a label takes it; otherwise the labels that contain
   it or that it contains are candidates: one candidate is taken, several are decided by the smallest
   word error rate, and none falls back to the first label (the reference code's rule, kept so that our
   entropies are the reference's; `fallback='new'` gives such an answer its own cluster instead).
"""

from __future__ import annotations

import re
import string
from collections.abc import Sequence

import numpy as np

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PARENTHESES = re.compile(r"\([^)]*\)")
FALLBACKS = ("first", "new")


def normalize_answer(text: str) -> str:
    """The SQuAD normalisation of the reference code (see the module docstring)."""
    if not isinstance(text, str):
        raise TypeError(f"answers must be strings, got {type(text).__name__}: {text!r}")
    text = text.lower()
    if "regard" in text:
        text = _PARENTHESES.sub("", text).strip()
    text = "".join(ch for ch in text if ch not in set(string.punctuation))
    return " ".join(_ARTICLES.sub(" ", text).split())


def word_error_rate(reference: str, hypothesis: str) -> float:
    """Word-level Levenshtein distance between the two strings divided by the reference's word count.

    An empty reference gives 0 for an empty hypothesis and inf otherwise."""
    ref, hyp = reference.split(), hypothesis.split()
    if not ref:
        return 0.0 if not hyp else float("inf")
    prev = list(range(len(hyp) + 1))
    for i, r in enumerate(ref, 1):
        cur = [i] + [0] * len(hyp)
        for j, h in enumerate(hyp, 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (r != h))
        prev = cur
    return prev[-1] / len(ref)


def answer_labels(answer_sets: Sequence[Sequence[str]]) -> list[str]:
    """The cluster labels: per clarification, longest answer first, each not contained in an earlier label."""
    labels: list[str] = []
    for answers in answer_sets:
        for answer in sorted(answers, key=len, reverse=True):
            if not any(answer in label for label in labels):
                labels.append(answer)
    return labels


class FuzzyMatcher:
    """Maps an answer to the index of its label (see the module docstring, step 3)."""

    def __init__(self, labels: Sequence[str], fallback: str = "first"):
        if fallback not in FALLBACKS:
            raise ValueError(f"fallback {fallback!r}; accepted: {FALLBACKS}")
        if not labels:
            raise ValueError("FuzzyMatcher needs at least one label")
        self.labels = list(labels)
        self.fallback = fallback
        self._index = {label: i for i, label in enumerate(self.labels)}

    def __call__(self, answer: str) -> int:
        if answer in self._index:
            return self._index[answer]
        candidates = [label for label in self.labels if label in answer or answer in label]
        if len(candidates) == 1:
            return self._index[candidates[0]]
        if not candidates:
            if self.fallback == "first":
                return 0
            self._index[answer] = len(self.labels)
            self.labels.append(answer)
            return self._index[answer]
        errors = [word_error_rate(answer, label) for label in candidates]
        return self._index[candidates[errors.index(min(errors))]]


def semantic_clusters(answers: Sequence[str], embed, threshold: float = 0.9) -> list[int]:
    """Cluster ids of `answers` by meaning (the semantic-entropy baseline's grouping, with sentence
    embeddings in place of an entailment model): in order, an answer joins the first cluster whose first
    member has cosine similarity >= `threshold` with it, else starts a new one. `embed(texts) -> [n, d]`."""
    if not 0 < threshold <= 1:
        raise ValueError(f"threshold must be in (0, 1], got {threshold}")
    answers = list(answers)
    if not answers:
        return []
    vectors = np.asarray(embed(answers), np.float64)
    vectors = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    heads, ids = [], []
    for i in range(len(answers)):
        for c, h in enumerate(heads):
            if vectors[i] @ vectors[h] >= threshold:
                ids.append(c)
                break
        else:
            heads.append(i)
            ids.append(len(heads) - 1)
    return ids
