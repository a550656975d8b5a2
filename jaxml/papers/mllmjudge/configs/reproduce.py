"""MLLM-as-a-Judge at one scale (experiment `mllmjudge/reproduce`): the benchmark part with its claims.

Runbook:
    python scripts/reproduce.py --papers=mllmjudge --scale=quick
    python scripts/run.py --config=jaxml/papers/mllmjudge/configs/reproduce.py:quick --workdir=/tmp/mllmjudge_reproduce
What quick and full stand for, with measured times, is in jaxml/papers/mllmjudge/README.md.
"""

from jaxml.core.config import reproduce_config

PARTS = ("benchmark",)


def get_config(arg=None):
    return reproduce_config("mllmjudge", arg, tiny=PARTS, quick=PARTS, full=PARTS)
