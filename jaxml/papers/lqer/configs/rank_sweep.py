"""LQER/L2QER perplexity against the rank (experiment `lqer/rank_sweep`).

Runbook:
    python scripts/run.py --config=jaxml/papers/lqer/configs/rank_sweep.py --workdir=/tmp/lqer_sweep
Variants: `:tiny` (truncated model), `:quick` (L2QER, k = 0, 8, 32), default (LQER and L2QER,
k = 0, 8, 16, 32, 64), all at W3A8. Default on 2 CPU cores: 6.5 min; L2QER 192.91 (k=0), 81.39,
71.85, 65.47, 56.16 (k=64); numbers in jaxml/papers/lqer/README.md.
"""

from jaxml.core.config import by_scale, experiment_config
from jaxml.papers.lqer.configs import common


def get_config(arg=None):
    c, scale = experiment_config("lqer/rank_sweep", arg)
    common.add_shared(c, scale)
    c.w_bits = 3
    c.ranks = by_scale(scale, tiny=(0, 8), quick=(0, 8, 32), full=(0, 8, 16, 32, 64))
    c.methods = by_scale(scale, tiny=("l2qer",), quick=("l2qer",), full=("lqer", "l2qer"))
    return c
