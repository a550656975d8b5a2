"""Quality, detectability and resilience from one set of generations (experiment `dipmark/watermark`).

Runbook:
    python scripts/run.py --config=jaxml/papers/dipmark/configs/watermark.py --workdir=/tmp/dipmark_watermark
    (2 shared CPU cores; full: 64 held-out prompts (32 text continuation, 32 summarisation) x 200
    new tokens x 10 configurations (one of them a second unwatermarked sample) with
    SmolLM2-135M-Instruct; generations and perplexities are cached in the workdir. See the README
    for the time and the numbers.)
Metrics: perplexity under the unwatermarked model with bootstrap CIs; TPR at 1% FPR (threshold from
unwatermarked generations) at 25/50/100/200 tokens; TPR under random substitution eps 0.05-0.3.
Paper: DiPmark's quality equals no watermark, KGW's degrades with delta; high TPR, resilient to
moderate substitution (its tables were not available to us).
"""

import ml_collections

from jaxml.core.config import parse_arg, scale_of


def get_config(arg=None) -> ml_collections.ConfigDict:
    arg = parse_arg(arg, tiny=False, quick=False, seed=0)
    c = ml_collections.ConfigDict()
    c.experiment = "dipmark/watermark"
    c.model = "smollm2"
    c.vocab_size = 0                       # only for model='tiny'
    c.corpora = ("austen", "shakespeare", "kjv")
    c.n_continuation = 32
    c.n_summarisation = 32
    c.prompt_tokens = 64
    c.max_new_tokens = 200
    c.temperature = 1.0
    c.batch_size = 32
    c.seed = arg.seed
    c.key_seed = 42
    c.alphas = (0.3, 0.35, 0.4, 0.45, 0.5)
    c.deltas = (1.0, 1.5, 2.0)
    c.gammas = (0.3, 0.4, 0.5, 0.6, 0.7)
    c.lengths = (25, 50, 100, 200)
    c.attack_length = 200
    c.epsilons = (0.05, 0.1, 0.2, 0.3)
    c.n_human = 600
    c.headline_alpha = 0.45
    c.control_seeds = (1,)                 # a second unwatermarked sample: the noise floor of perplexity
    scale = scale_of(arg)
    if scale == "quick":
        c.n_continuation, c.n_summarisation, c.max_new_tokens, c.batch_size = 16, 0, 64, 16
        c.alphas, c.deltas, c.control_seeds = (0.45,), (2.0,), ()
        c.lengths, c.attack_length, c.epsilons, c.n_human = (16, 32, 64), 64, (0.1, 0.3), 200
    if scale == "tiny":
        c.model, c.vocab_size = "tiny", 96
        c.n_continuation, c.n_summarisation, c.max_new_tokens, c.batch_size = 8, 0, 16, 8
        c.alphas, c.deltas, c.control_seeds = (0.45,), (), ()
        c.lengths, c.attack_length, c.epsilons, c.n_human = (8, 16), 16, (0.1,), 0
    return c
