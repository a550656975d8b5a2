"""Quality, detectability and resilience from one set of generations (experiment `dipmark/watermark`).

Runbook:
    python scripts/run.py --config=jaxml/papers/dipmark/configs/watermark.py --workdir=/tmp/dipmark_watermark
    (2 shared CPU cores; full: 64 held-out prompts (32 text continuation, 32 summarisation) x 200
    new tokens x 10 configurations (one of them a second unwatermarked sample) with
    SmolLM2-135M-Instruct; generations and perplexities are cached in the workdir. See the README
    for the time and the numbers.)
Metrics: expected NLL shift and perplexity under the unwatermarked model with bootstrap CIs; TPR at
1% FPR (empirical threshold from unwatermarked generations, and Hoeffding's) at 25/50/100/200
tokens; TPR under random substitution eps 0.05-0.3.
Paper: DiPmark's quality equals no watermark, KGW's degrades with delta; high TPR, resilient to
moderate substitution (its tables were not available to us).
Mode: `--config.mode=official` runs the release's permutation family, seeds, green and history
rules with top-k 50 before the reweight (`official.py`; detection metrics are named
`<stem>/official/...`). Run once with SmolLM2 (alpha 0.45, KGW delta 2, 32 prompts x 200 tokens, about
50 min on loaded cores): the README's "Both modes side by side".
"""

from jaxml.core.config import by_scale, experiment_config


def get_config(arg=None):
    c, scale = experiment_config("dipmark/watermark", arg)
    c.model = by_scale(scale, tiny="tiny", quick="smollm2", full="smollm2")
    c.vocab_size = by_scale(scale, tiny=96, quick=0, full=0)          # only for model='tiny'
    c.corpora = ("austen", "shakespeare", "kjv")
    c.n_continuation = by_scale(scale, tiny=8, quick=16, full=32)
    c.n_summarisation = by_scale(scale, tiny=0, quick=0, full=32)
    c.prompt_tokens = 64
    c.max_new_tokens = by_scale(scale, tiny=16, quick=64, full=200)
    c.temperature = 1.0
    c.mode = "ours"                        # or 'official' (the release's family and rules); in every detection metric
    c.top_k = -1                           # -1: the mode's (ours: 0 = none; official: 50); cut before the watermark
    c.batch_size = by_scale(scale, tiny=4, quick=4, full=32)         # batches 2.. are timed warm, back to back
    c.key_seed = 42
    c.alphas = by_scale(scale, tiny=(0.45,), quick=(0.45,), full=(0.3, 0.35, 0.4, 0.45, 0.5))
    c.deltas = by_scale(scale, tiny=(2.0,), quick=(2.0,), full=(1.0, 1.5, 2.0))
    c.gammas = (0.3, 0.4, 0.5, 0.6, 0.7)
    c.lengths = by_scale(scale, tiny=(8, 16), quick=(16, 32, 64), full=(25, 50, 100, 200))
    c.attack_length = by_scale(scale, tiny=16, quick=64, full=200)
    c.epsilons = by_scale(scale, tiny=(0.05,), quick=(0.05, 0.1), full=(0.05, 0.1, 0.2, 0.3))
    c.claim_epsilon = 0.05                 # the official robustness experiment's default rate
    c.sampled_perplexity = by_scale(scale, tiny=True, quick=False, full=True)   # quick: the NLL shift only
    c.n_human = by_scale(scale, tiny=0, quick=200, full=600)
    c.headline_alpha = 0.45
    c.control_seeds = by_scale(scale, tiny=(), quick=(), full=(1,))   # a second unwatermarked sample
    c.throughput_claim = by_scale(scale, tiny=True, quick=True, full=False)   # full: the `cost` part measures it
    return c
