"""Decoding Compressed Trust at one scale (experiment `comptrust/reproduce`): the trust study with the
paper's claims and verdicts.

Runbook:
    python scripts/reproduce.py --papers=comptrust --scale=quick
    python scripts/run.py --config=jaxml/papers/comptrust/configs/reproduce.py:quick --workdir=/tmp/comptrust
What quick and full cover, and the time, is in jaxml/papers/comptrust/configs/trust.py and the README.
"""

from jaxml.core.config import reproduce_config

PARTS = ("trust",)


def get_config(arg=None):
    return reproduce_config("comptrust", arg, tiny=PARTS, quick=PARTS, full=PARTS)
