"""Euclid at one scale: Book I benchmark, equivalence-checker variants, autoformalization
(experiment `euclid/reproduce`).

Runbook:
    python scripts/reproduce.py --papers=euclid --scale=quick
    python scripts/run.py --config=jaxml/papers/euclid/configs/reproduce.py:quick --workdir=/tmp/euclid_reproduce
Quick: ~2 min on CPU (the SmolLM2 part dominates).
"""

import ml_collections

from jaxml.core.config import parse_arg, scale_of


def get_config(arg=None) -> ml_collections.ConfigDict:
    arg = parse_arg(arg, tiny=False, quick=False)
    c = ml_collections.ConfigDict()
    c.experiment = "euclid/reproduce"
    c.scale = scale_of(arg)
    c.parts = ("book", "variants", "autoformalize")
    return c
