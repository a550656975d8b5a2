"""SmolLM2-135M-Instruct perplexity on a held-out Austen chapter (experiment `examples/smollm2_perplexity`).

Runbook:
    python scripts/run.py --config=jaxml/examples/configs/smollm2_perplexity.py --workdir=/tmp/ppl
Variants: `:tiny` (first 300 tokens, windows of 128 every 64), default (the whole chapter,
windows of 512 every 256). Measured numbers: see the README's table.
"""

import ml_collections

from jaxml.core.config import experiment_config


def get_config(arg=None) -> ml_collections.ConfigDict:
    c, scale = experiment_config("examples/smollm2_perplexity", arg)
    c.corpus = "austen"
    c.split = "test"          # Persuasion under split seed 0
    c.split_seed = 0
    c.document = 0
    c.chapter = 0
    c.context = 512
    c.stride = 256
    c.batch_size = 4
    c.max_tokens = -1         # -1: the whole chapter
    if scale == "tiny":
        c.max_tokens, c.context, c.stride = 300, 128, 64
    return c
