"""DiPmark at one scale: unbiasedness, watermark quality/detection/resilience, cost (experiment `dipmark/reproduce`).

Runbook:
    python scripts/reproduce.py --papers=dipmark --scale=quick
    python scripts/run.py --config=jaxml/papers/dipmark/configs/reproduce.py:quick --workdir=/tmp/dipmark_reproduce
"""

import ml_collections

from jaxml.core.config import parse_arg, scale_of


def get_config(arg=None) -> ml_collections.ConfigDict:
    arg = parse_arg(arg, tiny=False, quick=False)
    c = ml_collections.ConfigDict()
    c.experiment = "dipmark/reproduce"
    c.scale = scale_of(arg)
    c.parts = ("unbiased", "watermark", "cost")
    if c.scale == "tiny":   # cost's tiny config already runs on its own in the test suite
        c.parts = ("unbiased", "watermark")
    return c
