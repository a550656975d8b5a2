"""AutoActivator at one scale (experiment `autoactivator/reproduce`): the class-incremental
benchmark with the baselines and ablations, and the paper's claims with verdicts.

Runbook:
    python scripts/reproduce.py --papers=autoactivator --scale=quick
    python scripts/run.py --config=jaxml/papers/autoactivator/configs/reproduce.py:quick --workdir=/tmp/aa
What tiny, quick and full cover, and their times, is in jaxml/papers/autoactivator/configs/cil.py and the README.
"""

from jaxml.core.config import reproduce_config

PARTS = ("cil",)


def get_config(arg=None):
    return reproduce_config("autoactivator", arg, tiny=PARTS, quick=PARTS, full=PARTS)
