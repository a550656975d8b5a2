"""Euclid at one scale: Book I benchmark, equivalence-checker variants, autoformalization
(experiment `euclid/reproduce`).

Runbook:
    python scripts/reproduce.py --papers=euclid --scale=quick
    python scripts/run.py --config=jaxml/papers/euclid/configs/reproduce.py:quick --workdir=/tmp/euclid_reproduce
Quick: ~3 min on a shared 2-core CPU (Book I proofs ~70 s, SmolLM2 on 8 propositions ~75 s).
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
