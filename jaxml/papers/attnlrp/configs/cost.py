"""Cost of AttnLRP against one forward+backward pass and Integrated Gradients (`attnlrp/cost`).

Runbook:
    python scripts/run.py --config=jaxml/papers/attnlrp/configs/cost.py --workdir=/tmp/attnlrp_cost
Variants: `:tiny` (batch 1 x 16 tokens, IG 8 steps), `:quick` (batch 4 x 32 tokens, IG 32 steps),
default (batch 8 x 64 tokens, IG 32 steps).
"""

import ml_collections

from jaxml.core.config import parse_arg, scale_of


def get_config(arg=None) -> ml_collections.ConfigDict:
    arg = parse_arg(arg, tiny=False, quick=False, seed=0)
    scale = scale_of(arg)
    c = ml_collections.ConfigDict()
    c.experiment = "attnlrp/cost"
    c.seed = arg.seed
    c.batch_size = 8
    c.length = 64
    c.ig_steps = 32
    c.ig_chunk = 8
    c.repeats = 5
    if scale == "quick":
        c.batch_size, c.length, c.repeats = 4, 32, 3
    if scale == "tiny":
        c.batch_size, c.length, c.ig_steps, c.ig_chunk, c.repeats = 1, 16, 8, 4, 2
    return c
