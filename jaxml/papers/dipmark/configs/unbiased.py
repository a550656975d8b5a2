"""Distribution preservation of the DiPmark reweight (experiment `dipmark/unbiased`).

Runbook:
    python scripts/run.py --config=jaxml/papers/dipmark/configs/unbiased.py --workdir=/tmp/dipmark_unbiased
    (seconds on 2 CPU cores; no model.)
Metrics: max |mean over all 120 permutations of V = 5 of P' - P| per alpha (float32; exact in real
arithmetic), the alpha = 0.5 case against the gamma-reweight in float64, and
max |(P'(key) + P'(twin key)) / 2 - P| for the Feistel key family at V = 49,152.
Paper: E_key[P'] = P (Theorem: DiPmark is distribution-preserving).
"""

import ml_collections

from jaxml.core.config import parse_arg, scale_of


def get_config(arg=None) -> ml_collections.ConfigDict:
    arg = parse_arg(arg, tiny=False, quick=False, seed=0)
    c = ml_collections.ConfigDict()
    c.experiment = "dipmark/unbiased"
    c.seed = arg.seed
    c.small_vocab = 5
    c.n_distributions = 200
    c.alphas = (0.0, 0.1, 0.3, 0.35, 0.4, 0.45, 0.5)
    c.vocab = 49152
    c.n_pairs = 64
    c.logit_scale = 3.0
    scale = scale_of(arg)
    if scale == "quick":
        c.n_distributions, c.n_pairs = 50, 16
    if scale == "tiny":
        c.n_distributions, c.n_pairs, c.vocab, c.alphas = 10, 4, 97, (0.3, 0.5)
    return c
