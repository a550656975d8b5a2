"""Generation throughput with and without the watermark, and detection speed (experiment `dipmark/cost`).

Runbook:
    python scripts/run.py --config=jaxml/papers/dipmark/configs/cost.py --workdir=/tmp/dipmark_cost
    (2 shared CPU cores, SmolLM2-135M-Instruct, batch 16, 128 new tokens, 5 interleaved repeats.)
Metric: tokens/s of DiPmark / tokens/s without a processor at the same batch (target > 0.85).
Paper: DiPmark's generation and detection are efficient (its timing table was not available to us).
"""

import ml_collections

from jaxml.core.config import parse_arg, scale_of


def get_config(arg=None) -> ml_collections.ConfigDict:
    arg = parse_arg(arg, tiny=False, quick=False, seed=0)
    c = ml_collections.ConfigDict()
    c.experiment = "dipmark/cost"
    c.model = "smollm2"
    c.vocab_size = 0
    c.corpora = ("austen", "shakespeare", "kjv")
    c.n_continuation = 16
    c.n_summarisation = 0
    c.prompt_tokens = 64
    c.seed = arg.seed
    c.key_seed = 42
    c.batch_size = 16
    c.max_new_tokens = 128
    c.repeats = 5
    c.processors = ("dipmark", "kgw")
    scale = scale_of(arg)
    if scale == "quick":
        c.max_new_tokens, c.repeats = 64, 3
    if scale == "tiny":
        c.model, c.vocab_size, c.n_continuation, c.batch_size, c.max_new_tokens, c.repeats = "tiny", 96, 8, 8, 8, 1
        c.processors = ("dipmark",)
    return c
