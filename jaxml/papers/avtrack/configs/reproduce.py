"""AVTrack at one scale (experiment `avtrack/reproduce`): the benchmark (baseline vs gates vs gates + MI,
tracking precision and AUC, active blocks, batch-1 speed against the active-block fraction) and the
skipping profile (time against the number of blocks run, at our size and at DeiT-Tiny's), with the
paper's claims and verdicts.

Runbook:
    python scripts/reproduce.py --papers=avtrack --scale=quick
    python scripts/run.py --config=jaxml/papers/avtrack/configs/reproduce.py:quick --workdir=/tmp/avtrack_rep
What tiny, quick and full cover, and their times, is in configs/benchmark.py and the README.
"""

from jaxml.core.config import reproduce_config

PARTS = ("benchmark", "skipping")


def get_config(arg=None):
    # tiny: the skipping profile only (the benchmark's own tiny run is tested separately; seconds matter there)
    return reproduce_config("avtrack", arg, tiny=("skipping",), quick=PARTS, full=PARTS)
