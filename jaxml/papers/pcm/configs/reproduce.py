"""PCM at one scale: recovery, scaling, real data, the VerbalAggression table and mixtures
(experiment `pcm/reproduce`), with the paper's claims and verdicts.

Runbook:
    python scripts/reproduce.py --papers=pcm --scale=quick
    python scripts/run.py --config=jaxml/papers/pcm/configs/reproduce.py:quick --workdir=/tmp/pcm_reproduce
Tiny (tests) runs the recovery part only; what quick stands for is in jaxml/papers/pcm/README.md.
"""

from jaxml.core.config import reproduce_config

PARTS = ("recovery", "scaling", "real", "verbal_table", "mixture")


def get_config(arg=None):
    return reproduce_config("pcm", arg, tiny=("recovery",), quick=PARTS, full=PARTS)
