"""Implicit gradient of pcDEQ layers vs unrolled backprop and finite differences
(experiment `pcdeq/gradcheck`).

Runbook:
    python scripts/run.py --config=jaxml/papers/pcdeq/configs/gradcheck.py --workdir=/tmp/pcdeq_grad
Seconds on CPU; numbers in jaxml/papers/pcdeq/README.md.
"""

import ml_collections

from jaxml.core.config import parse_arg, scale_of


def get_config(arg=None) -> ml_collections.ConfigDict:
    arg = parse_arg(arg, tiny=False, quick=False)
    c = ml_collections.ConfigDict()
    c.experiment = "pcdeq/gradcheck"
    c.scale = scale_of(arg)
    c.activations = ("tanh",) if c.scale == "tiny" else ("tanh", "softsign", "relu6", "sigmoid")
    return c
