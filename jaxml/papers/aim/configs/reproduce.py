"""AIM at one scale (experiment `aim/reproduce`): the loss-accuracy study, ablations and references,
with the paper's claims and verdicts.

Runbook:
    python scripts/reproduce.py --papers=aim --scale=quick
    python scripts/run.py --config=jaxml/papers/aim/configs/reproduce.py:quick --workdir=/tmp/aim
What tiny, quick and full cover, and their times, is in jaxml/papers/aim/configs/study.py and the README.
"""

from jaxml.core.config import reproduce_config

PARTS = ("study",)


def get_config(arg=None):
    return reproduce_config("aim", arg, tiny=PARTS, quick=PARTS, full=PARTS)
