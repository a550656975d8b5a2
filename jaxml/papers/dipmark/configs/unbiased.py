"""Distribution preservation of the DiPmark reweight (experiment `dipmark/unbiased`).

Runbook:
    python scripts/run.py --config=jaxml/papers/dipmark/configs/unbiased.py --workdir=/tmp/dipmark_unbiased
    (seconds on 2 CPU cores; no model.)
Metrics: max |mean over all 120 permutations of V = 5 of P' - P| per alpha (float32; exact in real
arithmetic), the alpha = 0.5 case against the gamma-reweight in float64, and
max |(P'(key) + P'(twin key)) / 2 - P| for the Feistel key family at V = 49,152.
Paper: E_key[P'] = P (Theorem: DiPmark is distribution-preserving).
"""

from jaxml.core.config import by_scale, experiment_config


def get_config(arg=None):
    c, scale = experiment_config("dipmark/unbiased", arg)
    c.small_vocab = 5
    c.n_distributions = by_scale(scale, tiny=10, quick=50, full=200)
    c.alphas = by_scale(scale, tiny=(0.3, 0.5), quick=(0.0, 0.1, 0.3, 0.35, 0.4, 0.45, 0.5),
                        full=(0.0, 0.1, 0.3, 0.35, 0.4, 0.45, 0.5))
    c.pair_alphas = by_scale(scale, tiny=(0.5,), quick=(0.45,), full=c.alphas)   # key pairs at V = vocab
    c.vocab = by_scale(scale, tiny=97, quick=49152, full=49152)
    c.n_pairs = by_scale(scale, tiny=4, quick=16, full=64)
    c.logit_scale = 3.0
    return c
