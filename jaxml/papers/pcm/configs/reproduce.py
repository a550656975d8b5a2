"""PCM at one scale: recovery, scaling, real data, VerbalAggression table (experiment `pcm/reproduce`).

Runbook:
    python scripts/reproduce.py --papers=pcm --scale=quick
    python scripts/run.py --config=jaxml/papers/pcm/configs/reproduce.py:quick --workdir=/tmp/pcm_reproduce
"""

from jaxml.core.config import reproduce_config


def get_config(arg=None):
    return reproduce_config("pcm", arg,
                            tiny=('recovery', 'verbal_table'),
                            quick=('recovery', 'scaling', 'real', 'verbal_table', 'mixture'),
                            full=('recovery', 'scaling', 'real', 'verbal_table', 'mixture'))
