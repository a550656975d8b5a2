"""ICE at one scale (experiment `ice/reproduce`): ambiguity detection with the paper's claim and a verdict.

Runbook:
    python scripts/reproduce.py --papers=ice --scale=quick
    python scripts/run.py --config=jaxml/papers/ice/configs/reproduce.py:quick --workdir=/tmp/ice
Tiny (tests) runs 4 inputs; what quick stands for is in jaxml/papers/ice/README.md.
"""

from jaxml.core.config import reproduce_config

PARTS = ("ambiguity",)


def get_config(arg=None):
    return reproduce_config("ice", arg, tiny=PARTS, quick=PARTS, full=PARTS)
