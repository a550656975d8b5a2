"""LQER perplexity table on SmolLM2-135M (experiment `lqer/perplexity`).

Runbook:
    python scripts/run.py --config=jaxml/papers/lqer/configs/perplexity.py --workdir=/tmp/lqer_ppl
Variants: `:tiny` (160 tokens, FP and L2QER on two layers), `:quick` (1,536 tokens, W4 and W3, no GPTQ/AWQ),
default (two chapters, every method at W4 and W3). Numbers: jaxml/papers/lqer/README.md.
"""

import ml_collections

from jaxml.core.config import parse_arg, scale_of
from jaxml.papers.lqer.configs import common


def get_config(arg=None) -> ml_collections.ConfigDict:
    arg = parse_arg(arg, tiny=False, quick=False, seed=0)
    scale = scale_of(arg)
    c = common.base(scale, arg.seed)
    c.experiment = "lqer/perplexity"
    c.bits = (4, 3)
    c.rank = 32
    c.methods = ("fp", "rtn", "gptq", "awq", "mxint", "lqer", "l2qer")
    if scale == "quick":
        c.methods = ("fp", "rtn", "mxint", "lqer", "l2qer")
    if scale == "tiny":
        c.bits, c.rank, c.methods = (4,), 8, ("fp", "l2qer")
    return c
