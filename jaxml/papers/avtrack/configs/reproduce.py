"""AVTrack at one scale (experiment `avtrack/reproduce`): the benchmark (baseline vs gates vs gates + MI,
tracking precision and AUC, active blocks, batch-1 speed against the active-block fraction), with
the paper's claims and verdicts.

Runbook:
    python scripts/reproduce.py --papers=avtrack --scale=quick
    python scripts/run.py --config=jaxml/papers/avtrack/configs/reproduce.py:quick --workdir=/tmp/avtrack_rep
What tiny, quick and full cover, and their times, is in configs/benchmark.py and the README.
"""

from jaxml.core.config import reproduce_config

PARTS = ("benchmark",)


def get_config(arg=None):
    return reproduce_config("avtrack", arg, tiny=PARTS, quick=PARTS, full=PARTS)
