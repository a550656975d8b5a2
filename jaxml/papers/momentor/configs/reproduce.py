"""Momentor at one scale (experiment `momentor/reproduce`): the timestamp-encoding comparison with its claims.

Runbook:
    python scripts/reproduce.py --papers=momentor --scale=quick
    python scripts/run.py --config=jaxml/papers/momentor/configs/reproduce.py:quick --workdir=/tmp/momentor_reproduce
What quick and full stand for, with measured times, is in jaxml/papers/momentor/README.md.
"""

from jaxml.core.config import reproduce_config

PARTS = ("encodings",)


def get_config(arg=None):
    return reproduce_config("momentor", arg, tiny=PARTS, quick=PARTS, full=PARTS)
