"""CA-TRIDE at one scale (experiment `catride/reproduce`): the defence benchmark (none, EST, ACT,
TRIDE, CA-TRIDE) with retrieval, ERS, ERS-HM and the collapse diagnostics, and the paper's claims
with verdicts.

Runbook:
    python scripts/reproduce.py --papers=catride --scale=quick
    python scripts/run.py --config=jaxml/papers/catride/configs/reproduce.py:quick --workdir=/tmp/catride_rep
What tiny, quick and full cover, and their times, is in jaxml/papers/catride/configs/robustness.py and the README.
"""

from jaxml.core.config import reproduce_config

PARTS = ("robustness",)


def get_config(arg=None):
    return reproduce_config("catride", arg, tiny=PARTS, quick=PARTS, full=PARTS)
