"""Held-out text prefixes for next-token explanations (Austen and Shakespeare test documents)."""

from __future__ import annotations

import dataclasses

import numpy as np

from jaxml.data import text


def held_out_sentences(corpus: str, split_seed: int = 0) -> tuple[str, ...]:
    """Sentences of the `test` documents of a corpus under `text.split_documents(seed)` (read once per
    process; `text.sentences`)."""
    return text.sentences(corpus, "test", split_seed)


@dataclasses.dataclass(frozen=True)
class Prefixes:
    """Left-padded token prefixes [n, length]: `tokens`, `valid` (bool), `positions`, the source
    sentence index and corpus of each row."""

    tokens: np.ndarray
    valid: np.ndarray
    positions: np.ndarray
    corpus: list[str]
    sentence: list[str]
    bos: bool = False

    def removable(self) -> np.ndarray:
        """bool [n, length]: the tokens a perturbation test may remove (never padding, never the BOS)."""
        out = self.valid.copy()
        if self.bos:
            out[np.arange(len(out)), out.argmax(1)] = False
        return out


def sample_prefixes(tokenizer, corpora=("austen", "shakespeare"), n: int = 200, length: int = 24,
                    min_tokens: int = 8, seed: int = 0, bos: bool = False) -> Prefixes:
    """`n` prefixes (split evenly over `corpora`) of held-out sentences with at least `min_tokens + 1`
    tokens, each cut at a random length in [min_tokens, min(length, tokens - 1)] so that the next
    token exists; left-padded with the pad id to `length`.

    bos: prepend the tokenizer's BOS id (for SmolLM2 `<|endoftext|>`, its start-of-text) to every
    prefix, as LLaMA-2's `<s>` in the paper: the attention sink is then a token the perturbation
    test never removes (`Prefixes.removable`). The same sentences and cuts are drawn either way (a
    prefix that fills `length` gives up its last token to the BOS), so the two modes explain the same text."""
    if bos and length < min_tokens + 1:
        raise ValueError(f"length={length} leaves no room for a BOS before {min_tokens} tokens")
    rng = np.random.default_rng(seed)
    rows, corp, sents = [], [], []
    per = [n // len(corpora) + (i < n % len(corpora)) for i in range(len(corpora))]
    for corpus, count in zip(corpora, per):
        sentences = held_out_sentences(corpus)
        order = rng.permutation(len(sentences))
        taken = 0
        for i in order:
            ids = tokenizer.encode(sentences[i])
            if len(ids) < min_tokens + 1:
                continue
            cut = int(rng.integers(min_tokens, min(length, len(ids) - 1) + 1))
            rows.append(([tokenizer.bos_id] if bos else []) + ids[:cut - 1 if bos and cut == length else cut])
            corp.append(corpus)
            sents.append(sentences[i])
            taken += 1
            if taken == count:
                break
        if taken < count:
            raise ValueError(f"{corpus}: only {taken} held-out sentences with >= {min_tokens + 1} tokens")
    tokens = np.full((len(rows), length), tokenizer.pad_id, np.int32)
    valid = np.zeros((len(rows), length), bool)
    for r, ids in enumerate(rows):
        tokens[r, length - len(ids):] = ids
        valid[r, length - len(ids):] = True
    positions = np.maximum(np.cumsum(valid, 1) - 1, 0).astype(np.int32)
    return Prefixes(tokens, valid, positions, corp, sents, bos)


def mean_embedding(embedding: np.ndarray, tokenizer, corpora=("austen", "shakespeare"), max_sentences: int = 2000,
                   split_seed: int = 0) -> np.ndarray:
    """The mean input embedding over the token occurrences of held-out sentences: the second
    replacement value of the perturbation test (with it, no method's baseline equals the removal,
    unlike the zero embedding, which is Integrated Gradients' baseline).  embedding: [vocab, d] -> [d]."""
    counts = np.zeros(embedding.shape[0], np.float64)
    for corpus in corpora:
        for s in held_out_sentences(corpus, split_seed)[:max_sentences]:
            np.add.at(counts, np.asarray(tokenizer.encode(s), np.int64), 1.0)
    if counts.sum() == 0:
        raise ValueError(f"mean_embedding: no tokens in {corpora}")
    return (counts @ np.asarray(embedding, np.float64) / counts.sum()).astype(np.float32)
