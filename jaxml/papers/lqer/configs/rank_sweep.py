"""LQER/L2QER perplexity against the rank (experiment `lqer/rank_sweep`).

Runbook:
    python scripts/run.py --config=jaxml/papers/lqer/configs/rank_sweep.py --workdir=/tmp/lqer_sweep
Variants: `:tiny`, `:quick` (L2QER only), default (LQER and L2QER, k = 0, 8, 16, 32, 64 at W3).
"""

import ml_collections

from jaxml.core.config import parse_arg, scale_of
from jaxml.papers.lqer.configs import common


def get_config(arg=None) -> ml_collections.ConfigDict:
    arg = parse_arg(arg, tiny=False, quick=False, seed=0)
    scale = scale_of(arg)
    c = common.base(scale, arg.seed)
    c.experiment = "lqer/rank_sweep"
    c.w_bits = 3
    c.ranks = (0, 8, 16, 32, 64)
    c.methods = ("lqer", "l2qer")
    if scale == "quick":
        c.ranks, c.methods = (0, 16, 64), ("l2qer",)
    if scale == "tiny":
        c.ranks, c.methods = (0, 8), ("l2qer",)
    return c
