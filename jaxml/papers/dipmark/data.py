"""Prompts and human text from held-out documents of the offline corpora.

Two prompt sets (as the paper's text-generation and summarisation tasks, on our corpora):

* continuation: the first `prompt_tokens` tokens of a held-out passage, as plain text to continue;
* summarisation: "Summarise the following passage ..." + a held-out passage, in the chat template.

Held-out = the `test` documents of `jaxml.data.text.split_documents(seed=0)` (whole works the
split never trains or tunes on). Human text windows of the same documents are the null sample for
false-positive rates (the detector needs no model, so any text can be scored).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from jaxml.data import text

SUMMARY_INSTRUCTION = "Summarise the following passage in a few sentences.\n\n"


def held_out_passages(corpus: str, min_chars: int = 400, split_seed: int = 0) -> list[str]:
    """Passages of the test documents: consecutive paragraphs joined until at least `min_chars`."""
    docs = text.split_documents(text.load_corpus(corpus), seed=split_seed)["test"]
    passages = []
    for doc in docs:
        body = text.unwrap(doc.text)
        if corpus == "kjv":          # one verse a line: groups of verses
            paragraphs = [p for p in doc.text.split("\n") if p.strip()]
        else:
            paragraphs = body.split("\n\n")
        current = ""
        for p in paragraphs:
            current = f"{current} {p.strip()}".strip()
            if len(current) >= min_chars:
                passages.append(current)
                current = ""
    return passages


@dataclasses.dataclass(frozen=True)
class Prompts:
    """Prompt token ids (`tokens`), their task ('continuation' or 'summarisation') and corpus."""

    tokens: list[list[int]]
    task: list[str]
    corpus: list[str]


def make_prompts(tokenizer, corpora=("austen", "shakespeare", "kjv"), n_continuation: int = 48,
                 n_summarisation: int = 48, prompt_tokens: int = 64, passage_tokens: int = 160,
                 seed: int = 0) -> Prompts:
    """Prompts from distinct held-out passages, spread evenly over `corpora` for each task."""
    rng = np.random.default_rng(seed)
    pools = {}
    for c in corpora:
        passages = held_out_passages(c)
        pools[c] = [passages[i] for i in rng.permutation(len(passages))]
    tokens, task, corpus = [], [], []
    for name, count in (("continuation", n_continuation), ("summarisation", n_summarisation)):
        per = [count // len(corpora) + (i < count % len(corpora)) for i in range(len(corpora))]
        for c, k in zip(corpora, per):
            if len(pools[c]) < k:
                raise ValueError(f"{c}: {len(pools[c])} held-out passages left, {k} needed for {name}")
            for passage in pools[c][:k]:
                ids = tokenizer.encode(passage, add_bos=False)
                if name == "continuation":
                    tokens.append(tokenizer.encode(tokenizer.decode(ids[:prompt_tokens])))
                else:
                    body = tokenizer.decode(ids[:passage_tokens])
                    chat = tokenizer.apply_chat_template([{"role": "user", "content": SUMMARY_INSTRUCTION + body}])
                    tokens.append(tokenizer.encode(chat))
                task.append(name)
                corpus.append(c)
            pools[c] = pools[c][k:]
    return Prompts(tokens, task, corpus)


def human_windows(tokenizer, corpora=("austen", "shakespeare", "kjv"), n: int = 600, length: int = 200,
                  seed: int = 1) -> list[np.ndarray]:
    """`n` windows of `length` tokens of held-out human text (spread over `corpora`)."""
    rng = np.random.default_rng(seed)
    out = []
    per = [n // len(corpora) + (i < n % len(corpora)) for i in range(len(corpora))]
    for c, k in zip(corpora, per):
        ids = np.concatenate([np.asarray(tokenizer.encode(p, add_bos=False)) for p in held_out_passages(c)])
        if len(ids) < length + k:
            raise ValueError(f"{c}: {len(ids)} held-out tokens are too few for {k} windows of {length}")
        starts = rng.choice(len(ids) - length, size=k, replace=False)
        out += [ids[s:s + length] for s in starts]
    return out
