"""AttnLRP on a compressed model: SmolLM2-135M against its W4A8 L2QER version (experiment `attnlrp/compressed`).

Runbook:
    python scripts/run.py --config=jaxml/papers/attnlrp/configs/compressed.py --workdir=/tmp/attnlrp_compressed
Calibration on Shakespeare training windows, L2QER W4A8 rank 32 (`jaxml.compress.lqer`); the same
held-out prefixes explained on both models. Metric: Spearman rank correlation of the token
relevances per example, each model's area between the perturbation curves, prediction agreement.
Numbers and times: jaxml/papers/attnlrp/README.md.
"""

from jaxml.core.config import by_scale, experiment_config


def get_config(arg=None):
    c, scale = experiment_config("attnlrp/compressed", arg)
    c.model_layers = by_scale(scale, tiny=2, quick=0, full=0)
    c.w_bits, c.rank = 4, by_scale(scale, tiny=8, quick=32, full=32)
    c.calib_sequences = by_scale(scale, tiny=4, quick=16, full=64)
    c.calib_length = by_scale(scale, tiny=32, quick=128, full=256)
    c.corpora = ("austen", "shakespeare")
    c.num_examples = by_scale(scale, tiny=4, quick=16, full=200)
    c.length = 24
    c.min_tokens = 8
    c.bos = True                  # SmolLM2's start-of-text in front (the paper's protocol), never removed
    c.batch_size = by_scale(scale, tiny=2, quick=8, full=8)
    c.steps = by_scale(scale, tiny=5, quick=5, full=9)
    c.curve_chunk = by_scale(scale, tiny=32, quick=104, full=72)
    return c
