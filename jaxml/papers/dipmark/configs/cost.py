"""Generation throughput with and without the watermark, and detection speed (experiment `dipmark/cost`).

Runbook:
    python scripts/run.py --config=jaxml/papers/dipmark/configs/cost.py --workdir=/tmp/dipmark_cost
    (2 shared CPU cores, SmolLM2-135M-Instruct, batch 16, 128 new tokens, 5 interleaved rounds.)
Metric: tokens/s of DiPmark / tokens/s without a processor at the same batch (target >= 0.85).
Paper: DiPmark's generation and detection are efficient (its timing table was not available to us).
The quick reproduction does not run this part: its throughput ratio comes from the watermark part's
warm batches (`generation_throughput_ratio/*`).
"""

from jaxml.core.config import by_scale, experiment_config


def get_config(arg=None):
    c, scale = experiment_config("dipmark/cost", arg)
    c.model = by_scale(scale, tiny="tiny", quick="smollm2", full="smollm2")
    c.vocab_size = by_scale(scale, tiny=96, quick=0, full=0)
    c.corpora = ("austen", "shakespeare", "kjv")
    c.n_continuation = by_scale(scale, tiny=8, quick=16, full=16)
    c.n_summarisation = 0
    c.prompt_tokens = 64
    c.key_seed = 42
    c.mode = "ours"                        # or 'official': the release's torch.randperm family (V - 1 swaps per step)
    c.batch_size = by_scale(scale, tiny=4, quick=16, full=16)       # tiny: the shapes of watermark's tiny run
    c.max_new_tokens = by_scale(scale, tiny=16, quick=64, full=128)
    c.repeats = by_scale(scale, tiny=1, quick=3, full=5)
    c.processors = by_scale(scale, tiny=("dipmark",), quick=("dipmark", "kgw"), full=("dipmark", "kgw"))
    return c
