"""aitext at one scale: the known-alpha validation on the shipped generated corpus (experiment
`aitext/reproduce`).

Runbook:
    python scripts/reproduce.py --papers=aitext --scale=quick
    python scripts/run.py --config=jaxml/papers/aitext/configs/reproduce.py:quick --workdir=/tmp/aitext_reproduce
"""

import ml_collections

from jaxml.core.config import parse_arg, scale_of


def get_config(arg=None) -> ml_collections.ConfigDict:
    arg = parse_arg(arg, tiny=False, quick=False)
    c = ml_collections.ConfigDict()
    c.experiment = "aitext/reproduce"
    c.scale = scale_of(arg)
    c.parts = ("validate",)
    return c
