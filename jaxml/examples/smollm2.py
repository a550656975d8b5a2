"""SmolLM2-135M-Instruct perplexity on a held-out Jane Austen chapter (experiment
`examples/smollm2_perplexity`), the end-to-end check of the shared language-model stack.

"Held out" is with respect to jaxml's split of the six novels by document (`text.split_documents`,
seed 0: the test novel is *Persuasion*); SmolLM2's own pretraining data may well contain Austen.
"""

from __future__ import annotations

import time

from jaxml.core import registry
from jaxml.core.experiment import Result
from jaxml.data import text
from jaxml.llm.generate import perplexity
from jaxml.models.llama import load_smollm2


@registry.experiment("examples/smollm2_perplexity")
def smollm2_perplexity(config, workdir) -> Result:
    del workdir
    docs = text.split_documents(text.load_corpus(config.corpus), seed=config.split_seed)[config.split]
    if not 0 <= config.document < len(docs):
        raise ValueError(f"document={config.document}: the {config.split} split has {len(docs)} documents")
    doc = docs[config.document]
    chapters = text.chapters(doc)
    if not 0 <= config.chapter < len(chapters):
        raise ValueError(f"chapter={config.chapter}: {doc.doc_id} has {len(chapters)} chapters")
    model, params, tokenizer = load_smollm2()
    tokens = tokenizer.encode(chapters[config.chapter])
    if config.max_tokens > 0:
        tokens = tokens[:config.max_tokens]
    t0 = time.perf_counter()
    out = perplexity(model, params, tokens, context=config.context, stride=config.stride,
                     batch_size=config.batch_size)
    seconds = time.perf_counter() - t0
    return Result(
        metrics={"nll_nats_per_token": out["nll"], "perplexity": out["perplexity"],
                 "tokens": float(out["tokens"]), "seconds": seconds},
        headline="nll_nats_per_token",
        notes=(f"{doc.doc_id} chapter {config.chapter + 1} ({config.split} split of the {config.corpus} "
               f"novels), {out['tokens']} tokens scored; windows of {config.context} tokens every "
               f"{config.stride} (each token sees >= {config.context - config.stride} tokens of context "
               "after the first window); dequantized Q4_1 weights, float32."),
    )
